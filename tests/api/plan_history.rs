//! The plan over time (issue 10): plan changes never rewrite past doses,
//! pauses are periods, no silently empty schedule, and plan validation.

use serde_json::{Value, json};

use crate::support::records::{Ids, new_medication, new_person};
use crate::support::{TestApp, TestResponse};

async fn own_person(app: &TestApp) -> Ids {
    let people = app.get(&app.hh("/people"), &app.owner).await;
    Ids::of(
        people
            .data()
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "Olive Owner")
            .expect("the owner's linked person"),
    )
}

async fn create_schedule(
    app: &TestApp,
    person: &Ids,
    medication: &Ids,
    attrs: Value,
) -> TestResponse {
    let mut body = json!({"person_id": person.id, "medication_id": medication.id,
        "start_date": "2026-03-01"});
    body.as_object_mut()
        .unwrap()
        .extend(attrs.as_object().unwrap().clone());
    app.post(
        &app.hh("/schedules"),
        &app.owner,
        json!({ "schedule": body }),
    )
    .await
}

fn assert_invalid(response: &TestResponse, field: &str) {
    response.assert_error(422, "validation_failed");
    assert!(
        response.body["error"]["errors"].get(field).is_some(),
        "{field} not in {}",
        response.body
    );
}

#[tokio::test]
async fn a_slot_without_a_time_is_refused_and_a_used_slot_time_cannot_be_cleared() {
    let app = TestApp::new().await;
    let olive = own_person(&app).await;
    let med = new_medication(&app, "Tablets").await;
    app.patch(
        &app.hh("/notification_preference"),
        &app.owner,
        json!({"notification_preference": {"afternoon_time": null}}),
        None,
    )
    .await
    .assert_status(200);

    // Create: the only slot has no time.
    let refused = create_schedule(
        &app,
        &olive,
        &med,
        json!({"schedule_type": "daily", "schedule_config": {"slots": ["afternoon"]}}),
    )
    .await;
    assert_invalid(&refused, "schedule_config.slots");
    assert!(refused.body.to_string().contains("afternoon"));

    // Update: switching a schedule to that slot.
    let created = create_schedule(
        &app,
        &olive,
        &med,
        json!({"schedule_type": "daily", "schedule_config": {"slots": ["morning"]}}),
    )
    .await;
    created.assert_status(201);
    let schedule = Ids::of(created.data());
    let refused = app
        .patch(
            &app.hh(&format!("/schedules/{}", schedule.id)),
            &app.owner,
            json!({"schedule": {"schedule_config": {"slots": ["morning", "afternoon"]}}}),
            None,
        )
        .await;
    assert_invalid(&refused, "schedule_config.slots");

    // Clearing the morning time that schedule uses: 409 naming it.
    let before = app
        .get(&app.hh("/notification_preference"), &app.owner)
        .await;
    let conflict = app
        .patch(
            &app.hh("/notification_preference"),
            &app.owner,
            json!({"notification_preference": {"morning_time": null}}),
            None,
        )
        .await;
    conflict.assert_error(409, "slot_time_in_use");
    assert!(conflict.body.to_string().contains(&schedule.portable));
    let after = app
        .get(&app.hh("/notification_preference"), &app.owner)
        .await;
    assert_eq!(after.data(), before.data(), "nothing changed");
    // PUT with a null morning time clears it too.
    let conflict = app
        .put(
            &app.hh("/notification_preference"),
            &app.owner,
            json!({"notification_preference": {"enabled": true, "dose_due_enabled": true,
                "missed_dose_enabled": true, "low_stock_enabled": true,
                "private_text_enabled": false, "morning_time": null,
                "afternoon_time": null, "evening_time": "18:00", "night_time": null}}),
            None,
        )
        .await;
    conflict.assert_error(409, "slot_time_in_use");
    // Moving the time is fine; so is clearing it once the schedule is gone.
    app.patch(
        &app.hh("/notification_preference"),
        &app.owner,
        json!({"notification_preference": {"morning_time": "07:30"}}),
        None,
    )
    .await
    .assert_status(200);
    app.delete(
        &app.hh(&format!("/schedules/{}", schedule.id)),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    app.patch(
        &app.hh("/notification_preference"),
        &app.owner,
        json!({"notification_preference": {"morning_time": null}}),
        None,
    )
    .await
    .assert_status(200);
}

#[tokio::test]
async fn plans_that_contradict_themselves_are_refused() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Tablets").await;
    let step = |start: &str, end: &str| json!({"start_date": start, "end_date": end, "dose_amount": "1", "times": ["08:00"]});
    let refused = [
        (
            json!({"schedule_type": "specific_dates", "end_date": "2026-03-31",
                   "schedule_config": {"dates": ["2026-04-01"], "times": ["08:00"]}}),
            "schedule_config.dates",
        ),
        (
            json!({"schedule_type": "specific_dates",
                   "schedule_config": {"dates": ["2026-02-28"], "times": ["08:00"]}}),
            "schedule_config.dates",
        ),
        (
            json!({"schedule_type": "tapering", "end_date": "2026-03-05",
                   "schedule_config": {"taper_steps": [step("2026-03-01", "2026-03-07")]}}),
            "schedule_config.taper_steps[0].start_date",
        ),
        (
            json!({"schedule_type": "tapering",
                   "schedule_config": {"taper_steps": [step("2026-02-20", "2026-03-07")]}}),
            "schedule_config.taper_steps[0].start_date",
        ),
        (
            json!({"schedule_type": "tapering", "dose_unit": "tablet",
                   "schedule_config": {"taper_steps": [
                       {"start_date": "2026-03-01", "end_date": "2026-03-07",
                        "dose_amount": "20", "dose_unit": "mg", "times": ["08:00"]}]}}),
            "schedule_config.taper_steps[0].dose_unit",
        ),
        (
            json!({"schedule_type": "prn", "schedule_config": {"times": ["08:00"]}}),
            "schedule_config.times",
        ),
        (
            json!({"schedule_type": "daily", "max_daily_doses": 1,
                   "schedule_config": {"times": ["08:00", "20:00"]}}),
            "max_daily_doses",
        ),
        (
            json!({"schedule_type": "weekly", "dose_cycle": "weekly", "max_daily_doses": 2,
                   "schedule_config": {"weekdays": ["monday", "wednesday", "friday"],
                                       "times": ["08:00"]}}),
            "max_daily_doses",
        ),
        (
            json!({"schedule_type": "tapering",
                   "schedule_config": {"taper_steps": [
                       {"start_date": "2026-03-01", "end_date": "2026-03-07",
                        "dose_amount": "1", "max_daily_doses": 1,
                        "times": ["08:00", "20:00"]}]}}),
            "schedule_config.taper_steps[0].max_daily_doses",
        ),
    ];
    for (attrs, field) in refused {
        let response = create_schedule(&app, &ada, &med, attrs.clone()).await;
        assert_invalid(&response, field);
        assert!(
            !response.body.to_string().contains("2026-04-01"),
            "a 422 never repeats the value"
        );
    }
    let count = app.get(&app.hh("/schedules"), &app.owner).await;
    assert_eq!(count.data().as_array().unwrap().len(), 0);

    // The same rules on update; end_date itself is the last day with doses.
    let created = create_schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "specific_dates", "end_date": "2026-04-01",
               "schedule_config": {"dates": ["2026-03-01", "2026-04-01"], "times": ["08:00"]}}),
    )
    .await;
    created.assert_status(201);
    let schedule = Ids::of(created.data());
    let refused = app
        .patch(
            &app.hh(&format!("/schedules/{}", schedule.id)),
            &app.owner,
            json!({"schedule": {"end_date": "2026-03-31"}}),
            None,
        )
        .await;
    assert_invalid(&refused, "schedule_config.dates");
    // Limits the plan keeps are fine.
    create_schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "daily", "max_daily_doses": 2,
               "schedule_config": {"times": ["08:00", "20:00"]}}),
    )
    .await
    .assert_status(201);
    create_schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "prn", "max_daily_doses": 1, "schedule_config": {}}),
    )
    .await
    .assert_status(201);
}

