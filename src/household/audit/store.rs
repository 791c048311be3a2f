//! SQL for audit events.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use rusqlite::types::Type;
use rusqlite::{Connection, params};
use serde_json::Value;

use super::model::AuditEvent;
use crate::domain::Page;
use crate::error::Result;

pub fn insert(
    conn: &WriteTx,
    household_id: i64,
    actor_membership_id: Option<i64>,
    event_type: &str,
    (subject_type, subject_id): (&str, i64),
    metadata: &Value,
) -> Result<()> {
    conn.prepare_kept(
        "INSERT INTO audit_events
           (household_id, event_type, actor_membership_id, subject_type, subject_id, metadata, occurred_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        household_id,
        event_type,
        actor_membership_id,
        subject_type,
        subject_id,
        metadata.to_string(),
        crate::domain::Timestamp::now(),
    ])?;
    Ok(())
}

/// One page of the household's audit events, newest first, and the total.
pub fn list(conn: &Connection, household_id: i64, page: Page) -> Result<(Vec<AuditEvent>, i64)> {
    let total = conn
        .prepare_kept("SELECT count(*) FROM audit_events WHERE household_id = ?1")?
        .query_row([household_id], |r| r.get(0))?;
    let rows = conn
        .prepare_kept(
            "SELECT id, event_type, actor_membership_id, subject_type, subject_id, metadata,
                    occurred_at
             FROM audit_events WHERE household_id = ?1
             ORDER BY id DESC LIMIT ?2 OFFSET ?3",
        )?
        .query_map(params![household_id, page.limit(), page.offset()], |r| {
            let metadata: String = r.get(5)?;
            Ok(AuditEvent {
                id: r.get(0)?,
                event_type: r.get(1)?,
                actor_membership_id: r.get(2)?,
                subject_type: r.get(3)?,
                subject_id: r.get(4)?,
                metadata: serde_json::from_str(&metadata).map_err(|e| {
                    rusqlite::Error::FromSqlConversionFailure(5, Type::Text, Box::new(e))
                })?,
                occurred_at: r.get(6)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((rows, total))
}
