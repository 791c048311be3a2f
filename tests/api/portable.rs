//! Encrypted household export, dry run and import: the round trip between
//! two servers, the envelope refusing every changed byte, and the import
//! rules.

use axum::http::Method;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use pillbox::care::occurrence_key::{self, Occurrence};
use serde_json::{Value, json};

use crate::support::records::{Ids, new_medication, new_person};
use crate::support::{TestApp, TestResponse};

pub const PASSPHRASE: &str = "a long family passphrase";
const HEADER: &str = "X-Service-Portable-Passphrase";

fn ids(data: &Value) -> Ids {
    Ids {
        id: data["id"].as_i64().unwrap(),
        portable: data["portable_id"].as_str().unwrap().to_string(),
    }
}

pub async fn export(app: &TestApp, query: &str) -> TestResponse {
    app.send(
        Method::GET,
        &app.hh(&format!("/portable_export{query}")),
        Some(&app.owner),
        None,
        &[(HEADER, PASSPHRASE)],
    )
    .await
}

pub async fn import(app: &TestApp, path: &str, bundle: &Value, passphrase: &str) -> TestResponse {
    app.send(
        Method::POST,
        &app.hh(path),
        Some(&app.owner),
        Some(bundle.clone()),
        &[(HEADER, passphrase)],
    )
    .await
}

pub async fn snapshot(app: &TestApp) -> Value {
    let got = app.get(&app.hh("/sync/snapshot"), &app.owner).await;
    got.assert_status(200);
    got.data().clone()
}

async fn created(app: &TestApp, path: &str, body: Value) -> Ids {
    let got = app.post(&app.hh(path), &app.owner, body).await;
    got.assert_status(201);
    ids(got.data())
}

async fn schedule(app: &TestApp, person: &Ids, med: &Ids, kind: &str, config: Value) -> Ids {
    created(
        app,
        "/schedules",
        json!({"schedule": {"person_id": person.id, "medication_id": med.id,
            "schedule_type": kind, "schedule_config": config, "start_date": "2026-03-01"}}),
    )
    .await
}

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

/// A household with a record of every portable collection: people (one
/// without capacity, one at a location), a location, medications, a dosage
/// option, schedules of every type (one paused with a reason, one retired),
/// direct assignments (routine and as needed), takes, a taken and a
/// not-taken outcome, a closed and an open pause period, health events and
/// notification preferences.
pub async fn household(app: &TestApp) {
    let ada = new_person(app, "Ada").await;
    let cal = created(
        app,
        "/people",
        json!({"person": {"name": "Cal", "date_of_birth": "1960-01-01",
            "person_type": "dependent_adult", "has_capacity": false}}),
    )
    .await;
    let kitchen = created(
        app,
        "/locations",
        json!({"location": {"name": "Kitchen", "description": "Top shelf"}}),
    )
    .await;
    app.post(
        &app.hh(&format!("/locations/{}/location_memberships", kitchen.id)),
        &app.owner,
        json!({"location_membership": {"person_id": ada.id}}),
    )
    .await
    .assert_status(201);
    let med = new_medication(app, "Paracetamol").await;
    let other = new_medication(app, "Ibuprofen").await;
    let option = created(
        app,
        "/dosage_options",
        json!({"dosage_option": {"medication_id": med.id, "amount": "2.5", "unit": "ml",
            "current_supply": "100", "default_dose_cycle": "daily"}}),
    )
    .await;
    let daily = schedule(app, &ada, &med, "daily", json!({"times": ["08:00"]})).await;
    schedule(
        app,
        &ada,
        &med,
        "multiple_daily",
        json!({"times": ["07:30", "18:00"]}),
    )
    .await;
    schedule(
        app,
        &cal,
        &other,
        "weekly",
        json!({"weekdays": ["tuesday"], "times": ["09:00"]}),
    )
    .await;
    schedule(
        app,
        &cal,
        &other,
        "specific_dates",
        json!({"dates": ["2026-04-01"], "times": ["10:00"]}),
    )
    .await;
    schedule(app, &cal, &med, "prn", json!({})).await;
    schedule(
        app,
        &ada,
        &other,
        "tapering",
        json!({"taper_steps": [
            {"start_date": "2026-03-01", "end_date": "2026-03-07", "dose_amount": "2", "times": ["08:00"]},
            {"start_date": "2026-03-08", "end_date": "2026-03-14", "dose_amount": "1", "times": ["08:00"]}]}),
    )
    .await;
    let other_day = schedule(
        app,
        &cal,
        &med,
        "every_other_day",
        json!({"times": ["09:00"]}),
    )
    .await;
    let from_option = created(
        app,
        "/schedules",
        json!({"schedule": {"person_id": cal.id, "medication_id": med.id,
            "source_dosage_option_id": option.id, "schedule_type": "daily",
            "schedule_config": {"times": ["12:00"]}, "start_date": "2026-03-01"}}),
    )
    .await;
    let routine = created(
        app,
        "/person_medications",
        json!({"person_medication": {"person_id": ada.id, "medication_id": other.id,
            "administration_kind": "routine", "dose_cycle": "daily", "max_daily_doses": 2}}),
    )
    .await;
    created(
        app,
        "/person_medications",
        json!({"person_medication": {"person_id": ada.id, "medication_id": med.id,
            "administration_kind": "as_needed", "notes": "for headaches"}}),
    )
    .await;

    // Two doses decided not taken through a sync batch; the first is then
    // taken after all (a take naming it), the second stays not taken.
    let mut operations = Vec::new();
    for day in ["2026-03-02", "2026-03-03"] {
        let key = sign(app, "schedule", &daily, day).await;
        operations.push(
            json!({"action": "create", "resource_type": "medication_dose_occurrence",
            "attributes": {"source_type": "schedule", "source_id": daily.portable,
                "occurrence_key": key, "outcome": "not_taken", "reason": "asleep"}}),
        );
    }
    app.post_keyed(
        &app.hh("/sync/batches"),
        &app.owner,
        &json!({"batch": {"operations": operations}}),
        "round-trip-outcomes",
    )
    .await
    .assert_status(201);
    // A take that resolves an expected dose, a plain one, and one from the
    // dosage option's stock.
    let key = sign(app, "schedule", &daily, "2026-03-02").await;
    created(
        app,
        "/medication_takes",
        json!({"medication_take": {"source_type": "schedule", "source_id": daily.portable,
            "taken_at": "2026-03-02T08:05:00Z", "occurrence_key": key,
            "client_uuid": "8f0d3c6e-4c1c-4d3b-9a55-1d6f1c0c0a01"}}),
    )
    .await;
    created(
        app,
        "/medication_takes",
        json!({"medication_take": {"source_type": "person_medication", "source_id": routine.portable,
            "taken_at": "2026-03-03T09:00:00Z", "taken_from_location_id": kitchen.portable}}),
    )
    .await;
    created(
        app,
        "/medication_takes",
        json!({"medication_take": {"source_type": "schedule", "source_id": from_option.portable,
            "taken_at": "2026-03-03T12:10:00Z"}}),
    )
    .await;
    // A closed pause of the routine assignment, and an open one of the
    // every-other-day schedule.
    let pause = app
        .post(
            &app.hh("/medication_pause_periods"),
            &app.owner,
            json!({"medication_pause_period": {"source_type": "person_medication",
                "source_id": routine.portable, "reason": "side_effects", "note": "rash"}}),
        )
        .await;
    pause.assert_status(201);
    let period = pause.data()["portable_id"].as_str().unwrap().to_string();
    app.post(
        &app.hh(&format!("/medication_pause_periods/{period}/resume")),
        &app.owner,
        json!({}),
    )
    .await
    .assert_status(200);
    app.post(
        &app.hh("/medication_pause_periods"),
        &app.owner,
        json!({"medication_pause_period": {"source_type": "schedule",
            "source_id": other_day.portable, "reason": "out_of_supply"}}),
    )
    .await
    .assert_status(201);

    // A retired schedule keeps its history.
    let retired = schedule(app, &cal, &other, "daily", json!({"times": ["21:00"]})).await;
    created(
        app,
        "/medication_takes",
        json!({"medication_take": {"source_type": "schedule", "source_id": retired.portable,
            "taken_at": "2026-03-04T21:00:00Z"}}),
    )
    .await;
    app.delete(
        &app.hh(&format!("/schedules/{}", retired.id)),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);

    created(
        app,
        "/health_events",
        json!({"health_event": {"person_id": ada.id, "event_kind": "suspected_side_effect",
            "severity": "mild", "title": "Rash", "started_on": "2026-03-05",
            "medication_ids": [other.id]}}),
    )
    .await;
    app.patch(
        &app.hh("/notification_preference"),
        &app.owner,
        json!({"notification_preference": {"private_text_enabled": true, "morning_time": "07:15"}}),
        None,
    )
    .await
    .assert_status(200);
}

