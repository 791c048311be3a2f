//! The MCP endpoint through rmcp's own client over a real TCP port: the
//! handshake, the tool list, read tools, a write that shows in REST and
//! the change feed, and the refusals of a view-only and a revoked token.

use pillbox::auth::Role;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::support::TestApp;
use crate::support::records::{Ids, grant, new_medication, new_person};

const TOOLS: [&str; 11] = [
    "get_household_summary",
    "list_expected_doses",
    "list_medications",
    "get_person_activity",
    "list_pause_history",
    "list_review_queue",
    "record_medication_take",
    "mark_dose_not_taken",
    "pause_medication_source",
    "resume_medication_source",
    "record_stock_removal",
];

/// The app's router served on a free port; the MCP endpoint's URL.
async fn serve(app: &TestApp) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = app.router.clone();
    tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    format!("http://{addr}/mcp")
}

async fn connect(url: &str, token: &str) -> Result<RunningService<RoleClient, ()>, String> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token),
    );
    ().serve(transport).await.map_err(|e| e.to_string())
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    arguments: Value,
) -> CallToolResult {
    let mut params = CallToolRequestParams::new(tool.to_string());
    params.arguments = arguments.as_object().cloned();
    client
        .call_tool(params)
        .await
        .expect("the call is answered")
}

fn ok(result: &CallToolResult) -> &Value {
    assert_eq!(result.is_error, Some(false), "{result:?}");
    result
        .structured_content
        .as_ref()
        .expect("structured result")
}

