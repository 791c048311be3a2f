//! SQL for TOTP secrets (encrypted) and recovery codes (hashed).

use crate::db::PrepareKept;
use rusqlite::{Connection, OptionalExtension, params};

use crate::db::WriteTx;
use crate::error::Result;

pub struct StoredTotp {
    pub secret_encrypted: Vec<u8>,
    pub confirmed: bool,
    pub last_step: Option<u64>,
}

pub fn find(conn: &Connection, account_id: i64) -> Result<Option<StoredTotp>> {
    Ok(conn
        .prepare_kept(
            "SELECT secret_encrypted, confirmed_at IS NOT NULL, last_step
             FROM account_totp WHERE account_id = ?1",
        )?
        .query_row([account_id], |r| {
            Ok(StoredTotp {
                secret_encrypted: r.get(0)?,
                confirmed: r.get(1)?,
                last_step: r.get::<_, Option<i64>>(2)?.map(|s| s as u64),
            })
        })
        .optional()?)
}

/// Starts (or restarts) an unconfirmed enrolment.
pub fn put_unconfirmed(tx: &WriteTx, account_id: i64, sealed: &[u8], now: &str) -> Result<()> {
    tx.prepare_kept(
        "INSERT INTO account_totp (account_id, secret_encrypted, created_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (account_id) DO UPDATE SET secret_encrypted = excluded.secret_encrypted,
             confirmed_at = NULL, last_step = NULL, created_at = excluded.created_at",
    )?
    .execute(params![account_id, sealed, now])?;
    Ok(())
}

pub fn confirm(tx: &WriteTx, account_id: i64, step: u64, now: &str) -> Result<()> {
    tx.prepare_kept(
        "UPDATE account_totp SET confirmed_at = ?2, last_step = ?3 WHERE account_id = ?1",
    )?
    .execute(params![account_id, now, step as i64])?;
    Ok(())
}

pub fn set_last_step(tx: &WriteTx, account_id: i64, step: u64) -> Result<()> {
    tx.prepare_kept("UPDATE account_totp SET last_step = ?2 WHERE account_id = ?1")?
        .execute(params![account_id, step as i64])?;
    Ok(())
}

/// Removes the second factor and every recovery code; true when there was one.
pub fn remove(tx: &WriteTx, account_id: i64) -> Result<bool> {
    let removed = tx
        .prepare_kept("DELETE FROM account_totp WHERE account_id = ?1")?
        .execute([account_id])?;
    tx.prepare_kept("DELETE FROM recovery_codes WHERE account_id = ?1")?
        .execute([account_id])?;
    Ok(removed == 1)
}

pub fn replace_recovery_codes(tx: &WriteTx, account_id: i64, digests: &[Vec<u8>]) -> Result<()> {
    tx.prepare_kept("DELETE FROM recovery_codes WHERE account_id = ?1")?
        .execute([account_id])?;
    let mut insert =
        tx.prepare_kept("INSERT INTO recovery_codes (account_id, code_sha256) VALUES (?1, ?2)")?;
    for digest in digests {
        insert.execute(params![account_id, digest])?;
    }
    Ok(())
}

/// (id, digest) of each unused recovery code.
pub fn unused_recovery_codes(conn: &Connection, account_id: i64) -> Result<Vec<(i64, Vec<u8>)>> {
    Ok(conn
        .prepare_kept(
            "SELECT id, code_sha256 FROM recovery_codes WHERE account_id = ?1 AND used_at IS NULL",
        )?
        .query_map([account_id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?)
}

pub fn use_recovery_code(tx: &WriteTx, id: i64, now: &str) -> Result<()> {
    tx.prepare_kept("UPDATE recovery_codes SET used_at = ?2 WHERE id = ?1")?
        .execute(params![id, now])?;
    Ok(())
}
