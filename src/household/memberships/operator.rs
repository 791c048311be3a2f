//! What the host operator does to memberships from the server's shell
//! (`pillbox member role|remove`). The operator stands above every role, so
//! may give or take the owner role, but the household's invariants hold as
//! for the API: the last active owner stays, and a member's pending
//! invitations do not outlive their authority. Audit events name no acting
//! membership, because no member acted.

use crate::db::WriteTx;
use rusqlite::Connection;
use serde_json::json;

use super::model::Membership;
use super::{changed_fields, remove, require_other_owner, store};
use crate::auth::Role;
use crate::error::{ApiError, Result};
use crate::household::audit;

fn find(conn: &Connection, household_id: i64, id: i64) -> Result<Membership> {
    store::find(conn, household_id, id)?.ok_or_else(|| ApiError::not_found("membership"))
}

/// Sets a member's role; returns the membership as it now is.
pub fn set_role(conn: &WriteTx, household_id: i64, id: i64, role: Role) -> Result<Membership> {
    let current = find(conn, household_id, id)?;
    let mut next = current.clone();
    next.role = role;
    if !next.is_active_owner() {
        require_other_owner(conn, &current, "demoted")?;
    }
    let changed = changed_fields(&current, &next);
    if changed.is_empty() {
        return Ok(current);
    }
    next.permissions_version += 1;
    next.lock_version += 1;
    next.updated_at = crate::domain::Timestamp::now();
    store::update(conn, &next)?;
    let mut metadata = json!({ "changed": changed, "via": "cli" });
    let revoked = crate::household::invitations::revoke_outgrown(conn, &next, None)?;
    if revoked > 0 {
        metadata["revoked_invitations"] = revoked.into();
    }
    audit::record(
        conn,
        household_id,
        None,
        "membership.updated",
        ("membership", next.id),
        metadata,
    )?;
    find(conn, household_id, id)
}

/// Removes a member with their app tokens, grants and pending invitations.
pub fn remove_member(conn: &WriteTx, household_id: i64, id: i64) -> Result<()> {
    let current = find(conn, household_id, id)?;
    remove(conn, &current, None)
}