fn error_code(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    result.structured_content.as_ref().unwrap()["error"]["code"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Ada with a daily 08:00 paracetamol schedule that started in 2024.
async fn household(app: &TestApp) -> (Ids, Ids, Ids) {
    let ada = new_person(app, "Ada").await;
    let paracetamol = new_medication(app, "Paracetamol").await;
    let start = "2024-01-01";
    let created = app
        .post(
            &app.hh("/schedules"),
            &app.owner,
            json!({"schedule": {
                "person_id": ada.id, "medication_id": paracetamol.id,
                "schedule_type": "daily", "schedule_config": {"times": ["08:00"]},
                "dose_amount": "1", "dose_unit": "tablet",
                "start_date": start,
            }}),
        )
        .await;
    created.assert_status(201);
    let schedule = Ids {
        id: created.id(),
        portable: created.data()["portable_id"].as_str().unwrap().to_string(),
    };
    (ada, paracetamol, schedule)
}

#[tokio::test]
async fn an_assistant_reads_the_household_and_records_a_take() {
    let app = TestApp::new().await;
    let (ada, paracetamol, schedule) = household(&app).await;
    let url = serve(&app).await;
    let client = connect(&url, &app.owner).await.unwrap();
    let info = client.peer_info().expect("initialized");
    assert_eq!(info.server_info.as_ref().unwrap().name, "pillbox");

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, TOOLS);
    for tool in &tools {
        assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
        assert_eq!(tool.output_schema.as_ref().unwrap()["type"], "object");
    }
    let caps = app.get("/api/v1/capabilities", &app.owner).await;
    let mcp = &caps.data()["client_tools"]["mcp_server"];
    assert_eq!(mcp["supported"], true);
    assert_eq!(mcp["transport"], "streamable_http");
    assert_eq!(mcp["endpoint"], "/mcp");
    assert_eq!(mcp["tools"], json!(TOOLS));

    let summary = call(&client, "get_household_summary", json!({})).await;
    let summary = ok(&summary);
    assert_eq!(summary["household"]["name"], "Test household");
    assert!(
        summary["people"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "Ada")
    );
    assert_eq!(summary["medications_total"], 1);
    assert_eq!(summary["today"]["expected"], 1);
    assert_eq!(summary["today"]["open"], 1);

    let day = call(&client, "list_expected_doses", json!({"person_id": ada.id})).await;
    let dose = ok(&day)["data"][0].clone();
    assert_eq!(dose["outcome"], "open");
    assert_eq!(dose["source_id"], schedule.id);

    let medications = call(&client, "list_medications", json!({})).await;
    let medication = &ok(&medications)["data"][0];
    assert_eq!(medication["name"], "Paracetamol");
    assert!(medication.get("days_until_out_of_stock").is_some());
    let supply_before = medication["current_supply"].clone();

    let cursor = app.get(&app.hh("/sync/changes"), &app.owner).await;
    let cursor = cursor.data()["next_cursor"].as_str().unwrap().to_string();

    let taken = call(
        &client,
        "record_medication_take",
        json!({"source_type": "schedule", "source_id": schedule.id,
               "taken_at": jiff::Timestamp::now().to_string(),
               "occurrence_key": dose["occurrence_key"]}),
    )
    .await;
    let take = ok(&taken)["data"].clone();
    assert!(ok(&taken)["meta"]["warnings"].is_array());

    // The take is there for REST and for the change feed.
    let listed = app.get(&app.hh("/medication_takes"), &app.owner).await;
    listed.assert_status(200);
    assert_eq!(listed.data()[0]["portable_id"], take["portable_id"]);
    let changes = app
        .get(
            &app.hh(&format!("/sync/changes?cursor={cursor}")),
            &app.owner,
        )
        .await;
    let changes = changes.data()["changes"].as_array().unwrap().clone();
    assert!(
        changes.iter().any(|c| c["record_type"] == "MedicationTake"
            && c["record_portable_id"] == take["portable_id"]),
        "{changes:?}"
    );
    let medications = call(&client, "list_medications", json!({})).await;
    assert_ne!(ok(&medications)["data"][0]["current_supply"], supply_before);
    let day = call(
        &client,
        "list_expected_doses",
        json!({"person_id": ada.portable}),
    )
    .await;
    assert_eq!(ok(&day)["data"][0]["outcome"], "taken");

    let activity = call(&client, "get_person_activity", json!({"person_id": ada.id})).await;
    assert_eq!(
        ok(&activity)["medication_takes"][0]["portable_id"],
        take["portable_id"]
    );

    // Ten days ago's dose, marked not taken through the same rule as REST.
    let day_past = jiff::Timestamp::now()
        .to_zoned_datetime(jiff::tz::TimeZone::get("Europe/London").unwrap())
        .date()
        .saturating_add(jiff::Span::new().days(-10))
        .to_string();
    let past = call(
        &client,
        "list_expected_doses",
        json!({"person_id": ada.id, "date": day_past}),
    )
    .await;
    let missed = ok(&past)["data"][0].clone();
    assert_eq!(missed["outcome"], "open");
    let marked = call(
        &client,
        "mark_dose_not_taken",
        json!({"source_type": "schedule", "source_id": schedule.id,
               "occurrence_key": missed["occurrence_key"], "reason": "asleep"}),
    )
    .await;
    assert_eq!(ok(&marked)["data"]["outcome"], "not_taken");
    let past = call(
        &client,
        "list_expected_doses",
        json!({"person_id": ada.id, "date": day_past}),
    )
    .await;
    assert_eq!(ok(&past)["data"][0]["outcome"], "not_taken");

    // Pause and resume the schedule; the history shows both.
    let paused = call(
        &client,
        "pause_medication_source",
        json!({"source_type": "schedule", "source_id": schedule.portable, "reason": "side_effects"}),
    )
    .await;
    let period = ok(&paused)["data"]["id"].clone();
    let resumed = call(
        &client,
        "resume_medication_source",
        json!({"pause_period_id": period}),
    )
    .await;
    assert!(!ok(&resumed)["data"]["ended_at"].is_null());
    let history = call(&client, "list_pause_history", json!({})).await;
    assert_eq!(ok(&history)["meta"]["total_count"], 1);
    // No interaction evidence is loaded here, so the review queue is empty.
    let queue = call(&client, "list_review_queue", json!({"show_hidden": true})).await;
    assert_eq!(ok(&queue)["meta"]["total_count"], 0);
    assert_eq!(ok(&queue)["data"], json!([]));

    // A stock removal goes through the same rule as REST and is audited there.
    let removal = call(
        &client,
        "record_stock_removal",
        json!({"medication_id": paracetamol.portable, "stock_removal": {
            "quantity": "2", "reason": "expired",
            "submission_id": "0192f0a8-0000-7000-8000-0000000000aa"}}),
    )
    .await;
    assert_eq!(ok(&removal)["data"]["quantity"], "2");
    let removals = app
        .get(
            &app.hh(&format!("/medications/{}/stock_removals", paracetamol.id)),
            &app.owner,
        )
        .await;
    removals.assert_status(200);
    assert_eq!(removals.body["meta"]["total_count"], 1);

    // Bad input is the API's 422, naming the field.
    let bad = call(
        &client,
        "record_medication_take",
        json!({"source_type": "schedule"}),
    )
    .await;
    assert_eq!(error_code(&bad), "validation_failed");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn grants_and_revocation_hold_for_the_assistant() {
    let app = TestApp::new().await;
    let (ada, paracetamol, schedule) = household(&app).await;
    let url = serve(&app).await;
    let (viewer_membership, viewer) = app
        .add_member("viewer@example.org", Role::Member, Some("Vic"))
        .await;
    grant(&app, viewer_membership, ada.id, "view").await;

    let client = connect(&url, &viewer).await.unwrap();
    let day = call(&client, "list_expected_doses", json!({"person_id": ada.id})).await;
    let dose = ok(&day)["data"][0].clone();
    let refused = call(
        &client,
        "record_medication_take",
        json!({"source_type": "schedule", "source_id": schedule.id,
               "taken_at": jiff::Timestamp::now().to_string(),
               "occurrence_key": dose["occurrence_key"]}),
    )
    .await;
    assert_eq!(error_code(&refused), "forbidden");
    let not_taken = call(
        &client,
        "mark_dose_not_taken",
        json!({"source_type": "schedule", "source_id": schedule.id,
               "occurrence_key": dose["occurrence_key"]}),
    )
    .await;
    assert_eq!(error_code(&not_taken), "forbidden");
    let removal = call(
        &client,
        "record_stock_removal",
        json!({"medication_id": paracetamol.id, "stock_removal": {
            "quantity": "1", "reason": "expired",
            "submission_id": "0192f0a8-0000-7000-8000-000000000001"}}),
    )
    .await;
    assert_eq!(error_code(&removal), "forbidden");
    // Nothing was written.
    let takes = app.get(&app.hh("/medication_takes"), &app.owner).await;
    assert_eq!(takes.body["meta"]["total_count"], 0);
    client.cancel().await.unwrap();

    // A revoked token is refused at once, even mid-session.
    let client = connect(&url, &viewer).await.unwrap();
    let tokens = app.get(&app.hh("/admin/app_tokens"), &app.owner).await;
    let viewer_token = tokens
        .data()
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["membership_id"] == viewer_membership)
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    app.delete(
        &app.hh(&format!("/admin/app_tokens/{viewer_token}")),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    let mut params = CallToolRequestParams::new("get_household_summary");
    params.arguments = Some(Default::default());
    assert!(client.call_tool(params).await.is_err());
    assert!(connect(&url, &viewer).await.is_err());

    // Plain HTTP without a token gets the API's 401.
    let response = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let body: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(body["error"]["code"], "unauthorized");
}
