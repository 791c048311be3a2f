//! SQL for authorization codes.

use crate::db::PrepareKept;
use rusqlite::{Connection, OptionalExtension, params};

use crate::auth::token::NewToken;
use crate::db::WriteTx;
use crate::error::Result;

/// What a code was issued for.
#[derive(Debug, Clone)]
pub struct Grant {
    pub account_id: i64,
    pub client_id: String,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub scope: String,
    pub device_label: String,
}

/// Forgets codes that expired before `before`: a code kept a while after
/// its expiry still catches a late replay of a used one.
pub fn delete_expired(tx: &WriteTx, before: &str) -> Result<()> {
    tx.prepare_kept("DELETE FROM oauth_codes WHERE expires_at <= ?1")?
        .execute([before])?;
    Ok(())
}

pub fn insert_code(
    tx: &WriteTx,
    code: &NewToken,
    grant: &Grant,
    now: &str,
    expires_at: &str,
) -> Result<()> {
    tx.prepare_kept(
        "INSERT INTO oauth_codes (selector, secret_sha256, account_id, client_id, redirect_uri,
             code_challenge, scope, device_label, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        code.selector,
        code.secret_sha256,
        grant.account_id,
        grant.client_id,
        grant.redirect_uri,
        grant.code_challenge,
        grant.scope,
        grant.device_label,
        now,
        expires_at,
    ])?;
    Ok(())
}

pub struct StoredCode {
    pub id: i64,
    pub secret_sha256: Vec<u8>,
    pub grant: Grant,
    pub expires_at: String,
    pub used_at: Option<String>,
    pub session_id: Option<i64>,
}

pub fn find_code(conn: &Connection, selector: &str) -> Result<Option<StoredCode>> {
    Ok(conn
        .prepare_kept(
            "SELECT id, secret_sha256, account_id, client_id, redirect_uri, code_challenge, scope,
                    device_label, expires_at, used_at, session_id
             FROM oauth_codes WHERE selector = ?1",
        )?
        .query_row([selector], |r| {
            Ok(StoredCode {
                id: r.get(0)?,
                secret_sha256: r.get(1)?,
                grant: Grant {
                    account_id: r.get(2)?,
                    client_id: r.get(3)?,
                    redirect_uri: r.get(4)?,
                    code_challenge: r.get(5)?,
                    scope: r.get(6)?,
                    device_label: r.get(7)?,
                },
                expires_at: r.get(8)?,
                used_at: r.get(9)?,
                session_id: r.get(10)?,
            })
        })
        .optional()?)
}

/// Marks the code used, naming the session its redemption started (if any).
pub fn mark_used(tx: &WriteTx, id: i64, now: &str, session_id: Option<i64>) -> Result<()> {
    tx.prepare_kept("UPDATE oauth_codes SET used_at = ?2, session_id = ?3 WHERE id = ?1")?
        .execute(params![id, now, session_id])?;
    Ok(())
}
