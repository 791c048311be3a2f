//! SQL for memberships.

use rusqlite::{Connection, params};

use crate::auth::Role;
use crate::error::Result;

pub fn insert(
    conn: &Connection,
    household_id: i64,
    account_id: i64,
    person_id: Option<i64>,
    role: Role,
) -> Result<i64> {
    let now = crate::time::now();
    conn.execute(
        "INSERT INTO memberships (household_id, account_id, person_id, role, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        params![household_id, account_id, person_id, role.as_str(), now],
    )?;
    Ok(conn.last_insert_rowid())
}

pub fn link_person(conn: &Connection, membership_id: i64, person_id: i64) -> Result<()> {
    conn.execute(
        "UPDATE memberships SET person_id = ?2, permissions_version = permissions_version + 1,
                updated_at = ?3
         WHERE id = ?1",
        params![membership_id, person_id, crate::time::now()],
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
    Ok(conn.query_row(
        "SELECT a.email, a.display_name, m.status, m.permissions_version
         FROM memberships m JOIN accounts a ON a.id = m.account_id WHERE m.id = ?1",
        [membership_id],
        |r| {
            Ok(OwnMembership {
                email: r.get(0)?,
                display_name: r.get(1)?,
                status: r.get(2)?,
                permissions_version: r.get(3)?,
            })
        },
    )?)
}

pub fn active_by_email(conn: &Connection, household_id: i64, email: &str) -> Result<Option<i64>> {
    use rusqlite::OptionalExtension;
    Ok(conn
        .query_row(
            "SELECT m.id FROM memberships m JOIN accounts a ON a.id = m.account_id
             WHERE m.household_id = ?1 AND a.email = ?2 AND m.status = 'active'",
            params![household_id, email],
            |r| r.get(0),
        )
        .optional()?)
}
