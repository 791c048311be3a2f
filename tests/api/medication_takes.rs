use std::collections::BTreeSet;

use pillbox::auth::Role;
use pillbox::care::occurrence_key::{self, Occurrence};
use serde_json::{Value, json};

use crate::support::records::{Ids, feed, grant, new_medication, new_person};
use crate::support::{TestApp, TestResponse};

const KEYS: [&str; 18] = [
    "id",
    "portable_id",
    "person_id",
    "person_portable_id",
    "source_type",
    "source_id",
    "source_portable_id",
    "client_uuid",
    "taken_at",
    "dose_amount",
    "dose_unit",
    "taken_from_medication_id",
    "taken_from_medication_portable_id",
    "taken_from_location_id",
    "taken_from_location_portable_id",
    "occurrence_key",
    "recorded_by_membership_id",
    "created_at",
];

/// A daily schedule of `med` (1 tablet) for `person`, with `extra` attributes.
async fn schedule(app: &TestApp, person: &Ids, med: &Ids, extra: Value) -> Ids {
    let mut body = json!({"schedule": {
        "person_id": person.id,
        "medication_id": med.id,
        "schedule_type": "daily",
        "schedule_config": {"times": ["08:00", "20:00"]},
        "start_date": "2025-01-01",
    }});
    for (k, v) in extra.as_object().unwrap() {
        body["schedule"][k] = v.clone();
    }
    let created = app.post(&app.hh("/schedules"), &app.owner, body).await;
    created.assert_status(201);
    Ids::of(created.data())
}

/// A direct assignment of `med` to `person`, with `extra` attributes.
async fn assignment(app: &TestApp, person: &Ids, med: &Ids, extra: Value) -> Ids {
    let mut body = json!({"person_medication": {"person_id": person.id, "medication_id": med.id}});
    for (k, v) in extra.as_object().unwrap() {
        body["person_medication"][k] = v.clone();
    }
    let created = app
        .post(&app.hh("/person_medications"), &app.owner, body)
        .await;
    created.assert_status(201);
    Ids::of(created.data())
}

async fn take(app: &TestApp, token: &str, attrs: Value) -> TestResponse {
    app.post(
        &app.hh("/medication_takes"),
        token,
        json!({"medication_take": attrs}),
    )
    .await
}

async fn supply(app: &TestApp, med: &Ids) -> String {
    let got = app
        .get(&app.hh(&format!("/medications/{}", med.id)), &app.owner)
        .await;
    got.assert_status(200);
    got.data()["current_supply"].as_str().unwrap().to_string()
}

pub fn codes(response: &TestResponse) -> Vec<String> {
    response.body["meta"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["code"].as_str().unwrap().to_string())
        .collect()
}

/// Person Ada, Paracetamol (1 tablet, supply 10.5) and a schedule of it.
async fn setup(app: &TestApp) -> (Ids, Ids, Ids) {
    let ada = new_person(app, "Ada").await;
    let med = new_medication(app, "Paracetamol").await;
    let s = schedule(app, &ada, &med, json!({})).await;
    (ada, med, s)
}

#[tokio::test]
async fn a_take_defaults_from_its_source_and_deducts_stock_exactly() {
    let app = TestApp::new().await;
    let (ada, med, s) = setup(&app).await;

    let created = take(
        &app,
        &app.owner,
        json!({"source_type": "schedule", "source_id": s.portable,
               "taken_at": "2025-01-10T08:05:00+01:00"}),
    )
    .await;
    created.assert_status(201);
    let t = created.data().clone();
    let keys: BTreeSet<&str> = t.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, KEYS.into_iter().collect());
    assert_eq!(t["person_id"], ada.id);
    assert_eq!(t["person_portable_id"], ada.portable.as_str());
    assert_eq!(t["source_type"], "schedule");
    assert_eq!(t["source_id"], s.id);
    assert_eq!(t["source_portable_id"], s.portable.as_str());
    assert_eq!(t["taken_at"], "2025-01-10T07:05:00.000000Z");
    assert_eq!(t["dose_amount"], "1");
    assert_eq!(t["dose_unit"], "tablet");
    assert_eq!(t["taken_from_medication_id"], med.id);
    assert_eq!(
        t["taken_from_medication_portable_id"],
        med.portable.as_str()
    );
    assert_eq!(t["taken_from_location_id"], Value::Null);
    assert_eq!(t["client_uuid"], Value::Null);
    assert_eq!(t["occurrence_key"], Value::Null);
    assert_eq!(t["recorded_by_membership_id"], app.owner_membership_id);
    assert_eq!(
        created.etag(),
        format!("\"{}.1\"", t["portable_id"].as_str().unwrap())
    );
    assert_eq!(created.body["meta"]["warnings"], json!([]));
    assert_eq!(created.body["meta"]["next_dose_allowed_at"], Value::Null);
    assert_eq!(supply(&app, &med).await, "9.5");
    assert_eq!(
        feed(&app, "MedicationTake", t["id"].as_i64().unwrap()).await,
        [("create".to_string(), Some(ada.id))]
    );
    assert_eq!(
        feed(&app, "Medication", med.id).await.last().unwrap(),
        &("update".to_string(), None)
    );

    // An explicit dose, from a location, by numeric source id.
    let shelf = app
        .post(
            &app.hh("/locations"),
            &app.owner,
            json!({"location": {"name": "Kitchen shelf"}}),
        )
        .await;
    shelf.assert_status(201);
    let shelf = Ids::of(shelf.data());
    let explicit = take(
        &app,
        &app.owner,
        json!({"source_type": "schedule", "source_id": s.id, "taken_at": "2025-01-10T20:00:00Z",
               "dose_amount": "2.25", "dose_unit": "tablet",
               "taken_from_medication_id": med.portable, "taken_from_location_id": shelf.portable}),
    )
    .await;
    explicit.assert_status(201);
    assert_eq!(explicit.data()["dose_amount"], "2.25");
    assert_eq!(explicit.data()["taken_from_location_id"], shelf.id);
    assert_eq!(
        explicit.data()["taken_from_location_portable_id"],
        shelf.portable.as_str()
    );
    assert_eq!(supply(&app, &med).await, "7.25");

    // Not more than 5 minutes ahead; a non-positive dose is refused.
    let future = jiff::Timestamp::now() + jiff::SignedDuration::from_mins(10);
    let refused = take(
        &app,
        &app.owner,
        json!({"source_type": "schedule", "source_id": s.id, "taken_at": future.to_string()}),
    )
    .await;
    refused.assert_error(422, "validation_failed");
    assert!(refused.body["error"]["errors"]["taken_at"].is_array());
    let refused = take(
        &app,
        &app.owner,
        json!({"source_type": "schedule", "source_id": s.id,
               "taken_at": "2025-01-10T20:00:00Z", "dose_amount": "0"}),
    )
    .await;
    refused.assert_error(422, "validation_failed");
    let refused = take(
        &app,
        &app.owner,
        json!({"source_type": "schedule", "source_id": s.id}),
    )
    .await;
    refused.assert_error(422, "validation_failed");
    assert_eq!(supply(&app, &med).await, "7.25");
}

