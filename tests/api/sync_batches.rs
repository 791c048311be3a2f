//! Sync batches: queued offline writes applied in order in one transaction
//! through the REST rules, all or nothing, replayable by Idempotency-Key.

use axum::http::Method;
use serde_json::{Value, json};

use crate::support::records::paracetamol;
use crate::support::{TestApp, TestResponse};

fn batch(operations: Value) -> Value {
    json!({"batch": {"operations": operations}})
}

async fn send(app: &TestApp, body: Value, key: Option<&str>) -> TestResponse {
    let headers: Vec<(&str, &str)> = key.map(|k| ("Idempotency-Key", k)).into_iter().collect();
    app.send(
        Method::POST,
        &app.hh("/sync/batches"),
        Some(&app.owner),
        Some(body),
        &headers,
    )
    .await
}

/// Creates paracetamol (supply "10.5"): (id, etag).
async fn medication(app: &TestApp) -> (i64, String) {
    let created = app
        .post(&app.hh("/medications"), &app.owner, paracetamol())
        .await;
    created.assert_status(201);
    (created.id(), created.etag())
}

async fn supply(app: &TestApp, id: i64) -> String {
    let got = app
        .get(&app.hh(&format!("/medications/{id}")), &app.owner)
        .await;
    got.assert_status(200);
    got.data()["current_supply"].as_str().unwrap().to_string()
}

/// Row counts of the tables a write touches.
async fn counts(app: &TestApp) -> (i64, i64, i64, i64) {
    app.db
        .read(|conn| {
            let count = |table: &str| -> rusqlite::Result<i64> {
                conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            };
            Ok((
                count("change_feed")?,
                count("audit_events")?,
                count("locations")?,
                count("stock_removals")?,
            ))
        })
        .await
        .unwrap()
}

async fn owner_person(app: &TestApp) -> (i64, String) {
    let people = app.get(&app.hh("/people"), &app.owner).await;
    people.assert_status(200);
    let person = &people.body["data"][0];
    let id = person["id"].as_i64().unwrap();
    let got = app.get(&app.hh(&format!("/people/{id}")), &app.owner).await;
    got.assert_status(200);
    (id, got.etag())
}

fn removal(medication: i64, quantity: &str) -> Value {
    json!({"action": "remove_stock", "resource_type": "medication",
           "id": medication.to_string(),
           "attributes": {"quantity": quantity, "reason": "lost",
                          "submission_id": pillbox::db::new_portable_id()}})
}

#[tokio::test]
async fn a_mixed_batch_applies_in_order_and_reports_results() {
    let app = TestApp::new().await;
    let (med, _) = medication(&app).await;
    let (person, person_etag) = owner_person(&app).await;
    let response = send(
        &app,
        batch(json!([
            {"action": "create", "resource_type": "location", "attributes": {"name": "Kitchen"}},
            {"action": "create", "resource_type": "medication",
             "attributes": paracetamol()["medication"].clone()},
            removal(med, "2"),
            {"action": "update", "resource_type": "person", "id": person.to_string(),
             "if_match": person_etag, "attributes": {"name": "Olive Renamed"}},
        ])),
        None,
    )
    .await;
    response.assert_status(201);
    let data = response.data();
    assert_eq!(data["applied"], json!(true));
    let results = data["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    let types: Vec<&str> = results
        .iter()
        .map(|r| r["record_type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["Location", "Medication", "StockRemoval", "Person"]);
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result["index"], json!(i));
        assert!(result["record_id"].is_string());
        assert!(result["record_portable_id"].is_string());
    }
    assert!(results[0]["etag"].is_string());
    assert!(results[3]["etag"].is_string());
    assert_eq!(supply(&app, med).await, "8.5");
    let got = app
        .get(&app.hh(&format!("/people/{person}")), &app.owner)
        .await;
    assert_eq!(got.data()["name"], json!("Olive Renamed"));
    assert_eq!(got.etag(), results[3]["etag"].as_str().unwrap());
    let location = results[0]["record_id"].as_str().unwrap();
    app.get(&app.hh(&format!("/locations/{location}")), &app.owner)
        .await
        .assert_status(200);
}

#[tokio::test]
async fn a_stale_etag_mid_batch_rolls_back_everything() {
    let app = TestApp::new().await;
    let (med, etag) = medication(&app).await;
    // The ETag goes stale.
    app.patch(
        &app.hh(&format!("/medications/{med}")),
        &app.owner,
        json!({"medication": {"friendly_name": "Para"}}),
        Some(&etag),
    )
    .await
    .assert_status(200);
    let before = counts(&app).await;
    let response = send(
        &app,
        batch(json!([
            {"action": "create", "resource_type": "location", "attributes": {"name": "Secret shelf"}},
            removal(med, "3"),
            {"action": "update", "resource_type": "medication", "id": med.to_string(),
             "if_match": etag, "attributes": {"friendly_name": "confidential name"}},
        ])),
        None,
    )
    .await;
    response.assert_error(409, "sync_conflict");
    let message = response.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("operation 2"), "{message}");
    assert!(!message.contains("confidential"));
    assert_eq!(supply(&app, med).await, "10.5");
    assert_eq!(counts(&app).await, before);
}

