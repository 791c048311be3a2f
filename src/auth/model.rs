//! Who is calling, as types: a member's role and permissions, the levels
//! of access to a person, the credential of a request and the `Actor` it
//! resolves to; and the account-level shapes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::vocabulary;
use crate::error::{ApiError, Result};
use crate::http::openapi;

vocabulary!(
    /// A member's role in a household.
    Role {
        Owner => "owner",
        Administrator => "administrator",
        Member => "member",
    }
);

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "MembershipPermissions", deny_unknown_fields)]
pub struct Permissions {
    pub inventory_management: bool,
    pub location_management: bool,
    pub adult_review: bool,
}

/// The credential a request was made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// A household app token, bound to one membership.
    AppToken { id: i64, membership_id: i64 },
    /// An OAuth access token of a sign-in session (`id` is the session's):
    /// it identifies the account and reaches every household the account is
    /// an active member of.
    Session { id: i64 },
}

impl Credential {
    /// The rate limiter's bucket for this credential.
    pub fn bucket(&self) -> String {
        match self {
            Credential::AppToken { id, .. } => format!("app_token:{id}"),
            Credential::Session { id } => format!("session:{id}"),
        }
    }

    /// The sign-in session behind the credential, if it is one.
    pub fn session_id(&self) -> Option<i64> {
        match self {
            Credential::Session { id } => Some(*id),
            Credential::AppToken { .. } => None,
        }
    }
}

/// A verified credential, before a household is chosen.
#[derive(Debug, Clone)]
pub struct Authenticated {
    pub account_id: i64,
    pub credential: Credential,
    pub last_used_at: Option<String>,
}

/// The member acting in one household, resolved from current data on every
/// request (never from anything cached in the token).
#[derive(Debug, Clone)]
pub struct Actor {
    pub account_id: i64,
    pub membership_id: i64,
    pub household_id: i64,
    pub role: Role,
    pub person_id: Option<i64>,
    pub permissions: Permissions,
    pub credential: Credential,
}

impl crate::db::idempotency::KeyOwner for Actor {
    fn household_id(&self) -> i64 {
        self.household_id
    }

    fn membership_id(&self) -> i64 {
        self.membership_id
    }
}

impl Actor {
    /// Owners and administrators manage the whole household.
    pub fn is_manager(&self) -> bool {
        matches!(self.role, Role::Owner | Role::Administrator)
    }

    pub fn require_manager(&self, doing: &str) -> Result<()> {
        if self.is_manager() {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "only household owners and administrators may {doing}"
            )))
        }
    }

    pub fn can_manage_locations(&self) -> bool {
        self.is_manager() || self.permissions.location_management
    }

    pub fn can_manage_inventory(&self) -> bool {
        self.is_manager() || self.permissions.inventory_management
    }

    /// The permissions the member actually has: owners and administrators
    /// hold inventory and location management through their role, whatever
    /// their stored flags say. Adult review is never implied.
    pub fn effective_permissions(&self) -> Permissions {
        Permissions {
            inventory_management: self.can_manage_inventory(),
            location_management: self.can_manage_locations(),
            adult_review: self.permissions.adult_review,
        }
    }
}

/// The outcome of verifying a request's bearer credential, kept in the
/// request's extensions by the rate limiter (which must know it before it
/// can choose a bucket) so that a credential is verified once per request.
#[derive(Debug, Clone)]
pub struct Verified(pub std::result::Result<Authenticated, &'static str>);

vocabulary!(
    /// Ordered: `view` < `record` < `manage`. `record` may record takes and
    /// outcomes but not change the care plan.
    #[derive(PartialOrd, Ord)]
    AccessLevel {
        View => "view",
        Record => "record",
        Manage => "manage",
    }
);

// A household the credential reaches, with the member's place in it.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct HouseholdSummary {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    pub name: String,
    /// IANA time zone name
    pub time_zone: String,
    #[schemars(with = "Role")]
    pub role: String,
    #[schemars(with = "openapi::NumericId")]
    pub membership_id: i64,
    #[schemars(with = "Option<openapi::NumericId>")]
    pub person_id: Option<i64>,
}
