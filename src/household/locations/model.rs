//! Location API shapes.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::domain::{ResourceId, Versioned, etag, present, resource_ref_schema};
use crate::http::replace::Whole;

/// A place where medicines are kept: every key always present, nothing else.
#[derive(Debug, Clone, Serialize)]
pub struct Location {
    pub id: i64,
    pub portable_id: String,
    pub name: String,
    pub description: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    #[serde(skip)]
    pub lock_version: i64,
}

impl Versioned for Location {
    fn etag(&self) -> String {
        etag(&self.portable_id, self.lock_version)
    }
}

/// LocationAttributes: absent fields stay as they are (PATCH) or take their
/// defaults (PUT); `description` may be set to null.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocationAttributes {
    #[serde(default, deserialize_with = "present")]
    pub name: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub description: Option<Option<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocationBody {
    pub location: LocationAttributes,
}

/// A replace carries every writable attribute.
impl Whole for LocationBody {
    const KEY: &'static str = "location";
    const FIELDS: &'static [&'static str] = &["name", "description"];
}

pub fn location_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "portable_id", "name", "description", "created_at", "updated_at"],
        "properties": {
            "id": {"$ref": "#/components/schemas/NumericId"},
            "portable_id": {"$ref": "#/components/schemas/PortableId"},
            "name": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": "\\S"},
            "description": {"type": ["string", "null"], "maxLength": 2000},
            "created_at": {"$ref": "#/components/schemas/Timestamp"},
            "updated_at": {"$ref": "#/components/schemas/Timestamp"},
        },
    })
}

/// LocationAttributes; `required` lists what the request needs.
pub fn location_attributes_schema(required: &[&str]) -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": "\\S"},
            "description": {"type": ["string", "null"], "maxLength": 2000},
        },
    })
}

/// A person assigned to a location (`location_ids` of the person).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LocationMembership {
    pub id: i64,
    pub location_id: i64,
    pub location_portable_id: String,
    pub person_id: i64,
    pub person_portable_id: String,
    pub created_at: String,
}

/// LocationMembershipAttributes: the person to assign, by numeric id
/// (number or numeric string) or portable id.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocationMembershipAttributes {
    pub person_id: ResourceId,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocationMembershipBody {
    pub location_membership: LocationMembershipAttributes,
}

pub fn location_membership_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": [
            "id", "location_id", "location_portable_id", "person_id", "person_portable_id",
            "created_at",
        ],
        "properties": {
            "id": {"$ref": "#/components/schemas/NumericId"},
            "location_id": {"$ref": "#/components/schemas/NumericId"},
            "location_portable_id": {"$ref": "#/components/schemas/PortableId"},
            "person_id": {"$ref": "#/components/schemas/NumericId"},
            "person_portable_id": {"$ref": "#/components/schemas/PortableId"},
            "created_at": {"$ref": "#/components/schemas/Timestamp"},
        },
    })
}

pub fn location_membership_attributes_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["person_id"],
        "properties": {
            "person_id": resource_ref_schema(),
        },
    })
}
