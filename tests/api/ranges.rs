//! Ranges, list limits and vocabularies are the body types' own: a value
//! outside them is refused while the body is read (before any record is
//! looked up), naming the field, and the served schema states the same
//! limit.

use axum::http::Method;
use serde_json::{Value, json};

use crate::support::records::new_medication;
use crate::support::{TestApp, TestResponse};

fn refused(response: &TestResponse, field: &str) {
    response.assert_error(422, "validation_failed");
    assert!(
        response.body["error"]["errors"][field].is_array(),
        "expected an error naming {field}: {}",
        response.body
    );
}

#[tokio::test]
async fn out_of_range_values_are_refused_before_any_record_is_looked_up() {
    let app = TestApp::new().await;
    // No such source: the rule would answer 404, but the body is refused
    // first, as any malformed body is.
    let take = app
        .post(
            &app.hh("/medication_takes"),
            &app.owner,
            json!({"medication_take": {"source_type": "schedule", "source_id": 999999,
                   "taken_at": "2025-01-10T20:00:00Z", "dose_amount": "0"}}),
        )
        .await;
    refused(&take, "dose_amount");
    assert!(
        !take.body.to_string().contains("\"0\""),
        "the value is not echoed"
    );
    let removal = app
        .post(
            &app.hh("/medications/999999/stock_removals"),
            &app.owner,
            json!({"stock_removal": {"quantity": "-1", "reason": "expired",
                   "submission_id": "0192a5b0-0000-7000-8000-000000000001"}}),
        )
        .await;
    refused(&removal, "quantity");
    let med = new_medication(&app, "Ibuprofen").await;
    let inventory = app
        .patch(
            &app.hh(&format!("/medications/{}/adjust_inventory", med.id)),
            &app.owner,
            json!({"adjustment": {"quantity": "-0.5", "reason": "stock_count"}}),
            None,
        )
        .await;
    refused(&inventory, "quantity");
    let option = app
        .post(
            &app.hh("/dosage_options"),
            &app.owner,
            json!({"dosage_option": {"medication_id": 999999, "amount": "1", "unit": "ml",
                   "default_min_hours_between_doses": "-4"}}),
        )
        .await;
    refused(&option, "default_min_hours_between_doses");
    // Nothing was changed.
    let stock = app
        .get(&app.hh(&format!("/medications/{}", med.id)), &app.owner)
        .await;
    assert_eq!(stock.data()["current_supply"], "10.5");
}

#[tokio::test]
async fn list_limits_are_refused_while_the_body_is_read() {
    let app = TestApp::new().await;
    let ids: Vec<i64> = (1..=101).collect();
    let event = app
        .post(
            &app.hh("/health_events"),
            &app.owner,
            json!({"health_event": {"person_id": 999999, "event_kind": "illness",
                   "title": "Cold", "started_on": "2025-01-01", "medication_ids": ids}}),
        )
        .await;
    refused(&event, "medication_ids");
    let operation = json!({"resource_type": "location", "action": "create",
                           "attributes": {"name": "Shelf"}});
    let batch = app
        .send(
            Method::POST,
            &app.hh("/sync/batches"),
            Some(&app.owner),
            Some(json!({"batch": {"operations": vec![operation; 201]}})),
            &[],
        )
        .await;
    refused(&batch, "operations");
    let empty = app
        .send(
            Method::POST,
            &app.hh("/sync/batches"),
            Some(&app.owner),
            Some(json!({"batch": {"operations": []}})),
            &[],
        )
        .await;
    refused(&empty, "operations");
    let locations = app.get(&app.hh("/locations"), &app.owner).await;
    assert_eq!(
        locations.body["meta"]["total_count"], 0,
        "{}",
        locations.body
    );
}

fn schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
    &doc["components"]["schemas"][name]
}

#[tokio::test]
async fn the_document_states_each_range_list_limit_and_vocabulary_once() {
    let app = TestApp::new().await;
    let doc = app.document();
    let positive = &schema(doc, "NewMedicationTake")["properties"]["dose_amount"];
    let pattern = |v: &Value| v["pattern"].as_str().unwrap().to_string();
    assert!(pattern(positive).contains("[1-9]"), "{positive}");
    assert_eq!(
        pattern(positive),
        pattern(&schema(doc, "DoseOccurrence")["properties"]["dose_amount"]),
    );
    let hours = &schema(doc, "ScheduleAttributes")["properties"]["min_hours_between_doses"];
    assert!(hours.to_string().contains("^0*[0-9]{1,12}"), "{hours}");
    assert_eq!(
        schema(doc, "HealthEventAttributes")["properties"]["medication_ids"]["maxItems"],
        100
    );
    let batch = &schema(doc, "SyncBatchRequest")["properties"]["batch"]["properties"]["operations"];
    assert_eq!(
        (&batch["minItems"], &batch["maxItems"]),
        (&json!(1), &json!(200))
    );
    assert_eq!(
        schema(doc, "MedicationTakeWarning")["properties"]["code"]["enum"],
        json!([
            "max_daily_doses_exceeded",
            "min_hours_between_doses",
            "min_hours_between_doses_other_source",
            "before_start_date",
            "after_end_date",
            "source_paused",
            "stock_not_deducted",
            "stock_ran_out"
        ])
    );
    let outcomes = json!(["open", "not_taken", "taken"]);
    assert_eq!(
        schema(doc, "DoseOccurrence")["properties"]["outcome"]["enum"],
        outcomes
    );
    assert_eq!(
        schema(doc, "PortableDoseOccurrence")["properties"]["outcome"]["enum"],
        outcomes
    );
    let weekdays = doc.to_string();
    assert!(
        weekdays.contains(
            r#""enum":["monday","tuesday","wednesday","thursday","friday","saturday","sunday"]"#
        ),
        "weekdays listed in the schedule_config schema"
    );
}
