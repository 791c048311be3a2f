use std::collections::BTreeSet;

use axum::http::Method;
use pillbox::auth::Role;
use serde_json::{Value, json};

use crate::support::records::{Ids, feed, grant, new_medication, new_person};
use crate::support::{TestApp, TestResponse};

const KEYS: [&str; 19] = [
    "id",
    "portable_id",
    "source_type",
    "source_id",
    "source_numeric_id",
    "person_id",
    "person_portable_id",
    "reason",
    "note",
    "started_at",
    "ended_at",
    "created_at",
    "updated_at",
    "legacy_context",
    "imported_context",
    "recorded_by_membership_id",
    "recorded_by_display_name",
    "resumed_by_membership_id",
    "resumed_by_display_name",
];

const REASONS: [&str; 5] = [
    "clinician_advice",
    "side_effects",
    "out_of_supply",
    "other",
    "reason_not_recorded",
];

/// A person, a medication and a daily schedule for them; returns (person, schedule).
async fn scheduled(app: &TestApp) -> (Ids, Ids) {
    let person = new_person(app, "Ada").await;
    let med = new_medication(app, "Paracetamol").await;
    let created = app
        .post(
            &app.hh("/schedules"),
            &app.owner,
            json!({"schedule": {
                "person_id": person.id,
                "medication_id": med.id,
                "schedule_type": "daily",
                "schedule_config": {"times": ["08:00"]},
                "start_date": "2026-03-01",
            }}),
        )
        .await;
    created.assert_status(201);
    (person, Ids::of(created.data()))
}

fn pause_body(source_type: &str, source_id: &str, reason: &str) -> Value {
    json!({"medication_pause_period": {
        "source_type": source_type, "source_id": source_id, "reason": reason,
    }})
}

async fn pause(app: &TestApp, token: &str, schedule: &Ids, reason: &str) -> TestResponse {
    app.post(
        &app.hh("/medication_pause_periods"),
        token,
        pause_body("schedule", &schedule.portable, reason),
    )
    .await
}

fn resume_path(app: &TestApp, period: &str) -> String {
    app.hh(&format!("/medication_pause_periods/{period}/resume"))
}

async fn resume(app: &TestApp, token: &str, period: &str) -> TestResponse {
    app.post(&resume_path(app, period), token, json!({})).await
}

async fn history(app: &TestApp, token: &str, schedule: &Ids) -> TestResponse {
    let list = app
        .get(
            &app.hh(&format!(
                "/medication_pause_periods?source_type=schedule&source_id={}",
                schedule.portable
            )),
            token,
        )
        .await;
    list.assert_status(200);
    list
}

async fn schedule(app: &TestApp, schedule: &Ids) -> TestResponse {
    let got = app
        .get(&app.hh(&format!("/schedules/{}", schedule.id)), &app.owner)
        .await;
    got.assert_status(200);
    got
}

fn open_count(list: &TestResponse) -> usize {
    list.data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["ended_at"].is_null())
        .count()
}

/// Rows of the periods table (all households).
async fn period_count(app: &TestApp) -> i64 {
    app.db
        .read(|conn| {
            Ok(
                conn.query_row("SELECT count(*) FROM medication_pause_periods", [], |r| {
                    r.get(0)
                })?,
            )
        })
        .await
        .unwrap()
}