/// A snapshot's records as compared across servers: without the records
/// the destination had before, and without what a new write changes
/// (updated_at, etag) or the import marks (imported_context, actors only
/// the source's memberships could name).
fn comparable(snapshot: &Value, before: &Value) -> Value {
    let mut records = snapshot["records"].clone();
    for (name, items) in records.as_object_mut().unwrap() {
        let old: Vec<&Value> = before["records"][name]
            .as_array()
            .map(|a| a.iter().map(|r| &r["portable_id"]).collect())
            .unwrap_or_default();
        let items = items.as_array_mut().unwrap();
        items.retain(|r| !old.contains(&&r["portable_id"]));
        for item in items.iter_mut() {
            let object = item.as_object_mut().unwrap();
            for volatile in [
                "updated_at",
                "etag",
                "imported_context",
                "recorded_by_person_portable_id",
                "resumed_by_person_portable_id",
            ] {
                object.remove(volatile);
            }
        }
        items.sort_by_key(|r| r["portable_id"].as_str().unwrap().to_string());
    }
    records
}

/// Equal record sets, or a panic naming each record and field that differ.
#[track_caller]
fn assert_same(got: &Value, expected: &Value) {
    let mut differences = Vec::new();
    for (name, items) in expected.as_object().unwrap() {
        let theirs = got[name].as_array().cloned().unwrap_or_default();
        for item in items.as_array().unwrap() {
            let id = &item["portable_id"];
            match theirs.iter().find(|r| &r["portable_id"] == id) {
                None => differences.push(format!("{name} {id}: missing")),
                Some(found) => {
                    for (field, value) in item.as_object().unwrap() {
                        if &found[field] != value {
                            differences.push(format!(
                                "{name} {id} {field}: got {} expected {value}",
                                found[field]
                            ));
                        }
                    }
                }
            }
        }
        for extra in theirs.iter().filter(|r| {
            !items
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["portable_id"] == r["portable_id"])
        }) {
            differences.push(format!("{name}: unexpected {extra}"));
        }
    }
    for name in got.as_object().unwrap().keys() {
        if expected.get(name).is_none() {
            differences.push(format!("unexpected collection {name}"));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

#[tokio::test]
async fn a_v2_bundle_moves_every_collection_to_a_fresh_server() {
    let source = TestApp::new().await;
    household(&source).await;
    let source_snapshot = snapshot(&source).await;

    let exported = export(&source, "?portable_format=service.portable.v2").await;
    exported.assert_status(200);
    assert_eq!(exported.header("cache-control"), Some("no-store"));
    let bundle = exported.data().clone();
    assert_eq!(bundle["format"], "service.portable.encrypted.v1");
    assert_eq!(bundle["cipher"], "aes-256-gcm");
    assert_eq!(bundle["kdf"], "argon2id");
    assert!(!bundle.to_string().contains("Paracetamol"));

    let destination = TestApp::new().await;
    let before = snapshot(&destination).await;
    let dry = import(
        &destination,
        "/portable_imports/dry_run",
        &bundle,
        PASSPHRASE,
    )
    .await;
    dry.assert_status(200);
    assert_eq!(dry.data()["applied"], false);
    assert_eq!(dry.data()["format"], "service.portable.v2");
    assert_eq!(dry.data()["conflicts"], json!([]), "{}", dry.body);
    assert_eq!(dry.data()["errors"], json!([]), "{}", dry.body);
    assert_eq!(dry.data()["counts"]["medication_takes"], 4);
    assert_eq!(dry.data()["counts"]["schedules"], 9);
    assert_eq!(snapshot(&destination).await["records"], before["records"]);

    let applied = import(&destination, "/portable_imports", &bundle, PASSPHRASE).await;
    applied.assert_status(201);
    assert_eq!(applied.data()["applied"], true);
    let after = snapshot(&destination).await;
    assert_same(
        &comparable(&after, &before),
        &comparable(&source_snapshot, &json!({})),
    );

    // The import is audited as the importing member.
    let audit = destination
        .get(&destination.hh("/admin/audit_logs"), &destination.owner)
        .await;
    let events = audit.data().as_array().unwrap();
    assert!(events.iter().any(|e| e["event_type"] == "portable.imported"
        && e["actor_membership_id"] == destination.owner_membership_id));

    // Importing the same bundle again finds everything unchanged.
    let again = import(
        &destination,
        "/portable_imports/dry_run",
        &bundle,
        PASSPHRASE,
    )
    .await;
    again.assert_status(200);
    assert_eq!(again.data()["conflicts"], json!([]), "{}", again.body);
    assert_eq!(again.data()["errors"], json!([]), "{}", again.body);
    assert_eq!(again.data()["created"], json!({}));
}

#[tokio::test]
async fn a_v1_bundle_moves_the_v1_collections_with_its_documented_losses() {
    let source = TestApp::new().await;
    household(&source).await;
    let source_snapshot = snapshot(&source).await;
    let exported = export(&source, "").await;
    exported.assert_status(200);
    let bundle = exported.data().clone();

    let destination = TestApp::new().await;
    let before = snapshot(&destination).await;
    let applied = import(&destination, "/portable_imports", &bundle, PASSPHRASE).await;
    applied.assert_status(201);
    assert_eq!(applied.data()["format"], "service.portable.v1");
    let mut expected = comparable(&source_snapshot, &json!({}));
    let mut got = comparable(&snapshot(&destination).await, &before);
    // v1 carries no health events, pause history or outcomes: the paused
    // schedule is paused again without a recorded reason.
    for lost in [
        "health_events",
        "dose_occurrences",
        "medication_pause_periods",
    ] {
        expected.as_object_mut().unwrap().remove(lost);
        let left = got.as_object_mut().unwrap().remove(lost).unwrap();
        if lost == "medication_pause_periods" {
            let reasons: Vec<&Value> = left
                .as_array()
                .unwrap()
                .iter()
                .map(|p| &p["reason"])
                .collect();
            assert_eq!(reasons, vec!["reason_not_recorded"]);
        } else {
            assert_eq!(left, json!([]));
        }
    }
    assert_same(&got, &expected);
}

/// A small household's v2 bundle, and the number of rows the destination
/// holds in the tables an import writes.
async fn small_bundle() -> Value {
    let source = TestApp::new().await;
    let ada = new_person(&source, "Ada").await;
    let med = new_medication(&source, "Paracetamol").await;
    schedule(&source, &ada, &med, "daily", json!({"times": ["08:00"]})).await;
    let exported = export(&source, "?version=2").await;
    exported.assert_status(200);
    exported.data().clone()
}

pub async fn written_rows(app: &TestApp) -> i64 {
    app.db
        .read(|conn| {
            let mut total = 0;
            for table in [
                "people",
                "medications",
                "schedules",
                "change_feed",
                "audit_events",
                "medication_takes",
                "idempotency_keys",
            ] {
                let n: i64 =
                    conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))?;
                total += n;
            }
            Ok(total)
        })
        .await
        .unwrap()
}

