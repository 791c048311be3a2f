//! SQL for people.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Row, named_params, params};

use crate::auth::Actor;
use crate::auth::store::{VISIBLE_PERSON, Visibility};
use crate::db::page::{self, PageQuery};
use crate::domain::{Page, ResourceId, Timestamp};
use crate::error::Result;

#[derive(Debug, Clone)]
pub struct PersonRow {
    pub id: i64,
    pub portable_id: String,
    pub name: String,
    pub email: Option<String>,
    pub date_of_birth: Option<String>,
    pub person_type: String,
    pub has_capacity: bool,
    pub lock_version: i64,
    pub updated_at: Timestamp,
}

const COLUMNS: &str = "p.id, p.portable_id, p.name, p.email, p.date_of_birth, p.person_type,
    p.has_capacity, p.lock_version, p.updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<PersonRow> {
    Ok(PersonRow {
        id: r.get(0)?,
        portable_id: r.get(1)?,
        name: r.get(2)?,
        email: r.get(3)?,
        date_of_birth: r.get(4)?,
        person_type: r.get(5)?,
        has_capacity: r.get(6)?,
        lock_version: r.get(7)?,
        updated_at: r.get(8)?,
    })
}

/// A person of the household by numeric or portable id.
pub fn find(conn: &Connection, household_id: i64, id: &ResourceId) -> Result<Option<PersonRow>> {
    let (numeric, portable) = id.sql_parts();
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM people p
             WHERE p.household_id = ?1 AND p.id = coalesce(?2, (SELECT id FROM people WHERE household_id = ?1 AND portable_id = ?3))"
        ))?
        .query_row(params![household_id, numeric, portable], from_row)
        .optional()?)
}

pub fn insert(conn: &WriteTx, household_id: i64, row: &PersonRow) -> Result<i64> {
    conn.prepare_kept(
        "INSERT INTO people (portable_id, household_id, name, email, date_of_birth, person_type,
                             has_capacity, lock_version, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, ?8, ?8)",
    )?
    .execute(params![
        row.portable_id,
        household_id,
        row.name,
        row.email,
        row.date_of_birth,
        row.person_type,
        row.has_capacity,
        row.updated_at,
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Saves the row's fields and its new `lock_version`/`updated_at`.
pub fn update(conn: &WriteTx, row: &PersonRow) -> Result<()> {
    conn.prepare_kept(
        "UPDATE people SET name = ?2, email = ?3, date_of_birth = ?4, person_type = ?5,
                has_capacity = ?6, lock_version = ?7, updated_at = ?8
         WHERE id = ?1",
    )?
    .execute(params![
        row.id,
        row.name,
        row.email,
        row.date_of_birth,
        row.person_type,
        row.has_capacity,
        row.lock_version,
        row.updated_at,
    ])?;
    Ok(())
}

/// One page of the people the actor may view, oldest first, and the total.
pub fn list_visible(
    conn: &Connection,
    actor: &Actor,
    updated_since: Option<&str>,
    page: Page,
) -> Result<(Vec<PersonRow>, i64)> {
    let filter = format!(
        "p.household_id = :household_id AND {VISIBLE_PERSON}
         AND (:updated_since IS NULL OR p.updated_at >= :updated_since)"
    );
    let visibility = Visibility::of(actor);
    let params = visibility.with(named_params! {":updated_since": updated_since});
    let query = PageQuery {
        columns: COLUMNS,
        from: "people p",
        count_from: "people p",
        condition: &filter,
        order_by: "p.id",
    };
    page::read(conn, &query, &params, page, from_row)
}

/// The live locations of each of `person_ids`, in one query.
pub fn locations_of(
    conn: &Connection,
    person_ids: &[i64],
) -> Result<HashMap<i64, Vec<(i64, String)>>> {
    let ids = serde_json::to_string(person_ids).map_err(crate::error::ApiError::internal)?;
    let mut out: HashMap<i64, Vec<(i64, String)>> = HashMap::new();
    let mut stmt = conn.prepare_kept(
        "SELECT lm.person_id, l.id, l.portable_id
         FROM location_memberships lm JOIN locations l ON l.id = lm.location_id
         WHERE lm.person_id IN (SELECT value FROM json_each(?1)) AND l.deleted_at IS NULL
         ORDER BY l.id",
    )?;
    let rows = stmt.query_map([ids], |r| Ok((r.get::<_, i64>(0)?, r.get(1)?, r.get(2)?)))?;
    for row in rows {
        let (person_id, location_id, portable_id) = row?;
        out.entry(person_id)
            .or_default()
            .push((location_id, portable_id));
    }
    Ok(out)
}

/// The notification preferences (numeric and portable id) of each of
/// `person_ids` that has saved them, in one query.
pub fn notification_preferences_of(
    conn: &Connection,
    person_ids: &[i64],
) -> Result<HashMap<i64, (i64, String)>> {
    let ids = serde_json::to_string(person_ids).map_err(crate::error::ApiError::internal)?;
    let mut stmt = conn.prepare_kept(
        "SELECT n.person_id, n.id, n.portable_id FROM notification_preferences n
         WHERE n.person_id IN (SELECT value FROM json_each(?1))",
    )?;
    let rows = stmt.query_map([ids], |r| {
        Ok((r.get::<_, i64>(0)?, (r.get::<_, i64>(1)?, r.get(2)?)))
    })?;
    Ok(rows.collect::<rusqlite::Result<HashMap<_, _>>>()?)
}

/// The names of every person of a household (AI suggestions redact them
/// from text before it leaves the server).
pub fn names(conn: &Connection, household_id: i64) -> Result<Vec<String>> {
    let mut statement = conn.prepare_kept("SELECT name FROM people WHERE household_id = ?1")?;
    let names = statement
        .query_map([household_id], |row| row.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    Ok(names)
}

/// A person's name; empty for one that is gone.
pub fn person_name(conn: &Connection, person_id: i64) -> Result<String> {
    Ok(conn
        .prepare_kept("SELECT name FROM people WHERE id = ?1")?
        .query_row([person_id], |r| r.get(0))
        .optional()?
        .unwrap_or_default())
}
