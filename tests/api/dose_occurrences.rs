//! Expected doses (`listDoseOccurrences`) and the run-out forecast that the
//! same routine sources drive.

use std::collections::BTreeMap;

use pillbox::auth::Role;
use pillbox::care::occurrence_key;
use serde_json::{Value, json};

use crate::support::TestApp;
use crate::support::records::{Ids, grant, new_medication, new_person};

async fn schedule(app: &TestApp, person: &Ids, medication: &Ids, attrs: Value) -> Ids {
    let mut body = json!({"person_id": person.id, "medication_id": medication.id,
        "start_date": "2027-03-01"});
    body.as_object_mut()
        .unwrap()
        .extend(attrs.as_object().unwrap().clone());
    let created = app
        .post(
            &app.hh("/schedules"),
            &app.owner,
            json!({ "schedule": body }),
        )
        .await;
    created.assert_status(201);
    Ids::of(created.data())
}

async fn assignment(app: &TestApp, person: &Ids, medication: &Ids, attrs: Value) -> Ids {
    let mut body = json!({"person_id": person.id, "medication_id": medication.id});
    body.as_object_mut()
        .unwrap()
        .extend(attrs.as_object().unwrap().clone());
    let created = app
        .post(
            &app.hh("/person_medications"),
            &app.owner,
            json!({ "person_medication": body }),
        )
        .await;
    created.assert_status(201);
    Ids::of(created.data())
}

/// The day's doses as the owner (or `token`) sees them.
async fn day(app: &TestApp, token: &str, date: &str, person: Option<&Ids>) -> Vec<Value> {
    let mut path = app.hh(&format!("/dose_occurrences?date={date}"));
    if let Some(person) = person {
        path.push_str(&format!("&person_id={}", person.portable));
    }
    let listed = app.get(&path, token).await;
    listed.assert_status(200);
    assert_eq!(listed.body["meta"]["date"], date);
    assert_eq!(listed.body["meta"]["time_zone"], "Europe/London");
    listed.data().as_array().unwrap().clone()
}

fn of_source<'a>(doses: &'a [Value], kind: &str, source: &Ids) -> Vec<&'a Value> {
    doses
        .iter()
        .filter(|d| d["source_type"] == kind && d["source_id"] == source.id)
        .collect()
}

fn march(day: u32) -> String {
    format!("2027-03-{day:02}")
}

