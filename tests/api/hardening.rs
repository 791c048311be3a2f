//! Hardening of the HTTP surface: page security headers, strict request
//! parsing, errors in our own words, and a rate limit keyed on what was
//! verified.

use axum::body::Body;
use axum::http::{Method, Request};
use serde_json::{Value, json};

use crate::support::{TestApp, TestResponse};

/// A POST with exactly this body and these headers (no JSON content type added).
async fn post_raw(
    app: &TestApp,
    path: &str,
    body: &str,
    content_type: Option<&str>,
) -> TestResponse {
    send_raw(app, Method::POST, path, body, content_type).await
}

async fn send_raw(
    app: &TestApp,
    method: Method,
    path: &str,
    body: &str,
    content_type: Option<&str>,
) -> TestResponse {
    let mut builder = Request::builder()
        .method(method.clone())
        .uri(path)
        .header("authorization", format!("Bearer {}", app.owner));
    if let Some(content_type) = content_type {
        builder = builder.header("content-type", content_type);
    }
    let response = app
        .raw_request(builder.body(Body::from(body.to_string())).unwrap())
        .await;
    crate::support::Contract::new(app.document().clone()).check(&method, path, &response);
    response
}

async fn people_count(app: &TestApp) -> i64 {
    app.get(&app.hh("/people"), &app.owner).await.body["meta"]["total_count"]
        .as_i64()
        .unwrap()
}

/// The single field a 422 names, and its message.
#[track_caller]
fn only_field(response: &TestResponse) -> (String, String) {
    response.assert_error(422, "validation_failed");
    let errors = response.body["error"]["errors"].as_object().unwrap();
    assert_eq!(errors.len(), 1, "{}", response.body);
    let (field, messages) = errors.iter().next().unwrap();
    (field.clone(), messages[0].as_str().unwrap().to_string())
}

