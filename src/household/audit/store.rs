//! SQL for audit events.

use rusqlite::{Connection, params};
use serde_json::Value;

use crate::error::Result;

pub fn insert(
    conn: &Connection,
    household_id: i64,
    actor_membership_id: Option<i64>,
    event_type: &str,
    (subject_type, subject_id): (&str, i64),
    metadata: &Value,
) -> Result<()> {
    conn.prepare_cached(
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
        crate::time::now(),
    ])?;
    Ok(())
}
