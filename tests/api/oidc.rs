//! Delegated sign-in with OpenID Connect (issue 13, point 5) against a
//! provider the test starts: a discovery document, a JWKS with an RSA key
//! generated here, and a token endpoint that checks the client's secret and
//! the PKCE verifier and issues ID tokens signed with that key. The test
//! plays the provider's login: it reads the authorization request our
//! server redirected to and sends the browser back with a code.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use pillbox::config::{OidcSettings, Settings};
use rsa::signature::{SignatureEncoding, Signer};
use rsa::traits::PublicKeyParts;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::invitation_page::{fields_of, invite, page_cookie};
use crate::support::invitations::open;
use crate::support::sign_in::{
    MOBILE, REDIRECT, authorize_query, cookie, get_authorize, hidden_fields, html, location_params,
    param, pkce, post_page, redeem,
};
use crate::support::{TestApp, TestResponse};

pub(crate) const CLIENT_ID: &str = "pillbox-at-idp";
pub(crate) const CLIENT_SECRET: &str = "idp client secret";
pub(crate) const PROVIDER: &str = "Test IdP";
/// The `acr` the test's operator configured as "the provider did a second factor".
pub(crate) const MFA_ACR: &str = "urn:test:mfa";

/// The operating system's random source for the key generation.
struct OsRng;

impl rsa::rand_core::TryRng for OsRng {
    type Error = std::convert::Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        let mut bytes = [0u8; 4];
        getrandom::fill(&mut bytes).unwrap();
        Ok(u32::from_le_bytes(bytes))
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).unwrap();
        Ok(u64::from_le_bytes(bytes))
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        getrandom::fill(dst).unwrap();
        Ok(())
    }
}

impl rsa::rand_core::TryCryptoRng for OsRng {}

/// The provider's signing key and another key nobody published.
pub(crate) fn keys() -> &'static (rsa::PrivateKey, rsa::PrivateKey) {
    static KEYS: OnceLock<(rsa::PrivateKey, rsa::PrivateKey)> = OnceLock::new();
    KEYS.get_or_init(|| {
        (
            rsa::PrivateKey::new(&mut OsRng, 2048).unwrap(),
            rsa::PrivateKey::new(&mut OsRng, 2048).unwrap(),
        )
    })
}

pub(crate) fn sign(key: &rsa::PrivateKey, claims: &Value) -> String {
    let header =
        URL_SAFE_NO_PAD.encode(json!({"alg": "RS256", "kid": "k1", "typ": "JWT"}).to_string());
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let input = format!("{header}.{payload}");
    let signer = rsa::pkcs1v15::SigningKey::<Sha256>::new(key.clone());
    let signature = signer.sign(input.as_bytes()).to_vec();
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
}

/// What the provider's login decided for one code.
struct Issued {
    challenge: String,
    redirect_uri: String,
    id_token: String,
}

#[derive(Default)]
pub(crate) struct Provider {
    pub(crate) base: String,
    codes: HashMap<String, Issued>,
    discovery_down: bool,
    token_down: bool,
    token_requests: usize,
}

pub(crate) type Shared = Arc<Mutex<Provider>>;

async fn discovery(State(p): State<Shared>) -> axum::response::Response {
    let p = p.lock().unwrap();
    if p.discovery_down {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    axum::Json(json!({
        "issuer": p.base,
        "authorization_endpoint": format!("{}/authorize", p.base),
        "token_endpoint": format!("{}/token", p.base),
        "jwks_uri": format!("{}/jwks", p.base),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    }))
    .into_response()
}

async fn jwks() -> axum::Json<Value> {
    let key = &keys().0;
    axum::Json(json!({"keys": [{
        "kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
        "n": URL_SAFE_NO_PAD.encode(key.n_bytes()),
        "e": URL_SAFE_NO_PAD.encode(key.e_bytes()),
    }]}))
}

async fn token(
    State(p): State<Shared>,
    headers: HeaderMap,
    body: String,
) -> axum::response::Response {
    let mut p = p.lock().unwrap();
    p.token_requests += 1;
    if p.token_down {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    let expected = format!(
        "Basic {}",
        STANDARD.encode(format!("{CLIENT_ID}:{}", CLIENT_SECRET.replace(' ', "+")))
    );
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": "invalid_client"})),
        )
            .into_response();
    }
    let form: HashMap<String, String> = serde_urlencoded::from_str(&body).unwrap();
    let refuse = || {
        (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant"})),
        )
            .into_response()
    };
    if form.get("grant_type").map(String::as_str) != Some("authorization_code") {
        return refuse();
    }
    let Some(issued) = form.get("code").and_then(|c| p.codes.remove(c)) else {
        return refuse();
    };
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    if challenge != issued.challenge || form.get("redirect_uri") != Some(&issued.redirect_uri) {
        return refuse();
    }
    axum::Json(json!({
        "access_token": "provider-access-token",
        "token_type": "Bearer",
        "expires_in": 300,
        "id_token": issued.id_token,
    }))
    .into_response()
}

