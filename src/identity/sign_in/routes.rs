//! The authorize endpoint: GET shows the sign-in page, POST takes its
//! forms. Pages and redirects, not JSON: the browser is the client here.

use std::sync::OnceLock;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::json;
use subtle::ConstantTimeEq;

use super::page::{self, html};
use super::{
    AfterPassword, AfterSecondStep, Authorization, AuthorizeParams, Refusal, SignInForm,
    device_label, validate,
};
use crate::error::{ApiError, Result};
use crate::http::openapi::{Api, Op};
use crate::identity::oauth::routes::AUTHORIZE_PATH;
use crate::identity::{ClientAddress, base_url, events, is_https, parse_form, parse_pairs};
use crate::state::AppState;

const TAG: &str = "OAuth";
const CSRF_COOKIE: &str = "pillbox_sign_in_csrf";

fn html_response(description: &str) -> serde_json::Value {
    json!({"description": description,
        "content": {"text/html": {"schema": {"type": "string"}}}})
}

fn redirect_response(description: &str) -> serde_json::Value {
    json!({"description": description,
        "headers": {"Location": {"required": true, "schema": {"type": "string", "format": "uri-reference"}}}})
}

pub fn routes(api: Api) -> Api {
    let text = || json!({"type": "string"});
    api.route(
        Op::get(AUTHORIZE_PATH, "getOAuthAuthorization", TAG)
            .summary("Authorization endpoint: the sign-in page (authorization code flow, PKCE S256 only)")
            .description("Serves a server-rendered HTML sign-in page. An unknown client_id or a redirect_uri that is not registered for the client character for character is an error page, never a redirect; any other problem goes back to the redirect URI with error and the untouched state (RFC 6749 4.1.2.1).")
            .public()
            .query("response_type", json!({"const": "code"}), "Must be code")
            .query("client_id", text(), "The registered public client")
            .query("redirect_uri", text(), "One of the client's registered redirect URIs, exactly")
            .query("state", text(), "Returned to the client untouched")
            .query("code_challenge", json!({"type": "string", "minLength": 43, "maxLength": 43}), "BASE64URL(SHA256(code_verifier))")
            .query("code_challenge_method", json!({"const": "S256"}), "Only S256")
            .query("scope", text(), "pillbox (the default)")
            .query("device_label", text(), "A name for the device in the session list")
            .html_ok("The sign-in page")
            .response(302, redirect_response("Back to the client's redirect URI with error, error_description, state and iss"))
            .response(400, html_response("An error page: unknown client, unregistered redirect URI or malformed request")),
        get(show),
    )
    .route(
        Op::post(AUTHORIZE_PATH, "createOAuthAuthorization", TAG)
            .summary("Submit the sign-in page: email and password, then a TOTP or recovery code where the account has one")
            .description("Form-encoded, from the page's own forms (with their CSRF token and cookie). Success is a 303 to the redirect URI with code, state and iss. Failures show the page again with the error; repeated failures per address and per account make the next attempt wait, longer each time (429).")
            .public()
            .form_body::<SignInForm>()
            .html_ok("The page again: the second step, or the form with an error")
            .response(303, redirect_response("Back to the client's redirect URI with code, state and iss (or an error)"))
            .response(400, html_response("An error page: unknown client, unregistered redirect URI or malformed form"))
            .response(401, html_response("The form again: the email, password or code is not right"))
            .response(403, html_response("The form again: its CSRF token did not match (expired form or another site)"))
            .response(422, html_response("The form again: a field is missing"))
            .response(429, json!({"description": "Too many attempts: the form again (HTML) with Retry-After, or the rate limit's JSON",
                "headers": {"Retry-After": {"$ref": "#/components/headers/RetryAfter"}},
                "content": {"text/html": {"schema": {"type": "string"}},
                    "application/json": {"schema": {"$ref": "#/components/schemas/RateLimitError"}}}})),
        post(submit),
    )
}

fn redirect(status: StatusCode, url: &str) -> Response {
    match HeaderValue::from_str(url) {
        Ok(location) => {
            let mut response = status.into_response();
            response.headers_mut().insert(header::LOCATION, location);
            response
        }
        Err(_) => html(
            StatusCode::BAD_REQUEST,
            page::error_page("The redirect address cannot be used."),
            None,
        ),
    }
}

fn refused(refusal: Refusal, status: StatusCode) -> Response {
    match refusal {
        Refusal::Page(message) => html(StatusCode::BAD_REQUEST, page::error_page(message), None),
        Refusal::Redirect(url) => redirect(status, &url),
    }
}

