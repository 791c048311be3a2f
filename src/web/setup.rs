//! First run in the browser: while the data directory has no household,
//! `pillbox serve` offers a one-time set-up link. Whoever holds it creates
//! the household, its owner and the owner's person through the same rule
//! as `pillbox setup` (`household::set_up`). The token lives only in memory
//! (as a digest) and in the one start-up log line that shows it, so a
//! restart or a use kills the link, and nobody else on the network can
//! claim the server.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;

use crate::auth::{Role, password};
use crate::db::Db;
use crate::db::instance::PUBLIC_URL;
use crate::error::ApiError;
use crate::household::{self, NewMember};
use crate::http::origin::{BaseUrl, ClientAddress};
use crate::identity::settings::OAuthSettings;
use crate::identity::sign_in::model::AuthorizeParams;
use crate::identity::sign_in::page::escape;
use crate::identity::sign_in::{self, Authorization};
use crate::state::AppState;
use crate::web::assets::versioned_prefix;
use crate::web::paths::APP_PATH;
pub use crate::web::setup_link::SetupLink;

pub const SETUP_PATH: &str = "/setup";

const PAGE: &str = include_str!("setup.html");
const FORM: &str = include_str!("setup_form.html");
const ADDRESS: &str = include_str!("setup_address.html");

/// At start: when the data directory has no household, a fresh link for
/// the log line; otherwise none.
pub async fn offer(db: &Db, link: &SetupLink, base: &str) -> crate::error::Result<Option<String>> {
    let empty = db
        .read(|conn| Ok(household::store::list_all(conn)?.is_empty()))
        .await?;
    Ok(empty.then(|| format!("{base}{SETUP_PATH}?token={}", link.issue())))
}

pub fn router() -> Router<AppState> {
    Router::new().route(SETUP_PATH, get(show).post(submit))
}

#[derive(Deserialize)]
struct TokenQuery {
    token: Option<String>,
}

#[derive(Deserialize, Default)]
struct SetupForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    household: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    password_again: String,
    #[serde(default)]
    time_zone: String,
    /// Where phones and other computers open Pillbox; empty: links follow
    /// the address each request reached.
    #[serde(default)]
    public_url: String,
    /// The web app's sign-in request, added by the page's script, so that
    /// the owner comes out signed in; without it they sign in at `/app`.
    #[serde(flatten)]
    sign_in: AuthorizeParams,
}

async fn show(
    State(state): State<AppState>,
    BaseUrl(base): BaseUrl,
    Query(query): Query<TokenQuery>,
) -> Response {
    match query.token {
        Some(token)
            if state
                .part::<crate::web::setup_link::SetupLink>()
                .matches(&token) =>
        {
            let form = SetupForm {
                token,
                time_zone: crate::domain::time_zone::system_time_zone(),
                public_url: base,
                ..SetupForm::default()
            };
            page(StatusCode::OK, &form_html(&state, &form, None, true))
        }
        _ => dead_link(),
    }
}

async fn submit(
    State(state): State<AppState>,
    BaseUrl(base): BaseUrl,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form: SetupForm = match crate::identity::parse_form(&headers, &body) {
        Ok(form) => form,
        Err(message) => return page(StatusCode::BAD_REQUEST, &paragraph(&message)),
    };
    if !state
        .part::<crate::web::setup_link::SetupLink>()
        .matches(&form.token)
    {
        return dead_link();
    }
    let public_url = match check(&state, &form) {
        Ok(public_url) => public_url,
        Err(message) => return refill(&state, &form, &message),
    };
    let secret = form.password.clone();
    let hashed = match tokio::task::spawn_blocking(move || password::hash(&secret)).await {
        Ok(Ok(hash)) => hash,
        _ => return ApiError::internal("cannot hash the password").into_response(),
    };
    // Checked against the address this page was opened at, before a new
    // public URL is kept: the browser returns to where it is.
    let sign_in = SignIn::of(&state, &base, &form, &headers, address);
    let created = create(&state, &form, hashed, public_url.clone(), sign_in).await;
    match created {
        Ok((household_id, next)) => {
            state.part::<crate::web::setup_link::SetupLink>().spend();
            if let Some(url) = public_url {
                state.settings.public_url.remember(url);
            }
            tracing::info!(
                household_id,
                "household created from the set-up link; the link is spent"
            );
            let mut response = StatusCode::SEE_OTHER.into_response();
            if let Ok(location) = HeaderValue::from_str(&next) {
                response.headers_mut().insert(header::LOCATION, location);
            }
            response
        }
        Err(ApiError::Conflict { .. }) => {
            state.part::<crate::web::setup_link::SetupLink>().spend();
            dead_link()
        }
        Err(ApiError::Validation { message, .. }) => refill(&state, &form, &message),
        Err(e) => e.into_response(),
    }
}

/// The web app's sign-in, to be completed for the new owner in the same
/// write as the household.
struct SignIn {
    request: Authorization,
    issuer: String,
    device_label: String,
    address: String,
}

