use axum::http::Method;
use pillbox::auth::Role;
use serde_json::{Value, json};

use crate::support::TestApp;

fn new_location(name: &str) -> Value {
    json!({"location": {"name": name, "description": null}})
}

/// Creates a location as the owner; returns (id, portable_id, etag).
async fn create(app: &TestApp, body: Value) -> (i64, String, String) {
    let created = app.post(&app.hh("/locations"), &app.owner, body).await;
    created.assert_status(201);
    (
        created.id(),
        created.data()["portable_id"].as_str().unwrap().to_string(),
        created.etag(),
    )
}

/// (action, person_id) of the Location change-feed entries for `id`, in order.
async fn feed_of(app: &TestApp, id: i64) -> Vec<(String, Option<i64>)> {
    app.db
        .read(move |conn| {
            let mut stmt = conn.prepare(
                "SELECT action, person_id FROM change_feed
                 WHERE record_type = 'Location' AND record_id = ?1 ORDER BY seq",
            )?;
            let rows = stmt
                .query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .await
        .unwrap()
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

#[tokio::test]
async fn create_get_list_update_replace_delete_a_location() {
    let app = TestApp::new().await;
    let created = app
        .post(
            &app.hh("/locations"),
            &app.owner,
            json!({"location": {"name": "  Kitchen cupboard ", "description": "Top shelf"}}),
        )
        .await;
    created.assert_status(201);
    let location = created.data().clone();
    assert_eq!(location["name"], "Kitchen cupboard");
    assert_eq!(location["description"], "Top shelf");
    assert_eq!(location["created_at"], location["updated_at"]);
    let keys: Vec<&str> = location
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys.len(),
        6,
        "exactly the documented keys, no lock_version: {keys:?}"
    );
    let id = created.id();
    let portable_id = location["portable_id"].as_str().unwrap().to_string();
    let etag = created.etag();

    // Numeric and portable ids name the same location, with the same ETag.
    for key in [id.to_string(), portable_id.clone()] {
        let got = app
            .get(&app.hh(&format!("/locations/{key}")), &app.owner)
            .await;
        got.assert_status(200);
        assert_eq!(got.data(), &location);
        assert_eq!(got.etag(), etag);
    }

    let list = app.get(&app.hh("/locations"), &app.owner).await;
    list.assert_status(200);
    assert_eq!(
        list.body["meta"],
        json!({"page": 1, "per_page": 20, "total_count": 1})
    );
    assert_eq!(list.data()[0], location);

    // PATCH through the portable id: only the given field changes.
    let patched = app
        .patch(
            &app.hh(&format!("/locations/{portable_id}")),
            &app.owner,
            json!({"location": {"name": "Bathroom"}}),
            Some(&etag),
        )
        .await;
    patched.assert_status(200);
    assert_eq!(patched.data()["name"], "Bathroom");
    assert_eq!(patched.data()["description"], "Top shelf");
    assert_eq!(patched.data()["created_at"], location["created_at"]);
    assert_ne!(patched.etag(), etag);
    let etag = patched.etag();

    // PATCH may clear the description.
    let cleared = app
        .patch(
            &app.hh(&format!("/locations/{id}")),
            &app.owner,
            json!({"location": {"description": null}}),
            Some(&etag),
        )
        .await;
    cleared.assert_status(200);
    assert_eq!(cleared.data()["description"], Value::Null);
    assert_eq!(cleared.data()["name"], "Bathroom");
    let etag = cleared.etag();

    // PUT replaces the whole location; an absent description becomes null.
    let described = app
        .put(
            &app.hh(&format!("/locations/{id}")),
            &app.owner,
            json!({"location": {"name": "Hall", "description": "By the door"}}),
            Some(&etag),
        )
        .await;
    described.assert_status(200);
    assert_eq!(described.data()["description"], "By the door");
    let replaced = app
        .put(
            &app.hh(&format!("/locations/{id}")),
            &app.owner,
            new_location("Hall cabinet"),
            Some(&described.etag()),
        )
        .await;
    replaced.assert_status(200);
    assert_eq!(replaced.data()["name"], "Hall cabinet");
    assert_eq!(replaced.data()["description"], Value::Null);
    let etag = replaced.etag();
    let got = app
        .get(&app.hh(&format!("/locations/{id}")), &app.owner)
        .await;
    assert_eq!(got.data(), replaced.data());
    assert_eq!(got.etag(), etag);

    // DELETE through the portable id: 204 with no body; afterwards it is gone.
    let deleted = app
        .delete(
            &app.hh(&format!("/locations/{portable_id}")),
            &app.owner,
            Some(&etag),
        )
        .await;
    deleted.assert_status(204);
    assert_eq!(deleted.body, Value::Null);
    for key in [id.to_string(), portable_id.clone()] {
        app.get(&app.hh(&format!("/locations/{key}")), &app.owner)
            .await
            .assert_error(404, "not_found");
    }
    app.patch(
        &app.hh(&format!("/locations/{id}")),
        &app.owner,
        new_location("Ghost"),
        Some(&etag),
    )
    .await
    .assert_error(404, "not_found");
    app.delete(
        &app.hh(&format!("/locations/{id}")),
        &app.owner,
        Some(&etag),
    )
    .await
    .assert_error(404, "not_found");
    let list = app.get(&app.hh("/locations"), &app.owner).await;
    assert_eq!(list.body["meta"]["total_count"], 0);
    assert_eq!(list.data(), &json!([]));

    // Every write left one change-feed entry, household-wide (no person).
    let feed = feed_of(&app, id).await;
    let actions: Vec<&str> = feed.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(
        actions,
        ["create", "update", "update", "update", "update", "delete"]
    );
    assert!(feed.iter().all(|(_, person)| person.is_none()));
}

#[tokio::test]
async fn edits_and_deletes_need_the_current_etag() {
    let app = TestApp::new().await;
    let (id, _, etag) = create(
        &app,
        json!({"location": {"name": "Kitchen", "description": "Drawer"}}),
    )
    .await;
    let path = app.hh(&format!("/locations/{id}"));

    // Missing If-Match: 428 on every write, nothing changes.
    app.patch(&path, &app.owner, new_location("X"), None)
        .await
        .assert_error(428, "precondition_required");
    app.put(&path, &app.owner, new_location("X"), None)
        .await
        .assert_error(428, "precondition_required");
    app.delete(&path, &app.owner, None)
        .await
        .assert_error(428, "precondition_required");

    // Move the location on so that the first ETag is stale.
    let moved = app
        .patch(
            &path,
            &app.owner,
            json!({"location": {"description": "Cupboard"}}),
            Some(&etag),
        )
        .await;
    moved.assert_status(200);
    let current = moved.etag();
    for stale in [etag.as_str(), "\"not-an-etag\""] {
        app.patch(&path, &app.owner, new_location("X"), Some(stale))
            .await
            .assert_error(409, "edit_conflict");
        app.put(&path, &app.owner, new_location("X"), Some(stale))
            .await
            .assert_error(409, "edit_conflict");
        app.delete(&path, &app.owner, Some(stale))
            .await
            .assert_error(409, "edit_conflict");
    }
    let got = app.get(&path, &app.owner).await;
    got.assert_status(200);
    assert_eq!(got.data()["name"], "Kitchen");
    assert_eq!(got.data()["description"], "Cupboard");
    assert_eq!(got.etag(), current);
    // Only the create and the one successful update are in the feed.
    let actions: Vec<String> = feed_of(&app, id)
        .await
        .into_iter()
        .map(|(a, _)| a)
        .collect();
    assert_eq!(actions, ["create", "update"]);
}

#[tokio::test]
async fn invalid_attributes_are_422_naming_the_field() {
    let app = TestApp::new().await;
    let post = |body: Value| {
        let app = &app;
        async move { app.post(&app.hh("/locations"), &app.owner, body).await }
    };
    let field_error = |r: &crate::support::TestResponse, field: &str| {
        r.assert_error(422, "validation_failed");
        assert!(
            r.body["error"]["errors"][field].is_array(),
            "expected an error on {field}: {}",
            r.body
        );
    };

    field_error(
        &post(json!({"location": {"name": "A", "colour": "red"}})).await,
        "colour",
    );
    field_error(&post(json!({"location": {"name": "   "}})).await, "name");
    field_error(&post(json!({"location": {"name": ""}})).await, "name");
    field_error(&post(json!({"location": {}})).await, "name");
    field_error(&post(json!({"location": {"name": null}})).await, "name");
    field_error(&post(json!({"location": {"name": 5}})).await, "name");
    field_error(&post(new_location(&"x".repeat(201))).await, "name");
    field_error(
        &post(json!({"location": {"name": "A", "description": "d".repeat(2001)}})).await,
        "description",
    );
    field_error(&post(json!({"name": "Unwrapped"})).await, "name");
    post(json!({"location": {"name": "A"}, "extra": 1}))
        .await
        .assert_error(422, "validation_failed");
    // The limits themselves are allowed.
    let longest =
        post(json!({"location": {"name": "x".repeat(200), "description": "d".repeat(2000)}})).await;
    longest.assert_status(201);
    let (id, etag) = (longest.id(), longest.etag());
    let path = app.hh(&format!("/locations/{id}"));

    // Updates validate too, and change nothing when they fail.
    let r = app
        .patch(
            &path,
            &app.owner,
            json!({"location": {"name": " "}}),
            Some(&etag),
        )
        .await;
    field_error(&r, "name");
    let r = app
        .patch(
            &path,
            &app.owner,
            json!({"location": {"shelf": 2}}),
            Some(&etag),
        )
        .await;
    field_error(&r, "shelf");
    let r = app
        .put(
            &path,
            &app.owner,
            json!({"location": {"description": "no name"}}),
            Some(&etag),
        )
        .await;
    field_error(&r, "name");
    let got = app.get(&path, &app.owner).await;
    assert_eq!(got.etag(), etag);
    assert_eq!(got.data()["name"], "x".repeat(200));

    let list = app.get(&app.hh("/locations"), &app.owner).await;
    assert_eq!(list.body["meta"]["total_count"], 1);
}

#[tokio::test]
async fn only_location_managers_may_write() {
    let app = TestApp::new().await;
    let (id, portable_id, etag) = create(&app, new_location("Kitchen")).await;
    let path = app.hh(&format!("/locations/{id}"));
    let (membership_id, member) = app
        .add_member("member@example.org", Role::Member, Some("Max Member"))
        .await;

    // A plain member reads locations by either id and lists them...
    app.get(&path, &member).await.assert_status(200);
    app.get(&app.hh(&format!("/locations/{portable_id}")), &member)
        .await
        .assert_status(200);
    let list = app.get(&app.hh("/locations"), &member).await;
    list.assert_status(200);
    assert_eq!(list.body["meta"]["total_count"], 1);

    // ...but may not create, change or delete them, even with the right ETag.
    app.post(&app.hh("/locations"), &member, new_location("Shed"))
        .await
        .assert_error(403, "forbidden");
    app.patch(&path, &member, new_location("Shed"), Some(&etag))
        .await
        .assert_error(403, "forbidden");
    app.put(&path, &member, new_location("Shed"), Some(&etag))
        .await
        .assert_error(403, "forbidden");
    app.delete(&path, &member, Some(&etag))
        .await
        .assert_error(403, "forbidden");
    let got = app.get(&path, &member).await;
    assert_eq!(got.data()["name"], "Kitchen");
    assert_eq!(got.etag(), etag);
    assert_eq!(
        app.get(&app.hh("/locations"), &member).await.body["meta"]["total_count"],
        1
    );

    // With the location-management permission (checked on every request) they may.
    grant_location_management(&app, membership_id).await;
    let shed = app
        .post(&app.hh("/locations"), &member, new_location("Shed"))
        .await;
    shed.assert_status(201);
    let shed_path = app.hh(&format!("/locations/{}", shed.id()));
    let renamed = app
        .patch(
            &shed_path,
            &member,
            new_location("Garden shed"),
            Some(&shed.etag()),
        )
        .await;
    renamed.assert_status(200);
    let replaced = app
        .put(&path, &member, new_location("Kitchen drawer"), Some(&etag))
        .await;
    replaced.assert_status(200);
    app.delete(&shed_path, &member, Some(&renamed.etag()))
        .await
        .assert_status(204);

    // Administrators may without the flag.
    let (_, admin) = app
        .add_member("admin@example.org", Role::Administrator, None)
        .await;
    let attic = app
        .post(&app.hh("/locations"), &admin, new_location("Attic"))
        .await;
    attic.assert_status(201);
    app.delete(
        &app.hh(&format!("/locations/{}", attic.id())),
        &admin,
        Some(&attic.etag()),
    )
    .await
    .assert_status(204);
}

#[tokio::test]
async fn pagination_and_updated_since() {
    let app = TestApp::new().await;
    let mut ids = Vec::new();
    for i in 0..25 {
        ids.push(create(&app, new_location(&format!("L{i:02}"))).await.0);
    }
    let page2 = app
        .get(&app.hh("/locations?page=2&per_page=10"), &app.owner)
        .await;
    page2.assert_status(200);
    assert_eq!(
        page2.body["meta"],
        json!({"page": 2, "per_page": 10, "total_count": 25})
    );
    let got: Vec<i64> = page2
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_i64().unwrap())
        .collect();
    assert_eq!(got, ids[10..20]);
    let last = app
        .get(&app.hh("/locations?page=3&per_page=10"), &app.owner)
        .await;
    assert_eq!(last.data().as_array().unwrap().len(), 5);
    let beyond = app
        .get(&app.hh("/locations?page=9&per_page=10"), &app.owner)
        .await;
    beyond.assert_status(200);
    assert_eq!(beyond.data(), &json!([]));
    assert_eq!(beyond.body["meta"]["total_count"], 25);

    for bad in [
        "per_page=0",
        "per_page=101",
        "page=0",
        "page=abc",
        "per_page=-1",
    ] {
        let r = app
            .get(&app.hh(&format!("/locations?{bad}")), &app.owner)
            .await;
        r.assert_error(422, "validation_failed");
    }
    app.get(&app.hh("/locations?updated_since=yesterday"), &app.owner)
        .await
        .assert_error(422, "validation_failed");

    // updated_since lists what was created or changed since the mark.
    let mark = pillbox::domain::Timestamp::now();
    let later = create(&app, new_location("Later")).await.0;
    let first = app
        .get(&app.hh(&format!("/locations/{}", ids[0])), &app.owner)
        .await;
    app.patch(
        &app.hh(&format!("/locations/{}", ids[0])),
        &app.owner,
        new_location("L00 renamed"),
        Some(&first.etag()),
    )
    .await
    .assert_status(200);
    let since = app
        .get(
            &app.hh(&format!("/locations?updated_since={mark}")),
            &app.owner,
        )
        .await;
    since.assert_status(200);
    let got: Vec<i64> = since
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_i64().unwrap())
        .collect();
    assert_eq!(got, [ids[0], later]);
    assert_eq!(since.body["meta"]["total_count"], 2);
}

