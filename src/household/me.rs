//! `getCurrentProfile`: who the caller is in this household.

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use rusqlite::Connection;
use schemars::JsonSchema;
use serde::Serialize;

use crate::auth::{Actor, Permissions, Role};
use crate::domain::ResourceId;
use crate::error::Result;
use crate::household::memberships::{self, model::MembershipStatus};
use crate::household::people::{self, model::Person};
use crate::http::openapi::{self, Api, Op};
use crate::http::respond;
use crate::state::AppState;

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CurrentProfile {
    pub account: CurrentAccount,
    pub membership: CurrentMembership,
    // The person linked to the membership, if any.
    pub person: Option<Person>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline, deny_unknown_fields)]
pub struct CurrentAccount {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(extend("format" = "email"))]
    pub email: String,
    pub display_name: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline, deny_unknown_fields)]
pub struct CurrentMembership {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::NumericId")]
    pub household_id: i64,
    pub role: Role,
    #[schemars(with = "MembershipStatus")]
    pub status: String,
    /// What the member may do now: owners and administrators hold inventory and location management through their role
    pub permissions: Permissions,
    #[schemars(range(min = 1, max = i64::MAX))]
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

pub fn routes(api: Api) -> Api {
    api.route(
        Op::get(
            "/households/{household_id}/me",
            "getCurrentProfile",
            "Profile",
        )
        .summary("The signed-in account, its membership and linked person in this household")
        .ok::<CurrentProfile>(),
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
