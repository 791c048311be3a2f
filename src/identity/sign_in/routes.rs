//! The authorize endpoint: GET shows the sign-in page, POST takes its
//! forms. Pages and redirects, not JSON: the browser is the client here.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

use super::page::{self, COOKIE_PATH, CSRF_COOKIE};
use super::password::{self, PasswordCheck};
use super::{
    AfterConfirmation, AfterPassword, AfterSecondStep, Authorization, AuthorizeParams, Refusal,
    SignInForm, device_label, validate,
};
use crate::error::{ApiError, Result};
use crate::http::openapi::{Api, Op};
use crate::http::origin::{BaseUrl, ClientAddress, is_https};
use crate::http::page::{html, html_to};
use crate::identity::form::{parse_form, parse_pairs};
use crate::identity::oauth::routes::AUTHORIZE_PATH;
use crate::identity::{csrf, oidc};
use crate::state::AppState;

const TAG: &str = "OAuth";

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
            .query("link_token", text(), "From the page of a delegated sign-in no account matched, only in the browser the provider sent back (which holds the same token in a cookie): after signing in, the account is asked to confirm the link; anywhere else it is ignored")
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
    csrf::from_cookie(headers, CSRF_COOKIE)
}

fn with_cookie(response: Response, value: &str, base: &str) -> Response {
    csrf::set(response, CSRF_COOKIE, COOKIE_PATH, value, is_https(base))
}

async fn show(
    State(state): State<AppState>,
    BaseUrl(base): BaseUrl,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let params: AuthorizeParams = match parse_pairs(uri.query().unwrap_or("").as_bytes()) {
        Ok(params) => unbound_links_dropped(params, &headers),
        Err(_) => {
            return html(
                StatusCode::BAD_REQUEST,
                page::error_page("The sign-in request is malformed."),
                None,
            );
        }
    };
    let request = match validate(
        state.part::<crate::identity::settings::OAuthSettings>(),
        &base,
        &params,
    ) {
        Ok(request) => request,
        Err(refusal) => return refused(refusal, StatusCode::FOUND),
    };
    let csrf = csrf_cookie(&headers).unwrap_or_else(csrf::generate);
    let provider = state
        .try_part::<crate::identity::settings::OidcSettings>()
        .map(|o| o.name.as_str());
    let body = page::password_form(&params, &csrf, "", None, provider);
    let origin = oidc::provider_origin(&state);
    let targets: Vec<&str> = std::iter::once(request.redirect_uri.as_str())
        .chain(origin.as_deref())
        .collect();
    with_cookie(html_to(StatusCode::OK, body, &targets), &csrf, &base)
}

/// A link token in a URL or a form this browser was not given with the
/// link cookie is someone else's: it is dropped, and the sign-in goes on
/// as a plain one that links nothing.
fn unbound_links_dropped(mut params: AuthorizeParams, headers: &HeaderMap) -> AuthorizeParams {
    if params.link_token.is_some() && !oidc::held_by_browser(headers, params.link_token.as_deref())
    {
        params.link_token = None;
    }
    params
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
        let origin = oidc::provider_origin(&self.state);
        let targets: Vec<&str> = std::iter::once(self.request.redirect_uri.as_str())
            .chain(origin.as_deref())
            .collect();
        html_to(status, body, &targets)
    }

    fn password_page(&self, status: StatusCode, email: &str, error: &str) -> Response {
        let provider = self
            .state
            .try_part::<crate::identity::settings::OidcSettings>()
            .map(|o| o.name.as_str());
        self.page(
            status,
            page::password_form(&self.params, &self.csrf, email, Some(error), provider),
        )
    }

    fn second_page(&self, status: StatusCode, pending: &str, error: Option<&str>) -> Response {
        self.page(
            status,
            page::second_step_form(&self.params, &self.csrf, pending, error),
        )
    }

    /// Back to the client; a link cookie this sign-in held is spent.
    fn done(&self, url: &str) -> Response {
        let response = redirect(StatusCode::SEE_OTHER, url);
        if self.request.link_token.is_some() {
            csrf::clear(response, oidc::LINK_COOKIE, COOKIE_PATH)
        } else {
            response
        }
    }

    /// "Link the identity … to your Pillbox account?", asked of the
    /// account that just signed in on a link's page.
    fn confirm_page(&self, confirmation: &oidc::Confirmation, email: &str) -> Response {
        let provider = self
            .state
            .try_part::<crate::identity::settings::OidcSettings>()
            .map_or(crate::identity::settings::DEFAULT_OIDC_NAME, |o| {
                o.name.as_str()
            });
        self.page(
            StatusCode::OK,
            page::confirm_link_form(
                &self.params,
                &self.csrf,
                (&confirmation.label, &confirmation.secret),
                provider,
                email,
            ),
        )
    }

    /// A page refused while waiting: recorded, with Retry-After.
    async fn throttled(&self, wait: u64, account_email: &str, page: Response) -> Result<Response> {
        super::password::throttled(&self.state.db, &self.address, account_email).await?;
        let mut page = page;
        page.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(wait.max(1)));
        Ok(page)
    }
}