// ---- Plan changes never rewrite the past --------------------------------

const ZONE: &str = "Europe/London";

/// Today in the household zone, moved by `offset` days.
fn day(offset: i64) -> String {
    let today = jiff::Timestamp::now()
        .to_zoned_datetime(jiff::tz::TimeZone::get(ZONE).unwrap())
        .date();
    today
        .checked_add(jiff::Span::new().days(offset))
        .unwrap()
        .to_string()
}

/// `time` on `date` in `zone`, as the API writes instants.
fn at(zone: &str, date: &str, time: &str) -> String {
    let date: jiff::civil::Date = date.parse().unwrap();
    let time: jiff::civil::Time = time.parse().unwrap();
    let instant = jiff::tz::TimeZone::get(zone)
        .unwrap()
        .to_ambiguous_timestamp(date.to_datetime(time))
        .compatible()
        .unwrap();
    pillbox::domain::Timestamp::from_jiff(instant).into_string()
}

/// The expected doses of one source on `date`.
async fn doses(app: &TestApp, date: &str, kind: &str, source: &Ids) -> Vec<Value> {
    let listed = app
        .get(
            &app.hh(&format!("/dose_occurrences?date={date}")),
            &app.owner,
        )
        .await;
    listed.assert_status(200);
    listed
        .data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["source_type"] == kind && d["source_id"] == source.id)
        .cloned()
        .collect()
}

