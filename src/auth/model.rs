//! Account-level shapes.

use serde::Serialize;

/// A household the credential reaches, with the member's place in it.
#[derive(Debug, Serialize)]
pub struct HouseholdSummary {
    pub id: i64,
    pub portable_id: String,
    pub name: String,
    pub time_zone: String,
    pub role: String,
    pub membership_id: i64,
    pub person_id: Option<i64>,
}
