//! SQL for invitations.

use crate::db::WriteTx;
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::{InvitedGrant, NewPerson};
use crate::auth::{Permissions, Role};
use crate::domain::{Page, Timestamp};
use crate::error::Result;

/// An invitation row as stored, with the digest of its token's secret.
#[derive(Debug, Clone)]
pub struct InvitationRow {
    pub id: i64,
    pub household_id: i64,
    pub email: String,
    pub role: Role,
    pub permissions: Permissions,
    pub person_id: Option<i64>,
    pub new_person: Option<NewPerson>,
    pub grants: Vec<InvitedGrant>,
    pub secret_sha256: Vec<u8>,
    /// pending, accepted or revoked
    pub status: String,
    pub created_by_membership_id: Option<i64>,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub accepted_membership_id: Option<i64>,
    pub accepted_at: Option<Timestamp>,
}

const COLUMNS: &str = "id, household_id, email, role, inventory_management, location_management,
    adult_review, person_id, new_person, grants, secret_sha256, status, created_by_membership_id,
    created_at, expires_at, accepted_membership_id, accepted_at";

fn bad(column: usize, why: impl std::fmt::Display) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(column, Type::Text, why.to_string().into())
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<InvitationRow> {
    let role: String = r.get(3)?;
    let new_person: Option<String> = r.get(8)?;
    let grants: String = r.get(9)?;
    Ok(InvitationRow {
        id: r.get(0)?,
        household_id: r.get(1)?,
        email: r.get(2)?,
        role: Role::parse(&role).ok_or_else(|| bad(3, "unknown role"))?,
        permissions: Permissions {
            inventory_management: r.get(4)?,
            location_management: r.get(5)?,
            adult_review: r.get(6)?,
        },
        person_id: r.get(7)?,
        new_person: new_person
            .map(|text| serde_json::from_str(&text).map_err(|e| bad(8, e)))
            .transpose()?,
        grants: serde_json::from_str(&grants).map_err(|e| bad(9, e))?,
        secret_sha256: r.get(10)?,
        status: r.get(11)?,
        created_by_membership_id: r.get(12)?,
        created_at: r.get(13)?,
        expires_at: r.get(14)?,
        accepted_membership_id: r.get(15)?,
        accepted_at: r.get(16)?,
    })
}

pub struct NewInvitation<'a> {
    pub household_id: i64,
    pub email: &'a str,
    pub role: Role,
    pub permissions: Permissions,
    pub person_id: Option<i64>,
    pub new_person: Option<&'a NewPerson>,
    pub grants: &'a [InvitedGrant],
    pub selector: &'a str,
    pub secret_sha256: &'a [u8],
    pub created_by_membership_id: Option<i64>,
    pub expires_at: &'a Timestamp,
}

pub fn insert(conn: &WriteTx, i: &NewInvitation<'_>) -> Result<i64> {
    let now = Timestamp::now();
    let new_person = i
        .new_person
        .map(serde_json::to_string)
        .transpose()
        .map_err(crate::error::ApiError::internal)?;
    let grants = serde_json::to_string(i.grants).map_err(crate::error::ApiError::internal)?;
    conn.execute(
        "INSERT INTO invitations (household_id, email, role, inventory_management,
             location_management, adult_review, person_id, new_person, grants, selector,
             secret_sha256, created_by_membership_id, created_at, updated_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?13, ?14)",
        params![
            i.household_id,
            i.email,
            i.role.as_str(),
            i.permissions.inventory_management,
            i.permissions.location_management,
            i.permissions.adult_review,
            i.person_id,
            new_person,
            grants,
            i.selector,
            i.secret_sha256,
            i.created_by_membership_id,
            now,
            i.expires_at,
        ],
    )?;
    Ok(conn.last_insert_rowid())
}

