//! Household settings handlers.

use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, patch, put};

use super::model::{HouseholdSettings, SettingsBody, SettingsWarning};
use crate::auth::Actor;
use crate::domain::IfMatch;
use crate::error::Result;
use crate::http::extract::ApiJson;
use crate::http::openapi::{Api, Op};
use crate::http::replace::{ReplaceJson, Whole};
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Settings";
const PATH: &str = "/households/{household_id}/admin/settings";

pub fn routes(api: Api) -> Api {
    api.route(
            Op::get(PATH, "getHouseholdAdminSettings", TAG)
                .summary("Get the household's settings")
                .ok::<HouseholdSettings>()
                .etag(),
            get(show),
        )
        .route(
            Op::patch(PATH, "updateHouseholdAdminSettings", TAG)
                .summary("Change some of the household's settings")
                .description("Fields left out keep their values. A changed setting moves the ETag on and is audited. A changed time_zone applies from the moment of the change: expected doses scheduled before it keep the times they had in the old zone, later ones follow the new zone.")
                .body::<SettingsBody>()
                .if_match()
                .ok::<HouseholdSettings>()
                .etag(),
            patch(update),
        )
        .route(
            Op::put(PATH, "replaceHouseholdAdminSettings", TAG)
                .summary("Replace the household's settings")
                .description("Every setting is required; a missing one is a 422 naming it. The time zone is stored and answered as its canonical IANA name.")
                .create_body::<SettingsBody>("HouseholdSettingsReplaceRequest", SettingsBody::FIELDS)
                .if_match()
                .ok::<HouseholdSettings>()
                .etag(),
            put(replace),
        )
}

/// The settings with reminder delivery health, which depends on what this
/// server is configured to deliver through.
fn with_health(
    conn: &rusqlite::Connection,
    mut settings: HouseholdSettings,
    state: &AppState,
) -> Result<HouseholdSettings> {
    let reminders = state.part::<crate::reminders::settings::ReminderSettings>();
    settings.delivery_health = crate::reminders::delivery_health(conn, settings.id, reminders)?;
    settings.warnings = warnings(state);
    Ok(settings)
}

/// What administrators are told about features this server's configuration
/// keeps off.
fn warnings(state: &AppState) -> Vec<SettingsWarning> {
    let mut warnings = Vec::new();
    if state
        .try_part::<crate::lookup::TerminologySettings>()
        .is_none()
    {
        warnings.push(SettingsWarning {
            code: "medication_lookup_unavailable",
            message: crate::lookup::LOOKUP_OFF_WARNING,
        });
    }
    warnings
}

async fn show(State(state): State<AppState>, actor: Actor) -> Result<Response> {
    let reminders = state.clone();
    let settings = state
        .db
        .read(move |conn| with_health(conn, super::get(conn, &actor)?, &reminders))
        .await?;
    Ok(respond::ok_tagged(settings))
}

async fn update(
    State(state): State<AppState>,
    actor: Actor,
    if_match: IfMatch,
    ApiJson(body): ApiJson<SettingsBody>,
) -> Result<Response> {
    let reminders = state.clone();
    let settings = state
        .db
        .write(move |conn| {
            let settings = super::update(conn, &actor, &if_match, body.household)?;
            with_health(conn, settings, &reminders)
        })
        .await?;
    Ok(respond::ok_tagged(settings))
}

async fn replace(
    State(state): State<AppState>,
    actor: Actor,
    if_match: IfMatch,
    ReplaceJson(body): ReplaceJson<SettingsBody>,
) -> Result<Response> {
    let reminders = state.clone();
    let settings = state
        .db
        .write(move |conn| {
            let settings = super::replace(conn, &actor, &if_match, body.household)?;
            with_health(conn, settings, &reminders)
        })
        .await?;
    Ok(respond::ok_tagged(settings))
}
