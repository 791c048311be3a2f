//! Audit event API shapes.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::http::openapi;

/// One security or stock audit event.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct AuditEvent {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    /// e.g. app_token.created, membership.updated, person_access_grant.revoked, household.settings_updated
    #[schemars(length(min = 1))]
    pub event_type: String,
    /// The member who acted; null when the host operator did, from the command line
    #[schemars(with = "Option<openapi::NumericId>")]
    pub actor_membership_id: Option<i64>,
    #[schemars(length(min = 1))]
    pub subject_type: String,
    #[schemars(with = "Option<openapi::NumericId>")]
    pub subject_id: Option<i64>,
    /// Event details; never secrets or clinical values
    #[schemars(with = "Map<String, Value>")]
    pub metadata: Value,
    pub occurred_at: crate::domain::Timestamp,
}
