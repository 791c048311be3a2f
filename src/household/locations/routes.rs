//! Location handlers: parse, call the rule, shape the response.

use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, patch, post, put};

use super::model::{Location, LocationBody};
use crate::auth::Actor;
use crate::domain::IfMatch;
use crate::error::Result;
use crate::http::extract::{ApiJson, PathId};
use crate::http::openapi::{Api, Op};
use crate::http::query::{Paged, Since};
use crate::http::replace::{ReplaceJson, Whole};
use crate::http::respond;
use crate::state::AppState;

pub const TAG: &str = "Locations";
const COLLECTION: &str = "/households/{household_id}/locations";
pub const MEMBER: &str = "/households/{household_id}/locations/{id}";

/// Locations, then their memberships.
pub fn routes(api: Api) -> Api {
    let api = api
        .route(
            Op::get(COLLECTION, "listLocations", TAG)
                .summary("List the household's locations")
                .description("Any active member may list locations. Deleted locations are not listed.")
                .paginated()
                .query_params::<Since>()
                .page::<Location>(),
            get(list),
        )
        .route(
            Op::post(COLLECTION, "createLocation", TAG)
                .summary("Add a location")
                .description("Only household owners, administrators and members with the location-management permission may create locations.")
                .create_body::<LocationBody>("LocationCreateRequest", &["name"])
                .created::<Location>()
                .etag(),
            post(create),
        )
        .route(
            Op::get(MEMBER, "getLocation", TAG)
                .summary("Get a location")
                .description("Any active member may read a location. `{id}` is its numeric or portable id.")
                .ok::<Location>()
                .etag(),
            get(show),
        )
        .route(
            Op::patch(MEMBER, "updateLocation", TAG)
                .summary("Update a location")
                .description("Changes any subset of the attributes. Only household owners, administrators and members with the location-management permission may update locations. The current ETag is required in If-Match: missing returns 428, stale returns 409.")
                .body::<LocationBody>()
                .if_match_required()
                .ok::<Location>()
                .etag(),
            patch(update),
        )
        .route(
            Op::put(MEMBER, "replaceLocation", TAG)
                .summary("Replace a location")
                .description("Replaces the attributes: name and description are both required (description may be null); a missing one is a 422 naming it. Only household owners, administrators and members with the location-management permission may replace locations. The current ETag is required in If-Match: missing returns 428, stale returns 409.")
                .create_body::<LocationBody>("LocationReplaceRequest", LocationBody::FIELDS)
                .if_match_required()
                .ok::<Location>()
                .etag(),
            put(replace),
        );

    super::membership_routes::routes(api)
}

async fn list(
    State(state): State<AppState>,
    actor: Actor,
    Paged(page, since): Paged<Since>,
) -> Result<Response> {
    let since = since.at();
    let (locations, total) = state
        .db
        .read(move |conn| super::list(conn, &actor, since.as_deref(), page))
        .await?;
    Ok(respond::collection(locations, page, total))
}

async fn create(
    State(state): State<AppState>,
    actor: Actor,
    ApiJson(body): ApiJson<LocationBody>,
) -> Result<Response> {
    let location = state
        .db
        .write(move |conn| super::create(conn, &actor, body.location))
        .await?;
    Ok(respond::created_tagged(location))
}

async fn show(State(state): State<AppState>, actor: Actor, PathId(id): PathId) -> Result<Response> {
    let location = state.db.read_here(|conn| super::get(conn, &actor, &id))?;
    Ok(respond::ok_tagged(location))
}

async fn update(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    ApiJson(body): ApiJson<LocationBody>,
) -> Result<Response> {
    let location = state
        .db
        .write(move |conn| super::update(conn, &actor, &id, &if_match, body.location))
        .await?;
    Ok(respond::ok_tagged(location))
}

async fn replace(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    ReplaceJson(body): ReplaceJson<LocationBody>,
) -> Result<Response> {
    let location = state
        .db
        .write(move |conn| super::replace(conn, &actor, &id, &if_match, body.location))
        .await?;
    Ok(respond::ok_tagged(location))
}