#[tokio::test]
async fn the_same_client_uuid_records_once_and_deducts_once() {
    let app = TestApp::new().await;
    let (_, med, s) = setup(&app).await;
    let uuid = "0192a5b0-1111-7000-8000-00000000abcd";
    let body = json!({"source_type": "schedule", "source_id": s.portable,
                      "taken_at": "2025-01-10T08:00:00Z", "client_uuid": uuid});

    let first = take(&app, &app.owner, body.clone()).await;
    first.assert_status(201);
    assert_eq!(first.data()["client_uuid"], uuid);
    let again = take(&app, &app.owner, body.clone()).await;
    again.assert_status(200);
    assert_eq!(again.data(), first.data());
    assert_eq!(again.etag(), first.etag());
    // The upper-case spelling of the same UUID is the same take.
    let mut upper = body.clone();
    upper["client_uuid"] = json!(uuid.to_uppercase());
    take(&app, &app.owner, upper).await.assert_status(200);
    assert_eq!(supply(&app, &med).await, "9.5");

    for (field, value) in [
        ("taken_at", json!("2025-01-10T09:00:00Z")),
        ("dose_amount", json!("2")),
        ("source_id", json!(s.id + 100)),
    ] {
        let mut other = body.clone();
        other[field] = value;
        take(&app, &app.owner, other)
            .await
            .assert_error(409, "client_uuid_reused");
    }
    assert_eq!(supply(&app, &med).await, "9.5");
    let list = app.get(&app.hh("/medication_takes"), &app.owner).await;
    assert_eq!(list.body["meta"]["total_count"], 1);
}

/// A retry of a recorded take gets the saved take even when a new take
/// could not be recorded now: its schedule has since been deleted.
#[tokio::test]
async fn a_retry_after_its_schedule_was_deleted_still_answers_the_saved_take() {
    let app = TestApp::new().await;
    let (_, med, s) = setup(&app).await;
    let body = json!({"source_type": "schedule", "source_id": s.id,
                      "taken_at": "2025-01-10T08:00:00Z",
                      "client_uuid": "0192a5b0-2222-7000-8000-00000000abcd"});
    let first = take(&app, &app.owner, body.clone()).await;
    first.assert_status(201);
    let path = app.hh(&format!("/schedules/{}", s.id));
    let etag = app.get(&path, &app.owner).await.etag();
    app.delete(&path, &app.owner, Some(&etag))
        .await
        .assert_status(204);

    let again = take(&app, &app.owner, body.clone()).await;
    again.assert_status(200);
    assert_eq!(again.data(), first.data());
    let mut new = body;
    new["client_uuid"] = json!("0192a5b0-3333-7000-8000-00000000abcd");
    take(&app, &app.owner, new)
        .await
        .assert_error(404, "not_found");
    assert_eq!(supply(&app, &med).await, "9.5");
}

#[tokio::test]
async fn takes_past_the_limits_are_recorded_and_warned() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Paracetamol").await;
    let s = schedule(&app, &ada, &med, json!({"max_daily_doses": 2})).await;
    let at = |time: &str| {
        json!({"source_type": "schedule", "source_id": s.id,
               "taken_at": format!("2025-01-10T{time}:00Z")})
    };
    let first = take(&app, &app.owner, at("08:00")).await;
    first.assert_status(201);
    assert!(codes(&first).is_empty());
    // Routine schedules have no next_dose_allowed_at.
    assert_eq!(first.body["meta"]["next_dose_allowed_at"], Value::Null);
    take(&app, &app.owner, at("12:00")).await.assert_status(201);
    // The previous day (in the household time zone) is another window.
    let other_day = take(
        &app,
        &app.owner,
        json!({"source_type": "schedule", "source_id": s.id, "taken_at": "2025-01-09T23:30:00Z"}),
    )
    .await;
    other_day.assert_status(201);
    assert!(codes(&other_day).is_empty());

    let third = take(&app, &app.owner, at("16:00")).await;
    third.assert_status(201);
    assert_eq!(codes(&third), ["max_daily_doses_exceeded"]);
    let message = third.body["meta"]["warnings"][0]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.contains("3 doses") && message.contains("limit is 2"),
        "{message}"
    );
    assert_eq!(supply(&app, &med).await, "6.5");
}

