//! SQL of the portable import and data exports (reads only: every record
//! is written by its own resource's rule and store).

use crate::db::PrepareKept;
use rusqlite::{Connection, OptionalExtension, params};

use crate::auth::Actor;
use crate::auth::store::{VISIBLE_PERSON, Visibility};

use crate::error::{ApiError, Result};

/// The tables whose records a bundle carries.
const PORTABLE_TABLES: &[&str] = &[
    "people",
    "locations",
    "medications",
    "dosage_options",
    "schedules",
    "person_medications",
    "medication_takes",
    "notification_preferences",
    "health_events",
    "medication_pause_periods",
    "dose_occurrences",
];

fn checked(table: &str) -> Result<&str> {
    PORTABLE_TABLES
        .iter()
        .find(|t| **t == table)
        .copied()
        .ok_or_else(|| ApiError::internal(format!("{table} is not a portable table")))
}

/// Whether the member holds a live manage grant on anyone of its household.
pub fn holds_manage_grant(conn: &Connection, actor: &Actor) -> Result<bool> {
    Ok(conn
        .prepare_kept(
            "SELECT 1 FROM person_access_grants
             WHERE membership_id = ?1 AND household_id = ?2 AND access_level = 'manage'
               AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?3)
             LIMIT 1",
        )?
        .query_row(
            params![
                actor.membership_id,
                actor.household_id,
                &*crate::domain::Timestamp::now()
            ],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// The one membership of the household linked to the person `portable_id`;
/// None when none or several match (an import keeps the actor unknown).
pub fn sole_membership_of(
    conn: &rusqlite::Connection,
    household_id: i64,
    person_portable_id: &str,
) -> Result<Option<i64>> {
    let ids: Vec<i64> = conn
        .prepare_kept(
            "SELECT m.id FROM memberships m JOIN people p ON p.id = m.person_id
             WHERE m.household_id = ?1 AND p.portable_id = ?2 LIMIT 2",
        )?
        .query_map(params![household_id, person_portable_id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(match ids.as_slice() {
        [one] => Some(*one),
        _ => None,
    })
}

/// The row id of the household's record `portable_id` in `table`.
pub fn row_id(
    conn: &rusqlite::Connection,
    table: &str,
    household_id: i64,
    portable_id: &str,
) -> Result<Option<i64>> {
    let table = checked(table)?;
    Ok(conn
        .prepare_cached(&format!(
            "SELECT id FROM {table} WHERE household_id = ?1 AND portable_id = ?2"
        ))?
        .query_row(params![household_id, portable_id], |r| r.get(0))
        .optional()?)
}

/// A take as the CSV export lists it.
pub struct CsvTake {
    pub portable_id: String,
    pub taken_at: String,
    pub person: String,
    pub medication: String,
    pub dose_amount: String,
    pub dose_unit: String,
    pub source_type: String,
    pub location: Option<String>,
}

/// The takes of the people the actor may view, oldest first, one at a time.
pub fn takes_for_csv(
    conn: &Connection,
    actor: &Actor,
    mut each: impl FnMut(CsvTake) -> Result<()>,
) -> Result<()> {
    let vis = Visibility::of(actor);
    let household_id = actor.household_id;
    let mut stmt = conn.prepare_kept(crate::db::sql!(
        "SELECT t.portable_id, t.taken_at, p.name, COALESCE(m.friendly_name, m.name),
                t.dose_amount, t.dose_unit, t.source_type, l.name
         FROM medication_takes t
         JOIN people p ON p.id = t.person_id
         LEFT JOIN medications m ON m.id = t.taken_from_medication_id
         LEFT JOIN locations l ON l.id = t.taken_from_location_id
         WHERE t.household_id = :household_id AND {VISIBLE_PERSON}
         ORDER BY t.taken_at, t.id"
    ))?;
    let params = vis.with(&[(":household_id", &household_id)]);
    let mut rows = stmt.query(params.as_slice())?;
    while let Some(r) = rows.next()? {
        each(CsvTake {
            portable_id: r.get(0)?,
            taken_at: r.get(1)?,
            person: r.get(2)?,
            medication: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
            dose_amount: r.get(4)?,
            dose_unit: r.get(5)?,
            source_type: r.get(6)?,
            location: r.get(7)?,
        })?;
    }
    Ok(())
}

/// A person's avatar for the backup ZIP.
pub struct Avatar {
    pub person_portable_id: String,
    pub content_type: String,
    pub data: Vec<u8>,
}

impl Avatar {
    pub fn file_name(&self) -> String {
        let extension = match self.content_type.as_str() {
            "image/png" => "png",
            "image/jpeg" => "jpg",
            "image/webp" => "webp",
            _ => "bin",
        };
        format!("avatars/{}.{extension}", self.person_portable_id)
    }
}

/// Avatars of the people the actor may view.
pub fn avatars(conn: &Connection, actor: &Actor) -> Result<Vec<Avatar>> {
    let vis = Visibility::of(actor);
    let household_id = actor.household_id;
    let mut stmt = conn.prepare_kept(crate::db::sql!(
        "SELECT p.portable_id, a.content_type, a.data
         FROM avatars a JOIN people p ON p.id = a.person_id
         WHERE p.household_id = :household_id AND {VISIBLE_PERSON}
         ORDER BY p.id"
    ))?;
    let params = vis.with(&[(":household_id", &household_id)]);
    let found = stmt
        .query_map(params.as_slice(), |r| {
            Ok(Avatar {
                person_portable_id: r.get(0)?,
                content_type: r.get(1)?,
                data: r.get(2)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(found)
}
