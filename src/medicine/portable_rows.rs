//! Medicine's portable rows: the read model the sync snapshot and the
//! export consume. Each query streams its rows to a callback and selects
//! the columns of its portable record in the record's order; every
//! relationship is a portable id.

use rusqlite::{Connection, Row};

use crate::db::each_row;
use crate::error::Result;

/// Live medications, each with its live location's portable id.
pub fn medications(
    conn: &Connection,
    household_id: i64,
    each: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    each_row(
        conn,
        "SELECT m.portable_id, m.updated_at, m.lock_version, l.portable_id, m.name,
                        m.friendly_name, m.category, m.description, m.dose_amount, m.dose_unit,
                        m.default_schedule_type, m.current_supply, m.reorder_threshold,
                        m.barcode, m.dmd_code, m.dmd_system, m.dmd_concept_class
                 FROM medications m
                 LEFT JOIN locations l ON l.id = m.location_id AND l.deleted_at IS NULL
                 WHERE m.household_id = :household_id AND m.deleted_at IS NULL
                 ORDER BY m.id",
        &[(":household_id", &household_id)],
        each,
    )
}

/// The dosage options of live medications.
pub fn dosage_options(
    conn: &Connection,
    household_id: i64,
    each: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    each_row(
        conn,
        "SELECT d.portable_id, d.updated_at, d.lock_version, m.portable_id, d.amount,
                        d.unit, d.frequency, d.description, d.default_for_adults,
                        d.default_for_children, d.default_max_daily_doses,
                        d.default_min_hours_between_doses, d.default_dose_cycle,
                        d.current_supply, d.reorder_threshold
                 FROM dosage_options d
                 JOIN medications m ON m.id = d.medication_id AND m.deleted_at IS NULL
                 WHERE d.household_id = :household_id
                 ORDER BY d.id",
        &[(":household_id", &household_id)],
        each,
    )
}
