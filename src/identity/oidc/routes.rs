//! The delegated sign-in's browser endpoints: starting it (from the
//! sign-in and invitation pages' own forms, after their CSRF check) and
//! the provider's redirect back, outside the API like the pages.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use serde_json::json;

use super::model::Purpose;
use super::{CALLBACK_PATH, COOKIE_PATH, Failure, INVITATION_COOKIE, Matched, STATE_COOKIE};
use crate::config::OidcSettings;
use crate::error::{ApiError, Result};
use crate::household::invitations;
use crate::identity::sign_in::page::{escape, html, page};
use crate::identity::sign_in::{self, Refusal};
use crate::identity::{ClientAddress, base_url, csrf, events, invitation, parse_pairs};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route(CALLBACK_PATH, get(callback))
}

/// The provider's origin, which pages with its button must allow as a
/// form target (browsers apply `form-action` to the redirect after a form).
pub fn provider_origin(state: &AppState) -> Option<String> {
    state
        .settings
        .oidc
        .as_ref()
        .and_then(|o| super::origin(&o.issuer))
}

fn via(purpose: &Purpose) -> &'static str {
    match purpose {
        Purpose::Authorize { .. } => "sign_in",
        Purpose::Invitation => "invitation",
    }
}

/// The page of a refused sign-in; `back` is where to start again.
fn failure_page(settings: &OidcSettings, failure: Failure, back: Option<&str>) -> Response {
    let body = match back {
        Some(url) => format!("<p><a href=\"{}\">Back to signing in</a></p>", escape(url)),
        None => {
            "<p>Go back to the app, or open the invitation link again, and start once more.</p>"
                .into()
        }
    };
    let text = page(
        &format!("Sign-in with {} did not work", settings.name),
        Some(&failure.message(&settings.name)),
        &body,
    );
    html(failure.status(), text, None)
}

/// Starts a delegated sign-in: a 303 to the provider with the state in a
/// cookie, or a page saying the provider cannot be reached.
pub async fn start(
    state: &AppState,
    base: &str,
    purpose: Purpose,
    invitation_token: Option<&str>,
    address: &str,
) -> Response {
    let Some(settings) = state.settings.oidc.clone() else {
        return ApiError::NotFound("no such route".into()).into_response();
    };
    let http = match crate::reminders::deliver::http_client() {
        Ok(http) => http,
        Err(e) => return e.into_response(),
    };
    let discovery = match super::discover(&http, &settings).await {
        Ok(discovery) => discovery,
        Err(failure) => {
            let (address, via) = (address.to_string(), via(&purpose));
            let recorded = state
                .db
                .write(move |tx| super::record_failure(tx, None, failure, &address, via))
                .await;
            if let Err(e) = recorded {
                return e.into_response();
            }
            return failure_page(&settings, failure, None);
        }
    };
    let started = super::Started::generate();
    let url = started.authorization_url(&discovery, &settings, base);
    let (saved, to_save) = (purpose.clone(), started.clone());
    if let Err(e) = state.db.write(move |tx| to_save.save(tx, &saved)).await {
        return e.into_response();
    }
    let mut response = StatusCode::SEE_OTHER.into_response();
    match HeaderValue::from_str(&url) {
        Ok(location) => response.headers_mut().insert(header::LOCATION, location),
        Err(_) => return failure_page(&settings, Failure::Unavailable, None),
    };
    let response = csrf::set(response, STATE_COOKIE, COOKIE_PATH, &started.state, base);
    match invitation_token {
        Some(token) => csrf::set(response, INVITATION_COOKIE, COOKIE_PATH, token, base),
        None => response,
    }
}

#[derive(Debug, Default, Deserialize)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    iss: Option<String>,
}

/// The provider's redirect back (authorization response).
async fn callback(
    State(state): State<AppState>,
    headers: HeaderMap,
    ClientAddress(address): ClientAddress,
    uri: Uri,
) -> Response {
    let response = finish(&state, &headers, &address, &uri)
        .await
        .unwrap_or_else(ApiError::into_response);
    let response = csrf::clear(response, STATE_COOKIE, COOKIE_PATH);
    csrf::clear(response, INVITATION_COOKIE, COOKIE_PATH)
}