#[tokio::test]
async fn as_needed_takes_report_min_hours_and_the_next_allowed_dose() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Paracetamol").await;
    let a = assignment(
        &app,
        &ada,
        &med,
        json!({"administration_kind": "as_needed", "min_hours_between_doses": "4",
               "max_daily_doses": 3}),
    )
    .await;
    let at = |time: &str| {
        json!({"source_type": "person_medication", "source_id": a.portable,
               "taken_at": format!("2025-01-10T{time}:00Z")})
    };

    let first = take(&app, &app.owner, at("08:00")).await;
    first.assert_status(201);
    assert!(codes(&first).is_empty());
    assert_eq!(
        first.body["meta"]["next_dose_allowed_at"],
        "2025-01-10T12:00:00.000000Z"
    );

    let early = take(&app, &app.owner, at("10:30")).await;
    early.assert_status(201);
    assert_eq!(codes(&early), ["min_hours_between_doses"]);
    let message = early.body["meta"]["warnings"][0]["message"]
        .as_str()
        .unwrap();
    assert!(message.contains("2.5 hours"), "{message}");
    assert_eq!(
        early.body["meta"]["next_dose_allowed_at"],
        "2025-01-10T14:30:00.000000Z"
    );

    // The third of the day reaches the limit: next dose at the next day.
    let third = take(&app, &app.owner, at("15:00")).await;
    third.assert_status(201);
    assert!(codes(&third).is_empty());
    assert_eq!(
        third.body["meta"]["next_dose_allowed_at"],
        "2025-01-11T00:00:00.000000Z"
    );
    let fourth = take(&app, &app.owner, at("20:00")).await;
    fourth.assert_status(201);
    assert_eq!(codes(&fourth), ["max_daily_doses_exceeded"]);

    // A prn schedule without limits has no next time. (Another medicine:
    // doses of this one under the limited schedule would hold it back.)
    let other_med = new_medication(&app, "Ibuprofen").await;
    let prn = schedule(
        &app,
        &ada,
        &other_med,
        json!({"schedule_type": "prn", "schedule_config": {}}),
    )
    .await;
    let free = take(
        &app,
        &app.owner,
        json!({"source_type": "schedule", "source_id": prn.id, "taken_at": "2025-01-10T08:00:00Z"}),
    )
    .await;
    free.assert_status(201);
    assert_eq!(free.body["meta"]["next_dose_allowed_at"], Value::Null);
}

#[tokio::test]
async fn recording_needs_record_access() {
    let app = TestApp::new().await;
    let (ada, med, s) = setup(&app).await;
    let a = assignment(&app, &ada, &med, json!({})).await;
    let (membership_id, token) = app
        .add_member("carer@example.org", Role::Member, None)
        .await;

    for (source_type, source) in [("schedule", &s), ("person_medication", &a)] {
        let body = json!({"source_type": source_type, "source_id": source.id,
                          "taken_at": "2025-01-10T08:00:00Z"});
        take(&app, &token, body.clone())
            .await
            .assert_error(404, "not_found");
        grant(&app, membership_id, ada.id, "view").await;
        take(&app, &token, body.clone())
            .await
            .assert_error(403, "forbidden");
        grant(&app, membership_id, ada.id, "record").await;
        let recorded = take(&app, &token, body.clone()).await;
        recorded.assert_status(201);
        assert_eq!(recorded.data()["recorded_by_membership_id"], membership_id);
        grant(&app, membership_id, ada.id, "manage").await;
        take(&app, &token, body.clone()).await.assert_status(201);
        app.db
            .write(move |c| {
                c.execute(
                    "DELETE FROM person_access_grants WHERE membership_id = ?1",
                    [membership_id],
                )?;
                Ok(())
            })
            .await
            .unwrap();
    }
    // A caller without access sees none of the takes.
    let list = app.get(&app.hh("/medication_takes"), &token).await;
    list.assert_status(200);
    assert_eq!(list.body["meta"]["total_count"], 0);
    assert_eq!(supply(&app, &med).await, "6.5");
}

#[tokio::test]
async fn retired_and_unknown_sources_are_not_found() {
    let app = TestApp::new().await;
    let (_, _, s) = setup(&app).await;
    take(
        &app,
        &app.owner,
        json!({"source_type": "schedule", "source_id": s.id, "taken_at": "2025-01-10T08:00:00Z"}),
    )
    .await
    .assert_status(201);
    app.delete(&app.hh(&format!("/schedules/{}", s.id)), &app.owner, None)
        .await
        .assert_status(204);
    let body = json!({"source_type": "schedule", "source_id": s.portable, "taken_at": "2025-01-10T12:00:00Z"});
    take(&app, &app.owner, body)
        .await
        .assert_error(404, "not_found");
    // The same id names no person medication.
    take(
        &app,
        &app.owner,
        json!({"source_type": "person_medication", "source_id": s.id,
               "taken_at": "2025-01-10T12:00:00Z"}),
    )
    .await
    .assert_error(404, "not_found");
    // The retired schedule's takes stay listed.
    let list = app
        .get(
            &app.hh(&format!(
                "/medication_takes?source_type=schedule&source_id={}",
                s.portable
            )),
            &app.owner,
        )
        .await;
    assert_eq!(list.body["meta"]["total_count"], 1);
}

