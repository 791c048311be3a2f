//! SQL for health events. A deleted event keeps its row (the change feed's
//! tombstone points at it) and is invisible to every read here.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Row, named_params, params};

use super::model::HealthEventRow;
use crate::auth::Actor;
use crate::auth::access::{self, Named};
use crate::auth::store::{VISIBLE_PERSON, Visibility};
use crate::db::page::{self, PageQuery};
use crate::domain::{Page, ResourceId};
use crate::error::{ApiError, Result};

const COLUMNS: &str = "e.id, e.portable_id, e.person_id, p.portable_id, e.event_kind, e.severity,
    e.title, e.notes, e.started_on, e.ended_on, e.lock_version, e.created_at, e.updated_at";

const FROM: &str = "health_events e JOIN people p ON p.id = e.person_id";

fn from_row(r: &Row<'_>) -> rusqlite::Result<HealthEventRow> {
    Ok(HealthEventRow {
        id: r.get(0)?,
        portable_id: r.get(1)?,
        person_id: r.get(2)?,
        person_portable_id: r.get(3)?,
        event_kind: r.get(4)?,
        severity: r.get(5)?,
        title: r.get(6)?,
        notes: r.get(7)?,
        started_on: r.get(8)?,
        ended_on: r.get(9)?,
        lock_version: r.get(10)?,
        created_at: r.get(11)?,
        updated_at: r.get(12)?,
    })
}

/// A live health event of the household by numeric or portable id (whoever
/// its person is: the caller's access is checked by the rules).
pub fn find(
    conn: &Connection,
    household_id: i64,
    id: &ResourceId,
) -> Result<Option<HealthEventRow>> {
    let (numeric, portable) = id.sql_parts();
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE e.household_id = ?1 AND e.id = coalesce(?2, (SELECT id FROM health_events WHERE household_id = ?1 AND portable_id = ?3))
               AND e.deleted_at IS NULL"
        ))?
        .query_row(params![household_id, numeric, portable], from_row)
        .optional()?)
}

/// Which health events to list.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub person_id: Option<ResourceId>,
    pub updated_since: Option<String>,
}

/// One page of the live health events of people the actor may view, newest
/// first (by start date, then by creation), and the total.
pub fn list_visible(
    conn: &Connection,
    actor: &Actor,
    filter: &Filter,
    page: Page,
) -> Result<(Vec<HealthEventRow>, i64)> {
    let person_id = access::filter_id(conn, actor, Named::Person, filter.person_id.as_ref())?;
    let condition = format!(
        "e.household_id = :household_id AND e.deleted_at IS NULL AND {VISIBLE_PERSON}
         AND (:updated_since IS NULL OR e.updated_at >= :updated_since)
         AND (:person_id IS NULL OR e.person_id = :person_id)"
    );
    let visibility = Visibility::of(actor);
    let params = visibility.with(named_params! {
        ":updated_since": filter.updated_since,
        ":person_id": person_id,
    });
    let query = PageQuery {
        columns: COLUMNS,
        from: FROM,
        count_from: FROM,
        condition: &condition,
        order_by: "e.started_on DESC, e.id DESC",
    };
    page::read(conn, &query, &params, page, from_row)
}