async fn finish(
    state: &AppState,
    headers: &HeaderMap,
    address: &str,
    uri: &Uri,
) -> Result<Response> {
    let Some(settings) = state.settings.oidc.clone() else {
        return Err(ApiError::NotFound("no such route".into()));
    };
    let base = base_url(&state.settings, headers);
    let query: CallbackQuery =
        parse_pairs(uri.query().unwrap_or("").as_bytes()).unwrap_or_default();
    let record = |failure: Failure, account_id: Option<i64>, via: &'static str| {
        let address = address.to_string();
        async move {
            state
                .db
                .write(move |tx| super::record_failure(tx, account_id, failure, &address, via))
                .await
        }
    };
    // The state must be the one this browser was given, and still pending.
    let cookie = csrf::from_cookie(headers, STATE_COOKIE);
    if !csrf::matches(cookie.as_deref(), query.state.as_deref()) {
        record(Failure::Expired, None, "unknown").await?;
        return Ok(failure_page(&settings, Failure::Expired, None));
    }
    let digest = super::digest(query.state.as_deref().unwrap_or(""));
    let pending = state
        .db
        .write(move |tx| super::store::take_pending(tx, &digest))
        .await?;
    let Some(pending) = pending.filter(|p| p.expires_at > crate::domain::Timestamp::now()) else {
        record(Failure::Expired, None, "unknown").await?;
        return Ok(failure_page(&settings, Failure::Expired, None));
    };
    let purpose: Purpose = serde_json::from_str(&pending.purpose).map_err(ApiError::internal)?;
    let via = via(&purpose);
    let back = match &purpose {
        Purpose::Authorize { params, .. } => Some(format!(
            "{}{}?{}",
            crate::identity::API_BASE,
            crate::identity::oauth::routes::AUTHORIZE_PATH,
            serde_urlencoded::to_string(params.pairs()).unwrap_or_default()
        )),
        Purpose::Invitation => None,
    };
    let fail = |failure: Failure| failure_page(&settings, failure, back.as_deref());
    // RFC 9207: a provider that names itself must name the configured one.
    if query
        .iss
        .as_deref()
        .is_some_and(|iss| iss != settings.issuer)
    {
        record(Failure::Invalid(super::jwt::Invalid::Issuer), None, via).await?;
        return Ok(fail(Failure::Invalid(super::jwt::Invalid::Issuer)));
    }
    let code = match (&query.error, &query.code) {
        (None, Some(code)) if !code.is_empty() => code.clone(),
        _ => {
            record(Failure::Cancelled, None, via).await?;
            return Ok(fail(Failure::Cancelled));
        }
    };
    let http = crate::reminders::deliver::http_client()?;
    let claims = match super::redeem(&http, &settings, &base, &code, &pending).await {
        Ok(claims) => claims,
        Err(failure) => {
            record(failure, None, via).await?;
            return Ok(fail(failure));
        }
    };
    match purpose {
        Purpose::Authorize {
            params,
            device_label,
        } => {
            let request = match sign_in::validate(&state.settings, &base, &params) {
                Ok(request) => request,
                Err(Refusal::Page(message)) => {
                    return Ok(html(
                        StatusCode::BAD_REQUEST,
                        sign_in::page::error_page(message),
                        None,
                    ));
                }
                Err(Refusal::Redirect(url)) => return Ok(redirect(&url)),
            };
            let (address, issuer) = (address.to_string(), base.clone());
            let done = state
                .db
                .write(move |tx| {
                    let failure = match super::match_account(tx, &claims)? {
                        Ok(Matched::Account { account_id, email }) => {
                            return Ok(Ok(sign_in::complete(
                                tx,
                                &request,
                                &issuer,
                                account_id,
                                &email,
                                &device_label,
                                &address,
                                "oidc",
                            )?));
                        }
                        Ok(Matched::Unknown { .. }) => Failure::NoAccount,
                        Err(failure) => failure,
                    };
                    super::record_failure(tx, None, failure, &address, "sign_in")?;
                    let link = matches!(failure, Failure::NoAccount | Failure::EmailNotVerified)
                        .then(|| super::offer_link(tx, &claims))
                        .transpose()?;
                    Ok(Err((failure, link)))
                })
                .await?;
            Ok(match done {
                Ok(url) => redirect(&url),
                Err((failure, Some(link))) => link_page(&settings, failure, &base, &params, &link),
                Err((failure, None)) => fail(failure),
            })
        }
        Purpose::Invitation => accept_invitation(state, headers, address, claims, &settings).await,
    }
}

