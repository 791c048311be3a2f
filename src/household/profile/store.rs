//! SQL for the profile's avatars (its account preferences are kept by
//! `auth::accounts`).

use crate::db::PrepareKept;
use crate::db::WriteTx;
use rusqlite::{Connection, OptionalExtension, params};

use super::model::Avatar;
use crate::domain::Timestamp;
use crate::error::Result;

/// When the person's avatar was last replaced, if they have one.
pub fn avatar_updated_at(conn: &Connection, person_id: i64) -> Result<Option<Timestamp>> {
    Ok(conn
        .prepare_kept("SELECT updated_at FROM avatars WHERE person_id = ?1")?
        .query_row([person_id], |r| r.get(0))
        .optional()?)
}

pub fn avatar(conn: &Connection, person_id: i64) -> Result<Option<Avatar>> {
    Ok(conn
        .prepare_kept("SELECT content_type, data FROM avatars WHERE person_id = ?1")?
        .query_row([person_id], |r| {
            Ok(Avatar {
                content_type: r.get(0)?,
                data: r.get(1)?,
            })
        })
        .optional()?)
}

/// Stores the person's avatar, replacing any earlier one.
pub fn upsert_avatar(
    conn: &WriteTx,
    person_id: i64,
    avatar: &Avatar,
    now: &Timestamp,
) -> Result<()> {
    conn.prepare_kept(
        "INSERT INTO avatars (person_id, content_type, data, updated_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (person_id) DO UPDATE SET
             content_type = excluded.content_type, data = excluded.data,
             updated_at = excluded.updated_at",
    )?
    .execute(params![person_id, avatar.content_type, avatar.data, now])?;
    Ok(())
}

/// Removes the person's avatar; false when there was none.
pub fn delete_avatar(conn: &WriteTx, person_id: i64) -> Result<bool> {
    let removed = conn
        .prepare_kept("DELETE FROM avatars WHERE person_id = ?1")?
        .execute([person_id])?;
    Ok(removed > 0)
}
