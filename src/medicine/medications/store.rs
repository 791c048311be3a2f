//! SQL for medications.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use rusqlite::{Connection, OptionalExtension, Row, named_params, params};

use super::model::{MedicationRow, MedicationStock, Reorder};
use crate::db::page::{self, PageQuery};
use crate::decimal::Dec;
use crate::domain::{Page, ResourceId, Timestamp};
use crate::error::Result;

const COLUMNS: &str = "m.id, m.portable_id, l.id, l.portable_id, m.name, m.friendly_name,
    m.category, m.description, m.dose_amount, m.dose_unit, m.default_schedule_type,
    m.current_supply, m.reorder_threshold, m.barcode, m.dmd_code, m.dmd_system,
    m.dmd_concept_class, m.reorder_status, m.reorder_supplier, m.reorder_quantity,
    m.reorder_expected_on, m.reorder_ordered_at, m.reorder_received_at, m.lock_version,
    m.created_at, m.updated_at";

/// A deleted location is no medication's location any more (as in the
/// sync snapshot); the stored reference stays until the row is next saved.
const FROM: &str =
    "medications m LEFT JOIN locations l ON l.id = m.location_id AND l.deleted_at IS NULL";

fn from_row(r: &Row<'_>) -> rusqlite::Result<MedicationRow> {
    Ok(MedicationRow {
        id: r.get(0)?,
        portable_id: r.get(1)?,
        location_id: r.get(2)?,
        location_portable_id: r.get(3)?,
        name: r.get(4)?,
        friendly_name: r.get(5)?,
        category: r.get(6)?,
        description: r.get(7)?,
        dose_amount: r.get(8)?,
        dose_unit: r.get(9)?,
        default_schedule_type: r.get(10)?,
        current_supply: r.get(11)?,
        reorder_threshold: r.get(12)?,
        barcode: r.get(13)?,
        dmd_code: r.get(14)?,
        dmd_system: r.get(15)?,
        dmd_concept_class: r.get(16)?,
        reorder: Reorder {
            status: r.get(17)?,
            supplier: r.get(18)?,
            quantity: r.get(19)?,
            expected_on: r.get(20)?,
            ordered_at: r.get(21)?,
            received_at: r.get(22)?,
        },
        lock_version: r.get(23)?,
        created_at: r.get(24)?,
        updated_at: r.get(25)?,
    })
}

/// A live medication of the household by numeric or portable id.
pub fn find(
    conn: &Connection,
    household_id: i64,
    id: &ResourceId,
) -> Result<Option<MedicationRow>> {
    let (numeric, portable) = id.sql_parts();
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE m.household_id = ?1 AND m.id = coalesce(?2, (SELECT id FROM medications WHERE household_id = ?1 AND portable_id = ?3)) AND m.deleted_at IS NULL"
        ))?
        .query_row(params![household_id, numeric, portable], from_row)
        .optional()?)
}

/// A live medication's stock, by numeric or portable id: [`find`] without
/// its location and the fields a dose does not use (a take reads this on
/// the writer, where the whole row cost about 14,000 instructions).
pub fn find_stock(
    conn: &Connection,
    household_id: i64,
    id: &ResourceId,
) -> Result<Option<MedicationStock>> {
    let (numeric, portable) = id.sql_parts();
    Ok(conn
        .prepare_kept(
            "SELECT id, portable_id, dose_unit, current_supply FROM medications
             WHERE household_id = ?1 AND id = coalesce(?2, (SELECT id FROM medications WHERE household_id = ?1 AND portable_id = ?3)) AND deleted_at IS NULL",
        )?
        .query_row(params![household_id, numeric, portable], |r| {
            Ok(MedicationStock {
                id: r.get(0)?,
                portable_id: r.get(1)?,
                dose_unit: r.get(2)?,
                current_supply: r.get(3)?,
            })
        })
        .optional()?)
}

pub fn list(
    conn: &Connection,
    household_id: i64,
    updated_since: Option<&str>,
    page: Page,
) -> Result<(Vec<MedicationRow>, i64)> {
    let filter = "m.household_id = :household_id AND m.deleted_at IS NULL
        AND (:updated_since IS NULL OR m.updated_at >= :updated_since)";
    let query = PageQuery {
        columns: COLUMNS,
        from: FROM,
        count_from: "medications m",
        condition: filter,
        order_by: "m.id",
    };
    let params = named_params! {":household_id": household_id, ":updated_since": updated_since};
    page::read(conn, &query, params, page, from_row)
}

