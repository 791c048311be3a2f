//! Locations of a household (places where medicines are kept): the rules for
//! reading, creating, changing and deleting them.
//!
//! Every active member may read locations; writing needs owner or
//! administrator role or the membership's location-management permission.
//! Edits and deletions need the current ETag (missing → 428, stale → 409).
//! Deletion is soft: the row stays so that past administrations and saved
//! dose decisions that name the location keep working.

pub mod membership_routes;
pub mod memberships;
pub mod model;
pub mod routes;
pub mod store;
mod touch;

use crate::db::WriteTx;
use rusqlite::Connection;

use crate::auth::Actor;
use crate::db::change_feed::{self, Action, Change};
use crate::domain::{IfMatch, Page, ResourceId, Timestamp, etag};
use crate::error::{ApiError, Problems, Result};

use model::{Location, LocationAttributes};
use store::LocationRow;

pub const RECORD_TYPE: &str = crate::domain::record_type::LOCATION;

impl From<LocationRow> for Location {
    fn from(row: LocationRow) -> Location {
        Location {
            id: row.id,
            portable_id: row.portable_id,
            name: row.name,
            description: row.description,
            created_at: row.created_at,
            updated_at: row.updated_at,
            lock_version: row.lock_version,
        }
    }
}

/// 403 unless the actor may create, change or delete locations and assign
/// people to them.
pub fn require_location_manager(actor: &Actor) -> Result<()> {
    if actor.can_manage_locations() {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "only household owners, administrators and members with the location-management \
             permission may change locations and who belongs to them",
        ))
    }
}

/// The live location `id` of the actor's household (404 otherwise).
fn find(conn: &Connection, actor: &Actor, id: &ResourceId) -> Result<LocationRow> {
    store::find(conn, actor.household_id, id)?.ok_or_else(|| ApiError::not_found("location"))
}

pub fn get(conn: &Connection, actor: &Actor, id: &ResourceId) -> Result<Location> {
    find(conn, actor, id).map(Location::from)
}

pub fn list(
    conn: &Connection,
    actor: &Actor,
    updated_since: Option<&str>,
    page: Page,
) -> Result<(Vec<Location>, i64)> {
    let (rows, total) = store::list(conn, actor.household_id, updated_since, page)?;
    Ok((rows.into_iter().map(Location::from).collect(), total))
}

/// Checks submitted attributes, collecting every problem before answering.
fn validate(attrs: &LocationAttributes, name_required: bool) -> Result<()> {
    let mut problems = Problems::default();
    let mut add = |field: &str, message: &str| problems.add(field, message);
    match &attrs.name {
        None if name_required => add("name", "is required"),
        Some(None) => add("name", "must not be null"),
        _ => {}
    }
    problems.check("the location's attributes are invalid")
}

fn apply(row: &mut LocationRow, attrs: LocationAttributes) {
    if let Some(Some(name)) = attrs.name {
        row.name = name.trim().to_string();
    }
    if let Some(description) = attrs.description {
        row.description = description.map(|d| d.into_inner());
    }
}

fn record(conn: &WriteTx, actor: &Actor, row: &LocationRow, action: Action) -> Result<()> {
    change_feed::append(
        conn,
        Change {
            household_id: actor.household_id,
            record_type: RECORD_TYPE,
            record_id: row.id,
            record_portable_id: &row.portable_id,
            action,
            person_id: None,
        },
    )
}

/// `createLocation`: name required, description optional.
pub fn create(conn: &WriteTx, actor: &Actor, attrs: LocationAttributes) -> Result<Location> {
    require_location_manager(actor)?;
    validate(&attrs, true)?;
    let now = Timestamp::now();
    let mut row = LocationRow {
        id: 0,
        portable_id: crate::db::new_portable_id(),
        name: String::new(),
        description: None,
        lock_version: 1,
        created_at: now.clone(),
        updated_at: now,
    };
    apply(&mut row, attrs);
    row.id = store::insert(conn, actor.household_id, &row)?;
    record(conn, actor, &row, Action::Create)?;
    Ok(row.into())
}