fn redirect(url: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(location) = HeaderValue::from_str(url) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

/// An account password sign-in can never use: a delegated account has no
/// password until the operator sets one (`pillbox account password`).
const NO_PASSWORD: &str = "!delegated-sign-in";

/// Signs the invitee in (making the account of the invited, verified email
/// when there is none) and accepts the invitation the browser holds.
async fn accept_invitation(
    state: &AppState,
    headers: &HeaderMap,
    address: &str,
    claims: super::model::Claims,
    settings: &OidcSettings,
) -> Result<Response> {
    let Some(token) = csrf::cookie(headers, INVITATION_COOKIE).filter(|t| t.len() <= 200) else {
        return Ok(html(
            StatusCode::NOT_FOUND,
            invitation::page::invalid(),
            None,
        ));
    };
    let lookup = token.clone();
    let Some(invitee) = state
        .db
        .read(move |conn| invitations::invitee(conn, &lookup))
        .await?
    else {
        return Ok(html(
            StatusCode::NOT_FOUND,
            invitation::page::invalid(),
            None,
        ));
    };
    let (address, invited) = (address.to_string(), invitee.email.clone());
    let signed_in = state
        .db
        .write(move |tx| {
            let (account_id, email) = match super::match_account(tx, &claims)? {
                Ok(Matched::Account { account_id, email }) => (account_id, email),
                Ok(Matched::Unknown {
                    verified_email: Some(email),
                }) if email.eq_ignore_ascii_case(&invited) => {
                    let account_id = crate::auth::accounts::create(tx, &email, NO_PASSWORD, None)?;
                    super::store::link(tx, &claims.iss, &claims.sub, account_id)?;
                    events::record(
                        tx,
                        Some(account_id),
                        "account.created",
                        &address,
                        json!({"via": "oidc"}),
                    )?;
                    (account_id, email)
                }
                other => {
                    let failure = match other {
                        Err(failure) => failure,
                        Ok(_) => Failure::NoAccount,
                    };
                    super::record_failure(tx, None, failure, &address, "invitation")?;
                    return Ok(Err(failure));
                }
            };
            sign_in::succeeded(
                tx,
                account_id,
                &email,
                &address,
                json!({"step": "oidc", "via": "invitation"}),
            )?;
            Ok(Ok((account_id, email)))
        })
        .await?;
    let (account_id, email) = match signed_in {
        Ok(found) => found,
        Err(failure) => return Ok(failure_page(settings, failure, None)),
    };
    if !email.eq_ignore_ascii_case(&invitee.email) {
        let text = page(
            "Invitation not accepted",
            Some(&format!(
                "You signed in with {} as another email address than the invited one.",
                settings.name
            )),
            "<p>Open the invitation link again and sign in as the invited email address.</p>",
        );
        return Ok(html(StatusCode::FORBIDDEN, text, None));
    }
    let accepted = state
        .db
        .write(move |tx| invitations::accept_as(tx, account_id, &token))
        .await;
    Ok(match accepted {
        Ok(_) => html(
            StatusCode::OK,
            invitation::page::done(&invitee.household_name, &invitee.email),
            None,
        ),
        Err(ApiError::Unprocessable { .. }) => {
            html(StatusCode::NOT_FOUND, invitation::page::invalid(), None)
        }
        Err(e) => return Err(e),
    })
}

/// The refusal of an identity no account matched, with the password form
/// that links it: whoever signs in with it (and their second factor) links
/// this identity to their account, once.
fn link_page(
    settings: &OidcSettings,
    failure: Failure,
    base: &str,
    params: &sign_in::AuthorizeParams,
    link: &str,
) -> Response {
    let mut params = params.clone();
    params.link_token = Some(link.to_string());
    let csrf = csrf::generate();
    let form = sign_in::page::password_body(&params, &csrf, "", None, None);
    let body = format!(
        "<p>If you have a Pillbox account, sign in with its password once to link it to this {} identity; from then on {} is enough.</p>\n{form}",
        escape(&settings.name),
        escape(&settings.name)
    );
    let text = page(
        &format!("Sign-in with {} did not work", settings.name),
        Some(&failure.message(&settings.name)),
        &body,
    );
    let targets: Vec<&str> = params.redirect_uri.as_deref().into_iter().collect();
    let response = sign_in::page::html_to(failure.status(), text, &targets);
    csrf::set(
        response,
        sign_in::routes::CSRF_COOKIE,
        "/api/v1/oauth",
        &csrf,
        base,
    )
}
