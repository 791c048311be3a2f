//! Memberships: an account's place in a household, its role and permissions.
//! Owners and administrators administer them; only an owner may touch an
//! owner's membership or give the owner role, and the last active owner
//! always stays.

pub mod model;
pub mod operator;
pub mod routes;
pub mod store;

use crate::db::WriteTx;
use rusqlite::Connection;
use serde_json::json;

use crate::auth::{Actor, Permissions, Role, store as auth_store};
use crate::domain::Page;
use crate::error::{ApiError, Problems, Result};
use crate::household::{app_tokens, audit, grants, invitations};
use model::{Membership, MembershipAttributes, MembershipStatus};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// PATCH: any subset of fields.
    Update,
    /// PUT: every field required.
    Replace,
}

pub fn list(conn: &Connection, actor: &Actor, page: Page) -> Result<(Vec<Membership>, i64)> {
    actor.require_manager("list memberships")?;
    store::list(conn, actor.household_id, page)
}

fn find(conn: &Connection, actor: &Actor, id: i64) -> Result<Membership> {
    store::find(conn, actor.household_id, id)?.ok_or_else(|| ApiError::not_found("membership"))
}

/// Only an owner may change or remove an owner's membership.
fn require_may_touch(actor: &Actor, target: &Membership, doing: &str) -> Result<()> {
    if target.role == Role::Owner && actor.role != Role::Owner {
        return Err(ApiError::forbidden(format!(
            "only an owner may {doing} an owner's membership"
        )));
    }
    Ok(())
}

/// The household always keeps an active owner.
fn require_other_owner(conn: &Connection, target: &Membership, doing: &str) -> Result<()> {
    if target.is_active_owner()
        && store::other_active_owners(conn, target.household_id, target.id)? == 0
    {
        return Err(ApiError::conflict(
            "last_owner",
            format!(
                "the household's last active owner cannot be {doing}; make another member an owner first"
            ),
        ));
    }
    Ok(())
}

/// PATCH: changes the fields sent.
pub fn update(
    conn: &WriteTx,
    actor: &Actor,
    id: i64,
    attrs: MembershipAttributes,
) -> Result<Membership> {
    change(conn, actor, id, attrs, Mode::Update)
}

/// PUT: every field is required (`person_id` may be null), so a replace
/// never unlinks a person or drops a permission by leaving it out.
pub fn replace(
    conn: &WriteTx,
    actor: &Actor,
    id: i64,
    attrs: MembershipAttributes,
) -> Result<Membership> {
    change(conn, actor, id, attrs, Mode::Replace)
}

fn change(
    conn: &WriteTx,
    actor: &Actor,
    id: i64,
    attrs: MembershipAttributes,
    mode: Mode,
) -> Result<Membership> {
    actor.require_manager("change memberships")?;
    let current = find(conn, actor, id)?;
    validate(&attrs, mode)?;
    require_may_touch(actor, &current, "change")?;

    let mut next = current.clone();
    let flag = |sent: Option<Option<bool>>, old: bool| sent.flatten().unwrap_or(old);
    next.permissions = Permissions {
        inventory_management: flag(
            attrs.inventory_management,
            current.permissions.inventory_management,
        ),
        location_management: flag(
            attrs.location_management,
            current.permissions.location_management,
        ),
        adult_review: flag(attrs.adult_review, current.permissions.adult_review),
    };
    if let Some(Some(role)) = attrs.role {
        next.role = role;
    }
    if let Some(Some(status)) = attrs.status {
        next.status = status.into();
    }
    if let Some(person_id) = attrs.person_id {
        next.person_id = person_id;
    }

    if next.role == Role::Owner && current.role != Role::Owner && actor.role != Role::Owner {
        return Err(ApiError::forbidden("only an owner may give the owner role"));
    }
    if let Some(person_id) = next.person_id
        && next.person_id != current.person_id
    {
        check_person(conn, actor, current.id, person_id)?;
    }
    if !next.is_active_owner() {
        let doing = if next.role == Role::Owner {
            "suspended"
        } else {
            "demoted"
        };
        require_other_owner(conn, &current, doing)?;
    }

    let changed = changed_fields(&current, &next);
    if changed.is_empty() {
        return Ok(current);
    }
    if next.person_id != current.person_id {
        if let Some(old) = current.person_id {
            grants::take_self(conn, actor, current.id, old)?;
        }
        if let Some(new) = next.person_id {
            grants::give_self(conn, actor, current.id, new)?;
        }
    }
    // The grant changes above moved the stored version on; count from it.
    next.permissions_version = store::find(conn, actor.household_id, id)?
        .map_or(next.permissions_version, |m| m.permissions_version)
        + 1;
    next.lock_version += 1;
    next.updated_at = crate::domain::Timestamp::now();
    store::update(conn, &next)?;
    let mut metadata = json!({ "changed": changed });
    let revoked = invitations::revoke_outgrown(conn, &next, Some(actor.membership_id))?;
    if revoked > 0 {
        metadata["revoked_invitations"] = revoked.into();
    }
    audit::record(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        "membership.updated",
        ("membership", next.id),
        metadata,
    )?;
    find(conn, actor, id)
}

