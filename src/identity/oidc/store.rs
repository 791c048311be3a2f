//! SQL for delegated sign-in: linked provider identities, the sign-ins
//! waiting for the provider's answer, and the links waiting for their
//! owner's password and confirmation.

use crate::db::PrepareKept;
use rusqlite::{Connection, OptionalExtension, params};

use super::model::LinkedIdentity;
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
        .prepare_kept(
            "SELECT account_id FROM linked_identities WHERE issuer = ?1 AND subject = ?2",
        )?
        .query_row([issuer, subject], |r| r.get(0))
        .optional()?)
}

/// Notes that a linked identity signed in.
pub fn touch(tx: &WriteTx, issuer: &str, subject: &str) -> Result<()> {
    tx.prepare_kept(
        "UPDATE linked_identities SET last_used_at = ?3 WHERE issuer = ?1 AND subject = ?2",
    )?
    .execute(params![issuer, subject, Timestamp::now()])?;
    Ok(())
}

/// Links an identity to an account; `None` when it is linked already (to
/// this account or another), which a new link never replaces.
pub fn link(
    tx: &WriteTx,
    issuer: &str,
    subject: &str,
    account_id: i64,
    label: &str,
) -> Result<Option<i64>> {
    let now = Timestamp::now();
    Ok(tx
        .prepare_kept(
            "INSERT INTO linked_identities (issuer, subject, account_id, label, created_at, last_used_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?5)
             ON CONFLICT (issuer, subject) DO NOTHING
             RETURNING id",
        )?
        .query_row(params![issuer, subject, account_id, label, now], |r| {
            r.get(0)
        })
        .optional()?)
}

/// The columns `identity` reads, in its order.
macro_rules! identity_columns {
    () => {
        "id, issuer, label, created_at, last_used_at"
    };
}

fn identity(r: &rusqlite::Row<'_>) -> rusqlite::Result<LinkedIdentity> {
    Ok(LinkedIdentity {
        id: r.get(0)?,
        issuer: r.get(1)?,
        name: r.get(2)?,
        linked_at: r.get(3)?,
        last_used_at: r.get(4)?,
    })
}

/// A page of the identities linked to an account, oldest link first, and
/// how many there are.
pub fn list_linked(
    conn: &Connection,
    account_id: i64,
    page: crate::domain::Page,
) -> Result<(Vec<LinkedIdentity>, i64)> {
    let mut stmt = conn.prepare_kept(concat!(
        "SELECT ",
        identity_columns!(),
        " FROM linked_identities WHERE account_id = ?1 ORDER BY id LIMIT ?2 OFFSET ?3"
    ))?;
    let rows = stmt.query_map(params![account_id, page.limit(), page.offset()], identity)?;
    let items = rows.collect::<rusqlite::Result<_>>()?;
    let total = conn
        .prepare_kept("SELECT count(*) FROM linked_identities WHERE account_id = ?1")?
        .query_row([account_id], |r| r.get(0))?;
    Ok((items, total))
}

/// Removes one of the account's linked identities, answering what it was.
pub fn unlink(tx: &WriteTx, account_id: i64, id: i64) -> Result<Option<LinkedIdentity>> {
    Ok(tx
        .prepare_kept(concat!(
            "DELETE FROM linked_identities WHERE id = ?1 AND account_id = ?2 RETURNING ",
            identity_columns!()
        ))?
        .query_row([id, account_id], identity)
        .optional()?)
}

pub fn insert_pending_link(
    tx: &WriteTx,
    token: &crate::auth::token::NewToken,
    issuer: &str,
    subject: &str,
    label: &str,
    expires_at: &Timestamp,
) -> Result<()> {
    tx.prepare_kept("DELETE FROM oidc_pending_links WHERE expires_at < ?1")?
        .execute([Timestamp::now()])?;
    tx.prepare_kept(
        "INSERT INTO oidc_pending_links (selector, secret_sha256, issuer, subject, label, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        token.selector,
        token.secret_sha256,
        issuer,
        subject,
        label,
        expires_at
    ])?;
    Ok(())
}

/// A link waiting for its owner: the provider identity, and once an
/// account has signed in to take it, that account, its sign-in step and
/// the digest of the confirmation's secret.
pub struct PendingLink {
    pub id: i64,
    pub issuer: String,
    pub subject: String,
    pub label: String,
    pub account_id: Option<i64>,
    pub step: Option<String>,
    pub confirm_sha256: Option<Vec<u8>>,
}

/// The pending link a token names, when its secret matches and it has not
/// expired.
pub fn find_pending_link(
    tx: &WriteTx,
    presented: &crate::auth::token::Presented<'_>,
) -> Result<Option<PendingLink>> {
    let found: Option<(Vec<u8>, Timestamp, PendingLink)> = tx
        .prepare_kept(
            "SELECT secret_sha256, expires_at, id, issuer, subject, label, account_id, step, confirm_sha256
             FROM oidc_pending_links WHERE selector = ?1",
        )?
        .query_row([presented.selector], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                PendingLink {
                    id: r.get(2)?,
                    issuer: r.get(3)?,
                    subject: r.get(4)?,
                    label: r.get(5)?,
                    account_id: r.get(6)?,
                    step: r.get(7)?,
                    confirm_sha256: r.get(8)?,
                },
            ))
        })
        .optional()?;
    Ok(found
        .filter(|(secret, expires_at, _)| {
            presented.matches(secret) && *expires_at > Timestamp::now()
        })
        .map(|(_, _, link)| link))
}

/// The account that signed in to take the link, waiting for its "yes".
pub fn await_confirmation(
    tx: &WriteTx,
    id: i64,
    account_id: i64,
    step: &str,
    confirm_sha256: &[u8],
) -> Result<()> {
    tx.prepare_kept(
        "UPDATE oidc_pending_links SET account_id = ?2, step = ?3, confirm_sha256 = ?4 WHERE id = ?1",
    )?
    .execute(params![id, account_id, step, confirm_sha256])?;
    Ok(())
}

pub fn delete_pending_link(tx: &WriteTx, id: i64) -> Result<()> {
    tx.prepare_kept("DELETE FROM oidc_pending_links WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}
