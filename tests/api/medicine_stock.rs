//! Stock kept exactly and counted once: orders and receipts, exact decimal
//! bounds, portable references in batch removals, deletion markers for
//! what a deleted medication or location takes with it.

use serde_json::{Value, json};

use crate::support::records::paracetamol;
use crate::support::{TestApp, TestResponse};

async fn medication(app: &TestApp, supply: &str) -> (i64, String) {
    let mut body = paracetamol();
    body["medication"]["current_supply"] = json!(supply);
    let created = app.post(&app.hh("/medications"), &app.owner, body).await;
    created.assert_status(201);
    (
        created.id(),
        created.data()["portable_id"].as_str().unwrap().to_string(),
    )
}

async fn read(app: &TestApp, id: i64) -> TestResponse {
    let got = app
        .get(&app.hh(&format!("/medications/{id}")), &app.owner)
        .await;
    got.assert_status(200);
    got
}

async fn supply(app: &TestApp, id: i64) -> String {
    read(app, id).await.data()["current_supply"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn order(app: &TestApp, id: i64, details: Value) -> TestResponse {
    app.patch(
        &app.hh(&format!("/medications/{id}/mark_as_ordered")),
        &app.owner,
        json!({ "order_details": details }),
        None,
    )
    .await
}

async fn receive(app: &TestApp, id: i64, details: Option<Value>) -> TestResponse {
    let body = match details {
        Some(details) => json!({ "order_details": details }),
        None => json!({}),
    };
    app.patch(
        &app.hh(&format!("/medications/{id}/mark_as_received")),
        &app.owner,
        body,
        None,
    )
    .await
}

async fn row_count(app: &TestApp, table: &'static str) -> i64 {
    app.db
        .read(move |c| Ok(c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))?))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_receipt_with_nothing_on_order_adds_nothing_however_often_it_is_tapped() {
    let app = TestApp::new().await;
    let (id, _) = medication(&app, "3").await;
    order(&app, id, json!({"quantity": "5"}))
        .await
        .assert_status(200);
    let received = receive(&app, id, None).await;
    received.assert_status(200);
    assert_eq!(received.data()["current_supply"], "8");
    assert_eq!(received.data()["reorder_status"], "received");

    // Tapping again (or five phones at once) never re-adds the last delivery.
    let taps: Vec<_> = (0..5).map(|_| receive(&app, id, None)).collect();
    for tap in futures_util::future::join_all(taps).await {
        tap.assert_error(409, "no_order_quantity");
    }
    assert_eq!(supply(&app, id).await, "8");

    // A delivery that says how much came is still added, order or not.
    let received = receive(&app, id, Some(json!({"quantity": "2"}))).await;
    assert_eq!(received.data()["current_supply"], "10");
    assert_eq!(received.data()["reorder_status"], "received");
}

#[tokio::test]
async fn a_partial_receipt_leaves_the_rest_on_order() {
    let app = TestApp::new().await;
    let (id, _) = medication(&app, "0").await;
    order(
        &app,
        id,
        json!({"quantity": "20", "supplier": "High Street Pharmacy", "expected_on": "2026-12-01"}),
    )
    .await
    .assert_status(200);
    let partial = receive(&app, id, Some(json!({"quantity": "5"}))).await;
    partial.assert_status(200);
    let data = partial.data();
    assert_eq!(data["current_supply"], "5");
    assert_eq!(data["reorder_status"], "ordered");
    assert_eq!(data["reorder_quantity"], "15");
    assert_eq!(data["reorder_supplier"], "High Street Pharmacy");
    assert_eq!(data["reorder_expected_on"], "2026-12-01");
    assert!(data["reorder_received_at"].is_string());

    // The rest arrives without a quantity: exactly what was outstanding.
    let rest = receive(&app, id, None).await;
    rest.assert_status(200);
    assert_eq!(rest.data()["current_supply"], "20");
    assert_eq!(rest.data()["reorder_status"], "received");
    receive(&app, id, None)
        .await
        .assert_error(409, "no_order_quantity");
    assert_eq!(supply(&app, id).await, "20");
}

#[tokio::test]
async fn a_repeated_order_amends_the_outstanding_one_and_keeps_what_it_leaves_out() {
    let app = TestApp::new().await;
    let (id, _) = medication(&app, "1").await;
    let first = order(
        &app,
        id,
        json!({"quantity": "20", "supplier": "High Street Pharmacy", "expected_on": "2026-12-01"}),
    )
    .await;
    let ordered_at = first.data()["reorder_ordered_at"].clone();
    let second = order(&app, id, json!({"quantity": "30"})).await;
    second.assert_status(200);
    let data = second.data();
    assert_eq!(data["reorder_status"], "ordered");
    // Replaced, not added: 30 in all is expected.
    assert_eq!(data["reorder_quantity"], "30");
    assert_eq!(data["reorder_supplier"], "High Street Pharmacy");
    assert_eq!(data["reorder_expected_on"], "2026-12-01");
    assert_eq!(data["reorder_ordered_at"], ordered_at);
    // Null clears a field.
    let third = order(&app, id, json!({"expected_on": null})).await;
    assert_eq!(third.data()["reorder_expected_on"], Value::Null);
    assert_eq!(third.data()["reorder_quantity"], "30");
    let received = receive(&app, id, None).await;
    assert_eq!(received.data()["current_supply"], "31");

    // After the receipt an order starts afresh.
    let fresh = order(&app, id, json!({})).await;
    assert_eq!(fresh.data()["reorder_status"], "ordered");
    assert_eq!(fresh.data()["reorder_quantity"], Value::Null);
    assert_eq!(fresh.data()["reorder_supplier"], Value::Null);
    assert_ne!(fresh.data()["reorder_ordered_at"], ordered_at);
    receive(&app, id, None)
        .await
        .assert_error(409, "no_order_quantity");
}

#[tokio::test]
async fn stock_stays_within_the_accepted_range_and_never_rounds() {
    let app = TestApp::new().await;
    let (id, _) = medication(&app, "999999999990").await;
    let audits = row_count(&app, "audit_events").await;

    // A receipt past the largest quantity is refused and changes nothing.
    let refused = receive(&app, id, Some(json!({"quantity": "10.000001"}))).await;
    refused.assert_error(422, "validation_failed");
    assert!(refused.body["error"]["errors"]["quantity"].is_array());
    assert!(!refused.body.to_string().contains("10.000001"));
    assert_eq!(supply(&app, id).await, "999999999990");
    assert_eq!(row_count(&app, "audit_events").await, audits);

    // Up to it is fine, and small removals stay exact there.
    let received = receive(&app, id, Some(json!({"quantity": "9.999999"}))).await;
    received.assert_status(200);
    assert_eq!(received.data()["current_supply"], "999999999999.999999");
    let removal = app
        .post(
            &app.hh(&format!("/medications/{id}/stock_removals")),
            &app.owner,
            json!({"stock_removal": {"quantity": "0.000001", "reason": "lost",
                   "submission_id": pillbox::db::new_portable_id()}}),
        )
        .await;
    removal.assert_status(201);
    assert_eq!(removal.data()["supply_after"], "999999999999.999998");
    assert_eq!(supply(&app, id).await, "999999999999.999998");

    // Inputs past the range are refused wherever a quantity is accepted.
    let etag = read(&app, id).await.etag();
    let adjusted = app
        .patch(
            &app.hh(&format!("/medications/{id}/adjust_inventory")),
            &app.owner,
            json!({"adjustment": {"quantity": "1000000000000", "reason": "stock_count"}}),
            Some(&etag),
        )
        .await;
    adjusted.assert_error(422, "validation_failed");
    assert!(!adjusted.body.to_string().contains("1000000000000"));
    let mut body = paracetamol();
    body["medication"]["current_supply"] = json!("99999999999999999999");
    app.post(&app.hh("/medications"), &app.owner, body)
        .await
        .assert_error(422, "validation_failed");
    assert_eq!(supply(&app, id).await, "999999999999.999998");

    // The same bound holds inside a batch, which rolls back whole.
    let etag = read(&app, id).await.etag();
    let batch = app
        .post(
            &app.hh("/sync/batches"),
            &app.owner,
            json!({"batch": {"operations": [
                {"action": "remove_stock", "resource_type": "medication", "id": id.to_string(),
                 "attributes": {"quantity": "1", "reason": "lost",
                                "submission_id": pillbox::db::new_portable_id()}},
                {"action": "mark_as_received", "resource_type": "medication", "id": id.to_string(),
                 "if_match": etag, "attributes": {"quantity": "5"}},
            ]}}),
        )
        .await;
    batch.assert_status(409);
    let etag = read(&app, id).await.etag();
    let batch = app
        .post(
            &app.hh("/sync/batches"),
            &app.owner,
            json!({"batch": {"operations": [
                {"action": "mark_as_received", "resource_type": "medication", "id": id.to_string(),
                 "if_match": etag, "attributes": {"quantity": "5"}},
            ]}}),
        )
        .await;
    batch.assert_error(422, "validation_failed");
    assert_eq!(supply(&app, id).await, "999999999999.999998");
}

#[tokio::test]
async fn a_batch_removal_names_a_dosage_option_by_portable_id_and_returns_the_medications_etag() {
    let app = TestApp::new().await;
    let (id, portable) = medication(&app, "10").await;
    let option = app
        .post(
            &app.hh("/dosage_options"),
            &app.owner,
            json!({"dosage_option": {"medication_id": portable, "amount": "1", "unit": "tablet",
                   "current_supply": "6"}}),
        )
        .await;
    option.assert_status(201);
    let option_id = option.id();
    let option_portable = option.data()["portable_id"].as_str().unwrap().to_string();
    let removal = |quantity: &str, dosage: Value| {
        json!({"action": "remove_stock", "resource_type": "medication", "id": portable,
               "attributes": {"quantity": quantity, "reason": "damaged", "dosage_id": dosage,
                              "submission_id": pillbox::db::new_portable_id()}})
    };
    let applied = app
        .post(
            &app.hh("/sync/batches"),
            &app.owner,
            json!({"batch": {"operations": [
                removal("2", json!(option_portable)),
                removal("1", json!(option_id.to_string())),
                removal("3", Value::Null),
            ]}}),
        )
        .await;
    applied.assert_status(201);
    let option_now = app
        .get(&app.hh(&format!("/dosage_options/{option_id}")), &app.owner)
        .await;
    assert_eq!(option_now.data()["current_supply"], "3");
    let medication_now = read(&app, id).await;
    assert_eq!(medication_now.data()["current_supply"], "7");
    let results = applied.data()["results"].as_array().unwrap();
    for result in results {
        assert_eq!(result["record_type"], "StockRemoval");
        assert!(result["etag"].is_string(), "{result}");
    }
    // The last result carries the medication's ETag as it now stands, so
    // the next queued change of the medication applies.
    assert_eq!(results[2]["etag"], json!(medication_now.etag()));
    let update = app
        .post(
            &app.hh("/sync/batches"),
            &app.owner,
            json!({"batch": {"operations": [
                {"action": "update", "resource_type": "medication", "id": portable,
                 "if_match": results[2]["etag"], "attributes": {"friendly_name": "Para"}},
            ]}}),
        )
        .await;
    update.assert_status(201);
}

#[tokio::test]
async fn deleting_a_medication_tombstones_its_dosage_options() {
    let app = TestApp::new().await;
    let (id, portable) = medication(&app, "10").await;
    let mut options = Vec::new();
    for supply in [json!("4"), Value::Null] {
        let created = app
            .post(
                &app.hh("/dosage_options"),
                &app.owner,
                json!({"dosage_option": {"medication_id": id, "amount": "1", "unit": "tablet",
                       "current_supply": supply}}),
            )
            .await;
        created.assert_status(201);
        options.push(created.data()["portable_id"].as_str().unwrap().to_string());
    }
    let snapshot = app.get(&app.hh("/sync/snapshot"), &app.owner).await;
    let cursor = snapshot.data()["cursor"].as_str().unwrap().to_string();

    let etag = read(&app, id).await.etag();
    app.delete(
        &app.hh(&format!("/medications/{id}")),
        &app.owner,
        Some(&etag),
    )
    .await
    .assert_status(204);
    let changes = app
        .get(
            &app.hh(&format!("/sync/changes?cursor={cursor}")),
            &app.owner,
        )
        .await;
    changes.assert_status(200);
    let tombstones: Vec<(String, String)> = changes.data()["tombstones"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["record_type"].as_str().unwrap().to_string(),
                t["record_portable_id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut expected: Vec<(String, String)> = options
        .iter()
        .map(|p| ("MedicationDosageOption".to_string(), p.clone()))
        .collect();
    expected.push(("Medication".to_string(), portable));
    assert_eq!(tombstones, expected);
    // A fresh snapshot agrees: the options are gone.
    let fresh = app.get(&app.hh("/sync/snapshot"), &app.owner).await;
    let listed = fresh.data()["records"]["dosage_options"]
        .as_array()
        .unwrap();
    assert!(
        listed
            .iter()
            .all(|o| !options.contains(&o["portable_id"].as_str().unwrap().to_string()))
    );
}

#[tokio::test]
async fn deleting_a_location_moves_the_people_it_served_on_in_the_feed() {
    let app = TestApp::new().await;
    let person = crate::support::records::new_person(&app, "Ada").await;
    let location = app
        .post(
            &app.hh("/locations"),
            &app.owner,
            json!({"location": {"name": "Nan's"}}),
        )
        .await;
    location.assert_status(201);
    let location_id = location.id();
    app.post(
        &app.hh(&format!("/locations/{location_id}/location_memberships")),
        &app.owner,
        json!({"location_membership": {"person_id": person.id}}),
    )
    .await
    .assert_status(201);
    let before = app
        .get(&app.hh(&format!("/people/{}", person.id)), &app.owner)
        .await;
    assert_eq!(before.data()["location_ids"], json!([location_id]));
    let mut body = paracetamol();
    body["medication"]["location_id"] = json!(location_id);
    let kept_there = app.post(&app.hh("/medications"), &app.owner, body).await;
    kept_there.assert_status(201);
    assert_eq!(kept_there.data()["location_id"], json!(location_id));
    let medication_id = kept_there.id();
    let snapshot = app.get(&app.hh("/sync/snapshot"), &app.owner).await;
    let cursor = snapshot.data()["cursor"].as_str().unwrap().to_string();

    let etag = app
        .get(&app.hh(&format!("/locations/{location_id}")), &app.owner)
        .await
        .etag();
    app.delete(
        &app.hh(&format!("/locations/{location_id}")),
        &app.owner,
        Some(&etag),
    )
    .await
    .assert_status(204);
    let after = app
        .get(&app.hh(&format!("/people/{}", person.id)), &app.owner)
        .await;
    assert_eq!(after.data()["location_ids"], json!([]));
    assert_ne!(after.etag(), before.etag());
    let changes = app
        .get(
            &app.hh(&format!("/sync/changes?cursor={cursor}")),
            &app.owner,
        )
        .await;
    let data = changes.data();
    assert!(data["changes"].as_array().unwrap().iter().any(|c| {
        c["record_type"] == "Person" && c["record_portable_id"] == json!(person.portable)
    }));
    // The medication kept there has no location any more, as a fresh
    // snapshot shows it, and the feed says it changed.
    let medication = read(&app, medication_id).await;
    assert_eq!(medication.data()["location_id"], Value::Null);
    assert_eq!(medication.data()["location_portable_id"], Value::Null);
    assert_ne!(medication.etag(), kept_there.etag());
    assert!(data["changes"].as_array().unwrap().iter().any(|c| {
        c["record_type"] == "Medication"
            && c["record_portable_id"] == kept_there.data()["portable_id"]
    }));
    assert_eq!(data["tombstones"].as_array().unwrap().len(), 1);
}

/// Today in the test household's time zone, moved by `days`.
fn day(days: i64) -> String {
    let london = jiff::tz::TimeZone::get("Europe/London").unwrap();
    jiff::Timestamp::now()
        .to_zoned_datetime(london)
        .date()
        .saturating_add(jiff::Span::new().days(days))
        .to_string()
}

async fn stocked(app: &TestApp, unit: &str, supply: &str, threshold: &str) -> i64 {
    let created = app
        .post(
            &app.hh("/medications"),
            &app.owner,
            json!({"medication": {"name": "Forecast", "dose_amount": "1", "dose_unit": unit,
                   "current_supply": supply, "reorder_threshold": threshold}}),
        )
        .await;
    created.assert_status(201);
    created.id()
}

async fn plan(app: &TestApp, person: i64, medication: i64, attrs: Value) -> TestResponse {
    let mut body = json!({"person_id": person, "medication_id": medication});
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
    created
}

fn forecast(medication: &Value) -> (Value, Value) {
    (
        medication["days_until_low_stock"].clone(),
        medication["days_until_out_of_stock"].clone(),
    )
}

#[tokio::test]
async fn run_out_forecasts_step_through_the_plan_day_by_day() {
    let app = TestApp::new().await;
    let ada = crate::support::records::new_person(&app, "Ada").await.id;
    let twice = json!({"times": ["08:00", "20:00"]});

    // Starts in six months (182 days): nothing is used until then.
    let later = stocked(&app, "tablet", "30", "10").await;
    plan(
        &app,
        ada,
        later,
        json!({"schedule_type": "daily", "schedule_config": twice,
        "dose_amount": "1", "dose_unit": "tablet", "start_date": day(182)}),
    )
    .await;
    // Ends in two days: 6 are used, the stock never runs out.
    let ending = stocked(&app, "tablet", "30", "10").await;
    plan(
        &app,
        ada,
        ending,
        json!({"schedule_type": "daily", "schedule_config": twice,
        "dose_amount": "1", "dose_unit": "tablet", "start_date": day(-10), "end_date": day(2)}),
    )
    .await;
    // A taper rising from 1 mg to 10 mg a day: 1 + 1 + 10 + 10 = 22, then 32 > 30.
    let taper = stocked(&app, "mg", "30", "10").await;
    plan(
        &app,
        ada,
        taper,
        json!({"schedule_type": "tapering", "dose_amount": "1",
        "dose_unit": "mg", "start_date": day(0), "end_date": day(40),
        "schedule_config": {"times": ["08:00"], "taper_steps": [
            {"start_date": day(0), "end_date": day(1), "dose_amount": "1"},
            {"start_date": day(2), "end_date": day(40), "dose_amount": "10"}]}}),
    )
    .await;
    // A taper and a daily schedule starting in 40 days forecast alike.
    let taper_later = stocked(&app, "tablet", "30", "10").await;
    plan(
        &app,
        ada,
        taper_later,
        json!({"schedule_type": "tapering", "dose_amount": "1",
        "dose_unit": "tablet", "start_date": day(40), "end_date": day(120),
        "schedule_config": {"times": ["08:00", "20:00"], "taper_steps": [
            {"start_date": day(40), "end_date": day(120), "dose_amount": "1"}]}}),
    )
    .await;
    let daily_later = stocked(&app, "tablet", "30", "10").await;
    plan(
        &app,
        ada,
        daily_later,
        json!({"schedule_type": "daily", "schedule_config": twice,
        "dose_amount": "1", "dose_unit": "tablet", "start_date": day(40)}),
    )
    .await;
    // Paused: nothing is planned while the pause lasts, so no forecast.
    let paused = stocked(&app, "tablet", "30", "10").await;
    let schedule = plan(
        &app,
        ada,
        paused,
        json!({"schedule_type": "daily",
        "schedule_config": twice, "dose_amount": "1", "dose_unit": "tablet",
        "start_date": day(-3)}),
    )
    .await;
    app.post(
        &app.hh("/medication_pause_periods"),
        &app.owner,
        json!({"medication_pause_period": {"source_type": "schedule",
               "source_id": schedule.data()["portable_id"], "reason": "other"}}),
    )
    .await
    .assert_status(201);

    let expected = [
        (later, (json!(192), json!(197))),
        (ending, (json!(365), json!(365))),
        (taper, (json!(3), json!(4))),
        (taper_later, (json!(50), json!(55))),
        (daily_later, (json!(50), json!(55))),
        (paused, (Value::Null, Value::Null)),
    ];
    let listed = app
        .get(&app.hh("/medications?per_page=100"), &app.owner)
        .await;
    for (id, want) in expected {
        assert_eq!(
            forecast(read(&app, id).await.data()),
            want,
            "medication {id}"
        );
        let row = listed
            .data()
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] == id)
            .unwrap();
        assert_eq!(forecast(row), want, "listed medication {id}");
    }
    // The contract says how the fields are computed.
    let doc = app.document();
    let field =
        &doc["components"]["schemas"]["Medication"]["properties"]["days_until_out_of_stock"];
    assert!(
        field["description"]
            .as_str()
            .unwrap()
            .contains("null only when nothing")
    );
}

#[tokio::test]
async fn a_dosage_option_with_its_own_stock_is_looked_after_like_a_medication() {
    let app = TestApp::new().await;
    let ada = crate::support::records::new_person(&app, "Ada").await.id;
    let medication = stocked(&app, "tablet", "100", "10").await;
    let option_with = |supply: Value, threshold: Value| {
        json!({"dosage_option": {"medication_id": medication, "amount": "1", "unit": "tablet",
               "current_supply": supply, "reorder_threshold": threshold}})
    };
    let tracked = app
        .post(
            &app.hh("/dosage_options"),
            &app.owner,
            option_with(json!("10"), json!("4")),
        )
        .await;
    tracked.assert_status(201);
    let tracked_id = tracked.id();
    let untracked = app
        .post(
            &app.hh("/dosage_options"),
            &app.owner,
            option_with(Value::Null, Value::Null),
        )
        .await;
    untracked.assert_status(201);
    let untracked_id = untracked.id();
    let schedule = plan(
        &app,
        ada,
        medication,
        json!({"schedule_type": "daily",
        "schedule_config": {"times": ["08:00", "20:00"]}, "start_date": day(-1),
        "source_dosage_option_id": tracked_id}),
    )
    .await;

    let option = |id: i64| {
        let app = &app;
        async move {
            let got = app
                .get(&app.hh(&format!("/dosage_options/{id}")), &app.owner)
                .await;
            got.assert_status(200);
            got.data().clone()
        }
    };
    // Two a day from its own 10: at its threshold of 4 in 3 days, out in 5.
    let shown = option(tracked_id).await;
    assert_eq!(
        (shown["low_stock"].clone(), shown["out_of_stock"].clone()),
        (json!(false), json!(false))
    );
    assert_eq!(forecast(&shown), (json!(3), json!(5)));
    // The medication's own stock is not drawn on by that schedule.
    assert_eq!(
        forecast(read(&app, medication).await.data()),
        (Value::Null, Value::Null)
    );
    let plain = option(untracked_id).await;
    assert_eq!(plain["low_stock"], json!(false));
    assert_eq!(forecast(&plain), (Value::Null, Value::Null));
    // The list shows the same.
    let listed = app
        .get(
            &app.hh(&format!("/dosage_options?medication_id={medication}")),
            &app.owner,
        )
        .await;
    let row = listed
        .data()
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == tracked_id)
        .unwrap()
        .clone();
    assert_eq!(forecast(&row), (json!(3), json!(5)));

    // A take under the schedule deducts from the option's stock.
    let snapshot = app.get(&app.hh("/sync/snapshot"), &app.owner).await;
    let cursor = snapshot.data()["cursor"].as_str().unwrap().to_string();
    let taken = app
        .post(
            &app.hh("/medication_takes"),
            &app.owner,
            json!({"medication_take": {"source_type": "schedule",
                   "source_id": schedule.data()["portable_id"],
                   "taken_at": jiff::Timestamp::now().to_string()}}),
        )
        .await;
    taken.assert_status(201);
    let shown = option(tracked_id).await;
    assert_eq!(shown["current_supply"], "9");
    assert_eq!(supply(&app, medication).await, "100");
    let changes = app
        .get(
            &app.hh(&format!("/sync/changes?cursor={cursor}")),
            &app.owner,
        )
        .await;
    assert!(
        changes.data()["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| {
                c["record_type"] == "MedicationDosageOption"
                    && c["record_id"] == json!(tracked_id.to_string())
            })
    );

    // At or below its threshold, and empty.
    let etag = app
        .get(
            &app.hh(&format!("/dosage_options/{tracked_id}")),
            &app.owner,
        )
        .await
        .etag();
    let low = app
        .patch(
            &app.hh(&format!("/dosage_options/{tracked_id}")),
            &app.owner,
            json!({"dosage_option": {"current_supply": "0"}}),
            Some(&etag),
        )
        .await;
    low.assert_status(200);
    assert_eq!(low.data()["low_stock"], json!(true));
    assert_eq!(low.data()["out_of_stock"], json!(true));
    assert_eq!(forecast(low.data()), (json!(0), json!(0)));
}

