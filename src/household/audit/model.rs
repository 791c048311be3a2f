//! Audit event API shapes.

use serde::Serialize;
use serde_json::{Value, json};

/// One security or stock audit event.
#[derive(Debug, Clone, Serialize)]
pub struct AuditEvent {
    pub id: i64,
    pub event_type: String,
    pub actor_membership_id: Option<i64>,
    pub subject_type: String,
    pub subject_id: Option<i64>,
    pub metadata: Value,
    pub occurred_at: String,
}

pub fn audit_event_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "event_type", "actor_membership_id", "subject_type", "subject_id",
            "metadata", "occurred_at"],
        "properties": {
            "id": {"$ref": "#/components/schemas/NumericId"},
            "event_type": {"type": "string", "minLength": 1,
                "description": "e.g. app_token.created, membership.updated, person_access_grant.revoked, household.settings_updated"},
            "actor_membership_id": {"anyOf": [{"$ref": "#/components/schemas/NumericId"}, {"type": "null"}],
                "description": "The member who acted; null when the host operator did, from the command line"},
            "subject_type": {"type": "string", "minLength": 1},
            "subject_id": {"anyOf": [{"$ref": "#/components/schemas/NumericId"}, {"type": "null"}]},
            "metadata": {"type": "object", "description": "Event details; never secrets or clinical values"},
            "occurred_at": {"$ref": "#/components/schemas/Timestamp"},
        },
    })
}
