//! Person access grant API shapes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::auth::AccessLevel;
use crate::domain::vocabulary;
use crate::domain::{ResourceId, Timestamp};
use crate::http::openapi;

vocabulary!(
    /// Why a member holds a grant on a person.
    Relationship {
        Myself => "self",
        Parent => "parent",
        FamilyMember => "family_member",
        Carer => "carer",
        Professional => "professional",
    }
);

// A live grant: `membership_id` may act on `person_id` at `access_level`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "PersonAccessGrant", deny_unknown_fields)]
pub struct PersonAccessGrant {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::NumericId")]
    pub membership_id: i64,
    #[schemars(with = "openapi::NumericId")]
    pub person_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub person_portable_id: String,
    pub access_level: AccessLevel,
    pub relationship_type: Relationship,
    /// After this time the grant gives no access; it stays listed until deleted
    pub expires_at: Option<Timestamp>,
    #[schemars(with = "Option<openapi::NumericId>")]
    pub created_by_membership_id: Option<i64>,
    pub created_at: Timestamp,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct GrantAttributes {
    #[schemars(with = "openapi::NumericId")]
    pub membership_id: i64,
    // A numeric or portable person id. Optional here only so that a
    // missing one is reported under its own name by the rule (serde reads
    // a missing Option as None).
    #[schemars(with = "ResourceId", required)]
    pub person_id: Option<ResourceId>,
    /// view; record (takes and outcomes, not the care plan); manage
    pub access_level: AccessLevel,
    /// self only on the member's own linked person (it is given and removed with the link)
    pub relationship_type: Relationship,
    // Read as text so that the rule words each problem (in the past, past
    // the year 9999, not a date-time).
    /// Optional; must be in the future (and before the end of the year 9999)
    #[serde(default)]
    #[schemars(with = "Option<Timestamp>")]
    pub expires_at: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "PersonAccessGrantCreateRequest")]
pub struct GrantBody {
    pub person_access_grant: GrantAttributes,
}
