//! SQL for the mail outbox.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use rusqlite::{Connection, params};

use crate::domain::Timestamp;
use crate::error::Result;

pub struct Queued {
    pub id: i64,
    pub recipient: String,
    pub subject: String,
    pub text_body: String,
    pub html_body: String,
    pub attempts: i64,
}

pub fn insert(
    conn: &WriteTx,
    recipient: &str,
    subject: &str,
    text: &str,
    html: &str,
) -> Result<i64> {
    let now = Timestamp::now();
    conn.execute(
        "INSERT INTO mail_outbox (recipient, subject, text_body, html_body, next_attempt_at, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        params![recipient, subject, text, html, now],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Unsent messages whose next attempt is due, oldest first.
pub fn due(conn: &Connection, limit: i64) -> Result<Vec<Queued>> {
    Ok(conn
        .prepare_kept(
            "SELECT id, recipient, subject, text_body, html_body, attempts FROM mail_outbox
             WHERE sent_at IS NULL AND next_attempt_at <= ?1 ORDER BY id LIMIT ?2",
        )?
        .query_map(params![Timestamp::now(), limit], |r| {
            Ok(Queued {
                id: r.get(0)?,
                recipient: r.get(1)?,
                subject: r.get(2)?,
                text_body: r.get(3)?,
                html_body: r.get(4)?,
                attempts: r.get(5)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

pub fn mark_sent(conn: &WriteTx, id: i64) -> Result<()> {
    conn.execute(
        "UPDATE mail_outbox SET sent_at = ?2, last_error = NULL WHERE id = ?1",
        params![id, Timestamp::now()],
    )?;
    Ok(())
}

pub fn mark_failed(
    conn: &WriteTx,
    id: i64,
    next_attempt_at: &Timestamp,
    error: &str,
) -> Result<()> {
    conn.execute(
        "UPDATE mail_outbox SET attempts = attempts + 1, next_attempt_at = ?2, last_error = ?3
         WHERE id = ?1",
        params![id, next_attempt_at, error],
    )?;
    Ok(())
}