#[track_caller]
fn assert_unreadable(got: &TestResponse) {
    got.assert_error(422, "validation_failed");
    assert!(
        got.body["error"]["errors"].get("bundle").is_some(),
        "{}",
        got.body
    );
}

#[tokio::test]
async fn every_changed_byte_a_wrong_passphrase_or_a_cut_body_is_one_422_and_writes_nothing() {
    let bundle = small_bundle().await;
    let destination = TestApp::new().await;
    let rows = written_rows(&destination).await;

    for field in ["salt", "nonce"] {
        let bytes = BASE64.decode(bundle[field].as_str().unwrap()).unwrap();
        for i in 0..bytes.len() {
            let mut changed = bytes.clone();
            changed[i] ^= 0x01;
            let mut bad = bundle.clone();
            bad[field] = json!(BASE64.encode(&changed));
            let got = import(&destination, "/portable_imports", &bad, PASSPHRASE).await;
            assert_unreadable(&got);
        }
    }
    let checksum = bundle["checksum"].as_str().unwrap().to_string();
    for i in 0..checksum.len() {
        let mut chars: Vec<char> = checksum.chars().collect();
        chars[i] = if chars[i] == '0' { '1' } else { '0' };
        let mut bad = bundle.clone();
        bad["checksum"] = json!(chars.into_iter().collect::<String>());
        assert_unreadable(&import(&destination, "/portable_imports", &bad, PASSPHRASE).await);
    }
    // Every byte of the ciphertext is checked in the envelope's unit
    // tests (cheap parameters); here a spread of them through HTTP.
    let ciphertext = BASE64
        .decode(bundle["ciphertext"].as_str().unwrap())
        .unwrap();
    for i in (0..ciphertext.len()).step_by((ciphertext.len() / 24).max(1)) {
        let mut changed = ciphertext.clone();
        changed[i] ^= 0x80;
        let mut bad = bundle.clone();
        bad["ciphertext"] = json!(BASE64.encode(&changed));
        assert_unreadable(&import(&destination, "/portable_imports", &bad, PASSPHRASE).await);
    }
    let wrong = import(
        &destination,
        "/portable_imports",
        &bundle,
        "another long passphrase",
    )
    .await;
    assert_unreadable(&wrong);
    let dry_wrong = import(
        &destination,
        "/portable_imports/dry_run",
        &bundle,
        "another long passphrase",
    )
    .await;
    assert_unreadable(&dry_wrong);

    // A body cut short is not an envelope at all.
    let text = bundle.to_string();
    for cut in [1, text.len() / 2, text.len() - 1] {
        let got = destination
            .raw_request(
                axum::http::Request::builder()
                    .method(Method::POST)
                    .uri(destination.hh("/portable_imports"))
                    .header("authorization", format!("Bearer {}", destination.owner))
                    .header("content-type", "application/json")
                    .header(HEADER, PASSPHRASE)
                    .body(axum::body::Body::from(text[..cut].to_string()))
                    .unwrap(),
            )
            .await;
        assert_unreadable(&got);
    }
    assert_eq!(written_rows(&destination).await, rows);

    // The untouched bundle still imports.
    import(&destination, "/portable_imports", &bundle, PASSPHRASE)
        .await
        .assert_status(201);
}

