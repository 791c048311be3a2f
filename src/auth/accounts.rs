//! Accounts: an email and an argon2id password hash.

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::{ApiError, Result};

pub fn find_by_email(conn: &Connection, email: &str) -> Result<Option<i64>> {
    Ok(conn
        .query_row("SELECT id FROM accounts WHERE email = ?1", [email], |r| {
            r.get(0)
        })
        .optional()?)
}

/// Creates an account; an email already in use is a conflict.
pub fn create(
    conn: &Connection,
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
    let now = crate::time::now();
    conn.execute(
        "INSERT INTO accounts (email, display_name, password_hash, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?4)",
        params![email, display_name, password_hash, now],
    )?;
    Ok(conn.last_insert_rowid())
}
