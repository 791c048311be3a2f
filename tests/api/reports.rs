//! Health history and medication reviews reports, as JSON and PDF.

use axum::body::Body;
use axum::http::{Method, Request};
use http_body_util::BodyExt;
use pillbox::auth::Role;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::review_prompts::{import_fixture, run_pass, sertraline_and_warfarin};
use crate::support::TestApp;
use crate::support::records::{Ids, grant};

/// Gives a member (or the owner) the adult review permission.
async fn allow_adult_review(app: &TestApp, membership_id: i64) {
    app.db
        .write(move |c| {
            c.execute(
                "UPDATE memberships SET adult_review = 1 WHERE id = ?1",
                [membership_id],
            )?;
            Ok(())
        })
        .await
        .unwrap();
}

async fn downloads(app: &TestApp) -> Vec<String> {
    app.db
        .read(|c| {
            let mut stmt = c.prepare(
                "SELECT metadata FROM audit_events WHERE event_type = 'report.downloaded' ORDER BY id",
            )?;
            let rows = stmt
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?;
            Ok(rows)
        })
        .await
        .unwrap()
}

/// A person with two medicines, a prompt, a pause, two takes and a health event.
async fn history_fixture(app: &TestApp) -> Ids {
    import_fixture(app).await;
    let (person, _, warfarin) = sertraline_and_warfarin(app, "Zoë Ångström").await;
    run_pass(app).await;
    let schedules = app
        .get(
            &app.hh(&format!("/schedules?person_id={}", person.id)),
            &app.owner,
        )
        .await;
    let schedule = schedules
        .data()
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["medication_id"] == warfarin.id)
        .unwrap()
        .clone();
    for at in ["2026-03-02T08:05:00Z", "2026-07-01T07:10:00Z"] {
        app.post(
            &app.hh("/medication_takes"),
            &app.owner,
            json!({"medication_take": {"source_type": "schedule", "source_id": schedule["portable_id"], "taken_at": at}}),
        )
        .await
        .assert_status(201);
    }
    app.post(
        &app.hh("/medication_pause_periods"),
        &app.owner,
        json!({"medication_pause_period": {
            "source_type": "schedule",
            "source_id": schedule["portable_id"],
            "reason": "clinician_advice",
            "note": "Stop before the dental surgery",
        }}),
    )
    .await
    .assert_status(201);
    app.post(
        &app.hh("/health_events"),
        &app.owner,
        json!({"health_event": {
            "person_id": person.id,
            "event_kind": "suspected_side_effect",
            "severity": "mild",
            "title": "Nosebleed",
            "started_on": "2026-03-05",
        }}),
    )
    .await
    .assert_status(201);
    person
}