fn times_of(doses: &[Value]) -> Vec<String> {
    doses
        .iter()
        .map(|d| d["scheduled_at"].as_str().unwrap().to_string())
        .collect()
}

/// Records a take of `dose` (an expected dose as listed), linked to it, at
/// its scheduled time (or `taken_at`).
async fn take(app: &TestApp, dose: &Value, taken_at: Option<&str>) -> i64 {
    let taken_at = taken_at
        .or(dose["scheduled_at"].as_str())
        .unwrap()
        .to_string();
    let household_id = app.household_id;
    let (person_id, source_type, source_id) = (
        dose["person_id"].as_i64().unwrap(),
        dose["source_type"].as_str().unwrap().to_string(),
        dose["source_id"].as_i64().unwrap(),
    );
    let (window, position) = (
        dose["window_starts_on"].as_str().unwrap().to_string(),
        dose["position"].as_i64().unwrap(),
    );
    app.db
        .write(move |conn| {
            let now = pillbox::domain::Timestamp::now();
            conn.execute(
                "INSERT INTO medication_takes (portable_id, household_id, person_id, source_type,
                     source_id, taken_at, dose_amount, dose_unit, occurrence_window_starts_on,
                     occurrence_position, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, '1', 'tablet', ?7, ?8, ?9, ?9)",
                rusqlite::params![
                    pillbox::db::new_portable_id(),
                    household_id,
                    person_id,
                    source_type,
                    source_id,
                    taken_at,
                    window,
                    position,
                    now
                ],
            )?;
            Ok(conn.last_insert_rowid())
        })
        .await
        .unwrap()
}

async fn daily(app: &TestApp, person: &Ids, medication: &Ids, config: Value) -> Ids {
    let created = create_schedule(
        app,
        person,
        medication,
        json!({"schedule_type": "daily", "schedule_config": config, "start_date": day(-10)}),
    )
    .await;
    created.assert_status(201);
    Ids::of(created.data())
}

async fn change_schedule(app: &TestApp, schedule: &Ids, attrs: Value) {
    app.patch(
        &app.hh(&format!("/schedules/{}", schedule.id)),
        &app.owner,
        json!({ "schedule": attrs }),
        None,
    )
    .await
    .assert_status(200);
}

#[tokio::test]
async fn changing_times_keeps_past_doses_positions_and_takes() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Tablets").await;
    let schedule = daily(&app, &ada, &med, json!({"times": ["08:00", "20:00"]})).await;
    let past = day(-3);
    let listed = doses(&app, &past, "schedule", &schedule).await;
    assert_eq!(listed.len(), 2);
    let take_id = take(&app, &listed[1], None).await;
    let before = doses(&app, &past, "schedule", &schedule).await;
    assert_eq!(before[1]["outcome"], "taken");
    assert_eq!(before[1]["medication_take_id"], take_id);
    let today_before = doses(&app, &day(0), "schedule", &schedule).await;
    let changed_at = pillbox::domain::Timestamp::now();

    change_schedule(
        &app,
        &schedule,
        json!({"schedule_config": {"times": ["08:00", "12:00", "20:00"]}}),
    )
    .await;

    // The past day is exactly as it was: 20:00 is still position 2, taken.
    assert_eq!(doses(&app, &past, "schedule", &schedule).await, before);
    // Today's doses already due keep their times, positions and keys.
    let today_after = doses(&app, &day(0), "schedule", &schedule).await;
    for dose in today_before
        .iter()
        .filter(|d| d["scheduled_at"].as_str().unwrap() < changed_at.as_str())
    {
        assert!(today_after.contains(dose), "{dose} moved");
    }
    // Later days follow the new times.
    let later = day(2);
    let future = doses(&app, &later, "schedule", &schedule).await;
    assert_eq!(
        times_of(&future),
        ["08:00", "12:00", "20:00"].map(|t| at(ZONE, &later, t))
    );
    assert_eq!(future[2]["position"], 3);
}

