//! Location memberships: assigning people to locations and taking them off,
//! with the location-management permission and manage access to the person.

use axum::http::Method;
use pillbox::auth::Role;
use pillbox::household::{self, NewMember};
use serde_json::{Value, json};

use crate::support::{TestApp, password_hash};

/// Creates a location as the owner; returns (id, portable_id, etag).
async fn location(app: &TestApp, name: &str) -> (i64, String, String) {
    let created = app
        .post(
            &app.hh("/locations"),
            &app.owner,
            json!({"location": {"name": name}}),
        )
        .await;
    created.assert_status(201);
    (
        created.id(),
        created.data()["portable_id"].as_str().unwrap().to_string(),
        created.etag(),
    )
}

/// Creates a person as the owner; returns (id, portable_id).
async fn person(app: &TestApp, name: &str) -> (i64, String) {
    let created = app
        .post(
            &app.hh("/people"),
            &app.owner,
            json!({"person": {"name": name, "date_of_birth": "1950-03-04"}}),
        )
        .await;
    created.assert_status(201);
    (
        created.id(),
        created.data()["portable_id"].as_str().unwrap().to_string(),
    )
}

fn memberships_path(app: &TestApp, location: impl std::fmt::Display) -> String {
    app.hh(&format!("/locations/{location}/location_memberships"))
}

fn membership_path(app: &TestApp, location: impl std::fmt::Display, id: i64) -> String {
    app.hh(&format!("/locations/{location}/location_memberships/{id}"))
}

fn assign(person_id: Value) -> Value {
    json!({"location_membership": {"person_id": person_id}})
}

async fn grant_location_management(app: &TestApp, membership_id: i64) {
    app.db
        .write(move |conn| {
            conn.execute(
                "UPDATE memberships SET location_management = 1 WHERE id = ?1",
                [membership_id],
            )?;
            Ok(())
        })
        .await
        .unwrap();
}

/// Gives `membership_id` a live grant of `level` on `person_id`, replacing
/// any live one.
async fn grant(app: &TestApp, membership_id: i64, person_id: i64, level: &'static str) {
    let household_id = app.household_id;
    app.db
        .write(move |conn| {
            conn.execute(
                "DELETE FROM person_access_grants WHERE membership_id = ?1 AND person_id = ?2",
                [membership_id, person_id],
            )?;
            conn.execute(
                "INSERT INTO person_access_grants
                   (household_id, membership_id, person_id, access_level, relationship_type,
                    created_at)
                 VALUES (?1, ?2, ?3, ?4, 'carer', ?5)",
                rusqlite::params![
                    household_id,
                    membership_id,
                    person_id,
                    level,
                    pillbox::domain::Timestamp::now()
                ],
            )?;
            Ok(())
        })
        .await
        .unwrap();
}

