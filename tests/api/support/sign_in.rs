//! Signing in through the OAuth authorization server with PKCE, as the
//! mobile app does: the sign-in page, its forms and cookies, and the token
//! endpoint.

use axum::body::Body;
use axum::http::{Method, Request};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use super::{PASSWORD, TestApp, TestResponse};

pub const MOBILE: &str = "pillbox-mobile";

pub const REDIRECT: &str = "pillbox://oauth/callback";

pub const OWNER_EMAIL: &str = "owner@example.org";

/// A PKCE pair: (verifier, S256 challenge).
pub fn pkce() -> (String, String) {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).unwrap();
    let verifier = URL_SAFE_NO_PAD.encode(bytes);
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

/// The authorize query of a well-formed request.
pub fn authorize_query(challenge: &str, state: &str) -> Vec<(String, String)> {
    [
        ("response_type", "code"),
        ("client_id", MOBILE),
        ("redirect_uri", REDIRECT),
        ("state", state),
        ("code_challenge", challenge),
        ("code_challenge_method", "S256"),
        ("scope", "pillbox"),
        ("device_label", "Test phone"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

pub async fn get_authorize(app: &TestApp, query: &[(String, String)]) -> TestResponse {
    let query = serde_urlencoded::to_string(query).unwrap();
    app.raw(
        Method::GET,
        &format!("/api/v1/oauth/authorize?{query}"),
        None,
        None,
        &[],
    )
    .await
}

pub fn html(response: &TestResponse) -> &str {
    response.body["raw"].as_str().unwrap_or("")
}

/// The `name=value` of the CSRF cookie a page set.
pub fn cookie(response: &TestResponse) -> String {
    let set = response
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .find(|c| c.starts_with("pillbox_sign_in_csrf="))
        .expect("the page sets its CSRF cookie");
    cookie_value(&set)
}

/// `name=value` of a Set-Cookie header, checking its attributes.
pub fn cookie_value(set: &str) -> String {
    assert!(set.contains("HttpOnly"), "{set}");
    assert!(set.contains("SameSite=Lax"), "{set}");
    set.split(';').next().unwrap().to_string()
}

fn unescape(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The hidden fields of the page's first form.
pub fn hidden_fields(page: &str) -> Vec<(String, String)> {
    let form = page.split("</form>").next().unwrap();
    form.split("<input type=\"hidden\" ")
        .skip(1)
        .map(|rest| {
            let name = rest
                .split("name=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            let value = rest
                .split("value=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            (unescape(name), unescape(value))
        })
        .collect()
}

/// POSTs a page's form with its cookie (no contract check: pages are HTML).
pub async fn post_page(app: &TestApp, fields: &[(String, String)], cookie: &str) -> TestResponse {
    let body = serde_urlencoded::to_string(fields).unwrap();
    let request = Request::builder()
        .method(Method::POST)
        .uri("/api/v1/oauth/authorize")
        .header("content-type", "application/x-www-form-urlencoded")
        .header("cookie", cookie)
        .header("user-agent", "TestBrowser/1.0")
        .body(Body::from(body))
        .unwrap();
    app.raw_request(request).await
}

/// The query parameters of a redirect's Location.
pub fn location_params(response: &TestResponse) -> Vec<(String, String)> {
    let location = response.header("location").expect("a redirect");
    let query = location.split_once('?').expect("a query").1;
    serde_urlencoded::from_str(query).unwrap()
}

pub fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Fills the password step; answers the response to it.
pub async fn submit_password(
    app: &TestApp,
    challenge: &str,
    state: &str,
    email: &str,
    password: &str,
) -> (TestResponse, String) {
    let page = get_authorize(app, &authorize_query(challenge, state)).await;
    page.assert_status(200);
    let cookie = cookie(&page);
    let mut fields = hidden_fields(html(&page));
    fields.push(("email".into(), email.into()));
    fields.push(("password".into(), password.into()));
    (post_page(app, &fields, &cookie).await, cookie)
}

/// Signs in with a password (and, for an account with TOTP, `second`
/// through the second step); answers the code and checks `state` came back.
pub async fn sign_in(
    app: &TestApp,
    challenge: &str,
    email: &str,
    second: Option<(&str, &str)>,
) -> String {
    let (response, cookie) = submit_password(app, challenge, "xyz-state", email, PASSWORD).await;
    let response = match second {
        None => response,
        Some((field, code)) => {
            response.assert_status(200);
            assert!(
                html(&response).contains("authenticator"),
                "{}",
                html(&response)
            );
            let mut fields = hidden_fields(html(&response));
            assert!(fields.iter().any(|(k, _)| k == "mfa_token"));
            fields.push((field.into(), code.into()));
            post_page(app, &fields, &cookie).await
        }
    };
    assert_eq!(response.status.as_u16(), 303, "{}", html(&response));
    let params = location_params(&response);
    assert!(response.header("location").unwrap().starts_with(REDIRECT));
    assert_eq!(param(&params, "state"), Some("xyz-state"));
    assert_eq!(param(&params, "iss"), Some("http://localhost"));
    param(&params, "code").expect("a code").to_string()
}

pub async fn redeem(app: &TestApp, code: &str, verifier: &str) -> TestResponse {
    app.form(
        "/api/v1/oauth/token",
        &[
            ("grant_type", "authorization_code"),
            ("client_id", MOBILE),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", verifier),
        ],
    )
    .await
}

pub async fn refresh(app: &TestApp, refresh_token: &str) -> TestResponse {
    app.form(
        "/api/v1/oauth/token",
        &[
            ("grant_type", "refresh_token"),
            ("client_id", MOBILE),
            ("refresh_token", refresh_token),
        ],
    )
    .await
}

/// Signs the owner in; answers (access token, refresh token).
pub async fn tokens(app: &TestApp) -> (String, String) {
    let (verifier, challenge) = pkce();
    let code = sign_in(app, &challenge, OWNER_EMAIL, None).await;
    let r = redeem(app, &code, &verifier).await;
    r.assert_status(200);
    (
        r.body["access_token"].as_str().unwrap().to_string(),
        r.body["refresh_token"].as_str().unwrap().to_string(),
    )
}

pub fn assert_oauth_error(response: &TestResponse, status: u16, error: &str) {
    assert_eq!(response.status.as_u16(), status, "{}", response.body);
    assert_eq!(response.body["error"], error, "{}", response.body);
    assert!(response.body["error_description"].is_string());
}
