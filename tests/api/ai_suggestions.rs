//! AI set-up suggestions against a stub OpenAI-compatible chat completions
//! server the test starts.

use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use pillbox::config::Settings;
use pillbox::lookup::AiSettings;
use serde_json::{Value, json};

use crate::lookup::{CLIENT_ID, CLIENT_SECRET, Terminology};
use crate::support::TestApp;

/// Each request body received, and its Authorization header.
type Received = Arc<Mutex<Vec<(Value, Option<String>)>>>;

struct ChatStub {
    base: String,
    /// Each request body received, and its Authorization header.
    received: Received,
    /// The `content` of the next answers.
    content: Arc<Mutex<String>>,
}

impl ChatStub {
    async fn start() -> ChatStub {
        let received: Received = Arc::default();
        let content = Arc::new(Mutex::new(String::new()));
        let (seen, answer) = (received.clone(), content.clone());
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            axum::routing::post(
                move |headers: axum::http::HeaderMap, axum::Json(body): axum::Json<Value>| {
                    let (seen, answer) = (seen.clone(), answer.clone());
                    async move {
                        let auth = headers
                            .get("authorization")
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_string);
                        seen.lock().unwrap().push((body, auth));
                        let content = answer.lock().unwrap().clone();
                        (
                            StatusCode::OK,
                            axum::Json(json!({
                                "id": "chatcmpl-1",
                                "object": "chat.completion",
                                "model": "stub-model",
                                "choices": [{
                                    "index": 0,
                                    "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content},
                                }],
                            })),
                        )
                    }
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        ChatStub {
            base: format!("http://{addr}/v1"),
            received,
            content,
        }
    }

    fn answer(&self, content: &str) {
        *self.content.lock().unwrap() = content.to_string();
    }
}

fn good_answer() -> String {
    json!({"medications": [
        {"name": "Paracetamol 500mg tablets", "dose_amount": "1", "dose_unit": "tablet",
         "schedule_type": "multiple_daily", "times": ["08:00", "20:00"],
         "dosage_options": [{"amount": "2", "unit": "tablet", "description": "adult dose"}]},
        {"name": "Salbutamol inhaler", "dose_amount": 2, "dose_unit": "spray",
         "schedule_type": "prn", "times": []},
    ]})
    .to_string()
}

async fn app(stub: &ChatStub, terminology: Option<&Terminology>) -> TestApp {
    TestApp::with_settings(Settings {
        rate_limit_per_minute: 0,
        ai: AiSettings::configured(Some(&stub.base), Some("stub-model"), Some("ai-key-123")),
        terminology: terminology.and_then(|t| t.settings(Some(CLIENT_ID), Some(CLIENT_SECRET))),
        ..Settings::default()
    })
    .await
}

fn request(text: &str) -> Value {
    json!({"ai_medication_suggestion": {"text": text}})
}

async fn change_count(app: &TestApp) -> usize {
    let feed = app.get(&app.hh("/sync/changes"), &app.owner).await;
    feed.assert_status(200);
    feed.data()["changes"].as_array().map(Vec::len).unwrap_or(0)
        + feed.data().as_array().map(Vec::len).unwrap_or(0)
}

#[tokio::test]
async fn suggestions_are_off_until_an_endpoint_and_model_are_set() {
    let app = TestApp::new().await;
    app.post(
        &app.hh("/ai_medication_suggestions"),
        &app.owner,
        request("paracetamol"),
    )
    .await
    .assert_error(503, "feature_unavailable");
    let caps = app.get("/api/v1/capabilities", &app.owner).await;
    assert_eq!(caps.data()["features"]["ai_suggestions"], false);
}

#[tokio::test]
async fn a_good_answer_becomes_grounded_suggestions_without_names_upstream() {
    let stub = ChatStub::start().await;
    let terminology = Terminology::start().await;
    let app = app(&stub, Some(&terminology)).await;
    let caps = app.get("/api/v1/capabilities", &app.owner).await;
    assert_eq!(caps.data()["features"]["ai_suggestions"], true);
    app.post(
        &app.hh("/people"),
        &app.owner,
        json!({"person": {"name": "Zebedee Quartermaine", "date_of_birth": "1950-02-03"}}),
    )
    .await
    .assert_status(201);
    let before = change_count(&app).await;
    let medications_before = app.get(&app.hh("/medications"), &app.owner).await;

    stub.answer(&good_answer());
    let text = "Zebedee takes paracetamol 500 twice a day; Olive Owner and QUARTERMAINE share a salbutamol inhaler when needed";
    let answer = app
        .post(
            &app.hh("/ai_medication_suggestions"),
            &app.owner,
            request(text),
        )
        .await;
    answer.assert_status(200);
    let medications = answer.data()["medications"].as_array().unwrap();
    assert_eq!(medications.len(), 2);
    let first = &medications[0];
    assert_eq!(first["suggestion"], true);
    assert_eq!(first["medication"]["name"], "Paracetamol 500mg tablets");
    assert_eq!(first["medication"]["dose_amount"], "1");
    assert_eq!(first["medication"]["dose_unit"], "tablet");
    assert_eq!(first["grounding"]["code"], "42109611000001109");
    assert_eq!(first["medication"]["dmd_code"], "42109611000001109");
    assert_eq!(first["medication"]["dmd_concept_class"], "VMP");
    assert_eq!(first["schedules"][0]["schedule_type"], "multiple_daily");
    assert_eq!(
        first["schedules"][0]["schedule_config"],
        json!({"times": ["08:00", "20:00"]})
    );
    assert_eq!(first["dosage_options"][0]["amount"], "2");
    assert_eq!(medications[1]["medication"]["dose_amount"], "2");
    assert_eq!(
        medications[1]["schedules"][0]["schedule_config"],
        json!({"as_needed": true})
    );

    // The prompt that left the server names nobody.
    let received = stub.received.lock().unwrap().clone();
    assert_eq!(received.len(), 1);
    let (body, auth) = &received[0];
    assert_eq!(auth.as_deref(), Some("Bearer ai-key-123"));
    assert_eq!(body["model"], "stub-model");
    let sent = body.to_string().to_lowercase();
    for name in ["zebedee", "quartermaine", "olive", "owner"] {
        assert!(
            !sent.contains(name),
            "{name} reached the AI endpoint: {sent}"
        );
    }
    assert!(sent.contains("paracetamol 500 twice a day"));

    // Nothing was written.
    assert_eq!(change_count(&app).await, before);
    let medications_after = app.get(&app.hh("/medications"), &app.owner).await;
    assert_eq!(
        medications_after.body["meta"],
        medications_before.body["meta"]
    );
}

#[tokio::test]
async fn a_malformed_answer_is_a_502_and_nothing_is_written() {
    let stub = ChatStub::start().await;
    let app = app(&stub, None).await;
    let before = change_count(&app).await;
    let out_of_range = json!({"medications": [
        {"name": "Paracetamol", "dose_amount": "-1", "dose_unit": "tablet",
         "schedule_type": "daily", "times": ["08:00"]}]})
    .to_string();
    let bad_unit = json!({"medications": [
        {"name": "Paracetamol", "dose_amount": "1", "dose_unit": "bucket",
         "schedule_type": "daily", "times": ["08:00"]}]})
    .to_string();
    let bad_time = json!({"medications": [
        {"name": "Paracetamol", "dose_amount": "1", "dose_unit": "tablet",
         "schedule_type": "daily", "times": ["25:99"]}]})
    .to_string();
    for content in [
        "Sure! Here is your set-up: paracetamol",
        "{\"medications\": \"paracetamol\"}",
        "[]",
        &out_of_range,
        &bad_unit,
        &bad_time,
    ] {
        stub.answer(content);
        let answer = app
            .post(
                &app.hh("/ai_medication_suggestions"),
                &app.owner,
                request("paracetamol"),
            )
            .await;
        answer.assert_error(502, "ai_response_invalid");
        assert!(answer.body["data"].is_null());
    }
    assert_eq!(change_count(&app).await, before);
    // Without lookup a good answer is simply not grounded.
    stub.answer(&good_answer());
    let answer = app
        .post(
            &app.hh("/ai_medication_suggestions"),
            &app.owner,
            request("paracetamol"),
        )
        .await;
    answer.assert_status(200);
    assert_eq!(answer.data()["grounded_with_lookup"], false);
    assert!(answer.data()["medications"][0]["grounding"].is_null());
    // A blank description is refused before anything is sent.
    let sent = stub.received.lock().unwrap().len();
    app.post(
        &app.hh("/ai_medication_suggestions"),
        &app.owner,
        request("   "),
    )
    .await
    .assert_error(422, "validation_failed");
    assert_eq!(stub.received.lock().unwrap().len(), sent);
}