#[tokio::test]
async fn the_passphrase_comes_only_in_its_header_and_has_a_minimum_length() {
    let app = TestApp::new().await;
    let missing = app
        .send(
            Method::GET,
            &app.hh("/portable_export"),
            Some(&app.owner),
            None,
            &[],
        )
        .await;
    missing.assert_error(422, "validation_failed");
    assert!(
        missing.body["error"]["errors"].get(HEADER).is_some(),
        "{}",
        missing.body
    );
    let short = app
        .send(
            Method::GET,
            &app.hh("/portable_export"),
            Some(&app.owner),
            None,
            &[(HEADER, "short")],
        )
        .await;
    short.assert_error(422, "validation_failed");
    assert!(!short.body.to_string().contains("short\""));
    let bad_version = app
        .send(
            Method::GET,
            &app.hh("/portable_export?version=3"),
            Some(&app.owner),
            None,
            &[(HEADER, PASSPHRASE)],
        )
        .await;
    bad_version.assert_error(422, "validation_failed");
    // Exports are audited.
    export(&app, "").await.assert_status(200);
    let audit = app.get(&app.hh("/admin/audit_logs"), &app.owner).await;
    assert!(
        audit
            .data()
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["event_type"] == "portable.exported")
    );
}

/// Seals a plaintext payload the way an export does (for import-rule tests).
fn seal(payload: &Value) -> Value {
    let passphrase = pillbox::portable::envelope::Passphrase::new(Some(PASSPHRASE)).unwrap();
    let sealed =
        pillbox::portable::envelope::seal(payload.to_string().into_bytes(), &passphrase).unwrap();
    serde_json::to_value(sealed).unwrap()
}

