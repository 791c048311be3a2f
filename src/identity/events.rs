//! Security events of accounts (sign-ins, failures, second-factor and
//! password changes) and the failed-attempt counters that slow guessing.
//! An event of a known account is also written to the audit log of each
//! household the account is an active member of, so its administrators see
//! it; nothing here ever holds a password, code or token.

use crate::db::PrepareKept;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};

use crate::db::WriteTx;
use crate::error::Result;

/// Appends an event; `account_id` is `None` for a sign-in with an email no
/// account has (the event says only that it failed).
pub fn record(
    tx: &WriteTx,
    account_id: Option<i64>,
    event_type: &'static str,
    address: &str,
    metadata: Value,
) -> Result<()> {
    let now = crate::domain::Timestamp::now();
    tx.prepare_kept(
        "INSERT INTO sign_in_events (account_id, event_type, address, metadata, occurred_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        account_id,
        event_type,
        address,
        metadata.to_string(),
        now
    ])?;
    let Some(account_id) = account_id else {
        return Ok(());
    };
    let memberships: Vec<(i64, i64)> = tx
        .prepare_kept(
            "SELECT id, household_id FROM memberships WHERE account_id = ?1 AND status = 'active'",
        )?
        .query_map([account_id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (membership_id, household_id) in memberships {
        crate::household::audit::record(
            tx,
            household_id,
            Some(membership_id),
            event_type,
            ("membership", membership_id),
            metadata.clone(),
        )?;
    }
    Ok(())
}

/// Failures allowed before each further one makes the next attempt wait.
pub const FREE_FAILURES_PER_ACCOUNT: i64 = 5;
pub const FREE_FAILURES_PER_ADDRESS: i64 = 10;
/// The longest wait; a quiet hour forgets earlier failures.
const MAX_DELAY_SECS: i64 = 15 * 60;
const FORGET_AFTER_SECS: i64 = 60 * 60;

/// The key of an account's counter: its email, so an email no account has
/// is slowed exactly like one that exists (the delays reveal nothing).
pub fn account_key(email: &str) -> String {
    format!("account:{}", email.trim().to_lowercase())
}

/// Seconds until `key` may try again, if it must wait.
pub fn wait_secs(conn: &Connection, key: &str) -> Result<Option<u64>> {
    let locked: Option<Option<String>> = conn
        .prepare_kept("SELECT locked_until FROM sign_in_failures WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .optional()?;
    let Some(Some(until)) = locked else {
        return Ok(None);
    };
    let until: jiff::Timestamp = match until.parse() {
        Ok(t) => t,
        Err(_) => return Ok(None),
    };
    let left = until.duration_since(jiff::Timestamp::now()).as_secs_f64();
    Ok((left > 0.0).then(|| left.ceil() as u64))
}

/// Counts a failure against `key`; past the free ones, the wait doubles
/// with each (1 s, 2 s, 4 s, ... up to 15 minutes).
pub fn fail(tx: &WriteTx, key: &str, free: i64) -> Result<()> {
    let now = jiff::Timestamp::now();
    let previous: Option<(i64, String)> = tx
        .prepare_kept("SELECT failures, last_failure_at FROM sign_in_failures WHERE key = ?1")?
        .query_row([key], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let failures = match previous {
        Some((n, last)) => {
            let stale = last
                .parse::<jiff::Timestamp>()
                .map(|t| now.duration_since(t).as_secs() > FORGET_AFTER_SECS)
                .unwrap_or(true);
            if stale { 1 } else { n + 1 }
        }
        None => 1,
    };
    // Counters quiet for an hour, whose wait is over, would start from
    // nothing anyway; dropping them keeps a spray of emails from piling up.
    let forget_before = crate::domain::Timestamp::from_jiff(
        now - jiff::SignedDuration::from_secs(FORGET_AFTER_SECS),
    );
    tx.prepare_kept(
        "DELETE FROM sign_in_failures WHERE last_failure_at < ?1
             AND (locked_until IS NULL OR locked_until < ?2)",
    )?
    .execute(params![
        forget_before,
        crate::domain::Timestamp::from_jiff(now)
    ])?;
    let locked_until = (failures > free).then(|| {
        let exponent = (failures - free - 1).min(20) as u32;
        let delay = 2i64.saturating_pow(exponent).min(MAX_DELAY_SECS);
        crate::domain::Timestamp::from_jiff(now + jiff::SignedDuration::from_secs(delay))
    });
    tx.prepare_kept(
        "INSERT INTO sign_in_failures (key, failures, last_failure_at, locked_until)
         VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (key) DO UPDATE SET failures = excluded.failures,
             last_failure_at = excluded.last_failure_at, locked_until = excluded.locked_until",
    )?
    .execute(params![
        key,
        failures,
        crate::domain::Timestamp::from_jiff(now),
        locked_until
    ])?;
    Ok(())
}

/// Counts a failed attempt (a password or a code, at sign-in or before a
/// second-factor change) against the address and the account (or email),
/// and records it.
pub fn failed(
    tx: &WriteTx,
    account_id: Option<i64>,
    email: &str,
    address: &str,
    step: &str,
) -> Result<()> {
    fail(tx, address, FREE_FAILURES_PER_ADDRESS)?;
    fail(tx, &account_key(email), FREE_FAILURES_PER_ACCOUNT)?;
    tracing::info!(account_id, step, "sign-in failed");
    record(tx, account_id, "sign_in.failed", address, self::step(step))
}

/// Forgets the failures of `key` (an account after it signed in).
pub fn clear(tx: &WriteTx, key: &str) -> Result<()> {
    tx.prepare_kept("DELETE FROM sign_in_failures WHERE key = ?1")?
        .execute([key])?;
    Ok(())
}

/// Metadata naming the step that failed or succeeded.
pub fn step(step: &str) -> Value {
    json!({ "step": step })
}
