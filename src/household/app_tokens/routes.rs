//! App token handlers.

use axum::extract::State;
use axum::response::Response;
use axum::routing::{delete, get, post};

use super::model::{AppToken, AppTokenBody, CreatedAppToken};
use crate::auth::Actor;
use crate::error::Result;
use crate::http::extract::{ApiJson, PathNumericId};
use crate::http::openapi::{Api, Op};
use crate::http::query::Paged;
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "App tokens";
const COLLECTION: &str = "/households/{household_id}/admin/app_tokens";
const MEMBER: &str = "/households/{household_id}/admin/app_tokens/{id}";

pub fn routes(api: Api) -> Api {
    api
        .route(
            Op::get(COLLECTION, "listAppTokens", TAG)
                .summary("List the household's live app tokens")
                .paginated()
                .page::<AppToken>(),
            get(list),
        )
        .route(
            Op::post(COLLECTION, "createAppToken", TAG)
                .summary("Create an app token; the secret is returned once")
                .description("A token always acts as the caller's own membership: naming another membership is 403. The audit log names the member who acted.")
                .body::<AppTokenBody>()
                .created::<CreatedAppToken>(),
            post(create),
        )
        .route_numeric(
            Op::delete(MEMBER, "deleteAppToken", TAG)
                .summary("Revoke an app token at once")
                .description("An owner revokes anyone's token; an administrator revokes members' and administrators' tokens, never an owner's (403).")
                .no_content(),
            delete(revoke),
        )
}

async fn list(
    State(state): State<AppState>,
    actor: Actor,
    Paged(page, _): Paged,
) -> Result<Response> {
    let (tokens, total) = state
        .db
        .read(move |conn| super::list(conn, &actor, page))
        .await?;
    Ok(respond::collection(tokens, page, total))
}

async fn create(
    State(state): State<AppState>,
    actor: Actor,
    ApiJson(body): ApiJson<AppTokenBody>,
) -> Result<Response> {
    let created = state
        .db
        .write(move |conn| super::create(conn, &actor, body.api_app_token))
        .await?;
    Ok(respond::created(created))
}

async fn revoke(
    State(state): State<AppState>,
    actor: Actor,
    PathNumericId(id): PathNumericId,
) -> Result<Response> {
    state
        .db
        .write(move |conn| super::revoke(conn, &actor, id))
        .await?;
    Ok(respond::no_content())
}