#[tokio::test]
async fn imports_refuse_unknown_collections_numeric_ids_bad_capacity_and_missing_relationships() {
    let app = TestApp::new().await;
    let rows = written_rows(&app).await;
    let person = |extra: Value| {
        let mut p = json!({"portable_id": "0199b0a0-0000-7000-8000-000000000001",
            "name": "Dee", "email": null, "date_of_birth": "2015-01-01", "person_type": "minor",
            "has_capacity": false, "location_portable_ids": [], "notification_preference_portable_id": null});
        for (k, v) in extra.as_object().unwrap() {
            p[k] = v.clone();
        }
        p
    };
    let payload = |records: Value| json!({"format": "service.portable.v1", "records": records});

    let unknown = seal(&payload(json!({"invoices": []})));
    let got = import(&app, "/portable_imports/dry_run", &unknown, PASSPHRASE).await;
    got.assert_error(422, "validation_failed");
    assert!(
        got.body["error"]["errors"]
            .get("bundle.records.invoices")
            .is_some(),
        "{}",
        got.body
    );

    let numeric = seal(&payload(json!({"people": [person(json!({"id": 7}))]})));
    let got = import(&app, "/portable_imports/dry_run", &numeric, PASSPHRASE).await;
    got.assert_status(200);
    assert_eq!(got.data()["errors"][0]["field"], "id", "{}", got.body);

    let capacity = seal(&payload(
        json!({"people": [person(json!({"person_type": "adult", "has_capacity": true}))]}),
    ));
    let got = import(&app, "/portable_imports/dry_run", &capacity, PASSPHRASE).await;
    got.assert_status(200);
    assert_eq!(
        got.data()["errors"][0]["field"],
        "person_type",
        "{}",
        got.body
    );
    let refused = import(&app, "/portable_imports", &capacity, PASSPHRASE).await;
    refused.assert_error(422, "validation_failed");

    let dangling = seal(&payload(json!({"dosage_options": [{
        "portable_id": "0199b0a0-0000-7000-8000-000000000002",
        "medication_portable_id": "0199b0a0-0000-7000-8000-0000000000ff",
        "amount": "1", "unit": "tablet", "frequency": null, "description": null,
        "default_for_adults": false, "default_for_children": false, "default_max_daily_doses": null,
        "default_min_hours_between_doses": null, "default_dose_cycle": null,
        "current_supply": null, "reorder_threshold": null}]})));
    let got = import(&app, "/portable_imports/dry_run", &dangling, PASSPHRASE).await;
    got.assert_status(200);
    assert_eq!(
        got.data()["errors"][0]["field"],
        "relationship",
        "{}",
        got.body
    );
    import(&app, "/portable_imports", &dangling, PASSPHRASE)
        .await
        .assert_error(422, "validation_failed");
    assert_eq!(written_rows(&app).await, rows);
}

#[tokio::test]
async fn a_conflict_names_collection_field_and_existing_record_and_blocks_the_import() {
    let source = TestApp::new().await;
    let ada = new_person(&source, "Ada").await;
    let exported = export(&source, "?version=2").await;
    let bundle = exported.data().clone();
    let destination = TestApp::new().await;
    import(&destination, "/portable_imports", &bundle, PASSPHRASE)
        .await
        .assert_status(201);
    // Ada changes in the destination; the bundle's Ada now conflicts.
    let people = destination
        .get(&destination.hh("/people"), &destination.owner)
        .await;
    let numeric = people
        .data()
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["portable_id"] == ada.portable.as_str())
        .and_then(|p| p["id"].as_i64())
        .expect("the imported person");
    destination
        .patch(
            &destination.hh(&format!("/people/{numeric}")),
            &destination.owner,
            json!({"person": {"name": "Ada Lovelace"}}),
            None,
        )
        .await
        .assert_status(200);
    let dry = import(
        &destination,
        "/portable_imports/dry_run",
        &bundle,
        PASSPHRASE,
    )
    .await;
    dry.assert_status(200);
    assert_eq!(
        dry.data()["conflicts"],
        json!([{"collection": "people", "record_type": "Person", "portable_id": ada.portable,
            "field": "name", "existing_portable_id": ada.portable}])
    );
    let rows = written_rows(&destination).await;
    import(&destination, "/portable_imports", &bundle, PASSPHRASE)
        .await
        .assert_error(422, "validation_failed");
    assert_eq!(written_rows(&destination).await, rows);
}

#[tokio::test]
async fn an_import_with_an_idempotency_key_is_applied_once() {
    let bundle = small_bundle().await;
    let app = TestApp::new().await;
    let send = |key: &'static str| {
        let app = &app;
        let bundle = bundle.clone();
        async move {
            app.send(
                Method::POST,
                &app.hh("/portable_imports"),
                Some(&app.owner),
                Some(bundle),
                &[(HEADER, PASSPHRASE), ("Idempotency-Key", key)],
            )
            .await
        }
    };
    let first = send("import-1").await;
    first.assert_status(201);
    let rows = written_rows(&app).await;
    let again = send("import-1").await;
    again.assert_status(201);
    assert_eq!(again.body, first.body);
    assert_eq!(written_rows(&app).await, rows);
}

async fn data_export(app: &TestApp, mode: &str, headers: &[(&str, &str)]) -> TestResponse {
    app.send(
        Method::GET,
        &app.hh(&format!("/data_exports/{mode}")),
        Some(&app.owner),
        None,
        headers,
    )
    .await
}

/// The raw bytes of a download (the JSON test client keeps text only).
async fn download(app: &TestApp, mode: &str) -> (String, Vec<u8>) {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let request = axum::http::Request::builder()
        .uri(app.hh(&format!("/data_exports/{mode}")))
        .header("authorization", format!("Bearer {}", app.owner))
        .body(axum::body::Body::empty())
        .unwrap();
    let response = app.router.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-store");
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (content_type, bytes.to_vec())
}

