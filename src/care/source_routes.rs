//! Handlers schedules and direct assignments share: list, get, delete and
//! the deprecated pause and resume, each generic over the kind of source.

use axum::extract::State;
use axum::response::Response;
use serde::Serialize;

use crate::auth::Actor;
use crate::care::pause_periods::model::EmptyBody;
use crate::care::source_row::{Filter, SourceRow};
use crate::care::sources;
use crate::domain::IfMatch;
use crate::error::Result;
use crate::http::extract::{OptionalApiJson, PathId};
use crate::http::query::{At, Paged, Reference, at, reference};
use crate::http::respond;
use crate::state::AppState;

/// A kind's list query: the same three filters, documented in the kind's
/// own words.
pub trait ListQuery: serde::de::DeserializeOwned + Send + 'static {
    fn filter(self) -> Filter;
}

pub async fn list<R: SourceRow + Serialize + Send + 'static, Q: ListQuery>(
    State(state): State<AppState>,
    actor: Actor,
    Paged(page, query): Paged<Q>,
) -> Result<Response> {
    let filter = query.filter();
    let (items, total) = state
        .db
        .read(move |conn| sources::list::<R>(conn, &actor, &filter, page))
        .await?;
    Ok(respond::collection(items, page, total))
}

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

/// A list's `updated_since`, `person_id` and `medication_id` as the rules
/// take them.
pub fn filter(
    updated_since: Option<At>,
    person_id: Option<Reference>,
    medication_id: Option<Reference>,
) -> Filter {
    Filter {
        person_id: reference(person_id),
        medication_id: reference(medication_id),
        updated_since: at(updated_since),
    }
}
