//! SQL for person access grants.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, named_params, params};

use super::model::{PersonAccessGrant, Relationship};
use crate::auth::AccessLevel;
use crate::db::page::{self, PageQuery};
use crate::domain::{Page, ResourceId, Timestamp};
use crate::error::Result;

pub struct NewGrant<'a> {
    pub household_id: i64,
    pub membership_id: i64,
    pub person_id: i64,
    pub access_level: &'a str,
    pub relationship_type: &'a str,
    pub expires_at: Option<&'a Timestamp>,
    pub created_by_membership_id: Option<i64>,
}

pub fn insert(conn: &WriteTx, grant: &NewGrant<'_>) -> Result<i64> {
    conn.prepare_kept(
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
        Timestamp::now(),
    ])?;
    Ok(conn.last_insert_rowid())
}

const COLUMNS: &str = "g.id, g.membership_id, g.person_id, p.portable_id, g.access_level,
    g.relationship_type, g.expires_at, g.created_by_membership_id, g.created_at";

fn unknown(column: usize, value: &str) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        column,
        Type::Text,
        format!("unknown value {value}").into(),
    )
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<PersonAccessGrant> {
    let level: String = r.get(4)?;
    let relationship: String = r.get(5)?;
    Ok(PersonAccessGrant {
        id: r.get(0)?,
        membership_id: r.get(1)?,
        person_id: r.get(2)?,
        person_portable_id: r.get(3)?,
        access_level: AccessLevel::parse(&level).ok_or_else(|| unknown(4, &level))?,
        relationship_type: Relationship::parse(&relationship)
            .ok_or_else(|| unknown(5, &relationship))?,
        expires_at: r.get(6)?,
        created_by_membership_id: r.get(7)?,
        created_at: r.get(8)?,
    })
}

/// A live (not revoked) grant of the household.
pub fn find_live(
    conn: &Connection,
    household_id: i64,
    id: i64,
) -> Result<Option<PersonAccessGrant>> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM person_access_grants g JOIN people p ON p.id = g.person_id
             WHERE g.id = ?1 AND g.household_id = ?2 AND g.revoked_at IS NULL"
        ))?
        .query_row(params![id, household_id], from_row)
        .optional()?)
}

/// Whether the member already holds a live grant on the person.
pub fn live_exists(conn: &Connection, membership_id: i64, person_id: i64) -> Result<bool> {
    Ok(conn
        .prepare_kept(
            "SELECT 1 FROM person_access_grants
             WHERE membership_id = ?1 AND person_id = ?2 AND revoked_at IS NULL",
        )?
        .query_row(params![membership_id, person_id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Revokes every live grant the member holds on the person; returns their ids.
pub fn revoke_all_on(conn: &WriteTx, membership_id: i64, person_id: i64) -> Result<Vec<i64>> {
    revoke_returning(
        conn,
        "membership_id = ?1 AND person_id = ?2 AND revoked_at IS NULL",
        membership_id,
        person_id,
    )
}

/// Revokes the member's live `self` grants on the person; returns their ids.
pub fn revoke_self_on(conn: &WriteTx, membership_id: i64, person_id: i64) -> Result<Vec<i64>> {
    revoke_returning(
        conn,
        "membership_id = ?1 AND person_id = ?2 AND revoked_at IS NULL
         AND relationship_type = 'self'",
        membership_id,
        person_id,
    )
}

fn revoke_returning(
    conn: &WriteTx,
    condition: &str,
    membership_id: i64,
    person_id: i64,
) -> Result<Vec<i64>> {
    let ids = conn
        .prepare(&format!(
            "UPDATE person_access_grants SET revoked_at = ?3 WHERE {condition} RETURNING id"
        ))?
        .query_map(params![membership_id, person_id, Timestamp::now()], |r| {
            r.get(0)
        })?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok(ids)
}

/// Revokes the member's grants on the person whose expiry has passed.
pub fn revoke_expired(
    conn: &WriteTx,
    membership_id: i64,
    person_id: i64,
    now: &Timestamp,
) -> Result<usize> {
    Ok(conn
        .prepare_kept(
            "UPDATE person_access_grants SET revoked_at = ?3
             WHERE membership_id = ?1 AND person_id = ?2 AND revoked_at IS NULL
               AND expires_at IS NOT NULL AND expires_at <= ?3",
        )?
        .execute(params![membership_id, person_id, now])?)
}

/// Which live grants to list.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub membership_id: Option<i64>,
    pub person_id: Option<ResourceId>,
}

/// One page of the household's live grants, oldest first, and the total.
pub fn list_live(
    conn: &Connection,
    household_id: i64,
    membership_id: Option<i64>,
    person_id: Option<i64>,
    page: Page,
) -> Result<(Vec<PersonAccessGrant>, i64)> {
    let query = PageQuery {
        columns: COLUMNS,
        from: "person_access_grants g JOIN people p ON p.id = g.person_id",
        count_from: "person_access_grants g JOIN people p ON p.id = g.person_id",
        condition: "g.household_id = :household_id AND g.revoked_at IS NULL
          AND (:membership_id IS NULL OR g.membership_id = :membership_id)
          AND (:person_id IS NULL OR g.person_id = :person_id)",
        order_by: "g.id",
    };
    let params = named_params! {
        ":household_id": household_id,
        ":membership_id": membership_id,
        ":person_id": person_id,
    };
    page::read(conn, &query, params, page, from_row)
}

pub fn revoke(conn: &WriteTx, id: i64) -> Result<()> {
    conn.prepare_kept(
        "UPDATE person_access_grants SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
    )?
    .execute(params![id, Timestamp::now()])?;
    Ok(())
}

/// Revokes every live grant held by a membership; returns how many.
pub fn revoke_all_of_membership(conn: &WriteTx, membership_id: i64) -> Result<usize> {
    Ok(conn
        .prepare_kept(
            "UPDATE person_access_grants SET revoked_at = ?2
             WHERE membership_id = ?1 AND revoked_at IS NULL",
        )?
        .execute(params![membership_id, Timestamp::now()])?)
}

/// Whether the member holds a live manage grant on anyone of its household.
pub fn holds_manage_grant(conn: &Connection, actor: &crate::auth::Actor) -> Result<bool> {
    Ok(conn
        .prepare_kept(
            "SELECT 1 FROM person_access_grants
             WHERE membership_id = ?1 AND household_id = ?2 AND access_level = 'manage'
               AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?3)
             LIMIT 1",
        )?
        .query_row(
            params![
                actor.membership_id,
                actor.household_id,
                &*crate::domain::Timestamp::now()
            ],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}
