//! Notification preference handlers: parse, call the rule, shape the response.

use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, patch, put};

use super::model::{NotificationPreference, NotificationPreferenceBody};
use crate::auth::Actor;
use crate::domain::IfMatch;
use crate::error::Result;
use crate::http::extract::ApiJson;
use crate::http::openapi::{Api, Op};
use crate::http::replace::{ReplaceJson, Whole};
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Notification preferences";
const PATH: &str = "/households/{household_id}/notification_preference";

pub fn routes(api: Api) -> Api {
    api
        .route(
            Op::get(PATH, "getNotificationPreference", TAG)
                .summary("Get your notification preferences")
                .description("The preferences of the person linked to the caller's membership (404 when the membership has no linked person). Before they are first saved the defaults are returned (enabled, dose_due_enabled, missed_dose_enabled and low_stock_enabled true, private_text_enabled false, slots 08:00:00, 13:00:00, 18:00:00 and 22:00:00) with id, portable_id and updated_at null and no ETag; reading never saves anything.")
                .ok::<NotificationPreference>()
                .etag(),
            get(show),
        )
        .route(
            Op::patch(PATH, "updateNotificationPreference", TAG)
                .summary("Update your notification preferences")
                .description("Changes any subset of the flags and slot times of the person linked to the caller's membership; the first write saves the defaults with the changes. Times are HH:MM or HH:MM:SS and are answered as HH:MM:SS; null clears a slot, except one that a live schedule (not deleted, not prn, not ended before today) uses: that is 409 slot_time_in_use naming those schedules and nothing changes. A changed slot time moves only the slot doses scheduled after the change: earlier doses (the rest of today's before now included) keep their times, positions and outcomes. Needs manage access to that person. If-Match is optional; a stale one returns 409.")
                .body::<NotificationPreferenceBody>()
                .if_match()
                .ok::<NotificationPreference>()
                .etag(),
            patch(update),
        )
        .route(
            Op::put(PATH, "replaceNotificationPreference", TAG)
                .summary("Replace your notification preferences")
                .description("Replaces the preferences of the person linked to the caller's membership: all five flags and all four slot times are required (a slot time may be null); a missing one is a 422 naming it. Clearing a slot time that a live schedule uses is a 409 slot_time_in_use naming the schedules. A changed slot time moves only the slot doses scheduled after the change. Times are HH:MM or HH:MM:SS and are answered as HH:MM:SS. Needs manage access to that person. If-Match is optional; a stale one returns 409.")
                .create_body::<NotificationPreferenceBody>("NotificationPreferenceReplaceRequest", NotificationPreferenceBody::FIELDS)
                .if_match()
                .ok::<NotificationPreference>()
                .etag(),
            put(replace),
        )
}

/// With an ETag once saved; the unsaved defaults have no version.
fn answer(preference: NotificationPreference) -> Response {
    if preference.persisted() {
        respond::ok_tagged(preference)
    } else {
        respond::ok(preference)
    }
}

async fn show(State(state): State<AppState>, actor: Actor) -> Result<Response> {
    let preference = state.db.read(move |conn| super::get(conn, &actor)).await?;
    Ok(answer(preference))
}

async fn update(
    State(state): State<AppState>,
    actor: Actor,
    if_match: IfMatch,
    ApiJson(body): ApiJson<NotificationPreferenceBody>,
) -> Result<Response> {
    let preference = state
        .db
        .write(move |conn| super::update(conn, &actor, &if_match, body.notification_preference))
        .await?;
    Ok(answer(preference))
}

async fn replace(
    State(state): State<AppState>,
    actor: Actor,
    if_match: IfMatch,
    ReplaceJson(body): ReplaceJson<NotificationPreferenceBody>,
) -> Result<Response> {
    let preference = state
        .db
        .write(move |conn| super::replace(conn, &actor, &if_match, body.notification_preference))
        .await?;
    Ok(answer(preference))
}