async fn submit(
    State(state): State<AppState>,
    BaseUrl(base): BaseUrl,
    headers: HeaderMap,
    ClientAddress(address): ClientAddress,
    body: Bytes,
) -> Response {
    let form: SignInForm = match parse_form::<SignInForm>(&headers, &body) {
        Ok(mut form) => {
            form.request = unbound_links_dropped(form.request, &headers);
            form
        }
        Err(_) => {
            return html(
                StatusCode::BAD_REQUEST,
                page::error_page("The sign-in form is malformed."),
                None,
            );
        }
    };
    let request = match validate(
        state.part::<crate::identity::settings::OAuthSettings>(),
        &base,
        &form.request,
    ) {
        Ok(request) => request,
        Err(refusal) => return refused(refusal, StatusCode::SEE_OTHER),
    };
    let user_agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    let cookie = csrf_cookie(&headers);
    let csrf_ok = csrf::matches(cookie.as_deref(), form.csrf_token.as_deref());
    let submission = Submission {
        device_label: device_label(form.request.device_label.as_deref(), user_agent),
        params: form.request.clone(),
        csrf: cookie
            .clone()
            .filter(|_| csrf_ok)
            .unwrap_or_else(csrf::generate),
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
    if form.provider.as_deref() == Some("oidc")
        && submission
            .state
            .try_part::<crate::identity::settings::OidcSettings>()
            .is_some()
    {
        let purpose = oidc::model::Purpose::Authorize {
            params: Box::new(submission.params.clone()),
            device_label: submission.device_label.clone(),
        };
        return oidc::routes::start(
            &submission.state,
            &submission.base,
            purpose,
            None,
            &submission.address,
        )
        .await;
    }
    let outcome = match (form.link_confirm.as_deref(), form.mfa_token.as_deref()) {
        (Some(secret), _) => confirm_link(&submission, secret, &form).await,
        (None, Some(pending)) => second_step(&submission, pending, &form).await,
        (None, None) => password_step(&submission, &form).await,
    };
    outcome.unwrap_or_else(ApiError::into_response)
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
    let account_id = match password::check(&s.state.db, &s.address, &email, password).await? {
        PasswordCheck::Right { account_id } => account_id,
        PasswordCheck::Throttled(wait) => {
            let mut page = s.password_page(
                StatusCode::TOO_MANY_REQUESTS,
                &email,
                &format!("Too many sign-in attempts. Wait {wait} seconds, then try again."),
            );
            page.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(wait.max(1)));
            return Ok(page);
        }
        PasswordCheck::Wrong => {
            return Ok(s.password_page(
                StatusCode::UNAUTHORIZED,
                &email,
                "The email address or password is not right.",
            ));
        }
    };
    let (request, issuer, label, address, signed_in) = (
        s.request.clone(),
        s.base.clone(),
        s.device_label.clone(),
        s.address.clone(),
        email.clone(),
    );
    let after = s
        .state
        .db
        .write(move |tx| {
            super::password_accepted(
                tx, &request, &issuer, account_id, &signed_in, &label, &address,
            )
        })
        .await?;
    Ok(match after {
        AfterPassword::Done(url) => s.done(&url),
        AfterPassword::SecondStep(pending) => s.second_page(StatusCode::OK, &pending, None),
        AfterPassword::ConfirmLink(confirmation) => s.confirm_page(&confirmation, &email),
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
    if let Some(wait) = password::wait(&s.state.db, &s.address, &email).await? {
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
    let key = crate::identity::mfa::crypt::MfaKey::of(&s.state)?;
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
        AfterSecondStep::Done(url) => s.done(&url),
        AfterSecondStep::ConfirmLink(confirmation) => s.confirm_page(&confirmation, &email),
        AfterSecondStep::WrongCode => s.second_page(
            StatusCode::UNAUTHORIZED,
            pending,
            Some("That code is not right. Try the current code, or a recovery code."),
        ),
        AfterSecondStep::Expired => s.password_page(StatusCode::UNAUTHORIZED, "", expired),
    })
}

/// The confirmation page's answer: link (or not), then back to the client.
async fn confirm_link(s: &Submission, secret: &str, form: &SignInForm) -> Result<Response> {
    let yes = match form.link_answer.as_deref() {
        Some("link") => true,
        Some("skip") => false,
        _ => {
            return Ok(s.password_page(
                StatusCode::UNPROCESSABLE_ENTITY,
                "",
                "Choose whether to link the identity. Please sign in again.",
            ));
        }
    };
    let mail_on = crate::mail::configured(&s.state);
    let (request, issuer, label, address, secret) = (
        s.request.clone(),
        s.base.clone(),
        s.device_label.clone(),
        s.address.clone(),
        secret.to_string(),
    );
    let after = s
        .state
        .db
        .write(move |tx| {
            super::answer_link(
                tx, &request, &issuer, &secret, yes, &label, &address, mail_on,
            )
        })
        .await?;
    Ok(match after {
        AfterConfirmation::Done(url) => s.done(&url),
        AfterConfirmation::Expired => s.password_page(
            StatusCode::UNAUTHORIZED,
            "",
            "This link has expired or was started in another browser. Please sign in again.",
        ),
    })
}
