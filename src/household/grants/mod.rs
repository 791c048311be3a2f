//! Person access grants: which member may view, record for or manage which person.

pub mod store;

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use crate::auth::{AccessLevel, Actor};
use crate::error::Result;

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
