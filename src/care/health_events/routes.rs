//! Health event handlers: parse, call the rule, shape the response.

use axum::extract::State;
use axum::response::Response;
use axum::routing::{delete, get, patch, post, put};
use schemars::JsonSchema;
use serde::Deserialize;

use super::Filter;
use super::model::{HealthEvent, HealthEventBody};
use crate::auth::Actor;
use crate::domain::IfMatch;
use crate::error::Result;
use crate::http::extract::{ApiJson, PathId};
use crate::http::openapi::{Api, Op};
use crate::http::query::{At, Paged, Reference, at, reference};
use crate::http::replace::{ReplaceJson, Whole};
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Health events";
const COLLECTION: &str = "/households/{household_id}/health_events";
const MEMBER: &str = "/households/{household_id}/health_events/{id}";

const REQUIRED: &[&str] = &["person_id", "event_kind", "title", "started_on"];

pub fn routes(api: Api) -> Api {
    api.route(
            Op::get(COLLECTION, "listHealthEvents", TAG)
                .summary("List health events of the people you may view")
                .description("Newest first (by started_on). Only events of people the caller has view access to are listed; deleted events are not listed.")
                .paginated()
                .query_params::<ListQuery>()
                .page::<HealthEvent>(),
            get(list),
        )
        .route(
            Op::post(COLLECTION, "createHealthEvent", TAG)
                .summary("Record a health event")
                .description("Records an illness or a suspected side effect of a person. Needs record or manage access to the person (a carer who gives medicines may log an illness); a view-only grant gets 403, a person outside the caller's scope 404. medication_ids must name medications of this household; duplicates are ignored.")
                .create_body::<HealthEventBody>("HealthEventCreateRequest", REQUIRED)
                .created::<HealthEvent>()
                .etag(),
            post(create),
        )
        .route(
            Op::get(MEMBER, "getHealthEvent", TAG)
                .summary("Get a health event")
                .description("Needs view access to the event's person (404 otherwise). `{id}` is its numeric or portable id.")
                .ok::<HealthEvent>()
                .etag(),
            get(show),
        )
        .route(
            Op::patch(MEMBER, "updateHealthEvent", TAG)
                .summary("Update a health event")
                .description("Changes any subset of the attributes; person_id, when sent, must name the event's person (an event cannot move to another person). Needs record or manage access to the person. If-Match is optional; a stale one returns 409.")
                .body::<HealthEventBody>()
                .if_match()
                .ok::<HealthEvent>()
                .etag(),
            patch(update),
        )
        .route(
            Op::put(MEMBER, "replaceHealthEvent", TAG)
                .summary("Replace a health event")
                .description("Replaces the attributes: every attribute is required (person_id unchanged; severity, notes and ended_on may be null; an empty medication_ids links none); a missing one is a 422 naming it. Needs record or manage access to the person. If-Match is optional; a stale one returns 409.")
                .create_body::<HealthEventBody>("HealthEventReplaceRequest", HealthEventBody::FIELDS)
                .if_match()
                .ok::<HealthEvent>()
                .etag(),
            put(replace),
        )
        .route(
            Op::delete(MEMBER, "deleteHealthEvent", TAG)
                .summary("Delete a health event")
                .description("Removes the event from reads; the change feed records a tombstone that carries the person reference. Needs record or manage access to the person. If-Match is optional; a stale one returns 409.")
                .if_match()
                .no_content(),
            delete(remove),
        )
}

/// The filters of a list of health events.
#[derive(Deserialize, JsonSchema)]
struct ListQuery {
    /// Only records updated at or after this time
    updated_since: Option<At>,
    /// Only events of this person (numeric or portable id)
    person_id: Option<Reference>,
}

async fn list(
    State(state): State<AppState>,
    actor: Actor,
    Paged(page, query): Paged<ListQuery>,
) -> Result<Response> {
    let filter = Filter {
        person_id: reference(query.person_id),
        updated_since: at(query.updated_since),
    };
    let (events, total) = state
        .db
        .read(move |conn| super::list(conn, &actor, &filter, page))
        .await?;
    Ok(respond::collection(events, page, total))
}

async fn create(
    State(state): State<AppState>,
    actor: Actor,
    ApiJson(body): ApiJson<HealthEventBody>,
) -> Result<Response> {
    let event = state
        .db
        .write(move |conn| super::create(conn, &actor, body.health_event))
        .await?;
    Ok(respond::created_tagged(event))
}

async fn show(State(state): State<AppState>, actor: Actor, PathId(id): PathId) -> Result<Response> {
    let event = state.db.read_here(|conn| super::get(conn, &actor, &id))?;
    Ok(respond::ok_tagged(event))
}

async fn update(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    ApiJson(body): ApiJson<HealthEventBody>,
) -> Result<Response> {
    let event = state
        .db
        .write(move |conn| super::update(conn, &actor, &id, &if_match, body.health_event))
        .await?;
    Ok(respond::ok_tagged(event))
}

async fn replace(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    ReplaceJson(body): ReplaceJson<HealthEventBody>,
) -> Result<Response> {
    let event = state
        .db
        .write(move |conn| super::replace(conn, &actor, &id, &if_match, body.health_event))
        .await?;
    Ok(respond::ok_tagged(event))
}

async fn remove(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
) -> Result<Response> {
    state
        .db
        .write(move |conn| super::delete(conn, &actor, &id, &if_match))
        .await?;
    Ok(respond::no_content())
}
