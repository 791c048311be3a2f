use axum::http::Method;
use pillbox::config::Settings;
use serde_json::json;

use crate::support::TestApp;

#[tokio::test]
async fn missing_and_invalid_credentials_are_401() {
    let app = TestApp::new().await;
    let path = app.hh("/people");
    app.send(Method::GET, &path, None, None, &[])
        .await
        .assert_error(401, "unauthorized");
    app.send(
        Method::GET,
        &path,
        Some("pbx_app_0123456789abcdef_nope"),
        None,
        &[],
    )
    .await
    .assert_error(401, "unauthorized");
    app.send(Method::GET, &path, Some("garbage"), None, &[])
        .await
        .assert_error(401, "unauthorized");
    app.send(
        Method::GET,
        &path,
        None,
        None,
        &[("authorization", "Basic abc")],
    )
    .await
    .assert_error(401, "unauthorized");
    app.send(Method::GET, "/api/v1/auth/households", None, None, &[])
        .await
        .assert_error(401, "unauthorized");
}

#[tokio::test]
async fn revoked_token_stops_working_at_once() {
    let app = TestApp::new().await;
    let extra = app
        .token_for(app.household_id, app.owner_membership_id)
        .await;
    app.get(&app.hh("/people"), &extra).await.assert_status(200);
    let tokens = app.get(&app.hh("/admin/app_tokens"), &app.owner).await;
    tokens.assert_status(200);
    let prefix = format!(
        "pbx_app_{}",
        &extra["pbx_app_".len().."pbx_app_".len() + 16]
    );
    let id = tokens
        .data()
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["token_prefix"] == prefix.as_str())
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    app.delete(
        &app.hh(&format!("/admin/app_tokens/{id}")),
        &app.owner,
        None,
    )
    .await
    .assert_status(204);
    app.get(&app.hh("/people"), &extra)
        .await
        .assert_error(401, "unauthorized");
    // The owner's other token is unaffected.
    app.get(&app.hh("/people"), &app.owner)
        .await
        .assert_status(200);
}

#[tokio::test]
async fn expired_token_is_401() {
    let app = TestApp::new().await;
    let token = app
        .token_for(app.household_id, app.owner_membership_id)
        .await;
    app.db
        .write(|conn| {
            conn.execute(
                "UPDATE app_tokens SET expires_at = '2000-01-01T00:00:00.000000Z'",
                [],
            )?;
            Ok(())
        })
        .await
        .unwrap();
    app.get(&app.hh("/people"), &token)
        .await
        .assert_error(401, "unauthorized");
}

#[tokio::test]
async fn another_households_paths_reveal_nothing() {
    let app = TestApp::new().await;
    // Household 999 does not exist; household 2 exists but the owner is not in it.
    app.db
        .write(|conn| {
            pillbox::household::store::insert(
                conn,
                "Other",
                "UTC",
                &pillbox::domain::Timestamp::now(),
            )?;
            Ok(())
        })
        .await
        .unwrap();
    let missing = app.get("/api/v1/households/999/people", &app.owner).await;
    let foreign = app.get("/api/v1/households/2/people", &app.owner).await;
    missing.assert_error(404, "not_found");
    foreign.assert_error(404, "not_found");
    assert_eq!(
        missing.body["error"]["message"],
        foreign.body["error"]["message"]
    );
    for not_an_id in ["abc", "0", "99999999999999999999999"] {
        app.get(
            &format!("/api/v1/households/{not_an_id}/people"),
            &app.owner,
        )
        .await
        .assert_error(404, "not_found");
    }
}

#[tokio::test]
async fn every_response_has_a_request_id_and_no_store() {
    let app = TestApp::new().await;
    let ok = app.get(&app.hh("/people"), &app.owner).await;
    assert!(ok.header("x-request-id").is_some());
    assert_eq!(ok.header("cache-control"), Some("no-store"));
    let err = app.get(&app.hh("/people/12345"), &app.owner).await;
    err.assert_error(404, "not_found");
    assert_eq!(err.header("cache-control"), Some("no-store"));
    let unknown_route = app
        .raw(Method::GET, "/api/v1/nothing/here", None, None, &[])
        .await;
    unknown_route.assert_error(404, "not_found");
    let wrong_method = app
        .raw(
            Method::DELETE,
            &app.hh("/people"),
            Some(&app.owner),
            None,
            &[],
        )
        .await;
    wrong_method.assert_error(405, "method_not_allowed");
}

#[tokio::test]
async fn malformed_and_oversized_bodies_are_rejected_in_the_envelope() {
    let app = TestApp::new().await;
    let request = axum::http::Request::builder()
        .method("POST")
        .uri(app.hh("/people"))
        .header("authorization", format!("Bearer {}", app.owner))
        .header("content-type", "application/json")
        .body(axum::body::Body::from("{\"person\": "))
        .unwrap();
    app.raw_request(request)
        .await
        .assert_error(422, "validation_failed");

    let huge = "x".repeat(2 * 1024 * 1024);
    let big = app
        .post(
            &app.hh("/people"),
            &app.owner,
            json!({"person": {"name": huge}}),
        )
        .await;
    big.assert_error(413, "payload_too_large");
}

#[tokio::test]
async fn rate_limit_returns_the_rate_limit_envelope() {
    let app = TestApp::with_settings(Settings {
        rate_limit_per_minute: 5,
        ..Settings::default()
    })
    .await;
    // The OpenAPI fetch at start-up used one request of the anonymous bucket, not the owner's.
    for _ in 0..5 {
        app.get(&app.hh("/people"), &app.owner)
            .await
            .assert_status(200);
    }
    let limited = app.get(&app.hh("/people"), &app.owner).await;
    limited.assert_status(429);
    assert_eq!(
        limited.body,
        json!({"error": {"code": "rate_limited", "message": limited.body["error"]["message"]}})
    );
    let retry: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!(retry >= 1);
    // Another credential has its own bucket.
    let other = app
        .token_for(app.household_id, app.owner_membership_id)
        .await;
    app.get(&app.hh("/people"), &other).await.assert_status(200);
}

#[tokio::test]
async fn capabilities_are_public() {
    let app = TestApp::new().await;
    let caps = app
        .send(Method::GET, "/api/v1/capabilities", None, None, &[])
        .await;
    caps.assert_status(200);
    assert_eq!(caps.data()["format"], "service.api.capabilities.v1");
    assert_eq!(caps.data()["client_tools"]["cli"]["binary"], "pillbox");
}

#[tokio::test]
async fn list_households_shows_the_tokens_household() {
    let app = TestApp::new().await;
    let list = app.get("/api/v1/auth/households", &app.owner).await;
    list.assert_status(200);
    assert_eq!(list.data()[0]["id"], app.household_id);
    assert_eq!(list.data()[0]["role"], "owner");
    assert_eq!(list.body["meta"]["total_count"], 1);
}
