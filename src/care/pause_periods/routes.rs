//! Pause period handlers: parse, call the rule (under the request's
//! Idempotency-Key), shape the response.

use axum::extract::{RawPathParams, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::SourceFilter;
use super::model::{EmptyBody, PausePeriod, PausePeriodBody, SourceType};
use crate::auth::Actor;
use crate::db::idempotency::SavedResponse;
use crate::domain::IfMatch;
use crate::domain::body::typed;
use crate::error::{ApiError, FieldErrors, Result};
use crate::http::extract::{ApiJson, OptionalApiJson, path_param};
use crate::http::openapi::{Api, Op};
use crate::http::query::{Checked, OneOf, Paged, PortableRef};
use crate::http::replay::Idempotent;
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Pause periods";
const COLLECTION: &str = "/households/{household_id}/medication_pause_periods";
const RESUME: &str = "/households/{household_id}/medication_pause_periods/{portable_id}/resume";

pub fn routes(api: Api) -> Api {
    api.route(
            Op::get(COLLECTION, "listMedicationPausePeriods", TAG)
                .summary("List pause periods of the people you may view")
                .description("Current and completed periods, newest first (by start, then creation). source_type and source_id (the source's portable id) must be given together to get one source's history; the history of deleted (retired) sources stays visible to those with view access to the person.")
                .paginated()
                .query_params::<ListQuery>()
                .page::<PausePeriod>(),
            get(list),
        )
        .route(
            Op::post(COLLECTION, "createMedicationPausePeriod", TAG)
                .summary("Pause a schedule or direct assignment")
                .description("Opens a pause period on a live schedule or direct assignment with a required reason (one of the capability document's medication_pause_periods.supported) and an optional note. The server sets the start time and the actor; periods cannot be backdated. The source stops (active false) until the period is resumed. Needs manage access to the source's person (view and record access get 403, a source outside the caller's scope or deleted 404). A source that already has an open period gets 409 pause_period_open.")
                .body::<PausePeriodBody>()
                .idempotency_key()
                .created::<PausePeriod>()
                .etag(),
            post(create),
        )
        .route(
            Op::post(RESUME, "resumeMedicationPausePeriod", TAG)
                .summary("Resume: close a pause period")
                .description("Closes the addressed period (the server sets the end time and the actor) and makes its source active again. Only the addressed period closes: if it has already ended the answer is 409 pause_period_closed and nothing changes, so a retry aimed at an older, completed period never closes a newer pause. No attributes (send {} or no body). Needs manage access to the source's person; a deleted source cannot be resumed (404). If-Match is optional; a stale one returns 409.")
                .body_optional::<EmptyBody>()
                .if_match()
                .idempotency_key()
                .ok::<PausePeriod>()
                .etag(),
            post(resume),
        )
}

/// The filters of a list of pause periods: both or neither, every problem
/// reported at once.
#[derive(Deserialize, JsonSchema)]
struct ListQuery {
    /// Only periods of this kind of source; needs source_id
    source_type: Option<Checked<OneOf<SourceType>>>,
    /// Only periods of this source (portable id); needs source_type
    source_id: Option<Checked<PortableRef>>,
}

/// `source_type` and `source_id` from the query, both or neither.
fn source_filter(query: ListQuery) -> Result<Option<SourceFilter>> {
    let mut errors = FieldErrors::new();
    let mut problem = |field: &str, message: &str| {
        errors.insert(field.to_string(), vec![message.to_string()]);
    };
    match (&query.source_type, &query.source_id) {
        (Some(_), None) => problem("source_id", "is required together with source_type"),
        (None, Some(_)) => problem("source_type", "is required together with source_id"),
        _ => {}
    }
    let parsed_type = query
        .source_type
        .and_then(|t| t.or_report(|m| problem("source_type", m)));
    let parsed_id = query
        .source_id
        .and_then(|id| id.or_report(|m| problem("source_id", m)));
    if !errors.is_empty() {
        return Err(ApiError::Validation {
            message: "source_type and source_id must be given together and be valid".into(),
            errors,
        });
    }
    Ok(parsed_type
        .zip(parsed_id)
        .map(|(OneOf(source_type), PortableRef(id))| SourceFilter {
            source_type,
            source_portable_id: id,
        }))
}

async fn list(
    State(state): State<AppState>,
    actor: Actor,
    Paged(page, query): Paged<ListQuery>,
) -> Result<Response> {
    let filter = source_filter(query)?;
    let (items, total) = state
        .db
        .read(move |conn| super::list(conn, &actor, filter.as_ref(), page))
        .await?;
    Ok(respond::collection(items, page, total))
}

async fn create(
    State(state): State<AppState>,
    actor: Actor,
    request: Idempotent,
    ApiJson(body): ApiJson<Value>,
) -> Result<Response> {
    let attrs = typed::<PausePeriodBody>(Some(&body))?.medication_pause_period;
    request
        .write(
            &state.db,
            (actor, attrs),
            Some(&body),
            |conn, actor, attrs, _| super::authorize_create(conn, actor, attrs).map(drop),
            |conn, actor, attrs| {
                let period = super::create(conn, actor, attrs)?;
                SavedResponse::tagged(StatusCode::CREATED, &period)
            },
        )
        .await
}

async fn resume(
    State(state): State<AppState>,
    actor: Actor,
    params: RawPathParams,
    request: Idempotent,
    if_match: IfMatch,
    OptionalApiJson(body): OptionalApiJson<Value>,
) -> Result<Response> {
    let portable_id =
        path_param(&params, "portable_id").ok_or_else(|| ApiError::not_found("pause period"))?;
    typed::<EmptyBody>(body.as_ref())?;
    request
        .write(
            &state.db,
            (actor, portable_id),
            body.as_ref(),
            |conn, actor, id, _| super::authorize_resume(conn, actor, id).map(drop),
            move |conn, actor, id| {
                let period = super::resume(conn, actor, id, &if_match)?;
                SavedResponse::tagged(StatusCode::OK, &period)
            },
        )
        .await
}
