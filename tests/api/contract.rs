//! The served OpenAPI document follows the spec's authoring rules and
//! matches the Router exactly.

use std::collections::BTreeSet;

use axum::http::Method;
use serde_json::Value;

use crate::support::TestApp;

const AUDIENCES: [&str; 4] = ["Public", "Account", "Household", "Household administration"];
const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            out.push((path.clone(), method.clone(), op.clone()));
        }
    }
    out
}

#[tokio::test]
async fn document_follows_the_authoring_rules() {
    let app = TestApp::new().await;
    let doc = app.document();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["servers"][0]["url"], "/api/v1");
    assert_eq!(
        doc["components"]["securitySchemes"]["bearerAuth"]["scheme"],
        "bearer"
    );

    let mut ids = BTreeSet::new();
    let mut used_tags = BTreeSet::new();
    let verbs = [
        "list", "get", "create", "update", "replace", "delete", "pause", "resume", "adjust",
        "test", "dryRun", "mark", "search", "generate", "reorder", "export", "logout", "accept",
        "resend", "remove",
        // The spec's own ids of the removed sign-in operations.
        "exchange", "refresh",
    ];
    for (path, method, op) in operations(doc) {
        assert!(
            path.starts_with('/') && !path.starts_with("/api/v1"),
            "{path}"
        );
        assert!(METHODS.contains(&method.as_str()), "{method} {path}");
        let id = op["operationId"].as_str().unwrap();
        assert!(ids.insert(id.to_string()), "duplicate operationId {id}");
        assert!(
            id.chars().next().unwrap().is_ascii_lowercase()
                && id.chars().all(|c| c.is_ascii_alphanumeric()),
            "{id} is not lowerCamelCase"
        );
        assert!(
            verbs.iter().any(|v| id.starts_with(v)),
            "{id} does not start with an action verb"
        );
        let tags: Vec<&str> = op["tags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert_eq!(tags.len(), 2, "{id} must have exactly two tags");
        assert!(
            AUDIENCES.contains(&tags[0]),
            "{id}: first tag {} is not an audience",
            tags[0]
        );
        assert!(
            !AUDIENCES.contains(&tags[1]),
            "{id}: second tag must be a resource tag"
        );
        used_tags.extend(tags.iter().map(|t| t.to_string()));
        let expected_audience = if op["security"] == serde_json::json!([]) {
            "Public"
        } else if path.starts_with("/households/{household_id}/admin") {
            "Household administration"
        } else if path.starts_with("/households/") {
            "Household"
        } else {
            "Account"
        };
        assert_eq!(tags[0], expected_audience, "{id}");
        for status in op["responses"].as_object().unwrap().keys() {
            assert!(status.parse::<u16>().is_ok(), "{id}: response key {status}");
        }
    }
    // PATCH and PUT on one path have distinct ids (already unique), and both exist together.
    let defined: Vec<String> = doc["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    let defined_set: BTreeSet<String> = defined.iter().cloned().collect();
    assert_eq!(defined.len(), defined_set.len(), "a tag is defined twice");
    assert_eq!(defined_set, used_tags, "defined tags must equal used tags");
}

/// Every documented operation is routed: a request reaches a handler
/// (never the router's "no such route" or 405 fallback).
#[tokio::test]
async fn every_documented_operation_is_routed() {
    let app = TestApp::new().await;
    let doc = app.document().clone();
    for (path, method, _) in operations(&doc) {
        let concrete = path
            .replace("{household_id}", &app.household_id.to_string())
            .replace("{portable_id}", "0192a5b0-0000-7000-8000-000000000000")
            .replace(['{', '}'], "")
            .split('/')
            .map(|s| if s.ends_with("id") { "999999" } else { s })
            .collect::<Vec<_>>()
            .join("/");
        let method: Method = method.to_uppercase().parse().unwrap();
        let response = app
            .raw(
                method.clone(),
                &format!("/api/v1{concrete}"),
                Some(&app.owner),
                None,
                &[],
            )
            .await;
        assert_ne!(
            response.status.as_u16(),
            405,
            "{method} {path} is documented but not routed"
        );
        assert_ne!(
            response.body["error"]["message"], "no such route",
            "{method} {path} is documented but not routed"
        );
    }
}

/// Every API route of the Router is documented: the API Router is built only
/// through the documenting builder, so its route table and the document are
/// the same list. Probe paths outside the document to prove nothing else
/// answers under /api/v1 (only the embedded landing page lives outside it).
#[tokio::test]
async fn nothing_outside_the_document_is_routed() {
    let app = TestApp::new().await;
    for path in [
        "/api/v1/households",
        "/api/v1/auth",
        "/api/v1/admin",
        "/api/v1/people",
        "/api/v1",
        "/api/v1/health",
    ] {
        let r = app
            .raw(Method::GET, path, Some(&app.owner), None, &[])
            .await;
        assert_eq!(r.status.as_u16(), 404, "{path}");
    }
}

/// The response check itself can fail: a Person with an extra key or a
/// missing one does not match the document.
#[tokio::test]
async fn contract_check_rejects_a_wrong_shape() {
    let app = TestApp::new().await;
    let person = app.get(&app.hh("/people/1"), &app.owner).await;
    person.assert_status(200);
    let contract = crate::support::Contract::new(app.document().clone());
    let mut extra = person.body.clone();
    extra["data"]["secret"] = serde_json::json!(1);
    let mut missing = person.body.clone();
    missing["data"].as_object_mut().unwrap().remove("age");
    for body in [extra, missing] {
        let wrong = crate::support::TestResponse {
            status: person.status,
            headers: person.headers.clone(),
            body,
        };
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            contract.check(&Method::GET, &app.hh("/people/1"), &wrong)
        }));
        assert!(
            caught.is_err(),
            "a wrong Person shape passed the contract check"
        );
    }
}

