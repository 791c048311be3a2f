//! Account-level operations: what the credential itself may reach.

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;

use super::model::{Authenticated, HouseholdSummary};
use super::store;
use crate::error::Result;
use crate::http::openapi::{Api, Op};
use crate::http::query::Paged;
use crate::http::respond;
use crate::state::AppState;

pub fn routes(api: Api) -> Api {
    api.route(
        Op::get("/auth/households", "listHouseholds", "Households")
            .summary("Households the credential is currently authorised for")
            .paginated()
            .page::<HouseholdSummary>(),
        get(list),
    )
}

async fn list(
    State(state): State<AppState>,
    auth: Authenticated,
    Paged(page, _): Paged,
) -> Result<Response> {
    let (items, total) = state
        .db
        .read(move |conn| store::households(conn, &auth, page))
        .await?;
    Ok(respond::collection(items, page, total))
}
