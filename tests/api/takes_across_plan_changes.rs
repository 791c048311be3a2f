//! The writer keeps what a take of a source is judged against (the source,
//! its person, the household's time zone, its plan history, pauses and the
//! other sources' gaps) between takes, under the plan stamp. Each change of
//! the plan, made after a take of the same source was recorded, must reach
//! the very next take.

use serde_json::{Value, json};

use crate::support::records::{Ids, new_medication, new_person};
use crate::support::{TestApp, TestResponse};

/// `minutes` before now, as a taken_at.
fn ago(minutes: i64) -> String {
    (jiff::Timestamp::now() - jiff::SignedDuration::from_mins(minutes))
        .round(jiff::Unit::Second)
        .unwrap()
        .to_string()
}

async fn take(app: &TestApp, source_type: &str, source: &Ids, taken_at: &str) -> TestResponse {
    app.post(
        &app.hh("/medication_takes"),
        &app.owner,
        json!({"medication_take": {"source_type": source_type, "source_id": source.id,
               "taken_at": taken_at}}),
    )
    .await
}

/// The codes of a recorded take's warnings.
fn codes(response: &TestResponse) -> Vec<String> {
    response.assert_status(201);
    crate::medication_takes::codes(response)
}

async fn patch(app: &TestApp, path: &str, body: Value) {
    app.patch(&app.hh(path), &app.owner, body, None)
        .await
        .assert_status(200);
}

#[tokio::test]
async fn each_change_of_the_plan_reaches_the_next_take_of_the_same_source() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Paracetamol").await;
    let created = app
        .post(
            &app.hh("/schedules"),
            &app.owner,
            json!({"schedule": {"person_id": ada.id, "medication_id": med.id,
                   "schedule_type": "daily", "schedule_config": {"times": ["08:00", "20:00"]},
                   "start_date": "2025-01-01"}}),
        )
        .await;
    created.assert_status(201);
    let routine = Ids::of(created.data());
    let schedule = |minutes: i64| {
        let (app, routine) = (&app, &routine);
        async move { take(app, "schedule", routine, &ago(minutes)).await }
    };

    let first = schedule(10).await;
    assert_eq!(codes(&first), Vec::<String>::new());
    assert_eq!(first.data()["dose_amount"], "1");

    // The dose and the gap change (a revision of the plan, in force from
    // now on: the next doses are given a minute from now).
    let path = format!("/schedules/{}", routine.id);
    patch(
        &app,
        &path,
        json!({"schedule": {"dose_amount": "2", "min_hours_between_doses": "4"}}),
    )
    .await;
    let second = schedule(-1).await;
    assert_eq!(second.data()["dose_amount"], "2");
    assert_eq!(codes(&second), ["min_hours_between_doses"]);

    // Paused, then resumed.
    let paused = app
        .post(
            &app.hh("/medication_pause_periods"),
            &app.owner,
            json!({"medication_pause_period": {"source_type": "schedule",
                   "source_id": routine.portable, "reason": "side_effects"}}),
        )
        .await;
    paused.assert_status(201);
    assert!(codes(&schedule(-1).await).contains(&"source_paused".to_string()));
    let period = paused.data()["id"].as_str().unwrap().to_string();
    app.post(
        &app.hh(&format!("/medication_pause_periods/{period}/resume")),
        &app.owner,
        json!({}),
    )
    .await
    .assert_status(200);
    let resumed = schedule(-1).await;
    assert!(!codes(&resumed).contains(&"source_paused".to_string()));

    // Another source of the medicine, with a wider gap than the schedule's:
    // a dose five hours after one under it is now too close (the
    // schedule's own gap of four hours would not reach it).
    let created = app
        .post(
            &app.hh("/person_medications"),
            &app.owner,
            json!({"person_medication": {"person_id": ada.id, "medication_id": med.id,
                   "administration_kind": "as_needed", "min_hours_between_doses": "12"}}),
        )
        .await;
    created.assert_status(201);
    let extra = Ids::of(created.data());
    take(&app, "person_medication", &extra, &ago(300))
        .await
        .assert_status(201);
    assert!(
        codes(&schedule(-1).await).contains(&"min_hours_between_doses_other_source".to_string())
    );

    // The person's date of birth moves to today: yesterday's dose is refused.
    let today = jiff::Timestamp::now()
        .to_zoned_datetime(jiff::tz::TimeZone::get("Europe/London").unwrap())
        .date();
    patch(
        &app,
        &format!("/people/{}", ada.id),
        json!({"person": {"date_of_birth": today.to_string(),
               "person_type": "minor", "has_capacity": false}}),
    )
    .await;
    schedule(2880).await.assert_error(422, "validation_failed");

    // Retired: the schedule is gone for new takes.
    app.delete(&app.hh(&path), &app.owner, None)
        .await
        .assert_status(204);
    schedule(-1).await.assert_error(404, "not_found");
}

#[tokio::test]
async fn a_new_time_zone_reaches_the_next_take() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Paracetamol").await;
    // Born two days ago in Kiritimati (UTC+14); 05:00 UTC that day is
    // 19:00 there, and 18:00 the day before in Pago Pago (UTC-11).
    let born = (jiff::Timestamp::now() - jiff::SignedDuration::from_hours(48))
        .to_zoned_datetime(jiff::tz::TimeZone::UTC)
        .date();
    let settings = app.hh("/admin/settings");
    let set_zone = |zone: &'static str| {
        let settings = settings.clone();
        let app = &app;
        async move {
            let etag = app.get(&settings, &app.owner).await.etag();
            app.patch(
                &settings,
                &app.owner,
                json!({"household": {"time_zone": zone}}),
                Some(&etag),
            )
            .await
            .assert_status(200);
        }
    };
    set_zone("Pacific/Kiritimati").await;
    patch(
        &app,
        &format!("/people/{}", ada.id),
        json!({"person": {"date_of_birth": born.to_string(),
               "person_type": "minor", "has_capacity": false}}),
    )
    .await;
    let created = app
        .post(
            &app.hh("/person_medications"),
            &app.owner,
            json!({"person_medication": {"person_id": ada.id, "medication_id": med.id}}),
        )
        .await;
    created.assert_status(201);
    let own = Ids::of(created.data());
    let at = format!("{born}T05:00:00Z");

    take(&app, "person_medication", &own, &at)
        .await
        .assert_status(201);
    set_zone("Pacific/Pago_Pago").await;
    take(&app, "person_medication", &own, &at)
        .await
        .assert_error(422, "validation_failed");
}

/// Every write to a table the kept plan is read from moves the plan stamp.
#[test]
fn every_write_to_a_plan_table_changes_the_plan_stamp() {
    crate::support::assert_every_write_moves_the_stamp(
        "plan_stamp",
        &[
            "households",
            "people",
            "schedules",
            "person_medications",
            "plan_revisions",
            "medication_pause_periods",
        ],
    );
}
