//! Medication lookup against a stub FHIR terminology server the test
//! starts: an OAuth token endpoint checking the client credentials and a
//! `ValueSet/$expand` answering per concept class.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use axum::serve::ListenerExt;
use pillbox::config::Settings;
use pillbox::lookup::TerminologySettings;
use serde_json::{Value, json};

use crate::support::TestApp;

pub const CLIENT_ID: &str = "pillbox-test-client";
pub const CLIENT_SECRET: &str = "s3cret-of-the-test";

/// How the stub answers `$expand`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Good,
    ServerError,
    NotFhir,
    Slow,
}

pub struct Terminology {
    pub base: String,
    pub connections: Arc<AtomicUsize>,
    pub tokens_issued: Arc<AtomicUsize>,
    /// Each `$expand`: (bearer token, concept class, filter text).
    pub expansions: Arc<Mutex<Vec<(String, String, String)>>>,
    mode: Arc<Mutex<Mode>>,
}

impl Terminology {
    pub async fn start() -> Terminology {
        let connections = Arc::new(AtomicUsize::new(0));
        let tokens_issued = Arc::new(AtomicUsize::new(0));
        let expansions: Arc<Mutex<Vec<(String, String, String)>>> = Arc::default();
        let mode = Arc::new(Mutex::new(Mode::Good));
        let issued = tokens_issued.clone();
        let token = axum::routing::post(move |body: String| {
            let issued = issued.clone();
            async move {
                let form: Vec<(String, String)> = serde_urlencoded::from_str(&body).unwrap();
                let get = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
                let good = get("grant_type").as_deref() == Some("client_credentials")
                    && get("client_id").as_deref() == Some(CLIENT_ID)
                    && get("client_secret").as_deref() == Some(CLIENT_SECRET);
                if !good {
                    return (
                        StatusCode::UNAUTHORIZED,
                        axum::Json(json!({"error": "invalid_client"})),
                    );
                }
                let n = issued.fetch_add(1, Ordering::SeqCst) + 1;
                (
                    StatusCode::OK,
                    axum::Json(json!({
                        "access_token": format!("stub-token-{n}"),
                        "token_type": "Bearer",
                        "expires_in": 300,
                    })),
                )
            }
        });
        let (seen, answer) = (expansions.clone(), mode.clone());
        let expand = axum::routing::post(
            move |headers: axum::http::HeaderMap, axum::Json(params): axum::Json<Value>| {
                let (seen, answer) = (seen.clone(), answer.clone());
                async move {
                    let bearer = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.strip_prefix("Bearer "))
                        .unwrap_or("")
                        .to_string();
                    let param = |name: &str| {
                        params["parameter"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .find(|p| p["name"] == name)
                            .cloned()
                            .unwrap_or(Value::Null)
                    };
                    let class = param("valueSet")["resource"]["compose"]["include"][0]["filter"][0]
                        ["value"]
                        .as_str()
                        .unwrap_or("")
                        .to_string();
                    let text = param("filter")["valueString"]
                        .as_str()
                        .unwrap_or("")
                        .to_string();
                    seen.lock()
                        .unwrap()
                        .push((bearer.clone(), class.clone(), text));
                    let mode = *answer.lock().unwrap();
                    if !bearer.starts_with("stub-token-") {
                        return (StatusCode::UNAUTHORIZED, String::new());
                    }
                    match mode {
                        Mode::ServerError => {
                            return (StatusCode::INTERNAL_SERVER_ERROR, "boom".into());
                        }
                        Mode::NotFhir => return (StatusCode::OK, "<html>hello</html>".into()),
                        Mode::Slow => tokio::time::sleep(Duration::from_secs(5)).await,
                        Mode::Good => {}
                    }
                    let contains = match class.as_str() {
                        "VMP" => json!([
                            {"system": "https://dmd.nhs.uk", "code": "42109611000001109",
                             "display": "Paracetamol 500mg tablets"},
                            {"system": "https://dmd.nhs.uk", "code": "39695211000001102",
                             "display": "Paracetamol 500mg capsules"},
                        ]),
                        "AMP" => json!([
                            {"system": "https://dmd.nhs.uk", "code": "4198811000001104",
                             "display": "Panadol 500mg tablets"},
                            // Listed by both classes: the lookup keeps it once.
                            {"system": "https://dmd.nhs.uk", "code": "42109611000001109",
                             "display": "Paracetamol 500mg tablets"},
                        ]),
                        _ => json!([]),
                    };
                    let body = json!({
                        "resourceType": "ValueSet",
                        "expansion": {"total": 2, "contains": contains},
                    });
                    (StatusCode::OK, body.to_string())
                }
            },
        );
        let app = axum::Router::new()
            .route("/token", token)
            .route("/fhir/ValueSet/$expand", expand);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let counted = connections.clone();
        let listener = listener.tap_io(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
        });
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Terminology {
            base: format!("http://{addr}"),
            connections,
            tokens_issued,
            expansions,
            mode,
        }
    }

    pub fn answer(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    pub fn settings(&self, id: Option<&str>, secret: Option<&str>) -> Option<TerminologySettings> {
        TerminologySettings::configured(
            id,
            secret,
            &format!("{}/fhir", self.base),
            &format!("{}/token", self.base),
        )
    }
}

