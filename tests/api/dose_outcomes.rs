//! Persisted dose outcomes through sync batches: not_taken for an expected
//! dose of a routine source, the same decision again, reopening.

use axum::http::Method;
use pillbox::auth::Role;
use pillbox::care::occurrence_key::{self, Occurrence};
use serde_json::{Value, json};

use crate::support::records::{Ids, feed, grant, new_medication, new_person};
use crate::support::{TestApp, TestResponse};

const DAY: &str = "2027-03-10";

async fn batch(app: &TestApp, token: &str, operations: Value) -> TestResponse {
    app.send(
        Method::POST,
        &app.hh("/sync/batches"),
        Some(token),
        Some(json!({"batch": {"operations": operations}})),
        &[],
    )
    .await
}

async fn daily_schedule(app: &TestApp, person: &Ids, medication: &Ids) -> Ids {
    let created = app
        .post(
            &app.hh("/schedules"),
            &app.owner,
            json!({"schedule": {"person_id": person.id, "medication_id": medication.id,
                "start_date": "2027-03-01", "schedule_type": "daily",
                "schedule_config": {"times": ["08:00"]}}}),
        )
        .await;
    created.assert_status(201);
    Ids::of(created.data())
}

/// The day's one dose of `source`.
async fn dose(app: &TestApp, source: &Ids) -> Value {
    let listed = app
        .get(
            &app.hh(&format!("/dose_occurrences?date={DAY}")),
            &app.owner,
        )
        .await;
    listed.assert_status(200);
    let doses: Vec<Value> = listed
        .data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["source_id"] == source.id)
        .cloned()
        .collect();
    assert_eq!(doses.len(), 1);
    doses[0].clone()
}

async fn supply(app: &TestApp, medication: &Ids) -> String {
    let got = app
        .get(
            &app.hh(&format!("/medications/{}", medication.id)),
            &app.owner,
        )
        .await;
    got.assert_status(200);
    got.data()["current_supply"].as_str().unwrap().to_string()
}

async fn rows(app: &TestApp) -> i64 {
    app.db
        .read(|conn| Ok(conn.query_row("SELECT COUNT(*) FROM dose_occurrences", [], |r| r.get(0))?))
        .await
        .unwrap()
}

/// The occurrence key this server would issue for the first dose of
/// `source` on `day`.
async fn sign(app: &TestApp, source_type: &str, source: &Ids, day: &str) -> String {
    let occurrence = Occurrence {
        source_type: source_type.into(),
        source_portable_id: source.portable.clone(),
        window_starts_on: day.parse().unwrap(),
        position: 1,
    };
    app.db
        .read(move |conn| occurrence_key::sign(conn, &occurrence))
        .await
        .unwrap()
}

fn not_taken(source_type: &str, source: &Ids, key: &str) -> Value {
    json!({"action": "create", "resource_type": "medication_dose_occurrence",
        "attributes": {"source_type": source_type, "source_id": source.portable,
            "occurrence_key": key, "outcome": "not_taken", "reason": "asleep"}})
}

fn reopen(id: &str, etag: &str) -> Value {
    json!({"action": "update", "resource_type": "medication_dose_occurrence",
        "id": id, "if_match": etag, "attributes": {"outcome": "open"}})
}

