//! Sign-in through the real Router: the OAuth authorization server with
//! PKCE, the sign-in page and its forms, sessions across households,
//! refresh rotation, revocation (issue 12).

use axum::http::Method;
use pillbox::auth::Role;
use pillbox::household::memberships;
use serde_json::Value;

use crate::support::sign_in::{
    MOBILE, OWNER_EMAIL, REDIRECT, assert_oauth_error, authorize_query, get_authorize,
    hidden_fields, html, location_params, param, pkce, post_page, redeem, refresh, sign_in,
    submit_password, tokens,
};
use crate::support::{PASSWORD, TestApp, TestResponse};

/// A second household the owner's account is also a member of.
pub async fn second_household(app: &TestApp) -> i64 {
    app.db
        .write(|tx| {
            let owner = pillbox::auth::accounts::find_by_email(tx, OWNER_EMAIL)?.unwrap();
            let other = pillbox::household::set_up(
                tx,
                "Grandma's flat",
                "Europe/Paris",
                &pillbox::household::NewMember {
                    email: "grandma@example.org",
                    password_hash: crate::support::password_hash(),
                    person_name: "Grandma",
                    role: Role::Owner,
                },
            )?;
            memberships::store::insert(tx, other.household_id, owner, None, Role::Member)?;
            Ok(other.household_id)
        })
        .await
        .unwrap()
}

