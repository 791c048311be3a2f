//! The whole offline round trip a phone makes: snapshot, queue writes while
//! offline using only what the snapshot said, send them as one keyed batch,
//! then read exactly those writes back from the snapshot's cursor.

use std::collections::BTreeSet;

use axum::http::Method;
use pillbox::auth::Role;
use serde_json::{Value, json};

use crate::support::records::new_person;
use crate::support::records::paracetamol;
use crate::support::{TestApp, TestResponse};

async fn snapshot(app: &TestApp, token: &str) -> Value {
    let got = app.get(&app.hh("/sync/snapshot"), token).await;
    got.assert_status(200);
    assert_eq!(got.header("cache-control"), Some("no-store"));
    got.data().clone()
}

/// The record of `collection` with `field` equal to `value`.
fn find<'a>(snapshot: &'a Value, collection: &str, field: &str, value: &str) -> &'a Value {
    snapshot["records"][collection]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[field] == value)
        .unwrap_or_else(|| panic!("no {collection} with {field} {value}"))
}

/// Every entry after `cursor`: (changes, tombstones, the final cursor).
async fn changes_after(
    app: &TestApp,
    token: &str,
    cursor: &str,
) -> (Vec<Value>, Vec<Value>, String) {
    let mut changes = Vec::new();
    let mut tombstones = Vec::new();
    let mut cursor = cursor.to_string();
    loop {
        let page = app
            .get(
                &app.hh(&format!("/sync/changes?cursor={cursor}&limit=1000")),
                token,
            )
            .await;
        page.assert_status(200);
        let data = page.data();
        changes.extend(data["changes"].as_array().unwrap().iter().cloned());
        tombstones.extend(data["tombstones"].as_array().unwrap().iter().cloned());
        cursor = data["next_cursor"].as_str().unwrap().to_string();
        if data["has_more"] == false {
            return (changes, tombstones, cursor);
        }
    }
}

async fn send_batch(app: &TestApp, token: &str, operations: &Value, key: &str) -> TestResponse {
    let body = json!({"batch": {"operations": operations}});
    app.post_keyed(&app.hh("/sync/batches"), token, &body, key)
        .await
}

