//! Location API shapes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::{Name, Text};
use crate::domain::{ResourceId, Timestamp, Versioned, etag, present};
use crate::http::openapi;
use crate::http::replace::Whole;

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
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
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
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct LocationMembership {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::NumericId")]
    pub location_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub location_portable_id: String,
    #[schemars(with = "openapi::NumericId")]
    pub person_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub person_portable_id: String,
    pub created_at: Timestamp,
}

/// The person to assign, by numeric id (number or numeric string) or
/// portable id.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct LocationMembershipAttributes {
    pub person_id: ResourceId,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "LocationMembershipCreateRequest")]
pub struct LocationMembershipBody {
    pub location_membership: LocationMembershipAttributes,
}
