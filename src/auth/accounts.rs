//! Accounts: an email and an argon2id password hash.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::{ApiError, Result};

pub fn find_by_email(conn: &Connection, email: &str) -> Result<Option<i64>> {
    Ok(conn
        .query_row("SELECT id FROM accounts WHERE email = ?1", [email], |r| {
            r.get(0)
        })
        .optional()?)
}

/// The email of an account that exists.
pub fn email_of(conn: &Connection, account_id: i64) -> Result<String> {
    Ok(conn
        .prepare_kept("SELECT email FROM accounts WHERE id = ?1")?
        .query_row([account_id], |r| r.get(0))?)
}

/// Creates an account; an email already in use is a conflict.
pub fn create(
    conn: &WriteTx,
    email: &str,
    password_hash: &str,
    display_name: Option<&str>,
) -> Result<i64> {
    if find_by_email(conn, email)?.is_some() {
        return Err(ApiError::conflict(
            "account_exists",
            format!("an account with the email {email} already exists"),
        ));
    }
    let now = crate::domain::Timestamp::now();
    conn.execute(
        "INSERT INTO accounts (email, display_name, password_hash, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?4)",
        params![email, display_name, password_hash, now],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Replaces the account's password hash.
pub fn set_password_hash(conn: &WriteTx, account_id: i64, password_hash: &str) -> Result<()> {
    conn.execute(
        "UPDATE accounts SET password_hash = ?2, updated_at = ?3 WHERE id = ?1",
        params![account_id, password_hash, crate::domain::Timestamp::now()],
    )?;
    Ok(())
}

/// The profile preferences kept on the account (the profile's rules are in
/// `household::profile`).
#[derive(Debug, Clone)]
pub struct AccountPrefs {
    pub account_id: i64,
    pub email: String,
    pub time_zone: Option<String>,
    pub gravatar_enabled: bool,
    pub mobile_shortcuts: Vec<String>,
    pub updated_at: crate::domain::Timestamp,
}

pub fn prefs(conn: &Connection, account_id: i64) -> Result<AccountPrefs> {
    let (email, time_zone, gravatar_enabled, shortcuts, updated_at): (
        String,
        Option<String>,
        bool,
        String,
        crate::domain::Timestamp,
    ) = conn
        .prepare_kept(
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
pub fn update_prefs(conn: &WriteTx, prefs: &AccountPrefs) -> Result<()> {
    let shortcuts = serde_json::to_string(&prefs.mobile_shortcuts).map_err(ApiError::internal)?;
    conn.prepare_kept(
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
