//! SQL for delegated sign-in: linked provider identities and the sign-ins
//! waiting for the provider's answer.

use crate::db::PrepareKept;
use rusqlite::{Connection, OptionalExtension, params};

use crate::db::WriteTx;
use crate::domain::Timestamp;
use crate::error::Result;

pub struct Pending {
    pub nonce: String,
    pub code_verifier: String,
    pub purpose: String,
    pub expires_at: Timestamp,
}

pub fn insert_pending(
    tx: &WriteTx,
    state_sha256: &[u8],
    nonce: &str,
    code_verifier: &str,
    purpose: &str,
    expires_at: &Timestamp,
) -> Result<()> {
    let now = Timestamp::now();
    // Sign-ins nobody came back from are forgotten when new ones start.
    tx.prepare_kept("DELETE FROM oidc_pending WHERE expires_at < ?1")?
        .execute([&now])?;
    tx.prepare_kept(
        "INSERT INTO oidc_pending (state_sha256, nonce, code_verifier, purpose, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![state_sha256, nonce, code_verifier, purpose, now, expires_at])?;
    Ok(())
}

/// The pending sign-in of a state, removed: a state is good once.
pub fn take_pending(tx: &WriteTx, state_sha256: &[u8]) -> Result<Option<Pending>> {
    let found = tx
        .prepare_kept(
            "DELETE FROM oidc_pending WHERE state_sha256 = ?1
             RETURNING nonce, code_verifier, purpose, expires_at",
        )?
        .query_row([state_sha256], |r| {
            Ok(Pending {
                nonce: r.get(0)?,
                code_verifier: r.get(1)?,
                purpose: r.get(2)?,
                expires_at: r.get(3)?,
            })
        })
        .optional()?;
    Ok(found)
}

/// The account a provider identity is linked to.
pub fn linked_account(conn: &Connection, issuer: &str, subject: &str) -> Result<Option<i64>> {
    Ok(conn
        .prepare_kept("SELECT account_id FROM oidc_identities WHERE issuer = ?1 AND subject = ?2")?
        .query_row([issuer, subject], |r| r.get(0))
        .optional()?)
}

/// Links an identity to an account, or notes that a linked one was used.
pub fn link(tx: &WriteTx, issuer: &str, subject: &str, account_id: i64) -> Result<()> {
    let now = Timestamp::now();
    tx.prepare_kept(
        "INSERT INTO oidc_identities (issuer, subject, account_id, created_at, last_used_at)
         VALUES (?1, ?2, ?3, ?4, ?4)
         ON CONFLICT (issuer, subject) DO UPDATE SET last_used_at = excluded.last_used_at",
    )?
    .execute(params![issuer, subject, account_id, now])?;
    Ok(())
}

pub fn insert_pending_link(
    tx: &WriteTx,
    token: &crate::auth::token::NewToken,
    issuer: &str,
    subject: &str,
    expires_at: &Timestamp,
) -> Result<()> {
    tx.prepare_kept("DELETE FROM oidc_pending_links WHERE expires_at < ?1")?
        .execute([Timestamp::now()])?;
    tx.prepare_kept(
        "INSERT INTO oidc_pending_links (selector, secret_sha256, issuer, subject, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        token.selector,
        token.secret_sha256,
        issuer,
        subject,
        expires_at
    ])?;
    Ok(())
}

/// A pending link (issuer, subject), removed when its secret matches and it
/// has not expired: a link token is good once.
pub fn take_pending_link(
    tx: &WriteTx,
    presented: &crate::auth::token::Presented<'_>,
) -> Result<Option<(String, String)>> {
    let found: Option<(i64, Vec<u8>, String, String, Timestamp)> = tx
        .prepare_kept(
            "SELECT id, secret_sha256, issuer, subject, expires_at FROM oidc_pending_links
             WHERE selector = ?1",
        )?
        .query_row([presented.selector], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .optional()?;
    let Some((id, secret, issuer, subject, expires_at)) = found else {
        return Ok(None);
    };
    if !presented.matches(&secret) || expires_at <= Timestamp::now() {
        return Ok(None);
    }
    tx.prepare_kept("DELETE FROM oidc_pending_links WHERE id = ?1")?
        .execute([id])?;
    Ok(Some((issuer, subject)))
}
