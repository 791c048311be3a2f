//! Membership API shapes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::auth::{Permissions, Role};
use crate::domain::vocabulary;
use crate::domain::{Timestamp, present};
use crate::http::openapi;
use crate::http::replace::Whole;

vocabulary!(
    /// A membership's lifecycle: `revoked` is final and never listed.
    MembershipStatus {
        Active => "active",
        Suspended => "suspended",
        Revoked => "revoked",
    }
);

vocabulary!(
    /// The statuses a client may set (and the only ones listed); removal is DELETE.
    AssignableStatus {
        Active => "active",
        Suspended => "suspended",
    }
);

impl From<AssignableStatus> for MembershipStatus {
    fn from(s: AssignableStatus) -> Self {
        match s {
            AssignableStatus::Active => MembershipStatus::Active,
            AssignableStatus::Suspended => MembershipStatus::Suspended,
        }
    }
}

// A membership as administrators see it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Membership {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::NumericId")]
    pub household_id: i64,
    #[schemars(with = "openapi::NumericId")]
    pub account_id: i64,
    #[schemars(extend("format" = "email"))]
    pub email: String,
    pub display_name: Option<String>,
    pub role: Role,
    #[schemars(with = "AssignableStatus")]
    pub status: MembershipStatus,
    #[schemars(with = "Option<openapi::NumericId>")]
    pub person_id: Option<i64>,
    #[schemars(with = "Option<openapi::PortableId>")]
    pub person_portable_id: Option<String>,
    pub permissions: Permissions,
    #[schemars(range(min = 1, max = i64::MAX))]
    pub permissions_version: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(skip)]
    pub lock_version: i64,
}

impl Membership {
    pub fn is_active_owner(&self) -> bool {
        self.role == Role::Owner && self.status == MembershipStatus::Active
    }
}

/// Membership attributes: absent fields stay as they are (PATCH) or are
/// refused (PUT, which carries them all); only `person_id` may be null.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MembershipAttributes {
    /// Only an owner may give the owner role
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Role")]
    pub role: Option<Option<Role>>,
    /// A suspended member's credentials stop working at once
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "AssignableStatus")]
    pub status: Option<Option<AssignableStatus>>,
    /// The member's own person in this household; linking gives the member a `self` manage grant on it and unlinking removes that grant
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<openapi::NumericId>")]
    pub person_id: Option<Option<i64>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool")]
    pub inventory_management: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool")]
    pub location_management: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool")]
    pub adult_review: Option<Option<bool>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "MembershipUpdateRequest")]
pub struct MembershipBody {
    pub household_membership: MembershipAttributes,
}

impl Whole for MembershipBody {
    const KEY: &'static str = "household_membership";
    const FIELDS: &'static [&'static str] = &[
        "role",
        "status",
        "person_id",
        "inventory_management",
        "location_management",
        "adult_review",
    ];
}