impl SignIn {
    /// `None` when the page's script did not run or asked for something the
    /// sign-in page would refuse too: the owner then signs in at `/app`.
    fn of(
        state: &AppState,
        base: &str,
        form: &SetupForm,
        headers: &HeaderMap,
        address: String,
    ) -> Option<SignIn> {
        let params = AuthorizeParams {
            link_token: None,
            ..form.sign_in.clone()
        };
        let request = sign_in::validate(state.part::<OAuthSettings>(), base, &params).ok()?;
        let user_agent = headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok());
        Some(SignIn {
            request,
            issuer: base.to_string(),
            device_label: sign_in::device_label(params.device_label.as_deref(), user_agent),
            address,
        })
    }
}

/// The household, its owner, the public URL and the owner's sign-in, all
/// or nothing; answers the household and where the browser goes next.
async fn create(
    state: &AppState,
    form: &SetupForm,
    hashed: String,
    public_url: Option<String>,
    sign_in: Option<SignIn>,
) -> crate::error::Result<(i64, String)> {
    let (household_name, time_zone) = (form.household.clone(), form.time_zone.clone());
    let (email, person_name) = (form.email.trim().to_string(), form.name.clone());
    state
        .db
        .write(move |tx| {
            // The same guard as `pillbox setup`: a link never adds a second household.
            if !household::store::list_all(tx)?.is_empty() {
                return Err(ApiError::conflict(
                    "household_exists",
                    "this server already has a household",
                ));
            }
            let set_up = household::set_up(
                tx,
                &household_name,
                &time_zone,
                &NewMember {
                    email: &email,
                    password_hash: &hashed,
                    person_name: &person_name,
                    role: Role::Owner,
                },
            )?;
            if let Some(url) = &public_url {
                crate::db::instance::set(tx, PUBLIC_URL, url)?;
            }
            let next = match &sign_in {
                Some(s) => sign_in::complete(
                    tx,
                    &s.request,
                    &s.issuer,
                    set_up.account_id,
                    &email,
                    &s.device_label,
                    &s.address,
                    "set_up",
                )?,
                None => APP_PATH.to_string(),
            };
            Ok((set_up.household_id, next))
        })
        .await
}

fn refill(state: &AppState, form: &SetupForm, message: &str) -> Response {
    page(
        StatusCode::UNPROCESSABLE_ENTITY,
        &form_html(state, form, Some(message), false),
    )
}

/// What the form can get wrong before anything is written (the rule checks
/// the rest: blank names, email shape); answers the public URL to keep.
fn check(state: &AppState, form: &SetupForm) -> Result<Option<String>, String> {
    if form.password != form.password_again {
        return Err("The two passwords differ.".into());
    }
    password::check_policy(&form.password).map_err(|e| sentence(&e))?;
    household::check_time_zone(&form.time_zone)
        .map_err(|_| "The time zone must be an IANA name such as Europe/London.".to_string())?;
    if state.settings.public_url.is_configured() || form.public_url.trim().is_empty() {
        return Ok(None);
    }
    crate::domain::public_url::parse(&form.public_url)
        .map(Some)
        .map_err(sentence)
}

fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => format!("{}{}.", first.to_uppercase(), chars.as_str()),
        None => String::new(),
    }
}

/// The form; `detect` on its first showing, when the page's script may
/// put in the browser's time zone and address.
fn form_html(state: &AppState, form: &SetupForm, error: Option<&str>, detect: bool) -> String {
    let error = error
        .map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>\n", escape(e)))
        .unwrap_or_default();
    let address = match state.settings.public_url.get() {
        Some(url) if state.settings.public_url.is_configured() => format!(
            "<p>Phones and other computers open Pillbox at <strong>{}</strong> (set with --public-url).</p>",
            escape(&url)
        ),
        _ => ADDRESS.replace("{{public_url}}", &escape(&form.public_url)),
    };
    FORM.replace("{{error}}", &error)
        .replace("{{detect}}", if detect { " data-detect" } else { "" })
        .replace("{{token}}", &escape(&form.token))
        .replace("{{household}}", &escape(&form.household))
        .replace("{{name}}", &escape(&form.name))
        .replace("{{email}}", &escape(&form.email))
        .replace("{{time_zone}}", &escape(&form.time_zone))
        .replace("{{address}}", &address)
}

fn paragraph(text: &str) -> String {
    format!("<p>{}</p>", escape(text))
}

/// Unknown, spent and restarted-away tokens look the same.
fn dead_link() -> Response {
    page(
        StatusCode::NOT_FOUND,
        "<p>This set-up link is not valid. It works once, until the server restarts; a server that is already set up has none. <a href=\"/app\">Open Pillbox</a></p>",
    )
}

fn page(status: StatusCode, body: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        PAGE.replace("{{body}}", body)
            .replace("{{v}}", &versioned_prefix()),
    )
        .into_response()
}
