//! The landing page's handlers: pages, not JSON, outside the API.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use serde_json::json;

use super::page::{self, ProviderButton};
use super::{InvitationForm, Step};
use crate::error::{ApiError, Result};
use crate::household::invitations::{self, Invitee};
use crate::http::origin::{BaseUrl, ClientAddress, is_https};
use crate::http::page::{html, html_to};
use crate::identity::form::{parse_form, parse_pairs};
use crate::identity::sign_in::password::{self, PasswordCheck};
use crate::identity::sign_in::{self, SecondFactor};
use crate::identity::{csrf, oidc};
use crate::state::AppState;

const CSRF_COOKIE: &str = "pillbox_invitation_csrf";

pub fn router() -> Router<AppState> {
    Router::new().route(page::ACTION, get(show).post(submit))
}

#[derive(Deserialize)]
struct Query {
    token: Option<String>,
}

fn invalid() -> Response {
    html(StatusCode::NOT_FOUND, page::invalid(), None)
}

async fn find(state: &AppState, token: Option<String>) -> Result<Option<(String, Invitee)>> {
    let Some(token) = token.filter(|t| !t.is_empty() && t.len() <= 200) else {
        return Ok(None);
    };
    let lookup = token.clone();
    let found = state
        .db
        .read(move |conn| invitations::invitee(conn, &lookup))
        .await?;
    Ok(found.map(|invitee| (token, invitee)))
}

/// What every answer to one visitor needs.
struct Visit {
    state: AppState,
    base: String,
    token: String,
    invitee: Invitee,
    csrf: String,
    address: String,
}

impl Visit {
    fn respond(&self, status: StatusCode, body: String) -> Response {
        let origin = oidc::provider_origin(&self.state);
        let response = html_to(
            status,
            body,
            origin
                .as_slice()
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .as_slice(),
        );
        csrf::set(
            response,
            CSRF_COOKIE,
            page::ACTION,
            &self.csrf,
            is_https(&self.base),
        )
    }

    fn landing(&self, status: StatusCode, error: Option<(Step, &str)>) -> Response {
        let button = self
            .state
            .try_part::<crate::identity::settings::OidcSettings>()
            .map(|o| ProviderButton {
                name: &o.name,
                action: page::ACTION,
                hidden: vec![
                    ("csrf_token", self.csrf.as_str()),
                    ("token", self.token.as_str()),
                    ("step", "provider"),
                ],
            });
        self.respond(
            status,
            page::landing(
                &self.invitee,
                &self.token,
                &self.csrf,
                button.as_ref(),
                error,
            ),
        )
    }

    fn second_page(&self, status: StatusCode, pending: &str, error: Option<&str>) -> Response {
        self.respond(
            status,
            page::second_step(&self.token, &self.csrf, pending, error),
        )
    }

    fn throttled(&self, mut response: Response, wait: u64) -> Response {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(wait.max(1)));
        response
    }

    /// Accepts for a verified account; the done page, or the page of an
    /// invitation that cannot be accepted.
    async fn accept(&self, account_id: i64) -> Result<Response> {
        let token = self.token.clone();
        let accepted = self
            .state
            .db
            .write(move |tx| invitations::accept_as(tx, account_id, &token))
            .await;
        Ok(match accepted {
            Ok(_) => self.done(),
            Err(ApiError::Unprocessable { .. }) => invalid(),
            Err(e) => return Err(e),
        })
    }

    fn done(&self) -> Response {
        html(
            StatusCode::OK,
            page::done(&self.invitee.household_name, &self.invitee.email),
            None,
        )
    }
}

