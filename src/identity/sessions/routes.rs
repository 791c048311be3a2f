//! Session handlers: the account's signed-in devices and signing out.

use axum::extract::State;
use axum::response::Response;
use axum::routing::{delete, get};

use super::model::Session;
use crate::auth::Authenticated;
use crate::error::Result;
use crate::http::extract::PathNumericId;
use crate::http::openapi::{Api, Op};
use crate::http::origin::ClientAddress;
use crate::http::query::Paged;
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Sessions";

pub fn routes(api: Api) -> Api {
    api.route(
        Op::get("/auth/sessions", "listSessions", TAG)
            .summary("The account's active sign-in sessions (devices), the current one marked")
            .description("Needs a signed-in user's access token; an app token is refused with 403.")
            .paginated()
            .errors(&[403])
            .page::<Session>(),
        get(list),
    )
    .route_numeric(
        Op::delete("/auth/sessions/{id}", "deleteSession", TAG)
            .summary("Sign a device out: revokes that session's access and refresh tokens at once")
            .errors(&[403, 404])
            .no_content(),
        delete(remove),
    )
    .route(
        Op::delete("/auth/logout", "logoutSession", TAG)
            .summary("Sign out: revokes the current session, or the app token that called it")
            .no_content(),
        delete(logout),
    )
}

async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    Paged(page, _): Paged,
) -> Result<Response> {
    let (items, total) = state
        .db
        .read(move |conn| super::list(conn, &auth, page))
        .await?;
    Ok(respond::collection(items, page, total))
}

async fn remove(
    State(state): State<AppState>,
    auth: Authenticated,
    PathNumericId(id): PathNumericId,
    ClientAddress(address): ClientAddress,
) -> Result<Response> {
    state
        .db
        .write(move |tx| super::delete(tx, &auth, id, &address))
        .await?;
    Ok(respond::no_content())
}

async fn logout(
    State(state): State<AppState>,
    auth: Authenticated,
    ClientAddress(address): ClientAddress,
) -> Result<Response> {
    state
        .db
        .write(move |tx| super::logout(tx, &auth, &address))
        .await?;
    Ok(respond::no_content())
}
