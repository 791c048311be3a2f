//! Person access grants: which member may view, record for or manage which person.

pub mod model;
pub mod routes;
pub mod store;

use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::auth::{AccessLevel, Actor};
use crate::error::{ApiError, Problems, Result};
use crate::household::{audit, memberships, people};
use crate::http::extract::Page;
use model::{GrantAttributes, PersonAccessGrant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relationship {
    #[serde(rename = "self")]
    Myself,
    Parent,
    FamilyMember,
    Carer,
    Professional,
}

impl Relationship {
    pub fn as_str(self) -> &'static str {
        match self {
            Relationship::Myself => "self",
            Relationship::Parent => "parent",
            Relationship::FamilyMember => "family_member",
            Relationship::Carer => "carer",
            Relationship::Professional => "professional",
        }
    }

    pub fn parse(s: &str) -> Option<Relationship> {
        match s {
            "self" => Some(Relationship::Myself),
            "parent" => Some(Relationship::Parent),
            "family_member" => Some(Relationship::FamilyMember),
            "carer" => Some(Relationship::Carer),
            "professional" => Some(Relationship::Professional),
            _ => None,
        }
    }
}

/// Gives `membership_id` a manage grant on a person, without an acting
/// member (set-up and CLI use this).
pub fn grant_manage(
    conn: &Connection,
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
    store::bump_permissions_version(conn, membership_id)?;
    Ok(id)
}

/// The member who creates a person manages them.
pub fn grant_to_creator(
    conn: &Connection,
    actor: &Actor,
    person_id: i64,
    relationship: Relationship,
) -> Result<i64> {
    grant_manage(
        conn,
        actor.household_id,
        actor.membership_id,
        person_id,
        relationship,
        Some(actor.membership_id),
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
    store::list_live(conn, actor.household_id, filter, page)
}

/// Owners and administrators give a member access to a person; the
/// member's permissions version moves on and the grant works at once.
pub fn create(
    conn: &Connection,
    actor: &Actor,
    attrs: GrantAttributes,
) -> Result<PersonAccessGrant> {
    actor.require_manager("grant access to people")?;
    let mut problems = Problems::default();
    let mut add = |field: &str, message: &str| problems.add(field, message);
    // References that name nothing in this household are "not found".
    let membership = memberships::store::find(conn, actor.household_id, attrs.membership_id)?
        .ok_or_else(|| ApiError::not_found("membership"))?;
    memberships::require_rank_over(conn, actor, membership.id, "grant access to")?;
    let person = match &attrs.person_id {
        Some(id) => Some(
            people::store::find(conn, actor.household_id, id)?
                .ok_or_else(|| ApiError::not_found("person"))?,
        ),
        None => {
            add("person_id", "is required");
            None
        }
    };
    let expires_at = match attrs.expires_at.as_deref() {
        None => None,
        Some(text) => match crate::time::parse(text) {
            Some(at) if at > crate::time::now() => Some(at),
            Some(_) => {
                add("expires_at", "must be in the future");
                None
            }
            None => {
                add("expires_at", "must be an ISO 8601 date-time with an offset");
                None
            }
        },
    };
    problems.check("the person access grant's attributes are invalid")?;
    let Some(person) = person else {
        return Err(ApiError::internal("grant checks passed without a person"));
    };
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
            expires_at: expires_at.as_deref(),
            created_by_membership_id: Some(actor.membership_id),
        },
    )?;
    store::bump_permissions_version(conn, membership.id)?;
    audit::record(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        "person_access_grant.created",
        ("person_access_grant", id),
        json!({
            "membership_id": membership.id,
            "person_id": person.id,
            "access_level": attrs.access_level.as_str(),
            "relationship_type": attrs.relationship_type.as_str(),
            "expires_at": expires_at,
        }),
    )?;
    store::find_live(conn, actor.household_id, id)?
        .ok_or_else(|| ApiError::internal("new person access grant not found"))
}

/// Revokes at once: the member's next request no longer reaches the person.
pub fn revoke(conn: &Connection, actor: &Actor, id: i64) -> Result<()> {
    actor.require_manager("revoke person access grants")?;
    let grant = store::find_live(conn, actor.household_id, id)?
        .ok_or_else(|| ApiError::not_found("person access grant"))?;
    memberships::require_rank_over(
        conn,
        actor,
        grant.membership_id,
        "revoke the access grants of",
    )?;
    store::revoke(conn, grant.id)?;
    store::bump_permissions_version(conn, grant.membership_id)?;
    audit::record(
        conn,
        actor.household_id,
        Some(actor.membership_id),
        "person_access_grant.revoked",
        ("person_access_grant", grant.id),
        json!({"membership_id": grant.membership_id, "person_id": grant.person_id}),
    )
}