async fn show(
    State(state): State<AppState>,
    BaseUrl(base): BaseUrl,
    headers: HeaderMap,
    ClientAddress(address): ClientAddress,
    uri: Uri,
) -> Response {
    let query: Query = match parse_pairs(uri.query().unwrap_or("").as_bytes()) {
        Ok(query) => query,
        Err(_) => return invalid(),
    };
    let (token, invitee) = match find(&state, query.token).await {
        Ok(Some(found)) => found,
        Ok(None) => return invalid(),
        Err(e) => return e.into_response(),
    };
    let visit = Visit {
        base,
        csrf: csrf::from_cookie(&headers, CSRF_COOKIE).unwrap_or_else(csrf::generate),
        state,
        token,
        invitee,
        address,
    };
    visit.landing(StatusCode::OK, None)
}

async fn submit(
    State(state): State<AppState>,
    BaseUrl(base): BaseUrl,
    headers: HeaderMap,
    ClientAddress(address): ClientAddress,
    body: Bytes,
) -> Response {
    let form: InvitationForm = match parse_form(&headers, &body) {
        Ok(form) => form,
        Err(_) => {
            return html(StatusCode::BAD_REQUEST, page::malformed(), None);
        }
    };
    let (token, invitee) = match find(&state, form.token.clone()).await {
        Ok(Some(found)) => found,
        Ok(None) => return invalid(),
        Err(e) => return e.into_response(),
    };
    let cookie = csrf::from_cookie(&headers, CSRF_COOKIE);
    let csrf_ok = csrf::matches(cookie.as_deref(), form.csrf_token.as_deref());
    let visit = Visit {
        base,
        csrf: cookie.filter(|_| csrf_ok).unwrap_or_else(csrf::generate),
        state,
        token,
        invitee,
        address,
    };
    if !csrf_ok {
        let step = if form.step.as_deref() == Some("create") {
            Step::Create
        } else {
            Step::SignIn
        };
        return visit.landing(
            StatusCode::FORBIDDEN,
            Some((
                step,
                "This form has expired or did not come from this server. Please try again.",
            )),
        );
    }
    let outcome = match (form.mfa_token.as_deref(), form.step.as_deref()) {
        (Some(pending), _) => second_step(&visit, pending, &form).await,
        (None, Some("create")) => create(&visit, &form).await,
        (None, Some("sign_in")) => sign_in_step(&visit, &form).await,
        (None, Some("provider"))
            if visit
                .state
                .try_part::<crate::identity::settings::OidcSettings>()
                .is_some() =>
        {
            Ok(oidc::routes::start(
                &visit.state,
                &visit.base,
                oidc::model::Purpose::Invitation,
                Some(&visit.token),
                &visit.address,
            )
            .await)
        }
        _ => Ok(html(StatusCode::BAD_REQUEST, page::malformed(), None)),
    };
    outcome.unwrap_or_else(ApiError::into_response)
}

async fn create(v: &Visit, form: &InvitationForm) -> Result<Response> {
    let password = form.password.clone().unwrap_or_default();
    if let Err(rule) = crate::auth::password::check_policy(&password) {
        let message = format!("Choose another password: the {rule}.");
        return Ok(v.landing(
            StatusCode::UNPROCESSABLE_ENTITY,
            Some((Step::Create, &message)),
        ));
    }
    if form.password_confirmation.as_deref() != Some(password.as_str()) {
        return Ok(v.landing(
            StatusCode::UNPROCESSABLE_ENTITY,
            Some((
                Step::Create,
                "The two passwords differ. Enter the same password twice.",
            )),
        ));
    }
    let hash = tokio::task::spawn_blocking(move || crate::auth::password::hash(&password))
        .await
        .map_err(|e| ApiError::internal(format!("password hashing failed: {e}")))?
        .map_err(ApiError::internal)?;
    let (token, email, address) = (v.token.clone(), v.invitee.email.clone(), v.address.clone());
    let created = v
        .state
        .db
        .write(move |tx| super::create_account_and_accept(tx, &token, &email, &hash, &address))
        .await;
    Ok(match created {
        Ok(_) => v.done(),
        Err(ApiError::Conflict { .. }) => v.landing(
            StatusCode::CONFLICT,
            Some((
                Step::SignIn,
                "There is already an account with this email address. Sign in with it instead.",
            )),
        ),
        Err(ApiError::Unprocessable { .. }) => invalid(),
        Err(e) => return Err(e),
    })
}