#[tokio::test]
async fn each_schedule_type_over_a_month_with_a_daylight_saving_change() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Daily tablets").await;

    let daily = schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "daily", "schedule_config": {"times": ["20:00", "08:00"]}}),
    )
    .await;
    let multiple = schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "multiple_daily",
               "schedule_config": {"slots": ["morning", "evening"]}}),
    )
    .await;
    let weekly = schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "weekly",
               "schedule_config": {"weekdays": ["monday", "thursday"], "times": ["09:00"]}}),
    )
    .await;
    let dates = schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "specific_dates",
               "schedule_config": {"dates": ["2027-03-05", "2027-03-28"], "times": ["10:00"]}}),
    )
    .await;
    let alternate = schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "every_other_day", "start_date": "2027-03-02",
               "schedule_config": {"times": ["07:00"]}}),
    )
    .await;
    let taper = schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "tapering", "schedule_config": {
        "times": ["08:00"],
        "taper_steps": [
            {"start_date": "2027-03-01", "end_date": "2027-03-10", "dose_amount": "2",
             "times": ["08:00", "12:00"]},
            {"start_date": "2027-03-11", "end_date": "2027-03-20", "dose_amount": "1"},
        ]}}),
    )
    .await;
    let prn = schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "prn", "schedule_config": {}}),
    )
    .await;

    for d in 1..=31u32 {
        let date = march(d);
        let doses = day(&app, &app.owner, &date, Some(&ada)).await;
        // 2027-03-01 is a Monday: d % 7 == 1 is a Monday, 4 a Thursday.
        let weekday = d % 7;
        let expect = [
            ("daily", &daily, 2),
            ("multiple_daily", &multiple, 2),
            ("weekly", &weekly, usize::from(weekday == 1 || weekday == 4)),
            ("specific_dates", &dates, usize::from(d == 5 || d == 28)),
            (
                "every_other_day",
                &alternate,
                usize::from(d >= 2 && d % 2 == 0),
            ),
            (
                "tapering",
                &taper,
                match d {
                    1..=10 => 2,
                    11..=20 => 1,
                    _ => 0,
                },
            ),
            ("prn", &prn, 0),
        ];
        let mut total = 0;
        for (name, source, count) in expect {
            let found = of_source(&doses, "schedule", source);
            assert_eq!(found.len(), count, "{name} on {date}: {doses:?}");
            for (i, dose) in found.iter().enumerate() {
                assert_eq!(dose["position"], i as i64 + 1, "{name} on {date}");
                assert_eq!(dose["window_starts_on"], date.as_str());
                assert_eq!(dose["window_ends_on"], date.as_str());
                assert_eq!(dose["outcome"], "open");
                assert_eq!(dose["person_id"], ada.id);
                assert_eq!(dose["medication_id"], med.id);
                assert_eq!(dose["medication_display_name"], "Paracetamol");
                assert_eq!(dose["warnings"], json!([]));
            }
            total += count;
        }
        assert_eq!(doses.len(), total, "{date}");

        // Summer time starts on 2027-03-28: 08:00 local is 08:00Z before, 07:00Z after.
        let hour = if d < 28 { "08" } else { "07" };
        let daily_doses = of_source(&doses, "schedule", &daily);
        assert_eq!(
            daily_doses[0]["scheduled_at"],
            format!("{date}T{hour}:00:00.000000Z"),
            "{date}"
        );
        let evening = if d < 28 { "20" } else { "19" };
        assert_eq!(
            daily_doses[1]["scheduled_at"],
            format!("{date}T{evening}:00:00.000000Z")
        );
        // Slots come from the default notification preference: 08:00 and 18:00.
        let slotted = of_source(&doses, "schedule", &multiple);
        let evening = if d < 28 { "18" } else { "17" };
        assert_eq!(
            slotted[1]["scheduled_at"],
            format!("{date}T{evening}:00:00.000000Z")
        );
        let taper_doses = of_source(&doses, "schedule", &taper);
        if let Some(first) = taper_doses.first() {
            assert_eq!(first["dose_amount"], if d <= 10 { "2" } else { "1" });
        }
        // Listed in time order.
        let times: Vec<&str> = doses
            .iter()
            .map(|d| d["scheduled_at"].as_str().unwrap())
            .collect();
        let mut sorted = times.clone();
        sorted.sort();
        assert_eq!(times, sorted);
    }
}

#[tokio::test]
async fn skipped_and_repeated_local_times_give_one_dose() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Night tablets").await;
    let night = schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "daily", "schedule_config": {"times": ["01:30"]}}),
    )
    .await;
    // 01:30 does not exist on 2027-03-28 in London: it moves forward to 02:30 BST.
    let spring = day(&app, &app.owner, "2027-03-28", Some(&ada)).await;
    let doses = of_source(&spring, "schedule", &night);
    assert_eq!(doses.len(), 1);
    assert_eq!(doses[0]["scheduled_at"], "2027-03-28T01:30:00.000000Z");
    // 01:30 happens twice on 2027-10-31: one dose, at the earlier (BST) one.
    let autumn = day(&app, &app.owner, "2027-10-31", Some(&ada)).await;
    let doses = of_source(&autumn, "schedule", &night);
    assert_eq!(doses.len(), 1);
    assert_eq!(doses[0]["scheduled_at"], "2027-10-31T00:30:00.000000Z");
    let after = day(&app, &app.owner, "2027-11-01", Some(&ada)).await;
    assert_eq!(after[0]["scheduled_at"], "2027-11-01T01:30:00.000000Z");
}

