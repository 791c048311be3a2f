//! getSyncSnapshot and getMobileSnapshot: every portable collection with
//! portable ids and ETags, no numeric ids, scoped to the people the caller
//! may view, and a cursor at the change feed's current position.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use pillbox::auth::Role;
use serde_json::{Value, json};

use crate::support::TestApp;
use crate::support::records::{Ids, grant, new_medication, new_person};

fn ids(data: &Value) -> Ids {
    Ids {
        id: data["id"].as_i64().unwrap(),
        portable: data["portable_id"].as_str().unwrap().to_string(),
    }
}

/// The record of `collection` with this portable id.
fn find<'a>(snapshot: &'a Value, collection: &str, portable: &str) -> &'a Value {
    snapshot["records"][collection]
        .as_array()
        .unwrap_or_else(|| panic!("no collection {collection}"))
        .iter()
        .find(|r| r["portable_id"] == portable)
        .unwrap_or_else(|| panic!("{collection} lacks {portable}"))
}

fn portables(snapshot: &Value, collection: &str) -> Vec<String> {
    snapshot["records"][collection]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["portable_id"].as_str().unwrap().to_string())
        .collect()
}

/// Fails on any key `id` or ending in `_id`/`_ids` holding a number.
fn assert_no_numeric_ids(value: &Value, path: &str) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let here = format!("{path}.{key}");
                if key == "id" || key.ends_with("_id") || key.ends_with("_ids") {
                    let numeric = v.is_number()
                        || v.as_array()
                            .is_some_and(|items| items.iter().any(Value::is_number));
                    assert!(!numeric, "numeric id at {here}: {v}");
                }
                assert_no_numeric_ids(v, &here);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                assert_no_numeric_ids(v, &format!("{path}[{i}]"));
            }
        }
        _ => {}
    }
}

struct World {
    ada: Ids,
    bob: Ids,
    location: Ids,
    med: Ids,
    option: Ids,
    ada_schedule: Ids,
    bob_schedule: Ids,
    assignment: Ids,
    take: (Ids, String),
    bob_take: Ids,
    event: Ids,
    bob_event: Ids,
    pause: (Ids, String),
    preference: (String, String),
}

async fn build(app: &TestApp) -> World {
    let ada = new_person(app, "Ada").await;
    let bob = new_person(app, "Bob").await;
    let created = app
        .post(
            &app.hh("/locations"),
            &app.owner,
            json!({"location": {"name": "Kitchen", "description": "Top shelf"}}),
        )
        .await;
    created.assert_status(201);
    let location = ids(created.data());
    app.post(
        &app.hh(&format!("/locations/{}/location_memberships", location.id)),
        &app.owner,
        json!({"location_membership": {"person_id": ada.id}}),
    )
    .await
    .assert_status(201);
    let med = new_medication(app, "Paracetamol").await;
    let created = app
        .post(
            &app.hh("/dosage_options"),
            &app.owner,
            json!({"dosage_option": {"medication_id": med.id, "amount": "2.5", "unit": "ml"}}),
        )
        .await;
    created.assert_status(201);
    let option = ids(created.data());

    let mut schedules = Vec::new();
    for person in [&ada, &bob] {
        let created = app
            .post(
                &app.hh("/schedules"),
                &app.owner,
                json!({"schedule": {
                    "person_id": person.id, "medication_id": med.id,
                    "schedule_type": "daily", "schedule_config": {"times": ["08:00"]},
                    "start_date": "2026-03-01",
                }}),
            )
            .await;
        created.assert_status(201);
        schedules.push(ids(created.data()));
    }
    let bob_schedule = schedules.pop().unwrap();
    let ada_schedule = schedules.pop().unwrap();

    let created = app
        .post(
            &app.hh("/person_medications"),
            &app.owner,
            json!({"person_medication": {"person_id": ada.id, "medication_id": med.id}}),
        )
        .await;
    created.assert_status(201);
    let assignment = ids(created.data());

    let mut takes = Vec::new();
    for schedule in [&ada_schedule, &bob_schedule] {
        let created = app
            .post(
                &app.hh("/medication_takes"),
                &app.owner,
                json!({"medication_take": {"source_type": "schedule", "source_id": schedule.portable,
                       "taken_at": "2026-03-02T08:05:00Z"}}),
            )
            .await;
        created.assert_status(201);
        takes.push((ids(created.data()), created.etag()));
    }
    let bob_take = takes.pop().unwrap().0;
    let take = takes.pop().unwrap();

    let mut events = Vec::new();
    for person in [&ada, &bob] {
        let created = app
            .post(
                &app.hh("/health_events"),
                &app.owner,
                json!({"health_event": {"person_id": person.id, "event_kind": "illness",
                       "title": "Cold", "started_on": "2026-03-01", "medication_ids": [med.id]}}),
            )
            .await;
        created.assert_status(201);
        events.push(ids(created.data()));
    }
    let bob_event = events.pop().unwrap();
    let event = events.pop().unwrap();

    let created = app
        .post(
            &app.hh("/medication_pause_periods"),
            &app.owner,
            json!({"medication_pause_period": {"source_type": "schedule",
                   "source_id": ada_schedule.portable, "reason": "side_effects"}}),
        )
        .await;
    created.assert_status(201);
    let pause = (
        Ids {
            id: 0,
            portable: created.data()["portable_id"].as_str().unwrap().to_string(),
        },
        created.etag(),
    );

    let patched = app
        .patch(
            &app.hh("/notification_preference"),
            &app.owner,
            json!({"notification_preference": {"enabled": true, "morning_time": "07:30"}}),
            None,
        )
        .await;
    patched.assert_status(200);
    let preference = (
        patched.data()["portable_id"].as_str().unwrap().to_string(),
        patched.etag(),
    );

    World {
        ada,
        bob,
        location,
        med,
        option,
        ada_schedule,
        bob_schedule,
        assignment,
        take,
        bob_take,
        event,
        bob_event,
        pause,
        preference,
    }
}

