//! Person access grants: which member may view, record for or manage which person.

pub mod model;
pub mod routes;
pub mod store;

use crate::db::WriteTx;
use rusqlite::Connection;
use serde_json::json;

use crate::auth::access::{self, Named};
use crate::auth::{AccessLevel, Actor};
use crate::domain::{Page, Timestamp};
use crate::error::{ApiError, Problems, Result};
use crate::household::audit;
use crate::household::memberships::store as memberships_store;
use crate::household::people::store as people_store;
pub use model::Relationship;
use model::{GrantAttributes, PersonAccessGrant};

/// Gives `membership_id` a manage grant on a person, without an acting
/// member (set-up and CLI use this).
pub fn grant_manage(
    conn: &WriteTx,
    household_id: i64,
    membership_id: i64,
    person_id: i64,
    relationship: Relationship,
    created_by: Option<i64>,
) -> Result<i64> {
    let id = store::insert(
        conn,
        &store::NewGrant {
            household_id,
            membership_id,
            person_id,
            access_level: AccessLevel::Manage.as_str(),
            relationship_type: relationship.as_str(),
            expires_at: None,
            created_by_membership_id: created_by,
        },
    )?;
    crate::household::memberships::store::bump_permissions_version(conn, membership_id)?;
    Ok(id)
}

/// The member who creates a person manages them; the grant is audited like
/// every other.
pub fn grant_to_creator(
    conn: &WriteTx,
    actor: &Actor,
    person_id: i64,
    relationship: Relationship,
) -> Result<i64> {
    let id = grant_manage(
        conn,
        actor.household_id,
        actor.membership_id,
        person_id,
        relationship,
        Some(actor.membership_id),
    )?;
    audit_created(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        id,
        "person_created",
    )?;
    Ok(id)
}

/// A member linked to a person manages them as `self`: whatever live grant
/// they held on the person is replaced by that one, so `/me`, `/profile` and
/// `/people/{id}` agree about what the member may see.
pub fn give_self(conn: &WriteTx, actor: &Actor, membership_id: i64, person_id: i64) -> Result<()> {
    for replaced in store::revoke_all_on(conn, membership_id, person_id)? {
        audit_revoked(conn, actor, replaced, membership_id, person_id, "linked")?;
    }
    let id = grant_manage(
        conn,
        actor.household_id,
        membership_id,
        person_id,
        Relationship::Myself,
        Some(actor.membership_id),
    )?;
    audit_created(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        id,
        "linked",
    )
}

/// Unlinking a member from their person takes the `self` grant away.
pub fn take_self(conn: &WriteTx, actor: &Actor, membership_id: i64, person_id: i64) -> Result<()> {
    let revoked = store::revoke_self_on(conn, membership_id, person_id)?;
    if !revoked.is_empty() {
        crate::household::memberships::store::bump_permissions_version(conn, membership_id)?;
    }
    for id in revoked {
        audit_revoked(conn, actor, id, membership_id, person_id, "unlinked")?;
    }
    Ok(())
}

fn audit_revoked(
    conn: &WriteTx,
    actor: &Actor,
    id: i64,
    membership_id: i64,
    person_id: i64,
    via: &str,
) -> Result<()> {
    audit::record(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        "person_access_grant.revoked",
        ("person_access_grant", id),
        json!({"membership_id": membership_id, "person_id": person_id, "via": via}),
    )
}

/// The audit event of a new grant, read back from what was stored; `via`
/// says which rule gave it.
pub fn audit_created(
    conn: &WriteTx,
    household_id: i64,
    actor_membership_id: Option<i64>,
    id: i64,
    via: &str,
) -> Result<()> {
    let grant = store::find_live(conn, household_id, id)?
        .ok_or_else(|| ApiError::internal("new person access grant not found"))?;
    audit::record(
        conn,
        household_id,
        actor_membership_id,
        "person_access_grant.created",
        ("person_access_grant", id),
        json!({
            "membership_id": grant.membership_id,
            "person_id": grant.person_id,
            "access_level": grant.access_level.as_str(),
            "relationship_type": grant.relationship_type.as_str(),
            "expires_at": grant.expires_at,
            "via": via,
        }),
    )
}