#[tokio::test]
async fn moving_a_slot_time_keeps_past_slot_doses() {
    let app = TestApp::new().await;
    let olive = own_person(&app).await;
    let med = new_medication(&app, "Tablets").await;
    let schedule = daily(&app, &olive, &med, json!({"slots": ["morning", "evening"]})).await;
    let past = day(-2);
    let listed = doses(&app, &past, "schedule", &schedule).await;
    assert_eq!(
        times_of(&listed),
        [at(ZONE, &past, "08:00"), at(ZONE, &past, "18:00")]
    );
    take(&app, &listed[0], None).await;
    let before = doses(&app, &past, "schedule", &schedule).await;

    app.patch(
        &app.hh("/notification_preference"),
        &app.owner,
        json!({"notification_preference": {"morning_time": "14:00"}}),
        None,
    )
    .await
    .assert_status(200);

    let after = doses(&app, &past, "schedule", &schedule).await;
    assert_eq!(after, before);
    assert_eq!(after[0]["outcome"], "taken");
    let later = day(3);
    assert_eq!(
        times_of(&doses(&app, &later, "schedule", &schedule).await),
        [at(ZONE, &later, "14:00"), at(ZONE, &later, "18:00")]
    );
}

#[tokio::test]
async fn moving_an_every_other_day_start_keeps_past_doses() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Tablets").await;
    let created = create_schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "every_other_day", "schedule_config": {"times": ["09:00"]},
               "start_date": day(-10)}),
    )
    .await;
    created.assert_status(201);
    let schedule = Ids::of(created.data());
    let past = day(-4);
    let listed = doses(&app, &past, "schedule", &schedule).await;
    assert_eq!(listed.len(), 1);
    take(&app, &listed[0], None).await;
    let before = doses(&app, &past, "schedule", &schedule).await;
    assert_eq!(doses(&app, &day(2), "schedule", &schedule).await.len(), 1);

    change_schedule(&app, &schedule, json!({"start_date": day(-9)})).await;

    let after = doses(&app, &past, "schedule", &schedule).await;
    assert_eq!(after, before, "the taken dose is still there");
    assert_eq!(after[0]["outcome"], "taken");
    assert!(doses(&app, &day(2), "schedule", &schedule).await.is_empty());
    assert_eq!(doses(&app, &day(3), "schedule", &schedule).await.len(), 1);
}

#[tokio::test]
async fn changing_the_household_time_zone_keeps_past_dose_times() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Tablets").await;
    let schedule = daily(&app, &ada, &med, json!({"times": ["08:00"]})).await;
    let past = day(-3);
    let listed = doses(&app, &past, "schedule", &schedule).await;
    take(&app, &listed[0], None).await;
    let before = doses(&app, &past, "schedule", &schedule).await;
    assert_eq!(times_of(&before), [at(ZONE, &past, "08:00")]);

    app.patch(
        &app.hh("/admin/settings"),
        &app.owner,
        json!({"household": {"time_zone": "America/New_York"}}),
        None,
    )
    .await
    .assert_status(200);

    assert_eq!(doses(&app, &past, "schedule", &schedule).await, before);
    let later = day(3);
    assert_eq!(
        times_of(&doses(&app, &later, "schedule", &schedule).await),
        [at("America/New_York", &later, "08:00")]
    );
}