#[tokio::test]
async fn the_health_history_holds_the_persons_data() {
    let app = TestApp::new().await;
    let person = history_fixture(&app).await;
    let path = app.hh(&format!(
        "/reports/health_history?person_id={}&start_date=2026-01-01&end_date=2026-12-31",
        person.portable
    ));
    let report = app.get(&path, &app.owner).await;
    report.assert_status(200);
    assert_eq!(report.header("cache-control"), Some("no-store"));
    let data = report.data();
    assert_eq!(data["person"]["name"], "Zoë Ångström");
    assert_eq!(data["household"]["time_zone"], "Europe/London");
    assert_eq!(
        data["period"],
        json!({"start_date": "2026-01-01", "end_date": "2026-12-31"})
    );
    let medicines: Vec<&str> = data["medicines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["medication_name"].as_str().unwrap())
        .collect();
    assert_eq!(medicines.len(), 2);
    assert!(
        data["medicines"][0]["timing"]
            .as_str()
            .unwrap()
            .contains("08:00")
    );
    assert_eq!(data["pauses"].as_array().unwrap().len(), 1);
    assert_eq!(data["pauses"][0]["reason"], "clinician_advice");
    assert_eq!(data["pauses"][0]["note"], "Stop before the dental surgery");
    assert_eq!(data["health_events"][0]["title"], "Nosebleed");
    // Takes only when asked for; reviews only with the adult review permission.
    assert!(data["medication_takes"].is_null());
    assert!(data["reviews"].is_null());

    allow_adult_review(&app, app.owner_membership_id).await;
    let with_takes = app
        .get(&format!("{path}&include_medication_takes=1"), &app.owner)
        .await;
    with_takes.assert_status(200);
    let takes = with_takes.data()["medication_takes"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(takes.len(), 2);
    // Local times are the household's (London is on summer time in July).
    assert_eq!(takes[0]["taken_at_local"], "2026-03-02 08:05");
    assert_eq!(takes[1]["taken_at_local"], "2026-07-01 08:10");
    assert_eq!(with_takes.data()["reviews"].as_array().unwrap().len(), 1);

    // A period that holds none of it.
    let early = app
        .get(
            &app.hh(&format!(
                "/reports/health_history?person_id={}&start_date=2025-01-01&end_date=2025-06-30&include_medication_takes=1",
                person.id
            )),
            &app.owner,
        )
        .await;
    early.assert_status(200);
    assert!(
        early.data()["medication_takes"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert!(early.data()["health_events"].as_array().unwrap().is_empty());

    let audited = downloads(&app).await;
    assert_eq!(audited.len(), 3);
    assert!(
        audited
            .iter()
            .all(|m| m.contains("health_history") && m.contains("json"))
    );
    assert!(!audited.iter().any(|m| m.contains("Nosebleed")));
}

#[tokio::test]
async fn the_health_history_checks_its_period_and_access() {
    let app = TestApp::new().await;
    let person = history_fixture(&app).await;
    let history = |query: String| app.hh(&format!("/reports/health_history?{query}"));

    let too_long = app
        .get(
            &history(format!(
                "person_id={}&start_date=2025-01-01&end_date=2026-01-03",
                person.id
            )),
            &app.owner,
        )
        .await;
    too_long.assert_error(422, "validation_failed");
    assert!(too_long.body["error"]["errors"].get("end_date").is_some());
    app.get(
        &history(format!(
            "person_id={}&start_date=2025-01-01&end_date=2026-01-02",
            person.id
        )),
        &app.owner,
    )
    .await
    .assert_status(200);
    app.get(&history("start_date=2026-01-01".into()), &app.owner)
        .await
        .assert_error(422, "validation_failed");
    app.get(
        &history(format!("person_id={}&start_date=2026-02-30", person.id)),
        &app.owner,
    )
    .await
    .assert_error(422, "validation_failed");
    app.get(&history("person_id=999999".into()), &app.owner)
        .await
        .assert_error(404, "not_found");

    // Manage access: view gets 403, no grant 404.
    let (membership, token) = app
        .add_member("carer@example.org", Role::Member, Some("Carer"))
        .await;
    let path = history(format!("person_id={}", person.id));
    app.get(&path, &token).await.assert_error(404, "not_found");
    grant(&app, membership, person.id, "view").await;
    app.get(&path, &token).await.assert_error(403, "forbidden");
    grant(&app, membership, person.id, "manage").await;
    app.get(&path, &token).await.assert_status(200);
    assert_eq!(
        downloads(&app).await.len(),
        2,
        "only successful downloads are audited"
    );
}

#[tokio::test]
async fn the_reviews_report_needs_view_access_and_the_adult_review_permission() {
    let app = TestApp::new().await;
    let person = history_fixture(&app).await;
    let path = app.hh(&format!(
        "/reports/medication_reviews?person_id={}",
        person.id
    ));
    // Not even an owner holds the adult review permission by role.
    app.get(&path, &app.owner)
        .await
        .assert_error(403, "forbidden");

    let (membership, token) = app
        .add_member("reviewer@example.org", Role::Member, Some("Reviewer"))
        .await;
    allow_adult_review(&app, membership).await;
    app.get(&path, &token).await.assert_error(404, "not_found");
    grant(&app, membership, person.id, "view").await;
    let report = app.get(&path, &token).await;
    report.assert_status(200);
    let reviews = report.data()["reviews"].as_array().unwrap();
    assert_eq!(reviews.len(), 1);
    assert_eq!(reviews[0]["evidence"]["matched_term"], "warfarin");
    assert_eq!(report.data()["person"]["name"], "Zoë Ångström");

    let filtered = app
        .get(&format!("{path}&review_status=hidden"), &token)
        .await;
    filtered.assert_status(200);
    assert!(filtered.data()["reviews"].as_array().unwrap().is_empty());
    assert_eq!(filtered.data()["review_status"], "hidden");
    let by_short_name = app.get(&format!("{path}&status=pending"), &token).await;
    by_short_name.assert_status(200);
    assert_eq!(by_short_name.data()["reviews"].as_array().unwrap().len(), 1);
    app.get(&format!("{path}&review_status=closed"), &token)
        .await
        .assert_error(422, "validation_failed");
    let audited = downloads(&app).await;
    assert_eq!(audited.len(), 3);
    assert!(audited[0].contains("medication_reviews"));
}

/// GETs raw bytes (a PDF is not JSON).
async fn download(app: &TestApp, path: &str, token: &str) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let request = Request::builder()
        .method(Method::GET)
        .uri(path)
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let response = app.router.clone().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, headers, bytes.to_vec())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn text_of(pdf: &[u8]) -> String {
    pdf_extract::Document::load_mem(pdf).expect("a valid PDF");
    let text = pdf_extract::extract_text_from_mem(pdf).expect("text extracts");
    // Extraction may break lines anywhere; compare on single spaces.
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[tokio::test]
async fn the_health_history_pdf_holds_the_person_medicines_and_takes() {
    let app = TestApp::new().await;
    let person = history_fixture(&app).await;
    allow_adult_review(&app, app.owner_membership_id).await;
    let path = app.hh(&format!(
        "/reports/health_history.pdf?person_id={}&start_date=2026-01-01&end_date=2026-12-31&include_medication_takes=1",
        person.id
    ));
    let (status, headers, pdf) = download(&app, &path, &app.owner).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&pdf));
    assert_eq!(header(&headers, "content-type"), Some("application/pdf"));
    assert_eq!(header(&headers, "cache-control"), Some("no-store"));
    assert!(pdf.starts_with(b"%PDF-"));
    let text = text_of(&pdf);
    for expected in [
        "Health history",
        "Test household",
        "Zoë Ångström",
        "Sertraline 50mg tablets",
        "Warfarin 1mg tablets",
        "2026-03-02 08:05",
        "2026-07-01 08:10",
        "clinician advice",
        "Nosebleed",
        "2026-01-01 to 2026-12-31",
        "Page 1 of",
    ] {
        assert!(text.contains(expected), "{expected:?} not in {text}");
    }
    let audited = downloads(&app).await;
    assert_eq!(audited.len(), 1);
    assert!(audited[0].contains("pdf"));

    // The same checks as the JSON report.
    let (status, _, body) = download(
        &app,
        &app.hh(&format!(
            "/reports/health_history.pdf?person_id={}&start_date=2024-01-01&end_date=2026-01-01",
            person.id
        )),
        &app.owner,
    )
    .await;
    assert_eq!(status, 422);
    let error: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(error["error"]["code"], "validation_failed");
}

#[tokio::test]
async fn the_reviews_pdf_holds_the_evidence_and_review() {
    let app = TestApp::new().await;
    let person = history_fixture(&app).await;
    allow_adult_review(&app, app.owner_membership_id).await;
    let (status, _, pdf) = download(
        &app,
        &app.hh(&format!(
            "/reports/medication_reviews.pdf?person_id={}",
            person.portable
        )),
        &app.owner,
    )
    .await;
    assert_eq!(status, 200);
    let text = text_of(&pdf);
    for expected in [
        "Medication reviews",
        "Zoë Ångström",
        "Warfarin Sodium",
        "openFDA drug label",
        "pending",
    ] {
        assert!(text.contains(expected), "{expected:?} not in {text}");
    }
}

#[tokio::test]
async fn a_failed_download_audit_is_report_unavailable() {
    let app = TestApp::new().await;
    let person = history_fixture(&app).await;
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
    for suffix in ["", ".pdf"] {
        let refused = app
            .get(
                &app.hh(&format!(
                    "/reports/health_history{suffix}?person_id={}",
                    person.id
                )),
                &app.owner,
            )
            .await;
        refused.assert_error(503, "report_unavailable");
    }
}