async fn etag_of(app: &TestApp, path: &str) -> String {
    let got = app.get(&app.hh(path), &app.owner).await;
    got.assert_status(200);
    got.etag()
}

#[tokio::test]
async fn the_sync_snapshot_holds_every_collection_with_portable_ids_and_etags() {
    let app = TestApp::new().await;
    let w = build(&app).await;
    // An outcome saved for Ada's schedule (persisted outcomes only).
    let (schedule_id, take_id) = (w.ada_schedule.id, w.take.0.id);
    let (household_id, ada_id) = (app.household_id, w.ada.id);
    let outcome_portable = pillbox::db::new_portable_id();
    let portable = outcome_portable.clone();
    app.db
        .write(move |conn| {
            let now = pillbox::domain::Timestamp::now();
            conn.execute(
                "INSERT INTO dose_occurrences
                   (portable_id, household_id, person_id, source_type, source_id,
                    window_starts_on, window_ends_on, position, outcome, medication_take_id,
                    created_at, updated_at)
                 VALUES (?1, ?2, ?3, 'schedule', ?4, '2026-03-02', '2026-03-02', 1, 'taken',
                         ?5, ?6, ?6)",
                rusqlite::params![portable, household_id, ada_id, schedule_id, take_id, now],
            )?;
            Ok(())
        })
        .await
        .unwrap();

    let got = app.get(&app.hh("/sync/snapshot"), &app.owner).await;
    got.assert_status(200);
    assert_eq!(got.header("cache-control"), Some("no-store"));
    let s = got.data();
    assert_eq!(s["format"], "service.portable.v2");
    assert!(s["exported_at"].as_str().is_some());
    assert!(!s["source_instance_id"].as_str().unwrap().is_empty());
    let keys: Vec<&str> = s["records"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for key in [
        "people",
        "locations",
        "medications",
        "dosage_options",
        "schedules",
        "person_medications",
        "medication_takes",
        "notification_preferences",
        "health_events",
        "medication_pause_periods",
        "dose_occurrences",
    ] {
        assert!(keys.contains(&key), "records lack {key}");
    }
    assert_eq!(keys.len(), 11);
    assert_no_numeric_ids(s, "data");

    // Scope: the owner sees everyone.
    let scope: Vec<&str> = s["scope"]["person_portable_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(scope.contains(&w.ada.portable.as_str()));
    assert!(scope.contains(&w.bob.portable.as_str()));

    // ETags equal the single-resource reads' ETag headers.
    let ada = find(s, "people", &w.ada.portable);
    assert_eq!(
        ada["etag"],
        etag_of(&app, &format!("/people/{}", w.ada.id)).await
    );
    assert_eq!(ada["location_portable_ids"], json!([w.location.portable]));
    let location = find(s, "locations", &w.location.portable);
    assert_eq!(
        location["etag"],
        etag_of(&app, &format!("/locations/{}", w.location.id)).await
    );
    assert_eq!(location["description"], "Top shelf");
    let med = find(s, "medications", &w.med.portable);
    assert_eq!(
        med["etag"],
        etag_of(&app, &format!("/medications/{}", w.med.id)).await
    );
    assert!(med["current_supply"].is_string());
    let option = find(s, "dosage_options", &w.option.portable);
    assert_eq!(
        option["etag"],
        etag_of(&app, &format!("/dosage_options/{}", w.option.id)).await
    );
    assert_eq!(option["medication_portable_id"], w.med.portable.as_str());
    assert_eq!(option["amount"], "2.5");
    let schedule = find(s, "schedules", &w.ada_schedule.portable);
    assert_eq!(
        schedule["etag"],
        etag_of(&app, &format!("/schedules/{}", w.ada_schedule.id)).await
    );
    assert_eq!(schedule["person_portable_id"], w.ada.portable.as_str());
    assert_eq!(schedule["medication_portable_id"], w.med.portable.as_str());
    assert_eq!(schedule["active"], false, "paused");
    assert_eq!(schedule["schedule_config"]["times"][0], "08:00");
    let assignment = find(s, "person_medications", &w.assignment.portable);
    assert_eq!(
        assignment["etag"],
        etag_of(&app, &format!("/person_medications/{}", w.assignment.id)).await
    );
    let take = find(s, "medication_takes", &w.take.0.portable);
    assert_eq!(take["etag"], w.take.1.as_str());
    assert_eq!(take["source_type"], "schedule");
    assert_eq!(take["source_portable_id"], w.ada_schedule.portable.as_str());
    assert_eq!(
        take["taken_from_medication_portable_id"],
        w.med.portable.as_str()
    );
    let event = find(s, "health_events", &w.event.portable);
    assert_eq!(
        event["etag"],
        etag_of(&app, &format!("/health_events/{}", w.event.id)).await
    );
    assert_eq!(event["medication_portable_ids"], json!([w.med.portable]));
    let preference = find(s, "notification_preferences", &w.preference.0);
    assert_eq!(preference["etag"], w.preference.1.as_str());
    assert_eq!(preference["enabled"], true);
    let owner = s["records"]["people"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "Olive Owner")
        .unwrap();
    assert_eq!(
        owner["notification_preference_portable_id"],
        w.preference.0.as_str()
    );
    let pause = find(s, "medication_pause_periods", &w.pause.0.portable);
    assert_eq!(pause["etag"], w.pause.1.as_str());
    assert_eq!(pause["source_type"], "schedule");
    assert_eq!(
        pause["source_portable_id"],
        w.ada_schedule.portable.as_str()
    );
    assert_eq!(pause["reason"], "side_effects");
    assert_eq!(pause["ended_at"], Value::Null);
    assert_eq!(
        pause["recorded_by_person_portable_id"],
        owner["portable_id"]
    );
    let outcome = find(s, "dose_occurrences", &outcome_portable);
    assert_eq!(
        outcome["source_portable_id"],
        w.ada_schedule.portable.as_str()
    );
    assert_eq!(
        outcome["medication_take_portable_id"],
        w.take.0.portable.as_str()
    );
    assert_eq!(outcome["outcome"], "taken");
    assert_eq!(outcome["etag"], format!("\"{outcome_portable}.1\""));

    // A retired schedule stays (with retired_at); a deleted location goes.
    let etag = etag_of(&app, &format!("/schedules/{}", w.bob_schedule.id)).await;
    app.delete(
        &app.hh(&format!("/schedules/{}", w.bob_schedule.id)),
        &app.owner,
        Some(&etag),
    )
    .await
    .assert_status(204);
    let etag = etag_of(&app, &format!("/locations/{}", w.location.id)).await;
    let deleted = app
        .delete(
            &app.hh(&format!("/locations/{}", w.location.id)),
            &app.owner,
            Some(&etag),
        )
        .await;
    let got = app.get(&app.hh("/sync/snapshot"), &app.owner).await;
    got.assert_status(200);
    let s = got.data();
    assert!(
        find(s, "schedules", &w.bob_schedule.portable)["retired_at"].is_string(),
        "retired schedules stay so history resolves"
    );
    deleted.assert_status(204);
    assert!(!portables(s, "locations").contains(&w.location.portable));
    assert_eq!(
        find(s, "people", &w.ada.portable)["location_portable_ids"],
        json!([])
    );
}

#[tokio::test]
async fn a_view_only_member_sees_only_the_people_they_may_view() {
    let app = TestApp::new().await;
    let w = build(&app).await;
    let (membership, token) = app
        .add_member("viewer@example.org", Role::Member, None)
        .await;
    grant(&app, membership, w.ada.id, "view").await;

    let got = app.get(&app.hh("/sync/snapshot"), &token).await;
    got.assert_status(200);
    let s = got.data();
    assert_no_numeric_ids(s, "data");
    assert_eq!(s["scope"]["person_portable_ids"], json!([w.ada.portable]));
    assert_eq!(portables(s, "people"), vec![w.ada.portable.clone()]);
    let schedules = portables(s, "schedules");
    assert!(schedules.contains(&w.ada_schedule.portable));
    assert!(!schedules.contains(&w.bob_schedule.portable));
    let takes = portables(s, "medication_takes");
    assert!(takes.contains(&w.take.0.portable));
    assert!(!takes.contains(&w.bob_take.portable));
    let events = portables(s, "health_events");
    assert!(events.contains(&w.event.portable));
    assert!(!events.contains(&w.bob_event.portable));
    // The owner's preference belongs to a person this member cannot view.
    assert!(portables(s, "notification_preferences").is_empty());
    assert_eq!(
        portables(s, "medication_pause_periods"),
        vec![w.pause.0.portable.clone()]
    );
    // Household-wide collections go to every member.
    assert_eq!(portables(s, "medications"), vec![w.med.portable.clone()]);
    assert_eq!(
        portables(s, "dosage_options"),
        vec![w.option.portable.clone()]
    );
    assert_eq!(portables(s, "locations"), vec![w.location.portable.clone()]);

    // The mobile snapshot is scoped the same way.
    let mobile = app.get(&app.hh("/mobile_snapshot"), &token).await;
    mobile.assert_status(200);
    assert_eq!(portables(mobile.data(), "people"), vec![w.ada.portable]);
}

#[tokio::test]
async fn the_mobile_snapshot_is_plaintext_v1() {
    let app = TestApp::new().await;
    let w = build(&app).await;
    let got = app.get(&app.hh("/mobile_snapshot"), &app.owner).await;
    got.assert_status(200);
    assert_eq!(got.header("cache-control"), Some("no-store"));
    let s = got.data();
    assert_eq!(s["format"], "service.portable.v1");
    assert!(s.get("cursor").is_none());
    assert!(s["records"].get("medication_pause_periods").is_none());
    assert!(s["records"].get("dose_occurrences").is_none());
    assert_eq!(s["records"].as_object().unwrap().len(), 9);
    assert!(portables(s, "schedules").contains(&w.ada_schedule.portable));
    assert_no_numeric_ids(s, "data");
}

#[tokio::test]
async fn the_cursor_is_the_change_feed_position_at_the_snapshot() {
    let app = TestApp::new().await;
    let household_id = app.household_id;
    let max_seq = || async {
        app.db
            .read(move |conn| {
                Ok(conn.query_row(
                    "SELECT COALESCE(MAX(seq), 0) FROM change_feed WHERE household_id = ?1",
                    [household_id],
                    |r| r.get::<_, i64>(0),
                )?)
            })
            .await
            .unwrap()
    };
    let decode = |cursor: &Value| {
        String::from_utf8(
            URL_SAFE_NO_PAD
                .decode(cursor.as_str().unwrap())
                .expect("base64url without padding"),
        )
        .unwrap()
    };

    let got = app.get(&app.hh("/sync/snapshot"), &app.owner).await;
    got.assert_status(200);
    let before = max_seq().await;
    assert_eq!(
        decode(&got.data()["cursor"]),
        format!("v1:{household_id}:{before}")
    );

    build(&app).await;
    let now = max_seq().await;
    assert!(now > before);
    let got = app.get(&app.hh("/sync/snapshot"), &app.owner).await;
    assert_eq!(
        decode(&got.data()["cursor"]),
        format!("v1:{household_id}:{now}")
    );
    assert_eq!(
        got.data()["cursor"],
        pillbox::sync::snapshot::encode_cursor(household_id, now)
    );
    // The change feed accepts it and has nothing after it.
    let changes = app
        .get(
            &app.hh(&format!(
                "/sync/changes?cursor={}",
                got.data()["cursor"].as_str().unwrap()
            )),
            &app.owner,
        )
        .await;
    changes.assert_status(200);
    assert_eq!(changes.data()["changes"], json!([]));
}

#[tokio::test]
async fn the_capability_document_announces_the_mobile_snapshot() {
    let app = TestApp::new().await;
    let got = app.get("/api/v1/capabilities", &app.owner).await;
    got.assert_status(200);
    assert_eq!(got.data()["sync"]["mobile_snapshot"], true);
}