/// An invitation of the household that has not been revoked.
pub fn find_live(conn: &Connection, household_id: i64, id: i64) -> Result<Option<InvitationRow>> {
    Ok(conn
        .query_row(
            &format!(
                "SELECT {COLUMNS} FROM invitations
                 WHERE id = ?1 AND household_id = ?2 AND status <> 'revoked'"
            ),
            params![id, household_id],
            from_row,
        )
        .optional()?)
}

/// The invitation a token's selector names, whatever its status.
pub fn find_by_selector(conn: &Connection, selector: &str) -> Result<Option<InvitationRow>> {
    Ok(conn
        .query_row(
            &format!("SELECT {COLUMNS} FROM invitations WHERE selector = ?1"),
            [selector],
            from_row,
        )
        .optional()?)
}

pub fn list_live(
    conn: &Connection,
    household_id: i64,
    page: Page,
) -> Result<(Vec<InvitationRow>, i64)> {
    let total = conn.query_row(
        "SELECT count(*) FROM invitations WHERE household_id = ?1 AND status <> 'revoked'",
        [household_id],
        |r| r.get(0),
    )?;
    let rows = conn
        .prepare(&format!(
            "SELECT {COLUMNS} FROM invitations WHERE household_id = ?1 AND status <> 'revoked'
             ORDER BY id LIMIT ?2 OFFSET ?3"
        ))?
        .query_map(params![household_id, page.limit(), page.offset()], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((rows, total))
}

/// Replaces the token (and its expiry) of a pending invitation.
pub fn rotate(
    conn: &WriteTx,
    id: i64,
    selector: &str,
    secret_sha256: &[u8],
    expires_at: &Timestamp,
) -> Result<()> {
    conn.execute(
        "UPDATE invitations SET selector = ?2, secret_sha256 = ?3, expires_at = ?4, updated_at = ?5
         WHERE id = ?1 AND status = 'pending'",
        params![id, selector, secret_sha256, expires_at, Timestamp::now()],
    )?;
    Ok(())
}

pub fn revoke(conn: &WriteTx, id: i64) -> Result<()> {
    let now = Timestamp::now();
    conn.execute(
        "UPDATE invitations SET status = 'revoked', revoked_at = ?2, updated_at = ?2
         WHERE id = ?1 AND status <> 'revoked'",
        params![id, now],
    )?;
    Ok(())
}

/// (id, role) of every pending invitation the membership made, expired or
/// not (a resend would bring an expired one back).
pub fn pending_of_inviter(conn: &Connection, membership_id: i64) -> Result<Vec<(i64, Role)>> {
    let rows = conn
        .prepare(
            "SELECT id, role FROM invitations
             WHERE created_by_membership_id = ?1 AND status = 'pending' ORDER BY id",
        )?
        .query_map([membership_id], |r| {
            let role: String = r.get(1)?;
            Ok((
                r.get(0)?,
                Role::parse(&role).ok_or_else(|| bad(1, "unknown role"))?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

pub fn mark_accepted(conn: &WriteTx, id: i64, membership_id: i64) -> Result<()> {
    let now = Timestamp::now();
    conn.execute(
        "UPDATE invitations SET status = 'accepted', accepted_membership_id = ?2,
                accepted_at = ?3, updated_at = ?3
         WHERE id = ?1 AND status = 'pending'",
        params![id, membership_id, now],
    )?;
    Ok(())
}

/// The account's email.
pub fn account_email(conn: &Connection, account_id: i64) -> Result<Option<String>> {
    Ok(conn
        .query_row(
            "SELECT email FROM accounts WHERE id = ?1",
            [account_id],
            |r| r.get(0),
        )
        .optional()?)
}

/// The account's membership of the household, whatever its status: the
/// table allows one per account and household.
pub fn membership_of(
    conn: &Connection,
    household_id: i64,
    account_id: i64,
) -> Result<Option<(i64, String)>> {
    Ok(conn
        .query_row(
            "SELECT id, status FROM memberships WHERE household_id = ?1 AND account_id = ?2",
            params![household_id, account_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?)
}