/// The household's live grants (expired ones stay listed until deleted).
pub fn list(
    conn: &Connection,
    actor: &Actor,
    filter: &store::Filter,
    page: Page,
) -> Result<(Vec<PersonAccessGrant>, i64)> {
    actor.require_manager("list person access grants")?;
    if let Some(id) = filter.membership_id
        && memberships_store::find(conn, actor.household_id, id)?.is_none()
    {
        return Err(ApiError::not_found("membership"));
    }
    let person_id = access::filter_id(conn, actor, Named::Person, filter.person_id.as_ref())?;
    store::list_live(
        conn,
        actor.household_id,
        filter.membership_id,
        person_id,
        page,
    )
}

/// Owners and administrators give a member access to a person; the
/// member's permissions version moves on and the grant works at once.
pub fn create(conn: &WriteTx, actor: &Actor, attrs: GrantAttributes) -> Result<PersonAccessGrant> {
    actor.require_manager("grant access to people")?;
    let mut problems = Problems::default();
    let mut add = |field: &str, message: &str| problems.add(field, message);
    // References that name nothing in this household are "not found".
    let membership = memberships_store::find(conn, actor.household_id, attrs.membership_id)?
        .ok_or_else(|| ApiError::not_found("membership"))?;
    access::require_rank_over(conn, actor, membership.id, "grant access to")?;
    let person = match &attrs.person_id {
        Some(id) => Some(
            people_store::find(conn, actor.household_id, id)?
                .ok_or_else(|| ApiError::not_found("person"))?,
        ),
        None => {
            add("person_id", "is required");
            None
        }
    };
    let expires_at = match attrs.expires_at.as_deref() {
        None => None,
        Some(text) => match Timestamp::parse(text) {
            Some(at) if at > Timestamp::now() => Some(at),
            Some(_) => {
                add("expires_at", "must be in the future");
                None
            }
            // Past the end of the supported calendar: still say what is wrong.
            None if year_of(text).is_some_and(|year| year >= 9999) => {
                add(
                    "expires_at",
                    "is too far in the future (the latest supported is in the year 9999); leave it out, or null, for a grant that does not expire",
                );
                None
            }
            None => {
                add("expires_at", "must be an ISO 8601 date-time with an offset");
                None
            }
        },
    };
    if attrs.relationship_type == Relationship::Myself
        && person
            .as_ref()
            .is_some_and(|p| membership.person_id != Some(p.id))
    {
        add(
            "relationship_type",
            "self is only for the member's own linked person",
        );
    }
    problems.check("the person access grant's attributes are invalid")?;
    let Some(person) = person else {
        return Err(ApiError::internal("grant checks passed without a person"));
    };
    // A grant past its expiry gives nothing; it is closed so that the new
    // one is the member's only live grant on the person.
    store::revoke_expired(conn, membership.id, person.id, &Timestamp::now())?;
    if store::live_exists(conn, membership.id, person.id)? {
        return Err(ApiError::conflict(
            "grant_exists",
            "this member already holds a live grant on this person; delete it before granting again",
        ));
    }
    let id = store::insert(
        conn,
        &store::NewGrant {
            household_id: actor.household_id,
            membership_id: membership.id,
            person_id: person.id,
            access_level: attrs.access_level.as_str(),
            relationship_type: attrs.relationship_type.as_str(),
            expires_at: expires_at.as_ref(),
            created_by_membership_id: Some(actor.membership_id),
        },
    )?;
    crate::household::memberships::store::bump_permissions_version(conn, membership.id)?;
    audit_created(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        id,
        "administration",
    )?;
    store::find_live(conn, actor.household_id, id)?
        .ok_or_else(|| ApiError::internal("new person access grant not found"))
}

/// The year a date-time text starts with (`+10000-01-01T...` included).
fn year_of(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('+').unwrap_or(text);
    let end = digits.find('-')?;
    digits[..end].parse().ok()
}

/// Revokes at once: the member's next request no longer reaches the person.
pub fn revoke(conn: &WriteTx, actor: &Actor, id: i64) -> Result<()> {
    actor.require_manager("revoke person access grants")?;
    let grant = store::find_live(conn, actor.household_id, id)?
        .ok_or_else(|| ApiError::not_found("person access grant"))?;
    access::require_rank_over(
        conn,
        actor,
        grant.membership_id,
        "revoke the access grants of",
    )?;
    store::revoke(conn, grant.id)?;
    crate::household::memberships::store::bump_permissions_version(conn, grant.membership_id)?;
    audit::record(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        "person_access_grant.revoked",
        ("person_access_grant", grant.id),
        json!({"membership_id": grant.membership_id, "person_id": grant.person_id}),
    )
}