#[tokio::test]
async fn occurrence_keys_link_a_take_to_one_expected_dose() {
    let app = TestApp::new().await;
    let (ada, med, s) = setup(&app).await;
    let other = schedule(&app, &ada, &med, json!({})).await;
    let sign = |source: &Ids, position: u32| {
        let occurrence = Occurrence {
            source_type: "schedule".into(),
            source_portable_id: source.portable.clone(),
            window_starts_on: "2025-01-10".parse().unwrap(),
            position,
        };
        let db = app.db.clone();
        async move {
            db.read(move |conn| occurrence_key::sign(conn, &occurrence))
                .await
                .unwrap()
        }
    };
    let body = |key: &str| {
        json!({"source_type": "schedule", "source_id": s.id,
               "taken_at": "2025-01-10T08:00:00Z", "occurrence_key": key})
    };

    // Forged: a well-formed key with a made-up signature.
    use base64::Engine;
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let forged = format!(
        "{}.{}",
        engine.encode(format!("schedule|{}|2025-01-10|1", s.portable)),
        engine.encode([7u8; 32])
    );
    let refused = take(&app, &app.owner, body(&forged)).await;
    refused.assert_error(422, "validation_failed");
    assert!(refused.body["error"]["errors"]["occurrence_key"].is_array());
    take(&app, &app.owner, body("not-a-key"))
        .await
        .assert_error(422, "validation_failed");

    // A real key of another schedule.
    let foreign = sign(&other, 1).await;
    let refused = take(&app, &app.owner, body(&foreign)).await;
    refused.assert_error(422, "validation_failed");
    assert!(refused.body["error"]["errors"]["occurrence_key"].is_array());
    assert_eq!(supply(&app, &med).await, "10.5");

    let key = sign(&s, 1).await;
    let linked = take(&app, &app.owner, body(&key)).await;
    linked.assert_status(201);
    assert_eq!(linked.data()["occurrence_key"], key.as_str());
    let take_id = linked.id();
    let stored: (String, i64) = app
        .db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT occurrence_window_starts_on, occurrence_position
                 FROM medication_takes WHERE id = ?1",
                [take_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(stored, ("2025-01-10".to_string(), 1));

    take(&app, &app.owner, body(&key))
        .await
        .assert_error(409, "occurrence_already_taken");
    // The second expected dose of the day is still open.
    let second = sign(&s, 2).await;
    take(&app, &app.owner, body(&second))
        .await
        .assert_status(201);
    assert_eq!(supply(&app, &med).await, "8.5");
}

/// How many of `responses` have each status.
fn statuses(responses: &[TestResponse]) -> std::collections::BTreeMap<u16, usize> {
    let mut counted = std::collections::BTreeMap::new();
    for response in responses {
        *counted.entry(response.status.as_u16()).or_default() += 1;
    }
    counted
}

/// Takes sent together share the writer's groups: a retry still records
/// once, and an expected dose is still taken once.
#[tokio::test]
async fn takes_sent_together_record_a_retry_once_and_a_dose_once() {
    let app = TestApp::new().await;
    let (_, med, s) = setup(&app).await;
    let retry = json!({"source_type": "schedule", "source_id": s.id,
                       "taken_at": "2025-01-10T08:00:00Z",
                       "client_uuid": "0192a5b0-2222-7000-8000-00000000abcd"});
    let sent = (0..16).map(|_| take(&app, &app.owner, retry.clone()));
    let answers = futures_util::future::join_all(sent).await;
    assert_eq!(statuses(&answers), [(200, 15), (201, 1)].into());
    let first = answers.iter().find(|a| a.status == 201).unwrap();
    for answer in &answers {
        assert_eq!(answer.data(), first.data());
    }
    assert_eq!(supply(&app, &med).await, "9.5");

    let occurrence = Occurrence {
        source_type: "schedule".into(),
        source_portable_id: s.portable.clone(),
        window_starts_on: "2025-01-10".parse().unwrap(),
        position: 2,
    };
    let key = app
        .db
        .read(move |conn| occurrence_key::sign(conn, &occurrence))
        .await
        .unwrap();
    let sent = (0..16).map(|n| {
        take(
            &app,
            &app.owner,
            json!({"source_type": "schedule", "source_id": s.id,
                   "taken_at": "2025-01-10T20:00:00Z", "occurrence_key": key,
                   "client_uuid": format!("0192a5b0-3333-7000-8000-{n:012}")}),
        )
    });
    let answers = futures_util::future::join_all(sent).await;
    assert_eq!(statuses(&answers), [(201, 1), (409, 15)].into());
    for refused in answers.iter().filter(|a| a.status == 409) {
        refused.assert_error(409, "occurrence_already_taken");
    }
    assert_eq!(supply(&app, &med).await, "8.5");
    let list = app.get(&app.hh("/medication_takes"), &app.owner).await;
    assert_eq!(list.body["meta"]["total_count"], 2);
}

#[tokio::test]
async fn lists_filter_and_go_newest_first() {
    let app = TestApp::new().await;
    let (ada, med, s) = setup(&app).await;
    let bob = new_person(&app, "Bob").await;
    let bobs = assignment(&app, &bob, &med, json!({})).await;
    for time in ["08:00", "20:00", "12:00"] {
        take(
            &app,
            &app.owner,
            json!({"source_type": "schedule", "source_id": s.id,
                   "taken_at": format!("2025-01-10T{time}:00Z")}),
        )
        .await
        .assert_status(201);
    }
    take(
        &app,
        &app.owner,
        json!({"source_type": "person_medication", "source_id": bobs.portable,
               "taken_at": "2025-01-11T09:00:00Z"}),
    )
    .await
    .assert_status(201);

    let times = |list: &TestResponse| -> Vec<String> {
        list.data()
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["taken_at"].as_str().unwrap()[11..16].to_string())
            .collect()
    };
    let all = app.get(&app.hh("/medication_takes"), &app.owner).await;
    all.assert_status(200);
    assert_eq!(all.body["meta"]["total_count"], 4);
    assert_eq!(times(&all), ["09:00", "20:00", "12:00", "08:00"]);

    let adas = app
        .get(
            &app.hh(&format!("/medication_takes?person_id={}", ada.portable)),
            &app.owner,
        )
        .await;
    assert_eq!(times(&adas), ["20:00", "12:00", "08:00"]);
    let by_source = app
        .get(
            &app.hh(&format!(
                "/medication_takes?source_type=person_medication&source_id={}",
                bobs.id
            )),
            &app.owner,
        )
        .await;
    assert_eq!(times(&by_source), ["09:00"]);
    // An assignment's id under source_type=schedule names no schedule: 404.
    app.get(
        &app.hh(&format!(
            "/medication_takes?source_type=schedule&source_id={}",
            bobs.portable
        )),
        &app.owner,
    )
    .await
    .assert_error(404, "not_found");
    let range = app
        .get(
            &app.hh(
                "/medication_takes?from=2025-01-10T12:00:00Z&to=2025-01-10T20:00:00%2B00:00&per_page=1",
            ),
            &app.owner,
        )
        .await;
    assert_eq!(range.body["meta"]["total_count"], 2);
    assert_eq!(times(&range), ["20:00"]);

    for query in [
        "source_type=schedule",
        &format!("source_id={}", s.id),
        "source_type=pill&source_id=1",
        "from=yesterday",
        "person_id=abc",
    ] {
        app.get(&app.hh(&format!("/medication_takes?{query}")), &app.owner)
            .await
            .assert_error(422, "validation_failed");
    }

    // A member granted Bob sees only Bob's takes.
    let (membership_id, token) = app
        .add_member("carer@example.org", Role::Member, None)
        .await;
    grant(&app, membership_id, bob.id, "view").await;
    let seen = app.get(&app.hh("/medication_takes"), &token).await;
    assert_eq!(times(&seen), ["09:00"]);
}