#[tokio::test]
async fn pages_carry_a_strict_content_security_policy_and_refuse_framing() {
    let app = TestApp::new().await;
    let page = app.raw(Method::GET, "/", None, None, &[]).await;
    page.assert_status(200);
    assert!(
        page.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    let csp = page.header("content-security-policy").expect("a CSP");
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ] {
        assert!(csp.contains(directive), "{directive} missing from {csp}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    // Under that policy an inline style or script would not apply.
    let html = page.body["raw"].as_str().unwrap();
    assert!(
        !html.contains("<style") && !html.contains("<script>"),
        "{html}"
    );
    assert!(!html.contains(" style="), "{html}");
    let css = app.raw(Method::GET, "/index.css", None, None, &[]).await;
    css.assert_status(200);
    assert!(css.header("content-type").unwrap().starts_with("text/css"));
    // JSON answers are not pages.
    let json = app
        .raw(Method::GET, "/api/v1/capabilities", None, None, &[])
        .await;
    assert!(json.header("content-security-policy").is_none());
}

#[tokio::test]
async fn json_bodies_without_the_json_media_type_are_415_and_change_nothing() {
    let app = TestApp::new().await;
    let before = people_count(&app).await;
    let body = json!({"person": {"name": "Ada", "date_of_birth": "2015-03-01"}}).to_string();
    let path = app.hh("/people");
    for content_type in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        Some("application/jsonx"),
        None,
    ] {
        let refused = post_raw(&app, &path, &body, content_type).await;
        refused.assert_error(415, "unsupported_media_type");
    }
    assert_eq!(people_count(&app).await, before);
    // The JSON media type with parameters, in any case, is JSON.
    post_raw(&app, &path, &body, Some("Application/JSON; charset=utf-8"))
        .await
        .assert_status(201);
    // An operation whose body may be left out still takes no body without a
    // Content-Type, but a body it is sent must be declared JSON.
    let medication = app
        .post(
            &app.hh("/medications"),
            &app.owner,
            crate::support::records::paracetamol(),
        )
        .await;
    medication.assert_status(201);
    let ordered = app.hh(&format!("/medications/{}/mark_as_ordered", medication.id()));
    send_raw(&app, Method::PATCH, &ordered, "", None)
        .await
        .assert_status(200);
    send_raw(&app, Method::PATCH, &ordered, "{}", None)
        .await
        .assert_error(415, "unsupported_media_type");
    send_raw(&app, Method::PATCH, &ordered, "{}", Some("text/plain"))
        .await
        .assert_error(415, "unsupported_media_type");
}

#[tokio::test]
async fn repeated_keys_are_422_naming_the_key_at_any_depth() {
    let app = TestApp::new().await;
    let before = people_count(&app).await;
    let path = app.hh("/people");
    let inner = r#"{"person": {"name": "Ada", "date_of_birth": "2015-03-01", "name": "Eve"}}"#;
    let refused = post_raw(&app, &path, inner, Some("application/json")).await;
    assert_eq!(only_field(&refused).0, "name");
    let outer = r#"{"person": {"name": "Ada", "date_of_birth": "2015-03-01"}, "person": {"name": "Eve", "date_of_birth": "2015-03-01"}}"#;
    let refused = post_raw(&app, &path, outer, Some("application/json")).await;
    assert_eq!(only_field(&refused).0, "person");
    assert_eq!(people_count(&app).await, before);

    // The issue's case: a removal whose quantity appears twice removes nothing.
    let medication = app
        .post(
            &app.hh("/medications"),
            &app.owner,
            crate::support::records::paracetamol(),
        )
        .await;
    medication.assert_status(201);
    let supply = medication.data()["current_supply"].clone();
    let removals = app.hh(&format!("/medications/{}/stock_removals", medication.id()));
    let doubled = r#"{"stock_removal": {"quantity": "1", "reason": "expired", "submission_id": "0192a5b0-0000-7000-8000-000000000001", "quantity": "50"}}"#;
    let refused = post_raw(&app, &removals, doubled, Some("application/json")).await;
    assert_eq!(only_field(&refused).0, "quantity");
    let after = app
        .get(
            &app.hh(&format!("/medications/{}", medication.id())),
            &app.owner,
        )
        .await;
    assert_eq!(after.data()["current_supply"], supply);
}

#[tokio::test]
async fn path_ids_must_be_canonical() {
    let app = TestApp::new().await;
    let person = app
        .post(
            &app.hh("/people"),
            &app.owner,
            json!({"person": {"name": "Ada", "date_of_birth": "2015-03-01"}}),
        )
        .await;
    person.assert_status(201);
    let id = person.id();
    let portable = person.data()["portable_id"].as_str().unwrap().to_string();
    app.get(&app.hh(&format!("/people/{id}")), &app.owner)
        .await
        .assert_status(200);
    for spelling in [
        format!("0{id}"),
        format!("+{id}"),
        format!("{id}.0"),
        format!("%2B{id}"),
    ] {
        app.get(&app.hh(&format!("/people/{spelling}")), &app.owner)
            .await
            .assert_error(404, "not_found");
    }
    let medication = app
        .post(
            &app.hh("/medications"),
            &app.owner,
            crate::support::records::paracetamol(),
        )
        .await;
    medication.assert_status(201);
    let m = medication.id();
    let m_portable = medication.data()["portable_id"]
        .as_str()
        .unwrap()
        .to_string();
    app.get(&app.hh(&format!("/medications/{m}")), &app.owner)
        .await
        .assert_status(200);
    app.get(&app.hh(&format!("/medications/{m_portable}")), &app.owner)
        .await
        .assert_status(200);
    let simple = m_portable.replace('-', "");
    for spelling in [
        format!("{m}.0"),
        format!("0{m}"),
        format!("+{m}"),
        format!("{{{m_portable}}}"),
        format!("urn:uuid:{m_portable}"),
        simple,
    ] {
        app.get(&app.hh(&format!("/medications/{spelling}")), &app.owner)
            .await
            .assert_error(404, "not_found");
    }
    // People are addressed by number only; the household id is canonical too.
    app.get(&app.hh(&format!("/people/{portable}")), &app.owner)
        .await
        .assert_error(404, "not_found");
    let household = app.household_id;
    for spelling in [
        format!("0{household}"),
        format!("+{household}"),
        format!("{household}.0"),
    ] {
        app.get(&format!("/api/v1/households/{spelling}/people"), &app.owner)
            .await
            .assert_error(404, "not_found");
    }
}

#[tokio::test]
async fn text_with_control_or_bidi_override_characters_is_422_naming_the_field() {
    let app = TestApp::new().await;
    let before = people_count(&app).await;
    for name in [
        r"Ada\u0000",
        r"Ada\u0007",
        r"A\nda",
        r"\u202Eada",
        r"Ada\u2066x\u2069",
    ] {
        let body = format!(r#"{{"person": {{"name": "{name}", "date_of_birth": "2015-03-01"}}}}"#);
        let refused = post_raw(&app, &app.hh("/people"), &body, Some("application/json")).await;
        let (field, message) = only_field(&refused);
        assert_eq!(field, "name", "{name}");
        assert!(
            !refused.body.to_string().contains("Ada"),
            "{}",
            refused.body
        );
        assert!(message.starts_with("must not contain"), "{message}");
    }
    assert_eq!(people_count(&app).await, before);
    // Multi-line text keeps its line breaks and tabs, and nothing else.
    let location = app
        .post(
            &app.hh("/locations"),
            &app.owner,
            json!({"location": {"name": "Kitchen", "description": "top shelf\n\tleft side"}}),
        )
        .await;
    location.assert_status(201);
    assert_eq!(location.data()["description"], "top shelf\n\tleft side");
    let refused = app
        .post(
            &app.hh("/locations"),
            &app.owner,
            json!({"location": {"name": "Hall", "description": "bell\u{7}"}}),
        )
        .await;
    assert_eq!(only_field(&refused).0, "description");
    // Right-to-left names themselves are welcome.
    app.post(
        &app.hh("/people"),
        &app.owner,
        json!({"person": {"name": "\u{5e9}\u{5dc}\u{5d5}\u{5dd}", "date_of_birth": "2015-03-01"}}),
    )
    .await
    .assert_status(201);
}

#[tokio::test]
async fn validation_messages_are_ours_and_never_repeat_the_value() {
    let app = TestApp::new().await;
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "/people",
            json!({"person": {"name": "Ada", "date_of_birth": "2015-02-30"}}),
            "date_of_birth",
            "2015",
        ),
        (
            "/people",
            json!({"person": {"name": "Ada", "date_of_birth": "2015-2-3"}}),
            "date_of_birth",
            "2015",
        ),
        (
            "/people",
            json!({"person": {"name": "Ada", "date_of_birth": "yesterday-ish"}}),
            "date_of_birth",
            "yesterday",
        ),
        (
            "/people",
            json!({"person": {"name": "Ada", "date_of_birth": "2015-03-01", "has_capacity": "sure-thing"}}),
            "has_capacity",
            "sure-thing",
        ),
        (
            "/medications",
            json!({"medication": {"name": "X", "dose_unit": "tablet", "current_supply": "1e999"}}),
            "current_supply",
            "1e999",
        ),
    ];
    for (path, body, field, secret) in cases {
        let refused = app.post(&app.hh(path), &app.owner, body).await;
        refused.assert_error(422, "validation_failed");
        let errors = &refused.body["error"]["errors"];
        assert!(errors.get(field).is_some(), "{field}: {}", refused.body);
        let text = refused.body.to_string();
        assert!(!text.contains(secret), "{secret} echoed: {text}");
        for word in ["parse", "parameter", "invalid digit", "line 1", "column"] {
            assert!(!text.contains(word), "library wording {word:?}: {text}");
        }
    }
    let settings = app.hh("/admin/settings");
    let etag = app.get(&settings, &app.owner).await.etag();
    let refused = app
        .patch(
            &settings,
            &app.owner,
            json!({"household": {"time_zone": "Mars/Olympus_Mons"}}),
            Some(&etag),
        )
        .await;
    assert_eq!(only_field(&refused).0, "time_zone");
    assert!(
        !refused.body.to_string().contains("Olympus"),
        "{}",
        refused.body
    );
}

