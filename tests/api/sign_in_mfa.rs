//! TOTP multi-factor: enrolment shown once, confirmed with a first code,
//! the sign-in page's second step with a code or a recovery code,
//! disabling with the password and a code; secrets never stored in clear.

use axum::http::Method;
use pillbox::identity::mfa::totp;

use crate::support::mfa::{enrol, now};
use crate::support::sign_in::{
    OWNER_EMAIL, html, pkce, post_page, redeem, sign_in, submit_password, tokens,
};
use crate::support::{PASSWORD, TestApp};

/// Every byte SQLite keeps for the database (the file and its WAL).
async fn database_bytes(app: &TestApp) -> Vec<u8> {
    let path = app.db.path().to_path_buf();
    let mut bytes = std::fs::read(&path).unwrap();
    let wal = path.with_extension("sqlite3-wal");
    bytes.extend(std::fs::read(wal).unwrap_or_default());
    bytes
}

fn holds(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test]
async fn totp_enrolment_second_step_recovery_codes_and_disabling() {
    let app = TestApp::new().await;
    let (access, _) = tokens(&app).await;
    let status = app.get("/api/v1/auth/mfa", &access).await;
    assert_eq!(status.data()["totp_enabled"], false);

    // An app token cannot enrol; a wrong first code confirms nothing.
    let with_password = serde_json::json!({"mfa": {"password": PASSWORD}});
    app.post("/api/v1/auth/mfa/totp", &app.owner, with_password.clone())
        .await
        .assert_error(403, "forbidden");
    app.post("/api/v1/auth/mfa/totp", &access, with_password.clone())
        .await
        .assert_status(201);
    let wrong = app
        .post(
            "/api/v1/auth/mfa/totp/confirm",
            &access,
            serde_json::json!({"mfa": {"password": PASSWORD, "code": "000000"}}),
        )
        .await;
    wrong.assert_error(422, "validation_failed");
    assert!(wrong.body["error"]["errors"]["mfa.code"].is_array());
    assert_eq!(
        app.get("/api/v1/auth/mfa", &access).await.data()["totp_enabled"],
        false
    );

    let (secret, recovery) = enrol(&app, &access).await;
    let status = app.get("/api/v1/auth/mfa", &access).await;
    assert_eq!(status.data()["totp_enabled"], true);
    assert_eq!(status.data()["recovery_codes_remaining"], 10);
    app.post("/api/v1/auth/mfa/totp", &access, with_password)
        .await
        .assert_error(409, "mfa_already_enabled");

    // The password alone no longer signs in: a wrong code is refused...
    let (verifier, challenge) = pkce();
    let (step_two, cookie) = submit_password(&app, &challenge, "s", OWNER_EMAIL, PASSWORD).await;
    step_two.assert_status(200);
    assert!(step_two.header("location").is_none());
    assert!(html(&step_two).contains("<label for=\"code\">"));
    let mut fields = crate::support::sign_in::hidden_fields(html(&step_two));
    fields.push(("code".into(), "123456".into()));
    let refused = post_page(&app, &fields, &cookie).await;
    refused.assert_status(401);
    assert!(html(&refused).contains("role=\"alert\""));
    // ...the next step's code is accepted (the confirming code's step is spent).
    let next = totp::code_at(&secret, now() + 30);
    let code = sign_in(&app, &challenge, OWNER_EMAIL, Some(("code", &next))).await;
    redeem(&app, &code, &verifier).await.assert_status(200);

    // A recovery code works once.
    let (verifier, challenge) = pkce();
    let code = sign_in(
        &app,
        &challenge,
        OWNER_EMAIL,
        Some(("recovery_code", &recovery[0])),
    )
    .await;
    let signed_in = redeem(&app, &code, &verifier).await;
    signed_in.assert_status(200);
    let access = signed_in.body["access_token"].as_str().unwrap().to_string();
    app.get(&app.hh("/people"), &access)
        .await
        .assert_status(200);
    let (_, challenge) = pkce();
    let (step_two, cookie) = submit_password(&app, &challenge, "s", OWNER_EMAIL, PASSWORD).await;
    let mut fields = crate::support::sign_in::hidden_fields(html(&step_two));
    fields.push(("recovery_code".into(), recovery[0].clone()));
    post_page(&app, &fields, &cookie).await.assert_status(401);
    assert_eq!(
        app.get("/api/v1/auth/mfa", &access).await.data()["recovery_codes_remaining"],
        9
    );

    // Nothing secret is stored in clear: not the password, the TOTP secret
    // (base32 or raw), the recovery codes, the tokens or the code.
    let bytes = database_bytes(&app).await;
    assert!(!holds(&bytes, PASSWORD.as_bytes()));
    assert!(!holds(&bytes, &secret));
    assert!(!holds(&bytes, totp::base32(&secret).as_bytes()));
    for code in &recovery {
        assert!(!holds(&bytes, code.as_bytes()), "recovery code in clear");
    }
    assert!(!holds(&bytes, access.as_bytes()));
    // pbx_at_<selector>_<secret>; the base64url secret may itself hold '_'.
    let secret_part = access.splitn(4, '_').nth(3).unwrap();
    assert!(!holds(&bytes, secret_part.as_bytes()));

    // Disabling needs the password and a code.
    let bad = app
        .post(
            "/api/v1/auth/mfa/totp/disable",
            &access,
            serde_json::json!({"mfa": {"password": "not the password!", "code": recovery[1]}}),
        )
        .await;
    bad.assert_error(422, "validation_failed");
    assert!(bad.body["error"]["errors"]["mfa.password"].is_array());
    assert!(!bad.body.to_string().contains("not the password!"));
    let bad = app
        .post(
            "/api/v1/auth/mfa/totp/disable",
            &access,
            serde_json::json!({"mfa": {"password": PASSWORD, "code": "999999"}}),
        )
        .await;
    bad.assert_error(422, "validation_failed");
    app.post(
        "/api/v1/auth/mfa/totp/disable",
        &access,
        serde_json::json!({"mfa": {"password": PASSWORD, "code": recovery[1]}}),
    )
    .await
    .assert_status(204);
    assert_eq!(
        app.get("/api/v1/auth/mfa", &access).await.data()["totp_enabled"],
        false
    );
    // The password alone signs in again.
    let (verifier, challenge) = pkce();
    let code = sign_in(&app, &challenge, OWNER_EMAIL, None).await;
    redeem(&app, &code, &verifier).await.assert_status(200);

    // Every change is audited in the household's log.
    let log = app
        .get(&app.hh("/admin/audit_logs?per_page=100"), &app.owner)
        .await;
    let types: Vec<&str> = log
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    for expected in [
        "mfa.enabled",
        "mfa.disabled",
        "sign_in.succeeded",
        "sign_in.failed",
    ] {
        assert!(types.contains(&expected), "{expected} not in {types:?}");
    }
}