#[tokio::test]
async fn stock_is_kept_in_the_medications_unit_and_never_below_zero() {
    let app = TestApp::new().await;
    let (_, med, s) = setup(&app).await;

    let other_unit = take(
        &app,
        &app.owner,
        json!({"source_type": "schedule", "source_id": s.id,
               "taken_at": "2025-01-10T08:00:00Z", "dose_amount": "5", "dose_unit": "ml"}),
    )
    .await;
    other_unit.assert_status(201);
    assert_eq!(codes(&other_unit), ["stock_not_deducted"]);
    assert_eq!(supply(&app, &med).await, "10.5");

    let big = take(
        &app,
        &app.owner,
        json!({"source_type": "schedule", "source_id": s.id,
               "taken_at": "2025-01-10T09:00:00Z", "dose_amount": "12"}),
    )
    .await;
    big.assert_status(201);
    assert_eq!(codes(&big), ["stock_ran_out"]);
    assert_eq!(
        big.body["meta"]["warnings"][0]["message"],
        "stock ran out: supply was 10.5"
    );
    assert_eq!(supply(&app, &med).await, "0");
}

/// Changes the schedule's dose to 2 capsules (a plan change).
async fn two_capsules(app: &TestApp, schedule: &Ids) {
    app.patch(
        &app.hh(&format!("/schedules/{}", schedule.id)),
        &app.owner,
        json!({"schedule": {"dose_amount": "2", "dose_unit": "capsule"}}),
        None,
    )
    .await
    .assert_status(200);
}

#[tokio::test]
async fn changing_the_schedules_dose_leaves_recorded_takes_alone() {
    let app = TestApp::new().await;
    let (_, _, s) = setup(&app).await;
    let recorded = take(
        &app,
        &app.owner,
        json!({"source_type": "schedule", "source_id": s.id, "taken_at": "2025-01-10T08:00:00Z"}),
    )
    .await;
    recorded.assert_status(201);
    two_capsules(&app, &s).await;
    let list = app.get(&app.hh("/medication_takes"), &app.owner).await;
    assert_eq!(list.data()[0], *recorded.data());
    assert_eq!(list.data()[0]["dose_amount"], "1");
    assert_eq!(list.data()[0]["dose_unit"], "tablet");
}

/// A take names no expected dose: its dose defaults from the plan in force
/// when it was given. Before any change that is the schedule's own; after
/// one, a dose given before it still gets the plan of then.
#[tokio::test]
async fn an_unlinked_take_defaults_from_the_plan_in_force_when_given() {
    let app = TestApp::new().await;
    let (_, _, s) = setup(&app).await;
    let given = |taken_at: String| json!({"source_type": "schedule", "source_id": s.id, "taken_at": taken_at});
    let before = take(&app, &app.owner, given("2025-01-10T08:00:00Z".into())).await;
    before.assert_status(201);
    assert_eq!(before.data()["dose_amount"], "1");
    assert_eq!(before.data()["dose_unit"], "tablet");
    two_capsules(&app, &s).await;
    let late_record = take(&app, &app.owner, given("2025-01-10T20:00:00Z".into())).await;
    late_record.assert_status(201);
    assert_eq!(late_record.data()["dose_amount"], "1");
    assert_eq!(late_record.data()["dose_unit"], "tablet");
    // Seconds after the change (a time given to the second could round to
    // just before it).
    let soon = (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(2))
        .round(jiff::Unit::Second)
        .unwrap()
        .to_string();
    let after = take(&app, &app.owner, given(soon)).await;
    after.assert_status(201);
    assert_eq!(after.data()["dose_amount"], "2");
    assert_eq!(after.data()["dose_unit"], "capsule");
}

/// The key this server issues for dose `position` of `source` on `day`.
async fn key_for(
    app: &TestApp,
    source_type: &str,
    source: &Ids,
    day: &str,
    position: u32,
) -> String {
    let occurrence = Occurrence {
        source_type: source_type.into(),
        source_portable_id: source.portable.clone(),
        window_starts_on: day.parse().unwrap(),
        position,
    };
    app.db
        .read(move |conn| occurrence_key::sign(conn, &occurrence))
        .await
        .unwrap()
}