#[tokio::test]
async fn paused_retired_and_as_needed_sources_are_excluded_and_keys_are_stable() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Tablets").await;
    let daily = json!({"schedule_type": "daily", "schedule_config": {"times": ["08:00"]}});
    let running = schedule(&app, &ada, &med, daily.clone()).await;
    let paused = schedule(&app, &ada, &med, daily.clone()).await;
    let retired = schedule(&app, &ada, &med, daily.clone()).await;
    let ended = schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "daily", "schedule_config": {"times": ["08:00"]},
               "end_date": "2027-03-05"}),
    )
    .await;
    let weekly = assignment(
        &app,
        &ada,
        &med,
        json!({"dose_cycle": "weekly", "max_daily_doses": 2}),
    )
    .await;
    let as_needed = assignment(
        &app,
        &ada,
        &med,
        json!({"administration_kind": "as_needed"}),
    )
    .await;
    let paused_assignment = assignment(&app, &ada, &med, json!({})).await;
    // Paused now (an open period): every dose of March 2027 falls inside it.
    for path in [
        format!("/schedules/{}/pause", paused.id),
        format!("/person_medications/{}/pause", paused_assignment.id),
    ] {
        app.patch(&app.hh(&path), &app.owner, json!({}), None)
            .await
            .assert_status(200);
    }
    app.delete(
        &app.hh(&format!("/schedules/{}", retired.id)),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);

    let mut week_keys: Option<Vec<Value>> = None;
    // 2027-03-08 is a Monday.
    for d in 8..=14 {
        let date = march(d);
        let doses = day(&app, &app.owner, &date, Some(&ada)).await;
        assert_eq!(of_source(&doses, "schedule", &running).len(), 1);
        for gone in [&paused, &retired, &ended] {
            assert!(of_source(&doses, "schedule", gone).is_empty(), "{date}");
        }
        assert!(of_source(&doses, "person_medication", &as_needed).is_empty());
        assert!(of_source(&doses, "person_medication", &paused_assignment).is_empty());
        let assigned = of_source(&doses, "person_medication", &weekly);
        assert_eq!(assigned.len(), 2, "{date}");
        for (i, dose) in assigned.iter().enumerate() {
            assert_eq!(dose["position"], i as i64 + 1);
            assert_eq!(dose["window_starts_on"], "2027-03-08");
            assert_eq!(dose["window_ends_on"], "2027-03-14");
            assert_eq!(dose["scheduled_at"], Value::Null);
        }
        // Untimed doses come after the timed ones.
        assert_eq!(doses.last().unwrap()["source_type"], "person_medication");
        let keys: Vec<Value> = assigned
            .iter()
            .map(|d| d["occurrence_key"].clone())
            .collect();
        match &week_keys {
            None => week_keys = Some(keys),
            Some(first) => assert_eq!(first, &keys, "{date}"),
        }
    }
    let next_week = day(&app, &app.owner, "2027-03-15", Some(&ada)).await;
    let next: Vec<Value> = of_source(&next_week, "person_medication", &weekly)
        .iter()
        .map(|d| d["occurrence_key"].clone())
        .collect();
    assert_ne!(Some(next), week_keys);

    // Every key verifies and names its source, window and position.
    let doses = day(&app, &app.owner, "2027-03-10", Some(&ada)).await;
    for dose in doses {
        let key = dose["occurrence_key"].as_str().unwrap().to_string();
        let occurrence = app
            .db
            .read(move |conn| occurrence_key::verify(conn, &key))
            .await
            .unwrap();
        assert_eq!(occurrence.source_type, dose["source_type"]);
        assert_eq!(occurrence.source_portable_id, dose["source_portable_id"]);
        assert_eq!(
            occurrence.window_starts_on.to_string(),
            dose["window_starts_on"]
        );
        assert_eq!(i64::from(occurrence.position), dose["position"]);
    }
}

#[tokio::test]
async fn members_see_only_people_they_may_view_and_queries_are_checked() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let bob = new_person(&app, "Bob").await;
    let med = new_medication(&app, "Tablets").await;
    let daily = json!({"schedule_type": "daily", "schedule_config": {"times": ["08:00"]}});
    let ada_schedule = schedule(&app, &ada, &med, daily.clone()).await;
    let bob_schedule = schedule(&app, &bob, &med, daily).await;
    let (membership, carer) = app
        .add_member("carer@example.org", Role::Member, None)
        .await;
    grant(&app, membership, ada.id, "view").await;

    let all = day(&app, &app.owner, "2027-03-10", None).await;
    assert_eq!(of_source(&all, "schedule", &ada_schedule).len(), 1);
    assert_eq!(of_source(&all, "schedule", &bob_schedule).len(), 1);
    // Ordered by person.
    assert_eq!(all[0]["person_id"], ada.id);

    let seen = day(&app, &carer, "2027-03-10", None).await;
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0]["source_id"], ada_schedule.id);
    assert_eq!(seen[0]["person_portable_id"], ada.portable.as_str());
    let own = day(&app, &carer, "2027-03-10", Some(&ada)).await;
    assert_eq!(own.len(), 1);
    app.get(
        &app.hh(&format!(
            "/dose_occurrences?date=2027-03-10&person_id={}",
            bob.id
        )),
        &carer,
    )
    .await
    .assert_error(404, "not_found");
    app.get(&app.hh("/dose_occurrences?person_id=999999"), &app.owner)
        .await
        .assert_error(404, "not_found");
    for bad in ["2027-02-30", "10/03/2027", "2027-3-1", "today"] {
        let r = app
            .get(
                &app.hh(&format!("/dose_occurrences?date={bad}")),
                &app.owner,
            )
            .await;
        r.assert_status(422);
        assert!(r.body["error"]["errors"]["date"].is_array(), "{bad}");
    }
    app.get(&app.hh("/dose_occurrences?person_id=nobody"), &app.owner)
        .await
        .assert_status(422);
    // Without a date: today in the household's time zone.
    let today = app.get(&app.hh("/dose_occurrences"), &app.owner).await;
    today.assert_status(200);
    assert!(today.body["meta"]["date"].as_str().unwrap().len() == 10);
}

