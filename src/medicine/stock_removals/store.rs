//! SQL for stock removals and the stock they decrement.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::StockRemoval;
use crate::decimal::Dec;
use crate::domain::{Page, Timestamp};
use crate::error::Result;

const COLUMNS: &str = "s.id, s.portable_id, s.medication_id, m.portable_id, s.dosage_option_id,
    s.quantity, s.reason, s.note, s.submission_id, s.supply_before, s.supply_after,
    s.actor_membership_id, s.created_at";

const FROM: &str = "stock_removals s JOIN medications m ON m.id = s.medication_id";

fn from_row(r: &Row<'_>) -> rusqlite::Result<StockRemoval> {
    Ok(StockRemoval {
        id: r.get(0)?,
        portable_id: r.get(1)?,
        medication_id: r.get(2)?,
        medication_portable_id: r.get(3)?,
        dosage_option_id: r.get(4)?,
        quantity: r.get(5)?,
        reason: r.get(6)?,
        note: r.get(7)?,
        submission_id: r.get(8)?,
        supply_before: r.get(9)?,
        supply_after: r.get(10)?,
        actor_membership_id: r.get(11)?,
        created_at: r.get(12)?,
    })
}

pub fn find(conn: &Connection, id: i64) -> Result<Option<StockRemoval>> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM {FROM} WHERE s.id = ?1"
        ))?
        .query_row([id], from_row)
        .optional()?)
}

/// The removal a submission id already produced for this medication.
pub fn find_by_submission(
    conn: &Connection,
    medication_id: i64,
    submission_id: &str,
) -> Result<Option<StockRemoval>> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM {FROM} WHERE s.medication_id = ?1 AND s.submission_id = ?2"
        ))?
        .query_row(params![medication_id, submission_id], from_row)
        .optional()?)
}

/// One page of a medication's removals, newest first, and the total.
pub fn list(conn: &Connection, medication_id: i64, page: Page) -> Result<(Vec<StockRemoval>, i64)> {
    let total = conn
        .prepare_kept("SELECT count(*) FROM stock_removals WHERE medication_id = ?1")?
        .query_row([medication_id], |r| r.get(0))?;
    let rows = conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM {FROM} WHERE s.medication_id = ?1
             ORDER BY s.id DESC LIMIT ?2 OFFSET ?3"
        ))?
        .query_map(
            params![medication_id, page.limit(), page.offset()],
            from_row,
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((rows, total))
}

pub struct NewRow<'a> {
    pub portable_id: &'a str,
    pub household_id: i64,
    pub medication_id: i64,
    pub dosage_option_id: Option<i64>,
    pub quantity: Dec,
    pub reason: crate::medicine::vocab::StockRemovalReason,
    pub note: Option<&'a str>,
    pub submission_id: &'a str,
    pub supply_before: Dec,
    pub supply_after: Dec,
    pub actor_membership_id: Option<i64>,
    pub created_at: &'a Timestamp,
}

pub fn insert(conn: &WriteTx, row: &NewRow<'_>) -> Result<i64> {
    conn.prepare_kept(
        "INSERT INTO stock_removals (portable_id, household_id, medication_id, dosage_option_id,
             quantity, reason, note, submission_id, supply_before, supply_after,
             actor_membership_id, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        row.portable_id,
        row.household_id,
        row.medication_id,
        row.dosage_option_id,
        row.quantity,
        row.reason,
        row.note,
        row.submission_id,
        row.supply_before,
        row.supply_after,
        row.actor_membership_id,
        row.created_at,
    ])?;
    Ok(conn.last_insert_rowid())
}
