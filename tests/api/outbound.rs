//! Requests the server makes to destinations members supply (issue 48,
//! item 5): a push endpoint or ntfy topic may not point at the server, its
//! network or a cloud's metadata service unless the operator allows it
//! (`--push-allow-private-network`); the rule holds on the address
//! connected to at delivery, not only on the one seen at submission;
//! redirects are not followed; phone tokens have their documented shape.

use std::sync::{Arc, Mutex};

use pillbox::config::{ReminderSettings, Settings};
use pillbox::reminders::Clock;
use pillbox::reminders::task::Reminders;
use serde_json::json;

use crate::reminders::{BrowserKeys, TestService, allow_http, local_delivery, subscribe};
use crate::support::TestApp;
use crate::support::records::new_medication;
use crate::support::reminders::{APNS_TOKEN, FCM_TOKEN, ManualClock};

/// http push allowed (the tests' services speak http), private networks not.
fn http_only() -> ReminderSettings {
    ReminderSettings {
        push_allow_private_network: false,
        ..local_delivery()
    }
}

/// Each URL names its host's class as the 422 says it.
const FORBIDDEN: &[(&str, &str)] = &[
    ("http://127.0.0.1:8080/secret-path", "loopback"),
    ("http://127.8.9.10/secret-path", "loopback"),
    ("http://localhost:8080/secret-path", "loopback"),
    ("http://LocalHost./secret-path", "loopback"),
    ("http://ntfy.localhost/secret-path", "loopback"),
    ("http://[::1]:8080/secret-path", "loopback"),
    ("http://[::ffff:127.0.0.1]/secret-path", "loopback"),
    // 127.0.0.1 written as one decimal number.
    ("http://2130706433/secret-path", "loopback"),
    ("http://10.1.2.3/secret-path", "private"),
    ("http://172.20.0.5/secret-path", "private"),
    ("http://192.168.1.10:8080/secret-path", "private"),
    ("http://100.100.100.100/secret-path", "private"),
    ("http://[fd12:3456::1]/secret-path", "private"),
    ("http://169.254.169.254/latest/secret-path", "link-local"),
    ("http://[::ffff:169.254.169.254]/secret-path", "link-local"),
    ("http://[fe80::1]/secret-path", "link-local"),
    ("http://224.0.0.251/secret-path", "multicast"),
    ("http://[ff02::1]/secret-path", "multicast"),
    ("http://255.255.255.255/secret-path", "broadcast"),
    ("http://0.0.0.0:8080/secret-path", "unspecified"),
    ("http://[::]/secret-path", "unspecified"),
    ("https://192.0.2.10/secret-path", "documentation"),
];

async fn count(app: &TestApp, table: &'static str) -> i64 {
    app.db
        .read(move |c| Ok(c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))?))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_destination_at_a_forbidden_address_is_refused_naming_the_field_and_nothing_is_stored() {
    let app = TestApp::with_settings(Settings {
        reminders: http_only(),
        ..allow_http()
    })
    .await;
    let keys = BrowserKeys::new();
    for (url, class) in FORBIDDEN {
        let push = app
            .post(&app.hh("/push_subscription"), &app.owner, keys.body(url))
            .await;
        push.assert_error(422, "validation_failed");
        let said = push.body["error"]["errors"]["endpoint"].to_string();
        assert!(said.contains(class), "{url}: {said}");
        assert!(said.contains("--push-allow-private-network"), "{url}");
        assert!(!push.body.to_string().contains("secret-path"), "{url}");

        let ntfy = app
            .put(
                &app.hh("/ntfy_channel"),
                &app.owner,
                json!({"ntfy_channel": {"topic_url": url}}),
                None,
            )
            .await;
        ntfy.assert_error(422, "validation_failed");
        let said = ntfy.body["error"]["errors"]["topic_url"].to_string();
        assert!(said.contains(class), "{url}: {said}");
    }
    assert_eq!(count(&app, "push_subscriptions").await, 0);
    assert_eq!(count(&app, "ntfy_channels").await, 0);

    // A public address is not refused.
    subscribe(&app, &app.owner, "https://1.1.1.1/push/olive").await;
    assert_eq!(count(&app, "push_subscriptions").await, 1);
}

