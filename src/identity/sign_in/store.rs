//! SQL for sign-ins waiting for their second factor.

use crate::db::PrepareKept;
use rusqlite::{OptionalExtension, params};

use crate::auth::token::NewToken;
use crate::db::WriteTx;
use crate::error::Result;

pub fn insert_pending(
    tx: &WriteTx,
    token: &NewToken,
    account_id: i64,
    expires_at: &str,
) -> Result<()> {
    tx.prepare_kept("DELETE FROM sign_in_pending WHERE expires_at <= ?1")?
        .execute([crate::domain::Timestamp::now()])?;
    tx.prepare_kept(
        "INSERT INTO sign_in_pending (selector, secret_sha256, account_id, expires_at)
         VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![
        token.selector,
        token.secret_sha256,
        account_id,
        expires_at
    ])?;
    Ok(())
}

/// A sign-in waiting for its second factor.
pub struct Pending {
    pub id: i64,
    pub secret_sha256: Vec<u8>,
    pub account_id: i64,
    pub expires_at: String,
}

pub fn find_pending(tx: &WriteTx, selector: &str) -> Result<Option<Pending>> {
    Ok(tx
        .prepare_kept(
            "SELECT id, secret_sha256, account_id, expires_at FROM sign_in_pending WHERE selector = ?1",
        )?
        .query_row([selector], |r| {
            Ok(Pending {
                id: r.get(0)?,
                secret_sha256: r.get(1)?,
                account_id: r.get(2)?,
                expires_at: r.get(3)?,
            })
        })
        .optional()?)
}

pub fn delete_pending(tx: &WriteTx, id: i64) -> Result<()> {
    tx.prepare_kept("DELETE FROM sign_in_pending WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}