fn csrf_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == CSRF_COOKIE)
        .map(|(_, value)| value.to_string())
        .filter(|v| {
            v.len() == 43
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
        })
}

fn new_csrf() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("operating system random source");
    URL_SAFE_NO_PAD.encode(bytes)
}

fn with_cookie(mut response: Response, csrf: &str, base: &str) -> Response {
    let secure = if is_https(base) { "; Secure" } else { "" };
    let cookie =
        format!("{CSRF_COOKIE}={csrf}; Path=/api/v1/oauth; HttpOnly; SameSite=Lax{secure}");
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

async fn show(State(state): State<AppState>, headers: HeaderMap, uri: Uri) -> Response {
    let base = base_url(&state.settings, &headers);
    let params: AuthorizeParams = match parse_pairs(uri.query().unwrap_or("").as_bytes()) {
        Ok(params) => params,
        Err(_) => {
            return html(
                StatusCode::BAD_REQUEST,
                page::error_page("The sign-in request is malformed."),
                None,
            );
        }
    };
    let request = match validate(&state.settings, &base, &params) {
        Ok(request) => request,
        Err(refusal) => return refused(refusal, StatusCode::FOUND),
    };
    let csrf = csrf_cookie(&headers).unwrap_or_else(new_csrf);
    let body = page::password_form(&params, &csrf, "", None);
    with_cookie(
        html(StatusCode::OK, body, Some(&request.redirect_uri)),
        &csrf,
        &base,
    )
}

/// One submission, with what every step needs.
struct Submission {
    state: AppState,
    base: String,
    request: Authorization,
    params: AuthorizeParams,
    csrf: String,
    device_label: String,
    address: String,
}

impl Submission {
    fn page(&self, status: StatusCode, body: String) -> Response {
        html(status, body, Some(&self.request.redirect_uri))
    }

    fn password_page(&self, status: StatusCode, email: &str, error: &str) -> Response {
        self.page(
            status,
            page::password_form(&self.params, &self.csrf, email, Some(error)),
        )
    }

    fn second_page(&self, status: StatusCode, pending: &str, error: Option<&str>) -> Response {
        self.page(
            status,
            page::second_step_form(&self.params, &self.csrf, pending, error),
        )
    }

    /// The longer of the waits the address and the account must sit out.
    async fn wait(&self, email: &str) -> Result<Option<u64>> {
        let keys = [self.address.clone(), events::account_key(email)];
        self.state
            .db
            .read(move |conn| {
                let mut longest = None;
                for key in &keys {
                    longest = longest.max(events::wait_secs(conn, key)?);
                }
                Ok(longest)
            })
            .await
    }

    async fn throttled(&self, wait: u64, account_email: &str, page: Response) -> Result<Response> {
        let address = self.address.clone();
        let email = account_email.to_string();
        self.state
            .db
            .write(move |tx| {
                let account = super::find_account(tx, &email)?.map(|(id, _)| id);
                events::record(tx, account, "sign_in.throttled", &address, json!({}))
            })
            .await?;
        let mut page = page;
        page.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(wait.max(1)));
        Ok(page)
    }
}

async fn submit(
    State(state): State<AppState>,
    headers: HeaderMap,
    ClientAddress(address): ClientAddress,
    body: Bytes,
) -> Response {
    let base = base_url(&state.settings, &headers);
    let form: SignInForm = match parse_form(&headers, &body) {
        Ok(form) => form,
        Err(_) => {
            return html(
                StatusCode::BAD_REQUEST,
                page::error_page("The sign-in form is malformed."),
                None,
            );
        }
    };
    let request = match validate(&state.settings, &base, &form.request) {
        Ok(request) => request,
        Err(refusal) => return refused(refusal, StatusCode::SEE_OTHER),
    };
    let user_agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    let cookie = csrf_cookie(&headers);
    let csrf_ok = match (&cookie, &form.csrf_token) {
        (Some(cookie), Some(sent)) => bool::from(cookie.as_bytes().ct_eq(sent.as_bytes())),
        _ => false,
    };
    let submission = Submission {
        device_label: device_label(form.request.device_label.as_deref(), user_agent),
        params: form.request.clone(),
        csrf: cookie.clone().filter(|_| csrf_ok).unwrap_or_else(new_csrf),
        state,
        base,
        request,
        address,
    };
    if !csrf_ok {
        let email = form.email.as_deref().unwrap_or("");
        let response = submission.password_page(
            StatusCode::FORBIDDEN,
            email,
            "This sign-in form has expired or did not come from this server. Please sign in again.",
        );
        return with_cookie(response, &submission.csrf, &submission.base);
    }
    let outcome = match form.mfa_token.as_deref() {
        Some(pending) => second_step(&submission, pending, &form).await,
        None => password_step(&submission, &form).await,
    };
    outcome.unwrap_or_else(ApiError::into_response)
}

