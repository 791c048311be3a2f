//! App token API shapes.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A token as listed: never its secret.
#[derive(Debug, Clone, Serialize)]
pub struct AppToken {
    pub id: i64,
    pub name: String,
    pub membership_id: i64,
    /// The public part of the token, to recognise it.
    pub token_prefix: String,
    pub created_by_membership_id: Option<i64>,
    pub created_at: String,
    pub expires_at: String,
    pub last_used_at: Option<String>,
}

/// Returned once, at creation.
#[derive(Debug, Clone, Serialize)]
pub struct CreatedAppToken {
    #[serde(flatten)]
    pub app_token: AppToken,
    pub token: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppTokenAttributes {
    pub name: String,
    pub max_age_days: Option<i64>,
    /// Only the caller's own membership is accepted.
    pub membership_id: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppTokenBody {
    pub api_app_token: AppTokenAttributes,
}

fn properties() -> Value {
    json!({
        "id": {"$ref": "#/components/schemas/NumericId"},
        "name": {"type": "string", "minLength": 1},
        "membership_id": {"$ref": "#/components/schemas/NumericId"},
        "token_prefix": {"type": "string", "description": "The public part of the token"},
        "created_by_membership_id": {"anyOf": [{"$ref": "#/components/schemas/NumericId"}, {"type": "null"}]},
        "created_at": {"$ref": "#/components/schemas/Timestamp"},
        "expires_at": {"$ref": "#/components/schemas/Timestamp"},
        "last_used_at": {"anyOf": [{"$ref": "#/components/schemas/Timestamp"}, {"type": "null"}]},
    })
}

const REQUIRED: [&str; 8] = [
    "id",
    "name",
    "membership_id",
    "token_prefix",
    "created_by_membership_id",
    "created_at",
    "expires_at",
    "last_used_at",
];

pub fn app_token_schema() -> Value {
    json!({"type": "object", "additionalProperties": false, "required": REQUIRED, "properties": properties()})
}

pub fn created_app_token_schema() -> Value {
    let mut props = properties();
    props["token"] =
        json!({"type": "string", "description": "The secret token; shown only in this response"});
    let mut required: Vec<&str> = REQUIRED.to_vec();
    required.push("token");
    json!({"type": "object", "additionalProperties": false, "required": required, "properties": props})
}

pub fn app_token_attributes_schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false, "required": ["name"],
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 100, "pattern": "\\S"},
            "max_age_days": {"type": ["integer", "null"], "minimum": 1, "maximum": 3650,
                "description": "Days until the token expires; at most the household's app_token_max_age_days (its default)"},
            "membership_id": {"anyOf": [{"$ref": "#/components/schemas/NumericId"}, {"type": "null"}],
                "description": "The member the token acts as: only the caller's own membership may be named (403 otherwise); absent or null means the caller's own"},
        },
    })
}
