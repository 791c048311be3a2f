//! A household's own record: what the `households` row holds.

use crate::domain::Timestamp;

/// Longest life, in days, a household may allow its app tokens.
pub const MAX_TOKEN_AGE_DAYS: i64 = 3650;

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