pub fn insert(conn: &WriteTx, household_id: i64, row: &HealthEventRow) -> Result<i64> {
    conn.prepare_kept(
        "INSERT INTO health_events (portable_id, household_id, person_id, event_kind, severity,
             title, notes, started_on, ended_on, lock_version, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        row.portable_id,
        household_id,
        row.person_id,
        row.event_kind,
        row.severity,
        row.title,
        row.notes,
        row.started_on,
        row.ended_on,
        row.lock_version,
        row.created_at,
        row.updated_at,
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Saves the row's fields and its new `lock_version`/`updated_at` (the
/// person never changes).
pub fn update(conn: &WriteTx, row: &HealthEventRow) -> Result<()> {
    conn.prepare_kept(
        "UPDATE health_events SET event_kind = ?2, severity = ?3, title = ?4, notes = ?5,
             started_on = ?6, ended_on = ?7, lock_version = ?8, updated_at = ?9
         WHERE id = ?1",
    )?
    .execute(params![
        row.id,
        row.event_kind,
        row.severity,
        row.title,
        row.notes,
        row.started_on,
        row.ended_on,
        row.lock_version,
        row.updated_at,
    ])?;
    Ok(())
}

/// Marks the event deleted with its new `lock_version`/`updated_at`; its
/// medication links stay with the tombstone.
pub fn soft_delete(conn: &WriteTx, row: &HealthEventRow) -> Result<()> {
    conn.prepare_kept(
        "UPDATE health_events SET deleted_at = ?2, lock_version = ?3, updated_at = ?2
         WHERE id = ?1",
    )?
    .execute(params![row.id, row.updated_at, row.lock_version])?;
    Ok(())
}

/// A medication of the household named by a health event: (id, portable
/// id, deleted).
#[derive(Debug, Clone)]
pub struct MedicationRef {
    pub id: i64,
    pub portable_id: String,
    pub deleted: bool,
}

/// Resolves numeric and portable medication ids of the household, deleted
/// ones included, in one query. Ids that name nothing have no entry.
pub fn resolve_medications(
    conn: &Connection,
    household_id: i64,
    ids: &[ResourceId],
) -> Result<Vec<MedicationRef>> {
    let numeric: Vec<i64> = ids
        .iter()
        .filter_map(|id| match id {
            ResourceId::Numeric(n) => Some(*n),
            ResourceId::Portable(_) => None,
        })
        .collect();
    let portable: Vec<&str> = ids
        .iter()
        .filter_map(|id| match id {
            ResourceId::Portable(p) => Some(p.as_str()),
            ResourceId::Numeric(_) => None,
        })
        .collect();
    let numeric = serde_json::to_string(&numeric).map_err(ApiError::internal)?;
    let portable = serde_json::to_string(&portable).map_err(ApiError::internal)?;
    let rows = conn
        .prepare_kept(
            "SELECT m.id, m.portable_id, m.deleted_at IS NOT NULL FROM medications m
             WHERE m.household_id = ?1
               AND (m.id IN (SELECT value FROM json_each(?2))
                    OR m.portable_id IN (SELECT value FROM json_each(?3)))",
        )?
        .query_map(params![household_id, numeric, portable], |r| {
            Ok(MedicationRef {
                id: r.get(0)?,
                portable_id: r.get(1)?,
                deleted: r.get(2)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// The linked medications of each of `event_ids`, in one query, ordered by
/// medication id.
pub fn medications_of(
    conn: &Connection,
    event_ids: &[i64],
) -> Result<HashMap<i64, Vec<(i64, String)>>> {
    let ids = serde_json::to_string(event_ids).map_err(ApiError::internal)?;
    let mut out: HashMap<i64, Vec<(i64, String)>> = HashMap::new();
    let mut stmt = conn.prepare_kept(
        "SELECT hm.health_event_id, m.id, m.portable_id
         FROM health_event_medications hm JOIN medications m ON m.id = hm.medication_id
         WHERE hm.health_event_id IN (SELECT value FROM json_each(?1))
         ORDER BY hm.health_event_id, m.id",
    )?;
    let rows = stmt.query_map([ids], |r| Ok((r.get::<_, i64>(0)?, r.get(1)?, r.get(2)?)))?;
    for row in rows {
        let (event_id, medication_id, portable_id) = row?;
        out.entry(event_id)
            .or_default()
            .push((medication_id, portable_id));
    }
    Ok(out)
}

/// Makes the event's links exactly `medication_ids`.
pub fn replace_medications(conn: &WriteTx, event_id: i64, medication_ids: &[i64]) -> Result<()> {
    conn.prepare_kept("DELETE FROM health_event_medications WHERE health_event_id = ?1")?
        .execute([event_id])?;
    let mut insert = conn.prepare_kept(
        "INSERT INTO health_event_medications (health_event_id, medication_id) VALUES (?1, ?2)",
    )?;
    for medication_id in medication_ids {
        insert.execute(params![event_id, medication_id])?;
    }
    Ok(())
}