/// The whole flow again for an account with TOTP: metadata, the form's two
/// steps, the code, two households, a rotated refresh, the old refresh
/// token reused (session gone), a new sign-in revoked.
#[tokio::test]
async fn the_whole_flow_with_totp() {
    let app = TestApp::new().await;
    let other = crate::sign_in::second_household(&app).await;
    let (first_access, _) = tokens(&app).await;
    let (secret, _) = enrol(&app, &first_access).await;
    app.raw(
        Method::GET,
        "/.well-known/oauth-authorization-server",
        None,
        None,
        &[],
    )
    .await
    .assert_status(200);

    let (verifier, challenge) = pkce();
    let code = sign_in(
        &app,
        &challenge,
        OWNER_EMAIL,
        Some(("code", &totp::code_at(&secret, now() + 30))),
    )
    .await;
    let issued = redeem(&app, &code, &verifier).await;
    issued.assert_status(200);
    let access = issued.body["access_token"].as_str().unwrap().to_string();
    let refresh_token = issued.body["refresh_token"].as_str().unwrap().to_string();
    for household in [app.household_id, other] {
        app.get(&format!("/api/v1/households/{household}/people"), &access)
            .await
            .assert_status(200);
    }

    let rotated = crate::support::sign_in::refresh(&app, &refresh_token).await;
    rotated.assert_status(200);
    let access2 = rotated.body["access_token"].as_str().unwrap().to_string();
    crate::support::sign_in::assert_oauth_error(
        &crate::support::sign_in::refresh(&app, &refresh_token).await,
        400,
        "invalid_grant",
    );
    app.get(&app.hh("/people"), &access2)
        .await
        .assert_error(401, "unauthorized");
    let sessions = app.get("/api/v1/auth/sessions", &first_access).await;
    assert_eq!(
        sessions.data().as_array().unwrap().len(),
        1,
        "only the first sign-in is left"
    );

    app.form("/api/v1/oauth/revoke", &[("token", &first_access)])
        .await
        .assert_status(200);
    app.get(&app.hh("/people"), &first_access)
        .await
        .assert_error(401, "unauthorized");
}