fn ids(list: &Value) -> Vec<i64> {
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn the_whole_flow_from_discovery_to_revocation() {
    let app = TestApp::new().await;
    let other = second_household(&app).await;

    // Discovery: the metadata and the capability document.
    let meta = app
        .raw(
            Method::GET,
            "/.well-known/oauth-authorization-server",
            None,
            None,
            &[],
        )
        .await;
    meta.assert_status(200);
    assert_eq!(meta.body["issuer"], "http://localhost");
    assert_eq!(
        meta.body["code_challenge_methods_supported"],
        serde_json::json!(["S256"])
    );
    assert_eq!(
        meta.body["token_endpoint"],
        "http://localhost/api/v1/oauth/token"
    );
    assert_eq!(
        meta.body["authorization_endpoint"],
        "http://localhost/api/v1/oauth/authorize"
    );
    let caps = app
        .send(Method::GET, "/api/v1/capabilities", None, None, &[])
        .await;
    let mobile = &caps.data()["authentication"]["mobile_oauth"];
    assert_eq!(mobile["supported"], true);
    assert_eq!(mobile["client_id"], MOBILE);
    assert_eq!(mobile["redirect_uris"], serde_json::json!([REDIRECT]));
    assert_eq!(
        mobile["metadata_url"],
        "http://localhost/.well-known/oauth-authorization-server"
    );
    assert!(
        caps.data()["authentication"]["methods"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("oauth_authorization_code"))
    );

    // The page: a form with labelled fields, no script, strict CSP.
    let (verifier, challenge) = pkce();
    let page = get_authorize(&app, &authorize_query(&challenge, "s1")).await;
    page.assert_status(200);
    assert!(
        page.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    let body = html(&page);
    assert!(body.contains("<label for=\"email\">") && body.contains("<label for=\"password\">"));
    assert!(!body.contains("<script"));
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("form-action 'self' pillbox:"), "{csp}");
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(
        !page.header("set-cookie").unwrap().contains("Secure"),
        "http: no Secure"
    );

    // Sign in, redeem the code.
    let code = sign_in(&app, &challenge, OWNER_EMAIL, None).await;
    let r = redeem(&app, &code, &verifier).await;
    r.assert_status(200);
    assert_eq!(r.body["token_type"], "Bearer");
    assert_eq!(r.body["expires_in"], 3600);
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let access = r.body["access_token"].as_str().unwrap().to_string();
    let refresh_token = r.body["refresh_token"].as_str().unwrap().to_string();
    assert!(access.starts_with("pbx_at_") && refresh_token.starts_with("pbx_rt_"));

    // One token, two households.
    let households = app.get("/api/v1/auth/households", &access).await;
    households.assert_status(200);
    assert_eq!(ids(&households.body), vec![app.household_id, other]);
    app.get(&app.hh("/people"), &access)
        .await
        .assert_status(200);
    app.get(&format!("/api/v1/households/{other}/people"), &access)
        .await
        .assert_status(200);
    // An app token stays bound to its one household.
    let app_households = app.get("/api/v1/auth/households", &app.owner).await;
    assert_eq!(ids(&app_households.body), vec![app.household_id]);
    app.get(&format!("/api/v1/households/{other}/people"), &app.owner)
        .await
        .assert_error(403, "forbidden");
    // Membership is checked at every request: removed from the second
    // household, the same token no longer reaches it.
    app.db
        .write(move |tx| {
            Ok(tx.execute(
                "UPDATE memberships SET status = 'revoked' WHERE household_id = ?1 AND role = 'member'",
                [other],
            )?)
        })
        .await
        .unwrap();
    app.get(&format!("/api/v1/households/{other}/people"), &access)
        .await
        .assert_error(404, "not_found");

    // The session is listed, current.
    let sessions = app.get("/api/v1/auth/sessions", &access).await;
    sessions.assert_status(200);
    assert_eq!(sessions.data().as_array().unwrap().len(), 1);
    assert_eq!(sessions.data()[0]["current"], true);
    assert_eq!(sessions.data()[0]["client_id"], MOBILE);
    assert_eq!(sessions.data()[0]["device_label"], "Test phone");

    // Refresh rotates.
    let rotated = refresh(&app, &refresh_token).await;
    rotated.assert_status(200);
    let access2 = rotated.body["access_token"].as_str().unwrap().to_string();
    let refresh2 = rotated.body["refresh_token"].as_str().unwrap().to_string();
    assert_ne!(refresh2, refresh_token);
    app.get(&app.hh("/people"), &access2)
        .await
        .assert_status(200);

    // The old refresh token again: the whole session is revoked.
    let reused = refresh(&app, &refresh_token).await;
    assert_oauth_error(&reused, 400, "invalid_grant");
    app.get(&app.hh("/people"), &access2)
        .await
        .assert_error(401, "unauthorized");
    assert_oauth_error(&refresh(&app, &refresh2).await, 400, "invalid_grant");

    // A new sign-in; the old session is gone from the list.
    let (access3, refresh3) = tokens(&app).await;
    let sessions = app.get("/api/v1/auth/sessions", &access3).await;
    assert_eq!(sessions.data().as_array().unwrap().len(), 1);

    // Revocation (RFC 7009): 200, then the access token is refused.
    let revoked = app
        .form(
            "/api/v1/oauth/revoke",
            &[("token", &refresh3), ("client_id", MOBILE)],
        )
        .await;
    revoked.assert_status(200);
    app.get(&app.hh("/people"), &access3)
        .await
        .assert_error(401, "unauthorized");
    // Revoking again, or an unknown token, is still 200.
    app.form("/api/v1/oauth/revoke", &[("token", &refresh3)])
        .await
        .assert_status(200);
    app.form("/api/v1/oauth/revoke", &[("token", "pbx_rt_nonsense")])
        .await
        .assert_status(200);
    assert_oauth_error(
        &app.form("/api/v1/oauth/revoke", &[("client_id", MOBILE)])
            .await,
        400,
        "invalid_request",
    );
}

#[tokio::test]
async fn sessions_are_listed_deleted_and_logged_out() {
    let app = TestApp::new().await;
    let (phone, _) = tokens(&app).await;
    let (tablet, tablet_refresh) = tokens(&app).await;
    let listed = app.get("/api/v1/auth/sessions", &phone).await;
    let sessions = listed.data().as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    let tablet_id = sessions.iter().find(|s| s["current"] == false).unwrap()["id"]
        .as_i64()
        .unwrap();

    // deleteSession revokes that device's access and refresh tokens at once.
    app.delete(&format!("/api/v1/auth/sessions/{tablet_id}"), &phone, None)
        .await
        .assert_status(204);
    app.get(&app.hh("/people"), &tablet)
        .await
        .assert_error(401, "unauthorized");
    assert_oauth_error(&refresh(&app, &tablet_refresh).await, 400, "invalid_grant");
    app.delete(&format!("/api/v1/auth/sessions/{tablet_id}"), &phone, None)
        .await
        .assert_error(404, "not_found");

    // Another account's session is not found.
    let (_, partner) = app
        .add_member("partner@example.org", Role::Member, Some("Pat"))
        .await;
    app.get("/api/v1/auth/sessions", &partner)
        .await
        .assert_error(403, "forbidden");

    // logoutSession ends the current session...
    app.delete("/api/v1/auth/logout", &phone, None)
        .await
        .assert_status(204);
    app.get(&app.hh("/people"), &phone)
        .await
        .assert_error(401, "unauthorized");
    // ...or the app token that called it.
    app.delete("/api/v1/auth/logout", &partner, None)
        .await
        .assert_status(204);
    app.get(&app.hh("/people"), &partner)
        .await
        .assert_error(401, "unauthorized");
}

#[tokio::test]
async fn pkce_and_codes_are_refused_as_rfc_6749_says() {
    let app = TestApp::new().await;

    // `plain`, or no method at all (plain by default), goes back to the
    // client as invalid_request with the state untouched.
    let (_, challenge) = pkce();
    for method in [Some("plain"), None] {
        let mut query = authorize_query(&challenge, "keep me & this");
        query.retain(|(k, _)| k != "code_challenge_method");
        if let Some(method) = method {
            query.push(("code_challenge_method".into(), method.into()));
        }
        let r = get_authorize(&app, &query).await;
        assert_eq!(r.status.as_u16(), 302, "{}", r.body);
        let params = location_params(&r);
        assert_eq!(param(&params, "error"), Some("invalid_request"));
        assert_eq!(param(&params, "state"), Some("keep me & this"));
    }
    // No challenge at all.
    let mut query = authorize_query(&challenge, "s");
    query.retain(|(k, _)| k != "code_challenge");
    let r = get_authorize(&app, &query).await;
    assert_eq!(
        param(&location_params(&r), "error"),
        Some("invalid_request")
    );

    // A redirect URI differing by one character, or an unknown client: an
    // error page, never a redirect.
    for (name, value) in [
        ("redirect_uri", "pillbox://oauth/callbacK"),
        ("redirect_uri", "pillbox://oauth/callback/"),
        ("client_id", "someone-else"),
    ] {
        let mut query = authorize_query(&challenge, "s");
        query.retain(|(k, _)| k != name);
        query.push((name.into(), value.into()));
        let r = get_authorize(&app, &query).await;
        r.assert_status(400);
        assert!(r.header("location").is_none());
        assert!(html(&r).contains("role=\"alert\""));
    }

    // Missing verifier: invalid_request (the code stays good).
    let (verifier, challenge) = pkce();
    let code = sign_in(&app, &challenge, OWNER_EMAIL, None).await;
    let missing = app
        .form(
            "/api/v1/oauth/token",
            &[
                ("grant_type", "authorization_code"),
                ("client_id", MOBILE),
                ("code", &code),
                ("redirect_uri", REDIRECT),
            ],
        )
        .await;
    assert_oauth_error(&missing, 400, "invalid_request");
    // Wrong verifier: invalid_grant, and the code is spent.
    let (other_verifier, _) = pkce();
    assert_oauth_error(
        &redeem(&app, &code, &other_verifier).await,
        400,
        "invalid_grant",
    );
    assert_oauth_error(&redeem(&app, &code, &verifier).await, 400, "invalid_grant");

    // Redirect URI at the token endpoint differing by one character.
    let (verifier, challenge) = pkce();
    let code = sign_in(&app, &challenge, OWNER_EMAIL, None).await;
    let r = app
        .form(
            "/api/v1/oauth/token",
            &[
                ("grant_type", "authorization_code"),
                ("client_id", MOBILE),
                ("code", &code),
                ("redirect_uri", "pillbox://oauth/callbacK"),
                ("code_verifier", &verifier),
            ],
        )
        .await;
    assert_oauth_error(&r, 400, "invalid_grant");

    // Code reused: refused, and the tokens its first use issued are revoked.
    let (verifier, challenge) = pkce();
    let code = sign_in(&app, &challenge, OWNER_EMAIL, None).await;
    let first = redeem(&app, &code, &verifier).await;
    first.assert_status(200);
    let access = first.body["access_token"].as_str().unwrap().to_string();
    app.get(&app.hh("/people"), &access)
        .await
        .assert_status(200);
    assert_oauth_error(&redeem(&app, &code, &verifier).await, 400, "invalid_grant");
    app.get(&app.hh("/people"), &access)
        .await
        .assert_error(401, "unauthorized");

    // Code after expiry.
    let (verifier, challenge) = pkce();
    let code = sign_in(&app, &challenge, OWNER_EMAIL, None).await;
    app.db
        .write(|tx| {
            Ok(tx.execute(
                "UPDATE oauth_codes SET expires_at = '2000-01-01T00:00:00.000000Z' WHERE used_at IS NULL",
                [],
            )?)
        })
        .await
        .unwrap();
    assert_oauth_error(&redeem(&app, &code, &verifier).await, 400, "invalid_grant");

    // Unknown client at the token endpoint, unknown grant type, duplicates.
    let r = app
        .form(
            "/api/v1/oauth/token",
            &[
                ("grant_type", "authorization_code"),
                ("client_id", "nobody"),
            ],
        )
        .await;
    assert_oauth_error(&r, 401, "invalid_client");
    let r = app
        .form(
            "/api/v1/oauth/token",
            &[("grant_type", "password"), ("client_id", MOBILE)],
        )
        .await;
    assert_oauth_error(&r, 400, "unsupported_grant_type");
    let r = app
        .form(
            "/api/v1/oauth/token",
            &[
                ("grant_type", "refresh_token"),
                ("grant_type", "refresh_token"),
                ("client_id", MOBILE),
            ],
        )
        .await;
    assert_oauth_error(&r, 400, "invalid_request");
}

#[tokio::test]
async fn the_form_is_protected_against_csrf_and_never_reveals_an_email() {
    let app = TestApp::new().await;
    let (_, challenge) = pkce();
    let page = get_authorize(&app, &authorize_query(&challenge, "s")).await;
    let mut fields = hidden_fields(html(&page));
    fields.push(("email".into(), OWNER_EMAIL.into()));
    fields.push(("password".into(), PASSWORD.into()));

    // Without the cookie, or with another token: refused, no code.
    let r = post_page(&app, &fields, "").await;
    r.assert_status(403);
    assert!(r.header("location").is_none());
    let r = post_page(
        &app,
        &fields,
        "pillbox_sign_in_csrf=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    )
    .await;
    r.assert_status(403);

    // A wrong password and an unknown email read the same.
    let (wrong, _) = submit_password(
        &app,
        &challenge,
        "s",
        OWNER_EMAIL,
        "not the password at all",
    )
    .await;
    let (unknown, _) = submit_password(&app, &challenge, "s", "nobody@example.org", PASSWORD).await;
    wrong.assert_status(401);
    unknown.assert_status(401);
    let message = |r: &TestResponse| {
        html(r)
            .split("role=\"alert\">")
            .nth(1)
            .unwrap()
            .split('<')
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(message(&wrong), message(&unknown));
    assert!(html(&wrong).contains("aria-describedby=\"form-error\""));
}

/// The removed endpoints answer 410 in the error envelope, naming the
/// metadata URL; they stay in the contract, deprecated.
#[tokio::test]
async fn removed_endpoints_answer_410() {
    let app = TestApp::new().await;
    for (path, id) in [
        ("/auth/login", "createLoginSession"),
        ("/auth/refresh", "refreshSession"),
        ("/auth/oidc_exchange", "exchangeOidcSession"),
    ] {
        let op = &app.document()["paths"][path]["post"];
        assert_eq!(op["operationId"], id);
        assert_eq!(op["deprecated"], true);
        let r = app
            .send(
                Method::POST,
                &format!("/api/v1{path}"),
                None,
                Some(serde_json::json!({"email": "a@b.c", "password": "x"})),
                &[],
            )
            .await;
        r.assert_error(410, "endpoint_removed");
        assert!(
            r.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("http://localhost/.well-known/oauth-authorization-server")
        );
    }
    assert!(
        app.document()["paths"]
            .get("/auth/select_household")
            .is_none()
    );
    for method in [Method::POST, Method::GET] {
        let r = app
            .raw(
                method,
                "/api/v1/auth/select_household",
                Some(&app.owner),
                None,
                &[],
            )
            .await;
        r.assert_error(410, "endpoint_removed");
    }
}