#[tokio::test]
async fn deleted_location_leaves_people_but_keeps_its_row() {
    let app = TestApp::new().await;
    let me = app.get(&app.hh("/me"), &app.owner).await;
    let person_id = me.data()["person"]["id"].as_i64().unwrap();
    let (kitchen, kitchen_portable, kitchen_etag) = create(&app, new_location("Kitchen")).await;
    let (bathroom, bathroom_portable, _) = create(&app, new_location("Bathroom")).await;
    let household_id = app.household_id;
    app.db
        .write(move |conn| {
            for location_id in [kitchen, bathroom] {
                conn.execute(
                    "INSERT INTO location_memberships (household_id, location_id, person_id, created_at)
                     VALUES (?1, ?2, ?3, ?4)",
                    rusqlite::params![household_id, location_id, person_id, pillbox::domain::Timestamp::now()],
                )?;
            }
            Ok(())
        })
        .await
        .unwrap();
    let person_path = app.hh(&format!("/people/{person_id}"));
    let person = app.get(&person_path, &app.owner).await;
    assert_eq!(person.data()["location_ids"], json!([kitchen, bathroom]));
    assert_eq!(
        person.data()["location_portable_ids"],
        json!([kitchen_portable, bathroom_portable])
    );

    app.delete(
        &app.hh(&format!("/locations/{kitchen}")),
        &app.owner,
        Some(&kitchen_etag),
    )
    .await
    .assert_status(204);
    let person = app.get(&person_path, &app.owner).await;
    assert_eq!(person.data()["location_ids"], json!([bathroom]));
    assert_eq!(
        person.data()["location_portable_ids"],
        json!([bathroom_portable])
    );
    let me = app.get(&app.hh("/me"), &app.owner).await;
    assert_eq!(me.data()["person"]["location_ids"], json!([bathroom]));

    // The row stays (soft delete) so records that name it keep working.
    let (deleted_at, links): (Option<String>, i64) = app
        .db
        .read(move |conn| {
            Ok(conn.query_row(
                "SELECT deleted_at,
                        (SELECT count(*) FROM location_memberships WHERE location_id = ?1)
                 FROM locations WHERE id = ?1",
                [kitchen],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?)
        })
        .await
        .unwrap();
    assert!(deleted_at.is_some());
    assert_eq!(links, 1);
}

#[tokio::test]
async fn credentials_and_other_households() {
    let app = TestApp::new().await;
    let (id, _, etag) = create(&app, new_location("Kitchen")).await;
    let path = app.hh(&format!("/locations/{id}"));

    // No token: 401 on every operation.
    for (method, target, body) in [
        (Method::GET, app.hh("/locations"), None),
        (Method::POST, app.hh("/locations"), Some(new_location("X"))),
        (Method::GET, path.clone(), None),
        (Method::PATCH, path.clone(), Some(new_location("X"))),
        (Method::PUT, path.clone(), Some(new_location("X"))),
        (Method::DELETE, path.clone(), None),
    ] {
        app.send(method, &target, None, body, &[("if-match", &etag)])
            .await
            .assert_error(401, "unauthorized");
    }
    app.send(
        Method::GET,
        &path,
        Some("pbx_app_0123456789abcdef_nope"),
        None,
        &[],
    )
    .await
    .assert_error(401, "unauthorized");

    // Another household, and its location.
    let (other_household, foreign_id, foreign_portable) = app
        .db
        .write(|conn| {
            let household = pillbox::household::store::insert(
                conn,
                "Other",
                "UTC",
                &pillbox::domain::Timestamp::now(),
            )?;
            let portable = pillbox::db::new_portable_id();
            conn.execute(
                "INSERT INTO locations (portable_id, household_id, name, created_at, updated_at)
                 VALUES (?1, ?2, 'Their shed', ?3, ?3)",
                rusqlite::params![portable, household, pillbox::domain::Timestamp::now()],
            )?;
            Ok((household, conn.last_insert_rowid(), portable))
        })
        .await
        .unwrap();
    let foreign_etag = format!("\"{foreign_portable}.1\"");

    // Its paths reveal nothing to this household's owner.
    app.get(
        &format!("/api/v1/households/{other_household}/locations"),
        &app.owner,
    )
    .await
    .assert_error(404, "not_found");
    app.post(
        &format!("/api/v1/households/{other_household}/locations"),
        &app.owner,
        new_location("X"),
    )
    .await
    .assert_error(404, "not_found");
    app.get(
        &format!("/api/v1/households/{other_household}/locations/{foreign_id}"),
        &app.owner,
    )
    .await
    .assert_error(404, "not_found");

    // Its location cannot be reached through this household either.
    for key in [foreign_id.to_string(), foreign_portable.clone()] {
        let foreign = app.hh(&format!("/locations/{key}"));
        app.get(&foreign, &app.owner)
            .await
            .assert_error(404, "not_found");
        app.patch(
            &foreign,
            &app.owner,
            new_location("Mine"),
            Some(&foreign_etag),
        )
        .await
        .assert_error(404, "not_found");
        app.put(
            &foreign,
            &app.owner,
            new_location("Mine"),
            Some(&foreign_etag),
        )
        .await
        .assert_error(404, "not_found");
        app.delete(&foreign, &app.owner, Some(&foreign_etag))
            .await
            .assert_error(404, "not_found");
    }
    let list = app.get(&app.hh("/locations"), &app.owner).await;
    assert_eq!(list.body["meta"]["total_count"], 1);
    let name: String = app
        .db
        .read(move |conn| {
            Ok(conn.query_row(
                "SELECT name FROM locations WHERE id = ?1 AND deleted_at IS NULL",
                [foreign_id],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(name, "Their shed");

    // Ids that cannot name a location, and ones that name nothing.
    for key in ["abc", "0", "999999", "0192a5b0-0000-7000-8000-000000000000"] {
        app.get(&app.hh(&format!("/locations/{key}")), &app.owner)
            .await
            .assert_error(404, "not_found");
    }
}

/// The limits the 422s enforce (the bounded text types) are the ones the
/// served schemas declare, for requests and responses alike.
#[tokio::test]
async fn location_limits_are_documented_from_the_types_that_enforce_them() {
    let app = TestApp::new().await;
    let schemas = &app.document()["components"]["schemas"];
    for schema in [&schemas["LocationAttributes"], &schemas["Location"]] {
        assert_eq!(schema["properties"]["name"]["maxLength"], 200);
        assert_eq!(schema["properties"]["description"]["maxLength"], 2000);
    }
    let refused = app
        .post(
            &app.hh("/locations"),
            &app.owner,
            json!({"location": {"name": "A", "description": "d".repeat(2001)}}),
        )
        .await;
    refused.assert_error(422, "validation_failed");
    assert_eq!(
        refused.body["error"]["errors"]["description"],
        json!(["must be at most 2000 characters"])
    );
}
