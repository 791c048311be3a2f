//! Security and stock audit events, listed by the audit-log endpoint.

pub mod model;
pub mod routes;
pub mod store;

use crate::db::WriteTx;
use rusqlite::Connection;
use serde_json::Value;

use crate::auth::Actor;
use crate::domain::Page;
use crate::error::Result;
use model::AuditEvent;

/// Appends one audit event in the caller's transaction. `metadata` never
/// holds secrets or clinical values.
pub fn record(
    conn: &WriteTx,
    household_id: i64,
    actor_membership_id: Option<i64>,
    event_type: &'static str,
    subject: (&'static str, i64),
    metadata: Value,
) -> Result<()> {
    store::insert(
        conn,
        household_id,
        actor_membership_id,
        event_type,
        subject,
        &metadata,
    )
}

/// The household's audit events, newest first.
pub fn list(conn: &Connection, actor: &Actor, page: Page) -> Result<(Vec<AuditEvent>, i64)> {
    actor.require_manager("read the audit log")?;
    store::list(conn, actor.household_id, page)
}