#[tokio::test]
async fn landing_page_points_at_the_api() {
    let app = TestApp::new().await;
    let page = app.raw(Method::GET, "/", None, None, &[]).await;
    page.assert_status(200);
    assert!(
        page.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    assert!(
        page.body["raw"]
            .as_str()
            .unwrap()
            .contains("/api/v1/openapi.json")
    );
    app.raw(Method::GET, "/nothing.txt", None, None, &[])
        .await
        .assert_error(404, "not_found");
}

const SNAPSHOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/openapi/openapi.json");
const OAS_31_SCHEMA: &str = include_str!("../openapi/oas-3.1-schema.json");

#[tokio::test]
async fn the_served_document_is_valid_openapi_3_1() {
    let app = TestApp::new().await;
    let doc = app.document();
    let meta: Value = serde_json::from_str(OAS_31_SCHEMA).unwrap();
    let validator = jsonschema::draft202012::new(&meta).expect("the OAS 3.1 schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "not valid OpenAPI 3.1: {errors:#?}");

    // The OAS schema leaves Schema Objects open; each must be valid JSON Schema 2020-12.
    for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
        if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
            panic!("components.schemas.{name} is not valid JSON Schema 2020-12: {e}");
        }
    }
}

#[tokio::test]
async fn the_served_document_matches_the_snapshot() {
    let app = TestApp::new().await;
    let served = serde_json::to_string_pretty(app.document()).unwrap() + "\n";
    if std::env::var_os("PILLBOX_UPDATE_OPENAPI").is_some() {
        std::fs::write(SNAPSHOT, &served).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(SNAPSHOT).unwrap_or_default();
    if committed != served {
        let line = committed
            .lines()
            .zip(served.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(committed.lines().count().min(served.lines().count()));
        panic!(
            "the served OpenAPI document differs from tests/openapi/openapi.json (first at line {}).\n\
             Review the change, then refresh the snapshot with:\n\n    \
             PILLBOX_UPDATE_OPENAPI=1 cargo test --test api contract::the_served_document_matches_the_snapshot\n",
            line + 1
        );
    }
}
