//! Location memberships: which people a location serves. They are what a
//! person's `location_ids` lists, so every change here is a change to that
//! person (new version, new ETag, a Person change-feed entry).
//!
//! Assigning and unassigning need the location-management permission (403)
//! and manage access to the person (404 when the person is outside the
//! caller's scope, 403 when visible but not manageable). Both are online
//! only: sync batches do not carry them.

use crate::db::WriteTx;
use rusqlite::Connection;

use super::model::{LocationMembership, LocationMembershipAttributes};
use super::require_location_manager;
use super::store::{self, LocationRow, MembershipRow};
use super::touch::touch_person;
use crate::auth::{AccessLevel, Actor};
use crate::db::idempotency::SavedResponse;
use crate::domain::ResourceId;
use crate::error::{ApiError, Result};
use crate::household::people::{self, store::PersonRow};

/// The outcome of `create`: the membership, and whether it is new (201) or
/// the existing assignment returned unchanged (200).
#[derive(Debug)]
pub struct Assignment {
    pub membership: LocationMembership,
    pub created: bool,
}

fn shape(row: &MembershipRow, location: &LocationRow, person: &PersonRow) -> LocationMembership {
    LocationMembership {
        id: row.id,
        location_id: location.id,
        location_portable_id: location.portable_id.clone(),
        person_id: person.id,
        person_portable_id: person.portable_id.clone(),
        created_at: row.created_at.clone(),
    }
}

/// Assigning and unassigning need this access to the person.
pub const WRITE_LEVEL: AccessLevel = AccessLevel::Manage;

/// What assigning `person_id` to the location needs: a live location, the
/// location-management permission and manage access to the person. Checked
/// before a fresh assignment and before a saved response is replayed.
pub fn authorize(
    conn: &Connection,
    actor: &Actor,
    location_id: &ResourceId,
    person_id: &ResourceId,
) -> Result<(LocationRow, PersonRow)> {
    let location = super::find(conn, actor, location_id)?;
    require_location_manager(actor)?;
    let person = people::find_for(conn, actor, person_id, WRITE_LEVEL)?;
    Ok((location, person))
}

/// `createLocationMembership`: assigns a person to a live location of the
/// household. Repeating an assignment that exists returns it and changes
/// nothing (permissions are still checked first).
pub fn create(
    conn: &WriteTx,
    actor: &Actor,
    location_id: &ResourceId,
    attrs: LocationMembershipAttributes,
) -> Result<Assignment> {
    let (location, person) = authorize(conn, actor, location_id, &attrs.person_id)?;
    if let Some(existing) = store::find_membership_of(conn, location.id, person.id)? {
        return Ok(Assignment {
            membership: shape(&existing, &location, &person),
            created: false,
        });
    }
    let mut row = MembershipRow {
        id: 0,
        location_id: location.id,
        person_id: person.id,
        created_at: crate::domain::Timestamp::now(),
    };
    row.id = store::insert_membership(conn, actor.household_id, &row)?;
    let membership = shape(&row, &location, &person);
    touch_person(conn, actor, person)?;
    Ok(Assignment {
        membership,
        created: true,
    })
}

/// Before a saved removal is replayed: the membership is gone, so the
/// person it named (kept with the saved response) must still be one the
/// actor may manage, with the location permission, at a live location.
pub fn recheck_removal(
    conn: &Connection,
    actor: &Actor,
    location_id: &ResourceId,
    saved: &SavedResponse,
) -> Result<()> {
    let removed: LocationMembership =
        serde_json::from_str(&saved.body).map_err(ApiError::internal)?;
    authorize(
        conn,
        actor,
        location_id,
        &ResourceId::Numeric(removed.person_id),
    )
    .map(drop)
}

/// `deleteLocationMembership`: unassigns the person of membership
/// `membership_id`, which must belong to this live location. Returns the
/// membership as it was.
pub fn delete(
    conn: &WriteTx,
    actor: &Actor,
    location_id: &ResourceId,
    membership_id: i64,
) -> Result<LocationMembership> {
    let location = super::find(conn, actor, location_id)?;
    require_location_manager(actor)?;
    let not_found = || ApiError::not_found("location membership");
    let row = store::find_membership(conn, actor.household_id, location.id, membership_id)?
        .ok_or_else(not_found)?;
    // A membership of a person outside the caller's scope does not exist for it.
    let person = people::find_for(
        conn,
        actor,
        &ResourceId::Numeric(row.person_id),
        WRITE_LEVEL,
    )
    .map_err(|e| match e {
        ApiError::NotFound(_) => not_found(),
        other => other,
    })?;
    store::delete_membership(conn, row.id)?;
    let removed = shape(&row, &location, &person);
    touch_person(conn, actor, person)?;
    Ok(removed)
}
