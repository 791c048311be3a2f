//! `pillbox account password|reset-mfa` as processes, and a sign-in
//! through the real binary whose log keeps no secret (issue 12).

use std::path::Path;

use pillbox::db::DATABASE_FILE;
use rusqlite::Connection;

use crate::support::process::{
    PASSWORD, free_port, http_request, pillbox, run, serve, set_up_household,
};
use crate::support::sign_in::{MOBILE, REDIRECT, cookie_value, hidden_fields, pkce};

const NEW_PASSWORD: &str = "a brand new passphrase";

fn open(data: &Path) -> Connection {
    Connection::open(data.join(DATABASE_FILE)).unwrap()
}

fn owner_id(conn: &Connection) -> i64 {
    conn.query_row(
        "SELECT id FROM accounts WHERE email = 'owner@example.org'",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

fn account(
    data: &Path,
    command: &str,
    email: &str,
    stdin: Option<&str>,
) -> crate::support::process::Outcome {
    run(
        pillbox(&[
            "account",
            command,
            "--data-dir",
            data.to_str().unwrap(),
            "--email",
            email,
        ]),
        stdin,
    )
}

fn events(conn: &Connection, event_type: &str) -> i64 {
    conn.query_row(
        "SELECT count(*) FROM sign_in_events WHERE event_type = ?1",
        [event_type],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn account_password_sets_the_password_and_signs_every_device_out() {
    let (_dir, data, _) = set_up_household();
    {
        let conn = open(&data);
        let id = owner_id(&conn);
        conn.execute(
            "INSERT INTO oauth_sessions (account_id, client_id, device_label, created_at, last_used_at, expires_at)
             VALUES (?1, 'pillbox-mobile', 'Phone', '2026-01-01T00:00:00.000000Z',
                     '2026-01-01T00:00:00.000000Z', '2999-01-01T00:00:00.000000Z')",
            [id],
        )
        .unwrap();
    }
    // An app token made with the old password (which may have leaked).
    crate::support::process::token_create(&data, "1", "owner@example.org", &[]).assert_success();
    let out = account(
        &data,
        "password",
        "OWNER@example.org",
        Some(&format!("{NEW_PASSWORD}\n")),
    );
    out.assert_success();
    assert!(
        out.stderr
            .contains("1 signed-in session(s) signed out and 1 app token(s) revoked"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains(NEW_PASSWORD) && !out.stdout.contains(NEW_PASSWORD));

    let conn = open(&data);
    let hash: String = conn
        .query_row(
            "SELECT password_hash FROM accounts WHERE id = ?1",
            [owner_id(&conn)],
            |r| r.get(0),
        )
        .unwrap();
    assert!(pillbox::auth::password::verify(NEW_PASSWORD, &hash));
    assert!(!pillbox::auth::password::verify(PASSWORD, &hash));
    let live: i64 = conn
        .query_row(
            "SELECT count(*) FROM oauth_sessions WHERE revoked_at IS NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(live, 0);
    assert_eq!(events(&conn, "password.reset"), 1);
    let live_tokens: i64 = conn
        .query_row(
            "SELECT count(*) FROM app_tokens WHERE revoked_at IS NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(live_tokens, 0, "the account's app tokens are revoked too");
    let audited: i64 = conn
        .query_row(
            "SELECT count(*) FROM audit_events WHERE event_type = 'app_token.revoked'
             AND json_extract(metadata, '$.via') = 'password_reset'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(audited, 1);

    account(
        &data,
        "password",
        "nobody@example.org",
        Some(&format!("{NEW_PASSWORD}\n")),
    )
    .assert_one_line_failure("no account has the email nobody@example.org");
    account(&data, "password", "owner@example.org", Some("short\n"))
        .assert_one_line_failure("at least 12 characters");
    let missing = tempfile::tempdir().unwrap();
    account(
        missing.path(),
        "password",
        "owner@example.org",
        Some(&format!("{NEW_PASSWORD}\n")),
    )
    .assert_one_line_failure("pillbox setup");
}

#[test]
fn account_reset_mfa_removes_the_second_factor_and_recovery_codes() {
    let (_dir, data, _) = set_up_household();
    {
        let conn = open(&data);
        let id = owner_id(&conn);
        conn.execute(
            "INSERT INTO account_totp (account_id, secret_encrypted, confirmed_at, created_at)
             VALUES (?1, x'00112233445566778899aabbccddeeff00112233445566778899', '2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z')",
            [id],
        )
        .unwrap();
        for n in 0..10 {
            conn.execute(
                "INSERT INTO recovery_codes (account_id, code_sha256) VALUES (?1, ?2)",
                rusqlite::params![id, vec![n as u8; 32]],
            )
            .unwrap();
        }
    }
    let out = account(&data, "reset-mfa", "owner@example.org", None);
    out.assert_success();
    assert!(out.stderr.contains("is off"), "{}", out.stderr);
    let conn = open(&data);
    let left: i64 = conn
        .query_row(
            "SELECT (SELECT count(*) FROM account_totp) + (SELECT count(*) FROM recovery_codes)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0);
    assert_eq!(events(&conn, "mfa.reset"), 1);
    // The household's administrators see it in their audit log.
    let audited: i64 = conn
        .query_row(
            "SELECT count(*) FROM audit_events WHERE event_type = 'mfa.reset'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(audited, 1);

    let again = account(&data, "reset-mfa", "owner@example.org", None);
    again.assert_success();
    assert!(again.stderr.contains("nothing changed"), "{}", again.stderr);
    account(&data, "reset-mfa", "nobody@example.org", None)
        .assert_one_line_failure("nobody@example.org");
}

#[test]
fn signing_in_through_the_binary_keeps_secrets_out_of_the_log() {
    let (dir, data, household) = set_up_household();
    let port = free_port();
    let log = dir.path().join("serve.log");
    let _server = serve(&data, port, &log);

    let meta = http_request(
        port,
        "GET",
        "/.well-known/oauth-authorization-server",
        None,
        &[],
        None,
    )
    .unwrap();
    assert_eq!(meta.status, 200);
    assert_eq!(meta.json()["issuer"], format!("http://127.0.0.1:{port}"));

    let (verifier, challenge) = pkce();
    let query = serde_urlencoded::to_string([
        ("response_type", "code"),
        ("client_id", MOBILE),
        ("redirect_uri", REDIRECT),
        ("state", "st"),
        ("code_challenge", challenge.as_str()),
        ("code_challenge_method", "S256"),
    ])
    .unwrap();
    let page = http_request(
        port,
        "GET",
        &format!("/api/v1/oauth/authorize?{query}"),
        None,
        &[],
        None,
    )
    .unwrap();
    assert_eq!(page.status, 200);
    let cookie = cookie_value(page.header("set-cookie").unwrap());
    let hidden = hidden_fields(&page.body);
    let post = |email: &str, password: &str| {
        let mut fields = hidden.clone();
        fields.push(("email".into(), email.into()));
        fields.push(("password".into(), password.into()));
        let body = serde_urlencoded::to_string(&fields).unwrap();
        http_request(
            port,
            "POST",
            "/api/v1/oauth/authorize",
            None,
            &[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("Cookie", &cookie),
            ],
            Some(&body),
        )
        .unwrap()
    };
    assert_eq!(
        post("owner@example.org", "a wrong password, logged?").status,
        401
    );
    let done = post("owner@example.org", PASSWORD);
    assert_eq!(done.status, 303, "{}", done.body);
    let location = done.header("location").unwrap().to_string();
    let params: Vec<(String, String)> =
        serde_urlencoded::from_str(location.split_once('?').unwrap().1).unwrap();
    let code = params.iter().find(|(k, _)| k == "code").unwrap().1.clone();

    let body = serde_urlencoded::to_string([
        ("grant_type", "authorization_code"),
        ("client_id", MOBILE),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", verifier.as_str()),
    ])
    .unwrap();
    let tokens = http_request(
        port,
        "POST",
        "/api/v1/oauth/token",
        None,
        &[("Content-Type", "application/x-www-form-urlencoded")],
        Some(&body),
    )
    .unwrap();
    assert_eq!(tokens.status, 200, "{}", tokens.body);
    let access = tokens.json()["access_token"].as_str().unwrap().to_string();
    let refresh = tokens.json()["refresh_token"].as_str().unwrap().to_string();
    let people = http_request(
        port,
        "GET",
        &format!("/api/v1/households/{household}/people"),
        Some(&access),
        &[],
        None,
    )
    .unwrap();
    assert_eq!(people.status, 200);

    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("/api/v1/oauth/token"),
        "requests are logged: {log}"
    );
    for secret in [
        PASSWORD,
        "a wrong password, logged?",
        &code,
        &access,
        &refresh,
        &verifier,
        &cookie,
    ] {
        assert!(!log.contains(secret), "{secret} in the log");
    }
    assert!(
        !log.contains("owner@example.org"),
        "emails stay out of the log"
    );
}