fn names_field(response: &TestResponse, field: &str) -> bool {
    response.body["error"]["errors"][field].is_array()
}

#[tokio::test]
async fn an_occurrence_key_marks_only_a_dose_given_in_its_window() {
    let app = TestApp::new().await;
    let (_, med, s) = setup(&app).await;
    let evening = key_for(&app, "schedule", &s, "2025-11-24", 2).await;
    let body = |key: &str, at: &str| {
        json!({"source_type": "schedule", "source_id": s.portable,
               "taken_at": at, "occurrence_key": key})
    };

    // Given on 1 October, it is not the 24 November 20:00 dose.
    let refused = take(&app, &app.owner, body(&evening, "2025-10-01T20:00:00Z")).await;
    refused.assert_error(422, "validation_failed");
    assert!(names_field(&refused, "occurrence_key"));
    assert!(!refused.body.to_string().contains("2025-10-01"));
    // Past the window (24 November, London) widened by 12 hours.
    let late = take(&app, &app.owner, body(&evening, "2025-11-25T12:00:00Z")).await;
    late.assert_error(422, "validation_failed");
    assert!(names_field(&late, "occurrence_key"));
    let early = take(&app, &app.owner, body(&evening, "2025-11-23T11:59:59Z")).await;
    early.assert_error(422, "validation_failed");

    // A dose days ahead cannot be marked taken now.
    let ahead = pillbox::domain::Timestamp::now().plus(jiff::SignedDuration::from_hours(72))[..10]
        .to_string();
    let christmas = key_for(&app, "schedule", &s, &ahead, 1).await;
    let refused = take(
        &app,
        &app.owner,
        body(&christmas, &pillbox::domain::Timestamp::now()),
    )
    .await;
    refused.assert_error(422, "validation_failed");
    assert!(names_field(&refused, "occurrence_key"));

    // Through a sync batch the same rule refuses it and writes nothing.
    let batch = app
        .post(
            &app.hh("/sync/batches"),
            &app.owner,
            json!({"batch": {"operations": [
                {"action": "create", "resource_type": "medication_take",
                 "attributes": body(&evening, "2025-10-01T20:00:00Z")}]}}),
        )
        .await;
    batch.assert_status(422);
    assert!(batch.body.to_string().contains("occurrence_key"));
    assert_eq!(supply(&app, &med).await, "10.5");

    // Within the grace: given just after midnight, and the evening before.
    take(&app, &app.owner, body(&evening, "2025-11-25T00:30:00Z"))
        .await
        .assert_status(201);
    let morning = key_for(&app, "schedule", &s, "2025-11-24", 1).await;
    take(&app, &app.owner, body(&morning, "2025-11-23T12:00:00Z"))
        .await
        .assert_status(201);
    assert_eq!(supply(&app, &med).await, "8.5");
    let listed = app
        .get(&app.hh("/dose_occurrences?date=2025-11-24"), &app.owner)
        .await;
    let outcomes: Vec<&str> = listed
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["taken", "taken"]);
}

#[tokio::test]
async fn an_assignment_key_links_within_its_dose_cycle_window() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Vitamin D").await;
    let weekly = assignment(&app, &ada, &med, json!({"dose_cycle": "weekly"})).await;
    // The ISO week of Monday 2025-11-24 runs to Sunday 30 November.
    let key = key_for(&app, "person_medication", &weekly, "2025-11-24", 1).await;
    let body = |at: &str| {
        json!({"source_type": "person_medication", "source_id": weekly.id,
               "taken_at": at, "occurrence_key": key})
    };
    let refused = take(&app, &app.owner, body("2025-12-01T13:00:00Z")).await;
    assert!(names_field(&refused, "occurrence_key"));
    take(&app, &app.owner, body("2025-11-29T09:00:00Z"))
        .await
        .assert_status(201);
}

/// A medication measured in mg with 100 mg in stock.
async fn mg_medication(app: &TestApp) -> Ids {
    let created = app
        .post(
            &app.hh("/medications"),
            &app.owner,
            json!({"medication": {"name": "Prednisolone", "dose_amount": "5",
                   "dose_unit": "mg", "current_supply": "100"}}),
        )
        .await;
    created.assert_status(201);
    Ids::of(created.data())
}

/// The warnings listDoseOccurrences reports for `source` on `date`.
async fn day_warnings(app: &TestApp, source: &Ids, date: &str) -> Vec<Value> {
    let listed = app
        .get(
            &app.hh(&format!("/dose_occurrences?date={date}")),
            &app.owner,
        )
        .await;
    listed.assert_status(200);
    let dose = listed
        .data()
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["source_id"] == source.id)
        .cloned()
        .unwrap();
    dose["warnings"].as_array().unwrap().clone()
}

