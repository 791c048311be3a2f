//! Deleting a location, which medications name. The household's rule
//! removes the location; then each live medication kept there moves to a
//! new version with a change-feed entry, so a feed-following client sees its
//! location go. The operation spans both areas, so it lives with the higher
//! one, and REST and batches share it.

use axum::extract::State;
use axum::response::Response;
use axum::routing::delete as delete_route;

use crate::auth::Actor;
use crate::db::WriteTx;
use crate::domain::{IfMatch, ResourceId};
use crate::error::Result;
use crate::household::locations::{self, routes::MEMBER, routes::TAG};
use crate::http::extract::PathId;
use crate::http::openapi::{Api, Op};
use crate::http::respond;
use crate::state::AppState;

/// `deleteLocation`.
pub fn delete(conn: &WriteTx, actor: &Actor, id: &ResourceId, if_match: &IfMatch) -> Result<()> {
    let location_id = locations::delete(conn, actor, id, if_match)?;
    super::medications::location_deleted(conn, actor, location_id)
}

pub fn routes(api: Api) -> Api {
    api.route(
            Op::delete(MEMBER, "deleteLocation", TAG)
            .summary("Delete a location")
            .description("Removes the location from lists and from people's locations; recorded administrations and saved dose decisions that name it are kept. Only household owners, administrators and members with the location-management permission may delete locations. The current ETag is required in If-Match: missing returns 428, stale returns 409.")
            .if_match_required()
            .no_content(),
        delete_route(remove),
    )
}

async fn remove(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
) -> Result<Response> {
    state
        .db
        .write(move |conn| delete(conn, &actor, &id, &if_match))
        .await?;
    Ok(respond::no_content())
}