async fn row_count(app: &TestApp, table: &'static str) -> i64 {
    app.db
        .read(move |conn| {
            Ok(conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))?)
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn snapshot_offline_queue_batch_and_changes_from_the_old_cursor() {
    let app = TestApp::new().await;
    // Online set-up: two people, a medication, a schedule for Ada.
    let ada = new_person(&app, "Ada").await;
    let bob = new_person(&app, "Bob").await;
    let medication = app
        .post(&app.hh("/medications"), &app.owner, paracetamol())
        .await;
    medication.assert_status(201);
    let medication_id = medication.id();
    let schedule = app
        .post(
            &app.hh("/schedules"),
            &app.owner,
            json!({"schedule": {"person_id": ada.id, "medication_id": medication_id,
                "start_date": "2026-01-01", "schedule_type": "daily",
                "schedule_config": {"times": ["08:00"]}}}),
        )
        .await;
    schedule.assert_status(201);

    // A view-only carer of Bob, whose feed must not show Ada's writes.
    let (carer_membership, carer) = app
        .add_member("carer@example.org", Role::Member, None)
        .await;
    crate::support::records::grant(&app, carer_membership, bob.id, "view").await;

    // The phone takes a snapshot, then goes offline.
    let snap = snapshot(&app, &app.owner).await;
    assert_eq!(snap["format"], "service.portable.v2");
    let cursor = snap["cursor"].as_str().unwrap().to_string();
    let carer_cursor = snapshot(&app, &carer).await["cursor"]
        .as_str()
        .unwrap()
        .to_string();
    let ada_portable = ada.portable.as_str();
    let bob_portable = bob.portable.as_str();
    let med_record = find(&snap, "medications", "name", "Paracetamol 500mg tablets");
    let med_portable = med_record["portable_id"].as_str().unwrap().to_string();
    assert_eq!(med_record["current_supply"], "10.5");
    let schedule_record = find(&snap, "schedules", "person_portable_id", ada_portable);
    let ada_record = find(&snap, "people", "portable_id", ada_portable);
    assert!(snap["records"]["people"].to_string().contains(bob_portable));

    // The offline queue: only portable ids and ETags from the snapshot.
    let take_uuid = pillbox::db::new_portable_id();
    let submission = pillbox::db::new_portable_id();
    let queue = json!([
        {"action": "create", "resource_type": "medication_take",
         "attributes": {"source_type": "schedule",
                        "source_id": schedule_record["portable_id"],
                        "taken_at": "2026-11-25T08:05:00Z", "client_uuid": take_uuid}},
        {"action": "remove_stock", "resource_type": "medication", "id": med_portable,
         "attributes": {"quantity": "0.5", "reason": "damaged", "submission_id": submission}},
        {"action": "create", "resource_type": "health_event",
         "attributes": {"person_id": ada_portable, "event_kind": "illness",
                        "title": "Cold", "started_on": "2026-11-20"}},
        {"action": "update", "resource_type": "schedule",
         "id": schedule_record["portable_id"], "if_match": schedule_record["etag"],
         "attributes": {"notes": "with breakfast"}},
        {"action": "update", "resource_type": "person", "id": ada_portable,
         "if_match": ada_record["etag"], "attributes": {"name": "Ada L."}},
        {"action": "create", "resource_type": "location", "attributes": {"name": "Bathroom"}},
    ]);

    // A first attempt with a stale ETag in the middle rolls everything back.
    let stale = json!([
        queue[1].clone(),
        {"action": "update", "resource_type": "medication", "id": med_portable,
         "if_match": "\"stale.0\"", "attributes": {"friendly_name": "Para"}},
        queue[5].clone(),
    ]);
    let audits = row_count(&app, "audit_events").await;
    let refused = send_batch(&app, &app.owner, &stale, "stale-attempt").await;
    refused.assert_error(409, "sync_conflict");
    assert_eq!(row_count(&app, "audit_events").await, audits);
    assert_eq!(row_count(&app, "stock_removals").await, 0);
    let (nothing, no_tombstones, _) = changes_after(&app, &app.owner, &cursor).await;
    assert!(nothing.is_empty() && no_tombstones.is_empty());

    // The real queue, keyed.
    let applied = send_batch(&app, &app.owner, &queue, "queue-1").await;
    applied.assert_status(201);
    let results = applied.data()["results"].as_array().unwrap().clone();
    assert_eq!(results.len(), 6);
    // Take 1 tablet and remove 0.5: 10.5 → 9.
    let stock = app
        .get(
            &app.hh(&format!("/medications/{medication_id}")),
            &app.owner,
        )
        .await;
    assert_eq!(stock.data()["current_supply"], "9");

    // The connection dropped before the answer arrived: the phone resends.
    let replayed = send_batch(&app, &app.owner, &queue, "queue-1").await;
    replayed.assert_status(201);
    assert_eq!(replayed.body, applied.body);
    let stock = app
        .get(
            &app.hh(&format!("/medications/{medication_id}")),
            &app.owner,
        )
        .await;
    assert_eq!(stock.data()["current_supply"], "9");
    assert_eq!(row_count(&app, "stock_removals").await, 1);
    assert_eq!(row_count(&app, "medication_takes").await, 1);
    // The key with a changed queue is refused.
    let mut changed = queue.clone();
    changed[5]["attributes"]["name"] = json!("Landing");
    send_batch(&app, &app.owner, &changed, "queue-1")
        .await
        .assert_error(409, "idempotency_key_reused");

    // From the old cursor: exactly the batch's writes, in order, once each
    // (the stock the take and the removal used shows as medication updates).
    let (changes, tombstones, end) = changes_after(&app, &app.owner, &cursor).await;
    assert!(tombstones.is_empty());
    let written: BTreeSet<(String, String)> = results
        .iter()
        .filter(|r| r["record_type"] != "StockRemoval")
        .map(|r| {
            (
                r["record_type"].as_str().unwrap().to_string(),
                r["record_portable_id"].as_str().unwrap().to_string(),
            )
        })
        .chain([("Medication".to_string(), med_portable.clone())])
        .collect();
    let seen: BTreeSet<(String, String)> = changes
        .iter()
        .map(|c| {
            (
                c["record_type"].as_str().unwrap().to_string(),
                c["record_portable_id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(seen, written);
    let ids: Vec<i64> = changes.iter().map(|c| c["id"].as_i64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let creates: Vec<&str> = changes
        .iter()
        .filter(|c| c["action"] == "create")
        .map(|c| c["record_type"].as_str().unwrap())
        .collect();
    assert_eq!(creates, ["MedicationTake", "HealthEvent", "Location"]);
    // No clinical text in metadata.
    for change in &changes {
        assert!(!change["metadata"].to_string().contains("Cold"));
        assert!(!change["metadata"].to_string().contains("breakfast"));
    }
    // Reading on from the end finds nothing more.
    let (more, _, _) = changes_after(&app, &app.owner, &end).await;
    assert!(more.is_empty());

    // The ETags the batch returned are the ones a fresh snapshot carries.
    let fresh = snapshot(&app, &app.owner).await;
    for result in results
        .iter()
        .filter(|r| r["record_type"] != "StockRemoval")
    {
        let collection = match result["record_type"].as_str().unwrap() {
            "MedicationTake" => "medication_takes",
            "HealthEvent" => "health_events",
            "Schedule" => "schedules",
            "Person" => "people",
            "Location" => "locations",
            other => panic!("unexpected {other}"),
        };
        let record = find(
            &fresh,
            collection,
            "portable_id",
            result["record_portable_id"].as_str().unwrap(),
        );
        assert_eq!(record["etag"], result["etag"], "{collection}");
    }
    assert_eq!(
        find(&fresh, "medications", "portable_id", &med_portable)["current_supply"],
        "9"
    );

    // Bob's view-only carer sees none of Ada's writes, only the
    // household-wide ones (the medication's stock and the new location).
    let (carer_changes, carer_tombstones, _) = changes_after(&app, &carer, &carer_cursor).await;
    assert!(carer_tombstones.is_empty());
    let carer_types: BTreeSet<&str> = carer_changes
        .iter()
        .map(|c| c["record_type"].as_str().unwrap())
        .collect();
    assert_eq!(carer_types, BTreeSet::from(["Location", "Medication"]));
    assert!(
        !serde_json::to_string(&carer_changes)
            .unwrap()
            .contains(ada_portable)
    );
}

#[tokio::test]
async fn a_snapshot_larger_than_one_chunk_arrives_whole() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let mut body = paracetamol();
    body["medication"]["current_supply"] = json!("100000");
    let medication = app.post(&app.hh("/medications"), &app.owner, body).await;
    medication.assert_status(201);
    let assignment = app
        .post(
            &app.hh("/person_medications"),
            &app.owner,
            json!({"person_medication": {"person_id": ada.id, "medication_id": medication.id(),
                "administration_kind": "as_needed"}}),
        )
        .await;
    assignment.assert_status(201);
    let source = assignment.data()["portable_id"].clone();
    // 1,000 takes: a few hundred bytes each, past two 128 KiB chunks.
    for batch in 0..5 {
        let operations: Vec<Value> = (0..200)
            .map(|i| {
                let minute = batch * 200 + i;
                json!({"action": "create", "resource_type": "medication_take",
                       "attributes": {"source_type": "person_medication", "source_id": source,
                                      "taken_at": format!("2026-{:02}-{:02}T{:02}:{:02}:00Z",
                                          1 + minute / 600 % 12, 1 + minute / 24 % 28,
                                          minute % 24, minute % 60)}})
            })
            .collect();
        let sent = app
            .send(
                Method::POST,
                &app.hh("/sync/batches"),
                Some(&app.owner),
                Some(json!({"batch": {"operations": operations}})),
                &[],
            )
            .await;
        sent.assert_status(201);
    }
    let got = app.get(&app.hh("/sync/snapshot"), &app.owner).await;
    got.assert_status(200);
    assert_eq!(got.header("content-type"), Some("application/json"));
    let takes = got.data()["records"]["medication_takes"]
        .as_array()
        .unwrap();
    assert_eq!(takes.len(), 1000);
    assert!(got.body.to_string().len() > 2 * 128 * 1024);
    let mobile = app.get(&app.hh("/mobile_snapshot"), &app.owner).await;
    mobile.assert_status(200);
    assert_eq!(
        mobile.data()["records"]["medication_takes"]
            .as_array()
            .unwrap()
            .len(),
        1000
    );
}