pub fn insert(conn: &WriteTx, household_id: i64, m: &MedicationRow) -> Result<i64> {
    conn.prepare_kept(
        "INSERT INTO medications (portable_id, household_id, location_id, name, friendly_name,
             category, description, dose_amount, dose_unit, default_schedule_type, current_supply,
             reorder_threshold, barcode, dmd_code, dmd_system, dmd_concept_class,
             lock_version, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, 1, ?17, ?17)",
    )?
    .execute(params![
        m.portable_id,
        household_id,
        m.location_id,
        m.name,
        m.friendly_name,
        m.category,
        m.description,
        m.dose_amount,
        m.dose_unit,
        m.default_schedule_type,
        m.current_supply,
        m.reorder_threshold,
        m.barcode,
        m.dmd_code,
        m.dmd_system,
        m.dmd_concept_class,
        m.updated_at,
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Saves every stored field of the row, including stock and reorder state.
pub fn update(conn: &WriteTx, m: &MedicationRow) -> Result<()> {
    conn.prepare_kept(
        "UPDATE medications SET location_id = ?2, name = ?3, friendly_name = ?4, category = ?5,
             description = ?6, dose_amount = ?7, dose_unit = ?8, default_schedule_type = ?9,
             current_supply = ?10, reorder_threshold = ?11, barcode = ?12, dmd_code = ?13,
             dmd_system = ?14, dmd_concept_class = ?15, reorder_status = ?16,
             reorder_supplier = ?17, reorder_quantity = ?18, reorder_expected_on = ?19,
             reorder_ordered_at = ?20, reorder_received_at = ?21, lock_version = ?22,
             updated_at = ?23
         WHERE id = ?1",
    )?
    .execute(params![
        m.id,
        m.location_id,
        m.name,
        m.friendly_name,
        m.category,
        m.description,
        m.dose_amount,
        m.dose_unit,
        m.default_schedule_type,
        m.current_supply,
        m.reorder_threshold,
        m.barcode,
        m.dmd_code,
        m.dmd_system,
        m.dmd_concept_class,
        m.reorder.status,
        m.reorder.supplier,
        m.reorder.quantity,
        m.reorder.expected_on,
        m.reorder.ordered_at,
        m.reorder.received_at,
        m.lock_version,
        m.updated_at,
    ])?;
    Ok(())
}

pub fn soft_delete(conn: &WriteTx, id: i64, now: &Timestamp) -> Result<()> {
    conn.prepare_kept(
        "UPDATE medications SET deleted_at = ?2, updated_at = ?2, lock_version = lock_version + 1
         WHERE id = ?1",
    )?
    .execute(params![id, now])?;
    Ok(())
}

/// The live medications kept at a location: (id, portable id).
pub fn ids_at_location(conn: &Connection, location_id: i64) -> Result<Vec<(i64, String)>> {
    Ok(conn
        .prepare_kept(
            "SELECT id, portable_id FROM medications
             WHERE location_id = ?1 AND deleted_at IS NULL ORDER BY id",
        )?
        .query_map([location_id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Moves a medication to a new version without changing its stored fields.
pub fn touch(conn: &WriteTx, id: i64, now: &Timestamp) -> Result<()> {
    conn.prepare_kept(
        "UPDATE medications SET lock_version = lock_version + 1, updated_at = ?2 WHERE id = ?1",
    )?
    .execute(params![id, now])?;
    Ok(())
}

/// Sets a medication's stock, moving its version on.
pub fn set_supply(conn: &WriteTx, id: i64, supply: Dec, now: &Timestamp) -> Result<()> {
    conn.prepare_kept(
        "UPDATE medications SET current_supply = ?2, lock_version = lock_version + 1, updated_at = ?3
         WHERE id = ?1",
    )?
    .execute(params![id, supply, now])?;
    Ok(())
}

/// A medication with a reorder threshold: (id, name, supply, threshold).
pub struct Stocked {
    pub id: i64,
    pub name: String,
    pub supply: String,
    pub threshold: String,
}

pub fn stocked_medications(conn: &Connection, household_id: i64) -> Result<Vec<Stocked>> {
    let mut stmt = conn.prepare_kept(
        "SELECT id, coalesce(friendly_name, name), current_supply, reorder_threshold
           FROM medications
          WHERE household_id = ?1 AND deleted_at IS NULL AND reorder_threshold IS NOT NULL
          ORDER BY id",
    )?;
    let rows = stmt
        .query_map([household_id], |r| {
            Ok(Stocked {
                id: r.get(0)?,
                name: r.get(1)?,
                supply: r.get(2)?,
                threshold: r.get(3)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}