/// A daily 08:00 (London) dose for the owner, queued by the engine for
/// every channel the owner has, and delivered by `engine`.
async fn deliver_a_due_dose(app: &TestApp, settings: ReminderSettings) {
    let me = app
        .get(&app.hh("/notification_preference"), &app.owner)
        .await;
    let person = me.data()["person_id"].as_i64().unwrap();
    let med = new_medication(app, "Metformin").await;
    app.post(
        &app.hh("/schedules"),
        &app.owner,
        json!({"schedule": {"person_id": person, "medication_id": med.id,
            "schedule_type": "daily", "schedule_config": {"times": ["08:00"]},
            "start_date": "2027-04-01"}}),
    )
    .await
    .assert_status(201);
    let clock = ManualClock::at("2027-04-02T06:00:00Z");
    let engine = Reminders::new(app.db.clone(), clock.clone() as Arc<dyn Clock>, settings)
        .await
        .unwrap();
    engine.scan().await.unwrap();
    clock.set("2027-04-02T07:00:00Z");
    assert!(engine.scan().await.unwrap().queued > 0);
    engine.deliver().await.unwrap();
}

/// (channel, status, last_error) of every outbox row.
async fn outcomes(app: &TestApp) -> Vec<(String, String, String)> {
    app.db
        .read(|c| {
            let mut stmt = c.prepare(
                "SELECT channel, status, coalesce(last_error, '') FROM reminder_outbox ORDER BY id",
            )?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn with_the_operators_leave_an_ntfy_server_on_this_machine_is_accepted_and_reached() {
    let ntfy = TestService::start().await;
    ntfy.answer(200);
    let app = TestApp::with_settings(allow_http()).await;
    app.put(
        &app.hh("/ntfy_channel"),
        &app.owner,
        json!({"ntfy_channel": {"topic_url": format!("http://localhost:{}/olive-pills", ntfy.addr.port())}}),
        None,
    )
    .await
    .assert_status(200);
    deliver_a_due_dose(&app, local_delivery()).await;
    let got = ntfy.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].path, "/olive-pills");
    assert_eq!(outcomes(&app).await[0].1, "delivered");
}

/// Stored while the flag was on (a name and an address literal), then
/// delivered by a server started without it: the address connected to is
/// checked, so the local service hears nothing, and the notifications fail
/// at once instead of being retried.
#[tokio::test]
async fn a_destination_stored_while_allowed_is_not_connected_to_once_the_rule_applies() {
    let service = TestService::start().await;
    service.answer(201);
    let port = service.addr.port();
    let app = TestApp::with_settings(allow_http()).await;
    subscribe(
        &app,
        &app.owner,
        &format!("http://localhost:{port}/push/olive"),
    )
    .await;
    app.put(
        &app.hh("/ntfy_channel"),
        &app.owner,
        json!({"ntfy_channel": {"topic_url": format!("http://127.0.0.1:{port}/olive-pills")}}),
        None,
    )
    .await
    .assert_status(200);

    deliver_a_due_dose(&app, http_only()).await;
    assert!(service.received().is_empty());
    let rows = outcomes(&app).await;
    assert_eq!(rows.len(), 2);
    for (channel, status, error) in &rows {
        assert_eq!(status, "failed", "{channel}");
        assert!(error.contains("loopback"), "{channel}: {error}");
        assert!(!error.contains("127.0.0.1") && !error.contains("localhost"));
    }

    // The service was there all along: with the flag, it is reached.
    app.post(&app.hh("/push_subscription/test"), &app.owner, json!({}))
        .await
        .assert_status(204);
    let clock =
        ManualClock::at(&(jiff::Timestamp::now() + jiff::SignedDuration::from_secs(1)).to_string());
    let allowed = Reminders::new(app.db.clone(), clock as Arc<dyn Clock>, local_delivery())
        .await
        .unwrap();
    assert_eq!(allowed.deliver().await.unwrap(), 1);
    assert_eq!(service.received().len(), 1);
}

#[tokio::test]
async fn a_redirect_from_a_push_destination_is_not_followed() {
    let target = TestService::start().await;
    let hits = Arc::new(Mutex::new(0));
    let location = format!("http://{}/stolen", target.addr);
    let counted = hits.clone();
    let redirector = axum::Router::new().fallback(move || {
        let (counted, location) = (counted.clone(), location.clone());
        async move {
            *counted.lock().unwrap() += 1;
            (
                axum::http::StatusCode::TEMPORARY_REDIRECT,
                [(axum::http::header::LOCATION, location)],
            )
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, redirector).await.unwrap() });

    let app = TestApp::with_settings(allow_http()).await;
    app.put(
        &app.hh("/ntfy_channel"),
        &app.owner,
        json!({"ntfy_channel": {"topic_url": format!("http://{addr}/olive-pills")}}),
        None,
    )
    .await
    .assert_status(200);
    deliver_a_due_dose(&app, local_delivery()).await;
    assert_eq!(*hits.lock().unwrap(), 1);
    assert!(target.received().is_empty());
    let rows = outcomes(&app).await;
    assert_eq!(rows[0].1, "failed");
    assert!(rows[0].2.contains("307"), "{}", rows[0].2);
}

async fn post_token(app: &TestApp, token: &str, platform: &str) -> crate::support::TestResponse {
    app.post(
        &app.hh("/native_device_tokens"),
        &app.owner,
        json!({"native_device_token": {"token": token, "platform": platform}}),
    )
    .await
}

#[tokio::test]
async fn phone_tokens_must_have_their_documented_shape() {
    let app = TestApp::new().await;
    let refused = [
        (APNS_TOKEN[1..].to_string(), "ios"),
        (format!("{APNS_TOKEN}0"), "ios"),
        (APNS_TOKEN.replace('a', "g"), "ios"),
        (format!("../../{}", &APNS_TOKEN[6..]), "ios"),
        ("fcm-registration-1".to_string(), "android"),
        (format!("{FCM_TOKEN}/../x"), "android"),
        (format!("{FCM_TOKEN} x"), "android"),
        (format!("{FCM_TOKEN}%2F"), "android"),
        (APNS_TOKEN.to_string(), "android"),
    ];
    for (token, platform) in refused {
        let answer = post_token(&app, &token, platform).await;
        answer.assert_error(422, "validation_failed");
        assert!(
            answer.body["error"]["errors"]["token"].is_array(),
            "{platform} {token}"
        );
        assert!(!answer.body.to_string().contains(&token));
    }
    assert_eq!(count(&app, "native_device_tokens").await, 0);
    post_token(&app, APNS_TOKEN, "ios").await.assert_status(201);
    post_token(&app, &APNS_TOKEN.to_ascii_uppercase(), "ios")
        .await
        .assert_status(201);
    post_token(&app, FCM_TOKEN, "android")
        .await
        .assert_status(201);
    assert_eq!(count(&app, "native_device_tokens").await, 3);
}

/// The same rule in the real binary: refused without the flag, delivered
/// with it, and a subscription stored with it not connected to once the
/// server runs without it.
mod binary {
    use std::path::Path;
    use std::process::Command;
    use std::time::{Duration, Instant};

    use serde_json::{Value, json};

    use crate::reminders::{BrowserKeys, TestService};
    use crate::support::process::{
        Guard, free_port, http_request, serve_with, set_up_household, token_create,
    };

    /// `pillbox serve` with http push, private networks allowed or not,
    /// and every outbound request sent through `proxy` if it would go
    /// through one.
    fn serve(data: &Path, port: u16, log: &Path, private: bool, proxy: &str) -> Guard {
        serve_with(data, port, log, |cmd: &mut Command| {
            cmd.env("PILLBOX_PUSH_ALLOW_HTTP", "1");
            if private {
                cmd.env("PILLBOX_PUSH_ALLOW_PRIVATE_NETWORK", "1");
            } else {
                cmd.env_remove("PILLBOX_PUSH_ALLOW_PRIVATE_NETWORK");
            }
            for var in ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"] {
                cmd.env(var, proxy);
            }
            cmd.env_remove("NO_PROXY").env_remove("no_proxy");
        })
    }

    fn call(port: u16, method: &str, path: &str, token: &str, body: Value) -> (u16, Value) {
        let text = body.to_string();
        let response = http_request(
            port,
            method,
            path,
            Some(token),
            &[("content-type", "application/json")],
            (!body.is_null()).then_some(text.as_str()),
        )
        .unwrap();
        let json = if response.body.is_empty() {
            Value::Null
        } else {
            response.json()
        };
        (response.status, json)
    }

    fn web_push_health(port: u16, path: &str, token: &str) -> Value {
        let (status, settings) = call(port, "GET", path, token, Value::Null);
        assert_eq!(status, 200);
        settings["data"]["delivery_health"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["channel"] == "web_push")
            .cloned()
            .unwrap_or(Value::Null)
    }

    #[test]
    fn the_running_server_keeps_the_rule_and_its_flag_lifts_it() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let push = runtime.block_on(TestService::start());
        // A proxy would make the connection out of the rule's sight: none is used.
        let proxy_service = runtime.block_on(TestService::start());
        let proxy = format!("http://{}", proxy_service.addr);
        let (dir, data, household) = set_up_household();
        let token = token_create(&data, &household, "owner@example.org", &[]);
        token.assert_success();
        let token = token.single_stdout_line().to_string();
        let hh = |rest: &str| format!("/api/v1/households/{household}{rest}");
        let port = free_port();
        let log = dir.path().join("serve.log");
        let keys = BrowserKeys::new();
        let endpoint = format!("http://localhost:{}/push/olive", push.addr.port());

        let mut server = serve(&data, port, &log, false, &proxy);
        let (status, refused) = call(
            port,
            "POST",
            &hh("/push_subscription"),
            &token,
            keys.body(&endpoint),
        );
        assert_eq!(status, 422, "{refused}");
        assert!(refused["error"]["errors"]["endpoint"].is_array());
        let topic = format!("http://{}/olive-pills", push.addr);
        let (status, refused) = call(
            port,
            "PUT",
            &hh("/ntfy_channel"),
            &token,
            json!({"ntfy_channel": {"topic_url": topic}}),
        );
        assert_eq!(status, 422, "{refused}");
        assert!(refused["error"]["errors"]["topic_url"].is_array());
        drop(server);

        server = serve(&data, port, &log, true, &proxy);
        let (status, _) = call(
            port,
            "POST",
            &hh("/push_subscription"),
            &token,
            keys.body(&endpoint),
        );
        assert_eq!(status, 201);
        let test = hh("/push_subscription/test");
        assert_eq!(call(port, "POST", &test, &token, Value::Null).0, 204);
        let end = Instant::now() + Duration::from_secs(15);
        while push.received().is_empty() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(push.received().len(), 1, "the flag lets it through");
        drop(server);

        // Restarted without the flag, on the same database.
        server = serve(&data, port, &log, false, &proxy);
        assert_eq!(call(port, "POST", &test, &token, Value::Null).0, 204);
        let admin = hh("/admin/settings");
        let end = Instant::now() + Duration::from_secs(15);
        while web_push_health(port, &admin, &token)["failed_count"] != 1 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(50));
        }
        let health = web_push_health(port, &admin, &token);
        assert_eq!(health["failed_count"], 1, "{health}");
        assert!(
            health["last_error"].as_str().unwrap().contains("loopback"),
            "{health}"
        );
        assert_eq!(push.received().len(), 1, "nothing more reached the service");
        assert!(proxy_service.received().is_empty());
        drop(server);
    }
}
