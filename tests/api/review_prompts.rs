//! Medication review prompts: evidence from a small openFDA label file, the
//! pass that pairs each person's active medicines, the queue and reviews.

use std::path::PathBuf;
use std::time::Duration;

use axum::http::Method;
use pillbox::auth::Role;
use pillbox::reports::evidence::{self, openfda};
use pillbox::reports::review_prompts::{pass, task};
use serde_json::{Value, json};

use crate::support::TestApp;
use crate::support::records::{Ids, grant, new_person};

pub fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/openfda_labels.json")
}

/// Imports the fixture label file through the rule `pillbox evidence import` uses.
pub async fn import_fixture(app: &TestApp) {
    let mut batch = Vec::new();
    let file = std::fs::File::open(fixture()).unwrap();
    openfda::read_labels(std::io::BufReader::new(file), &mut |label| {
        batch.extend(openfda::evidence_of(label));
        Ok(())
    })
    .unwrap();
    assert_eq!(batch.len(), 3, "three labels have interaction text");
    app.db
        .write(move |tx| evidence::import_batch(tx, &batch))
        .await
        .unwrap();
}

/// Runs the pass for everyone, as the background task does.
pub async fn run_pass(app: &TestApp) -> usize {
    app.db.write(pass::run_all).await.unwrap()
}

/// A medication known only by its pack name.
pub async fn new_medication(app: &TestApp, name: &str) -> Ids {
    let created = app
        .post(
            &app.hh("/medications"),
            &app.owner,
            json!({"medication": {"name": name, "dose_amount": "1", "dose_unit": "tablet"}}),
        )
        .await;
    created.assert_status(201);
    Ids {
        id: created.id(),
        portable: created.data()["portable_id"].as_str().unwrap().into(),
    }
}

pub async fn daily(app: &TestApp, person: &Ids, med: &Ids) -> Ids {
    let created = app
        .post(
            &app.hh("/schedules"),
            &app.owner,
            json!({"schedule": {
                "person_id": person.id,
                "medication_id": med.id,
                "schedule_type": "daily",
                "schedule_config": {"times": ["08:00"]},
                "start_date": "2026-01-01",
            }}),
        )
        .await;
    created.assert_status(201);
    Ids {
        id: created.id(),
        portable: created.data()["portable_id"].as_str().unwrap().into(),
    }
}

/// A person taking Sertraline and Warfarin (named together by the
/// sertraline label) and the two medicines.
pub async fn sertraline_and_warfarin(app: &TestApp, name: &str) -> (Ids, Ids, Ids) {
    let person = new_person(app, name).await;
    let sertraline = new_medication(app, "Sertraline 50mg tablets").await;
    let warfarin = new_medication(app, "Warfarin 1mg tablets").await;
    daily(app, &person, &sertraline).await;
    daily(app, &person, &warfarin).await;
    (person, sertraline, warfarin)
}

async fn prompts_of(app: &TestApp, token: &str, person: &Ids, query: &str) -> Vec<Value> {
    let listed = app
        .get(
            &app.hh(&format!(
                "/medication_review_prompts?person_id={}&per_page=100{query}",
                person.id
            )),
            token,
        )
        .await;
    listed.assert_status(200);
    assert_eq!(listed.header("cache-control"), Some("no-store"));
    listed.data().as_array().unwrap().clone()
}

