//! People and access stay consistent: grants, links to people, the
//! household time zone and what `/me` says.

use pillbox::auth::Role;
use serde_json::{Value, json};

use crate::support::{TestApp, TestResponse};

fn grant(membership_id: i64, person_id: i64, relationship: &str, expires_at: Value) -> Value {
    json!({"person_access_grant": {
        "membership_id": membership_id, "person_id": person_id,
        "access_level": "view", "relationship_type": relationship, "expires_at": expires_at,
    }})
}

async fn new_person(app: &TestApp, name: &str) -> i64 {
    let created = app
        .post(
            &app.hh("/people"),
            &app.owner,
            json!({"person": {"name": name, "date_of_birth": "1990-05-01"}}),
        )
        .await;
    created.assert_status(201);
    created.id()
}

async fn audit_log(app: &TestApp) -> Vec<Value> {
    let log = app
        .get(&app.hh("/admin/audit_logs?per_page=100"), &app.owner)
        .await;
    log.assert_status(200);
    log.data().as_array().unwrap().clone()
}

#[tokio::test]
async fn an_expired_grant_does_not_block_a_new_one() {
    let app = TestApp::new().await;
    let (member_id, member) = app
        .add_member("member@example.org", Role::Member, None)
        .await;
    let pat = new_person(&app, "Pat").await;
    let first = app
        .post(
            &app.hh("/admin/person_access_grants"),
            &app.owner,
            grant(member_id, pat, "carer", Value::Null),
        )
        .await;
    first.assert_status(201);
    let first_id = first.id();
    app.db
        .write(move |conn| {
            conn.execute(
                "UPDATE person_access_grants SET expires_at = '2020-01-01T00:00:00.000000Z' WHERE id = ?1",
                [first_id],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    app.get(&app.hh(&format!("/people/{pat}")), &member)
        .await
        .assert_error(404, "not_found");

    let again = app
        .post(
            &app.hh("/admin/person_access_grants"),
            &app.owner,
            grant(member_id, pat, "carer", Value::Null),
        )
        .await;
    again.assert_status(201);
    app.get(&app.hh(&format!("/people/{pat}")), &member)
        .await
        .assert_status(200);
    // Only the new grant is live; a live one still blocks a third.
    let list = grants_of(&app, member_id).await;
    assert_eq!(list.body["meta"]["total_count"], 1);
    assert_eq!(list.data()[0]["id"], again.id());
    app.post(
        &app.hh("/admin/person_access_grants"),
        &app.owner,
        grant(member_id, pat, "carer", Value::Null),
    )
    .await
    .assert_error(409, "grant_exists");
}

#[tokio::test]
async fn grant_expiry_and_self_are_checked_with_clear_messages() {
    let app = TestApp::new().await;
    let (member_id, _) = app
        .add_member("member@example.org", Role::Member, Some("Mo"))
        .await;
    let pat = new_person(&app, "Pat").await;
    let far = app
        .post(
            &app.hh("/admin/person_access_grants"),
            &app.owner,
            grant(member_id, pat, "carer", json!("10000-01-01T00:00:00Z")),
        )
        .await;
    far.assert_error(422, "validation_failed");
    let message = far.body["error"]["errors"]["expires_at"][0]
        .as_str()
        .unwrap();
    assert!(message.contains("too far in the future"), "{message}");
    assert!(!message.contains("10000"));
    let edge = app
        .post(
            &app.hh("/admin/person_access_grants"),
            &app.owner,
            grant(member_id, pat, "carer", json!("9999-12-31T23:00:00Z")),
        )
        .await;
    edge.assert_error(422, "validation_failed");
    assert!(
        edge.body["error"]["errors"]["expires_at"][0]
            .as_str()
            .unwrap()
            .contains("too far in the future")
    );

    // self only on the member's own linked person.
    let not_self = app
        .post(
            &app.hh("/admin/person_access_grants"),
            &app.owner,
            grant(member_id, pat, "self", Value::Null),
        )
        .await;
    not_self.assert_error(422, "validation_failed");
    assert!(not_self.body["error"]["errors"]["relationship_type"].is_array());
}

#[tokio::test]
async fn a_person_created_by_a_member_is_audited_with_its_grant() {
    let app = TestApp::new().await;
    let (member_id, member) = app
        .add_member("member@example.org", Role::Member, None)
        .await;
    let created = app
        .post(
            &app.hh("/people"),
            &member,
            json!({"person": {"name": "Kid", "date_of_birth": "2018-01-01"}}),
        )
        .await;
    created.assert_status(201);
    let event = audit_log(&app)
        .await
        .into_iter()
        .find(|e| e["event_type"] == "person_access_grant.created")
        .expect("the creator's grant is audited");
    assert_eq!(event["actor_membership_id"], member_id);
    assert_eq!(event["metadata"]["membership_id"], member_id);
    assert_eq!(event["metadata"]["person_id"], created.id());
    assert_eq!(event["metadata"]["access_level"], "manage");
}

#[tokio::test]
async fn linking_a_person_gives_self_access_and_unlinking_takes_it() {
    let app = TestApp::new().await;
    let (member_id, member) = app
        .add_member("member@example.org", Role::Member, None)
        .await;
    let pat = new_person(&app, "Pat").await;
    let path = app.hh(&format!("/admin/memberships/{member_id}"));
    app.patch(
        &path,
        &app.owner,
        json!({"household_membership": {"person_id": pat}}),
        None,
    )
    .await
    .assert_status(200);
    let me = app.get(&app.hh("/me"), &member).await;
    me.assert_status(200);
    assert_eq!(me.data()["person"]["id"], pat);
    app.get(&app.hh("/profile"), &member)
        .await
        .assert_status(200);
    app.get(&app.hh(&format!("/people/{pat}")), &member)
        .await
        .assert_status(200);
    let grants = grants_of(&app, member_id).await;
    assert_eq!(grants.body["meta"]["total_count"], 1);
    assert_eq!(grants.data()[0]["relationship_type"], "self");
    assert_eq!(grants.data()[0]["access_level"], "manage");

    app.patch(
        &path,
        &app.owner,
        json!({"household_membership": {"person_id": null}}),
        None,
    )
    .await
    .assert_status(200);
    let me = app.get(&app.hh("/me"), &member).await;
    assert_eq!(me.data()["person"], Value::Null);
    app.get(&app.hh(&format!("/people/{pat}")), &member)
        .await
        .assert_error(404, "not_found");
    let grants = grants_of(&app, member_id).await;
    assert_eq!(grants.body["meta"]["total_count"], 0);
}

#[tokio::test]
async fn the_household_time_zone_is_stored_canonically() {
    let app = TestApp::new().await;
    let path = app.hh("/admin/settings");
    let patched = app
        .patch(
            &path,
            &app.owner,
            json!({"household": {"time_zone": "europe/paris"}}),
            None,
        )
        .await;
    patched.assert_status(200);
    assert_eq!(patched.data()["time_zone"], "Europe/Paris");
    assert_eq!(
        app.get(&path, &app.owner).await.data()["time_zone"],
        "Europe/Paris"
    );
    // A zone stored before canonical names is still answered canonically.
    let household_id = app.household_id;
    app.db
        .write(move |conn| {
            conn.execute(
                "UPDATE households SET time_zone = 'europe/london' WHERE id = ?1",
                [household_id],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(
        app.get(&path, &app.owner).await.data()["time_zone"],
        "Europe/London"
    );
    let households = app.get("/api/v1/auth/households", &app.owner).await;
    assert_eq!(households.data()[0]["time_zone"], "Europe/London");
    let unknown = app
        .patch(
            &path,
            &app.owner,
            json!({"household": {"time_zone": "Mars/Olympus_Mons"}}),
            None,
        )
        .await;
    unknown.assert_error(422, "validation_failed");
    assert!(!unknown.body.to_string().contains("Olympus"));
}

#[tokio::test]
async fn me_shows_the_permissions_the_member_actually_has() {
    let app = TestApp::new().await;
    let me = app.get(&app.hh("/me"), &app.owner).await;
    me.assert_status(200);
    assert_eq!(
        me.data()["membership"]["permissions"]["inventory_management"],
        true
    );
    assert_eq!(
        me.data()["membership"]["permissions"]["location_management"],
        true
    );
    // The owner really may manage stock.
    app.post(
        &app.hh("/medications"),
        &app.owner,
        json!({"medication": {"name": "Paracetamol"}}),
    )
    .await
    .assert_status(201);
    let (_, member) = app
        .add_member("member@example.org", Role::Member, None)
        .await;
    let me = app.get(&app.hh("/me"), &member).await;
    assert_eq!(
        me.data()["membership"]["permissions"]["inventory_management"],
        false
    );
}

/// A list filter that names nothing the caller may see is 404, as
/// `dose_occurrences` already answered, on every list that takes one.
#[tokio::test]
async fn list_filters_that_name_nothing_are_not_found() {
    use pillbox::household::{self, NewMember};

    let app = TestApp::new().await;
    let pat = new_person(&app, "Pat").await;
    let elsewhere: String = app
        .db
        .write(|conn| {
            let other = household::set_up(
                conn,
                "Elsewhere",
                "UTC",
                &NewMember {
                    email: "other@example.org",
                    password_hash: crate::support::password_hash(),
                    person_name: "Stranger",
                    role: Role::Owner,
                },
            )?;
            Ok(conn.query_row(
                "SELECT portable_id FROM people WHERE household_id = ?1",
                [other.household_id],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    let (member_id, member) = app
        .add_member("member@example.org", Role::Member, None)
        .await;

    let missing = [
        "/admin/person_access_grants?person_id=999".to_string(),
        format!("/admin/person_access_grants?person_id={elsewhere}"),
        "/admin/person_access_grants?membership_id=999".to_string(),
        "/schedules?person_id=999".to_string(),
        format!("/schedules?person_id={elsewhere}"),
        "/schedules?medication_id=999".to_string(),
        "/person_medications?person_id=999".to_string(),
        "/person_medications?medication_id=999".to_string(),
        "/medication_takes?person_id=999".to_string(),
        format!("/medication_takes?person_id={elsewhere}"),
        "/medication_takes?source_type=schedule&source_id=999".to_string(),
        "/medication_takes?source_type=person_medication&source_id=999".to_string(),
        "/health_events?person_id=999".to_string(),
        format!("/health_events?person_id={elsewhere}"),
    ];
    for path in &missing {
        app.get(&app.hh(path), &app.owner)
            .await
            .assert_error(404, "not_found");
    }
    // A person of the household outside a member's grants is not found either.
    for list in [
        "/schedules",
        "/person_medications",
        "/medication_takes",
        "/health_events",
    ] {
        app.get(&app.hh(&format!("{list}?person_id={pat}")), &member)
            .await
            .assert_error(404, "not_found");
    }
    // Filters that name something still list.
    for path in [
        format!("/schedules?person_id={pat}"),
        format!("/medication_takes?person_id={pat}"),
        format!("/health_events?person_id={pat}"),
        format!("/admin/person_access_grants?person_id={pat}&membership_id={member_id}"),
    ] {
        let listed = app.get(&app.hh(&path), &app.owner).await;
        listed.assert_status(200);
        assert_eq!(listed.body["meta"]["total_count"], 0, "{path}");
    }
}

#[tokio::test]
async fn person_type_and_capacity_follow_age() {
    let app = TestApp::new().await;
    let people = app.hh("/people");
    let refused = |body: Value, field: &'static str| {
        let app = &app;
        let people = people.clone();
        async move {
            let r = app.post(&people, &app.owner, json!({"person": body})).await;
            r.assert_error(422, "validation_failed");
            assert!(r.body["error"]["errors"][field].is_array(), "{}", r.body);
        }
    };
    refused(
        json!({"name": "Kid", "date_of_birth": "2018-01-01", "person_type": "adult"}),
        "person_type",
    )
    .await;
    refused(
        json!({"name": "Kid", "date_of_birth": "2018-01-01", "person_type": "minor", "has_capacity": true}),
        "has_capacity",
    )
    .await;
    refused(
        json!({"name": "Gran", "date_of_birth": "1940-01-01", "person_type": "minor"}),
        "person_type",
    )
    .await;
    refused(
        json!({"name": "Gran", "date_of_birth": "1940-01-01", "person_type": "adult", "has_capacity": false}),
        "has_capacity",
    )
    .await;

    // Defaults follow the same rule.
    let gran = app
        .post(
            &people,
            &app.owner,
            json!({"person": {"name": "Gran", "date_of_birth": "1940-01-01", "has_capacity": false}}),
        )
        .await;
    gran.assert_status(201);
    assert_eq!(gran.data()["person_type"], "dependent_adult");
    let adult = app
        .post(
            &people,
            &app.owner,
            json!({"person": {"name": "Al", "date_of_birth": "1990-01-01"}}),
        )
        .await;
    adult.assert_status(201);
    assert_eq!(adult.data()["person_type"], "adult");
    assert_eq!(adult.data()["has_capacity"], true);

    // A date of birth that makes the adult a child is refused on its own,
    // and accepted with the type and capacity that fit.
    let path = app.hh(&format!("/people/{}", adult.id()));
    let child_dob = app
        .patch(
            &path,
            &app.owner,
            json!({"person": {"date_of_birth": "2020-06-01"}}),
            None,
        )
        .await;
    child_dob.assert_error(422, "validation_failed");
    assert!(child_dob.body["error"]["errors"]["date_of_birth"].is_array());
    assert_eq!(app.get(&path, &app.owner).await.etag(), adult.etag());
    app.patch(
        &path,
        &app.owner,
        json!({"person": {"date_of_birth": "2020-06-01", "person_type": "minor", "has_capacity": false}}),
        None,
    )
    .await
    .assert_status(200);
    // An update of the type alone is checked too.
    app.patch(
        &path,
        &app.owner,
        json!({"person": {"person_type": "adult"}}),
        None,
    )
    .await
    .assert_error(422, "validation_failed");
}

/// Links made before the self-grant rule get their grant on upgrade, and a
/// `self` grant on a person no longer linked is revoked.
#[tokio::test]
async fn upgrade_repairs_self_grants_of_linked_members() {
    use pillbox::db::{DATABASE_FILE, Db};
    use pillbox::household::{self, NewMember};

    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let (owner, owner_person, other_person) = db
        .write(|conn| {
            let set_up = household::set_up(
                conn,
                "Old household",
                "UTC",
                &NewMember {
                    email: "owner@example.org",
                    password_hash: crate::support::password_hash(),
                    person_name: "Olive",
                    role: Role::Owner,
                },
            )?;
            let owner_person: i64 = conn.query_row(
                "SELECT person_id FROM memberships WHERE id = ?1",
                [set_up.membership_id],
                |r| r.get(0),
            )?;
            // As before the rule: the self grant is gone, and a stray self
            // grant sits on someone else.
            conn.execute("UPDATE person_access_grants SET revoked_at = 'x'", [])?;
            let other =
                pillbox::household::people::create_linked(conn, set_up.household_id, "Pat")?;
            conn.execute(
                "INSERT INTO person_access_grants (household_id, membership_id, person_id,
                     access_level, relationship_type, created_at)
                 VALUES (?1, ?2, ?3, 'view', 'self', 'then')",
                [set_up.household_id, set_up.membership_id, other],
            )?;
            Ok((set_up.membership_id, owner_person, other))
        })
        .await
        .unwrap();
    db.close().await;
    let file = rusqlite::Connection::open(dir.path().join(DATABASE_FILE)).unwrap();
    // Version 2: the schema as it was before migration 3 repaired access.
    file.pragma_update(None, "user_version", 2).unwrap();
    drop(file);

    let db = Db::open(dir.path()).unwrap();
    let live: Vec<(i64, String, String)> = db
        .read(move |c| {
            let mut stmt = c.prepare(
                "SELECT person_id, access_level, relationship_type FROM person_access_grants
                 WHERE revoked_at IS NULL AND membership_id = ?1 ORDER BY id",
            )?;
            let rows = stmt
                .query_map([owner], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .await
        .unwrap();
    assert_eq!(
        live,
        [(owner_person, "manage".to_string(), "self".to_string())]
    );
    assert_ne!(owner_person, other_person);
}

/// The owner's list of the live grants `member_id` holds.
async fn grants_of(app: &TestApp, member_id: i64) -> TestResponse {
    app.get(
        &app.hh(&format!(
            "/admin/person_access_grants?membership_id={member_id}"
        )),
        &app.owner,
    )
    .await
}
