//! SQL for direct assignments. A retired assignment keeps its row (and its
//! position, so positions stay unique per person) and is invisible to every
//! read here.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use rusqlite::{Connection, OptionalExtension, Row, ToSql, params};

use super::model::{Direction, PersonMedicationRow};
use crate::care::source_row::{Common, OWN, SourceTable, Statements};
use crate::error::Result;

/// The assignment's own columns, after the common ones
/// (`source_row::OWN`); the position changes only through reordering.
pub static TABLE: SourceTable = SourceTable {
    table: "person_medications",
    alias: "a",
    from: "person_medications a
        JOIN people p ON p.id = a.person_id
        JOIN medications m ON m.id = a.medication_id
        LEFT JOIN dosage_options d ON d.id = a.source_dosage_option_id",
    insert_into: "INSERT INTO person_medications",
    update: "UPDATE person_medications",
    own: &["administration_kind", "position"],
    changeable: 1,
    order_by: "a.person_id, a.position",
    sql: Statements::new(),
};

pub fn from_row(r: &Row<'_>) -> rusqlite::Result<PersonMedicationRow> {
    let common = Common::read(r)?;
    Ok(PersonMedicationRow {
        source: common.source,
        administration_kind: r.get(OWN)?,
        active: common.active,
        notes: common.notes,
        position: r.get(OWN + 1)?,
        stamps: common.stamps,
    })
}

/// The values of the assignment's own columns, in `TABLE` order.
pub fn own_values(a: &PersonMedicationRow) -> Vec<Box<dyn ToSql + '_>> {
    vec![Box::new(&a.administration_kind), Box::new(a.position)]
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
            "SELECT {} FROM {}
             WHERE a.person_id = ?1 AND a.retired_at IS NULL AND a.position {comparison} ?2
             ORDER BY a.position {order} LIMIT 1",
            TABLE.columns(),
            TABLE.from,
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
        first.source.id,
        -first.source.id,
        first.stamps.lock_version,
        first.stamps.updated_at
    ])?;
    stmt.execute(params![
        second.source.id,
        second.position,
        second.stamps.lock_version,
        second.stamps.updated_at
    ])?;
    stmt.execute(params![
        first.source.id,
        first.position,
        first.stamps.lock_version,
        first.stamps.updated_at
    ])?;
    Ok(())
}