#[tokio::test]
async fn tapering_takes_follow_the_step_in_force() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = mg_medication(&app).await;
    let taper = schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "tapering", "dose_amount": "5", "dose_unit": "mg",
               "schedule_config": {"times": ["08:00"], "taper_steps": [
                   {"start_date": "2025-01-01", "end_date": "2025-01-10", "dose_amount": "20",
                    "dose_unit": "mg", "max_daily_doses": 1, "min_hours_between_doses": "12"},
                   {"start_date": "2025-01-11", "end_date": "2025-01-20", "dose_amount": "10"}]}}),
    )
    .await;
    let at =
        |when: &str| json!({"source_type": "schedule", "source_id": taper.id, "taken_at": when});

    // The step of 20 mg, not the schedule's 5 mg, recorded and deducted.
    let first = take(&app, &app.owner, at("2025-01-05T08:00:00Z")).await;
    first.assert_status(201);
    assert_eq!(first.data()["dose_amount"], "20");
    assert_eq!(first.data()["dose_unit"], "mg");
    assert_eq!(codes(&first), Vec::<String>::new());
    assert_eq!(supply(&app, &med).await, "80");

    // The step's limits (the schedule has none) warn as the day's list does.
    let second = take(&app, &app.owner, at("2025-01-05T10:00:00Z")).await;
    second.assert_status(201);
    assert_eq!(
        codes(&second),
        ["max_daily_doses_exceeded", "min_hours_between_doses"]
    );
    assert_eq!(day_warnings(&app, &taper, "2025-01-05").await.len(), 2);
    assert_eq!(supply(&app, &med).await, "60");

    // Linked to the expected dose of 10 January, given just after midnight
    // on the 11th: that dose's step (20 mg), not the next day's.
    let key = key_for(&app, "schedule", &taper, "2025-01-10", 1).await;
    let mut linked = at("2025-01-11T00:30:00Z");
    linked["occurrence_key"] = json!(key);
    let linked = take(&app, &app.owner, linked).await;
    linked.assert_status(201);
    assert_eq!(linked.data()["dose_amount"], "20");
    // Unlinked on the 12th: the second step.
    let later = take(&app, &app.owner, at("2025-01-12T08:00:00Z")).await;
    assert_eq!(later.data()["dose_amount"], "10");
    assert_eq!(codes(&later), Vec::<String>::new());
    assert_eq!(supply(&app, &med).await, "30");

    // A step measured in tablets is never deducted from mg stock.
    let tablets = schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "tapering", "dose_amount": "1", "dose_unit": "tablet",
               "schedule_config": {"times": ["08:00"], "taper_steps": [
                   {"start_date": "2025-01-01", "end_date": "2025-01-10", "dose_amount": "2"}]}}),
    )
    .await;
    let given = take(
        &app,
        &app.owner,
        json!({"source_type": "schedule", "source_id": tablets.id,
               "taken_at": "2025-01-06T08:00:00Z"}),
    )
    .await;
    given.assert_status(201);
    assert_eq!(given.data()["dose_amount"], "2");
    assert_eq!(given.data()["dose_unit"], "tablet");
    assert_eq!(codes(&given), ["stock_not_deducted"]);
    assert_eq!(supply(&app, &med).await, "30");
}

#[tokio::test]
async fn a_take_of_a_past_dose_follows_the_plan_in_force_for_it_not_a_later_edit() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = mg_medication(&app).await;
    let taper = schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "tapering", "dose_amount": "5", "dose_unit": "mg",
               "start_date": "2025-01-01",
               "schedule_config": {"times": ["08:00"], "taper_steps": [
                   {"start_date": "2025-01-01", "end_date": "2025-01-10", "dose_amount": "20"}]}}),
    )
    .await;
    let key = key_for(&app, "schedule", &taper, "2025-01-09", 1).await;
    // The plan is edited now: from now on the step is 40 mg.
    app.patch(
        &app.hh(&format!("/schedules/{}", taper.id)),
        &app.owner,
        json!({"schedule": {"schedule_config": {"times": ["08:00"], "taper_steps": [
            {"start_date": "2025-01-01", "end_date": "2025-01-10", "dose_amount": "40"}]}}}),
        None,
    )
    .await
    .assert_status(200);
    // The dose of 9 January was planned as 20 mg, and a take of it says so.
    let mut linked = json!({"source_type": "schedule", "source_id": taper.id, "taken_at": "2025-01-09T08:05:00Z"});
    linked["occurrence_key"] = json!(key);
    let linked = take(&app, &app.owner, linked).await;
    linked.assert_status(201);
    assert_eq!(linked.data()["dose_amount"], "20");
    // So does a take recorded late for 8 January without a key.
    let late = take(
        &app,
        &app.owner,
        json!({"source_type": "schedule", "source_id": taper.id, "taken_at": "2025-01-08T08:00:00Z"}),
    )
    .await;
    late.assert_status(201);
    assert_eq!(late.data()["dose_amount"], "20");
    assert_eq!(supply(&app, &med).await, "60");
}

/// A take under schedule `source` at `when` (HH:MM, UTC) on 10 January 2025.
fn given_on_10_january(source: &Ids, when: &str) -> Value {
    json!({"source_type": "schedule", "source_id": source.id,
           "taken_at": format!("2025-01-10T{when}:00Z")})
}

#[tokio::test]
async fn takes_of_the_same_medicine_under_other_sources_count() {
    let app = TestApp::new().await;
    let (ada, med, routine) = setup(&app).await;
    let prn = schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "prn", "schedule_config": {},
               "max_daily_doses": 2, "min_hours_between_doses": "4"}),
    )
    .await;
    let given = given_on_10_january;

    let r1 = take(&app, &app.owner, given(&routine, "08:00")).await;
    assert_eq!(codes(&r1), Vec::<String>::new());
    // 30 minutes after the routine dose: warned, still recorded.
    let p1 = take(&app, &app.owner, given(&prn, "08:30")).await;
    p1.assert_status(201);
    assert_eq!(codes(&p1), ["min_hours_between_doses_other_source"]);
    // Its own second dose of the day, and the routine one: three of two.
    let p2 = take(&app, &app.owner, given(&prn, "16:00")).await;
    p2.assert_status(201);
    assert_eq!(codes(&p2), ["max_daily_doses_exceeded"]);
    // The routine schedule has no gap of its own; the as-needed one's applies.
    let r2 = take(&app, &app.owner, given(&routine, "18:00")).await;
    r2.assert_status(201);
    assert_eq!(codes(&r2), ["min_hours_between_doses_other_source"]);

    // Another person's dose of the same medicine is not theirs.
    let bob = new_person(&app, "Bob").await;
    let bobs = schedule(
        &app,
        &bob,
        &med,
        json!({"schedule_type": "prn", "schedule_config": {},
               "max_daily_doses": 2, "min_hours_between_doses": "4"}),
    )
    .await;
    let b1 = take(&app, &app.owner, given(&bobs, "08:15")).await;
    assert_eq!(codes(&b1), Vec::<String>::new());
    // Nor is another medicine.
    let other_med = new_medication(&app, "Ibuprofen").await;
    let ibuprofen = schedule(
        &app,
        &ada,
        &other_med,
        json!({"schedule_type": "prn", "schedule_config": {},
               "max_daily_doses": 1, "min_hours_between_doses": "4"}),
    )
    .await;
    let i1 = take(&app, &app.owner, given(&ibuprofen, "08:10")).await;
    assert_eq!(codes(&i1), Vec::<String>::new());
}