pub(crate) async fn start_provider() -> Shared {
    let shared: Shared = Arc::default();
    let app = axum::Router::new()
        .route("/.well-known/openid-configuration", get(discovery))
        .route("/jwks", get(jwks))
        .route("/token", post(token))
        .with_state(shared.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    shared.lock().unwrap().base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    shared
}

pub(crate) async fn app_with(provider: &Shared) -> TestApp {
    let issuer = provider.lock().unwrap().base.clone();
    TestApp::with_settings(Settings {
        rate_limit_per_minute: 0,
        oidc: Some(OidcSettings {
            issuer,
            client_id: CLIENT_ID.into(),
            client_secret: CLIENT_SECRET.into(),
            name: PROVIDER.into(),
            mfa_acr_values: vec![MFA_ACR.into()],
        }),
        ..Settings::default()
    })
    .await
}

pub(crate) fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// The claims of a good ID token for a request with this nonce.
pub(crate) fn claims(provider: &Shared, nonce: &str, sub: &str, email: &str) -> Value {
    json!({
        "iss": provider.lock().unwrap().base,
        "sub": sub,
        "aud": CLIENT_ID,
        "exp": now() + 300,
        "iat": now(),
        "nonce": nonce,
        "email": email,
        "email_verified": true,
    })
}

/// The cookies a response set, as one Cookie header.
pub(crate) fn cookies_of(response: &TestResponse) -> String {
    response
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_string())
        .filter(|c| !c.ends_with('='))
        .collect::<Vec<_>>()
        .join("; ")
}

/// A sign-in sent to the provider: its authorization request and the
/// browser's cookies.
pub(crate) struct AtProvider {
    query: Vec<(String, String)>,
    cookies: String,
}

impl AtProvider {
    pub(crate) fn get(&self, name: &str) -> String {
        param(&self.query, name).unwrap_or_default().to_string()
    }
}

/// Presses "Sign in with …" on the sign-in page of a mobile request.
pub(crate) async fn press_button(app: &TestApp, challenge: &str) -> TestResponse {
    let page = get_authorize(app, &authorize_query(challenge, "xyz-state")).await;
    page.assert_status(200);
    assert!(html(&page).contains(&format!("Sign in with {PROVIDER}")));
    let csp = page.header("content-security-policy").unwrap().to_string();
    let cookie = cookie(&page);
    let form = html(&page).split("</form>").nth(1).unwrap().to_string();
    assert!(form.contains("name=\"provider\" value=\"oidc\""));
    let mut fields = hidden_fields(&form);
    fields.retain(|(k, _)| k != "provider");
    fields.push(("provider".into(), "oidc".into()));
    let response = post_page(app, &fields, &cookie).await;
    if response.status == StatusCode::SEE_OTHER {
        let location = response.header("location").unwrap();
        let origin = location.split("/authorize").next().unwrap();
        assert!(
            csp.contains(origin),
            "the page's form-action allows the provider: {csp}"
        );
    }
    response
}

