//! SQL for dosage options. Options are reachable only while their
//! medication is live (not deleted).

use crate::db::PrepareKept;
use crate::db::WriteTx;
use rusqlite::{Connection, OptionalExtension, Row, named_params, params};

use super::model::DosageOption;
use crate::db::page::{self, PageQuery};
use crate::decimal::Dec;
use crate::domain::{Page, ResourceId, Timestamp};
use crate::error::Result;

const COLUMNS: &str = "d.id, d.portable_id, d.medication_id, m.portable_id, d.amount, d.unit,
    d.frequency, d.description, d.default_for_adults, d.default_for_children,
    d.default_max_daily_doses, d.default_min_hours_between_doses, d.default_dose_cycle,
    d.current_supply, d.reorder_threshold, d.lock_version, d.created_at, d.updated_at";

/// One join gives every row its medication's portable id (no query per row).
const FROM: &str = "dosage_options d JOIN medications m ON m.id = d.medication_id";

fn from_row(r: &Row<'_>) -> rusqlite::Result<DosageOption> {
    Ok(DosageOption {
        id: r.get(0)?,
        portable_id: r.get(1)?,
        medication_id: r.get(2)?,
        medication_portable_id: r.get(3)?,
        amount: r.get(4)?,
        unit: r.get(5)?,
        frequency: r.get(6)?,
        description: r.get(7)?,
        default_for_adults: r.get(8)?,
        default_for_children: r.get(9)?,
        default_max_daily_doses: r.get(10)?,
        default_min_hours_between_doses: r.get(11)?,
        default_dose_cycle: r.get(12)?,
        current_supply: r.get(13)?,
        reorder_threshold: r.get(14)?,
        lock_version: r.get(15)?,
        created_at: r.get(16)?,
        updated_at: r.get(17)?,
    })
}

/// A dosage option of a live medication of the household, by numeric or portable id.
pub fn find(conn: &Connection, household_id: i64, id: &ResourceId) -> Result<Option<DosageOption>> {
    let (numeric, portable) = id.sql_parts();
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE d.household_id = ?1 AND d.id = coalesce(?2, (SELECT id FROM dosage_options WHERE household_id = ?1 AND portable_id = ?3))
               AND m.deleted_at IS NULL"
        ))?
        .query_row(params![household_id, numeric, portable], from_row)
        .optional()?)
}

/// One page of the household's dosage options in id order, and how many
/// there are in all; optionally of one medication only.
pub fn list(
    conn: &Connection,
    household_id: i64,
    medication_id: Option<i64>,
    updated_since: Option<&str>,
    page: Page,
) -> Result<(Vec<DosageOption>, i64)> {
    let filter = "d.household_id = :household_id AND m.deleted_at IS NULL
        AND (:medication_id IS NULL OR d.medication_id = :medication_id)
        AND (:updated_since IS NULL OR d.updated_at >= :updated_since)";
    let query = PageQuery {
        columns: COLUMNS,
        from: FROM,
        count_from: FROM,
        condition: filter,
        order_by: "d.id",
    };
    let params = named_params! {
        ":household_id": household_id,
        ":medication_id": medication_id,
        ":updated_since": updated_since,
    };
    page::read(conn, &query, params, page, from_row)
}

pub fn insert(conn: &WriteTx, household_id: i64, d: &DosageOption) -> Result<i64> {
    conn.prepare_kept(
        "INSERT INTO dosage_options (portable_id, household_id, medication_id, amount, unit,
             frequency, description, default_for_adults, default_for_children,
             default_max_daily_doses, default_min_hours_between_doses, default_dose_cycle,
             current_supply, reorder_threshold, lock_version, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    )?
    .execute(params![
        d.portable_id,
        household_id,
        d.medication_id,
        d.amount,
        d.unit,
        d.frequency,
        d.description,
        d.default_for_adults,
        d.default_for_children,
        d.default_max_daily_doses,
        d.default_min_hours_between_doses,
        d.default_dose_cycle,
        d.current_supply,
        d.reorder_threshold,
        d.lock_version,
        d.created_at,
        d.updated_at,
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Saves every stored field of the row; the medication never changes.
pub fn update(conn: &WriteTx, d: &DosageOption) -> Result<()> {
    conn.prepare_kept(
        "UPDATE dosage_options SET amount = ?2, unit = ?3, frequency = ?4, description = ?5,
             default_for_adults = ?6, default_for_children = ?7, default_max_daily_doses = ?8,
             default_min_hours_between_doses = ?9, default_dose_cycle = ?10,
             current_supply = ?11, reorder_threshold = ?12, lock_version = ?13, updated_at = ?14
         WHERE id = ?1",
    )?
    .execute(params![
        d.id,
        d.amount,
        d.unit,
        d.frequency,
        d.description,
        d.default_for_adults,
        d.default_for_children,
        d.default_max_daily_doses,
        d.default_min_hours_between_doses,
        d.default_dose_cycle,
        d.current_supply,
        d.reorder_threshold,
        d.lock_version,
        d.updated_at,
    ])?;
    Ok(())
}

/// The (id, portable id) of every dosage option of a medication.
pub fn ids_of_medication(conn: &Connection, medication_id: i64) -> Result<Vec<(i64, String)>> {
    Ok(conn
        .prepare_kept(
            "SELECT id, portable_id FROM dosage_options WHERE medication_id = ?1 ORDER BY id",
        )?
        .query_map([medication_id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Sets a dosage option's own stock, moving its version on.
pub fn set_supply(conn: &WriteTx, id: i64, supply: Dec, now: &Timestamp) -> Result<()> {
    conn.prepare_kept(
        "UPDATE dosage_options SET current_supply = ?2, lock_version = lock_version + 1, updated_at = ?3
         WHERE id = ?1",
    )?
    .execute(params![id, supply, now])?;
    Ok(())
}