mod rate_limits {
    use std::net::SocketAddr;

    use axum::body::Body;
    use axum::extract::ConnectInfo;
    use axum::http::{Method, Request};
    use pillbox::config::Settings;

    use crate::support::{TestApp, TestResponse};

    async fn limited_app(per_minute: u32, trusted_proxies: usize) -> TestApp {
        TestApp::with_settings(Settings {
            rate_limit_per_minute: per_minute,
            auth_failure_limit_per_minute: 20,
            trusted_proxies,
            ..Settings::default()
        })
        .await
    }

    /// A GET from `peer`, as the real server (which knows the peer) sees it.
    async fn get_from(
        app: &TestApp,
        peer: &str,
        path: &str,
        token: Option<&str>,
        forwarded_for: Option<&str>,
    ) -> TestResponse {
        let mut builder = Request::builder().method(Method::GET).uri(path);
        if let Some(token) = token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        if let Some(forwarded) = forwarded_for {
            builder = builder.header("x-forwarded-for", forwarded);
        }
        let mut request = builder.body(Body::empty()).unwrap();
        let addr: SocketAddr = format!("{peer}:40000").parse().unwrap();
        request.extensions_mut().insert(ConnectInfo(addr));
        app.raw_request(request).await
    }

    fn random_token() -> String {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).unwrap();
        let selector: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        format!("pbx_app_{selector}_not-the-secret")
    }

    #[tokio::test]
    async fn wrong_secrets_with_a_victims_selector_do_not_lock_the_victim_out() {
        let app = limited_app(5, 0).await;
        let people = app.hh("/people");
        // The victim's selector with a wrong secret, 700 times, from elsewhere.
        let selector = &app.owner["pbx_app_".len().."pbx_app_".len() + 16];
        let forged = format!("pbx_app_{selector}_wrong-secret");
        let mut limited = 0;
        for _ in 0..700 {
            let r = get_from(&app, "198.51.100.66", &people, Some(&forged), None).await;
            match r.status.as_u16() {
                401 => {}
                429 => limited += 1,
                other => panic!("unexpected {other}: {}", r.body),
            }
        }
        assert!(
            limited >= 600,
            "failed authentications slow down: {limited}"
        );
        // The victim's whole bucket is still there, from any address.
        for peer in [
            "192.0.2.10",
            "192.0.2.10",
            "192.0.2.11",
            "198.51.100.67",
            "192.0.2.10",
        ] {
            get_from(&app, peer, &people, Some(&app.owner), None)
                .await
                .assert_status(200);
        }
        // ... and it is theirs: the sixth request is over the limit.
        let over = get_from(&app, "192.0.2.10", &people, Some(&app.owner), None).await;
        over.assert_status(429);
        assert!(over.header("retry-after").is_some());
    }

    #[tokio::test]
    async fn unverified_credentials_and_anonymous_requests_are_limited_by_address() {
        let app = limited_app(600, 0).await;
        let people = app.hh("/people");
        let mut statuses = Vec::new();
        for _ in 0..200 {
            let r = get_from(&app, "203.0.113.5", &people, Some(&random_token()), None).await;
            statuses.push(r.status.as_u16());
        }
        assert!(statuses[..20].iter().all(|s| *s == 401), "{statuses:?}");
        assert!(statuses[20..].iter().all(|s| *s == 429), "{statuses:?}");
        let limited = get_from(&app, "203.0.113.5", &people, Some(&random_token()), None).await;
        limited.assert_error(429, "rate_limited");
        let retry: u64 = limited.header("retry-after").unwrap().parse().unwrap();
        assert!(retry >= 1);
        // Another address is not affected, and a verified credential is
        // never held back by its address's failures (a family behind one
        // router or proxy shares an address with a phone whose token is stale).
        get_from(&app, "203.0.113.6", &people, Some(&random_token()), None)
            .await
            .assert_status(401);
        get_from(&app, "203.0.113.6", &people, Some(&app.owner), None)
            .await
            .assert_status(200);
        get_from(&app, "203.0.113.5", &people, Some(&app.owner), None)
            .await
            .assert_status(200);
        get_from(&app, "203.0.113.5", &people, Some(&random_token()), None)
            .await
            .assert_status(429);

        // Requests without a credential share their address's bucket.
        let app = limited_app(5, 0).await;
        let caps = "/api/v1/capabilities";
        for _ in 0..5 {
            get_from(&app, "203.0.113.7", caps, None, None)
                .await
                .assert_status(200);
        }
        get_from(&app, "203.0.113.7", caps, None, None)
            .await
            .assert_status(429);
        get_from(&app, "203.0.113.8", caps, None, None)
            .await
            .assert_status(200);
    }

    #[tokio::test]
    async fn forwarded_for_is_believed_only_from_trusted_proxies() {
        // No trusted proxy: a fresh X-Forwarded-For per request changes nothing.
        let app = limited_app(600, 0).await;
        let people = app.hh("/people");
        for i in 0..20 {
            let spoofed = format!("192.0.2.{i}");
            get_from(
                &app,
                "203.0.113.5",
                &people,
                Some(&random_token()),
                Some(&spoofed),
            )
            .await
            .assert_status(401);
        }
        get_from(
            &app,
            "203.0.113.5",
            &people,
            Some(&random_token()),
            Some("192.0.2.200"),
        )
        .await
        .assert_status(429);

        // Behind one trusted proxy, the entry it appended is the client.
        let app = limited_app(600, 1).await;
        let proxy = "10.0.0.1";
        for _ in 0..20 {
            get_from(
                &app,
                proxy,
                &people,
                Some(&random_token()),
                Some("spoofed, 192.0.2.1"),
            )
            .await
            .assert_status(401);
        }
        get_from(
            &app,
            proxy,
            &people,
            Some(&random_token()),
            Some("192.0.2.1"),
        )
        .await
        .assert_status(429);
        // A client's own leftmost entries are not believed; another client is unaffected.
        get_from(
            &app,
            proxy,
            &people,
            Some(&random_token()),
            Some("192.0.2.1, 192.0.2.2"),
        )
        .await
        .assert_status(401);
    }
}

