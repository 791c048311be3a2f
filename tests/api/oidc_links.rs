//! Linking an identity-provider identity to an account (issue 48, item 1):
//! the takeover through a forwarded link token, the link bound to the
//! browser the provider sent back and confirmed in words after the
//! password and second factor, the account's own second factor after a
//! provider sign-in, and the account's list of its linked identities.
//! Against the provider `oidc.rs` starts (real RS256-signed ID tokens).

use pillbox::config::Settings;
use serde_json::{Value, json};

use crate::oidc::{
    AtProvider, MFA_ACR, PROVIDER, Shared, at_provider, claims, come_back, cookies_of, delegated,
    keys, press_button, refused, sign, start_provider,
};
use crate::support::mfa::enrol;
use crate::support::sign_in::{
    REDIRECT, authorize_query, cookie, get_authorize, hidden_fields, html, location_params, param,
    pkce, post_page, redeem,
};
use crate::support::{PASSWORD, TestApp, TestResponse};

const OWNER: &str = "owner@example.org";

/// The provider's app, with mail on so that link notices are queued.
async fn app(provider: &Shared) -> TestApp {
    let issuer = provider.lock().unwrap().base.clone();
    TestApp::with_settings(Settings {
        rate_limit_per_minute: 0,
        oidc: Some(pillbox::config::OidcSettings {
            issuer,
            client_id: crate::oidc::CLIENT_ID.into(),
            client_secret: crate::oidc::CLIENT_SECRET.into(),
            name: PROVIDER.into(),
            mfa_acr_values: vec![MFA_ACR.into()],
        }),
        mail: Some(pillbox::mail::MailSettings {
            smtp_url: "smtp://127.0.0.1:9".into(),
            from: "pillbox@example.org".into(),
            ca_file: None,
        }),
        ..Settings::default()
    })
    .await
}

/// An ID token for the identity `sub` with this email (one no account
/// has), plus `extra` claims.
fn identity(
    provider: &Shared,
    sub: &'static str,
    email: &'static str,
    extra: Value,
) -> impl Fn(&str) -> String {
    let provider = provider.clone();
    move |nonce: &str| {
        let mut c = claims(&provider, nonce, sub, email);
        for (k, v) in extra.as_object().unwrap() {
            c[k] = v.clone();
        }
        sign(&keys().0, &c)
    }
}

async fn count(app: &TestApp, sql: &'static str) -> i64 {
    app.db
        .read(move |c| Ok(c.query_row(sql, [], |r| r.get(0))?))
        .await
        .unwrap()
}

async fn links(app: &TestApp) -> i64 {
    count(app, "SELECT count(*) FROM linked_identities").await
}

/// The owner's access token and second factor (TOTP secret, recovery codes).
async fn owner_with_totp(app: &TestApp) -> (String, Vec<String>) {
    let (access, _) = crate::support::sign_in::tokens(app).await;
    let (_, recovery) = enrol(app, &access).await;
    (access, recovery)
}

/// A cookie of a response, as `name=value`.
fn cookie_named(response: &TestResponse, name: &str) -> Option<String> {
    cookies_of(response)
        .split("; ")
        .find(|c| c.starts_with(&format!("{name}=")))
        .map(str::to_string)
}

fn assert_signed_in(response: &TestResponse) -> String {
    assert_eq!(response.status.as_u16(), 303, "{}", html(response));
    assert!(response.header("location").unwrap().starts_with(REDIRECT));
    param(&location_params(response), "code")
        .expect("a code")
        .to_string()
}

