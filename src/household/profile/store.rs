//! SQL for the profile: account preferences and avatars.

use rusqlite::{Connection, OptionalExtension, params};

use super::model::Avatar;
use crate::error::{ApiError, Result};

/// The profile preferences kept on the account.
#[derive(Debug, Clone)]
pub struct AccountPrefs {
    pub account_id: i64,
    pub email: String,
    pub time_zone: Option<String>,
    pub gravatar_enabled: bool,
    pub mobile_shortcuts: Vec<String>,
    pub updated_at: String,
}

pub fn account_prefs(conn: &Connection, account_id: i64) -> Result<AccountPrefs> {
    let (email, time_zone, gravatar_enabled, shortcuts, updated_at): (
        String,
        Option<String>,
        bool,
        String,
        String,
    ) = conn
        .prepare_cached(
            "SELECT email, time_zone, gravatar_enabled, mobile_shortcuts, updated_at
             FROM accounts WHERE id = ?1",
        )?
        .query_row([account_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?;
    let mobile_shortcuts = serde_json::from_str(&shortcuts)
        .map_err(|e| ApiError::internal(format!("account {account_id} mobile_shortcuts: {e}")))?;
    Ok(AccountPrefs {
        account_id,
        email,
        time_zone,
        gravatar_enabled,
        mobile_shortcuts,
        updated_at,
    })
}

/// Saves the preferences and their new `updated_at`.
pub fn update_account_prefs(conn: &Connection, prefs: &AccountPrefs) -> Result<()> {
    let shortcuts = serde_json::to_string(&prefs.mobile_shortcuts).map_err(ApiError::internal)?;
    conn.prepare_cached(
        "UPDATE accounts SET time_zone = ?2, gravatar_enabled = ?3, mobile_shortcuts = ?4,
                updated_at = ?5
         WHERE id = ?1",
    )?
    .execute(params![
        prefs.account_id,
        prefs.time_zone,
        prefs.gravatar_enabled,
        shortcuts,
        prefs.updated_at,
    ])?;
    Ok(())
}

/// When the person's avatar was last replaced, if they have one.
pub fn avatar_updated_at(conn: &Connection, person_id: i64) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT updated_at FROM avatars WHERE person_id = ?1")?
        .query_row([person_id], |r| r.get(0))
        .optional()?)
}

pub fn avatar(conn: &Connection, person_id: i64) -> Result<Option<Avatar>> {
    Ok(conn
        .prepare_cached("SELECT content_type, data FROM avatars WHERE person_id = ?1")?
        .query_row([person_id], |r| {
            Ok(Avatar {
                content_type: r.get(0)?,
                data: r.get(1)?,
            })
        })
        .optional()?)
}

/// Stores the person's avatar, replacing any earlier one.
pub fn upsert_avatar(conn: &Connection, person_id: i64, avatar: &Avatar, now: &str) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO avatars (person_id, content_type, data, updated_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (person_id) DO UPDATE SET
             content_type = excluded.content_type, data = excluded.data,
             updated_at = excluded.updated_at",
    )?
    .execute(params![person_id, avatar.content_type, avatar.data, now])?;
    Ok(())
}

/// Removes the person's avatar; false when there was none.
pub fn delete_avatar(conn: &Connection, person_id: i64) -> Result<bool> {
    let removed = conn
        .prepare_cached("DELETE FROM avatars WHERE person_id = ?1")?
        .execute([person_id])?;
    Ok(removed > 0)
}
