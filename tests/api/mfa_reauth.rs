//! Changing the second factor needs the person, not just a token (issue 48
//! item 2): the password with every change (and a code to remove it or to
//! replace the recovery codes), counted and throttled like the sign-in
//! form; turning the factor on or off signs the other devices out.

use axum::http::Method;
use pillbox::identity::mfa::totp;
use serde_json::{Value, json};

use crate::support::mfa::{base32_decode, enrol};
use crate::support::sign_in::{
    OWNER_EMAIL, assert_oauth_error, pkce, redeem, refresh, sign_in, tokens,
};
use crate::support::{PASSWORD, TestApp, TestResponse};

const ENROL: &str = "/api/v1/auth/mfa/totp";
const CONFIRM: &str = "/api/v1/auth/mfa/totp/confirm";
const NEW_CODES: &str = "/api/v1/auth/mfa/recovery_codes";
const DISABLE: &str = "/api/v1/auth/mfa/totp/disable";
const WRONG: &str = "not the password at all";

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// What the database holds of the owner's second factor: (TOTP row,
/// confirmed, recovery code digests), to show a refused change kept it.
async fn factor_rows(app: &TestApp) -> (i64, i64, Vec<Vec<u8>>) {
    app.db
        .read(|conn| {
            let (rows, confirmed) = conn.query_row(
                "SELECT count(*), count(confirmed_at) FROM account_totp",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let codes = conn
                .prepare("SELECT code_sha256 FROM recovery_codes ORDER BY id")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok((rows, confirmed, codes))
        })
        .await
        .unwrap()
}

/// Failures counted against each key of the sign-in throttles.
async fn failures(app: &TestApp) -> Vec<(String, i64)> {
    app.db
        .read(|conn| {
            Ok(conn
                .prepare("SELECT key, failures FROM sign_in_failures ORDER BY key")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
        .unwrap()
}

async fn failed_steps(app: &TestApp) -> Vec<String> {
    app.db
        .read(|conn| {
            Ok(conn
                .prepare(
                    "SELECT json_extract(metadata, '$.step') FROM sign_in_events
                     WHERE event_type = 'sign_in.failed' ORDER BY id",
                )?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
        .unwrap()
}

#[track_caller]
fn assert_names_password(response: &TestResponse) {
    response.assert_error(422, "validation_failed");
    assert!(
        response.body["error"]["errors"]["mfa.password"].is_array(),
        "{}",
        response.body
    );
}

/// Starts an enrolment with the password; answers the secret.
async fn begin(app: &TestApp, access: &str) -> Vec<u8> {
    let started = app
        .post(ENROL, access, json!({"mfa": {"password": PASSWORD}}))
        .await;
    started.assert_status(201);
    base32_decode(started.data()["secret"].as_str().unwrap())
}

fn proof(password: &str, code: &str) -> Value {
    json!({"mfa": {"password": password, "code": code}})
}

#[tokio::test]
async fn every_change_without_the_password_is_a_422_and_changes_nothing() {
    let app = TestApp::new().await;
    let (access, _) = tokens(&app).await;

    // Enrolling: no body (as before passwords were asked), no password, an empty one.
    assert_names_password(
        &app.send(Method::POST, ENROL, Some(&access), None, &[])
            .await,
    );
    for body in [json!({"mfa": {}}), json!({"mfa": {"password": ""}})] {
        assert_names_password(&app.post(ENROL, &access, body).await);
    }
    assert_eq!(factor_rows(&app).await, (0, 0, vec![]));

    // Confirming.
    let secret = begin(&app, &access).await;
    let code = totp::code_at(&secret, now());
    assert_names_password(
        &app.post(CONFIRM, &access, json!({"mfa": {"code": code}}))
            .await,
    );
    assert_eq!(factor_rows(&app).await, (1, 0, vec![]));
    app.post(CONFIRM, &access, proof(PASSWORD, &code))
        .await
        .assert_status(200);
    let enabled = factor_rows(&app).await;
    assert_eq!((enabled.0, enabled.1, enabled.2.len()), (1, 1, 10));

    // New recovery codes and turning the factor off.
    let next = totp::code_at(&secret, now() + 30);
    for path in [NEW_CODES, DISABLE] {
        assert_names_password(
            &app.post(path, &access, json!({"mfa": {"code": next}}))
                .await,
        );
        assert_eq!(factor_rows(&app).await, enabled, "{path} changed something");
    }
    // Nothing above was a wrong password: a missing one is not counted.
    assert!(failures(&app).await.is_empty());
}

#[tokio::test]
async fn a_wrong_password_is_refused_and_counted_like_a_failed_sign_in() {
    let app = TestApp::new().await;
    let (access, _) = tokens(&app).await;
    let counted = |n: i64| {
        vec![
            ("account:owner@example.org".to_string(), n),
            ("address:unknown".to_string(), n),
        ]
    };

    let wrong = app
        .post(ENROL, &access, json!({"mfa": {"password": WRONG}}))
        .await;
    assert_names_password(&wrong);
    assert!(!wrong.body.to_string().contains(WRONG));
    assert_eq!(factor_rows(&app).await, (0, 0, vec![]));
    assert_eq!(failures(&app).await, counted(1));

    let secret = begin(&app, &access).await;
    let code = totp::code_at(&secret, now());
    assert_names_password(&app.post(CONFIRM, &access, proof(WRONG, &code)).await);
    assert_eq!(factor_rows(&app).await, (1, 0, vec![]));
    assert_eq!(failures(&app).await, counted(2));

    app.post(CONFIRM, &access, proof(PASSWORD, &code))
        .await
        .assert_status(200);
    let enabled = factor_rows(&app).await;
    let next = totp::code_at(&secret, now() + 30);
    for (path, n) in [(NEW_CODES, 3), (DISABLE, 4)] {
        assert_names_password(&app.post(path, &access, proof(WRONG, &next)).await);
        assert_eq!(factor_rows(&app).await, enabled, "{path} changed something");
        assert_eq!(failures(&app).await, counted(n), "{path}");
    }
    assert_eq!(failed_steps(&app).await, ["mfa_password"; 4]);
}

#[tokio::test]
async fn repeated_wrong_codes_on_disable_are_throttled_with_retry_after() {
    let app = TestApp::new().await;
    let (access, _) = tokens(&app).await;
    let (secret, recovery) = enrol(&app, &access).await;

    // The account has five free failures; after them each one makes the
    // next attempt wait, however right it is.
    let mut refused = None;
    for attempt in 1..=12 {
        let r = app.post(DISABLE, &access, proof(PASSWORD, "000000")).await;
        if r.status.as_u16() == 429 {
            refused = Some((attempt, r));
            break;
        }
        r.assert_error(422, "validation_failed");
        assert!(r.body["error"]["errors"]["mfa.code"].is_array());
    }
    let (attempt, throttled) = refused.expect("wrong codes were never throttled");
    assert!(attempt > 6, "throttled after {} failures", attempt - 1);
    throttled.assert_error(429, "rate_limited");
    let wait: u64 = throttled.header("retry-after").unwrap().parse().unwrap();
    assert!(wait >= 1, "{wait}");

    // While waiting (held long enough that the test cannot outrun it), the
    // right password and a right code are refused too, and the factor stays.
    app.db
        .write(|tx| {
            Ok(tx.execute(
                "UPDATE sign_in_failures SET locked_until = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+10 minutes')
                 WHERE key = 'account:owner@example.org'",
                [],
            )?)
        })
        .await
        .unwrap();
    let right = app
        .post(DISABLE, &access, proof(PASSWORD, &recovery[0]))
        .await;
    right.assert_error(429, "rate_limited");
    assert!(right.header("retry-after").is_some());
    assert_eq!(factor_rows(&app).await.1, 1);
    let code = totp::code_at(&secret, now() + 30);
    app.post(NEW_CODES, &access, proof(PASSWORD, &code))
        .await
        .assert_error(429, "rate_limited");
    let steps = failed_steps(&app).await;
    assert!(
        steps.len() >= 6 && steps.iter().all(|s| s == "mfa_code"),
        "{steps:?}"
    );
}

#[tokio::test]
async fn new_recovery_codes_replace_every_old_one() {
    let app = TestApp::new().await;
    let (access, _) = tokens(&app).await;
    let (_, old) = enrol(&app, &access).await;
    let wrong_code = app
        .post(NEW_CODES, &access, proof(PASSWORD, "000000"))
        .await;
    wrong_code.assert_error(422, "validation_failed");
    assert!(wrong_code.body["error"]["errors"]["mfa.code"].is_array());

    let replaced = app.post(NEW_CODES, &access, proof(PASSWORD, &old[0])).await;
    replaced.assert_status(200);
    let new: Vec<String> = replaced.data()["recovery_codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    assert_eq!(new.len(), 10);
    assert!(new.iter().all(|c| !old.contains(c)));
    // An old code, never used, no longer works; a new one does.
    app.post(DISABLE, &access, proof(PASSWORD, &old[1]))
        .await
        .assert_error(422, "validation_failed");
    app.post(DISABLE, &access, proof(PASSWORD, &new[0]))
        .await
        .assert_status(204);
}

/// Signs the owner in (with `second` for the second step); answers
/// (access token, refresh token).
async fn session(app: &TestApp, second: Option<(&str, &str)>) -> (String, String) {
    let (verifier, challenge) = pkce();
    let code = sign_in(app, &challenge, OWNER_EMAIL, second).await;
    let r = redeem(app, &code, &verifier).await;
    r.assert_status(200);
    (
        r.body["access_token"].as_str().unwrap().to_string(),
        r.body["refresh_token"].as_str().unwrap().to_string(),
    )
}

#[track_caller]
fn assert_signed_out(response: &TestResponse) {
    response.assert_error(401, "unauthorized");
}

#[tokio::test]
async fn turning_the_factor_on_or_off_signs_out_the_other_sessions_only() {
    let app = TestApp::new().await;
    let (mine, my_refresh) = tokens(&app).await;
    let (phone, phone_refresh) = tokens(&app).await;

    let (secret, recovery) = enrol(&app, &mine).await;
    assert_signed_out(&app.get("/api/v1/auth/mfa", &phone).await);
    assert_oauth_error(&refresh(&app, &phone_refresh).await, 400, "invalid_grant");
    app.get("/api/v1/auth/mfa", &mine).await.assert_status(200);
    app.get(&app.hh("/people"), &mine).await.assert_status(200);

    // A new sign-in, with the second step, is a session like any other:
    // turning the factor off ends it and keeps the caller's.
    let next = totp::code_at(&secret, now() + 30);
    let (tablet, tablet_refresh) = session(&app, Some(("code", &next))).await;
    app.get("/api/v1/auth/mfa", &tablet)
        .await
        .assert_status(200);
    app.post(DISABLE, &mine, proof(PASSWORD, &recovery[0]))
        .await
        .assert_status(204);
    assert_signed_out(&app.get("/api/v1/auth/mfa", &tablet).await);
    assert_oauth_error(&refresh(&app, &tablet_refresh).await, 400, "invalid_grant");
    let status = app.get("/api/v1/auth/mfa", &mine).await;
    status.assert_status(200);
    assert_eq!(status.data()["totp_enabled"], false);
    refresh(&app, &my_refresh).await.assert_status(200);

    let ended: Vec<(String, i64)> = app
        .db
        .read(|conn| {
            Ok(conn
                .prepare(
                    "SELECT event_type, json_extract(metadata, '$.sessions_revoked')
                     FROM sign_in_events WHERE event_type LIKE 'mfa.%' ORDER BY id",
                )?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
        .unwrap();
    assert_eq!(
        ended,
        [
            ("mfa.enabled".to_string(), 1),
            ("mfa.disabled".to_string(), 1)
        ]
    );
}
