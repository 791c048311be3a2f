//! SQL for memberships.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::{Membership, MembershipStatus};
use crate::auth::{Permissions, Role};
use crate::domain::Page;
use crate::error::Result;

pub fn insert(
    conn: &WriteTx,
    household_id: i64,
    account_id: i64,
    person_id: Option<i64>,
    role: Role,
) -> Result<i64> {
    let now = crate::domain::Timestamp::now();
    conn.execute(
        "INSERT INTO memberships (household_id, account_id, person_id, role, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        params![household_id, account_id, person_id, role.as_str(), now],
    )?;
    Ok(conn.last_insert_rowid())
}

pub fn link_person(conn: &WriteTx, membership_id: i64, person_id: i64) -> Result<()> {
    conn.execute(
        "UPDATE memberships SET person_id = ?2, permissions_version = permissions_version + 1,
                updated_at = ?3
         WHERE id = ?1",
        params![membership_id, person_id, crate::domain::Timestamp::now()],
    )?;
    Ok(())
}

/// The parts of a membership its own member sees about themselves.
pub struct OwnMembership {
    pub email: String,
    pub display_name: Option<String>,
    pub status: String,
    pub permissions_version: i64,
}

pub fn own(conn: &Connection, membership_id: i64) -> Result<OwnMembership> {
    Ok(conn
        .prepare_kept(
            "SELECT a.email, a.display_name, m.status, m.permissions_version
         FROM memberships m JOIN accounts a ON a.id = m.account_id WHERE m.id = ?1",
        )?
        .query_row([membership_id], |r| {
            Ok(OwnMembership {
                email: r.get(0)?,
                display_name: r.get(1)?,
                status: r.get(2)?,
                permissions_version: r.get(3)?,
            })
        })?)
}

pub fn active_by_email(conn: &Connection, household_id: i64, email: &str) -> Result<Option<i64>> {
    Ok(conn
        .prepare_kept(
            "SELECT m.id FROM memberships m JOIN accounts a ON a.id = m.account_id
             WHERE m.household_id = ?1 AND a.email = ?2 AND m.status = 'active'",
        )?
        .query_row(params![household_id, email], |r| r.get(0))
        .optional()?)
}

const COLUMNS: &str = "m.id, m.household_id, m.account_id, a.email, a.display_name, m.role,
    m.status, m.person_id, p.portable_id, m.inventory_management, m.location_management,
    m.adult_review, m.permissions_version, m.created_at, m.updated_at, m.lock_version";

/// Memberships with their account and linked person, in one join.
const FROM: &str = "memberships m JOIN accounts a ON a.id = m.account_id
    LEFT JOIN people p ON p.id = m.person_id";

fn unknown(column: usize, value: &str) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        column,
        Type::Text,
        format!("unknown value {value}").into(),
    )
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<Membership> {
    let role: String = r.get(5)?;
    let status: String = r.get(6)?;
    Ok(Membership {
        id: r.get(0)?,
        household_id: r.get(1)?,
        account_id: r.get(2)?,
        email: r.get(3)?,
        display_name: r.get(4)?,
        role: Role::parse(&role).ok_or_else(|| unknown(5, &role))?,
        status: MembershipStatus::parse(&status).ok_or_else(|| unknown(6, &status))?,
        person_id: r.get(7)?,
        person_portable_id: r.get(8)?,
        permissions: Permissions {
            inventory_management: r.get(9)?,
            location_management: r.get(10)?,
            adult_review: r.get(11)?,
        },
        permissions_version: r.get(12)?,
        created_at: r.get(13)?,
        updated_at: r.get(14)?,
        lock_version: r.get(15)?,
    })
}

/// A membership of the household that has not been revoked.
pub fn find(conn: &Connection, household_id: i64, id: i64) -> Result<Option<Membership>> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE m.id = ?1 AND m.household_id = ?2 AND m.status <> 'revoked'"
        ))?
        .query_row(params![id, household_id], from_row)
        .optional()?)
}

/// One page of the household's memberships that have not been revoked, oldest first.
pub fn list(conn: &Connection, household_id: i64, page: Page) -> Result<(Vec<Membership>, i64)> {
    let total = conn
        .prepare_kept(
            "SELECT count(*) FROM memberships WHERE household_id = ?1 AND status <> 'revoked'",
        )?
        .query_row([household_id], |r| r.get(0))?;
    let rows = conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE m.household_id = ?1 AND m.status <> 'revoked'
             ORDER BY m.id LIMIT ?2 OFFSET ?3"
        ))?
        .query_map(params![household_id, page.limit(), page.offset()], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((rows, total))
}

/// Saves role, status, person and flags with the new versions and `updated_at`.
pub fn update(conn: &WriteTx, m: &Membership) -> Result<()> {
    conn.prepare_kept(
        "UPDATE memberships SET role = ?2, status = ?3, person_id = ?4, inventory_management = ?5,
                location_management = ?6, adult_review = ?7, permissions_version = ?8,
                lock_version = ?9, updated_at = ?10
         WHERE id = ?1",
    )?
    .execute(params![
        m.id,
        m.role.as_str(),
        m.status.as_str(),
        m.person_id,
        m.permissions.inventory_management,
        m.permissions.location_management,
        m.permissions.adult_review,
        m.permissions_version,
        m.lock_version,
        m.updated_at,
    ])?;
    Ok(())
}

/// The role of a membership of the household, whatever its status.
pub fn revoke(conn: &WriteTx, id: i64) -> Result<()> {
    conn.prepare_kept(
        "UPDATE memberships SET status = 'revoked', permissions_version = permissions_version + 1,
                lock_version = lock_version + 1, updated_at = ?2
         WHERE id = ?1",
    )?
    .execute(params![id, crate::domain::Timestamp::now()])?;
    Ok(())
}

/// Active owners of the household other than `except_id`.
pub fn other_active_owners(conn: &Connection, household_id: i64, except_id: i64) -> Result<i64> {
    Ok(conn
        .prepare_kept(
            "SELECT count(*) FROM memberships
             WHERE household_id = ?1 AND id <> ?2 AND role = 'owner' AND status = 'active'",
        )?
        .query_row(params![household_id, except_id], |r| r.get(0))?)
}

/// Whether another membership that has not been revoked is linked to the person.
pub fn person_linked_elsewhere(conn: &Connection, person_id: i64, except_id: i64) -> Result<bool> {
    Ok(conn
        .prepare_kept(
            "SELECT 1 FROM memberships
             WHERE person_id = ?1 AND id <> ?2 AND status <> 'revoked' LIMIT 1",
        )?
        .query_row(params![person_id, except_id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Every access change moves the membership's permissions version on.
pub fn bump_permissions_version(conn: &WriteTx, membership_id: i64) -> Result<()> {
    conn.prepare_kept(
        "UPDATE memberships SET permissions_version = permissions_version + 1 WHERE id = ?1",
    )?
    .execute([membership_id])?;
    Ok(())
}

/// The one membership of the household linked to the person `portable_id`;
/// None when none or several match (an import keeps the actor unknown).
pub fn sole_membership_of(
    conn: &rusqlite::Connection,
    household_id: i64,
    person_portable_id: &str,
) -> Result<Option<i64>> {
    let ids: Vec<i64> = conn
        .prepare_kept(
            "SELECT m.id FROM memberships m JOIN people p ON p.id = m.person_id
             WHERE m.household_id = ?1 AND p.portable_id = ?2 LIMIT 2",
        )?
        .query_map(params![household_id, person_portable_id], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(match ids.as_slice() {
        [one] => Some(*one),
        _ => None,
    })
}
