//! SQL for direct assignments. A retired assignment keeps its row (and its
//! position, so positions stay unique per person) and is invisible to every
//! read here.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::{Direction, PersonMedicationRow};
use crate::auth::Actor;
use crate::care::schedules::dose::Dose;
use crate::care::source_row::{self, Filter, ListSql};
use crate::domain::{Page, ResourceId, Timestamp};
use crate::error::Result;

const COLUMNS: &str = "a.id, a.portable_id, a.person_id, p.portable_id, a.medication_id,
    m.portable_id, a.source_dosage_option_id, d.portable_id, a.dose_amount, a.dose_unit,
    a.dose_cycle, a.max_daily_doses, a.min_hours_between_doses, a.administration_kind,
    a.active, a.notes, a.position, a.retired_at, a.lock_version, a.created_at, a.updated_at";

/// One set of joins gives every row its portable references (no query per row).
const FROM: &str = "person_medications a
    JOIN people p ON p.id = a.person_id
    JOIN medications m ON m.id = a.medication_id
    LEFT JOIN dosage_options d ON d.id = a.source_dosage_option_id";

fn from_row(r: &Row<'_>) -> rusqlite::Result<PersonMedicationRow> {
    Ok(PersonMedicationRow {
        id: r.get(0)?,
        portable_id: r.get(1)?,
        person_id: r.get(2)?,
        person_portable_id: r.get(3)?,
        dose: Dose {
            medication_id: r.get(4)?,
            medication_portable_id: r.get(5)?,
            source_dosage_option_id: r.get(6)?,
            source_dosage_option_portable_id: r.get(7)?,
            dose_amount: r.get(8)?,
            dose_unit: r.get(9)?,
            dose_cycle: r.get(10)?,
            max_daily_doses: r.get(11)?,
            min_hours_between_doses: r.get(12)?,
        },
        administration_kind: r.get(13)?,
        active: r.get(14)?,
        notes: r.get(15)?,
        position: r.get(16)?,
        retired_at: r.get(17)?,
        lock_version: r.get(18)?,
        created_at: r.get(19)?,
        updated_at: r.get(20)?,
    })
}

/// A live (unretired) assignment of the household by numeric or portable
/// id, whoever its person is: the caller's access is checked by the rules.
pub fn find(
    conn: &Connection,
    household_id: i64,
    id: &ResourceId,
) -> Result<Option<PersonMedicationRow>> {
    let (numeric, portable) = id.sql_parts();
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE a.household_id = ?1 AND a.id = coalesce(?2, (SELECT id FROM person_medications WHERE household_id = ?1 AND portable_id = ?3))
               AND a.retired_at IS NULL"
        ))?
        .query_row(params![household_id, numeric, portable], from_row)
        .optional()?)
}

const LIST: ListSql = ListSql {
    alias: "a",
    columns: COLUMNS,
    from: FROM,
    order_by: "a.person_id, a.position",
};

/// One page of the live assignments of people the actor may view, and the total.
pub fn list_visible(
    conn: &Connection,
    actor: &Actor,
    filter: &Filter,
    page: Page,
) -> Result<(Vec<PersonMedicationRow>, i64)> {
    source_row::list_visible(conn, actor, filter, page, &LIST, from_row)
}

/// The position after every assignment the person has had (retired ones
/// included, so a position is never reused).
pub fn next_position(conn: &Connection, person_id: i64) -> Result<i64> {
    Ok(conn
        .prepare_kept(
            "SELECT coalesce(max(position), 0) + 1 FROM person_medications WHERE person_id = ?1",
        )?
        .query_row([person_id], |r| r.get(0))?)
}