#[tokio::test]
async fn not_taken_is_recorded_once_and_can_be_reopened() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Tablets").await;
    let schedule = daily_schedule(&app, &ada, &med).await;
    let stock = supply(&app, &med).await;

    let open = dose(&app, &schedule).await;
    assert_eq!(open["outcome"], "open");
    let key = open["occurrence_key"].as_str().unwrap().to_string();

    let created = batch(
        &app,
        &app.owner,
        json!([not_taken("schedule", &schedule, &key)]),
    )
    .await;
    created.assert_status(201);
    let result = &created.data()["results"][0];
    assert_eq!(result["record_type"], "MedicationDoseOccurrence");
    let record_id: i64 = result["record_id"].as_str().unwrap().parse().unwrap();
    let portable = result["record_portable_id"].as_str().unwrap().to_string();
    let etag = result["etag"].as_str().unwrap().to_string();
    assert_eq!(etag, format!("\"{portable}.1\""));

    let shown = dose(&app, &schedule).await;
    assert_eq!(shown["outcome"], "not_taken");
    assert_eq!(shown["reason"], "asleep");
    assert_eq!(shown["occurrence_key"], key.as_str());

    // The same decision again: no new row, no new feed entry.
    let again = batch(
        &app,
        &app.owner,
        json!([not_taken("schedule", &schedule, &key)]),
    )
    .await;
    again.assert_status(201);
    assert_eq!(
        again.data()["results"][0]["record_portable_id"],
        portable.as_str()
    );
    assert_eq!(again.data()["results"][0]["etag"], etag.as_str());
    assert_eq!(rows(&app).await, 1);
    assert_eq!(
        feed(&app, "MedicationDoseOccurrence", record_id).await,
        vec![("create".to_string(), Some(ada.id))]
    );

    // A forged key.
    let (payload, _) = key.split_once('.').unwrap();
    let forged = format!("{payload}.AAAA");
    let refused = batch(
        &app,
        &app.owner,
        json!([not_taken("schedule", &schedule, &forged)]),
    )
    .await;
    refused.assert_status(422);
    assert!(refused.body.to_string().contains("occurrence_key"));
    assert!(!refused.body.to_string().contains(&forged));

    // Only outcome open may be set by an update.
    batch(
        &app,
        &app.owner,
        json!([{"action": "update", "resource_type": "medication_dose_occurrence",
            "id": portable, "if_match": etag, "attributes": {"outcome": "taken"}}]),
    )
    .await
    .assert_status(422);
    // Deletes stay unsupported.
    batch(
        &app,
        &app.owner,
        json!([{"action": "delete", "resource_type": "medication_dose_occurrence",
            "id": portable, "if_match": etag}]),
    )
    .await
    .assert_error(422, "sync_operation_unsupported");
    // Missing if_match.
    batch(
        &app,
        &app.owner,
        json!([{"action": "update", "resource_type": "medication_dose_occurrence",
            "id": portable, "attributes": {"outcome": "open"}}]),
    )
    .await
    .assert_status(428);

    let reopened = batch(&app, &app.owner, json!([reopen(&portable, &etag)])).await;
    reopened.assert_status(201);
    let new_etag = reopened.data()["results"][0]["etag"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(new_etag, format!("\"{portable}.2\""));
    let shown = dose(&app, &schedule).await;
    assert_eq!(shown["outcome"], "open");
    assert_eq!(shown["reason"], Value::Null);
    assert_eq!(
        feed(&app, "MedicationDoseOccurrence", record_id).await,
        vec![
            ("create".to_string(), Some(ada.id)),
            ("update".to_string(), Some(ada.id))
        ]
    );

    // The old ETag is stale now.
    batch(&app, &app.owner, json!([reopen(&portable, &etag)]))
        .await
        .assert_error(409, "sync_conflict");

    // A reopened dose can be decided again: the same row, now not taken.
    let decided = batch(
        &app,
        &app.owner,
        json!([not_taken("schedule", &schedule, &key)]),
    )
    .await;
    decided.assert_status(201);
    assert_eq!(
        decided.data()["results"][0]["record_portable_id"],
        portable.as_str()
    );
    assert_eq!(dose(&app, &schedule).await["outcome"], "not_taken");
    assert_eq!(rows(&app).await, 1);

    assert_eq!(supply(&app, &med).await, stock);
}

#[tokio::test]
async fn taken_doses_as_needed_sources_and_view_grants_are_refused() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Tablets").await;
    let stock = supply(&app, &med).await;
    let schedule = daily_schedule(&app, &ada, &med).await;
    let key = dose(&app, &schedule).await["occurrence_key"]
        .as_str()
        .unwrap()
        .to_string();

    // An as-needed assignment has no expected doses.
    let created = app
        .post(
            &app.hh("/person_medications"),
            &app.owner,
            json!({"person_medication": {"person_id": ada.id, "medication_id": med.id,
                "administration_kind": "as_needed"}}),
        )
        .await;
    created.assert_status(201);
    let as_needed = Ids::of(created.data());
    let portable = as_needed.portable.clone();
    let as_needed_key = app
        .db
        .read(move |conn| {
            occurrence_key::sign(
                conn,
                &Occurrence {
                    source_type: "person_medication".into(),
                    source_portable_id: portable,
                    window_starts_on: DAY.parse().unwrap(),
                    position: 1,
                },
            )
        })
        .await
        .unwrap();
    batch(
        &app,
        &app.owner,
        json!([not_taken("person_medication", &as_needed, &as_needed_key)]),
    )
    .await
    .assert_status(422);
    // A key of another source.
    batch(
        &app,
        &app.owner,
        json!([not_taken("person_medication", &as_needed, &key)]),
    )
    .await
    .assert_status(422);

    // A view-only grant may not record outcomes.
    let (membership, carer) = app
        .add_member("carer@example.org", Role::Member, None)
        .await;
    grant(&app, membership, ada.id, "view").await;
    batch(
        &app,
        &carer,
        json!([not_taken("schedule", &schedule, &key)]),
    )
    .await
    .assert_status(403);
    assert_eq!(rows(&app).await, 0);
    assert_eq!(supply(&app, &med).await, stock);

    // A dose already taken conflicts. Only a dose whose day has come can be
    // taken, so this is the key of a past day, given on that day.
    let past = sign(&app, "schedule", &schedule, "2026-03-10").await;
    let took = app
        .post(
            &app.hh("/medication_takes"),
            &app.owner,
            json!({"medication_take": {"source_type": "schedule", "source_id": schedule.id,
                "taken_at": "2026-03-10T08:00:00Z", "occurrence_key": past}}),
        )
        .await;
    took.assert_status(201);
    let after_take = supply(&app, &med).await;
    batch(
        &app,
        &app.owner,
        json!([not_taken("schedule", &schedule, &past)]),
    )
    .await
    .assert_error(409, "dose_outcome_conflict");
    assert_eq!(rows(&app).await, 0);
    assert_eq!(supply(&app, &med).await, after_take);
}