async fn app_with(terminology: Option<TerminologySettings>) -> TestApp {
    TestApp::with_settings(Settings {
        rate_limit_per_minute: 0,
        terminology,
        ..Settings::default()
    })
    .await
}

#[tokio::test]
async fn lookup_is_off_without_both_credentials_and_never_calls_out() {
    let stub = Terminology::start().await;
    for (id, secret) in [
        (None, None),
        (Some(CLIENT_ID), None),
        (None, Some(CLIENT_SECRET)),
        (Some(CLIENT_ID), Some("  ")),
    ] {
        let app = app_with(stub.settings(id, secret)).await;
        app.get(&app.hh("/medication_lookup?q=paracetamol"), &app.owner)
            .await
            .assert_error(503, "feature_unavailable");
        let caps = app.get("/api/v1/capabilities", &app.owner).await;
        assert_eq!(caps.data()["features"]["medication_lookup"], false);
        let settings = app.get(&app.hh("/admin/settings"), &app.owner).await;
        settings.assert_status(200);
        let warnings = settings.data()["warnings"].as_array().unwrap();
        assert!(
            warnings.iter().any(|w| w["message"]
                == "medication search is unavailable because credentials are not configured"),
            "{warnings:?}"
        );
    }
    assert_eq!(stub.connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn lookup_searches_vmp_and_amp_with_one_token_and_merges_them() {
    let stub = Terminology::start().await;
    let app = app_with(stub.settings(Some(CLIENT_ID), Some(CLIENT_SECRET))).await;
    let caps = app.get("/api/v1/capabilities", &app.owner).await;
    assert_eq!(caps.data()["features"]["medication_lookup"], true);
    let settings = app.get(&app.hh("/admin/settings"), &app.owner).await;
    assert_eq!(settings.data()["warnings"], json!([]));

    let found = app
        .get(
            &app.hh("/medication_lookup?q=paracetamol%20500"),
            &app.owner,
        )
        .await;
    found.assert_status(200);
    let codes: Vec<(&str, &str)> = found
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["code"].as_str().unwrap(),
                r["concept_class"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        codes,
        [
            ("42109611000001109", "VMP"),
            ("39695211000001102", "VMP"),
            ("4198811000001104", "AMP"),
        ]
    );
    assert_eq!(found.data()[2]["display"], "Panadol 500mg tablets");
    assert_eq!(found.data()[2]["system"], "https://dmd.nhs.uk");

    // One token for the lookup, used by both expansions.
    assert_eq!(stub.tokens_issued.load(Ordering::SeqCst), 1);
    let mut expansions = stub.expansions.lock().unwrap().clone();
    expansions.sort();
    assert_eq!(
        expansions,
        [
            (
                "stub-token-1".to_string(),
                "AMP".to_string(),
                "paracetamol 500".to_string()
            ),
            (
                "stub-token-1".to_string(),
                "VMP".to_string(),
                "paracetamol 500".to_string()
            ),
        ]
    );
}

#[tokio::test]
async fn lookup_checks_its_query_before_calling_out() {
    let stub = Terminology::start().await;
    let app = app_with(stub.settings(Some(CLIENT_ID), Some(CLIENT_SECRET))).await;
    let missing = app.get(&app.hh("/medication_lookup"), &app.owner).await;
    missing.assert_error(422, "validation_failed");
    assert!(missing.body["error"]["errors"]["q"].is_array());
    let count = app
        .get(
            &app.hh("/medication_lookup?q=ibuprofen&count=500"),
            &app.owner,
        )
        .await;
    count.assert_error(422, "validation_failed");
    assert!(!count.body.to_string().contains("500\""));
    assert_eq!(stub.connections.load(Ordering::SeqCst), 0);
    // Without a credential nothing is searched either.
    let anonymous = app
        .raw(
            axum::http::Method::GET,
            &app.hh("/medication_lookup?q=ibuprofen"),
            None,
            None,
            &[],
        )
        .await;
    assert_eq!(anonymous.status, 401);
}

#[tokio::test]
async fn the_dictionary_limit_is_kept_across_the_server() {
    let stub = Terminology::start().await;
    let mut settings = stub.settings(Some(CLIENT_ID), Some(CLIENT_SECRET)).unwrap();
    // A token and two expansions per lookup: room for two lookups.
    settings.limit = 7;
    let app = app_with(Some(settings)).await;
    let (_, member) = app
        .add_member(
            "member@example.org",
            pillbox::auth::Role::Member,
            Some("Mo"),
        )
        .await;
    for token in [&app.owner, &member] {
        app.get(&app.hh("/medication_lookup?q=paracetamol"), token)
            .await
            .assert_status(200);
    }
    let limited = app
        .get(&app.hh("/medication_lookup?q=paracetamol"), &app.owner)
        .await;
    limited.assert_error(503, "upstream_rate_limited");
    assert_eq!(stub.tokens_issued.load(Ordering::SeqCst), 2);
    assert_eq!(stub.expansions.lock().unwrap().len(), 4);
}

#[tokio::test]
async fn upstream_failures_are_clear_gateway_errors() {
    let stub = Terminology::start().await;
    let mut settings = stub.settings(Some(CLIENT_ID), Some(CLIENT_SECRET)).unwrap();
    settings.timeout = Duration::from_millis(500);
    let app = app_with(Some(settings)).await;
    let path = app.hh("/medication_lookup?q=paracetamol");

    stub.answer(Mode::ServerError);
    app.get(&path, &app.owner)
        .await
        .assert_error(502, "upstream_error");
    stub.answer(Mode::NotFhir);
    app.get(&path, &app.owner)
        .await
        .assert_error(502, "upstream_error");
    stub.answer(Mode::Slow);
    app.get(&path, &app.owner)
        .await
        .assert_error(503, "upstream_unavailable");

    // Credentials the token endpoint refuses.
    let refused = app_with(stub.settings(Some(CLIENT_ID), Some("wrong"))).await;
    stub.answer(Mode::Good);
    let answer = refused
        .get(
            &refused.hh("/medication_lookup?q=paracetamol"),
            &refused.owner,
        )
        .await;
    answer.assert_error(502, "upstream_error");
    assert!(!answer.body.to_string().contains("wrong"));

    // Nothing listening.
    let closed = TerminologySettings::configured(
        Some(CLIENT_ID),
        Some(CLIENT_SECRET),
        "http://127.0.0.1:9/fhir",
        "http://127.0.0.1:9/token",
    );
    let unreachable = app_with(closed).await;
    unreachable
        .get(
            &unreachable.hh("/medication_lookup?q=paracetamol"),
            &unreachable.owner,
        )
        .await
        .assert_error(503, "upstream_unavailable");
}