#[tokio::test]
async fn changing_an_assignment_keeps_past_windows() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Tablets").await;
    let created = app
        .post(
            &app.hh("/person_medications"),
            &app.owner,
            json!({"person_medication": {"person_id": ada.id, "medication_id": med.id,
                "max_daily_doses": 2}}),
        )
        .await;
    created.assert_status(201);
    let assignment = Ids::of(created.data());
    let past = day(-2);
    let before = doses(&app, &past, "person_medication", &assignment).await;
    assert_eq!(before.len(), 2);
    app.patch(
        &app.hh(&format!("/person_medications/{}", assignment.id)),
        &app.owner,
        json!({"person_medication": {"max_daily_doses": 3, "dose_amount": "2"}}),
        None,
    )
    .await
    .assert_status(200);
    assert_eq!(
        doses(&app, &past, "person_medication", &assignment).await,
        before
    );
    let today = doses(&app, &day(0), "person_medication", &assignment).await;
    assert_eq!(today.len(), 3, "the current window follows the plan now");
    assert_eq!(today[0]["dose_amount"], "2");
}

// ---- Pauses are periods ---------------------------------------------------

/// A closed pause period of a source, inserted as history.
async fn past_pause(app: &TestApp, person: &Ids, source: &Ids, from: String, until: String) {
    let (household_id, person_id, source_id) = (app.household_id, person.id, source.id);
    app.db
        .write(move |conn| {
            let now = pillbox::domain::Timestamp::now();
            conn.execute(
                "INSERT INTO medication_pause_periods (portable_id, household_id, source_type,
                     source_id, person_id, reason, started_at, ended_at, created_at, updated_at)
                 VALUES (?1, ?2, 'schedule', ?3, ?4, 'other', ?5, ?6, ?7, ?7)",
                rusqlite::params![
                    pillbox::db::new_portable_id(),
                    household_id,
                    source_id,
                    person_id,
                    from,
                    until,
                    now
                ],
            )?;
            Ok(())
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn a_pause_hides_only_the_doses_inside_it() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Tablets").await;
    let schedule = daily(&app, &ada, &med, json!({"times": ["08:00", "20:00"]})).await;
    let routine = app
        .post(
            &app.hh("/person_medications"),
            &app.owner,
            json!({"person_medication": {"person_id": ada.id, "medication_id": med.id}}),
        )
        .await;
    routine.assert_status(201);
    let routine = Ids::of(routine.data());

    // A short pause in the past around one 08:00 dose: only that dose goes.
    let short = day(-4);
    past_pause(
        &app,
        &ada,
        &schedule,
        at(ZONE, &short, "07:00"),
        at(ZONE, &short, "09:00"),
    )
    .await;
    let listed = doses(&app, &short, "schedule", &schedule).await;
    assert_eq!(times_of(&listed), [at(ZONE, &short, "20:00")]);
    assert_eq!(listed[0]["position"], 2, "positions follow the plan");
    assert_eq!(doses(&app, &day(-5), "schedule", &schedule).await.len(), 2);

    // Yesterday's taken dose, and today's before the pause, stay listed.
    let yesterday = doses(&app, &day(-1), "schedule", &schedule).await;
    take(&app, &yesterday[1], None).await;
    let yesterday = doses(&app, &day(-1), "schedule", &schedule).await;
    let today = doses(&app, &day(0), "schedule", &schedule).await;
    let routine_today = doses(&app, &day(0), "person_medication", &routine).await;
    let paused = app
        .post(
            &app.hh("/medication_pause_periods"),
            &app.owner,
            json!({"medication_pause_period": {"source_type": "schedule",
                "source_id": schedule.portable, "reason": "side_effects"}}),
        )
        .await;
    paused.assert_status(201);
    let started_at = paused.data()["started_at"].as_str().unwrap().to_string();
    app.post(
        &app.hh("/medication_pause_periods"),
        &app.owner,
        json!({"medication_pause_period": {"source_type": "person_medication",
            "source_id": routine.portable, "reason": "side_effects"}}),
    )
    .await
    .assert_status(201);

    assert_eq!(
        doses(&app, &day(-1), "schedule", &schedule).await,
        yesterday
    );
    let still: Vec<Value> = today
        .into_iter()
        .filter(|d| d["scheduled_at"].as_str().unwrap() < started_at.as_str())
        .collect();
    assert_eq!(doses(&app, &day(0), "schedule", &schedule).await, still);
    assert!(doses(&app, &day(2), "schedule", &schedule).await.is_empty());
    // An untimed window is left out only when paused throughout.
    assert_eq!(
        doses(&app, &day(0), "person_medication", &routine).await,
        routine_today
    );
    assert_eq!(
        doses(&app, &day(-1), "person_medication", &routine)
            .await
            .len(),
        1
    );
    assert!(
        doses(&app, &day(2), "person_medication", &routine)
            .await
            .is_empty()
    );

    // Resumed: later doses are back.
    let period = paused.data()["portable_id"].as_str().unwrap().to_string();
    app.post(
        &app.hh(&format!("/medication_pause_periods/{period}/resume")),
        &app.owner,
        json!({}),
    )
    .await
    .assert_status(200);
    assert_eq!(doses(&app, &day(2), "schedule", &schedule).await.len(), 2);
}

#[tokio::test]
async fn a_database_from_before_plan_history_migrates_to_the_current_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(pillbox::db::DATABASE_FILE);
    {
        let old = rusqlite::Connection::open(&path).unwrap();
        old.execute_batch(include_str!(
            "../../crates/storage/src/db/migrations/0001_initial.sql"
        ))
        .unwrap();
        old.pragma_update(None, "user_version", 1).unwrap();
    }
    let db = pillbox::db::Db::open(dir.path()).unwrap();
    db.close().await;
    let schema = |conn: &rusqlite::Connection| -> Vec<(String, Option<String>)> {
        conn.prepare(
            "SELECT name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    };
    let migrated = rusqlite::Connection::open(&path).unwrap();
    let reference = rusqlite::Connection::open_in_memory().unwrap();
    reference.execute_batch(pillbox::db::SCHEMA_SQL).unwrap();
    assert_eq!(schema(&migrated), schema(&reference));
    // Definitions rewritten in place (migration 11) leave a sound file
    // whose rules still hold.
    let check: String = migrated
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    migrated.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    let entry = |action: &str| {
        migrated.execute(
            "INSERT INTO change_feed (household_id, record_type, record_id, record_portable_id, action, occurred_at)
             VALUES (1, 'medication', 1, 'x', ?1, 't')",
            [action],
        )
    };
    assert!(entry("update").is_ok());
    assert!(
        entry("rename").is_err(),
        "an action outside the list is refused"
    );
}

#[tokio::test]
async fn schedule_history_gives_the_listed_doses_and_the_step_in_force() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Tablets").await;
    let created = create_schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "tapering", "start_date": day(-10),
               "schedule_config": {"times": ["08:00"], "taper_steps": [
                   {"start_date": day(-10), "end_date": day(-1), "dose_amount": "20",
                    "times": ["08:00", "20:00"]},
                   {"start_date": day(0), "end_date": day(30), "dose_amount": "10"}]}}),
    )
    .await;
    created.assert_status(201);
    let schedule = Ids::of(created.data());
    change_schedule(&app, &schedule, json!({"dose_amount": "2"})).await;
    let past = day(-3);
    let listed = doses(&app, &past, "schedule", &schedule).await;
    let (household_id, schedule_id, date) = (app.household_id, schedule.id, past.clone());
    let (planned, step) = app
        .db
        .read(move |conn| {
            let history = pillbox::care::dose_occurrences::ScheduleHistory::load(
                conn,
                household_id,
                schedule_id,
            )?
            .unwrap();
            let planned = history.doses_on(date.parse().unwrap())?;
            let step = history.taper_step_at(planned[0].scheduled_at);
            Ok((planned, step))
        })
        .await
        .unwrap();
    assert_eq!(planned.len(), listed.len());
    for (planned, listed) in planned.iter().zip(&listed) {
        assert_eq!(
            i64::from(planned.position),
            listed["position"].as_i64().unwrap()
        );
        assert_eq!(
            pillbox::domain::Timestamp::from_jiff(planned.scheduled_at).as_str(),
            listed["scheduled_at"]
        );
        assert_eq!(planned.dose_amount.to_string(), "20");
        assert_eq!(listed["dose_amount"], "20");
    }
    assert_eq!(step.unwrap().dose_amount.to_string(), "20");
}