#[tokio::test]
async fn the_days_list_counts_other_sources_of_the_medicine_as_the_take_does() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Paracetamol").await;
    let routine = schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_config": {"times": ["08:00"]},
               "max_daily_doses": 1, "min_hours_between_doses": "6"}),
    )
    .await;
    let prn = schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "prn", "schedule_config": {}}),
    )
    .await;
    let given = given_on_10_january;
    take(&app, &app.owner, given(&routine, "08:00"))
        .await
        .assert_status(201);
    assert_eq!(day_warnings(&app, &routine, "2025-01-10").await.len(), 0);
    let extra = take(&app, &app.owner, given(&prn, "10:00")).await;
    // The routine schedule's gap applies to the as-needed dose too.
    assert_eq!(codes(&extra), ["min_hours_between_doses_other_source"]);
    // The routine dose's day now shows what a take under it would be told.
    let warnings = day_warnings(&app, &routine, "2025-01-10").await;
    assert_eq!(
        warnings,
        [
            json!("max_daily_doses exceeded"),
            json!(
                "taken within min_hours_between_doses of a dose of the same medication under another source"
            ),
        ]
    );
    // Another day is untouched.
    assert_eq!(day_warnings(&app, &routine, "2025-01-11").await.len(), 0);
}

#[tokio::test]
async fn takes_outside_the_plan_warn_and_taken_at_has_a_lower_bound() {
    let app = TestApp::new().await;
    let (_, med, s) = setup(&app).await;
    let at = |when: &str| json!({"source_type": "schedule", "source_id": s.id, "taken_at": when});

    // Ada was born on 1950-02-03; nothing is given before 1900 either.
    for when in ["1899-12-31T12:00:00Z", "1950-02-02T12:00:00Z"] {
        let refused = take(&app, &app.owner, at(when)).await;
        refused.assert_error(422, "validation_failed");
        assert!(names_field(&refused, "taken_at"));
        assert!(!refused.body.to_string().contains(&when[..10]));
    }
    assert_eq!(supply(&app, &med).await, "10.5");

    // Before the schedule's start_date (2025-01-01): recorded, with a warning.
    let early = take(&app, &app.owner, at("2024-12-31T12:00:00Z")).await;
    early.assert_status(201);
    assert_eq!(codes(&early), ["before_start_date"]);

    let ending = schedule(
        &app,
        &new_person(&app, "Bob").await,
        &med,
        json!({"end_date": "2025-01-31"}),
    )
    .await;
    let late = take(
        &app,
        &app.owner,
        json!({"source_type": "schedule", "source_id": ending.id,
               "taken_at": "2025-02-01T12:00:00Z"}),
    )
    .await;
    late.assert_status(201);
    assert_eq!(codes(&late), ["after_end_date"]);

    // While paused: recorded, with a warning; a dose from before the pause
    // has none.
    app.post(
        &app.hh("/medication_pause_periods"),
        &app.owner,
        json!({"medication_pause_period": {"source_type": "schedule",
               "source_id": s.portable, "reason": "side_effects"}}),
    )
    .await
    .assert_status(201);
    let paused = take(&app, &app.owner, at(&pillbox::domain::Timestamp::now())).await;
    paused.assert_status(201);
    assert_eq!(codes(&paused), ["source_paused"]);
    let before = take(&app, &app.owner, at("2025-03-01T08:00:00Z")).await;
    assert_eq!(codes(&before), Vec::<String>::new());
}

#[tokio::test]
async fn the_next_as_needed_dose_waits_for_other_sources_of_the_medicine() {
    let app = TestApp::new().await;
    let (ada, med, routine) = setup(&app).await;
    let prn = schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "prn", "schedule_config": {},
               "max_daily_doses": 3, "min_hours_between_doses": "4"}),
    )
    .await;
    take(
        &app,
        &app.owner,
        json!({"source_type": "schedule", "source_id": routine.id,
               "taken_at": "2025-01-10T08:00:00Z"}),
    )
    .await
    .assert_status(201);
    // Given at 06:00 (recorded late): its own gap allows 10:00, the routine
    // dose at 08:00 holds the next one back to 12:00.
    let early = take(
        &app,
        &app.owner,
        json!({"source_type": "schedule", "source_id": prn.id,
               "taken_at": "2025-01-10T06:00:00Z"}),
    )
    .await;
    early.assert_status(201);
    assert_eq!(
        early.body["meta"]["next_dose_allowed_at"],
        "2025-01-10T12:00:00.000000Z"
    );
    assert_eq!(codes(&early), ["min_hours_between_doses_other_source"]);
    // Three doses of the day, one of them routine: the limit of 3 is
    // reached, so the next waits for the next day.
    let second = take(
        &app,
        &app.owner,
        json!({"source_type": "schedule", "source_id": prn.id,
               "taken_at": "2025-01-10T13:00:00Z"}),
    )
    .await;
    assert!(codes(&second).is_empty());
    assert_eq!(
        second.body["meta"]["next_dose_allowed_at"],
        "2025-01-11T00:00:00.000000Z"
    );
}
