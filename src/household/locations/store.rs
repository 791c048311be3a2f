//! SQL for locations. Deleted locations keep their row (past administrations
//! and dose decisions still point at it) and are invisible to every read here.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use rusqlite::{Connection, OptionalExtension, Row, named_params, params};

use crate::db::page::{self, PageQuery};
use crate::domain::{Page, ResourceId, Timestamp};
use crate::error::Result;

#[derive(Debug, Clone)]
pub struct LocationRow {
    pub id: i64,
    pub portable_id: String,
    pub name: String,
    pub description: Option<String>,
    pub lock_version: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

const COLUMNS: &str =
    "l.id, l.portable_id, l.name, l.description, l.lock_version, l.created_at, l.updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<LocationRow> {
    Ok(LocationRow {
        id: r.get(0)?,
        portable_id: r.get(1)?,
        name: r.get(2)?,
        description: r.get(3)?,
        lock_version: r.get(4)?,
        created_at: r.get(5)?,
        updated_at: r.get(6)?,
    })
}

/// A live location of the household by numeric or portable id.
pub fn find(conn: &Connection, household_id: i64, id: &ResourceId) -> Result<Option<LocationRow>> {
    let (numeric, portable) = id.sql_parts();
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM locations l
             WHERE l.household_id = ?1 AND l.id = coalesce(?2, (SELECT id FROM locations WHERE household_id = ?1 AND portable_id = ?3))
               AND l.deleted_at IS NULL"
        ))?
        .query_row(params![household_id, numeric, portable], from_row)
        .optional()?)
}

pub fn insert(conn: &WriteTx, household_id: i64, row: &LocationRow) -> Result<i64> {
    conn.prepare_kept(
        "INSERT INTO locations (portable_id, household_id, name, description, lock_version,
                                created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        row.portable_id,
        household_id,
        row.name,
        row.description,
        row.lock_version,
        row.created_at,
        row.updated_at,
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Saves the row's fields and its new `lock_version`/`updated_at`.
pub fn update(conn: &WriteTx, row: &LocationRow) -> Result<()> {
    conn.prepare_kept(
        "UPDATE locations SET name = ?2, description = ?3, lock_version = ?4, updated_at = ?5
         WHERE id = ?1",
    )?
    .execute(params![
        row.id,
        row.name,
        row.description,
        row.lock_version,
        row.updated_at,
    ])?;
    Ok(())
}

/// Marks the location deleted with its new `lock_version`/`updated_at`.
pub fn soft_delete(conn: &WriteTx, row: &LocationRow) -> Result<()> {
    conn.prepare_kept(
        "UPDATE locations SET deleted_at = ?2, lock_version = ?3, updated_at = ?2
         WHERE id = ?1",
    )?
    .execute(params![row.id, row.updated_at, row.lock_version])?;
    Ok(())
}

/// One page of the household's live locations, oldest first, and the total.
pub fn list(
    conn: &Connection,
    household_id: i64,
    updated_since: Option<&str>,
    page: Page,
) -> Result<(Vec<LocationRow>, i64)> {
    let filter = "l.household_id = :household_id AND l.deleted_at IS NULL
         AND (:updated_since IS NULL OR l.updated_at >= :updated_since)";
    let query = PageQuery {
        columns: COLUMNS,
        from: "locations l",
        count_from: "locations l",
        condition: filter,
        order_by: "l.id",
    };
    let params = named_params! {":household_id": household_id, ":updated_since": updated_since};
    page::read(conn, &query, params, page, from_row)
}

/// A row of `location_memberships`: a person assigned to a location.
#[derive(Debug, Clone)]
pub struct MembershipRow {
    pub id: i64,
    pub location_id: i64,
    pub person_id: i64,
    pub created_at: Timestamp,
}

const MEMBERSHIP_COLUMNS: &str = "lm.id, lm.location_id, lm.person_id, lm.created_at";

fn membership_from_row(r: &Row<'_>) -> rusqlite::Result<MembershipRow> {
    Ok(MembershipRow {
        id: r.get(0)?,
        location_id: r.get(1)?,
        person_id: r.get(2)?,
        created_at: r.get(3)?,
    })
}

/// The membership `id` of this location in the household.
pub fn find_membership(
    conn: &Connection,
    household_id: i64,
    location_id: i64,
    id: i64,
) -> Result<Option<MembershipRow>> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {MEMBERSHIP_COLUMNS} FROM location_memberships lm
             WHERE lm.id = ?1 AND lm.location_id = ?2 AND lm.household_id = ?3"
        ))?
        .query_row(params![id, location_id, household_id], membership_from_row)
        .optional()?)
}

/// The membership assigning `person_id` to `location_id`, if there is one.
pub fn find_membership_of(
    conn: &Connection,
    location_id: i64,
    person_id: i64,
) -> Result<Option<MembershipRow>> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {MEMBERSHIP_COLUMNS} FROM location_memberships lm
             WHERE lm.location_id = ?1 AND lm.person_id = ?2"
        ))?
        .query_row(params![location_id, person_id], membership_from_row)
        .optional()?)
}

pub fn insert_membership(conn: &WriteTx, household_id: i64, row: &MembershipRow) -> Result<i64> {
    conn.prepare_kept(
        "INSERT INTO location_memberships (household_id, location_id, person_id, created_at)
         VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![
        household_id,
        row.location_id,
        row.person_id,
        row.created_at,
    ])?;
    Ok(conn.last_insert_rowid())
}

pub fn delete_membership(conn: &WriteTx, id: i64) -> Result<()> {
    conn.prepare_kept("DELETE FROM location_memberships WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// The people assigned to a location.
pub fn people_at(conn: &Connection, location_id: i64) -> Result<Vec<i64>> {
    Ok(conn
        .prepare_kept(
            "SELECT person_id FROM location_memberships WHERE location_id = ?1 ORDER BY person_id",
        )?
        .query_map([location_id], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}