pub(crate) fn at_provider(response: &TestResponse, provider: &Shared) -> AtProvider {
    assert_eq!(response.status.as_u16(), 303, "{}", html(response));
    let location = response.header("location").unwrap();
    let base = provider.lock().unwrap().base.clone();
    assert!(
        location.starts_with(&format!("{base}/authorize?")),
        "{location}"
    );
    let query: Vec<(String, String)> =
        serde_urlencoded::from_str(location.split_once('?').unwrap().1).unwrap();
    assert_eq!(param(&query, "response_type"), Some("code"));
    assert_eq!(param(&query, "client_id"), Some(CLIENT_ID));
    assert_eq!(param(&query, "code_challenge_method"), Some("S256"));
    assert!(
        param(&query, "scope")
            .unwrap()
            .split(' ')
            .any(|s| s == "openid")
    );
    assert!(param(&query, "nonce").unwrap().len() >= 32);
    AtProvider {
        query,
        cookies: cookies_of(response),
    }
}

/// The provider's login: a code for this ID token, then the browser back
/// at our callback.
pub(crate) async fn come_back(
    app: &TestApp,
    provider: &Shared,
    at: &AtProvider,
    id_token: String,
) -> TestResponse {
    let code = format!(
        "code-{}",
        URL_SAFE_NO_PAD.encode(Sha256::digest(id_token.as_bytes()))
    );
    provider.lock().unwrap().codes.insert(
        code.clone(),
        Issued {
            challenge: at.get("code_challenge"),
            redirect_uri: at.get("redirect_uri"),
            id_token,
        },
    );
    let query = serde_urlencoded::to_string([("code", code.as_str()), ("state", &at.get("state"))])
        .unwrap();
    let request = Request::builder()
        .method(Method::GET)
        .uri(format!("/oidc/callback?{query}"))
        .header("cookie", &at.cookies)
        .body(Body::empty())
        .unwrap();
    app.raw_request(request).await
}

/// One delegated sign-in of the mobile app with the claims `make` builds
/// from the nonce; answers our callback's response and the PKCE verifier.
pub(crate) async fn delegated(
    app: &TestApp,
    provider: &Shared,
    make: impl Fn(&str) -> String,
) -> (TestResponse, String) {
    let (verifier, challenge) = pkce();
    let pressed = press_button(app, &challenge).await;
    let at = at_provider(&pressed, provider);
    assert_eq!(at.get("redirect_uri"), "http://localhost/oidc/callback");
    let token = make(&at.get("nonce"));
    (come_back(app, provider, &at, token).await, verifier)
}

pub(crate) async fn failures(app: &TestApp, reason: &'static str) -> i64 {
    app.db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT count(*) FROM sign_in_events WHERE event_type = 'sign_in.failed'
                 AND json_extract(metadata, '$.step') = 'oidc' AND json_extract(metadata, '$.reason') = ?1",
                [reason],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap()
}

/// Builds an ID token from the nonce of the request it answers.
pub(crate) type MakeToken<'a> = Box<dyn Fn(&str) -> String + 'a>;

pub(crate) fn refused(response: &TestResponse, status: u16, words: &str) {
    assert_eq!(response.status.as_u16(), status, "{}", html(response));
    assert!(html(response).contains(words), "{}", html(response));
    assert!(html(response).contains("role=\"alert\""));
    assert!(response.header("location").is_none());
}

