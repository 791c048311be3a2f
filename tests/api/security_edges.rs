//! The smaller holes of issue 48 (items 7 and 8): links and the OAuth
//! issuer never follow a client's Host, an answer given before the body
//! was read ends the connection, the token endpoints refuse another
//! client's credentials, and `serve --help` reads cleanly.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use pillbox::config::DEFAULT_WEB_CLIENT_ID;

use crate::support::TestApp;
use crate::support::process::{free_port, pillbox, run, serve, set_up_household};
use crate::support::sign_in::{
    MOBILE, OWNER_EMAIL, assert_oauth_error, pkce, redeem, sign_in, tokens,
};

/// One request over a fresh connection, as written; the whole answer until
/// the server closes (or `wait` passes), and whether it closed.
fn exchange(port: u16, request: &[u8], wait: Duration) -> (String, bool) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(wait)).unwrap();
    stream.write_all(request).unwrap();
    let mut answer = Vec::new();
    let mut buffer = [0u8; 8192];
    let closed = loop {
        match stream.read(&mut buffer) {
            Ok(0) => break true,
            Ok(n) => answer.extend_from_slice(&buffer[..n]),
            Err(_) => break false,
        }
    };
    (String::from_utf8_lossy(&answer).into_owned(), closed)
}

fn get_with_host(port: u16, path: &str, host: &str) -> String {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    let (answer, _) = exchange(port, request.as_bytes(), Duration::from_secs(10));
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    // A chunked body: the JSON is on one of its lines.
    body.lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or(body)
        .to_string()
}

#[test]
fn links_and_the_issuer_never_come_from_a_clients_host() {
    let (dir, data, _) = set_up_household();
    let port = free_port();
    let _server = serve(&data, port, &dir.path().join("serve.log"));
    let own = format!("http://127.0.0.1:{port}");
    let issuer = |host: &str| -> serde_json::Value {
        let body = get_with_host(port, "/.well-known/oauth-authorization-server", host);
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
    };
    for host in ["evil.example", "evil.example:8080", "127.0.0.2:1"] {
        let metadata = issuer(host);
        assert_eq!(metadata["issuer"], own, "Host {host}");
        assert!(
            metadata["authorization_endpoint"]
                .as_str()
                .unwrap()
                .starts_with(&own)
        );
        let caps = get_with_host(port, "/api/v1/capabilities", host);
        assert!(!caps.contains("evil.example"), "{caps}");
        assert!(caps.contains(&own), "{caps}");
    }
    // A Host that names the server itself is kept as written.
    assert_eq!(
        issuer(&format!("localhost:{port}"))["issuer"],
        format!("http://localhost:{port}")
    );
    assert_eq!(issuer(&format!("127.0.0.1:{port}"))["issuer"], own);
}

#[test]
fn an_answer_given_before_the_body_was_read_closes_the_connection() {
    let (dir, data, _) = set_up_household();
    let port = free_port();
    let _server = serve(&data, port, &dir.path().join("serve.log"));
    // Refused for its missing credential before its body is read; the body
    // itself looks like a second request, which must never be answered.
    let smuggled = "GET /api/v1/capabilities HTTP/1.1\r\nHost: x\r\n\r\n";
    let body = format!("{}{smuggled}", " ".repeat(64 * 1024));
    let request = format!(
        "POST /api/v1/households/1/people HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let (answer, closed) = exchange(port, request.as_bytes(), Duration::from_secs(10));
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    assert!(closed, "the server ended the connection");
    assert_eq!(
        answer.matches("HTTP/1.1 ").count(),
        1,
        "the rest of the body was not read as a request: {answer}"
    );
    // A request whose body was read keeps its connection.
    let request = format!(
        "POST /api/v1/oauth/token HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 20\r\n\r\ngrant_type=password"
    );
    let request = request + " ";
    let (answer, closed) = exchange(port, request.as_bytes(), Duration::from_millis(500));
    assert!(answer.starts_with("HTTP/1.1 4"), "{answer}");
    assert!(
        !answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    assert!(!closed, "kept alive for the next request");
}

#[tokio::test]
async fn a_code_redeemed_by_another_client_is_burnt() {
    let app = TestApp::new().await;
    let (verifier, challenge) = pkce();
    let code = sign_in(&app, &challenge, OWNER_EMAIL, None).await;
    let stolen = app
        .form(
            "/api/v1/oauth/token",
            &[
                ("grant_type", "authorization_code"),
                ("client_id", DEFAULT_WEB_CLIENT_ID),
                ("code", &code),
                ("redirect_uri", "http://localhost/app/oauth/callback"),
                ("code_verifier", &verifier),
            ],
        )
        .await;
    assert_oauth_error(&stolen, 400, "invalid_grant");
    // Its own client can no longer use it either.
    assert_oauth_error(&redeem(&app, &code, &verifier).await, 400, "invalid_grant");
}

#[tokio::test]
async fn revoking_a_token_in_the_name_of_another_client_is_refused() {
    let app = TestApp::new().await;
    let (access, refresh) = tokens(&app).await;
    for token in [&access, &refresh] {
        let refused = app
            .form(
                "/api/v1/oauth/revoke",
                &[("token", token), ("client_id", DEFAULT_WEB_CLIENT_ID)],
            )
            .await;
        assert_oauth_error(&refused, 400, "unauthorized_client");
    }
    app.get("/api/v1/auth/sessions", &access)
        .await
        .assert_status(200);
    let revoked = app
        .form(
            "/api/v1/oauth/revoke",
            &[("token", &access), ("client_id", MOBILE)],
        )
        .await;
    revoked.assert_status(200);
    app.get("/api/v1/auth/sessions", &access)
        .await
        .assert_status(401);
}

#[test]
fn serve_help_describes_each_flag_once() {
    let out = run(pillbox(&["serve", "--help"]), None);
    out.assert_success();
    let mut lines = out.stdout.lines();
    lines
        .find(|l| l.trim_start().starts_with("--invitation-ttl-days"))
        .expect("the flag is listed");
    let description = lines.next().unwrap_or("").trim();
    assert!(
        description.starts_with("Days an invitation link stays valid"),
        "{description}"
    );
    assert!(out.stdout.contains("--oidc-mfa-acr"));
}
