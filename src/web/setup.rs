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
use crate::error::ApiError;
use crate::household::{self, NewMember};
use crate::identity::sign_in::page::escape;
use crate::state::AppState;
use crate::web::paths::APP_PATH;
pub use crate::web::setup_link::SetupLink;

pub const SETUP_PATH: &str = "/setup";

const PAGE: &str = include_str!("setup.html");
const FORM: &str = include_str!("setup_form.html");

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
}

async fn show(State(state): State<AppState>, Query(query): Query<TokenQuery>) -> Response {
    match query.token {
        Some(token)
            if state
                .part::<crate::web::setup_link::SetupLink>()
                .matches(&token) =>
        {
            let form = SetupForm {
                token,
                time_zone: system_time_zone(),
                ..SetupForm::default()
            };
            page(StatusCode::OK, &form_html(&form, None))
        }
        _ => dead_link(),
    }
}

async fn submit(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
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
    if let Err(message) = check(&form) {
        return page(
            StatusCode::UNPROCESSABLE_ENTITY,
            &form_html(&form, Some(&message)),
        );
    }
    let secret = form.password.clone();
    let hashed = match tokio::task::spawn_blocking(move || password::hash(&secret)).await {
        Ok(Ok(hash)) => hash,
        _ => return ApiError::internal("cannot hash the password").into_response(),
    };
    let (household_name, time_zone) = (form.household.clone(), form.time_zone.clone());
    let (email, person_name) = (form.email.trim().to_string(), form.name.clone());
    let result = state
        .db
        .write(move |tx| {
            // The same guard as `pillbox setup`: a link never adds a second household.
            if !household::store::list_all(tx)?.is_empty() {
                return Err(ApiError::conflict(
                    "household_exists",
                    "this server already has a household",
                ));
            }
            household::set_up(
                tx,
                &household_name,
                &time_zone,
                &NewMember {
                    email: &email,
                    password_hash: &hashed,
                    person_name: &person_name,
                    role: Role::Owner,
                },
            )
        })
        .await;
    match result {
        Ok(set_up) => {
            state.part::<crate::web::setup_link::SetupLink>().spend();
            tracing::info!(
                household_id = set_up.household_id,
                "household created from the set-up link; the link is spent"
            );
            let mut response = StatusCode::SEE_OTHER.into_response();
            response
                .headers_mut()
                .insert(header::LOCATION, HeaderValue::from_static(APP_PATH));
            response
        }
        Err(ApiError::Conflict { .. }) => {
            state.part::<crate::web::setup_link::SetupLink>().spend();
            dead_link()
        }
        Err(ApiError::Validation { message, .. }) => page(
            StatusCode::UNPROCESSABLE_ENTITY,
            &form_html(&form, Some(&message)),
        ),
        Err(e) => e.into_response(),
    }
}

/// What the form can get wrong before anything is written; the rule checks
/// the rest (blank names, email shape) itself.
fn check(form: &SetupForm) -> Result<(), String> {
    if form.password != form.password_again {
        return Err("The two passwords differ.".into());
    }
    password::check_policy(&form.password).map_err(|e| sentence(&e))?;
    household::check_time_zone(&form.time_zone)
        .map_err(|_| "The time zone must be an IANA name such as Europe/London.".to_string())
}

fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => format!("{}{}.", first.to_uppercase(), chars.as_str()),
        None => String::new(),
    }
}

fn form_html(form: &SetupForm, error: Option<&str>) -> String {
    let error = error
        .map(|e| format!("<p class=\"error\" role=\"alert\">{}</p>\n", escape(e)))
        .unwrap_or_default();
    FORM.replace("{{error}}", &error)
        .replace("{{token}}", &escape(&form.token))
        .replace("{{household}}", &escape(&form.household))
        .replace("{{name}}", &escape(&form.name))
        .replace("{{email}}", &escape(&form.email))
        .replace("{{time_zone}}", &escape(&form.time_zone))
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
        PAGE.replace("{{body}}", body),
    )
        .into_response()
}

fn system_time_zone() -> String {
    jiff::tz::TimeZone::try_system()
        .ok()
        .and_then(|tz| tz.iana_name().map(str::to_string))
        .unwrap_or_else(|| "UTC".to_string())
}