#[tokio::test]
async fn a_missing_if_match_is_428() {
    let app = TestApp::new().await;
    let (med, _) = medication(&app).await;
    let before = counts(&app).await;
    let response = send(
        &app,
        batch(json!([
            {"action": "create", "resource_type": "location", "attributes": {"name": "Hall"}},
            {"action": "delete", "resource_type": "medication", "id": med.to_string()},
        ])),
        None,
    )
    .await;
    response.assert_error(428, "precondition_required");
    assert!(
        response.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("operation 1")
    );
    assert_eq!(counts(&app).await, before);
}

#[tokio::test]
async fn an_unsupported_pair_is_refused_before_any_write() {
    let app = TestApp::new().await;
    let before = counts(&app).await;
    for op in [
        json!({"action": "delete", "resource_type": "medication_take", "id": "1", "if_match": "x",
               "attributes": {"notes": "private words"}}),
        json!({"action": "delete", "resource_type": "medication_dose_occurrence",
               "id": "1", "if_match": "x"}),
        json!({"action": "delete", "resource_type": "person", "id": "1", "if_match": "x"}),
        json!({"action": "reorder", "resource_type": "person_medication", "id": "1", "if_match": "x"}),
    ] {
        let response = send(
            &app,
            batch(json!([
                {"action": "create", "resource_type": "location", "attributes": {"name": "Hall"}},
                op,
            ])),
            None,
        )
        .await;
        response.assert_error(422, "sync_operation_unsupported");
        let message = response.body["error"]["message"].as_str().unwrap();
        assert!(message.contains("operation 1"), "{message}");
        assert!(!message.contains("private"));
    }
    assert_eq!(counts(&app).await, before);
}

#[tokio::test]
async fn a_replay_returns_the_saved_response_and_deducts_once() {
    let app = TestApp::new().await;
    let (med, _) = medication(&app).await;
    let body = batch(json!([removal(med, "1.5")]));
    let first = send(&app, body.clone(), Some("batch-key-1")).await;
    first.assert_status(201);
    let before = counts(&app).await;
    let second = send(&app, body, Some("batch-key-1")).await;
    second.assert_status(201);
    assert_eq!(first.body, second.body);
    assert_eq!(supply(&app, med).await, "9");
    assert_eq!(counts(&app).await, before);

    // The same key with another body.
    let other = send(&app, batch(json!([removal(med, "1")])), Some("batch-key-1")).await;
    other.assert_error(409, "idempotency_key_reused");
    assert_eq!(supply(&app, med).await, "9");
}

#[tokio::test]
async fn operation_count_and_shape_are_checked() {
    let app = TestApp::new().await;
    let op = json!({"action": "create", "resource_type": "location", "attributes": {"name": "A"}});
    let many: Vec<Value> = (0..201).map(|_| op.clone()).collect();
    send(&app, batch(json!(many)), None)
        .await
        .assert_error(422, "validation_failed");
    send(&app, batch(json!([])), None)
        .await
        .assert_error(422, "validation_failed");
    send(
        &app,
        json!({"batch": {"operations": [op.clone()], "extra": 1}}),
        None,
    )
    .await
    .assert_error(422, "validation_failed");
    send(
        &app,
        batch(json!([{"action": "create", "resource_type": "location",
                      "attributes": {"name": "A", "colour": "red"}}])),
        None,
    )
    .await
    .assert_error(422, "validation_failed");
    let before = counts(&app).await;
    assert_eq!(before.2, 0);
}