/// (action, person_id) of the Person change-feed entries for `id`, in order.
async fn person_feed(app: &TestApp, id: i64) -> Vec<(String, Option<i64>)> {
    app.db
        .read(move |conn| {
            let mut stmt = conn.prepare(
                "SELECT action, person_id FROM change_feed
                 WHERE record_type = 'Person' AND record_id = ?1 ORDER BY seq",
            )?;
            let rows = stmt
                .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .await
        .unwrap()
}

async fn membership_count(app: &TestApp) -> i64 {
    app.db
        .read(|conn| {
            Ok(
                conn.query_row("SELECT count(*) FROM location_memberships", [], |r| {
                    r.get(0)
                })?,
            )
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn assign_repeat_and_remove_show_on_the_person() {
    let app = TestApp::new().await;
    let (kitchen, kitchen_portable, _) = location(&app, "Kitchen").await;
    let (bathroom, bathroom_portable, _) = location(&app, "Bathroom").await;
    let (grandma, grandma_portable) = person(&app, "Grandma").await;
    let person_path = app.hh(&format!("/people/{grandma}"));
    let before = app.get(&person_path, &app.owner).await;
    assert_eq!(before.data()["location_ids"], json!([]));
    let etag0 = before.etag();
    let feed0 = person_feed(&app, grandma).await.len();

    // By numeric location id and numeric person id: 201 with the full shape.
    let created = app
        .post(
            &memberships_path(&app, kitchen),
            &app.owner,
            assign(json!(grandma)),
        )
        .await;
    created.assert_status(201);
    assert_eq!(created.header("etag"), None);
    let membership = created.data().clone();
    assert_eq!(membership["location_id"], kitchen);
    assert_eq!(
        membership["location_portable_id"],
        kitchen_portable.as_str()
    );
    assert_eq!(membership["person_id"], grandma);
    assert_eq!(membership["person_portable_id"], grandma_portable.as_str());
    assert_eq!(membership.as_object().unwrap().len(), 6);
    let kitchen_membership = created.id();

    let after = app.get(&person_path, &app.owner).await;
    assert_eq!(after.data()["location_ids"], json!([kitchen]));
    assert_eq!(
        after.data()["location_portable_ids"],
        json!([kitchen_portable])
    );
    let etag1 = after.etag();
    assert_ne!(
        etag1, etag0,
        "the person's ETag moves with its location_ids"
    );
    assert!(after.data()["updated_at"].as_str() >= before.data()["updated_at"].as_str());

    // Repeating the assignment (numeric string, portable ids alike) returns
    // the same membership with 200 and changes nothing.
    for (location_key, person_key) in [
        (kitchen.to_string(), json!(grandma.to_string())),
        (kitchen_portable.clone(), json!(grandma_portable)),
        (kitchen.to_string(), json!(grandma)),
    ] {
        let repeated = app
            .post(
                &memberships_path(&app, &location_key),
                &app.owner,
                assign(person_key),
            )
            .await;
        repeated.assert_status(200);
        assert_eq!(repeated.data(), &membership);
    }
    assert_eq!(membership_count(&app).await, 1);
    assert_eq!(app.get(&person_path, &app.owner).await.etag(), etag1);
    assert_eq!(person_feed(&app, grandma).await.len(), feed0 + 1);

    // By portable location id and portable person id.
    let second = app
        .post(
            &memberships_path(&app, &bathroom_portable),
            &app.owner,
            assign(json!(grandma_portable)),
        )
        .await;
    second.assert_status(201);
    assert_eq!(second.data()["location_id"], bathroom);
    assert_ne!(second.id(), kitchen_membership);
    let both = app.get(&person_path, &app.owner).await;
    assert_eq!(both.data()["location_ids"], json!([kitchen, bathroom]));
    assert_eq!(
        both.data()["location_portable_ids"],
        json!([kitchen_portable, bathroom_portable])
    );
    let etag2 = both.etag();
    assert_ne!(etag2, etag1);

    // Delete: 204, the location leaves the person, the ETag moves again.
    let deleted = app
        .delete(
            &membership_path(&app, &kitchen_portable, kitchen_membership),
            &app.owner,
            None,
        )
        .await;
    deleted.assert_status(204);
    assert_eq!(deleted.body, Value::Null);
    let gone = app.get(&person_path, &app.owner).await;
    assert_eq!(gone.data()["location_ids"], json!([bathroom]));
    assert_eq!(
        gone.data()["location_portable_ids"],
        json!([bathroom_portable])
    );
    assert_ne!(gone.etag(), etag2);
    app.delete(
        &membership_path(&app, kitchen, kitchen_membership),
        &app.owner,
        None,
    )
    .await
    .assert_error(404, "not_found");

    // Assigning again after a delete is a new membership.
    let again = app
        .post(
            &memberships_path(&app, kitchen),
            &app.owner,
            assign(json!(grandma)),
        )
        .await;
    again.assert_status(201);
    assert_ne!(again.id(), kitchen_membership);

    // Each change was one Person update entry governed by that person.
    let feed = person_feed(&app, grandma).await;
    assert_eq!(feed.len(), feed0 + 4);
    assert!(
        feed[feed0..]
            .iter()
            .all(|(action, person)| action == "update" && *person == Some(grandma)),
        "{feed:?}"
    );
}

#[tokio::test]
async fn create_needs_location_management_and_manage_access() {
    let app = TestApp::new().await;
    let (kitchen, _, _) = location(&app, "Kitchen").await;
    let (grandma, _) = person(&app, "Grandma").await;
    let (membership_id, member) = app
        .add_member("member@example.org", Role::Member, Some("Max Member"))
        .await;
    let path = memberships_path(&app, kitchen);
    let grandma_path = app.hh(&format!("/people/{grandma}"));

    // Without the location-management permission: 403, even for a person
    // the member manages (their own, through the self grant).
    let me = app.get(&app.hh("/me"), &member).await;
    let own_person = me.data()["person"]["id"].as_i64().unwrap();
    for person_id in [grandma, own_person] {
        app.post(&path, &member, assign(json!(person_id)))
            .await
            .assert_error(403, "forbidden");
    }

    grant_location_management(&app, membership_id).await;
    // No grant on the person: outside the member's scope, 404.
    let hidden = app.post(&path, &member, assign(json!(grandma))).await;
    hidden.assert_error(404, "not_found");
    assert!(
        hidden.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("person")
    );
    // A view-only (or record) grant: visible but not manageable, 403.
    for level in ["view", "record"] {
        grant(&app, membership_id, grandma, level).await;
        app.post(&path, &member, assign(json!(grandma)))
            .await
            .assert_error(403, "forbidden");
    }
    assert_eq!(membership_count(&app).await, 0);
    let etag = app.get(&grandma_path, &app.owner).await.etag();

    // A manage grant: 201.
    grant(&app, membership_id, grandma, "manage").await;
    let created = app.post(&path, &member, assign(json!(grandma))).await;
    created.assert_status(201);
    assert_ne!(app.get(&grandma_path, &app.owner).await.etag(), etag);
    // The member's own person through the self grant, too.
    app.post(&path, &member, assign(json!(own_person)))
        .await
        .assert_status(201);

    // A repeat re-checks the permission before answering.
    grant(&app, membership_id, grandma, "view").await;
    app.post(&path, &member, assign(json!(grandma)))
        .await
        .assert_error(403, "forbidden");
}

#[tokio::test]
async fn delete_needs_location_management_and_manage_access() {
    let app = TestApp::new().await;
    let (kitchen, _, _) = location(&app, "Kitchen").await;
    let (grandma, _) = person(&app, "Grandma").await;
    let created = app
        .post(
            &memberships_path(&app, kitchen),
            &app.owner,
            assign(json!(grandma)),
        )
        .await;
    created.assert_status(201);
    let path = membership_path(&app, kitchen, created.id());
    let (membership_id, member) = app
        .add_member("member@example.org", Role::Member, None)
        .await;

    // No location-management permission: 403.
    app.delete(&path, &member, None)
        .await
        .assert_error(403, "forbidden");
    grant_location_management(&app, membership_id).await;
    // A membership of a person outside the member's scope: 404.
    app.delete(&path, &member, None)
        .await
        .assert_error(404, "not_found");
    // View-only grant: 403.
    grant(&app, membership_id, grandma, "view").await;
    app.delete(&path, &member, None)
        .await
        .assert_error(403, "forbidden");
    assert_eq!(membership_count(&app).await, 1);
    // Manage grant: 204, and the person's locations are empty again.
    grant(&app, membership_id, grandma, "manage").await;
    app.delete(&path, &member, None).await.assert_status(204);
    assert_eq!(membership_count(&app).await, 0);
    let got = app
        .get(&app.hh(&format!("/people/{grandma}")), &member)
        .await;
    assert_eq!(got.data()["location_ids"], json!([]));
}

#[tokio::test]
async fn unknown_locations_people_and_memberships() {
    let app = TestApp::new().await;
    let (kitchen, _, kitchen_etag) = location(&app, "Kitchen").await;
    let (bathroom, _, _) = location(&app, "Bathroom").await;
    let (grandma, _) = person(&app, "Grandma").await;
    let in_bathroom = app
        .post(
            &memberships_path(&app, bathroom),
            &app.owner,
            assign(json!(grandma)),
        )
        .await;
    in_bathroom.assert_status(201);
    let bathroom_membership = in_bathroom.id();

    // A person who is nobody in this household: 404 naming the person.
    let other_household_person = app
        .db
        .write(|conn| {
            let set_up = household::set_up(
                conn,
                "Other household",
                "Europe/London",
                &NewMember {
                    email: "other@example.org",
                    password_hash: password_hash(),
                    person_name: "Otto Other",
                    role: Role::Owner,
                },
            )?;
            Ok(conn.query_row(
                "SELECT person_id FROM memberships WHERE id = ?1",
                [set_up.membership_id],
                |r| r.get::<_, i64>(0),
            )?)
        })
        .await
        .unwrap();
    for person_id in [
        json!(999_999),
        json!("999999"),
        json!("0192a5b0-0000-7000-8000-000000000000"),
        json!(other_household_person),
    ] {
        let missing = app
            .post(
                &memberships_path(&app, kitchen),
                &app.owner,
                assign(person_id),
            )
            .await;
        missing.assert_error(404, "not_found");
        assert_eq!(missing.body["error"]["message"], "person not found");
    }

    // A malformed person_id, a missing one, or an unknown field: 422 naming it.
    for (body, field) in [
        (assign(json!("abc")), "person_id"),
        (assign(json!(0)), "person_id"),
        (assign(json!(1.5)), "person_id"),
        (assign(json!(null)), "person_id"),
        (json!({"location_membership": {}}), "person_id"),
        (
            json!({"location_membership": {"person_id": grandma, "role": "x"}}),
            "role",
        ),
        (
            json!({"location_membership": {"person_id": grandma}, "extra": 1}),
            "extra",
        ),
        (json!({"person_id": grandma}), "person_id"),
    ] {
        let invalid = app
            .post(&memberships_path(&app, kitchen), &app.owner, body)
            .await;
        invalid.assert_error(422, "validation_failed");
        assert!(
            invalid.body["error"]["errors"].get(field).is_some(),
            "{field}: {}",
            invalid.body
        );
    }

    // Unknown or malformed locations: 404.
    for location_key in ["999999", "0192a5b0-0000-7000-8000-000000000000", "abc"] {
        app.post(
            &memberships_path(&app, location_key),
            &app.owner,
            assign(json!(grandma)),
        )
        .await
        .assert_error(404, "not_found");
    }

    // A membership of another location, or a malformed id: 404 on delete.
    app.delete(
        &membership_path(&app, kitchen, bathroom_membership),
        &app.owner,
        None,
    )
    .await
    .assert_error(404, "not_found");
    let malformed = app
        .raw(
            Method::DELETE,
            &app.hh(&format!("/locations/{bathroom}/location_memberships/abc")),
            Some(&app.owner),
            None,
            &[],
        )
        .await;
    malformed.assert_error(404, "not_found");

    // A deleted location: 404 for create and delete, the membership stays.
    let (attic, _, attic_etag) = location(&app, "Attic").await;
    let in_attic = app
        .post(
            &memberships_path(&app, attic),
            &app.owner,
            assign(json!(grandma)),
        )
        .await;
    in_attic.assert_status(201);
    app.delete(
        &app.hh(&format!("/locations/{kitchen}")),
        &app.owner,
        Some(&kitchen_etag),
    )
    .await
    .assert_status(204);
    app.post(
        &memberships_path(&app, kitchen),
        &app.owner,
        assign(json!(grandma)),
    )
    .await
    .assert_error(404, "not_found");
    app.delete(
        &app.hh(&format!("/locations/{attic}")),
        &app.owner,
        Some(&attic_etag),
    )
    .await
    .assert_status(204);
    app.delete(
        &membership_path(&app, attic, in_attic.id()),
        &app.owner,
        None,
    )
    .await
    .assert_error(404, "not_found");
    assert_eq!(membership_count(&app).await, 2);
}

#[tokio::test]
async fn credentials_are_required() {
    let app = TestApp::new().await;
    let (kitchen, _, _) = location(&app, "Kitchen").await;
    let (grandma, _) = person(&app, "Grandma").await;
    let created = app
        .post(
            &memberships_path(&app, kitchen),
            &app.owner,
            assign(json!(grandma)),
        )
        .await;
    created.assert_status(201);
    for (method, path, body) in [
        (
            Method::POST,
            memberships_path(&app, kitchen),
            Some(assign(json!(grandma))),
        ),
        (
            Method::DELETE,
            membership_path(&app, kitchen, created.id()),
            None,
        ),
    ] {
        app.send(method.clone(), &path, None, body.clone(), &[])
            .await
            .assert_error(401, "unauthorized");
        app.send(method, &path, Some("pbx_app_not-a-token"), body, &[])
            .await
            .assert_error(401, "unauthorized");
    }
    assert_eq!(membership_count(&app).await, 1);
}

#[tokio::test]
async fn operations_are_documented() {
    let app = TestApp::new().await;
    let doc = app.document();
    let collection =
        &doc["paths"]["/households/{household_id}/locations/{location_id}/location_memberships"];
    let create = &collection["post"];
    assert_eq!(create["operationId"], "createLocationMembership");
    assert_eq!(create["tags"], json!(["Household", "Location memberships"]));
    for status in ["200", "201"] {
        assert_eq!(
            create["responses"][status]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/LocationMembershipResponse",
            "{status}"
        );
    }
    assert_eq!(
        create["requestBody"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/LocationMembershipCreateRequest"
    );
    let member = &doc["paths"]["/households/{household_id}/locations/{location_id}/location_memberships/{membership_id}"];
    let delete = &member["delete"];
    assert_eq!(delete["operationId"], "deleteLocationMembership");
    assert!(delete["responses"].get("204").is_some());
    let params = delete["parameters"].as_array().unwrap();
    let schema_of = |name: &str| {
        params
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{name} is documented"))["schema"]
            .clone()
    };
    assert_eq!(schema_of("membership_id")["type"], "integer");
    assert_eq!(
        schema_of("location_id")["$ref"],
        "#/components/schemas/ResourceIdentifier"
    );
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["LocationMembership"]["required"],
        json!([
            "id",
            "location_id",
            "location_portable_id",
            "person_id",
            "person_portable_id",
            "created_at"
        ])
    );
    assert_eq!(
        schemas["LocationMembershipCreateRequest"]["properties"]["location_membership"]["required"],
        json!(["person_id"])
    );
}

#[tokio::test]
async fn idempotency_keys_replay_assignments_and_removals_after_rechecking_access() {
    const KEY: &str = "assign-ada-1";
    let app = TestApp::new().await;
    let (location_id, _, _) = location(&app, "Kitchen").await;
    let (ada, _) = person(&app, "Ada").await;
    let (membership, carer) = app
        .add_member("carer@example.org", Role::Member, None)
        .await;
    grant_location_management(&app, membership).await;
    grant(&app, membership, ada, "manage").await;
    let path = memberships_path(&app, location_id);

    let first = app
        .post_keyed(&path, &carer, &assign(json!(ada)), KEY)
        .await;
    first.assert_status(201);
    let id = first.id();
    let feed_after_first = person_feed(&app, ada).await;

    // An identical retry gets the saved 201 (not the 200 of a repeat), and
    // nothing is written again.
    let again = app
        .post_keyed(&path, &carer, &assign(json!(ada)), KEY)
        .await;
    again.assert_status(201);
    assert_eq!(again.body, first.body);
    assert_eq!(person_feed(&app, ada).await, feed_after_first);
    assert_eq!(membership_count(&app).await, 1);

    // The same key with another body.
    let (bob, _) = person(&app, "Bob").await;
    grant(&app, membership, bob, "manage").await;
    app.post_keyed(&path, &carer, &assign(json!(bob)), KEY)
        .await
        .assert_error(409, "idempotency_key_reused");
    assert_eq!(membership_count(&app).await, 1);

    // Lowered access never gets the saved response.
    grant(&app, membership, ada, "view").await;
    app.post_keyed(&path, &carer, &assign(json!(ada)), KEY)
        .await
        .assert_error(403, "forbidden");
    grant(&app, membership, ada, "manage").await;

    // A keyed removal: the retry gets 204 again instead of 404, once.
    let member = membership_path(&app, location_id, id);
    let delete_key = [("Idempotency-Key", "unassign-ada-1")];
    let removed = app
        .send(Method::DELETE, &member, Some(&carer), None, &delete_key)
        .await;
    removed.assert_status(204);
    assert_eq!(membership_count(&app).await, 0);
    let feed_after_delete = person_feed(&app, ada).await;
    let replayed = app
        .send(Method::DELETE, &member, Some(&carer), None, &delete_key)
        .await;
    replayed.assert_status(204);
    assert_eq!(replayed.body, Value::Null);
    assert_eq!(person_feed(&app, ada).await, feed_after_delete);
    // Without the key, the membership is simply gone.
    app.delete(&member, &carer, None)
        .await
        .assert_error(404, "not_found");

    // Access to the removed membership's person is re-checked on replay:
    // revoked → 404, and without the location permission → 403.
    app.db
        .write(move |conn| {
            conn.execute(
                "DELETE FROM person_access_grants WHERE membership_id = ?1 AND person_id = ?2",
                [membership, ada],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    app.send(Method::DELETE, &member, Some(&carer), None, &delete_key)
        .await
        .assert_error(404, "not_found");
    grant(&app, membership, ada, "manage").await;
    app.db
        .write(move |conn| {
            conn.execute(
                "UPDATE memberships SET location_management = 0 WHERE id = ?1",
                [membership],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    app.send(Method::DELETE, &member, Some(&carer), None, &delete_key)
        .await
        .assert_error(403, "forbidden");
}