/// The person a membership is linked to: one of this household's people,
/// not already some other member's own person.
fn check_person(
    conn: &Connection,
    actor: &Actor,
    membership_id: i64,
    person_id: i64,
) -> Result<()> {
    if !auth_store::person_in_household(conn, actor.household_id, person_id)? {
        return Err(ApiError::not_found("person"));
    }
    if store::person_linked_elsewhere(conn, person_id, membership_id)? {
        return Err(ApiError::invalid(
            "person_id",
            "is already linked to another membership",
        ));
    }
    Ok(())
}

fn changed_fields(before: &Membership, after: &Membership) -> Vec<&'static str> {
    let mut changed = Vec::new();
    if before.role != after.role {
        changed.push("role");
    }
    if before.status != after.status {
        changed.push("status");
    }
    if before.person_id != after.person_id {
        changed.push("person_id");
    }
    let (b, a) = (before.permissions, after.permissions);
    if b.inventory_management != a.inventory_management {
        changed.push("inventory_management");
    }
    if b.location_management != a.location_management {
        changed.push("location_management");
    }
    if b.adult_review != a.adult_review {
        changed.push("adult_review");
    }
    changed
}

/// Checks submitted attributes, collecting every problem before answering.
fn validate(attrs: &MembershipAttributes, mode: Mode) -> Result<()> {
    let mut problems = Problems::default();
    let mut add = |field: &str, message: &str| problems.add(field, message);
    let whole = mode == Mode::Replace;
    match attrs.role {
        None if whole => add("role", "is required"),
        Some(None) => add("role", "must not be null"),
        _ => {}
    }
    match attrs.status {
        None if whole => add("status", "is required"),
        Some(None) => add("status", "must not be null"),
        _ => {}
    }
    if whole && attrs.person_id.is_none() {
        add("person_id", "is required (null for no linked person)");
    }
    if let Some(Some(person_id)) = attrs.person_id
        && person_id < 1
    {
        add("person_id", "must be a positive integer or null");
    }
    for (field, value) in [
        ("inventory_management", attrs.inventory_management),
        ("location_management", attrs.location_management),
        ("adult_review", attrs.adult_review),
    ] {
        match value {
            None if whole => add(field, "is required"),
            Some(None) => add(field, "must not be null"),
            _ => {}
        }
    }
    problems.check("the membership's attributes are invalid")
}

/// Removes a member: the membership is revoked, and with it its app tokens,
/// person access grants and pending invitations, at once.
pub fn revoke(conn: &WriteTx, actor: &Actor, id: i64) -> Result<()> {
    actor.require_manager("remove memberships")?;
    let current = find(conn, actor, id)?;
    require_may_touch(actor, &current, "remove")?;
    remove(conn, &current, Some(actor.membership_id))
}

/// The removal itself, for a member (`acting`) or the host operator (`None`).
fn remove(conn: &WriteTx, current: &Membership, acting: Option<i64>) -> Result<()> {
    require_other_owner(conn, current, "removed")?;
    store::revoke(conn, current.id)?;
    let app_tokens = app_tokens::store::revoke_all_of_membership(conn, current.id)?;
    let grants = grants::store::revoke_all_of_membership(conn, current.id)?;
    let removed = Membership {
        status: MembershipStatus::Revoked,
        ..current.clone()
    };
    let invitations = invitations::revoke_outgrown(conn, &removed, acting)?;
    audit::record(
        conn,
        current.household_id,
        acting,
        "membership.revoked",
        ("membership", current.id),
        json!({
            "role": current.role.as_str(),
            "revoked_app_tokens": app_tokens,
            "revoked_person_access_grants": grants,
            "revoked_invitations": invitations,
        }),
    )
}
