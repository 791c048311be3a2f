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
use crate::db::WriteTx;
use crate::error::{ApiError, Result};
use crate::household::invitations;
use crate::http::origin::{BaseUrl, ClientAddress, is_https};
use crate::http::page::{html, html_to};
use crate::identity::form::parse_pairs;
use crate::identity::settings::OidcSettings;
use crate::identity::sign_in::page::{escape, page};
use crate::identity::sign_in::{self, Refusal};
use crate::identity::{csrf, events, invitation};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route(CALLBACK_PATH, get(callback))
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
    let Some(settings) = state
        .try_part::<crate::identity::settings::OidcSettings>()
        .cloned()
    else {
        return ApiError::NotFound("no such route".into()).into_response();
    };
    let http = match crate::domain::outbound::http_client() {
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
    let response = csrf::set(
        response,
        STATE_COOKIE,
        COOKIE_PATH,
        &started.state,
        is_https(base),
    );
    match invitation_token {
        Some(token) => csrf::set(
            response,
            INVITATION_COOKIE,
            COOKIE_PATH,
            token,
            is_https(base),
        ),
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
    BaseUrl(base): BaseUrl,
    headers: HeaderMap,
    ClientAddress(address): ClientAddress,
    uri: Uri,
) -> Response {
    let response = finish(&state, &base, &headers, &address, &uri)
        .await
        .unwrap_or_else(ApiError::into_response);
    let response = csrf::clear(response, STATE_COOKIE, COOKIE_PATH);
    csrf::clear(response, INVITATION_COOKIE, COOKIE_PATH)
}

/// The provider's answer checked (state, issuer, code, ID token): what the
/// sign-in was for and the verified claims, or the page that refuses it.
struct Answer {
    purpose: Purpose,
    claims: super::model::Claims,
}

async fn finish(
    state: &AppState,
    base: &str,
    headers: &HeaderMap,
    address: &str,
    uri: &Uri,
) -> Result<Response> {
    let Some(settings) = state
        .try_part::<crate::identity::settings::OidcSettings>()
        .cloned()
    else {
        return Err(ApiError::NotFound("no such route".into()));
    };
    let answer = match verify_answer(state, &settings, headers, address, uri, base).await? {
        Ok(answer) => answer,
        Err(page) => return Ok(page),
    };
    match answer.purpose {
        Purpose::Authorize {
            params,
            device_label,
        } => {
            let to_client = ToClient {
                settings: &settings,
                base,
                address,
                params: *params,
                device_label,
            };
            to_client.sign_in(state, answer.claims).await
        }
        Purpose::Invitation => {
            accept_invitation(state, headers, address, answer.claims, &settings).await
        }
    }
}

/// Checks the provider's redirect back: the state this browser was given
/// and still pending, the provider's issuer, its code redeemed for an ID
/// token that verifies. Every refusal is audited.
async fn verify_answer(
    state: &AppState,
    settings: &OidcSettings,
    headers: &HeaderMap,
    address: &str,
    uri: &Uri,
    base: &str,
) -> Result<std::result::Result<Answer, Response>> {
    let query: CallbackQuery =
        parse_pairs(uri.query().unwrap_or("").as_bytes()).unwrap_or_default();
    let record = |failure: Failure, via: &'static str| {
        let address = address.to_string();
        async move {
            state
                .db
                .write(move |tx| super::record_failure(tx, None, failure, &address, via))
                .await
        }
    };
    let cookie = csrf::from_cookie(headers, STATE_COOKIE);
    if !csrf::matches(cookie.as_deref(), query.state.as_deref()) {
        record(Failure::Expired, "unknown").await?;
        return Ok(Err(failure_page(settings, Failure::Expired, None)));
    }
    let digest = super::digest(query.state.as_deref().unwrap_or(""));
    let pending = state
        .db
        .write(move |tx| super::store::take_pending(tx, &digest))
        .await?;
    let Some(pending) = pending.filter(|p| p.expires_at > crate::domain::Timestamp::now()) else {
        record(Failure::Expired, "unknown").await?;
        return Ok(Err(failure_page(settings, Failure::Expired, None)));
    };
    let purpose: Purpose = serde_json::from_str(&pending.purpose).map_err(ApiError::internal)?;
    let via = via(&purpose);
    let back = match &purpose {
        Purpose::Authorize { params, .. } => Some(format!(
            "{}{}?{}",
            crate::identity::paths::API_BASE,
            crate::identity::oauth::routes::AUTHORIZE_PATH,
            serde_urlencoded::to_string(params.pairs()).unwrap_or_default()
        )),
        Purpose::Invitation => None,
    };
    let refuse = |failure: Failure| async move {
        record(failure, via).await?;
        Ok(Err(failure_page(settings, failure, back.as_deref())))
    };
    // RFC 9207: a provider that names itself must name the configured one.
    if query
        .iss
        .as_deref()
        .is_some_and(|iss| iss != settings.issuer)
    {
        return refuse(Failure::Invalid(super::jwt::Invalid::Issuer)).await;
    }
    let code = match (&query.error, &query.code) {
        (None, Some(code)) if !code.is_empty() => code.clone(),
        _ => return refuse(Failure::Cancelled).await,
    };
    let http = crate::domain::outbound::http_client()?;
    match super::redeem(&http, settings, base, &code, &pending).await {
        Ok(claims) => Ok(Ok(Answer { purpose, claims })),
        Err(failure) => refuse(failure).await,
    }
}