#[tokio::test]
async fn data_exports_in_every_mode_and_a_404_listing_them() {
    let app = TestApp::new().await;
    household(&app).await;
    // Names a spreadsheet would run as formulas.
    let mallory = created(
        &app,
        "/people",
        json!({"person": {"name": "=HYPERLINK(\"http://x\")", "date_of_birth": "1970-01-01"}}),
    )
    .await;
    let med = created(
        &app,
        "/medications",
        json!({"medication": {"name": "+1,2", "dose_amount": "1", "dose_unit": "tablet"}}),
    )
    .await;
    let s = schedule(&app, &mallory, &med, "daily", json!({"times": ["08:00"]})).await;
    created(
        &app,
        "/medication_takes",
        json!({"medication_take": {"source_type": "schedule", "source_id": s.portable,
            "taken_at": "2026-07-01T07:00:00Z"}}),
    )
    .await;

    let health = data_export(&app, "health_data_json", &[]).await;
    health.assert_status(200);
    assert_eq!(health.data()["format"], "service.health_data.v1");
    assert_eq!(
        health.data()["records"]["health_events"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        health.data()["records"]["medication_takes"]
            .as_array()
            .unwrap()
            .len(),
        5
    );

    let (content_type, csv) = download(&app, "takes_csv").await;
    assert!(content_type.starts_with("text/csv"));
    let csv = String::from_utf8(csv).unwrap();
    let lines: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(
        lines[0],
        "taken_at,person,medication,dose_amount,dose_unit,source_type,location,take_portable_id"
    );
    assert_eq!(lines.len(), 6);
    let last = lines.last().unwrap();
    // British summer time: the household zone's offset.
    assert!(
        last.starts_with("2026-07-01T08:00:00+01:00,\"'=HYPERLINK(\"\"http://x\"\")\",\"'+1,2\","),
        "{last}"
    );
    assert!(csv.lines().all(|l| !l.contains(",=") && !l.contains(",+")));

    let (content_type, zip) = download(&app, "backup_zip").await;
    assert_eq!(content_type, "application/zip");
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip)).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut archive.by_name("backup.json").unwrap(), &mut text).unwrap();
    let backup: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(backup["format"], "service.backup.v1");
    assert_eq!(backup["portable"]["format"], "service.portable.v2");
    assert_eq!(
        backup["portable"]["records"]["dose_occurrences"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    data_export(&app, "encrypted_migration_bundle", &[])
        .await
        .assert_error(422, "validation_failed");
    let bundle = data_export(&app, "encrypted_migration_bundle", &[(HEADER, PASSPHRASE)]).await;
    bundle.assert_status(200);
    let fresh = TestApp::new().await;
    let dry = import(
        &fresh,
        "/portable_imports/dry_run",
        bundle.data(),
        PASSPHRASE,
    )
    .await;
    dry.assert_status(200);
    assert_eq!(dry.data()["format"], "service.portable.v2");
    assert_eq!(dry.data()["errors"], json!([]), "{}", dry.body);

    let unknown = data_export(&app, "everything", &[]).await;
    unknown.assert_error(404, "not_found");
    let message = unknown.body["error"]["message"].as_str().unwrap();
    for mode in [
        "encrypted_migration_bundle",
        "backup_zip",
        "health_data_json",
        "takes_csv",
    ] {
        assert!(message.contains(mode), "{message}");
    }
    let audit = app
        .get(&app.hh("/admin/audit_logs?per_page=100"), &app.owner)
        .await;
    let downloads = audit
        .data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event_type"] == "data_export.downloaded")
        .count();
    assert_eq!(downloads, 4);
}

/// A small deterministic generator (xorshift64*), so a failing case can be
/// replayed from its printed seed and step.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Replaces, removes or adds one thing somewhere in a JSON value.
fn mutate(value: &mut Value, rng: &mut Rng) {
    let replacements = [
        json!(null),
        json!(7),
        json!(-1.5),
        json!("=cmd()"),
        json!(""),
        json!([]),
        json!({}),
        json!(true),
        json!("0199b0a0-0000-7000-8000-0000000000ff"),
        json!("2026-02-30"),
        json!("x".repeat(5000)),
    ];
    match value {
        Value::Object(map) if !map.is_empty() && rng.below(4) > 0 => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = &keys[rng.below(keys.len())];
            match rng.below(5) {
                0 => {
                    map.remove(key);
                }
                1 => {
                    map.insert(format!("{key}_extra"), json!(1));
                }
                2 => {
                    map.insert("id".into(), json!(3));
                }
                _ => mutate(map.get_mut(key).unwrap(), rng),
            }
        }
        Value::Array(items) if !items.is_empty() && rng.below(4) > 0 => {
            let i = rng.below(items.len());
            match rng.below(4) {
                0 => {
                    let copy = items[i].clone();
                    items.push(copy);
                }
                1 => {
                    items.remove(i);
                }
                _ => mutate(&mut items[i], rng),
            }
        }
        other => *other = replacements[rng.below(replacements.len())].clone(),
    }
}

/// Decrypts a bundle exported with the test passphrase.
fn open(bundle: &Value) -> Value {
    let passphrase = pillbox::portable::envelope::Passphrase::new(Some(PASSPHRASE)).unwrap();
    let envelope = serde_json::from_value(bundle.clone()).unwrap();
    let plain = pillbox::portable::envelope::open(envelope, &passphrase).unwrap();
    serde_json::from_slice(&plain).unwrap()
}

#[tokio::test]
async fn mutated_bundles_and_payloads_never_give_a_500_or_a_partial_write() {
    let source = TestApp::new().await;
    household(&source).await;
    let bundle = export(&source, "?version=2").await.data().clone();
    let plain = open(&bundle);
    let destination = TestApp::new().await;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);

    // Changed bytes anywhere in the envelope's text.
    let text = bundle.to_string().into_bytes();
    for step in 0..40 {
        let mut changed = text.clone();
        let i = rng.below(changed.len());
        changed[i] = (rng.next() & 0x7f) as u8;
        let rows = written_rows(&destination).await;
        let got = destination
            .raw_request(
                axum::http::Request::builder()
                    .method(Method::POST)
                    .uri(destination.hh("/portable_imports"))
                    .header("authorization", format!("Bearer {}", destination.owner))
                    .header("content-type", "application/json")
                    .header(HEADER, PASSPHRASE)
                    .body(axum::body::Body::from(changed))
                    .unwrap(),
            )
            .await;
        let status = got.status.as_u16();
        assert!(
            status == 422 || status == 201,
            "step {step}: {status} {}",
            got.body
        );
        if status != 201 {
            assert_eq!(written_rows(&destination).await, rows, "step {step}");
        }
    }

    // Sealed payloads with one to three changes each.
    for step in 0..60 {
        let mut payload = plain.clone();
        for _ in 0..=rng.below(3) {
            mutate(&mut payload, &mut rng);
        }
        let sealed = seal(&payload);
        let rows = written_rows(&destination).await;
        let path = if step % 3 == 0 {
            "/portable_imports/dry_run"
        } else {
            "/portable_imports"
        };
        let got = import(&destination, path, &sealed, PASSPHRASE).await;
        let status = got.status.as_u16();
        assert!(
            matches!(status, 200 | 201 | 422),
            "step {step}: {status} {}\npayload: {payload}",
            got.body
        );
        if status != 201 {
            assert_eq!(
                written_rows(&destination).await,
                rows,
                "step {step}: {}",
                got.body
            );
        }
    }
}