async fn revoke(app: &TestApp, membership_id: i64) {
    app.db
        .write(move |conn| {
            conn.execute(
                "UPDATE person_access_grants SET revoked_at = ?2 WHERE membership_id = ?1",
                rusqlite::params![membership_id, pillbox::domain::Timestamp::now()],
            )?;
            Ok(())
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn pause_resume_pause_keeps_one_period_open_at_a_time() {
    let app = TestApp::new().await;
    let (ada, sched) = scheduled(&app).await;
    let before = schedule(&app, &sched).await;

    let first = app
        .post(
            &app.hh("/medication_pause_periods"),
            &app.owner,
            json!({"medication_pause_period": {"source_type": "schedule",
                "source_id": sched.portable, "reason": "side_effects", "note": " rash "}}),
        )
        .await;
    first.assert_status(201);
    let p = first.data().clone();
    let keys: BTreeSet<&str> = p.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, KEYS.into_iter().collect());
    assert_eq!(p["id"], p["portable_id"]);
    assert_eq!(p["source_type"], "schedule");
    assert_eq!(p["source_id"], sched.portable.as_str());
    assert_eq!(p["source_numeric_id"], sched.id);
    assert_eq!(p["person_id"], ada.id);
    assert_eq!(p["person_portable_id"], ada.portable.as_str());
    assert_eq!(p["reason"], "side_effects");
    assert_eq!(p["note"], "rash");
    assert!(p["started_at"].is_string());
    assert_eq!(p["ended_at"], Value::Null);
    assert_eq!(p["legacy_context"], false);
    assert_eq!(p["imported_context"], false);
    assert_eq!(p["recorded_by_membership_id"], app.owner_membership_id);
    assert_eq!(p["recorded_by_display_name"], "Olive Owner");
    assert_eq!(p["resumed_by_membership_id"], Value::Null);
    let first_id = p["id"].as_str().unwrap().to_string();
    assert!(first.etag().starts_with(&format!("\"{first_id}.")));

    // The schedule is paused: inactive, a new version, the open period attached.
    let paused = schedule(&app, &sched).await;
    assert_eq!(paused.data()["active"], false);
    assert_ne!(paused.etag(), before.etag());
    assert_eq!(paused.data()["current_pause_period"], p);
    let listed = app.get(&app.hh("/schedules"), &app.owner).await;
    assert_eq!(listed.data()[0]["current_pause_period"]["id"], first_id);

    // A second open pause on the same source is refused.
    pause(&app, &app.owner, &sched, "other")
        .await
        .assert_error(409, "pause_period_open");

    let resumed = app
        .send(
            Method::POST,
            &resume_path(&app, &first_id),
            Some(&app.owner),
            None,
            &[("if-match", &first.etag())],
        )
        .await;
    resumed.assert_status(200);
    assert!(resumed.data()["ended_at"].is_string());
    assert_eq!(
        resumed.data()["resumed_by_membership_id"],
        app.owner_membership_id
    );
    assert_eq!(resumed.data()["resumed_by_display_name"], "Olive Owner");
    assert_ne!(resumed.etag(), first.etag());
    let active = schedule(&app, &sched).await;
    assert_eq!(active.data()["active"], true);
    assert_eq!(active.data()["current_pause_period"], Value::Null);

    let second = pause(&app, &app.owner, &sched, "out_of_supply").await;
    second.assert_status(201);
    let list = history(&app, &app.owner, &sched).await;
    assert_eq!(list.body["meta"]["total_count"], 2);
    assert_eq!(open_count(&list), 1);
    // Newest first: the open one leads.
    assert_eq!(list.data()[0]["id"], second.data()["id"]);
    assert_eq!(list.data()[1]["id"], first_id.as_str());

    let second_id = second.data()["id"].as_str().unwrap().to_string();
    resume(&app, &app.owner, &second_id)
        .await
        .assert_status(200);
    pause(&app, &app.owner, &sched, "clinician_advice")
        .await
        .assert_status(201);
    let list = history(&app, &app.owner, &sched).await;
    assert_eq!(list.body["meta"]["total_count"], 3);
    assert_eq!(open_count(&list), 1);
    assert_eq!(list.data()[0]["reason"], "clinician_advice");

    // The change feed: a create and an update (resume) per period, person
    // scoped; the schedule's active flag changes are updates of it.
    let period_row: i64 = {
        let portable = first_id.clone();
        app.db
            .read(move |conn| {
                Ok(conn.query_row(
                    "SELECT id FROM medication_pause_periods WHERE portable_id = ?1",
                    [portable],
                    |r| r.get(0),
                )?)
            })
            .await
            .unwrap()
    };
    assert_eq!(
        feed(&app, "MedicationPausePeriod", period_row).await,
        vec![
            ("create".to_string(), Some(ada.id)),
            ("update".to_string(), Some(ada.id))
        ]
    );
    let schedule_feed = feed(&app, "Schedule", sched.id).await;
    assert_eq!(schedule_feed.len(), 1 + 5, "{schedule_feed:?}");
}

#[tokio::test]
async fn a_resume_retry_aimed_at_an_older_period_leaves_the_newer_one_open() {
    let app = TestApp::new().await;
    let (_, sched) = scheduled(&app).await;
    let old = pause(&app, &app.owner, &sched, "other").await;
    let old_id = old.data()["id"].as_str().unwrap().to_string();
    resume(&app, &app.owner, &old_id).await.assert_status(200);
    let newer = pause(&app, &app.owner, &sched, "side_effects").await;
    newer.assert_status(201);

    // The retry of the first resume (no key) is refused and changes nothing.
    resume(&app, &app.owner, &old_id)
        .await
        .assert_error(409, "pause_period_closed");
    let again = app
        .send(
            Method::POST,
            &resume_path(&app, &old_id),
            Some(&app.owner),
            None,
            &[("if-match", &old.etag())],
        )
        .await;
    again.assert_error(409, "pause_period_closed");
    let current = schedule(&app, &sched).await;
    assert_eq!(current.data()["active"], false);
    assert_eq!(
        current.data()["current_pause_period"]["id"],
        newer.data()["id"]
    );

    // A stale If-Match on the open period is refused too.
    let newer_id = newer.data()["id"].as_str().unwrap();
    app.send(
        Method::POST,
        &resume_path(&app, newer_id),
        Some(&app.owner),
        None,
        &[("if-match", "\"stale.1\"")],
    )
    .await
    .assert_error(409, "edit_conflict");
    assert_eq!(open_count(&history(&app, &app.owner, &sched).await), 1);

    // Unknown and malformed period ids are not found.
    resume(&app, &app.owner, "0192a5b0-0000-7000-8000-000000000000")
        .await
        .assert_error(404, "not_found");
    resume(&app, &app.owner, "not-a-uuid")
        .await
        .assert_error(404, "not_found");
}

#[tokio::test]
async fn deprecated_pause_and_resume_use_pause_periods() {
    let app = TestApp::new().await;
    let (_, sched) = scheduled(&app).await;
    let pause_path = app.hh(&format!("/schedules/{}/pause", sched.id));
    let resume_path = app.hh(&format!("/schedules/{}/resume", sched.portable));

    // An empty body (no body at all) is accepted.
    let paused = app
        .send(Method::PATCH, &pause_path, Some(&app.owner), None, &[])
        .await;
    paused.assert_status(200);
    assert_eq!(paused.data()["id"], sched.id);
    assert_eq!(paused.data()["active"], false);
    let period = &paused.data()["current_pause_period"];
    assert_eq!(period["reason"], "reason_not_recorded");
    assert_eq!(period["note"], Value::Null);
    assert!(period["started_at"].is_string());
    assert_eq!(paused.etag(), schedule(&app, &sched).await.etag());

    app.patch(&pause_path, &app.owner, json!({}), None)
        .await
        .assert_error(409, "pause_period_open");
    app.patch(&pause_path, &app.owner, json!({"reason": "other"}), None)
        .await
        .assert_status(422);

    let resumed = app
        .patch(&resume_path, &app.owner, json!({}), Some(&paused.etag()))
        .await;
    resumed.assert_status(200);
    assert_eq!(resumed.data()["active"], true);
    assert_eq!(resumed.data()["current_pause_period"], Value::Null);
    let list = history(&app, &app.owner, &sched).await;
    assert_eq!(list.body["meta"]["total_count"], 1);
    assert!(list.data()[0]["ended_at"].is_string());
    app.send(Method::PATCH, &resume_path, Some(&app.owner), None, &[])
        .await
        .assert_error(409, "pause_period_not_open");

    // The same for a direct assignment.
    let person = new_person(&app, "Bea").await;
    let med = new_medication(&app, "Ibuprofen").await;
    let assignment = app
        .post(
            &app.hh("/person_medications"),
            &app.owner,
            json!({"person_medication": {"person_id": person.id, "medication_id": med.id}}),
        )
        .await;
    assignment.assert_status(201);
    let a = Ids::of(assignment.data());
    let paused = app
        .patch(
            &app.hh(&format!("/person_medications/{}/pause", a.id)),
            &app.owner,
            json!({}),
            None,
        )
        .await;
    paused.assert_status(200);
    assert_eq!(paused.data()["active"], false);
    assert_eq!(
        paused.data()["current_pause_period"]["source_type"],
        "person_medication"
    );
    assert_eq!(
        paused.data()["current_pause_period"]["source_id"],
        a.portable.as_str()
    );
    let got = app
        .get(
            &app.hh(&format!("/person_medications/{}", a.portable)),
            &app.owner,
        )
        .await;
    assert_eq!(
        got.data()["current_pause_period"],
        paused.data()["current_pause_period"]
    );
    // The new operation resumes what the old one paused.
    let period_id = paused.data()["current_pause_period"]["id"]
        .as_str()
        .unwrap();
    resume(&app, &app.owner, period_id).await.assert_status(200);
    let resumed = app
        .send(
            Method::PATCH,
            &app.hh(&format!("/person_medications/{}/resume", a.id)),
            Some(&app.owner),
            None,
            &[],
        )
        .await;
    resumed.assert_error(409, "pause_period_not_open");

    // Marked deprecated in the document, pointing at the replacements.
    let doc = app.document();
    for (path, method) in [
        ("/households/{household_id}/schedules/{id}/pause", "patch"),
        ("/households/{household_id}/schedules/{id}/resume", "patch"),
        (
            "/households/{household_id}/person_medications/{id}/pause",
            "patch",
        ),
        (
            "/households/{household_id}/person_medications/{id}/resume",
            "patch",
        ),
    ] {
        let op = &doc["paths"][path][method];
        assert_eq!(op["deprecated"], true, "{path}");
        assert!(
            op["description"]
                .as_str()
                .unwrap()
                .contains("MedicationPausePeriod"),
            "{path}"
        );
    }
    assert!(
        doc["paths"]["/households/{household_id}/medication_pause_periods"]["post"]
            .get("deprecated")
            .is_none()
    );
}

#[tokio::test]
async fn a_retired_schedule_cannot_be_paused_but_its_history_stays_visible() {
    let app = TestApp::new().await;
    let (ada, sched) = scheduled(&app).await;
    let (viewer_membership, viewer) = app
        .add_member("viewer@example.org", Role::Member, None)
        .await;
    grant(&app, viewer_membership, ada.id, "view").await;

    let first = pause(&app, &app.owner, &sched, "other").await;
    let first_id = first.data()["id"].as_str().unwrap().to_string();
    resume(&app, &app.owner, &first_id).await.assert_status(200);
    let open = pause(&app, &app.owner, &sched, "side_effects").await;
    open.assert_status(201);

    app.delete(
        &app.hh(&format!("/schedules/{}", sched.id)),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);

    pause(&app, &app.owner, &sched, "other")
        .await
        .assert_error(404, "not_found");
    app.send(
        Method::PATCH,
        &app.hh(&format!("/schedules/{}/pause", sched.id)),
        Some(&app.owner),
        None,
        &[],
    )
    .await
    .assert_error(404, "not_found");
    app.send(
        Method::PATCH,
        &app.hh(&format!("/schedules/{}/resume", sched.id)),
        Some(&app.owner),
        None,
        &[],
    )
    .await
    .assert_error(404, "not_found");
    // Its period cannot be resumed either: the source is gone.
    resume(&app, &app.owner, open.data()["id"].as_str().unwrap())
        .await
        .assert_error(404, "not_found");

    for token in [&app.owner, &viewer] {
        let list = history(&app, token, &sched).await;
        assert_eq!(list.body["meta"]["total_count"], 2);
        assert_eq!(list.data()[1]["id"], first_id.as_str());
        assert_eq!(list.data()[1]["source_id"], sched.portable.as_str());
    }
}

#[tokio::test]
async fn validation_of_bodies_and_filters() {
    let app = TestApp::new().await;
    let (_, sched) = scheduled(&app).await;
    let path = app.hh("/medication_pause_periods");
    let fields = |r: &TestResponse| -> Vec<String> {
        r.body["error"]["errors"]
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    };

    let r = app
        .get(&format!("{path}?source_type=schedule"), &app.owner)
        .await;
    r.assert_error(422, "validation_failed");
    assert_eq!(fields(&r), ["source_id"]);
    let r = app
        .get(&format!("{path}?source_id={}", sched.portable), &app.owner)
        .await;
    r.assert_error(422, "validation_failed");
    assert_eq!(fields(&r), ["source_type"]);
    let r = app
        .get(&format!("{path}?source_type=pill&source_id=12"), &app.owner)
        .await;
    r.assert_status(422);
    assert_eq!(fields(&r), ["source_id", "source_type"]);

    for (body, field) in [
        (
            json!({"medication_pause_period": {"source_type": "schedule", "source_id": sched.portable}}),
            "reason",
        ),
        (pause_body("schedule", &sched.portable, "bored"), "reason"),
        (
            pause_body("schedule", &sched.id.to_string(), "other"),
            "source_id",
        ),
        (
            pause_body("medicine", &sched.portable, "other"),
            "source_type",
        ),
        (
            json!({"medication_pause_period": {"source_type": "schedule", "source_id": sched.portable,
                "reason": "other", "started_at": "2020-01-01T00:00:00Z"}}),
            "started_at",
        ),
        (
            json!({"medication_pause_period": {"source_type": "schedule", "source_id": sched.portable,
                "reason": "other", "note": "x".repeat(1001)}}),
            "note",
        ),
    ] {
        let r = app.post(&path, &app.owner, body).await;
        r.assert_error(422, "validation_failed");
        assert_eq!(fields(&r), [field]);
    }
    // A source of the wrong type is not found.
    app.post(
        &path,
        &app.owner,
        pause_body("person_medication", &sched.portable, "other"),
    )
    .await
    .assert_error(404, "not_found");
    // Resume takes no attributes.
    let p = pause(&app, &app.owner, &sched, "other").await;
    let id = p.data()["id"].as_str().unwrap();
    app.post(
        &resume_path(&app, id),
        &app.owner,
        json!({"ended_at": "2020-01-01T00:00:00Z"}),
    )
    .await
    .assert_error(422, "validation_failed");
    // A bad Idempotency-Key is refused.
    app.send(
        Method::POST,
        &resume_path(&app, id),
        Some(&app.owner),
        None,
        &[("idempotency-key", "has spaces")],
    )
    .await
    .assert_error(422, "validation_failed");
    assert_eq!(period_count(&app).await, 1);
}

#[tokio::test]
async fn view_and_record_grants_cannot_pause_and_no_grant_is_not_found() {
    let app = TestApp::new().await;
    let (ada, sched) = scheduled(&app).await;
    let open = pause(&app, &app.owner, &sched, "other").await;
    let open_id = open.data()["id"].as_str().unwrap().to_string();
    let (member, token) = app
        .add_member("carer@example.org", Role::Member, None)
        .await;

    // No grant: nothing to see.
    pause(&app, &token, &sched, "other")
        .await
        .assert_error(404, "not_found");
    resume(&app, &token, &open_id)
        .await
        .assert_error(404, "not_found");
    let list = app.get(&app.hh("/medication_pause_periods"), &token).await;
    list.assert_status(200);
    assert_eq!(list.body["meta"]["total_count"], 0);

    for level in ["view", "record"] {
        grant(&app, member, ada.id, level).await;
        let list = app.get(&app.hh("/medication_pause_periods"), &token).await;
        assert_eq!(list.body["meta"]["total_count"], 1, "{level}");
        resume(&app, &token, &open_id)
            .await
            .assert_error(403, "forbidden");
        app.send(
            Method::PATCH,
            &app.hh(&format!("/schedules/{}/resume", sched.id)),
            Some(&token),
            None,
            &[],
        )
        .await
        .assert_error(403, "forbidden");
    }
    resume(&app, &app.owner, &open_id).await.assert_status(200);
    for level in ["view", "record"] {
        grant(&app, member, ada.id, level).await;
        pause(&app, &token, &sched, "other")
            .await
            .assert_error(403, "forbidden");
    }

    grant(&app, member, ada.id, "manage").await;
    let mine = pause(&app, &token, &sched, "other").await;
    mine.assert_status(201);
    assert_eq!(mine.data()["recorded_by_membership_id"], member);
    // No account display name or linked person: the email names the actor.
    assert_eq!(mine.data()["recorded_by_display_name"], "carer@example.org");
    resume(&app, &token, mine.data()["id"].as_str().unwrap())
        .await
        .assert_status(200);
}

#[tokio::test]
async fn an_idempotency_key_replays_the_saved_response() {
    let app = TestApp::new().await;
    let (_, sched) = scheduled(&app).await;
    let path = app.hh("/medication_pause_periods");
    let body = pause_body("schedule", &sched.portable, "side_effects");
    let key = [("idempotency-key", "pause-1")];

    let first = app
        .send(
            Method::POST,
            &path,
            Some(&app.owner),
            Some(body.clone()),
            &key,
        )
        .await;
    first.assert_status(201);
    // The same body with other spacing and key order is the same request.
    let reordered = json!({"medication_pause_period": {
        "reason": "side_effects", "source_id": sched.portable, "source_type": "schedule"}});
    let replay = app
        .send(Method::POST, &path, Some(&app.owner), Some(reordered), &key)
        .await;
    assert_eq!(replay.status, first.status);
    assert_eq!(replay.body, first.body);
    assert_eq!(replay.etag(), first.etag());
    assert_eq!(replay.header("content-type"), first.header("content-type"));
    assert_eq!(period_count(&app).await, 1);
    let feed_rows: i64 = app
        .db
        .read(|conn| {
            Ok(conn.query_row(
                "SELECT count(*) FROM change_feed WHERE record_type = 'MedicationPausePeriod'",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(feed_rows, 1);

    // The same key with a different body.
    app.send(
        Method::POST,
        &path,
        Some(&app.owner),
        Some(pause_body("schedule", &sched.portable, "other")),
        &key,
    )
    .await
    .assert_error(409, "idempotency_key_reused");
    // ... or on another operation.
    let period_id = first.data()["id"].as_str().unwrap().to_string();
    app.send(
        Method::POST,
        &resume_path(&app, &period_id),
        Some(&app.owner),
        None,
        &key,
    )
    .await
    .assert_error(409, "idempotency_key_reused");

    // Resume with a key: the retry gets the saved 200, not a 409.
    let etag = first.etag();
    let resume_key = [("idempotency-key", "resume-1"), ("if-match", etag.as_str())];
    let resumed = app
        .send(
            Method::POST,
            &resume_path(&app, &period_id),
            Some(&app.owner),
            None,
            &resume_key,
        )
        .await;
    resumed.assert_status(200);
    let again = app
        .send(
            Method::POST,
            &resume_path(&app, &period_id),
            Some(&app.owner),
            None,
            &resume_key,
        )
        .await;
    assert_eq!(again.status, resumed.status);
    assert_eq!(again.body, resumed.body);
    assert_eq!(again.etag(), resumed.etag());
    // Without the key the same retry is a conflict.
    resume(&app, &app.owner, &period_id)
        .await
        .assert_error(409, "pause_period_closed");

    // Keys belong to a credential: another token's same key is a new request.
    let (_, other) = app
        .add_member("admin@example.org", Role::Administrator, None)
        .await;
    app.send(Method::POST, &path, Some(&other), Some(body.clone()), &key)
        .await
        .assert_status(201);
    assert_eq!(period_count(&app).await, 2);
    // The first token's saved response still replays.
    let replay = app
        .send(Method::POST, &path, Some(&app.owner), Some(body), &key)
        .await;
    assert_eq!(replay.body, first.body);
}

#[tokio::test]
async fn a_revoked_grant_never_gets_the_saved_result() {
    let app = TestApp::new().await;
    let (ada, sched) = scheduled(&app).await;
    let (member, token) = app
        .add_member("carer@example.org", Role::Member, None)
        .await;
    grant(&app, member, ada.id, "manage").await;
    let path = app.hh("/medication_pause_periods");
    let body = pause_body("schedule", &sched.portable, "clinician_advice");
    let key = [("idempotency-key", "queued-write-7")];

    let first = app
        .send(Method::POST, &path, Some(&token), Some(body.clone()), &key)
        .await;
    first.assert_status(201);

    // Down to view access: visible but not allowed.
    grant(&app, member, ada.id, "view").await;
    app.send(Method::POST, &path, Some(&token), Some(body.clone()), &key)
        .await
        .assert_error(403, "forbidden");
    // No grant at all: not found.
    revoke(&app, member).await;
    app.send(Method::POST, &path, Some(&token), Some(body.clone()), &key)
        .await
        .assert_error(404, "not_found");
    // Restored access gets the saved response again.
    grant(&app, member, ada.id, "manage").await;
    let replay = app
        .send(Method::POST, &path, Some(&token), Some(body), &key)
        .await;
    assert_eq!(replay.body, first.body);
    assert_eq!(period_count(&app).await, 1);
}

#[tokio::test]
async fn expired_keys_are_ignored_and_purged() {
    let app = TestApp::new().await;
    let (_, sched) = scheduled(&app).await;
    let path = app.hh("/medication_pause_periods");
    let key = [("idempotency-key", "old-key")];
    let first = app
        .send(
            Method::POST,
            &path,
            Some(&app.owner),
            Some(pause_body("schedule", &sched.portable, "other")),
            &key,
        )
        .await;
    first.assert_status(201);
    resume(&app, &app.owner, first.data()["id"].as_str().unwrap())
        .await
        .assert_status(200);
    // Age the saved response past the window (and add another stale row).
    app.db
        .write(|conn| {
            conn.execute(
                "UPDATE idempotency_keys SET created_at = '2020-01-01T00:00:00.000000Z'",
                [],
            )?;
            conn.execute(
                "INSERT INTO idempotency_keys (household_id, credential, key, method, path,
                     fingerprint, status, body, created_at)
                 SELECT household_id, 'app_token:999', 'stale', method, path, fingerprint,
                     status, body, created_at FROM idempotency_keys",
                [],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    // The same key with another body is now simply a new request.
    let second = app
        .send(
            Method::POST,
            &path,
            Some(&app.owner),
            Some(pause_body("schedule", &sched.portable, "side_effects")),
            &key,
        )
        .await;
    second.assert_status(201);
    assert_ne!(second.body, first.body);
    let rows: Vec<String> = app
        .db
        .read(|conn| {
            let mut stmt = conn.prepare("SELECT key FROM idempotency_keys")?;
            let rows = stmt
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .await
        .unwrap();
    assert_eq!(rows, ["old-key"]);
}

#[tokio::test]
async fn lists_are_newest_first_and_paged() {
    let app = TestApp::new().await;
    let (_, sched) = scheduled(&app).await;
    let mut made = Vec::new();
    for reason in ["other", "side_effects", "out_of_supply"] {
        let p = pause(&app, &app.owner, &sched, reason).await;
        p.assert_status(201);
        let id = p.data()["id"].as_str().unwrap().to_string();
        if reason != "out_of_supply" {
            resume(&app, &app.owner, &id).await.assert_status(200);
        }
        made.push(id);
    }
    made.reverse();
    let page1 = app
        .get(&app.hh("/medication_pause_periods?per_page=2"), &app.owner)
        .await;
    page1.assert_status(200);
    assert_eq!(
        page1.body["meta"],
        json!({"page": 1, "per_page": 2, "total_count": 3})
    );
    let page2 = app
        .get(
            &app.hh("/medication_pause_periods?per_page=2&page=2"),
            &app.owner,
        )
        .await;
    let got: Vec<&str> = page1
        .data()
        .as_array()
        .unwrap()
        .iter()
        .chain(page2.data().as_array().unwrap())
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(got, made);
    app.get(&app.hh("/medication_pause_periods?per_page=0"), &app.owner)
        .await
        .assert_error(422, "validation_failed");
}

#[tokio::test]
async fn the_capability_document_lists_the_five_reasons() {
    let app = TestApp::new().await;
    let caps = app
        .send(Method::GET, "/api/v1/capabilities", None, None, &[])
        .await;
    caps.assert_status(200);
    assert_eq!(
        caps.data()["medication_pause_periods"]["supported"],
        json!(REASONS)
    );
    // Every listed reason is accepted.
    let (_, sched) = scheduled(&app).await;
    for reason in REASONS {
        let p = pause(&app, &app.owner, &sched, reason).await;
        p.assert_status(201);
        assert_eq!(p.data()["reason"], reason);
        resume(&app, &app.owner, p.data()["id"].as_str().unwrap())
            .await
            .assert_status(200);
    }
}