/// A delegated sign-in that finishes an authorization request of ours.
struct ToClient<'a> {
    settings: &'a OidcSettings,
    base: &'a str,
    address: &'a str,
    params: sign_in::model::AuthorizeParams,
    device_label: String,
}

/// Where a verified identity goes next.
enum Onward {
    /// Back to the client with a code.
    Done(String),
    /// The account's own second factor, which the provider did not check.
    SecondStep(String),
    /// No account: the page that offers to link the identity.
    Link {
        failure: Failure,
        token: String,
        label: String,
    },
}

impl ToClient<'_> {
    async fn sign_in(&self, state: &AppState, claims: super::model::Claims) -> Result<Response> {
        let request = match sign_in::validate(
            state.part::<crate::identity::settings::OAuthSettings>(),
            self.base,
            &self.params,
        ) {
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
        let (address, issuer, label) = (
            self.address.to_string(),
            self.base.to_string(),
            self.device_label.clone(),
        );
        let (settings, mail_on) = (self.settings.clone(), crate::mail::configured(state));
        let onward = state
            .db
            .write(move |tx| {
                let failure = match super::match_account(tx, &claims)? {
                    Ok(Matched::Account {
                        account_id,
                        email,
                        linked,
                    }) => {
                        if super::needs_second_factor(tx, &settings, &claims, account_id)? {
                            let pending = sign_in::begin_second_step(tx, account_id)?
                                .ok_or_else(|| ApiError::internal("the second factor is gone"))?;
                            return Ok(Onward::SecondStep(pending));
                        }
                        if !linked {
                            let link = super::NewLink {
                                issuer: &claims.iss,
                                subject: &claims.sub,
                                label: &claims.label(),
                                via: "email",
                            };
                            super::link_identity(tx, &link, account_id, &address, mail_on)?;
                        }
                        let url = sign_in::complete(
                            tx, &request, &issuer, account_id, &email, &label, &address, "oidc",
                        )?;
                        return Ok(Onward::Done(url));
                    }
                    Ok(Matched::Unknown { .. }) => Failure::NoAccount,
                    Err(failure) => failure,
                };
                // No account, or an email the provider did not verify.
                super::record_failure(tx, None, failure, &address, "sign_in")?;
                let token = super::offer_link(tx, &claims)?;
                Ok(Onward::Link {
                    failure,
                    token,
                    label: claims.label(),
                })
            })
            .await?;
        Ok(match onward {
            Onward::Done(url) => redirect(&url),
            Onward::SecondStep(pending) => self.second_step_page(&pending),
            Onward::Link {
                failure,
                token,
                label,
            } => self.link_page(failure, &token, &label),
        })
    }

    /// The account's second step, on the sign-in page's own form.
    fn second_step_page(&self, pending: &str) -> Response {
        let csrf = csrf::generate();
        let body = sign_in::page::second_step_form(&self.params, &csrf, pending, None);
        let targets: Vec<&str> = self.params.redirect_uri.as_deref().into_iter().collect();
        let response = html_to(StatusCode::OK, body, &targets);
        let path = sign_in::page::COOKIE_PATH;
        csrf::set(
            response,
            sign_in::page::CSRF_COOKIE,
            path,
            &csrf,
            is_https(self.base),
        )
    }

    /// The refusal of an identity no account matched, with the password
    /// form that offers to link it. The link token is bound to this browser
    /// (a cookie beside the form's field), and linking needs the account's
    /// password, its second factor and an explicit "yes" after them.
    fn link_page(&self, failure: Failure, token: &str, label: &str) -> Response {
        let mut params = self.params.clone();
        params.link_token = Some(token.to_string());
        let csrf = csrf::generate();
        let form = sign_in::page::password_body(&params, &csrf, "", None, None);
        let provider = escape(&self.settings.name);
        let body = format!(
            "<p>Link the identity <strong>{}</strong> at {provider} to your Pillbox account? If you have an account and this identity is yours, sign in with your Pillbox password to link it; you will be asked to confirm. From then on {provider} is enough.</p>\n{form}",
            escape(label),
        );
        let text = page(
            &format!("Sign-in with {} did not work", self.settings.name),
            Some(&failure.message(&self.settings.name)),
            &body,
        );
        let targets: Vec<&str> = params.redirect_uri.as_deref().into_iter().collect();
        let response = html_to(failure.status(), text, &targets);
        let path = sign_in::page::COOKIE_PATH;
        let response = csrf::set(
            response,
            sign_in::page::CSRF_COOKIE,
            path,
            &csrf,
            is_https(self.base),
        );
        csrf::set(
            response,
            super::LINK_COOKIE,
            path,
            token,
            is_https(self.base),
        )
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
    let (oidc, mail_on) = (settings.clone(), crate::mail::configured(state));
    let signed_in = state
        .db
        .write(move |tx| sign_in_invitee(tx, &claims, &oidc, &address, &invited, mail_on))
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

/// The account the invitee signs in as: the one the provider's identity
/// matches, or a new one for the invited, verified email; recorded as a
/// sign-in, or as a failure the page then explains.
fn sign_in_invitee(
    tx: &WriteTx,
    claims: &super::model::Claims,
    oidc: &OidcSettings,
    address: &str,
    invited: &str,
    mail_on: bool,
) -> Result<std::result::Result<(i64, String), Failure>> {
    let label = claims.label();
    let mut link = super::NewLink {
        issuer: &claims.iss,
        subject: &claims.sub,
        label: &label,
        via: "email",
    };
    let (account_id, email) = match super::match_account(tx, claims)? {
        Ok(Matched::Account { account_id, .. })
            if super::needs_second_factor(tx, oidc, claims, account_id)? =>
        {
            let failure = Failure::SecondFactorRequired;
            super::record_failure(tx, Some(account_id), failure, address, "invitation")?;
            return Ok(Err(failure));
        }
        Ok(Matched::Account {
            account_id,
            email,
            linked,
        }) => {
            if !linked {
                super::link_identity(tx, &link, account_id, address, mail_on)?;
            }
            (account_id, email)
        }
        Ok(Matched::Unknown {
            verified_email: Some(email),
        }) if email.eq_ignore_ascii_case(invited) => {
            let account_id = crate::auth::accounts::create(tx, &email, NO_PASSWORD, None)?;
            link.via = "invitation";
            super::link_identity(tx, &link, account_id, address, mail_on)?;
            events::record(
                tx,
                Some(account_id),
                "account.created",
                address,
                json!({"via": "oidc"}),
            )?;
            (account_id, email)
        }
        other => {
            let failure = match other {
                Err(failure) => failure,
                Ok(_) => Failure::NoAccount,
            };
            super::record_failure(tx, None, failure, address, "invitation")?;
            return Ok(Err(failure));
        }
    };
    sign_in::succeeded(
        tx,
        account_id,
        &email,
        address,
        json!({"step": "oidc", "via": "invitation"}),
    )?;
    Ok(Ok((account_id, email)))
}