async fn sign_in_step(v: &Visit, form: &InvitationForm) -> Result<Response> {
    let password = form.password.clone().unwrap_or_default();
    if password.is_empty() {
        return Ok(v.landing(
            StatusCode::UNPROCESSABLE_ENTITY,
            Some((Step::SignIn, "Enter your password.")),
        ));
    }
    let email = v.invitee.email.clone();
    let account_id = match password::check(&v.state.db, &v.address, &email, password).await? {
        PasswordCheck::Right { account_id } => account_id,
        PasswordCheck::Throttled(wait) => {
            let message =
                format!("Too many sign-in attempts. Wait {wait} seconds, then try again.");
            let page = v.landing(
                StatusCode::TOO_MANY_REQUESTS,
                Some((Step::SignIn, &message)),
            );
            return Ok(v.throttled(page, wait));
        }
        PasswordCheck::Wrong => {
            return Ok(v.landing(
                StatusCode::UNAUTHORIZED,
                Some((Step::SignIn, "The password is not right.")),
            ));
        }
    };
    let address = v.address.clone();
    let pending = v
        .state
        .db
        .write(move |tx| super::password_accepted(tx, account_id, &email, &address))
        .await?;
    match pending {
        Some(pending) => Ok(v.second_page(StatusCode::OK, &pending, None)),
        None => v.accept(account_id).await,
    }
}

async fn second_step(v: &Visit, pending: &str, form: &InvitationForm) -> Result<Response> {
    let expired = "Your sign-in has expired. Please sign in again.";
    if let Some(wait) = password::wait(&v.state.db, &v.address, &v.invitee.email).await? {
        password::throttled(&v.state.db, &v.address, &v.invitee.email).await?;
        let message = format!("Too many attempts. Wait {wait} seconds, then try again.");
        let page = v.second_page(StatusCode::TOO_MANY_REQUESTS, pending, Some(&message));
        return Ok(v.throttled(page, wait));
    }
    let nonblank = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let Some(code) = nonblank(&form.code).or_else(|| nonblank(&form.recovery_code)) else {
        return Ok(v.second_page(
            StatusCode::UNPROCESSABLE_ENTITY,
            pending,
            Some("Enter the code from your authenticator app, or a recovery code."),
        ));
    };
    let key = crate::identity::mfa::crypt::MfaKey::of(&v.state)?;
    let (address, token) = (v.address.clone(), pending.to_string());
    let invited = v.invitee.email.clone();
    let verified = v
        .state
        .db
        .write(move |tx| {
            let factor = sign_in::verify_second_step(tx, &key, &token, &code, &address)?;
            match &factor {
                // A second step of another account (a pending token from
                // elsewhere) cannot accept this invitation.
                SecondFactor::Verified { email, .. } if !email.eq_ignore_ascii_case(&invited) => {
                    return Ok(SecondFactor::Expired);
                }
                SecondFactor::Verified {
                    account_id,
                    email,
                    step,
                } => sign_in::succeeded(
                    tx,
                    *account_id,
                    email,
                    &address,
                    json!({"step": step, "via": "invitation"}),
                )?,
                _ => {}
            }
            Ok(factor)
        })
        .await?;
    match verified {
        SecondFactor::Verified { account_id, .. } => v.accept(account_id).await,
        SecondFactor::WrongCode => Ok(v.second_page(
            StatusCode::UNAUTHORIZED,
            pending,
            Some("That code is not right. Try the current code, or a recovery code."),
        )),
        SecondFactor::Expired => {
            Ok(v.landing(StatusCode::UNAUTHORIZED, Some((Step::SignIn, expired))))
        }
    }
}
