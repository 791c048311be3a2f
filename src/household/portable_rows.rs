//! The household's portable rows: the read model the sync snapshot and the
//! export consume. Each query streams its rows to a callback and selects
//! the columns of its portable record in the record's order; every
//! relationship is a portable id.

use rusqlite::{Connection, Row};

use crate::auth::Actor;
use crate::auth::store::{VISIBLE_PERSON, Visibility};
use crate::db::{PrepareKept, each_row};
use crate::error::Result;

pub fn household_portable_id(conn: &Connection, household_id: i64) -> Result<String> {
    Ok(conn
        .prepare_kept("SELECT portable_id FROM households WHERE id = ?1")?
        .query_row([household_id], |r| r.get(0))?)
}

/// The live locations of visible people: (person's portable id,
/// location's portable id), by person.
pub fn location_links(
    conn: &Connection,
    vis: &Visibility,
    each: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    each_row(
        conn,
        &format!(
            "SELECT p.portable_id, l.portable_id
                 FROM location_memberships lm
                 JOIN people p ON p.id = lm.person_id
                 JOIN locations l ON l.id = lm.location_id AND l.deleted_at IS NULL
                 WHERE p.household_id = :household_id AND {VISIBLE_PERSON}
                 ORDER BY lm.person_id, l.id"
        ),
        &vis.with(&[]),
        each,
    )
}

pub fn locations(
    conn: &Connection,
    household_id: i64,
    each: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    each_row(
        conn,
        "SELECT portable_id, updated_at, lock_version, name, description
                 FROM locations WHERE household_id = :household_id AND deleted_at IS NULL ORDER BY id",
        &[(":household_id", &household_id)],
        each,
    )
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