#[tokio::test]
async fn capabilities_list_the_supported_pairs() {
    let app = TestApp::new().await;
    let caps = app.get("/api/v1/capabilities", &app.owner).await;
    caps.assert_status(200);
    let sync = &caps.data()["sync"];
    assert_eq!(sync["batch_mutations"], json!(true));
    assert_eq!(sync["idempotency_keys"], json!(true));
    assert_eq!(
        sync["operations"]["location"],
        json!(["create", "update", "delete"])
    );
    assert!(
        sync["operations"]["medication"]
            .as_array()
            .unwrap()
            .contains(&json!("remove_stock"))
    );
    assert_eq!(sync["operations"]["medication_review"], json!(["update"]));
}

#[tokio::test]
async fn a_revoked_grant_never_gets_the_saved_result() {
    let app = TestApp::new().await;
    let ada = app
        .post(
            &app.hh("/people"),
            &app.owner,
            json!({"person": {"name": "Ada", "date_of_birth": "1950-02-03"}}),
        )
        .await;
    ada.assert_status(201);
    let ada_id = ada.id();
    let (member, token) = app
        .add_member("carer@example.org", pillbox::auth::Role::Member, None)
        .await;
    crate::support::records::grant(&app, member, ada_id, "manage").await;
    let body = batch(json!([
        {"action": "create", "resource_type": "health_event",
         "attributes": {"person_id": ada_id.to_string(), "event_kind": "illness",
                        "title": "Heavy cold", "started_on": "2026-01-10"}},
    ]));
    let key = [("Idempotency-Key", "carer-batch-1")];
    let path = app.hh("/sync/batches");
    let first = app
        .send(Method::POST, &path, Some(&token), Some(body.clone()), &key)
        .await;
    first.assert_status(201);
    assert_eq!(
        first.data()["results"][0]["record_type"],
        json!("HealthEvent")
    );

    app.db
        .write(move |conn| {
            conn.execute(
                "DELETE FROM person_access_grants WHERE membership_id = ?1",
                [member],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    app.send(Method::POST, &path, Some(&token), Some(body.clone()), &key)
        .await
        .assert_error(404, "not_found");

    // View access is less than recording a health event needed: 403.
    crate::support::records::grant(&app, member, ada_id, "view").await;
    app.send(Method::POST, &path, Some(&token), Some(body.clone()), &key)
        .await
        .assert_error(403, "forbidden");

    // Restored record access gets the saved response again, without a
    // second write.
    crate::support::records::grant(&app, member, ada_id, "record").await;
    let replay = app
        .send(Method::POST, &path, Some(&token), Some(body), &key)
        .await;
    replay.assert_status(201);
    assert_eq!(replay.body, first.body);
    let events: i64 = app
        .db
        .read(|conn| Ok(conn.query_row("SELECT COUNT(*) FROM health_events", [], |r| r.get(0))?))
        .await
        .unwrap();
    assert_eq!(events, 1);
}

#[tokio::test]
async fn schedules_and_pause_periods_go_through_their_rules() {
    let app = TestApp::new().await;
    let person = app
        .post(
            &app.hh("/people"),
            &app.owner,
            json!({"person": {"name": "Ada", "date_of_birth": "1950-02-03"}}),
        )
        .await;
    person.assert_status(201);
    let (med, _) = medication(&app).await;
    let created = send(
        &app,
        batch(json!([
            {"action": "create", "resource_type": "schedule", "attributes": {
                "person_id": person.data()["portable_id"], "medication_id": med.to_string(),
                "schedule_type": "daily", "schedule_config": {"times": ["08:00"]},
                "start_date": "2026-03-01"}},
        ])),
        None,
    )
    .await;
    created.assert_status(201);
    let schedule = created.data()["results"][0].clone();
    assert_eq!(schedule["record_type"], json!("Schedule"));
    let schedule_portable = schedule["record_portable_id"].as_str().unwrap();

    let paused = send(
        &app,
        batch(json!([
            {"action": "create", "resource_type": "medication_pause_period", "attributes": {
                "source_type": "schedule", "source_id": schedule_portable,
                "reason": "side_effects"}},
        ])),
        Some("pause-1"),
    )
    .await;
    paused.assert_status(201);
    let period = paused.data()["results"][0].clone();
    assert_eq!(period["record_type"], json!("MedicationPausePeriod"));
    assert_eq!(period["replayed"], json!(false));

    // A close without if_match is 428; with it, the period closes.
    send(
        &app,
        batch(json!([
            {"action": "close", "resource_type": "medication_pause_period",
             "id": period["record_portable_id"], "attributes": {}},
        ])),
        None,
    )
    .await
    .assert_error(428, "precondition_required");
    let closed = send(
        &app,
        batch(json!([
            {"action": "close", "resource_type": "medication_pause_period",
             "id": period["record_portable_id"], "if_match": period["etag"], "attributes": {}},
        ])),
        None,
    )
    .await;
    closed.assert_status(201);
    assert_ne!(closed.data()["results"][0]["etag"], period["etag"]);

    let current = app
        .get(
            &app.hh(&format!("/schedules/{schedule_portable}")),
            &app.owner,
        )
        .await;
    current.assert_status(200);
    let deleted = send(
        &app,
        batch(json!([
            {"action": "delete", "resource_type": "schedule", "id": schedule_portable,
             "if_match": current.etag()},
        ])),
        None,
    )
    .await;
    deleted.assert_status(201);
    assert!(deleted.data()["results"][0].get("etag").is_none());
    assert_eq!(
        deleted.data()["results"][0]["record_portable_id"],
        json!(schedule_portable)
    );
}

#[tokio::test]
async fn a_withdrawn_inventory_permission_never_gets_a_saved_stock_removal() {
    let app = TestApp::new().await;
    let (medication, _) = medication(&app).await;
    let (member, token) = app
        .add_member("stock@example.org", pillbox::auth::Role::Member, None)
        .await;
    let set_inventory = |allowed: bool| {
        app.db.write(move |conn| {
            conn.execute(
                "UPDATE memberships SET inventory_management = ?1 WHERE id = ?2",
                rusqlite::params![allowed, member],
            )?;
            Ok(())
        })
    };
    set_inventory(true).await.unwrap();
    let body = batch(json!([removal(medication, "2")]));
    let key = [("Idempotency-Key", "stock-batch-1")];
    let path = app.hh("/sync/batches");
    let first = app
        .send(Method::POST, &path, Some(&token), Some(body.clone()), &key)
        .await;
    first.assert_status(201);
    assert_eq!(supply(&app, medication).await, "8.5");

    set_inventory(false).await.unwrap();
    let refused = app
        .send(Method::POST, &path, Some(&token), Some(body.clone()), &key)
        .await;
    refused.assert_error(403, "forbidden");
    assert!(!refused.body.to_string().contains("results"));

    set_inventory(true).await.unwrap();
    let replay = app
        .send(Method::POST, &path, Some(&token), Some(body), &key)
        .await;
    replay.assert_status(201);
    assert_eq!(replay.body, first.body);
    assert_eq!(supply(&app, medication).await, "8.5");
    assert_eq!(counts(&app).await.3, 1);
}

#[tokio::test]
async fn a_replay_after_re_authenticating_gets_the_saved_response_and_keys_are_per_member() {
    let app = TestApp::new().await;
    let (med, _) = medication(&app).await;
    let body = batch(json!([removal(med, "1")]));
    let path = app.hh("/sync/batches");
    let first = app.post_keyed(&path, &app.owner, &body, "queue-7").await;
    first.assert_status(201);
    assert_eq!(supply(&app, med).await, "9.5");

    // The phone got a 401, signed in again (a new token for the same member)
    // and replays its saved batch with the original key.
    let owner_membership: i64 = app
        .db
        .read(|conn| {
            Ok(
                conn.query_row("SELECT id FROM memberships WHERE role = 'owner'", [], |r| {
                    r.get(0)
                })?,
            )
        })
        .await
        .unwrap();
    let new_token = app.token_for(app.household_id, owner_membership).await;
    assert_ne!(new_token, app.owner);
    let replayed = app.post_keyed(&path, &new_token, &body, "queue-7").await;
    replayed.assert_status(201);
    assert_eq!(replayed.body, first.body);
    assert_eq!(supply(&app, med).await, "9.5");
    assert_eq!(counts(&app).await.3, 1);

    // Another member's identical key is theirs alone: their batch runs.
    let (_, admin) = app
        .add_member(
            "admin@example.org",
            pillbox::auth::Role::Administrator,
            None,
        )
        .await;
    let own = batch(json!([removal(med, "2")]));
    let theirs = app.post_keyed(&path, &admin, &own, "queue-7").await;
    theirs.assert_status(201);
    assert_ne!(theirs.body, first.body);
    assert_eq!(supply(&app, med).await, "7.5");
}

/// The operation table is the one source of the pairs: the capability
/// document's `sync.operations`, the documented `SyncOperation` union and
/// the dispatch agree on every pair.
#[tokio::test]
async fn capabilities_schema_and_dispatch_carry_the_same_pairs() {
    let app = TestApp::new().await;
    let caps = app.get("/api/v1/capabilities", &app.owner).await;
    caps.assert_status(200);
    let operations = caps.data()["sync"]["operations"]
        .as_object()
        .unwrap()
        .clone();
    let schema = &app.document()["components"]["schemas"]["SyncOperation"];
    let mut documented: Vec<(String, Value)> = schema["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|alt| {
            (
                alt["properties"]["resource_type"]["const"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                alt["properties"]["action"]["enum"].clone(),
            )
        })
        .collect();
    let advertised: Vec<(String, Value)> = operations
        .iter()
        .map(|(r, actions)| (r.clone(), actions.clone()))
        .collect();
    documented.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(documented, advertised);
    for (resource_type, actions) in &advertised {
        for action in actions.as_array().unwrap() {
            // An empty operation fails its own shape or rule checks, never
            // the pair check.
            let refused = send(
                &app,
                batch(json!([{"action": action, "resource_type": resource_type}])),
                None,
            )
            .await;
            assert_ne!(
                refused.error_code(),
                "sync_operation_unsupported",
                "{resource_type} {action}"
            );
        }
    }
}

/// A replayed stock removal is checked by the removal rule's own authorize
/// function, as its REST replay is: once the medication is gone, neither
/// replay hands out the saved result.
#[tokio::test]
async fn a_replayed_stock_removal_is_checked_like_its_rest_replay() {
    let app = TestApp::new().await;
    let (med, _) = medication(&app).await;
    let body = batch(json!([removal(med, "1")]));
    let path = app.hh("/sync/batches");
    app.post_keyed(&path, &app.owner, &body, "removal-batch")
        .await
        .assert_status(201);
    let rest_path = app.hh(&format!("/medications/{med}/stock_removals"));
    let rest_body = json!({"stock_removal": {"quantity": "1", "reason": "lost",
        "submission_id": pillbox::db::new_portable_id()}});
    app.post_keyed(&rest_path, &app.owner, &rest_body, "removal-rest")
        .await
        .assert_status(201);

    let current = app
        .get(&app.hh(&format!("/medications/{med}")), &app.owner)
        .await;
    app.delete(
        &app.hh(&format!("/medications/{med}")),
        &app.owner,
        Some(&current.etag()),
    )
    .await
    .assert_status(204);

    app.post_keyed(&rest_path, &app.owner, &rest_body, "removal-rest")
        .await
        .assert_error(404, "not_found");
    app.post_keyed(&path, &app.owner, &body, "removal-batch")
        .await
        .assert_error(404, "not_found");
    assert_eq!(counts(&app).await.3, 2);
}

/// A replayed pause is checked by the pause rule's own authorize function,
/// as its REST replay is: a source retired since is not found.
#[tokio::test]
async fn a_replayed_pause_is_checked_like_its_rest_replay() {
    let app = TestApp::new().await;
    let (person, _) = owner_person(&app).await;
    let (med, _) = medication(&app).await;
    let created = send(
        &app,
        batch(json!([
            {"action": "create", "resource_type": "schedule", "attributes": {
                "person_id": person.to_string(), "medication_id": med.to_string(),
                "schedule_type": "daily", "schedule_config": {"times": ["08:00"]},
                "start_date": "2026-03-01"}},
        ])),
        None,
    )
    .await;
    created.assert_status(201);
    let schedule = created.data()["results"][0]["record_portable_id"]
        .as_str()
        .unwrap()
        .to_string();
    let body = batch(json!([
        {"action": "create", "resource_type": "medication_pause_period", "attributes": {
            "source_type": "schedule", "source_id": schedule, "reason": "side_effects"}},
    ]));
    let path = app.hh("/sync/batches");
    let first = app
        .post_keyed(&path, &app.owner, &body, "pause-batch")
        .await;
    first.assert_status(201);
    let replay = app
        .post_keyed(&path, &app.owner, &body, "pause-batch")
        .await;
    replay.assert_status(201);
    assert_eq!(replay.body, first.body);

    let current = app
        .get(&app.hh(&format!("/schedules/{schedule}")), &app.owner)
        .await;
    app.delete(
        &app.hh(&format!("/schedules/{schedule}")),
        &app.owner,
        Some(&current.etag()),
    )
    .await
    .assert_status(204);
    app.post_keyed(&path, &app.owner, &body, "pause-batch")
        .await
        .assert_error(404, "not_found");
}
