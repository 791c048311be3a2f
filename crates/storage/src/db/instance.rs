//! Facts about this installation, made on first start and kept in the
//! database: its id (named in exports and snapshots) and the secrets the
//! server signs with.

use crate::db::PrepareKept;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::{ApiError, Result};

pub const INSTANCE_ID: &str = "instance_id";
pub const OCCURRENCE_KEY_SECRET: &str = "occurrence_key_secret";
/// The Web Push (VAPID, RFC 8292) signing key: 32 random bytes read as a
/// P-256 private scalar by `reminders`.
pub const VAPID_PRIVATE_KEY: &str = "vapid_private_key";
/// The address the owner said phones and other computers open Pillbox at
/// (set-up); the operator's `--public-url` goes before it.
pub const PUBLIC_URL: &str = "public_url";

/// Creates whatever is missing; called once at start-up, before serving.
pub fn ensure(conn: &Connection) -> rusqlite::Result<()> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).expect("operating system random source");
    let mut vapid = [0u8; 32];
    getrandom::fill(&mut vapid).expect("operating system random source");
    for (key, value) in [
        (INSTANCE_ID, crate::db::new_portable_id()),
        (OCCURRENCE_KEY_SECRET, URL_SAFE_NO_PAD.encode(secret)),
        (VAPID_PRIVATE_KEY, URL_SAFE_NO_PAD.encode(vapid)),
    ] {
        conn.execute(
            "INSERT INTO instance_settings (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING",
            params![key, value],
        )?;
    }
    Ok(())
}

pub fn get(conn: &Connection, key: &str) -> Result<String> {
    find(conn, key)?.ok_or_else(|| ApiError::internal(format!("instance setting {key} is missing")))
}

/// A setting that may be absent (one the owner gives, not one made at start).
pub fn find(conn: &Connection, key: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_kept("SELECT value FROM instance_settings WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .optional()?)
}

/// Sets a setting the owner gives, replacing what was there.
pub fn set(tx: &crate::db::WriteTx, key: &str, value: &str) -> Result<()> {
    tx.prepare_kept(
        "INSERT INTO instance_settings (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )?
    .execute(params![key, value])?;
    Ok(())
}

/// The secret as bytes.
pub fn secret(conn: &Connection, key: &str) -> Result<Vec<u8>> {
    URL_SAFE_NO_PAD
        .decode(get(conn, key)?)
        .map_err(|e| ApiError::internal(format!("instance secret {key}: {e}")))
}
