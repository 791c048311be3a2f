//! The plan over time (issue 10): plan changes never rewrite past doses,
//! pauses are periods, no silently empty schedule, and plan validation.

use serde_json::{Value, json};

use crate::schedules::{Ids, new_medication, new_person};
use crate::support::{TestApp, TestResponse};

fn ids(data: &Value) -> Ids {
    Ids {
        id: data["id"].as_i64().unwrap(),
        portable: data["portable_id"].as_str().unwrap().to_string(),
    }
}

async fn own_person(app: &TestApp) -> Ids {
    let people = app.get(&app.hh("/people"), &app.owner).await;
    ids(people
        .data()
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "Olive Owner")
        .expect("the owner's linked person"))
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
    let schedule = ids(created.data());
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
    // PUT without the morning time clears it too.
    let conflict = app
        .put(
            &app.hh("/notification_preference"),
            &app.owner,
            json!({"notification_preference": {"enabled": true, "dose_due_enabled": true,
                "missed_dose_enabled": true, "low_stock_enabled": true,
                "private_text_enabled": false, "evening_time": "18:00"}}),
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
    let schedule = ids(created.data());
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
