//! A household's own record: what the `households` row holds.

use crate::domain::Timestamp;

/// A household as stored; its settings resource (`crate::household_settings`)
/// adds what other areas keep about it.
#[derive(Debug, Clone)]
pub struct Household {
    pub id: i64,
    pub portable_id: String,
    pub name: String,
    /// IANA time zone name, as stored.
    pub time_zone: String,
    pub app_token_max_age_days: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub lock_version: i64,
}