/// The location to change: it exists (404), the actor may change locations
/// (403) and the If-Match names its current version (428/409).
fn find_for_change(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
) -> Result<LocationRow> {
    let row = find(conn, actor, id)?;
    require_location_manager(actor)?;
    if_match.require(&etag(&row.portable_id, row.lock_version))?;
    Ok(row)
}

fn save(
    conn: &WriteTx,
    actor: &Actor,
    mut row: LocationRow,
    attrs: LocationAttributes,
) -> Result<Location> {
    apply(&mut row, attrs);
    row.lock_version += 1;
    row.updated_at = Timestamp::now();
    store::update(conn, &row)?;
    record(conn, actor, &row, Action::Update)?;
    Ok(row.into())
}

/// `updateLocation` (PATCH): any subset of the attributes.
pub fn update(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    attrs: LocationAttributes,
) -> Result<Location> {
    let row = find_for_change(conn, actor, id, if_match)?;
    validate(&attrs, false)?;
    save(conn, actor, row, attrs)
}

/// `replaceLocation` (PUT): the whole location; name required, an absent
/// description becomes null.
pub fn replace(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    mut attrs: LocationAttributes,
) -> Result<Location> {
    let row = find_for_change(conn, actor, id, if_match)?;
    validate(&attrs, true)?;
    attrs.description.get_or_insert(None);
    save(conn, actor, row, attrs)
}

/// The household's part of `deleteLocation` (the whole rule is
/// `crate::medicine::locations::delete`, which also moves the medications
/// kept there on): soft delete; the location disappears from reads and from
/// people's `location_ids` (each such person moves to a new version with a
/// change-feed entry, so a feed-following client sees it too), while
/// records that name it keep working. Answers the location's row id.
pub fn delete(conn: &WriteTx, actor: &Actor, id: &ResourceId, if_match: &IfMatch) -> Result<i64> {
    let mut row = find_for_change(conn, actor, id, if_match)?;
    row.lock_version += 1;
    row.updated_at = Timestamp::now();
    store::soft_delete(conn, &row)?;
    for person_id in store::people_at(conn, row.id)? {
        if let Some(person) = crate::household::people::store::find(
            conn,
            actor.household_id,
            &ResourceId::Numeric(person_id),
        )? {
            touch::touch_person(conn, actor, person)?;
        }
    }
    record(conn, actor, &row, Action::Delete)?;
    Ok(row.id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// Reads the attributes as a request body does, then applies the rule:
    /// the length limits are the bounded text types' own.
    fn check(body: Value, name_required: bool) -> Result<()> {
        let attrs: LocationAttributes =
            crate::http::extract::parse_json(body.to_string().as_bytes())?;
        validate(&attrs, name_required)
    }

    fn fields(err: ApiError) -> Vec<String> {
        match err {
            ApiError::Validation { errors, .. } => errors.into_keys().collect(),
            other => panic!("expected a validation error, got {other:?}"),
        }
    }

    #[test]
    fn validation_names_fields() {
        assert!(check(json!({"name": "Kitchen"}), true).is_ok());
        assert!(check(json!({"description": null}), false).is_ok());
        assert_eq!(fields(check(json!({}), true).unwrap_err()), ["name"]);
        assert_eq!(
            fields(check(json!({"name": "  "}), false).unwrap_err()),
            ["name"]
        );
        assert_eq!(
            fields(check(json!({"name": null}), false).unwrap_err()),
            ["name"]
        );
        let long = "x".repeat(201);
        assert_eq!(
            fields(check(json!({"name": long}), false).unwrap_err()),
            ["name"]
        );
        let long = "x".repeat(2001);
        assert_eq!(
            fields(check(json!({"description": long}), false).unwrap_err()),
            ["description"]
        );
    }
}
