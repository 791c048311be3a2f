//! `getCurrentProfile`: who the caller is in this household.

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use rusqlite::Connection;
use serde::Serialize;
use serde_json::{Value, json};

use crate::auth::{Actor, Permissions, Role};
use crate::domain::ResourceId;
use crate::error::Result;
use crate::household::memberships;
use crate::household::people::{self, model::Person};
use crate::http::openapi::{Api, Op};
use crate::http::respond;
use crate::state::AppState;

#[derive(Debug, Serialize)]
pub struct CurrentProfile {
    pub account: CurrentAccount,
    pub membership: CurrentMembership,
    /// The person linked to the membership, if any.
    pub person: Option<Person>,
}

#[derive(Debug, Serialize)]
pub struct CurrentAccount {
    pub id: i64,
    pub email: String,
    pub display_name: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct CurrentMembership {
    pub id: i64,
    pub household_id: i64,
    pub role: Role,
    pub status: String,
    pub permissions: Permissions,
    pub permissions_version: i64,
}

pub fn current_profile(conn: &Connection, actor: &Actor) -> Result<CurrentProfile> {
    let own = memberships::store::own(conn, actor.membership_id)?;
    let person = match actor.person_id {
        Some(id) => {
            let row = people::store::find(conn, actor.household_id, &ResourceId::Numeric(id))?;
            match row {
                Some(row) => people::to_api(conn, actor.household_id, vec![row])?.pop(),
                None => None,
            }
        }
        None => None,
    };
    Ok(CurrentProfile {
        account: CurrentAccount {
            id: actor.account_id,
            email: own.email,
            display_name: own.display_name,
        },
        membership: CurrentMembership {
            id: actor.membership_id,
            household_id: actor.household_id,
            role: actor.role,
            status: own.status,
            permissions: actor.effective_permissions(),
            permissions_version: own.permissions_version,
        },
        person,
    })
}

fn schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false,
        "required": ["account", "membership", "person"],
        "properties": {
            "account": {
                "type": "object", "additionalProperties": false,
                "required": ["id", "email", "display_name"],
                "properties": {
                    "id": {"$ref": "#/components/schemas/NumericId"},
                    "email": {"type": "string", "format": "email"},
                    "display_name": {"type": ["string", "null"]},
                },
            },
            "membership": {
                "type": "object", "additionalProperties": false,
                "required": ["id", "household_id", "role", "status", "permissions", "permissions_version"],
                "properties": {
                    "id": {"$ref": "#/components/schemas/NumericId"},
                    "household_id": {"$ref": "#/components/schemas/NumericId"},
                    "role": {"type": "string", "enum": ["owner", "administrator", "member"]},
                    "status": {"type": "string", "enum": ["active", "suspended", "revoked"]},
                    "permissions": {"$ref": "#/components/schemas/MembershipPermissions",
                        "description": "What the member may do now: owners and administrators hold inventory and location management through their role"},
                    "permissions_version": {"type": "integer", "minimum": 1, "maximum": i64::MAX},
                },
            },
            "person": {"anyOf": [{"$ref": "#/components/schemas/Person"}, {"type": "null"}]},
        },
    })
}

pub fn permissions_schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false,
        "required": ["inventory_management", "location_management", "adult_review"],
        "properties": {
            "inventory_management": {"type": "boolean"},
            "location_management": {"type": "boolean"},
            "adult_review": {"type": "boolean"},
        },
    })
}

pub fn routes(api: Api) -> Api {
    api.schema("MembershipPermissions", permissions_schema())
        .single_schema("CurrentProfile", schema())
        .route(
            Op::get(
                "/households/{household_id}/me",
                "getCurrentProfile",
                "Profile",
            )
            .summary("The signed-in account, its membership and linked person in this household")
            .ok_named("CurrentProfileResponse"),
            get(show),
        )
}

async fn show(State(state): State<AppState>, actor: Actor) -> Result<Response> {
    let profile = state
        .db
        .read(move |conn| current_profile(conn, &actor))
        .await?;
    Ok(respond::ok(profile))
}
