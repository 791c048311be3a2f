//! Audit log handlers.

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;

use super::model::AuditEvent;
use crate::auth::Actor;
use crate::error::Result;
use crate::http::openapi::{Api, Op};
use crate::http::query::Paged;
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Audit logs";
const COLLECTION: &str = "/households/{household_id}/admin/audit_logs";

pub fn routes(api: Api) -> Api {
    api.route(
        Op::get(COLLECTION, "listAuditLogs", TAG)
            .summary("List the household's security audit events, newest first")
            .paginated()
            .page::<AuditEvent>(),
        get(list),
    )
}

async fn list(
    State(state): State<AppState>,
    actor: Actor,
    Paged(page, _): Paged,
) -> Result<Response> {
    let (events, total) = state
        .db
        .read(move |conn| super::list(conn, &actor, page))
        .await?;
    Ok(respond::collection(events, page, total))
}
