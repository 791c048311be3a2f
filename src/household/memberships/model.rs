//! Membership API shapes.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::auth::{Permissions, Role};
use crate::domain::present;
use crate::http::replace::Whole;

/// A membership's lifecycle: `revoked` is final and never listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MembershipStatus {
    Active,
    Suspended,
    Revoked,
}

impl MembershipStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            MembershipStatus::Active => "active",
            MembershipStatus::Suspended => "suspended",
            MembershipStatus::Revoked => "revoked",
        }
    }

    pub fn parse(s: &str) -> Option<MembershipStatus> {
        match s {
            "active" => Some(MembershipStatus::Active),
            "suspended" => Some(MembershipStatus::Suspended),
            "revoked" => Some(MembershipStatus::Revoked),
            _ => None,
        }
    }
}

/// The statuses a client may set; removal is DELETE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AssignableStatus {
    Active,
    Suspended,
}

impl From<AssignableStatus> for MembershipStatus {
    fn from(s: AssignableStatus) -> Self {
        match s {
            AssignableStatus::Active => MembershipStatus::Active,
            AssignableStatus::Suspended => MembershipStatus::Suspended,
        }
    }
}

/// A membership as administrators see it.
#[derive(Debug, Clone, Serialize)]
pub struct Membership {
    pub id: i64,
    pub household_id: i64,
    pub account_id: i64,
    pub email: String,
    pub display_name: Option<String>,
    pub role: Role,
    pub status: MembershipStatus,
    pub person_id: Option<i64>,
    pub person_portable_id: Option<String>,
    pub permissions: Permissions,
    pub permissions_version: i64,
    pub created_at: String,
    pub updated_at: String,
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
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MembershipAttributes {
    #[serde(default, deserialize_with = "present")]
    pub role: Option<Option<Role>>,
    #[serde(default, deserialize_with = "present")]
    pub status: Option<Option<AssignableStatus>>,
    #[serde(default, deserialize_with = "present")]
    pub person_id: Option<Option<i64>>,
    #[serde(default, deserialize_with = "present")]
    pub inventory_management: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    pub location_management: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    pub adult_review: Option<Option<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
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

pub fn membership_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "household_id", "account_id", "email", "display_name", "role",
            "status", "person_id", "person_portable_id", "permissions", "permissions_version",
            "created_at", "updated_at"],
        "properties": {
            "id": {"$ref": "#/components/schemas/NumericId"},
            "household_id": {"$ref": "#/components/schemas/NumericId"},
            "account_id": {"$ref": "#/components/schemas/NumericId"},
            "email": {"type": "string", "format": "email"},
            "display_name": {"type": ["string", "null"]},
            "role": {"type": "string", "enum": ["owner", "administrator", "member"]},
            "status": {"type": "string", "enum": ["active", "suspended"]},
            "person_id": {"anyOf": [{"$ref": "#/components/schemas/NumericId"}, {"type": "null"}]},
            "person_portable_id": {"anyOf": [{"$ref": "#/components/schemas/PortableId"}, {"type": "null"}]},
            "permissions": {"$ref": "#/components/schemas/MembershipPermissions"},
            "permissions_version": {"type": "integer", "minimum": 1, "maximum": i64::MAX},
            "created_at": {"$ref": "#/components/schemas/Timestamp"},
            "updated_at": {"$ref": "#/components/schemas/Timestamp"},
        },
    })
}

/// Membership attributes; `required` lists what a replace needs.
pub fn membership_attributes_schema(required: &[&str]) -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": {
            "role": {"type": "string", "enum": ["owner", "administrator", "member"],
                "description": "Only an owner may give the owner role"},
            "status": {"type": "string", "enum": ["active", "suspended"],
                "description": "A suspended member's credentials stop working at once"},
            "person_id": {"anyOf": [{"$ref": "#/components/schemas/NumericId"}, {"type": "null"}],
                "description": "The member's own person in this household; linking gives the member a `self` manage grant on it and unlinking removes that grant"},
            "inventory_management": {"type": "boolean"},
            "location_management": {"type": "boolean"},
            "adult_review": {"type": "boolean"},
        },
    })
}
