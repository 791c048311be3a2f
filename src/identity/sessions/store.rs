//! SQL for sign-in sessions and their access and refresh tokens.

use crate::db::PrepareKept;
use rusqlite::{Connection, OptionalExtension, params};

use super::model::Session;
use crate::auth::token::NewToken;
use crate::db::WriteTx;
use crate::domain::{Page, Timestamp};
use crate::error::Result;

pub fn insert_session(
    tx: &WriteTx,
    account_id: i64,
    client_id: &str,
    device_label: &str,
    now: &str,
    expires_at: &str,
) -> Result<i64> {
    tx.prepare_kept(
        "INSERT INTO oauth_sessions (account_id, client_id, device_label, created_at, last_used_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
    )?
    .execute(params![account_id, client_id, device_label, now, expires_at])?;
    Ok(tx.last_insert_rowid())
}

pub fn insert_token(
    tx: &WriteTx,
    session_id: i64,
    kind: &str,
    token: &NewToken,
    now: &str,
    expires_at: &str,
) -> Result<()> {
    tx.prepare_kept(
        "INSERT INTO oauth_tokens (session_id, kind, selector, secret_sha256, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        session_id,
        kind,
        token.selector,
        token.secret_sha256,
        now,
        expires_at
    ])?;
    Ok(())
}

/// A stored token and the session it belongs to.
pub struct StoredToken {
    pub id: i64,
    pub kind: String,
    pub secret_sha256: Vec<u8>,
    pub expires_at: String,
    pub rotated_at: Option<String>,
    pub session_id: i64,
    pub account_id: i64,
    pub client_id: String,
    pub session_revoked: bool,
    pub session_expires_at: String,
}

pub fn find_token(conn: &Connection, selector: &str) -> Result<Option<StoredToken>> {
    Ok(conn
        .prepare_kept(
            "SELECT t.id, t.kind, t.secret_sha256, t.expires_at, t.rotated_at, s.id,
                    s.account_id, s.client_id, s.revoked_at IS NOT NULL, s.expires_at
             FROM oauth_tokens t JOIN oauth_sessions s ON s.id = t.session_id
             WHERE t.selector = ?1",
        )?
        .query_row([selector], |r| {
            Ok(StoredToken {
                id: r.get(0)?,
                kind: r.get(1)?,
                secret_sha256: r.get(2)?,
                expires_at: r.get(3)?,
                rotated_at: r.get(4)?,
                session_id: r.get(5)?,
                account_id: r.get(6)?,
                client_id: r.get(7)?,
                session_revoked: r.get(8)?,
                session_expires_at: r.get(9)?,
            })
        })
        .optional()?)
}

/// Forgets the session's expired tokens: nothing accepts them any more, and
/// a refreshing device would otherwise leave two rows behind every hour.
pub fn delete_expired(tx: &WriteTx, session_id: i64, now: &str) -> Result<()> {
    tx.prepare_kept("DELETE FROM oauth_tokens WHERE session_id = ?1 AND expires_at <= ?2")?
        .execute(params![session_id, now])?;
    Ok(())
}

pub fn mark_rotated(tx: &WriteTx, token_id: i64, now: &str) -> Result<()> {
    tx.prepare_kept("UPDATE oauth_tokens SET rotated_at = ?2 WHERE id = ?1")?
        .execute(params![token_id, now])?;
    Ok(())
}

/// Moves the session's end (a refresh starts the idle period again).
pub fn slide(tx: &WriteTx, session_id: i64, now: &str, expires_at: &str) -> Result<()> {
    tx.prepare_kept("UPDATE oauth_sessions SET last_used_at = ?2, expires_at = ?3 WHERE id = ?1")?
        .execute(params![session_id, now, expires_at])?;
    Ok(())
}

/// Revokes a live session; false when it was not live.
pub fn revoke(tx: &WriteTx, session_id: i64, reason: &str, now: &str) -> Result<bool> {
    let changed = tx
        .prepare_kept(
            "UPDATE oauth_sessions SET revoked_at = ?2, revoked_reason = ?3
             WHERE id = ?1 AND revoked_at IS NULL",
        )?
        .execute(params![session_id, now, reason])?;
    Ok(changed == 1)
}

pub fn revoke_all_of_account(
    tx: &WriteTx,
    account_id: i64,
    reason: &str,
    now: &str,
) -> Result<usize> {
    Ok(tx
        .prepare_kept(
            "UPDATE oauth_sessions SET revoked_at = ?2, revoked_reason = ?3
             WHERE account_id = ?1 AND revoked_at IS NULL",
        )?
        .execute(params![account_id, now, reason])?)
}

/// Revokes every live session of the account but `keep`; answers how many.
pub fn revoke_others_of_account(
    tx: &WriteTx,
    account_id: i64,
    keep: i64,
    reason: &str,
    now: &str,
) -> Result<usize> {
    Ok(tx
        .prepare_kept(
            "UPDATE oauth_sessions SET revoked_at = ?3, revoked_reason = ?4
             WHERE account_id = ?1 AND id <> ?2 AND revoked_at IS NULL",
        )?
        .execute(params![account_id, keep, now, reason])?)
}

/// The account of a live (not revoked, not expired) session.
pub fn live_owner(conn: &Connection, session_id: i64, now: &str) -> Result<Option<i64>> {
    Ok(conn
        .prepare_kept(
            "SELECT account_id FROM oauth_sessions
             WHERE id = ?1 AND revoked_at IS NULL AND expires_at > ?2",
        )?
        .query_row(params![session_id, now], |r| r.get(0))
        .optional()?)
}

/// The account's live sessions, newest first.
pub fn list_live(
    conn: &Connection,
    account_id: i64,
    current: Option<i64>,
    now: &str,
    page: Page,
) -> Result<(Vec<Session>, i64)> {
    let filter = "account_id = ?1 AND revoked_at IS NULL AND expires_at > ?2";
    let total = conn.query_row(
        &format!("SELECT count(*) FROM oauth_sessions WHERE {filter}"),
        params![account_id, now],
        |r| r.get(0),
    )?;
    let rows = conn
        .prepare_cached(&format!(
            "SELECT id, client_id, device_label, created_at, last_used_at, expires_at
             FROM oauth_sessions WHERE {filter} ORDER BY id DESC LIMIT ?3 OFFSET ?4"
        ))?
        .query_map(params![account_id, now, page.limit(), page.offset()], |r| {
            let id: i64 = r.get(0)?;
            Ok(Session {
                id,
                client_id: r.get(1)?,
                device_label: r.get(2)?,
                created_at: Timestamp::from_stored(r.get(3)?),
                last_used_at: Timestamp::from_stored(r.get(4)?),
                expires_at: Timestamp::from_stored(r.get(5)?),
                current: current == Some(id),
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((rows, total))
}