#[tokio::test]
async fn an_attackers_link_token_in_a_victims_sign_in_links_nothing() {
    let provider = start_provider().await;
    let app = app(&provider).await;
    let (_, recovery) = owner_with_totp(&app).await;

    // The attacker signs in at the provider with an identity nobody has.
    let mallory = identity(&provider, "attacker-1", "mallory@evil.example", json!({}));
    let (offered, _) = delegated(&app, &provider, &mallory).await;
    refused(&offered, 403, "No Pillbox account");
    let link = param(&hidden_fields(html(&offered)), "link_token")
        .expect("the attacker's page offers a link")
        .to_string();
    assert!(cookie_named(&offered, "pillbox_oidc_link").is_some());

    // The victim opens a normal-looking sign-in link that carries it.
    let (verifier, challenge) = pkce();
    let mut query = authorize_query(&challenge, "victim-state");
    query.push(("link_token".into(), link.clone()));
    let page = get_authorize(&app, &query).await;
    page.assert_status(200);
    assert!(
        !html(&page).contains(&link),
        "a link token of another browser is not carried by the page"
    );
    // The attacker's own form could carry it too: the victim's browser has
    // no link cookie, so it still links nothing.
    let csrf = cookie(&page);
    let mut fields = hidden_fields(html(&page));
    fields.push(("link_token".into(), link.clone()));
    fields.push(("email".into(), OWNER.into()));
    fields.push(("password".into(), PASSWORD.into()));
    let second = post_page(&app, &fields, &csrf).await;
    second.assert_status(200);
    assert!(!html(&second).contains(&link));
    let mut fields = hidden_fields(html(&second));
    fields.push(("link_token".into(), link.clone()));
    fields.push(("recovery_code".into(), recovery[0].clone()));
    let done = post_page(&app, &fields, &csrf).await;
    let code = assert_signed_in(&done);
    redeem(&app, &code, &verifier).await.assert_status(200);
    assert_eq!(links(&app).await, 0, "the victim's sign-in linked nothing");

    // The attacker's provider sign-in still reaches no account.
    let (again, _) = delegated(&app, &provider, &mallory).await;
    refused(&again, 403, "No Pillbox account");
    // Even the attacker's own browser, holding its cookie, would have to
    // know the victim's password: a wrong one is refused and links nothing.
    let mut fields = hidden_fields(html(&again));
    fields.push(("email".into(), OWNER.into()));
    fields.push(("password".into(), "not the password".into()));
    post_page(&app, &fields, &cookies_of(&again))
        .await
        .assert_status(401);
    assert_eq!(links(&app).await, 0);
}

/// The page the provider's refusal offers, filled with the owner's
/// password and posted from the browser that holds its cookies.
async fn sign_in_on_link_page(app: &TestApp, offered: &TestResponse) -> TestResponse {
    let mut fields = hidden_fields(html(offered));
    assert!(fields.iter().any(|(k, _)| k == "link_token"));
    fields.push(("email".into(), OWNER.into()));
    fields.push(("password".into(), PASSWORD.into()));
    post_page(app, &fields, &cookies_of(offered)).await
}

/// Answers the confirmation page with `answer` (`link` or `skip`).
async fn answer(app: &TestApp, page: &TestResponse, browser: &str, answer: &str) -> TestResponse {
    let mut fields = hidden_fields(html(page));
    assert!(fields.iter().any(|(k, _)| k == "link_confirm"));
    fields.push(("link_answer".into(), answer.into()));
    post_page(app, &fields, browser).await
}