/// The real binary: connection limits and the process's own limits.
mod connections {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::path::Path;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use crate::support::process::{
        BIN, Guard, free_port, http_get, pillbox, set_up_household, token_create,
        wait_until_serving,
    };

    fn serve_with(data: &Path, port: u16, log: &Path, extra: &[&str]) -> Guard {
        let listen = format!("127.0.0.1:{port}");
        let mut args = vec![
            "serve",
            "--data-dir",
            data.to_str().unwrap(),
            "--listen",
            &listen,
            "--rate-limit",
            "0",
        ];
        args.extend_from_slice(extra);
        spawn(pillbox(&args), port, log)
    }

    fn spawn(mut cmd: Command, port: u16, log: &Path) -> Guard {
        let log_file = std::fs::File::create(log).unwrap();
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log_file));
        let mut server = Guard(cmd.spawn().expect("spawn pillbox serve"));
        wait_until_serving(&mut server, port);
        server
    }

    fn connect(port: u16) -> TcpStream {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(15)))
            .unwrap();
        stream
    }

    /// Reads until the server closes the connection; `Err` when it has not
    /// within the read timeout.
    fn read_until_closed(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf) {
                Ok(0) => return Ok(all),
                Ok(n) => all.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Ok(all),
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads one response whose body has a Content-Length, leaving the
    /// connection open.
    fn read_one_response(stream: &mut TcpStream) -> String {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = stream.read(&mut buf).expect("a response");
            assert!(n > 0, "closed before a whole response");
            all.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&all).to_string();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse().unwrap())
                    })
                    .expect("Content-Length");
                if body.len() >= length {
                    return text;
                }
            }
        }
    }

    #[test]
    fn a_half_sent_request_line_is_closed_after_the_header_read_timeout() {
        let (dir, data, _) = set_up_household();
        let port = free_port();
        let _server = serve_with(
            &data,
            port,
            &dir.path().join("serve.log"),
            &["--header-read-timeout", "1", "--idle-timeout", "60"],
        );
        let mut stalled = connect(port);
        stalled.write_all(b"GET /api/v1/capa").unwrap();
        let answer = read_until_closed(&mut stalled).expect("closed within the read timeout");
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
            "{answer}"
        );
        // Headers trickled in a byte at a time get no more time in total.
        let mut trickle = connect(port);
        let started = Instant::now();
        let mut closed = false;
        for byte in b"GET /api/v1/capabilities HTTP/1.1\r\nHost: x\r\nX-Slow: "
            .iter()
            .cycle()
        {
            if trickle.write_all(&[*byte]).is_err() {
                closed = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
            if started.elapsed() > Duration::from_secs(15) {
                break;
            }
        }
        assert!(closed, "a trickling client was never cut off");
        http_get(port, "/api/v1/capabilities", None)
            .unwrap()
            .status
            .eq(&200)
            .then_some(())
            .expect("the server still answers");
    }

    #[test]
    fn a_request_body_that_stalls_is_given_up_on() {
        let (dir, data, household) = set_up_household();
        let token = token_create(&data, &household, "owner@example.org", &[]);
        token.assert_success();
        let token = token.single_stdout_line().to_string();
        let port = free_port();
        let _server = serve_with(
            &data,
            port,
            &dir.path().join("serve.log"),
            &["--header-read-timeout", "1", "--idle-timeout", "60"],
        );
        let mut stalled = connect(port);
        let head = format!(
            "POST /api/v1/households/{household}/people HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"person\":"
        );
        stalled.write_all(head.as_bytes()).unwrap();
        let answer = read_until_closed(&mut stalled).expect("closed within the read timeout");
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 4"),
            "{answer}"
        );
    }

    #[test]
    fn an_idle_kept_alive_connection_is_closed_after_the_idle_timeout() {
        let (dir, data, _) = set_up_household();
        let port = free_port();
        let _server = serve_with(
            &data,
            port,
            &dir.path().join("serve.log"),
            &["--header-read-timeout", "60", "--idle-timeout", "1"],
        );
        let mut kept = connect(port);
        for _ in 0..2 {
            kept.write_all(b"GET /api/v1/capabilities HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            assert!(read_one_response(&mut kept).starts_with("HTTP/1.1 200"));
        }
        let rest = read_until_closed(&mut kept).expect("closed within the read timeout");
        assert!(rest.is_empty());
    }

    #[test]
    fn connections_beyond_the_cap_wait_and_are_served_once_others_close() {
        let (dir, data, _) = set_up_household();
        let port = free_port();
        let _server = serve_with(
            &data,
            port,
            &dir.path().join("serve.log"),
            &[
                "--max-connections",
                "2",
                "--header-read-timeout",
                "60",
                "--idle-timeout",
                "60",
            ],
        );
        let hogs: Vec<TcpStream> = (0..2).map(|_| connect(port)).collect();
        // Give the server time to accept both.
        std::thread::sleep(Duration::from_millis(300));
        let mut waiting = connect(port);
        waiting
            .write_all(b"GET /api/v1/capabilities HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        waiting
            .set_read_timeout(Some(Duration::from_millis(700)))
            .unwrap();
        let mut buf = [0u8; 64];
        let early = waiting.read(&mut buf);
        assert!(
            matches!(&early, Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
            "served beyond the cap: {early:?}"
        );
        drop(hogs);
        waiting
            .set_read_timeout(Some(Duration::from_secs(15)))
            .unwrap();
        let answer = read_until_closed(&mut waiting).unwrap();
        assert!(
            String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&answer)
        );
    }

    /// `(soft, hard)` open-file limits of a running process.
    #[cfg(target_os = "linux")]
    fn open_file_limits(pid: u32) -> (String, String) {
        let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
        let line = limits
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .unwrap();
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields[3].to_string(), fields[4].to_string())
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_soft_open_file_limit_is_raised_to_the_hard_limit() {
        let (dir, data, _) = set_up_household();
        let port = free_port();
        let listen = format!("127.0.0.1:{port}");
        // Start it the way a default shell would: a low soft limit.
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "ulimit -S -n 256 && exec \"$0\" \"$@\"",
            BIN,
            "serve",
            "--data-dir",
            data.to_str().unwrap(),
            "--listen",
            &listen,
        ]);
        let server = spawn(cmd, port, &dir.path().join("serve.log"));
        let (soft, hard) = open_file_limits(server.0.id());
        assert_eq!(soft, hard, "soft {soft}, hard {hard}");
    }

    #[cfg(target_os = "linux")]
    fn threads_of(pid: u32) -> usize {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_burst_of_requests_uses_a_bounded_number_of_threads() {
        let (dir, data, household) = set_up_household();
        let token = token_create(&data, &household, "owner@example.org", &[]);
        token.assert_success();
        let token = token.single_stdout_line().to_string();
        let port = free_port();
        let server = serve_with(
            &data,
            port,
            &dir.path().join("serve.log"),
            &["--blocking-threads", "4"],
        );
        let pid = server.0.id();
        let path = format!("/api/v1/households/{household}/people");
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watcher = {
            let done = done.clone();
            std::thread::spawn(move || {
                let mut most = 0;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    most = most.max(threads_of(pid));
                    std::thread::sleep(Duration::from_millis(5));
                }
                most
            })
        };
        let clients: Vec<_> = (0..100)
            .map(|_| {
                let path = path.clone();
                let token = token.clone();
                std::thread::spawn(move || {
                    for _ in 0..5 {
                        let r = http_get(port, &path, Some(&token)).unwrap();
                        assert_eq!(r.status, 200, "{}", r.body);
                    }
                })
            })
            .collect();
        for client in clients {
            client.join().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let most = watcher.join().unwrap();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        // Main, workers, the blocking threads, the writer, the pool's helpers, signals.
        let bound = 1 + cores + 4 + 1 + 3 + 4;
        assert!(most <= bound, "{most} threads (bound {bound})");
    }
}
