//! The change feed is appended in the same transaction as the write it
//! describes, so a rolled-back write leaves no entry.

use super::WriteTx;
use crate::db::PrepareKept;
use rusqlite::params;

use crate::error::Result;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Create,
    Update,
    Delete,
}

impl Action {
    fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Delete => "delete",
        }
    }
}

/// One entry: which record changed and whose access governs seeing it.
pub struct Change<'a> {
    pub household_id: i64,
    pub record_type: &'static str,
    pub record_id: i64,
    pub record_portable_id: &'a str,
    pub action: Action,
    /// The person the record belongs to; `None` for household-wide records.
    pub person_id: Option<i64>,
}

pub fn append(conn: &WriteTx, change: Change<'_>) -> Result<()> {
    conn.mark_changed();
    conn.prepare_kept(
        "INSERT INTO change_feed
           (household_id, record_type, record_id, record_portable_id, action, person_id, occurred_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        change.household_id,
        change.record_type,
        change.record_id,
        change.record_portable_id,
        change.action.as_str(),
        change.person_id,
        conn.now(),
    ])?;
    Ok(())
}