#[tokio::test]
async fn a_link_needs_the_browser_the_password_the_second_factor_and_a_yes() {
    let provider = start_provider().await;
    let app = app(&provider).await;
    let (access, recovery) = owner_with_totp(&app).await;
    let olive = identity(&provider, "olive-at-idp", "olive@idp.example", json!({}));

    // "No": signed in, nothing linked.
    let (offered, verifier) = delegated(&app, &provider, &olive).await;
    refused(&offered, 403, "No Pillbox account");
    assert!(html(&offered).contains("Link the identity <strong>olive@idp.example</strong>"));
    let browser = cookies_of(&offered);
    let second = sign_in_on_link_page(&app, &offered).await;
    second.assert_status(200);
    assert!(html(&second).contains("authenticator"), "{}", html(&second));
    let mut fields = hidden_fields(html(&second));
    fields.push(("recovery_code".into(), recovery[0].clone()));
    let confirm = post_page(&app, &fields, &browser).await;
    confirm.assert_status(200);
    let text = html(&confirm);
    assert!(
        text.contains(&format!(
            "Link the identity <strong>olive@idp.example</strong> at {PROVIDER} to your Pillbox account <strong>{OWNER}</strong>?"
        )),
        "{text}"
    );
    assert!(confirm.header("location").is_none());
    assert_eq!(links(&app).await, 0, "nothing is linked before the answer");
    let skipped = answer(&app, &confirm, &browser, "skip").await;
    let code = assert_signed_in(&skipped);
    redeem(&app, &code, &verifier).await.assert_status(200);
    assert_eq!(links(&app).await, 0);
    // The confirmation is spent with its answer.
    let replayed = answer(&app, &confirm, &browser, "link").await;
    replayed.assert_status(401);
    assert_eq!(links(&app).await, 0);

    // "Yes": linked, audited and told to the account's email.
    let mails_before = count(&app, "SELECT count(*) FROM mail_outbox").await;
    let (offered, verifier) = delegated(&app, &provider, &olive).await;
    let browser = cookies_of(&offered);
    let second = sign_in_on_link_page(&app, &offered).await;
    let mut fields = hidden_fields(html(&second));
    fields.push(("recovery_code".into(), recovery[1].clone()));
    let confirm = post_page(&app, &fields, &browser).await;
    confirm.assert_status(200);
    // Another browser cannot answer the confirmation (no link cookie).
    let csrf_only = cookie_named(&confirm, "pillbox_sign_in_csrf")
        .or_else(|| {
            browser
                .split("; ")
                .find(|c| c.starts_with("pillbox_sign_in_csrf="))
                .map(str::to_string)
        })
        .unwrap();
    let elsewhere = answer(&app, &confirm, &csrf_only, "link").await;
    elsewhere.assert_status(401);
    assert!(elsewhere.header("location").is_none());
    assert_eq!(
        links(&app).await,
        0,
        "a browser without the link cookie cannot answer"
    );
    // The holding browser, on a fresh round, says yes.
    let (offered, _) = delegated(&app, &provider, &olive).await;
    let browser = cookies_of(&offered);
    let second = sign_in_on_link_page(&app, &offered).await;
    let mut fields = hidden_fields(html(&second));
    fields.push(("recovery_code".into(), recovery[2].clone()));
    let confirm = post_page(&app, &fields, &browser).await;
    let linked = answer(&app, &confirm, &browser, "link").await;
    assert_signed_in(&linked);
    assert!(
        linked
            .headers
            .get_all("set-cookie")
            .iter()
            .any(|c| c.to_str().unwrap().starts_with("pillbox_oidc_link=;")),
        "the link cookie is spent"
    );
    assert_eq!(links(&app).await, 1);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM sign_in_events WHERE event_type = 'oidc.linked'
             AND json_extract(metadata, '$.via') = 'password'"
        )
        .await,
        1
    );
    let mails = count(
        &app,
        "SELECT count(*) FROM mail_outbox WHERE recipient = 'owner@example.org'
         AND subject LIKE '%was linked to your Pillbox account%'",
    )
    .await;
    assert_eq!(mails, 1, "{mails_before} mails before");
    let _ = verifier;

    // The account sees it; the provider alone (with a second factor of
    // its own) now signs in as the owner.
    let listed = app.get("/api/v1/auth/linked_identities", &access).await;
    listed.assert_status(200);
    assert_eq!(listed.data()[0]["name"], "olive@idp.example");
    let strong = identity(
        &provider,
        "olive-at-idp",
        "olive@idp.example",
        json!({"amr": ["pwd", "mfa"]}),
    );
    let (direct, _) = delegated(&app, &provider, &strong).await;
    assert_signed_in(&direct);
}

/// The provider's redirect back for an identity already linked.
async fn provider_sign_in(
    app: &TestApp,
    provider: &Shared,
    make: impl Fn(&str) -> String,
) -> (TestResponse, AtProvider) {
    let (_, challenge) = pkce();
    let pressed = press_button(app, &challenge).await;
    let at = at_provider(&pressed, provider);
    let token = make(&at.get("nonce"));
    (come_back(app, provider, &at, token).await, at)
}