/// Reads on every reader thread, so each keeps the household's plan.
async fn forecast_everywhere(app: &TestApp, id: i64) -> (Value, Value) {
    let first = forecast(read(app, id).await.data());
    for _ in 0..12 {
        assert_eq!(forecast(read(app, id).await.data()), first);
        let listed = app.get(&app.hh("/medications"), &app.owner).await;
        let row = listed
            .data()
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] == id);
        assert_eq!(forecast(row.unwrap()), first, "listed");
    }
    first
}

#[tokio::test]
async fn a_kept_forecast_follows_every_change_on_the_very_next_read() {
    let app = TestApp::new().await;
    let ada = crate::support::records::new_person(&app, "Ada").await.id;
    let id = stocked(&app, "tablet", "30", "10").await;
    assert_eq!(
        forecast_everywhere(&app, id).await,
        (Value::Null, Value::Null)
    );

    // A new plan: two a day from today.
    let schedule = plan(
        &app,
        ada,
        id,
        json!({"schedule_type": "daily", "schedule_config": {"times": ["08:00", "20:00"]},
        "dose_amount": "1", "dose_unit": "tablet", "start_date": day(0)}),
    )
    .await;
    assert_eq!(forecast_everywhere(&app, id).await, (json!(10), json!(15)));

    // A plan change: one a day.
    let path = app.hh(&format!("/schedules/{}", schedule.id()));
    let etag = app.get(&path, &app.owner).await.etag();
    app.patch(
        &path,
        &app.owner,
        json!({"schedule": {"schedule_config": {"times": ["08:00"]}}}),
        Some(&etag),
    )
    .await
    .assert_status(200);
    assert_eq!(forecast_everywhere(&app, id).await, (json!(20), json!(30)));

    // A take uses stock.
    app.post(
        &app.hh("/medication_takes"),
        &app.owner,
        json!({"medication_take": {"source_type": "schedule",
               "source_id": schedule.data()["portable_id"],
               "taken_at": jiff::Timestamp::now().to_string()}}),
    )
    .await
    .assert_status(201);
    assert_eq!(forecast_everywhere(&app, id).await, (json!(19), json!(29)));

    // A pause plans nothing; its end plans again.
    let paused = app
        .post(
            &app.hh("/medication_pause_periods"),
            &app.owner,
            json!({"medication_pause_period": {"source_type": "schedule",
                   "source_id": schedule.data()["portable_id"], "reason": "other"}}),
        )
        .await;
    paused.assert_status(201);
    assert_eq!(
        forecast_everywhere(&app, id).await,
        (Value::Null, Value::Null)
    );
    app.post(
        &app.hh(&format!(
            "/medication_pause_periods/{}/resume",
            paused.data()["id"].as_str().unwrap()
        )),
        &app.owner,
        json!({}),
    )
    .await
    .assert_status(200);
    assert_eq!(forecast_everywhere(&app, id).await, (json!(19), json!(29)));
}