/// The hash an unknown email's password is checked against, so that an
/// unknown email takes as long as a known one.
fn decoy_hash() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| {
        crate::auth::password::hash("a password no account has, for timing").unwrap_or_default()
    })
}

async fn password_step(s: &Submission, form: &SignInForm) -> Result<Response> {
    let email = form.email.as_deref().unwrap_or("").trim().to_string();
    let password = form.password.clone().unwrap_or_default();
    if email.is_empty() || password.is_empty() {
        return Ok(s.password_page(
            StatusCode::UNPROCESSABLE_ENTITY,
            &email,
            "Enter your email address and your password.",
        ));
    }
    if let Some(wait) = s.wait(&email).await? {
        let page = s.password_page(
            StatusCode::TOO_MANY_REQUESTS,
            &email,
            &format!("Too many sign-in attempts. Wait {wait} seconds, then try again."),
        );
        return s.throttled(wait, &email, page).await;
    }
    let lookup = email.clone();
    let found = s
        .state
        .db
        .read(move |conn| super::find_account(conn, &lookup))
        .await?;
    let hash = found.as_ref().map(|(_, hash)| hash.clone());
    let verified = tokio::task::spawn_blocking(move || {
        let hash = hash.as_deref().unwrap_or_else(|| decoy_hash());
        crate::auth::password::verify(&password, hash)
    })
    .await
    .map_err(|e| ApiError::internal(format!("password check failed: {e}")))?;
    let account_id = match found {
        Some((id, _)) if verified => id,
        other => {
            let account_id = other.map(|(id, _)| id);
            let (failed_email, address) = (email.clone(), s.address.clone());
            s.state
                .db
                .write(move |tx| super::failed(tx, account_id, &failed_email, &address, "password"))
                .await?;
            return Ok(s.password_page(
                StatusCode::UNAUTHORIZED,
                &email,
                "The email address or password is not right.",
            ));
        }
    };
    let (request, issuer, label, address) = (
        s.request.clone(),
        s.base.clone(),
        s.device_label.clone(),
        s.address.clone(),
    );
    let after = s
        .state
        .db
        .write(move |tx| {
            super::password_accepted(tx, &request, &issuer, account_id, &email, &label, &address)
        })
        .await?;
    Ok(match after {
        AfterPassword::Done(url) => redirect(StatusCode::SEE_OTHER, &url),
        AfterPassword::SecondStep(pending) => s.second_page(StatusCode::OK, &pending, None),
    })
}

async fn second_step(s: &Submission, pending: &str, form: &SignInForm) -> Result<Response> {
    let expired = "Your sign-in has expired. Please sign in again.";
    let token = pending.to_string();
    let Some(email) = s
        .state
        .db
        .read(move |conn| super::pending_email(conn, &token))
        .await?
    else {
        return Ok(s.password_page(StatusCode::UNAUTHORIZED, "", expired));
    };
    if let Some(wait) = s.wait(&email).await? {
        let message = format!("Too many attempts. Wait {wait} seconds, then try again.");
        let page = s.second_page(StatusCode::TOO_MANY_REQUESTS, pending, Some(&message));
        return s.throttled(wait, &email, page).await;
    }
    let nonblank = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let Some(code) = nonblank(&form.code).or_else(|| nonblank(&form.recovery_code)) else {
        return Ok(s.second_page(
            StatusCode::UNPROCESSABLE_ENTITY,
            pending,
            Some("Enter the code from your authenticator app, or a recovery code."),
        ));
    };
    let key = s.state.mfa_key()?;
    let (request, issuer, label, address, token) = (
        s.request.clone(),
        s.base.clone(),
        s.device_label.clone(),
        s.address.clone(),
        pending.to_string(),
    );
    let after = s
        .state
        .db
        .write(move |tx| {
            super::second_step(tx, &key, &request, &issuer, &token, &code, &label, &address)
        })
        .await?;
    Ok(match after {
        AfterSecondStep::Done(url) => redirect(StatusCode::SEE_OTHER, &url),
        AfterSecondStep::WrongCode => s.second_page(
            StatusCode::UNAUTHORIZED,
            pending,
            Some("That code is not right. Try the current code, or a recovery code."),
        ),
        AfterSecondStep::Expired => s.password_page(StatusCode::UNAUTHORIZED, "", expired),
    })
}
