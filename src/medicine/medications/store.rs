//! SQL for medications.

use rusqlite::{Connection, OptionalExtension, Row, named_params, params};

use super::model::{MedicationRow, Reorder};
use crate::db::page::{self, PageQuery};
use crate::error::Result;
use crate::http::extract::{Page, ResourceId};

const COLUMNS: &str = "m.id, m.portable_id, m.location_id, l.portable_id, m.name, m.friendly_name,
    m.category, m.description, m.dose_amount, m.dose_unit, m.default_schedule_type,
    m.current_supply, m.reorder_threshold, m.barcode, m.dmd_code, m.dmd_system,
    m.dmd_concept_class, m.reorder_status, m.reorder_supplier, m.reorder_quantity,
    m.reorder_expected_on, m.reorder_ordered_at, m.reorder_received_at, m.lock_version,
    m.created_at, m.updated_at";

const FROM: &str = "medications m LEFT JOIN locations l ON l.id = m.location_id";

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
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE m.household_id = ?1 AND (m.id = ?2 OR m.portable_id = ?3) AND m.deleted_at IS NULL"
        ))?
        .query_row(params![household_id, numeric, portable], from_row)
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

pub fn insert(conn: &Connection, household_id: i64, m: &MedicationRow) -> Result<i64> {
    conn.prepare_cached(
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
pub fn update(conn: &Connection, m: &MedicationRow) -> Result<()> {
    conn.prepare_cached(
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

pub fn soft_delete(conn: &Connection, id: i64, now: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE medications SET deleted_at = ?2, updated_at = ?2, lock_version = lock_version + 1
         WHERE id = ?1",
    )?
    .execute(params![id, now])?;
    Ok(())
}

/// One routine source drawing on a medication, for the run-out forecast.
#[derive(Debug, Clone)]
pub struct DrawingSource {
    pub medication_id: i64,
    /// The medication's own dose_unit (only sources in it are counted).
    pub medication_unit: Option<crate::medicine::vocab::DoseUnit>,
    pub dose_amount: crate::decimal::Dec,
    pub dose_unit: crate::medicine::vocab::DoseUnit,
    /// `None` for a routine person medication.
    pub schedule: Option<(crate::medicine::vocab::ScheduleType, serde_json::Value)>,
    pub dose_cycle: Option<crate::medicine::vocab::DoseCycle>,
    pub max_daily_doses: Option<i64>,
}

/// The live (unretired), running (not paused), unfinished (no end before
/// `today`) routine schedules (prn excluded) and routine person medications
/// drawing on any of `medication_ids`: one query for a whole page.
pub fn drawing_sources(
    conn: &Connection,
    medication_ids: &[i64],
    today: jiff::civil::Date,
) -> Result<Vec<DrawingSource>> {
    if medication_ids.is_empty() {
        return Ok(Vec::new());
    }
    let ids = serde_json::Value::from(medication_ids.to_vec()).to_string();
    let rows = conn
        .prepare_cached(
            "SELECT s.medication_id, m.dose_unit, s.dose_amount, s.dose_unit, s.schedule_type,
                    s.schedule_config, s.dose_cycle, s.max_daily_doses
             FROM schedules s JOIN medications m ON m.id = s.medication_id
             WHERE s.medication_id IN (SELECT value FROM json_each(:ids))
               AND s.retired_at IS NULL AND s.active = 1 AND s.schedule_type <> 'prn'
               AND (s.end_date IS NULL OR s.end_date >= :today)
             UNION ALL
             SELECT a.medication_id, m.dose_unit, a.dose_amount, a.dose_unit, NULL, NULL,
                    a.dose_cycle, a.max_daily_doses
             FROM person_medications a JOIN medications m ON m.id = a.medication_id
             WHERE a.medication_id IN (SELECT value FROM json_each(:ids))
               AND a.retired_at IS NULL AND a.active = 1 AND a.administration_kind = 'routine'",
        )?
        .query_map(
            named_params! {":ids": ids, ":today": today.to_string()},
            |r| {
                let schedule_type: Option<crate::medicine::vocab::ScheduleType> = r.get(4)?;
                let config: Option<String> = r.get(5)?;
                let schedule = match (schedule_type, config) {
                    (Some(t), Some(c)) => Some((
                        t,
                        serde_json::from_str(&c).map_err(|e| {
                            rusqlite::Error::FromSqlConversionFailure(
                                5,
                                rusqlite::types::Type::Text,
                                Box::new(e),
                            )
                        })?,
                    )),
                    _ => None,
                };
                Ok(DrawingSource {
                    medication_id: r.get(0)?,
                    medication_unit: r.get(1)?,
                    dose_amount: r.get(2)?,
                    dose_unit: r.get(3)?,
                    schedule,
                    dose_cycle: r.get(6)?,
                    max_daily_doses: r.get(7)?,
                })
            },
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}