/// The MedicationDoseOccurrence entries of the change feed, read by `token`.
async fn outcome_entries(app: &TestApp, token: &str) -> Vec<Value> {
    let page = app.get(&app.hh("/sync/changes?limit=1000"), token).await;
    page.assert_status(200);
    assert_eq!(page.data()["has_more"], false);
    let changes = page.data()["changes"].as_array().unwrap();
    for entry in changes {
        if entry["record_type"] != "MedicationDoseOccurrence" {
            assert!(entry.get("record").is_none(), "{entry}");
        }
    }
    changes
        .iter()
        .filter(|e| e["record_type"] == "MedicationDoseOccurrence")
        .cloned()
        .collect()
}

#[tokio::test]
async fn feed_entries_of_outcomes_carry_the_current_record_and_etag() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let bob = new_person(&app, "Bob").await;
    let med = new_medication(&app, "Tablets").await;
    let schedule = daily_schedule(&app, &ada, &med).await;
    let key = dose(&app, &schedule).await["occurrence_key"]
        .as_str()
        .unwrap()
        .to_string();

    let created = batch(
        &app,
        &app.owner,
        json!([not_taken("schedule", &schedule, &key)]),
    )
    .await;
    created.assert_status(201);
    let portable = created.data()["results"][0]["record_portable_id"]
        .as_str()
        .unwrap()
        .to_string();
    let etag = created.data()["results"][0]["etag"]
        .as_str()
        .unwrap()
        .to_string();

    let entries = outcome_entries(&app, &app.owner).await;
    assert_eq!(entries.len(), 1);
    let record = &entries[0]["record"];
    assert_eq!(record["portable_id"], portable.as_str());
    assert_eq!(record["etag"], etag.as_str());
    assert_eq!(record["outcome"], "not_taken");
    assert_eq!(record["reason"], "asleep");
    assert_eq!(record["source_type"], "schedule");
    assert_eq!(record["source_portable_id"], schedule.portable.as_str());
    assert_eq!(record["window_starts_on"], DAY);
    assert_eq!(record["position"], 1);
    assert!(record.get("id").is_none() && record.get("occurrence_key").is_none());
    // The reason lives in the record only, never in metadata.
    assert!(!entries[0]["metadata"].to_string().contains("asleep"));

    // After reopening, both entries carry the latest state and ETag.
    let reopened = batch(&app, &app.owner, json!([reopen(&portable, &etag)])).await;
    reopened.assert_status(201);
    let new_etag = reopened.data()["results"][0]["etag"].as_str().unwrap();
    let entries = outcome_entries(&app, &app.owner).await;
    assert_eq!(entries.len(), 2);
    for entry in &entries {
        assert_eq!(entry["record"]["etag"], new_etag);
        assert_eq!(entry["record"]["outcome"], "open");
        assert_eq!(entry["record"]["reason"], Value::Null);
    }
    assert_eq!(entries[0]["action"], "create");
    assert_eq!(entries[1]["action"], "update");

    // A member who may view Bob only sees neither the entries nor the record.
    let (membership, carer) = app
        .add_member("carer@example.org", Role::Member, None)
        .await;
    grant(&app, membership, bob.id, "view").await;
    assert!(outcome_entries(&app, &carer).await.is_empty());
    // Given view access to Ada, the entries appear with the record.
    grant(&app, membership, ada.id, "view").await;
    let seen = outcome_entries(&app, &carer).await;
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1]["record"]["etag"], new_etag);
}

