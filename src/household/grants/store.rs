//! SQL for person access grants.

use rusqlite::{Connection, params};

use crate::error::Result;

pub struct NewGrant<'a> {
    pub household_id: i64,
    pub membership_id: i64,
    pub person_id: i64,
    pub access_level: &'a str,
    pub relationship_type: &'a str,
    pub expires_at: Option<&'a str>,
    pub created_by_membership_id: Option<i64>,
}

pub fn insert(conn: &Connection, grant: &NewGrant<'_>) -> Result<i64> {
    conn.prepare_cached(
        "INSERT INTO person_access_grants
           (household_id, membership_id, person_id, access_level, relationship_type, expires_at,
            created_by_membership_id, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        grant.household_id,
        grant.membership_id,
        grant.person_id,
        grant.access_level,
        grant.relationship_type,
        grant.expires_at,
        grant.created_by_membership_id,
        crate::time::now(),
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Every access change moves the membership's permissions version on.
pub fn bump_permissions_version(conn: &Connection, membership_id: i64) -> Result<()> {
    conn.prepare_cached(
        "UPDATE memberships SET permissions_version = permissions_version + 1 WHERE id = ?1",
    )?
    .execute([membership_id])?;
    Ok(())
}
