//! Person-level access: owners and administrators manage everyone in their
//! household; members reach a person only through a live grant.

use rusqlite::{Connection, OptionalExtension};

use super::model::{Actor, Role};
use super::store;
use crate::error::{ApiError, Result};

pub use super::model::AccessLevel;

impl AccessLevel {
    fn verb(self) -> &'static str {
        match self {
            AccessLevel::View => "view",
            AccessLevel::Record => "record doses for",
            AccessLevel::Manage => "manage",
        }
    }
}

/// The caller's current access to a person of its household; `None` when
/// the person is outside its scope (or in another household).
pub fn person_access(
    conn: &Connection,
    actor: &Actor,
    person_id: i64,
) -> Result<Option<AccessLevel>> {
    if !store::person_in_household(conn, actor.household_id, person_id)? {
        return Ok(None);
    }
    if actor.is_manager() {
        return Ok(Some(AccessLevel::Manage));
    }
    store::granted_level(
        conn,
        actor.membership_id,
        person_id,
        &crate::domain::Timestamp::now(),
    )
}

/// The one check every administrative act on another membership's
/// belongings (its app tokens, its access grants) goes through: nobody
/// below an owner acts on an owner. `doing` reads "only an owner may
/// {doing} an owner".
pub fn require_rank_over(
    conn: &Connection,
    actor: &Actor,
    membership_id: i64,
    doing: &str,
) -> Result<()> {
    let role = store::membership_role(conn, actor.household_id, membership_id)?;
    if role == Some(Role::Owner) && actor.role != Role::Owner {
        return Err(ApiError::forbidden(format!(
            "only an owner may {doing} an owner"
        )));
    }
    Ok(())
}

/// Stock changes need the inventory-management permission (owners and
/// administrators hold it implicitly).
pub fn require_inventory(actor: &Actor) -> Result<()> {
    if actor.can_manage_inventory() {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "managing medicines and stock needs the inventory management permission",
        ))
    }
}

/// A rule's person check: 404 naming `missing` (the record the caller
/// asked for) when the person is outside the actor's scope, 403 saying
/// `why` when visible but the access is below `needed`.
pub fn require_level(
    conn: &Connection,
    actor: &Actor,
    person_id: i64,
    needed: AccessLevel,
    missing: &str,
    why: &str,
) -> Result<()> {
    match person_access(conn, actor, person_id)? {
        None => Err(ApiError::not_found(missing)),
        Some(level) if level >= needed => Ok(()),
        Some(_) => Err(ApiError::forbidden(why)),
    }
}

/// 404 when the person is out of scope, 403 when visible but the level is too low.
pub fn require_person(
    conn: &Connection,
    actor: &Actor,
    person_id: i64,
    needed: AccessLevel,
) -> Result<AccessLevel> {
    match person_access(conn, actor, person_id)? {
        None => Err(ApiError::not_found("person")),
        Some(level) if level >= needed => Ok(level),
        Some(_) => Err(ApiError::forbidden(format!(
            "your access to this person does not allow you to {} them",
            needed.verb()
        ))),
    }
}

/// What a list filter's reference may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    Person,
    Medication,
    Schedule,
    PersonMedication,
}

impl Named {
    /// (table, person column, what a 404 names). People are their own person.
    fn sql(self) -> (&'static str, Option<&'static str>, &'static str) {
        match self {
            Named::Person => ("people", Some("id"), "person"),
            Named::Medication => ("medications", None, "medication"),
            Named::Schedule => ("schedules", Some("person_id"), "schedule"),
            Named::PersonMedication => {
                ("person_medications", Some("person_id"), "person medication")
            }
        }
    }
}

/// The one reading of a list filter's reference (`?person_id=`,
/// `?medication_id=`, `?source_id=`): the numeric id of a record of the
/// caller's household that the caller may see, or 404 naming it. A filter
/// that names nothing (another household's portable id, an id never used, a
/// person outside the caller's grants) is "not found", never an empty list.
pub fn filter_id(
    conn: &Connection,
    actor: &Actor,
    named: Named,
    reference: Option<&crate::domain::ResourceId>,
) -> Result<Option<i64>> {
    let Some(reference) = reference else {
        return Ok(None);
    };
    let (table, person_column, what) = named.sql();
    let person = person_column.unwrap_or("NULL");
    let (numeric, portable) = reference.sql_parts();
    let found: Option<(i64, Option<i64>)> = conn
        .prepare_cached(&format!(
            "SELECT id, {person} FROM {table}
             WHERE household_id = ?1 AND id = coalesce(?2, (SELECT id FROM {table} WHERE household_id = ?1 AND portable_id = ?3))"
        ))?
        .query_row(
            rusqlite::params![actor.household_id, numeric, portable],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let Some((id, person_id)) = found else {
        return Err(ApiError::not_found(what));
    };
    if let Some(person_id) = person_id
        && person_access(conn, actor, person_id)?.is_none()
    {
        return Err(ApiError::not_found(what));
    }
    Ok(Some(id))
}