#[tokio::test]
async fn a_verified_id_token_signs_in_through_our_own_code_flow() {
    let provider = start_provider().await;
    let app = app_with(&provider).await;
    let caps = app.get("/api/v1/capabilities", "").await;
    assert_eq!(
        caps.data()["authentication"]["delegated_sign_in"]["supported"],
        true
    );
    assert_eq!(
        caps.data()["authentication"]["delegated_sign_in"]["provider_name"],
        PROVIDER
    );

    let (back, verifier) = delegated(&app, &provider, |nonce| {
        sign(
            &keys().0,
            &claims(&provider, nonce, "user-1", "Owner@Example.org"),
        )
    })
    .await;
    assert_eq!(back.status.as_u16(), 303, "{}", html(&back));
    assert!(back.header("location").unwrap().starts_with(REDIRECT));
    let params = location_params(&back);
    assert_eq!(param(&params, "state"), Some("xyz-state"));
    let code = param(&params, "code").unwrap();
    let tokens = redeem(&app, code, &verifier).await;
    tokens.assert_status(200);
    let access = tokens.body["access_token"].as_str().unwrap();
    let households = app.get("/api/v1/auth/households", access).await;
    households.assert_status(200);
    assert_eq!(households.data()[0]["id"], app.household_id);
    let succeeded: i64 = app
        .db
        .read(|c| {
            Ok(c.query_row(
                "SELECT count(*) FROM sign_in_events WHERE event_type = 'sign_in.succeeded'
                 AND json_extract(metadata, '$.step') = 'oidc'",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(succeeded, 1);
    let audit = app
        .get(&app.hh("/admin/audit_logs?per_page=100"), &app.owner)
        .await;
    assert!(audit.body.to_string().contains("sign_in.succeeded"));

    // The identity is linked now: it signs in as the same account even once
    // its email changes at the provider and is no longer verified.
    let (again, _) = delegated(&app, &provider, |nonce| {
        let mut c = claims(&provider, nonce, "user-1", "renamed@example.org");
        c["email_verified"] = json!(false);
        sign(&keys().0, &c)
    })
    .await;
    assert_eq!(again.status.as_u16(), 303, "{}", html(&again));
    assert!(again.header("location").unwrap().starts_with(REDIRECT));

    // The password still works beside the provider.
    crate::support::invitations::signed_in(&app, "owner@example.org").await;
    // A callback with the state but not its cookie (another browser) is refused.
    let (_, challenge) = pkce();
    let pressed = press_button(&app, &challenge).await;
    let mut at = at_provider(&pressed, &provider);
    at.cookies = String::new();
    let nonce = at.get("nonce");
    let stolen = come_back(
        &app,
        &provider,
        &at,
        sign(
            &keys().0,
            &claims(&provider, &nonce, "user-1", "owner@example.org"),
        ),
    )
    .await;
    refused(&stolen, 400, "another browser");
    assert_eq!(MOBILE, authorize_query("x", "y")[1].1);
}

#[tokio::test]
async fn bad_id_tokens_are_each_refused_with_a_page_and_audited() {
    let provider = start_provider().await;
    let app = app_with(&provider).await;
    let cases: Vec<(&str, u16, &str, MakeToken)> = vec![
        (
            "wrong_audience",
            401,
            "could not be verified",
            Box::new(|nonce: &str| {
                let mut c = claims(&provider, nonce, "user-1", "owner@example.org");
                c["aud"] = json!("another-client");
                sign(&keys().0, &c)
            }),
        ),
        (
            "wrong_nonce",
            401,
            "could not be verified",
            Box::new(|_: &str| {
                sign(
                    &keys().0,
                    &claims(
                        &provider,
                        "a-nonce-from-another-sign-in-000000000",
                        "user-1",
                        "owner@example.org",
                    ),
                )
            }),
        ),
        (
            "expired",
            401,
            "could not be verified",
            Box::new(|nonce: &str| {
                let mut c = claims(&provider, nonce, "user-1", "owner@example.org");
                c["exp"] = json!(now() - 600);
                c["iat"] = json!(now() - 900);
                sign(&keys().0, &c)
            }),
        ),
        (
            "bad_signature",
            401,
            "could not be verified",
            Box::new(|nonce: &str| {
                sign(
                    &keys().1,
                    &claims(&provider, nonce, "user-1", "owner@example.org"),
                )
            }),
        ),
        (
            "wrong_issuer",
            401,
            "could not be verified",
            Box::new(|nonce: &str| {
                let mut c = claims(&provider, nonce, "user-1", "owner@example.org");
                c["iss"] = json!("https://elsewhere.example");
                sign(&keys().0, &c)
            }),
        ),
        (
            "email_not_verified",
            403,
            "has not verified your email",
            Box::new(|nonce: &str| {
                let mut c = claims(&provider, nonce, "user-1", "owner@example.org");
                c["email_verified"] = json!(false);
                sign(&keys().0, &c)
            }),
        ),
        (
            "no_matching_account",
            403,
            "No Pillbox account",
            Box::new(|nonce: &str| {
                sign(
                    &keys().0,
                    &claims(&provider, nonce, "user-2", "stranger@example.org"),
                )
            }),
        ),
    ];
    for (reason, status, words, make) in cases {
        let (back, _) = delegated(&app, &provider, make).await;
        refused(&back, status, words);
        // An identity no account matched may be linked by signing in with
        // a password; a token that failed its checks may only start again.
        let onward = match reason {
            "email_not_verified" | "no_matching_account" => "link it",
            _ => "Back to signing in",
        };
        assert!(html(&back).contains(onward), "{reason}");
        assert_eq!(failures(&app, reason).await, 1, "{reason} is audited");
    }
    let linked: i64 = app
        .db
        .read(|c| Ok(c.query_row("SELECT count(*) FROM linked_identities", [], |r| r.get(0))?))
        .await
        .unwrap();
    assert_eq!(linked, 0, "no refused token links anything");
}

#[tokio::test]
async fn a_provider_outage_is_a_clear_page_never_a_500() {
    let provider = start_provider().await;
    let app = app_with(&provider).await;
    provider.lock().unwrap().discovery_down = true;
    let (_, challenge) = pkce();
    let pressed = press_button(&app, &challenge).await;
    refused(&pressed, 502, "is not answering right now");
    provider.lock().unwrap().discovery_down = false;

    let pressed = press_button(&app, &challenge).await;
    let at = at_provider(&pressed, &provider);
    provider.lock().unwrap().token_down = true;
    let nonce = at.get("nonce");
    let back = come_back(
        &app,
        &provider,
        &at,
        sign(
            &keys().0,
            &claims(&provider, &nonce, "user-1", "owner@example.org"),
        ),
    )
    .await;
    refused(&back, 502, "is not answering right now");
    assert_eq!(provider.lock().unwrap().token_requests, 1);
    assert_eq!(failures(&app, "provider_unavailable").await, 2);

    // A provider that is not there at all.
    let gone = TestApp::with_settings(Settings {
        rate_limit_per_minute: 0,
        oidc: Some(OidcSettings {
            issuer: "http://127.0.0.1:9".into(),
            client_id: CLIENT_ID.into(),
            client_secret: CLIENT_SECRET.into(),
            name: PROVIDER.into(),
            mfa_acr_values: vec![MFA_ACR.into()],
        }),
        ..Settings::default()
    })
    .await;
    let pressed = press_button(&gone, &challenge).await;
    refused(&pressed, 502, "is not answering right now");
}

#[tokio::test]
async fn an_invitee_signs_in_with_the_provider_on_the_invitation_page() {
    let provider = start_provider().await;
    let app = app_with(&provider).await;
    let (_, token) = invite(&app, "idp-user@example.org").await;
    let page = open(&app, &token).await;
    assert!(html(&page).contains(&format!("Sign in with {PROVIDER}")));
    let origin = provider.lock().unwrap().base.clone();
    assert!(
        page.header("content-security-policy")
            .unwrap()
            .contains(&origin)
    );
    let cookie = page_cookie(&page);
    let fields = fields_of(html(&page), Some("provider"));
    let pressed = crate::invitation_page::post(&app, &fields, &cookie).await;
    let at = at_provider(&pressed, &provider);
    assert!(at.cookies.contains("pillbox_oidc_invitation="));
    let nonce = at.get("nonce");
    let done = come_back(
        &app,
        &provider,
        &at,
        sign(
            &keys().0,
            &claims(&provider, &nonce, "invitee-1", "idp-user@example.org"),
        ),
    )
    .await;
    done.assert_status(200);
    assert!(
        html(&done).contains("You are now a member"),
        "{}",
        html(&done)
    );
    let member: i64 = app
        .db
        .read(|c| {
            Ok(c.query_row(
                "SELECT count(*) FROM memberships m JOIN accounts a ON a.id = m.account_id
                 JOIN linked_identities i ON i.account_id = a.id
                 WHERE a.email = 'idp-user@example.org' AND m.status = 'active' AND i.subject = 'invitee-1'",
                [],
                |r| r.get(0),
            )?)
        })
        .await
        .unwrap();
    assert_eq!(member, 1);
    // The link is spent.
    open(&app, &token).await.assert_status(404);
}