async fn prompt_count(app: &TestApp) -> i64 {
    app.db
        .read(|c| {
            Ok(
                c.query_row("SELECT count(*) FROM medication_review_prompts", [], |r| {
                    r.get(0)
                })?,
            )
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn a_pair_named_by_the_evidence_gets_one_prompt_and_never_a_second() {
    let app = TestApp::new().await;
    import_fixture(&app).await;
    let (person, sertraline, warfarin) = sertraline_and_warfarin(&app, "Zoë Ångström").await;
    assert_eq!(run_pass(&app).await, 1);

    let prompts = prompts_of(&app, &app.owner, &person, "").await;
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    let prompt = &prompts[0];
    assert_eq!(prompt["review_status"], "pending");
    assert_eq!(prompt["priority"], "medium");
    assert_eq!(prompt["medication_id"], sertraline.id);
    assert_eq!(prompt["other_medication_id"], warfarin.id);
    let evidence = &prompt["evidence"];
    assert_eq!(evidence["source_name"], "openFDA drug label");
    assert_eq!(
        evidence["record_id"],
        "0f0c5f1e-0000-4000-8000-000000000001"
    );
    assert_eq!(
        evidence["url"],
        "https://api.fda.gov/drug/label.json?search=set_id:0f0c5f1e-0000-4000-8000-000000000001"
    );
    assert_eq!(evidence["version"], "42");
    assert_eq!(evidence["effective_date"], "2024-01-15");
    assert_eq!(evidence["matched_term"], "warfarin");
    assert_eq!(
        evidence["ingredient_names"],
        json!(["SERTRALINE HYDROCHLORIDE"])
    );
    assert_eq!(evidence["product_names"], json!(["Zoloft"]));
    assert!(
        evidence["excerpt"]
            .as_str()
            .unwrap()
            .contains("Warfarin Sodium"),
        "{evidence}"
    );

    // A second pass, and a re-import of the same file, make nothing new.
    assert_eq!(run_pass(&app).await, 0);
    import_fixture(&app).await;
    assert_eq!(run_pass(&app).await, 0);
    assert_eq!(prompt_count(&app).await, 1);

    // One prompt, got by id with its ETag.
    let got = app
        .get(
            &app.hh(&format!("/medication_review_prompts/{}", prompt["id"])),
            &app.owner,
        )
        .await;
    got.assert_status(200);
    assert_eq!(got.data(), prompt);
    assert!(got.etag().starts_with('"'));
    // Each queue entry carries its ETag, so it can be reviewed straight away.
    assert_eq!(prompt["etag"], got.etag());
}

#[tokio::test]
async fn an_unrelated_pair_gets_no_prompt() {
    let app = TestApp::new().await;
    import_fixture(&app).await;
    let person = new_person(&app, "Una Related").await;
    let sertraline = new_medication(&app, "Sertraline 50mg tablets").await;
    let paracetamol = new_medication(&app, "Paracetamol 500mg tablets").await;
    daily(&app, &person, &sertraline).await;
    daily(&app, &person, &paracetamol).await;
    assert_eq!(run_pass(&app).await, 0);
    assert!(prompts_of(&app, &app.owner, &person, "").await.is_empty());
}

#[tokio::test]
async fn a_retired_schedule_makes_no_new_prompt() {
    let app = TestApp::new().await;
    import_fixture(&app).await;
    let person = new_person(&app, "Rita Retired").await;
    let sertraline = new_medication(&app, "Sertraline 50mg tablets").await;
    let warfarin = new_medication(&app, "Warfarin 1mg tablets").await;
    daily(&app, &person, &sertraline).await;
    let stopped = daily(&app, &person, &warfarin).await;
    app.delete(
        &app.hh(&format!("/schedules/{}", stopped.id)),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    assert_eq!(run_pass(&app).await, 0);
    assert!(prompts_of(&app, &app.owner, &person, "").await.is_empty());
}

#[tokio::test]
async fn a_later_pass_never_reopens_a_hidden_prompt() {
    let app = TestApp::new().await;
    import_fixture(&app).await;
    let (person, ..) = sertraline_and_warfarin(&app, "Hugo Hidden").await;
    run_pass(&app).await;
    let prompt = prompts_of(&app, &app.owner, &person, "").await[0].clone();
    let path = app.hh(&format!("/medication_review_prompts/{}", prompt["id"]));
    let etag = app.get(&path, &app.owner).await.etag();
    app.patch(
        &path,
        &app.owner,
        json!({"medication_review_prompt": {"review_status": "hidden"}}),
        Some(&etag),
    )
    .await
    .assert_status(200);
    assert_eq!(run_pass(&app).await, 0);
    // Hidden prompts leave the queue unless asked for.
    assert!(prompts_of(&app, &app.owner, &person, "").await.is_empty());
    let shown = prompts_of(&app, &app.owner, &person, "&show_hidden=1").await;
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0]["review_status"], "hidden");
    let filtered = prompts_of(&app, &app.owner, &person, "&review_status=hidden").await;
    assert_eq!(filtered.len(), 1);
    assert!(
        prompts_of(&app, &app.owner, &person, "&priority=high")
            .await
            .is_empty()
    );
    assert_eq!(
        prompts_of(
            &app,
            &app.owner,
            &person,
            "&priority=medium&show_hidden=true"
        )
        .await
        .len(),
        1
    );
}

#[tokio::test]
async fn the_background_task_follows_schedule_changes() {
    let app = TestApp::new().await;
    import_fixture(&app).await;
    let watcher = task::spawn(app.db.clone());
    let (person, ..) = sertraline_and_warfarin(&app, "Bea Background").await;
    let mut found = Vec::new();
    for _ in 0..100 {
        found = prompts_of(&app, &app.owner, &person, "").await;
        if !found.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    watcher.abort();
    assert_eq!(
        found.len(),
        1,
        "the task made the prompt after the schedules were created"
    );
}

#[tokio::test]
async fn the_queue_lists_only_people_the_caller_may_view() {
    let app = TestApp::new().await;
    import_fixture(&app).await;
    let (person, ..) = sertraline_and_warfarin(&app, "Vic Visible").await;
    run_pass(&app).await;
    let (membership, token) = app
        .add_member("viewer@example.org", Role::Member, Some("Viewer"))
        .await;
    let listed = app.get(&app.hh("/medication_review_prompts"), &token).await;
    listed.assert_status(200);
    assert_eq!(listed.body["meta"]["total_count"], 0, "{}", listed.body);
    let prompt = prompts_of(&app, &app.owner, &person, "").await[0].clone();
    app.get(
        &app.hh(&format!("/medication_review_prompts/{}", prompt["id"])),
        &token,
    )
    .await
    .assert_error(404, "not_found");
    grant(&app, membership, person.id, "view").await;
    assert_eq!(prompts_of(&app, &token, &person, "").await.len(), 1);
    app.get(
        &app.hh("/medication_review_prompts?review_status=open"),
        &token,
    )
    .await
    .assert_error(422, "validation_failed");
    app.get(&app.hh("/medication_review_prompts?per_page=101"), &token)
        .await
        .assert_error(422, "validation_failed");
}

async fn audit_count(app: &TestApp, event_type: &'static str) -> i64 {
    app.db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT count(*) FROM audit_events WHERE event_type = ?1",
                [event_type],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn reviews_need_manage_access_the_current_etag_and_practitioner_details() {
    let app = TestApp::new().await;
    import_fixture(&app).await;
    let (person, ..) = sertraline_and_warfarin(&app, "Reva Review").await;
    run_pass(&app).await;
    let prompt = prompts_of(&app, &app.owner, &person, "").await[0].clone();
    let path = app.hh(&format!("/medication_review_prompts/{}", prompt["id"]));
    let etag = app.get(&path, &app.owner).await.etag();
    let review = |attrs: Value| json!({"medication_review_prompt": attrs});

    // Without If-Match: 428; stale: 409.
    app.patch(
        &path,
        &app.owner,
        review(json!({"review_status": "acknowledged"})),
        None,
    )
    .await
    .assert_error(428, "precondition_required");
    app.patch(
        &path,
        &app.owner,
        review(json!({"review_status": "acknowledged"})),
        Some("\"stale.1\""),
    )
    .await
    .assert_status(409);

    // A practitioner status without name, role and date: 422 naming each.
    let refused = app
        .patch(
            &path,
            &app.owner,
            review(json!({"review_status": "practitioner_reviewed", "practitioner_name": "Dr Ana Núñez"})),
            Some(&etag),
        )
        .await;
    refused.assert_error(422, "validation_failed");
    let errors = refused.body["error"]["errors"].as_object().unwrap();
    assert!(errors.contains_key("practitioner_role") && errors.contains_key("reviewed_on"));
    assert!(!errors.contains_key("practitioner_name"));
    assert!(
        !refused.body.to_string().contains("Núñez"),
        "never echoes the value"
    );

    // The evidence cannot change.
    for (field, value) in [
        ("evidence", json!({"excerpt": "nothing to see"})),
        ("priority", json!("low")),
        ("medication_id", json!(1)),
    ] {
        let refused = app
            .patch(
                &path,
                &app.owner,
                review(json!({field: value})),
                Some(&etag),
            )
            .await;
        refused.assert_error(422, "validation_failed");
        assert!(
            refused.body["error"]["errors"].get(field).is_some(),
            "{}",
            refused.body
        );
    }
    assert_eq!(
        app.get(&path, &app.owner).await.etag(),
        etag,
        "nothing changed"
    );
    assert_eq!(audit_count(&app, "medication_review.updated").await, 0);

    // A view-only member: 403; a member without a grant: 404.
    let (viewer, viewer_token) = app
        .add_member("viewer@example.org", Role::Member, Some("Viewer"))
        .await;
    grant(&app, viewer, person.id, "view").await;
    app.patch(
        &path,
        &viewer_token,
        review(json!({"review_status": "acknowledged"})),
        Some(&etag),
    )
    .await
    .assert_error(403, "forbidden");
    let (_, stranger) = app
        .add_member("stranger@example.org", Role::Member, Some("Stranger"))
        .await;
    app.patch(
        &path,
        &stranger,
        review(json!({"review_status": "acknowledged"})),
        Some(&etag),
    )
    .await
    .assert_error(404, "not_found");

    // A full practitioner review: saved, with one audit event holding no details.
    let saved = app
        .patch(
            &path,
            &app.owner,
            review(json!({
                "review_status": "practitioner_reviewed",
                "practitioner_name": "Dr Ana Núñez",
                "practitioner_role": "pharmacist",
                "reviewed_on": "2026-11-20",
                "notes": "Keep taking both; INR check booked.",
            })),
            Some(&etag),
        )
        .await;
    saved.assert_status(200);
    assert_eq!(saved.data()["review_status"], "practitioner_reviewed");
    assert_eq!(saved.data()["practitioner_name"], "Dr Ana Núñez");
    assert_eq!(saved.data()["evidence"], prompt["evidence"]);
    assert_ne!(saved.etag(), etag);
    let metadata: Vec<String> = app
        .db
        .read(|c| {
            let mut stmt = c.prepare(
                "SELECT metadata FROM audit_events WHERE event_type = 'medication_review.updated'",
            )?;
            let rows = stmt
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?;
            Ok(rows)
        })
        .await
        .unwrap();
    assert_eq!(metadata.len(), 1);
    assert!(metadata[0].contains("practitioner_reviewed"));
    assert!(!metadata[0].contains("Núñez") && !metadata[0].contains("INR"));

    // A practitioner review does not go back to pending.
    let back = app
        .patch(
            &path,
            &app.owner,
            review(json!({"review_status": "pending"})),
            Some(&saved.etag()),
        )
        .await;
    back.assert_error(422, "validation_failed");
    let changed = app
        .patch(
            &path,
            &app.owner,
            review(json!({"review_status": "practitioner_changed"})),
            Some(&saved.etag()),
        )
        .await;
    changed.assert_status(200);
    assert_eq!(audit_count(&app, "medication_review.updated").await, 2);
}

#[tokio::test]
async fn a_failed_audit_rolls_the_review_back() {
    let app = TestApp::new().await;
    import_fixture(&app).await;
    let (person, ..) = sertraline_and_warfarin(&app, "Ada Atomic").await;
    run_pass(&app).await;
    let prompt = prompts_of(&app, &app.owner, &person, "").await[0].clone();
    let path = app.hh(&format!("/medication_review_prompts/{}", prompt["id"]));
    let etag = app.get(&path, &app.owner).await.etag();
    // Make the audit insert fail: the review must not be kept without it.
    app.db
        .write(|c| {
            c.execute_batch(
                "CREATE TRIGGER no_audit BEFORE INSERT ON audit_events
                 BEGIN SELECT RAISE(ABORT, 'audit unavailable'); END;",
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let failed = app
        .raw(
            Method::PATCH,
            &path,
            Some(&app.owner),
            Some(json!({"medication_review_prompt": {"review_status": "acknowledged"}})),
            &[("if-match", &etag)],
        )
        .await;
    assert_eq!(failed.status.as_u16(), 500);
    let after = app.get(&path, &app.owner).await;
    assert_eq!(after.data()["review_status"], "pending");
    assert_eq!(after.etag(), etag);
}

#[tokio::test]
async fn the_batch_action_reviews_through_the_same_rule_and_rechecks_access_on_replay() {
    let app = TestApp::new().await;
    import_fixture(&app).await;
    let (person, ..) = sertraline_and_warfarin(&app, "Bart Batch").await;
    run_pass(&app).await;
    let prompt = prompts_of(&app, &app.owner, &person, "").await[0].clone();
    let path = app.hh(&format!("/medication_review_prompts/{}", prompt["id"]));
    let etag = app.get(&path, &app.owner).await.etag();
    let (membership, token) = app
        .add_member("carer@example.org", Role::Member, Some("Carer"))
        .await;
    grant(&app, membership, person.id, "manage").await;

    let body = |if_match: &str, attrs: Value| {
        json!({"batch": {"operations": [{
            "action": "update",
            "resource_type": "medication_review",
            "id": prompt["portable_id"],
            "if_match": if_match,
            "attributes": attrs,
        }]}})
    };
    // The same rule: practitioner fields are needed, evidence cannot change.
    let refused = app
        .send(
            Method::POST,
            &app.hh("/sync/batches"),
            Some(&token),
            Some(body(
                &etag,
                json!({"review_status": "practitioner_changed"}),
            )),
            &[],
        )
        .await;
    refused.assert_status(422);
    let refused = app
        .send(
            Method::POST,
            &app.hh("/sync/batches"),
            Some(&token),
            Some(body(&etag, json!({"evidence": {}}))),
            &[],
        )
        .await;
    refused.assert_status(422);

    let ok_body = body(
        &etag,
        json!({"review_status": "acknowledged", "notes": "Asked at the pharmacy"}),
    );
    let applied = app
        .send(
            Method::POST,
            &app.hh("/sync/batches"),
            Some(&token),
            Some(ok_body.clone()),
            &[("Idempotency-Key", "review-1")],
        )
        .await;
    applied.assert_status(201);
    let result = &applied.data()["results"][0];
    assert_eq!(result["record_id"], prompt["id"].to_string());
    assert_eq!(result["record_portable_id"], prompt["portable_id"]);
    let now = app.get(&path, &app.owner).await;
    assert_eq!(now.data()["review_status"], "acknowledged");
    assert_eq!(result["etag"], now.etag());
    assert_eq!(audit_count(&app, "medication_review.updated").await, 1);

    // Stale: sync_conflict.
    app.send(
        Method::POST,
        &app.hh("/sync/batches"),
        Some(&token),
        Some(body(&etag, json!({"review_status": "hidden"}))),
        &[],
    )
    .await
    .assert_error(409, "sync_conflict");

    // Down to view access, the saved result is not replayed.
    grant(&app, membership, person.id, "view").await;
    let replay = app
        .send(
            Method::POST,
            &app.hh("/sync/batches"),
            Some(&token),
            Some(ok_body),
            &[("Idempotency-Key", "review-1")],
        )
        .await;
    replay.assert_status(403);
    assert_eq!(audit_count(&app, "medication_review.updated").await, 1);
}

#[tokio::test]
async fn a_rest_review_replayed_with_its_key_rechecks_access() {
    let app = TestApp::new().await;
    import_fixture(&app).await;
    let (person, ..) = sertraline_and_warfarin(&app, "Rex Replay").await;
    run_pass(&app).await;
    let prompt = prompts_of(&app, &app.owner, &person, "").await[0].clone();
    let path = app.hh(&format!("/medication_review_prompts/{}", prompt["id"]));
    let etag = app.get(&path, &app.owner).await.etag();
    let (membership, token) = app
        .add_member("carer@example.org", Role::Member, Some("Carer"))
        .await;
    grant(&app, membership, person.id, "manage").await;
    let body = json!({"medication_review_prompt": {"review_status": "acknowledged"}});
    let headers = [("If-Match", etag.as_str()), ("Idempotency-Key", "k-1")];
    let first = app
        .send(
            Method::PATCH,
            &path,
            Some(&token),
            Some(body.clone()),
            &headers,
        )
        .await;
    first.assert_status(200);
    let again = app
        .send(
            Method::PATCH,
            &path,
            Some(&token),
            Some(body.clone()),
            &headers,
        )
        .await;
    again.assert_status(200);
    assert_eq!(again.data(), first.data());
    assert_eq!(audit_count(&app, "medication_review.updated").await, 1);
    grant(&app, membership, person.id, "view").await;
    app.send(Method::PATCH, &path, Some(&token), Some(body), &headers)
        .await
        .assert_error(403, "forbidden");
}