#[tokio::test]
async fn a_provider_sign_in_asks_for_the_accounts_own_second_factor() {
    let provider = start_provider().await;
    let app = app(&provider).await;
    // A verified email matches the owner; without a second factor yet the
    // provider signs in at once, and links the identity.
    let verified = |extra: Value| {
        let provider = provider.clone();
        move |nonce: &str| {
            let mut c = claims(&provider, nonce, "owner-at-idp", OWNER);
            for (k, v) in extra.as_object().unwrap() {
                c[k] = v.clone();
            }
            sign(&keys().0, &c)
        }
    };
    let (first, _) = provider_sign_in(&app, &provider, verified(json!({}))).await;
    assert_signed_in(&first);
    assert_eq!(links(&app).await, 1);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM sign_in_events WHERE event_type = 'oidc.linked'
             AND json_extract(metadata, '$.via') = 'email'"
        )
        .await,
        1
    );

    let (_, recovery) = owner_with_totp(&app).await;
    // Now the provider's word alone is not enough...
    for extra in [
        json!({}),
        json!({"amr": ["pwd"]}),
        json!({"acr": "urn:test:weak"}),
    ] {
        let (asked, _) = provider_sign_in(&app, &provider, verified(extra.clone())).await;
        asked.assert_status(200);
        assert!(asked.header("location").is_none(), "{extra}");
        let fields = hidden_fields(html(&asked));
        assert!(fields.iter().any(|(k, _)| k == "mfa_token"), "{extra}");
    }
    // ...the second step finishes the sign-in...
    let (asked, _) = provider_sign_in(&app, &provider, verified(json!({}))).await;
    let browser = cookies_of(&asked);
    let mut fields = hidden_fields(html(&asked));
    fields.push(("code".into(), "000000".into()));
    post_page(&app, &fields, &browser).await.assert_status(401);
    let mut fields = hidden_fields(html(&asked));
    fields.push(("recovery_code".into(), recovery[0].clone()));
    assert_signed_in(&post_page(&app, &fields, &browser).await);
    // ...and a provider that says it did a second factor skips it.
    for extra in [
        json!({"amr": ["pwd", "mfa"]}),
        json!({"amr": ["hwk"]}),
        json!({"amr": "otp"}),
        json!({"acr": MFA_ACR}),
    ] {
        let (direct, _) = provider_sign_in(&app, &provider, verified(extra.clone())).await;
        assert_eq!(direct.status.as_u16(), 303, "{extra}: {}", html(&direct));
    }
}

#[tokio::test]
async fn an_account_lists_and_removes_its_linked_identities() {
    let provider = start_provider().await;
    let app = app(&provider).await;
    let (access, _) = crate::support::sign_in::tokens(&app).await;
    let none = app.get("/api/v1/auth/linked_identities", &access).await;
    none.assert_status(200);
    assert_eq!(none.data().as_array().unwrap().len(), 0);
    assert_eq!(none.body["meta"]["total_count"], 0);

    // Linked by confirming after the password (the owner has no TOTP).
    let olive = identity(&provider, "olive-2", "olive2@idp.example", json!({}));
    let (offered, _) = delegated(&app, &provider, &olive).await;
    let browser = cookies_of(&offered);
    let confirm = sign_in_on_link_page(&app, &offered).await;
    confirm.assert_status(200);
    assert_signed_in(&answer(&app, &confirm, &browser, "link").await);

    let listed = app.get("/api/v1/auth/linked_identities", &access).await;
    listed.assert_status(200);
    let item = &listed.data()[0];
    assert_eq!(item["name"], "olive2@idp.example");
    assert_eq!(item["issuer"], provider.lock().unwrap().base);
    let id = item["id"].as_i64().unwrap();

    // An app token may neither see nor remove them; another account's
    // identity is not found.
    app.get("/api/v1/auth/linked_identities", &app.owner)
        .await
        .assert_status(403);
    app.delete(
        &format!("/api/v1/auth/linked_identities/{id}"),
        &app.owner,
        None,
    )
    .await
    .assert_status(403);
    app.delete(
        &format!("/api/v1/auth/linked_identities/{}", id + 1000),
        &access,
        None,
    )
    .await
    .assert_status(404);

    app.delete(
        &format!("/api/v1/auth/linked_identities/{id}"),
        &access,
        None,
    )
    .await
    .assert_status(204);
    assert_eq!(links(&app).await, 0);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM sign_in_events WHERE event_type = 'oidc.unlinked'"
        )
        .await,
        1
    );
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM mail_outbox WHERE subject LIKE '%was removed from your Pillbox account%'"
        )
        .await,
        1
    );
    // Unlinked, the identity is a stranger again.
    let (again, _) = delegated(&app, &provider, &olive).await;
    refused(&again, 403, "No Pillbox account");
}