#[tokio::test]
async fn an_imported_open_pause_closes_when_it_arrives_again_closed() {
    let source = TestApp::new().await;
    let ada = new_person(&source, "Ada").await;
    let med = new_medication(&source, "Paracetamol").await;
    let daily = schedule(&source, &ada, &med, "daily", json!({"times": ["08:00"]})).await;
    let paused = source
        .post(
            &source.hh("/medication_pause_periods"),
            &source.owner,
            json!({"medication_pause_period": {"source_type": "schedule",
                "source_id": daily.portable, "reason": "clinician_advice"}}),
        )
        .await;
    paused.assert_status(201);
    let period = paused.data()["portable_id"].as_str().unwrap().to_string();
    let open_bundle = export(&source, "?version=2").await.data().clone();
    let destination = TestApp::new().await;
    import(&destination, "/portable_imports", &open_bundle, PASSPHRASE)
        .await
        .assert_status(201);

    source
        .post(
            &source.hh(&format!("/medication_pause_periods/{period}/resume")),
            &source.owner,
            json!({}),
        )
        .await
        .assert_status(200);
    let closed_bundle = export(&source, "?version=2").await.data().clone();
    let applied = import(
        &destination,
        "/portable_imports",
        &closed_bundle,
        PASSPHRASE,
    )
    .await;
    applied.assert_status(201);
    let after = snapshot(&destination).await;
    let restored = after["records"]["medication_pause_periods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["portable_id"] == period.as_str())
        .unwrap()
        .clone();
    let original = snapshot(&source).await["records"]["medication_pause_periods"][0].clone();
    assert_eq!(restored["ended_at"], original["ended_at"]);
    assert_eq!(restored["imported_context"], true);
    let schedule = after["records"]["schedules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["portable_id"] == daily.portable.as_str())
        .unwrap()
        .clone();
    assert_eq!(schedule["active"], true);

    // A native open period is never closed by an import.
    let native = destination
        .post(
            &destination.hh("/medication_pause_periods"),
            &destination.owner,
            json!({"medication_pause_period": {"source_type": "schedule",
                "source_id": daily.portable, "reason": "side_effects"}}),
        )
        .await;
    native.assert_status(201);
    let native_id = native.data()["portable_id"].as_str().unwrap().to_string();
    let dry = import(
        &destination,
        "/portable_imports/dry_run",
        &closed_bundle,
        PASSPHRASE,
    )
    .await;
    dry.assert_status(200);
    assert_eq!(dry.data()["errors"], json!([]), "{}", dry.body);
    let still = snapshot(&destination).await;
    let native_after = still["records"]["medication_pause_periods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["portable_id"] == native_id.as_str())
        .unwrap()
        .clone();
    assert!(native_after["ended_at"].is_null());
}

#[tokio::test]
async fn the_importer_needs_manage_access_to_every_person_of_the_bundle_already_here() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let bundle = export(&app, "?version=2").await.data().clone();
    let (membership, token) = app
        .add_member(
            "viewer@example.org",
            pillbox::auth::Role::Member,
            Some("Vi"),
        )
        .await;
    crate::support::records::grant(&app, membership, ada.id, "view").await;
    let got = app
        .send(
            Method::POST,
            &app.hh("/portable_imports/dry_run"),
            Some(&token),
            Some(bundle.clone()),
            &[(HEADER, PASSPHRASE)],
        )
        .await;
    got.assert_status(200);
    let errors = got.data()["errors"].as_array().unwrap();
    assert!(
        errors
            .iter()
            .any(|e| e["portable_id"] == ada.portable.as_str() && e["field"] == "access"),
        "{}",
        got.body
    );
    crate::support::records::grant(&app, membership, ada.id, "manage").await;
    let got = app
        .send(
            Method::POST,
            &app.hh("/portable_imports/dry_run"),
            Some(&token),
            Some(bundle),
            &[(HEADER, PASSPHRASE)],
        )
        .await;
    got.assert_status(200);
    assert!(
        !got.data()["errors"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["portable_id"] == ada.portable.as_str()),
        "{}",
        got.body
    );
}

#[tokio::test]
async fn an_older_v2_outcome_without_a_window_end_takes_its_sources_cycle() {
    let source = TestApp::new().await;
    let ada = new_person(&source, "Ada").await;
    let med = new_medication(&source, "Paracetamol").await;
    created(
        &source,
        "/person_medications",
        json!({"person_medication": {"person_id": ada.id, "medication_id": med.id,
            "administration_kind": "routine", "dose_cycle": "weekly"}}),
    )
    .await;
    let mut payload = open(&export(&source, "?version=2").await.data().clone());
    let assignment = payload["records"]["person_medications"][0]["portable_id"].clone();
    payload["records"]["dose_occurrences"] = json!([{
        "portable_id": "0199b0a0-0000-7000-8000-0000000000d1",
        "source_type": "person_medication", "source_portable_id": assignment,
        "window_starts_on": "2026-03-02", "position": 1, "scheduled_at": null,
        "outcome": "not_taken", "reason": "away", "note": null,
        "resolved_at": "2026-03-05T10:00:00Z", "medication_take_portable_id": null}]);
    let destination = TestApp::new().await;
    import(
        &destination,
        "/portable_imports",
        &seal(&payload),
        PASSPHRASE,
    )
    .await
    .assert_status(201);
    let outcome = snapshot(&destination).await["records"]["dose_occurrences"][0].clone();
    // The week of Monday 2 March 2026 ends on Sunday 8 March.
    assert_eq!(outcome["window_starts_on"], "2026-03-02");
    assert_eq!(outcome["window_ends_on"], "2026-03-08");
    assert_eq!(outcome["resolved_at"], "2026-03-05T10:00:00.000000Z");
}

/// Import rule 8: a pause period's actor that matches no single membership
/// of the destination keeps the bundle's reference, so the period still
/// says who paused and who resumed it; the audit event names the importing
/// member apart from those original actors.
#[tokio::test]
async fn an_imported_pause_keeps_its_original_actors_when_no_member_here_matches() {
    let source = TestApp::new().await;
    let ada = new_person(&source, "Ada").await;
    let med = new_medication(&source, "Paracetamol").await;
    let morning = schedule(&source, &ada, &med, "daily", json!({"times": ["08:00"]})).await;
    let evening = schedule(&source, &ada, &med, "daily", json!({"times": ["20:00"]})).await;
    let pause = |schedule: &Ids| {
        json!({"medication_pause_period": {"source_type": "schedule",
            "source_id": schedule.portable, "reason": "clinician_advice"}})
    };
    let resume = |period: &str| format!("/medication_pause_periods/{period}/resume");
    let closed = source
        .post(
            &source.hh("/medication_pause_periods"),
            &source.owner,
            pause(&morning),
        )
        .await;
    closed.assert_status(201);
    let closed = closed.data()["portable_id"].as_str().unwrap().to_string();
    source
        .post(&source.hh(&resume(&closed)), &source.owner, json!({}))
        .await
        .assert_status(200);
    let open = source
        .post(
            &source.hh("/medication_pause_periods"),
            &source.owner,
            pause(&evening),
        )
        .await;
    open.assert_status(201);
    let open = open.data()["portable_id"].as_str().unwrap().to_string();
    // The source's owner is linked to a person of the bundle.
    let olive = snapshot(&source).await["records"]["medication_pause_periods"][0]
        ["recorded_by_person_portable_id"]
        .as_str()
        .expect("the source names who paused")
        .to_string();

    let destination = TestApp::new().await;
    let first = export(&source, "?version=2").await.data().clone();
    import(&destination, "/portable_imports", &first, PASSPHRASE)
        .await
        .assert_status(201);
    // The open period arrives again, closed by the same person.
    source
        .post(&source.hh(&resume(&open)), &source.owner, json!({}))
        .await
        .assert_status(200);
    let second = export(&source, "?version=2").await.data().clone();
    import(&destination, "/portable_imports", &second, PASSPHRASE)
        .await
        .assert_status(201);

    // Olive came over as a person without a membership here: no member
    // acted, and the original reference is kept, so the period still says
    // who paused and resumed it (by the imported person's name here) ...
    let listed = destination
        .get(
            &destination.hh("/medication_pause_periods"),
            &destination.owner,
        )
        .await;
    listed.assert_status(200);
    let periods = listed.data().as_array().unwrap();
    assert_eq!(periods.len(), 2, "{}", listed.body);
    for period in periods {
        assert_eq!(period["recorded_by_membership_id"], Value::Null);
        assert_eq!(period["resumed_by_membership_id"], Value::Null);
        assert_eq!(period["recorded_by_display_name"], "Olive Owner");
        assert_eq!(period["resumed_by_display_name"], "Olive Owner");
    }
    // ... and it travels on: the destination's own export says who paused.
    let onward = snapshot(&destination).await;
    let onward = onward["records"]["medication_pause_periods"]
        .as_array()
        .unwrap();
    assert_eq!(onward.len(), 2);
    for period in onward {
        assert_eq!(period["recorded_by_person_portable_id"], olive.as_str());
        assert_eq!(period["resumed_by_person_portable_id"], olive.as_str());
    }
    // A resume here is recorded as the member who resumes.
    let native = destination
        .post(
            &destination.hh("/medication_pause_periods"),
            &destination.owner,
            pause(&morning),
        )
        .await;
    native.assert_status(201);
    assert_eq!(
        native.data()["recorded_by_membership_id"],
        destination.owner_membership_id
    );

    let audit = destination
        .get(&destination.hh("/admin/audit_logs"), &destination.owner)
        .await;
    let imports: Vec<&Value> = audit
        .data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event_type"] == "portable.imported")
        .collect();
    assert_eq!(imports.len(), 2);
    for event in imports {
        assert_eq!(
            event["actor_membership_id"],
            destination.owner_membership_id
        );
        assert_eq!(
            event["metadata"]["imported_by_membership_id"],
            destination.owner_membership_id
        );
        assert_eq!(
            event["metadata"]["original_actor_person_portable_ids"],
            json!([olive])
        );
    }
}