pub fn insert(conn: &WriteTx, household_id: i64, a: &PersonMedicationRow) -> Result<i64> {
    conn.prepare_kept(
        "INSERT INTO person_medications (portable_id, household_id, person_id, medication_id,
             source_dosage_option_id, dose_amount, dose_unit, dose_cycle, max_daily_doses,
             min_hours_between_doses, administration_kind, active, notes, position,
             lock_version, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    )?
    .execute(params![
        a.portable_id,
        household_id,
        a.person_id,
        a.dose.medication_id,
        a.dose.source_dosage_option_id,
        a.dose.dose_amount,
        a.dose.dose_unit,
        a.dose.dose_cycle,
        a.dose.max_daily_doses,
        a.dose.min_hours_between_doses,
        a.administration_kind,
        a.active,
        a.notes,
        a.position,
        a.lock_version,
        a.created_at,
        a.updated_at,
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Saves every changeable field of the row; the person never changes,
/// `active` changes only through pausing and resuming, and the position
/// only through reordering.
pub fn update(conn: &WriteTx, a: &PersonMedicationRow) -> Result<()> {
    conn.prepare_kept(
        "UPDATE person_medications SET medication_id = ?2, source_dosage_option_id = ?3,
             dose_amount = ?4, dose_unit = ?5, dose_cycle = ?6, max_daily_doses = ?7,
             min_hours_between_doses = ?8, administration_kind = ?9, notes = ?10,
             lock_version = ?11, updated_at = ?12
         WHERE id = ?1",
    )?
    .execute(params![
        a.id,
        a.dose.medication_id,
        a.dose.source_dosage_option_id,
        a.dose.dose_amount,
        a.dose.dose_unit,
        a.dose.dose_cycle,
        a.dose.max_daily_doses,
        a.dose.min_hours_between_doses,
        a.administration_kind,
        a.notes,
        a.lock_version,
        a.updated_at,
    ])?;
    Ok(())
}

/// Retires an assignment: it leaves every list and read, and stops (active
/// false); the row stays for the history that points at it.
pub fn retire(conn: &WriteTx, id: i64, now: &Timestamp) -> Result<()> {
    conn.prepare_kept(
        "UPDATE person_medications SET retired_at = ?2, active = 0, updated_at = ?2,
             lock_version = lock_version + 1
         WHERE id = ?1",
    )?
    .execute(params![id, now])?;
    Ok(())
}

/// The person's live assignment next to `position` in `direction`, if any.
pub fn neighbour(
    conn: &Connection,
    person_id: i64,
    position: i64,
    direction: Direction,
) -> Result<Option<PersonMedicationRow>> {
    let (comparison, order) = match direction {
        Direction::Up => ("<", "DESC"),
        Direction::Down => (">", "ASC"),
    };
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE a.person_id = ?1 AND a.retired_at IS NULL AND a.position {comparison} ?2
             ORDER BY a.position {order} LIMIT 1"
        ))?
        .query_row(params![person_id, position], from_row)
        .optional()?)
}

/// Saves two rows whose positions were swapped, each with its new
/// `lock_version` and `updated_at`. Positions are unique per person, so the
/// first row waits on a free (negative) position while the second moves.
pub fn save_swapped(
    conn: &WriteTx,
    first: &PersonMedicationRow,
    second: &PersonMedicationRow,
) -> Result<()> {
    let mut stmt = conn.prepare_kept(
        "UPDATE person_medications SET position = ?2, lock_version = ?3, updated_at = ?4
         WHERE id = ?1",
    )?;
    stmt.execute(params![
        first.id,
        -first.id,
        first.lock_version,
        first.updated_at
    ])?;
    stmt.execute(params![
        second.id,
        second.position,
        second.lock_version,
        second.updated_at
    ])?;
    stmt.execute(params![
        first.id,
        first.position,
        first.lock_version,
        first.updated_at
    ])?;
    Ok(())
}

/// How many live (unretired) assignments use a medication.
pub fn count_live_for_medication(conn: &Connection, medication_id: i64) -> Result<i64> {
    Ok(conn
        .prepare_kept(
            "SELECT count(*) FROM person_medications
             WHERE medication_id = ?1 AND retired_at IS NULL",
        )?
        .query_row([medication_id], |r| r.get(0))?)
}

/// Sets the person medication's `active` flag (false while paused), as a change to
/// it: its version moves on.
pub fn set_active(conn: &WriteTx, id: i64, active: bool, now: &Timestamp) -> Result<()> {
    conn.prepare_kept(
        "UPDATE person_medications SET active = ?2, updated_at = ?3, lock_version = lock_version + 1
         WHERE id = ?1",
    )?
    .execute(params![id, active, now])?;
    Ok(())
}