async fn row_counts(app: &TestApp) -> BTreeMap<String, i64> {
    app.db
        .read(|conn| {
            let tables: Vec<String> = conn
                .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let mut counts = BTreeMap::new();
            for table in tables {
                let n: i64 =
                    conn.query_row(&format!("SELECT count(*) FROM \"{table}\""), [], |r| {
                        r.get(0)
                    })?;
                counts.insert(table, n);
            }
            Ok(counts)
        })
        .await
        .unwrap()
}

/// Inserts a take of a schedule directly (linked to an occurrence when
/// `occurrence` is given) and returns its id.
async fn insert_take(
    app: &TestApp,
    person: &Ids,
    schedule_id: i64,
    taken_at: &'static str,
    occurrence: Option<(&'static str, i64)>,
) -> i64 {
    let (household_id, person_id) = (app.household_id, person.id);
    app.db
        .write(move |conn| {
            let now = pillbox::domain::Timestamp::now();
            conn.execute(
                "INSERT INTO medication_takes (portable_id, household_id, person_id, source_type,
                     source_id, taken_at, dose_amount, dose_unit, occurrence_window_starts_on,
                     occurrence_position, created_at, updated_at)
                 VALUES (?1, ?2, ?3, 'schedule', ?4, ?5, '1', 'tablet', ?6, ?7, ?8, ?8)",
                rusqlite::params![
                    pillbox::db::new_portable_id(),
                    household_id,
                    person_id,
                    schedule_id,
                    taken_at,
                    occurrence.map(|o| o.0),
                    occurrence.map(|o| o.1),
                    now
                ],
            )?;
            Ok(conn.last_insert_rowid())
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn outcomes_come_from_takes_and_saved_decisions_and_reads_write_nothing() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let med = new_medication(&app, "Tablets").await;
    let twice = schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "daily", "schedule_config": {"times": ["08:00", "20:00"]},
               "max_daily_doses": 2, "min_hours_between_doses": "4"}),
    )
    .await;

    let before = row_counts(&app).await;
    let first = day(&app, &app.owner, "2027-03-10", Some(&ada)).await;
    let again = day(&app, &app.owner, "2027-03-10", None).await;
    assert_eq!(first, again);
    assert_eq!(row_counts(&app).await, before, "a read wrote rows");
    assert!(before.contains_key("dose_occurrences"));

    // A take linked to position 1: taken. A saved not_taken for position 2.
    let take = insert_take(
        &app,
        &ada,
        twice.id,
        "2027-03-10T08:05:00.000000Z",
        Some(("2027-03-10", 1)),
    )
    .await;
    let (household_id, person_id, schedule_id) = (app.household_id, ada.id, twice.id);
    app.db
        .write(move |conn| {
            let now = pillbox::domain::Timestamp::now();
            conn.execute(
                "INSERT INTO dose_occurrences (portable_id, household_id, person_id, source_type,
                     source_id, window_starts_on, window_ends_on, position, scheduled_at, outcome,
                     reason, resolved_at, created_at, updated_at)
                 VALUES (?1, ?2, ?3, 'schedule', ?4, '2027-03-10', '2027-03-10', 2,
                         '2027-03-10T20:00:00.000000Z', 'not_taken', 'asleep', ?5, ?5, ?5)",
                rusqlite::params![
                    pillbox::db::new_portable_id(),
                    household_id,
                    person_id,
                    schedule_id,
                    now
                ],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let doses = day(&app, &app.owner, "2027-03-10", Some(&ada)).await;
    assert_eq!(doses[0]["outcome"], "taken");
    assert_eq!(doses[0]["medication_take_id"], take);
    assert!(doses[0]["medication_take_portable_id"].is_string());
    assert_eq!(doses[1]["outcome"], "not_taken");
    assert_eq!(doses[1]["reason"], "asleep");
    assert_eq!(doses[1]["medication_take_id"], Value::Null);
    assert_eq!(doses[0]["warnings"], json!([]));
    // Keys do not change with outcomes.
    assert_eq!(doses[0]["occurrence_key"], first[0]["occurrence_key"]);
    // The next day is untouched.
    let next = day(&app, &app.owner, "2027-03-11", Some(&ada)).await;
    assert!(next.iter().all(|d| d["outcome"] == "open"));

    // Two more takes that day: over max_daily_doses, and one an hour after another.
    insert_take(&app, &ada, twice.id, "2027-03-10T09:05:00.000000Z", None).await;
    insert_take(&app, &ada, twice.id, "2027-03-10T21:00:00.000000Z", None).await;
    let doses = day(&app, &app.owner, "2027-03-10", Some(&ada)).await;
    for dose in &doses {
        assert_eq!(
            dose["warnings"],
            json!([
                "max_daily_doses exceeded",
                "taken earlier than min_hours_between_doses"
            ])
        );
    }
    // Those takes fall outside the next day's window.
    let next = day(&app, &app.owner, "2027-03-11", Some(&ada)).await;
    assert!(next.iter().all(|d| d["warnings"] == json!([])));
}

#[tokio::test]
async fn run_out_forecast_follows_active_routine_sources() {
    let app = TestApp::new().await;
    let ada = new_person(&app, "Ada").await;
    let created = app
        .post(
            &app.hh("/medications"),
            &app.owner,
            json!({"medication": {"name": "Forecast tablets", "dose_amount": "1",
                   "dose_unit": "tablet", "current_supply": "30", "reorder_threshold": "10"}}),
        )
        .await;
    created.assert_status(201);
    let med = Ids::of(created.data());
    assert_eq!(created.data()["days_until_out_of_stock"], Value::Null);
    let path = app.hh(&format!("/medications/{}", med.id));
    let forecast = |body: &Value| {
        (
            body["days_until_low_stock"].clone(),
            body["days_until_out_of_stock"].clone(),
        )
    };

    // As-needed assignments and prn schedules never count.
    assignment(
        &app,
        &ada,
        &med,
        json!({"administration_kind": "as_needed"}),
    )
    .await;
    schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "prn", "schedule_config": {}, "start_date": "2026-01-01"}),
    )
    .await;
    let read = app.get(&path, &app.owner).await;
    assert_eq!(forecast(read.data()), (Value::Null, Value::Null));

    let daily = schedule(
        &app,
        &ada,
        &med,
        json!({"schedule_type": "daily", "schedule_config": {"times": ["08:00", "20:00"]},
               "dose_amount": "1", "dose_unit": "tablet", "start_date": "2026-01-01"}),
    )
    .await;
    let read = app.get(&path, &app.owner).await;
    assert_eq!(forecast(read.data()), (json!(10), json!(15)));
    let listed = app.get(&app.hh("/medications"), &app.owner).await;
    let row = listed
        .data()
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == med.id)
        .unwrap()
        .clone();
    assert_eq!(forecast(&row), (json!(10), json!(15)));

    // A routine weekly assignment of 7 a week adds one a day: 30 / 3 = 10.
    let weekly = assignment(
        &app,
        &ada,
        &med,
        json!({"dose_cycle": "weekly", "max_daily_doses": 7}),
    )
    .await;
    let read = app.get(&path, &app.owner).await;
    assert_eq!(forecast(read.data()), (json!(6), json!(10)));
    // Paused sources stop drawing.
    let weekly_id = weekly.id;
    app.db
        .write(move |conn| {
            conn.execute(
                "UPDATE person_medications SET active = 0 WHERE id = ?1",
                [weekly_id],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let read = app.get(&path, &app.owner).await;
    assert_eq!(forecast(read.data()), (json!(10), json!(15)));

    // Retiring the schedule leaves nothing drawing: no forecast.
    app.delete(
        &app.hh(&format!("/schedules/{}", daily.id)),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    let read = app.get(&path, &app.owner).await;
    assert_eq!(forecast(read.data()), (Value::Null, Value::Null));
}

/// The day's doses read a dozen times (so on every reader thread, each of
/// which keeps the household's plan), the same each time; with the zone.
async fn day_everywhere(app: &TestApp, date: &str) -> (Vec<Value>, Value) {
    let path = app.hh(&format!("/dose_occurrences?date={date}"));
    let first = app.get(&path, &app.owner).await;
    first.assert_status(200);
    for _ in 0..12 {
        let again = app.get(&path, &app.owner).await;
        assert_eq!(again.body, first.body, "every reader thread agrees");
    }
    (
        first.data().as_array().unwrap().clone(),
        first.body["meta"]["time_zone"].clone(),
    )
}

fn times(doses: &[Value]) -> Vec<Value> {
    doses.iter().map(|d| d["scheduled_at"].clone()).collect()
}

#[tokio::test]
async fn a_kept_plan_follows_every_change_on_the_very_next_read() {
    let app = TestApp::new().await;
    let people = app.get(&app.hh("/people"), &app.owner).await;
    let me = people
        .data()
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "Olive Owner");
    let owner = Ids::of(me.expect("the owner's own person"));
    let med = new_medication(&app, "Tablets").await;
    let date = march(10);
    assert!(day_everywhere(&app, &date).await.0.is_empty());

    // A new schedule: two doses that day (the morning one from the slot).
    let planned = schedule(
        &app,
        &owner,
        &med,
        json!({"schedule_type": "daily",
               "schedule_config": {"times": ["20:00"], "slots": ["morning"]}}),
    )
    .await;
    let (doses, zone) = day_everywhere(&app, &date).await;
    assert_eq!(zone, "Europe/London");
    assert_eq!(
        times(&doses),
        [
            json!("2027-03-10T08:00:00.000000Z"),
            json!("2027-03-10T20:00:00.000000Z")
        ]
    );

    // The person's morning slot moves.
    app.patch(
        &app.hh("/notification_preference"),
        &app.owner,
        json!({"notification_preference": {"morning_time": "07:30"}}),
        None,
    )
    .await
    .assert_status(200);
    let (doses, _) = day_everywhere(&app, &date).await;
    assert_eq!(doses[0]["scheduled_at"], "2027-03-10T07:30:00.000000Z");

    // A plan change: one dose, at nine.
    let path = app.hh(&format!("/schedules/{}", planned.id));
    let etag = app.get(&path, &app.owner).await.etag();
    app.patch(
        &path,
        &app.owner,
        json!({"schedule": {"schedule_config": {"times": ["09:00"]}}}),
        Some(&etag),
    )
    .await
    .assert_status(200);
    let (doses, _) = day_everywhere(&app, &date).await;
    assert_eq!(times(&doses), [json!("2027-03-10T09:00:00.000000Z")]);

    // A pause leaves it out; resuming brings it back.
    app.patch(
        &app.hh(&format!("/schedules/{}/pause", planned.id)),
        &app.owner,
        json!({}),
        None,
    )
    .await
    .assert_status(200);
    assert!(day_everywhere(&app, &date).await.0.is_empty());
    app.patch(
        &app.hh(&format!("/schedules/{}/resume", planned.id)),
        &app.owner,
        json!({}),
        None,
    )
    .await
    .assert_status(200);
    assert_eq!(day_everywhere(&app, &date).await.0.len(), 1);

    // A direct assignment adds its untimed dose.
    let assigned = assignment(&app, &owner, &med, json!({})).await;
    let (doses, _) = day_everywhere(&app, &date).await;
    assert_eq!(of_source(&doses, "person_medication", &assigned).len(), 1);

    // The household's zone moves the day's times.
    app.patch(
        &app.hh("/admin/settings"),
        &app.owner,
        json!({"household": {"time_zone": "America/New_York"}}),
        None,
    )
    .await
    .assert_status(200);
    let (doses, zone) = day_everywhere(&app, &date).await;
    assert_eq!(zone, "America/New_York");
    assert_eq!(
        of_source(&doses, "schedule", &planned)[0]["scheduled_at"],
        "2027-03-10T14:00:00.000000Z"
    );
}
