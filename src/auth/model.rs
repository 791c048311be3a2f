//! Account-level shapes.

use schemars::JsonSchema;
use serde::Serialize;

use super::Role;
use crate::http::openapi;

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
