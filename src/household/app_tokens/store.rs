//! SQL for household app tokens.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::AppToken;
use crate::domain::{Page, Timestamp};
use crate::error::Result;

const COLUMNS: &str = "id, name, membership_id, selector, created_by_membership_id, created_at,
    expires_at, last_used_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<AppToken> {
    let selector: String = r.get(3)?;
    Ok(AppToken {
        id: r.get(0)?,
        name: r.get(1)?,
        membership_id: r.get(2)?,
        token_prefix: format!("{}{selector}", crate::auth::token::APP_TOKEN_PREFIX),
        created_by_membership_id: r.get(4)?,
        created_at: r.get(5)?,
        expires_at: r.get(6)?,
        last_used_at: r.get(7)?,
    })
}

pub struct NewAppToken<'a> {
    pub household_id: i64,
    pub membership_id: i64,
    pub name: &'a str,
    pub selector: &'a str,
    pub secret_sha256: &'a [u8],
    pub created_by_membership_id: Option<i64>,
    pub expires_at: &'a Timestamp,
}

pub fn insert(conn: &WriteTx, t: &NewAppToken<'_>) -> Result<i64> {
    conn.execute(
        "INSERT INTO app_tokens (household_id, membership_id, name, selector, secret_sha256,
                                 created_by_membership_id, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            t.household_id,
            t.membership_id,
            t.name,
            t.selector,
            t.secret_sha256,
            t.created_by_membership_id,
            Timestamp::now(),
            t.expires_at,
        ],
    )?;
    Ok(conn.last_insert_rowid())
}

/// A live (not revoked) token of the household.
pub fn find_live(conn: &Connection, household_id: i64, id: i64) -> Result<Option<AppToken>> {
    Ok(conn
        .query_row(
            &format!(
                "SELECT {COLUMNS} FROM app_tokens
                 WHERE id = ?1 AND household_id = ?2 AND revoked_at IS NULL"
            ),
            params![id, household_id],
            from_row,
        )
        .optional()?)
}

pub fn list_live(conn: &Connection, household_id: i64, page: Page) -> Result<(Vec<AppToken>, i64)> {
    let total = conn.query_row(
        "SELECT count(*) FROM app_tokens WHERE household_id = ?1 AND revoked_at IS NULL",
        [household_id],
        |r| r.get(0),
    )?;
    let rows = conn
        .prepare(&format!(
            "SELECT {COLUMNS} FROM app_tokens WHERE household_id = ?1 AND revoked_at IS NULL
             ORDER BY id LIMIT ?2 OFFSET ?3"
        ))?
        .query_map(params![household_id, page.limit(), page.offset()], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((rows, total))
}

pub fn revoke(conn: &WriteTx, id: i64) -> Result<()> {
    conn.execute(
        "UPDATE app_tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
        params![id, Timestamp::now()],
    )?;
    Ok(())
}

/// Revokes every live app token bound to the membership; returns how many.
pub fn revoke_all_of_membership(conn: &WriteTx, membership_id: i64) -> Result<usize> {
    Ok(conn
        .prepare_kept(
            "UPDATE app_tokens SET revoked_at = ?2 WHERE membership_id = ?1 AND revoked_at IS NULL",
        )?
        .execute(params![membership_id, Timestamp::now()])?)
}

/// A live app token of an account, and where it is bound.
pub struct LiveOfAccount {
    pub id: i64,
    pub membership_id: i64,
    pub household_id: i64,
}

/// The live app tokens bound to any membership of the account.
pub fn live_of_account(conn: &Connection, account_id: i64) -> Result<Vec<LiveOfAccount>> {
    let mut stmt = conn.prepare_kept(
        "SELECT t.id, t.membership_id, m.household_id FROM app_tokens t
         JOIN memberships m ON m.id = t.membership_id
         WHERE m.account_id = ?1 AND t.revoked_at IS NULL ORDER BY t.id",
    )?;
    let rows = stmt.query_map([account_id], |r| {
        Ok(LiveOfAccount {
            id: r.get(0)?,
            membership_id: r.get(1)?,
            household_id: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
