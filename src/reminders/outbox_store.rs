//! SQL for the outbox: notifications owed to one channel of a member, and
//! what became of them. The only writer of `reminder_outbox`.

use crate::db::PrepareKept;
use rusqlite::{Connection, params};

use super::store::{CHANNELS, Target};
use crate::db::WriteTx;
use crate::domain::Timestamp;
use crate::error::Result;

/// A notification to queue for one target.
pub struct NewNotification<'a> {
    pub household_id: i64,
    pub membership_id: i64,
    pub target: Target,
    pub kind: &'static str,
    pub subject: &'a str,
    pub due_at: &'a Timestamp,
    pub title: &'a str,
    pub body: &'a str,
    /// Queued for delivery, or recorded as dropped (too old to send).
    pub dropped: bool,
    pub now: &'a Timestamp,
}

/// Queues a notification once: the same subject, kind and target again
/// changes nothing. Whether a row was added.
pub fn enqueue(conn: &WriteTx, n: &NewNotification<'_>) -> Result<bool> {
    let status = if n.dropped { "dropped" } else { "pending" };
    let finished = n.dropped.then(|| n.now.as_str());
    Ok(conn
        .prepare_kept(
            "INSERT INTO reminder_outbox
               (household_id, membership_id, channel, target_id, kind, subject, due_at, title,
                body, status, next_attempt_at, created_at, finished_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?7, ?11, ?12)
             ON CONFLICT (subject, kind, channel, target_id) DO NOTHING",
        )?
        .execute(params![
            n.household_id,
            n.membership_id,
            n.target.channel,
            n.target.id,
            n.kind,
            n.subject,
            n.due_at.as_str(),
            n.title,
            n.body,
            status,
            n.now.as_str(),
            finished,
        ])?
        > 0)
}

#[derive(Debug, Clone)]
pub struct OutboxRow {
    pub id: i64,
    pub household_id: i64,
    pub membership_id: i64,
    pub channel: String,
    pub target_id: i64,
    pub kind: String,
    pub subject: String,
    pub due_at: Timestamp,
    pub title: String,
    pub body: String,
    pub attempts: i64,
}

/// Pending notifications whose next attempt is due, oldest first.
pub fn due(conn: &Connection, now: &Timestamp, limit: i64) -> Result<Vec<OutboxRow>> {
    let mut stmt = conn.prepare_kept(
        "SELECT id, household_id, membership_id, channel, target_id, kind, subject, due_at,
                title, body, attempts
           FROM reminder_outbox
          WHERE status = 'pending' AND next_attempt_at <= ?1
          ORDER BY next_attempt_at, id
          LIMIT ?2",
    )?;
    let rows = stmt
        .query_map(params![now.as_str(), limit], |r| {
            Ok(OutboxRow {
                id: r.get(0)?,
                household_id: r.get(1)?,
                membership_id: r.get(2)?,
                channel: r.get(3)?,
                target_id: r.get(4)?,
                kind: r.get(5)?,
                subject: r.get(6)?,
                due_at: Timestamp::from_stored(r.get(7)?),
                title: r.get(8)?,
                body: r.get(9)?,
                attempts: r.get(10)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// When the next pending notification is due for an attempt.
pub fn next_attempt(conn: &Connection) -> Result<Option<Timestamp>> {
    Ok(conn
        .prepare_kept("SELECT min(next_attempt_at) FROM reminder_outbox WHERE status = 'pending'")?
        .query_row([], |r| r.get::<_, Option<String>>(0))?
        .map(Timestamp::from_stored))
}

/// Ends a pending notification: `delivered`, `failed` or `dropped`.
pub fn finish(
    conn: &WriteTx,
    id: i64,
    status: &str,
    error: Option<&str>,
    now: &Timestamp,
) -> Result<()> {
    conn.prepare_kept(
        "UPDATE reminder_outbox
            SET status = ?2, attempts = attempts + 1, last_error = ?3, finished_at = ?4
          WHERE id = ?1 AND status = 'pending'",
    )?
    .execute(params![id, status, error, now.as_str()])?;
    Ok(())
}

/// Leaves a notification pending for another attempt at `next`.
pub fn retry_at(conn: &WriteTx, id: i64, error: &str, next: &Timestamp) -> Result<()> {
    conn.prepare_kept(
        "UPDATE reminder_outbox
            SET attempts = attempts + 1, last_error = ?2, next_attempt_at = ?3
          WHERE id = ?1 AND status = 'pending'",
    )?
    .execute(params![id, error, next.as_str()])?;
    Ok(())
}

/// Delivery health of one channel in a household.
pub struct ChannelHealth {
    pub channel: &'static str,
    pub last_delivered_at: Option<Timestamp>,
    pub delivered: i64,
    pub pending: i64,
    pub failed: i64,
    pub dropped: i64,
    pub last_error: Option<String>,
}

pub fn health(conn: &Connection, household_id: i64) -> Result<Vec<ChannelHealth>> {
    let mut stmt = conn.prepare_kept(
        "SELECT max(CASE WHEN status = 'delivered' THEN finished_at END),
                count(CASE WHEN status = 'delivered' THEN 1 END),
                count(CASE WHEN status = 'pending' THEN 1 END),
                count(CASE WHEN status = 'failed' THEN 1 END),
                count(CASE WHEN status = 'dropped' THEN 1 END),
                (SELECT last_error FROM reminder_outbox e
                  WHERE e.household_id = ?1 AND e.channel = ?2 AND e.last_error IS NOT NULL
                  ORDER BY coalesce(e.finished_at, e.next_attempt_at) DESC, e.id DESC LIMIT 1)
           FROM reminder_outbox WHERE household_id = ?1 AND channel = ?2",
    )?;
    let mut out = Vec::new();
    for channel in CHANNELS {
        let health = stmt.query_row(params![household_id, channel], |r| {
            Ok(ChannelHealth {
                channel,
                last_delivered_at: r.get::<_, Option<String>>(0)?.map(Timestamp::from_stored),
                delivered: r.get(1)?,
                pending: r.get(2)?,
                failed: r.get(3)?,
                dropped: r.get(4)?,
                last_error: r.get(5)?,
            })
        })?;
        out.push(health);
    }
    Ok(out)
}
