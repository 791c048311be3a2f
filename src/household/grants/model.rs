//! Person access grant API shapes.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::Relationship;
use crate::auth::AccessLevel;
use crate::domain::{ResourceId, resource_ref_schema};

/// A live grant: `membership_id` may act on `person_id` at `access_level`.
#[derive(Debug, Clone, Serialize)]
pub struct PersonAccessGrant {
    pub id: i64,
    pub membership_id: i64,
    pub person_id: i64,
    pub person_portable_id: String,
    pub access_level: AccessLevel,
    pub relationship_type: Relationship,
    pub expires_at: Option<String>,
    pub created_by_membership_id: Option<i64>,
    pub created_at: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantAttributes {
    pub membership_id: i64,
    /// A numeric or portable person id. Optional here only so that a
    /// missing one is reported under its own name by the rule.
    #[serde(default)]
    pub person_id: Option<ResourceId>,
    pub access_level: AccessLevel,
    pub relationship_type: Relationship,
    #[serde(default)]
    pub expires_at: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantBody {
    pub person_access_grant: GrantAttributes,
}

const ACCESS_LEVELS: [&str; 3] = ["view", "record", "manage"];
const RELATIONSHIPS: [&str; 5] = ["self", "parent", "family_member", "carer", "professional"];

pub fn grant_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "membership_id", "person_id", "person_portable_id", "access_level",
            "relationship_type", "expires_at", "created_by_membership_id", "created_at"],
        "properties": {
            "id": {"$ref": "#/components/schemas/NumericId"},
            "membership_id": {"$ref": "#/components/schemas/NumericId"},
            "person_id": {"$ref": "#/components/schemas/NumericId"},
            "person_portable_id": {"$ref": "#/components/schemas/PortableId"},
            "access_level": {"type": "string", "enum": ACCESS_LEVELS},
            "relationship_type": {"type": "string", "enum": RELATIONSHIPS},
            "expires_at": {"anyOf": [{"$ref": "#/components/schemas/Timestamp"}, {"type": "null"}],
                "description": "After this time the grant gives no access; it stays listed until deleted"},
            "created_by_membership_id": {"anyOf": [{"$ref": "#/components/schemas/NumericId"}, {"type": "null"}]},
            "created_at": {"$ref": "#/components/schemas/Timestamp"},
        },
    })
}

pub fn grant_attributes_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["membership_id", "person_id", "access_level", "relationship_type"],
        "properties": {
            "membership_id": {"$ref": "#/components/schemas/NumericId"},
            "person_id": resource_ref_schema(),
            "access_level": {"type": "string", "enum": ACCESS_LEVELS,
                "description": "view; record (takes and outcomes, not the care plan); manage"},
            "relationship_type": {"type": "string", "enum": RELATIONSHIPS,
                "description": "self only on the member's own linked person (it is given and removed with the link)"},
            "expires_at": {"anyOf": [{"$ref": "#/components/schemas/Timestamp"}, {"type": "null"}],
                "description": "Optional; must be in the future (and before the end of the year 9999)"},
        },
    })
}
