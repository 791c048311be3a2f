//! Handlers schedules and direct assignments share: get, delete and the
//! deprecated pause and resume, each generic over the kind of source.

use axum::extract::State;
use axum::response::Response;
use serde::Serialize;

use crate::auth::Actor;
use crate::care::pause_periods::model::EmptyBody;
use crate::care::source_row::{Filter, SourceRow};
use crate::care::sources;
use crate::domain::IfMatch;
use crate::error::Result;
use crate::http::extract::{OptionalApiJson, PathId, QueryParams};
use crate::http::respond;
use crate::state::AppState;

pub async fn show<R: SourceRow + Serialize + Send + 'static>(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
) -> Result<Response> {
    let source = state
        .db
        .read(move |conn| sources::get::<R>(conn, &actor, &id))
        .await?;
    Ok(respond::ok_tagged(source))
}

pub async fn remove<R: SourceRow + Send + 'static>(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
) -> Result<Response> {
    state
        .db
        .write(move |conn| sources::delete::<R>(conn, &actor, &id, &if_match))
        .await?;
    Ok(respond::no_content())
}

pub async fn pause<R: SourceRow + Serialize + Send + 'static>(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    OptionalApiJson(_): OptionalApiJson<EmptyBody>,
) -> Result<Response> {
    let source = state
        .db
        .write(move |conn| sources::pause::<R>(conn, &actor, &id, &if_match))
        .await?;
    Ok(respond::ok_tagged(source))
}

pub async fn resume<R: SourceRow + Serialize + Send + 'static>(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    OptionalApiJson(_): OptionalApiJson<EmptyBody>,
) -> Result<Response> {
    let source = state
        .db
        .write(move |conn| sources::resume::<R>(conn, &actor, &id, &if_match))
        .await?;
    Ok(respond::ok_tagged(source))
}

/// A list's `person_id`, `medication_id` and `updated_since` from the query
/// string.
pub fn filter(query: &QueryParams) -> Result<Filter> {
    Ok(Filter {
        person_id: query.reference("person_id")?,
        medication_id: query.reference("medication_id")?,
        updated_since: query.updated_since()?,
    })
}
