//! Location API shapes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::http::extract::{ResourceId, present, resource_ref_schema};
use crate::http::openapi;
use crate::http::replace::Whole;
use crate::http::respond::{Versioned, etag};
use crate::text::{Name, Text};

/// A location's name: not blank, at most 200 characters.
pub type LocationName = Name<200>;
/// A location's description: at most 2000 characters.
pub type LocationDescription = Text<2000>;

// A place where medicines are kept: every key always present, nothing else.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Location {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    #[schemars(with = "LocationName")]
    pub name: String,
    #[schemars(with = "Option<LocationDescription>")]
    pub description: Option<String>,
    #[schemars(with = "openapi::Timestamp")]
    pub created_at: String,
    #[schemars(with = "openapi::Timestamp")]
    pub updated_at: String,
    #[serde(skip)]
    pub lock_version: i64,
}

impl Versioned for Location {
    fn etag(&self) -> String {
        etag(&self.portable_id, self.lock_version)
    }
}

/// Absent fields stay as they are (PATCH) or take their defaults (PUT);
/// `description` may be set to null.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LocationAttributes {
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "LocationName")]
    pub name: Option<Option<LocationName>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<LocationDescription>")]
    pub description: Option<Option<LocationDescription>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "LocationUpdateRequest")]
pub struct LocationBody {
    pub location: LocationAttributes,
}

/// A replace carries every writable attribute.
impl Whole for LocationBody {
    const KEY: &'static str = "location";
    const FIELDS: &'static [&'static str] = &["name", "description"];
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