/// The persisted outcome `portable` as getSyncSnapshot shows it.
async fn snapshot_outcome(app: &TestApp, portable: &str) -> Value {
    let snapshot = app.get(&app.hh("/sync/snapshot"), &app.owner).await;
    snapshot.assert_status(200);
    snapshot.data()["records"]["dose_occurrences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["portable_id"] == portable)
        .cloned()
        .unwrap()
}

fn take_op(schedule: &Ids, key: &str, at: &str) -> Value {
    json!({"action": "create", "resource_type": "medication_take",
        "attributes": {"source_type": "schedule", "source_id": schedule.portable,
            "taken_at": at, "occurrence_key": key}})
}

#[tokio::test]
async fn a_given_dose_never_syncs_as_missed() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Tablets").await;
    let created = app
        .post(
            &app.hh("/schedules"),
            &app.owner,
            json!({"schedule": {"person_id": ada.id, "medication_id": med.id,
                "start_date": "2026-03-01", "schedule_type": "daily",
                "schedule_config": {"times": ["08:00"]}}}),
        )
        .await;
    created.assert_status(201);
    let schedule = Ids::of(created.data());
    let stock = supply(&app, &med).await;

    // Recorded not taken offline, then given after all (REST take).
    let key = sign(&app, "schedule", &schedule, "2026-03-10").await;
    let decided = batch(
        &app,
        &app.owner,
        json!([not_taken("schedule", &schedule, &key)]),
    )
    .await;
    decided.assert_status(201);
    let portable = decided.data()["results"][0]["record_portable_id"]
        .as_str()
        .unwrap()
        .to_string();
    let record_id: i64 = decided.data()["results"][0]["record_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let took = app
        .post(
            &app.hh("/medication_takes"),
            &app.owner,
            json!({"medication_take": {"source_type": "schedule", "source_id": schedule.id,
                "taken_at": "2026-03-10T08:20:00Z", "occurrence_key": key}}),
        )
        .await;
    took.assert_status(201);
    let take_portable = took.data()["portable_id"].as_str().unwrap().to_string();
    assert_ne!(supply(&app, &med).await, stock);

    let saved = snapshot_outcome(&app, &portable).await;
    assert_eq!(saved["outcome"], "taken");
    assert_eq!(saved["medication_take_portable_id"], take_portable.as_str());
    assert_eq!(saved["reason"], Value::Null);
    assert_eq!(saved["etag"], format!("\"{portable}.2\""));
    let entries = outcome_entries(&app, &app.owner).await;
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1]["action"], "update");
    assert_eq!(entries[1]["record"]["outcome"], "taken");
    assert_eq!(entries[1]["record"]["etag"], saved["etag"]);
    assert_eq!(
        feed(&app, "MedicationDoseOccurrence", record_id).await,
        vec![
            ("create".to_string(), Some(ada.id)),
            ("update".to_string(), Some(ada.id))
        ]
    );
    // A taken dose is neither decided again nor reopened.
    batch(
        &app,
        &app.owner,
        json!([not_taken("schedule", &schedule, &key)]),
    )
    .await
    .assert_error(409, "dose_outcome_conflict");
    let etag = saved["etag"].as_str().unwrap();
    batch(&app, &app.owner, json!([reopen(&portable, etag)]))
        .await
        .assert_error(409, "dose_outcome_conflict");

    // Reopened (open) and then given through a batch: taken as well.
    let key = sign(&app, "schedule", &schedule, "2026-03-11").await;
    let decided = batch(
        &app,
        &app.owner,
        json!([not_taken("schedule", &schedule, &key)]),
    )
    .await;
    let portable = decided.data()["results"][0]["record_portable_id"]
        .as_str()
        .unwrap()
        .to_string();
    let etag = decided.data()["results"][0]["etag"]
        .as_str()
        .unwrap()
        .to_string();
    batch(&app, &app.owner, json!([reopen(&portable, &etag)]))
        .await
        .assert_status(201);
    let before = snapshot_outcome(&app, &portable).await;
    assert_eq!(before["outcome"], "open");

    // A batch that fails later leaves the outcome and the feed untouched.
    let feed_before = outcome_entries(&app, &app.owner).await.len();
    batch(
        &app,
        &app.owner,
        json!([
            take_op(&schedule, &key, "2026-03-11T08:05:00Z"),
            reopen(&portable, "\"stale\"")
        ]),
    )
    .await
    .assert_status(409);
    assert_eq!(snapshot_outcome(&app, &portable).await, before);
    assert_eq!(outcome_entries(&app, &app.owner).await.len(), feed_before);

    let given = batch(
        &app,
        &app.owner,
        json!([take_op(&schedule, &key, "2026-03-11T08:05:00Z")]),
    )
    .await;
    given.assert_status(201);
    let take_portable = given.data()["results"][0]["record_portable_id"]
        .as_str()
        .unwrap();
    let saved = snapshot_outcome(&app, &portable).await;
    assert_eq!(saved["outcome"], "taken");
    assert_eq!(saved["medication_take_portable_id"], take_portable);
    assert_eq!(saved["etag"], format!("\"{portable}.3\""));
    let entries = outcome_entries(&app, &app.owner).await;
    assert_eq!(entries.len(), feed_before + 1);
    assert_eq!(entries.last().unwrap()["record"]["outcome"], "taken");
}
