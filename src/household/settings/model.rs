//! Household settings API shapes.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::domain::{Versioned, etag, present};
use crate::http::replace::Whole;

/// The household's administrable settings.
#[derive(Debug, Clone, Serialize)]
pub struct HouseholdSettings {
    pub id: i64,
    pub portable_id: String,
    pub name: String,
    pub time_zone: String,
    pub app_token_max_age_days: i64,
    pub created_at: String,
    pub updated_at: String,
    #[serde(skip)]
    pub lock_version: i64,
}

impl Versioned for HouseholdSettings {
    fn etag(&self) -> String {
        etag(&self.portable_id, self.lock_version)
    }
}

/// Settings attributes: absent fields stay as they are (PATCH) or are
/// refused (PUT, which carries them all); null is never accepted.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsAttributes {
    #[serde(default, deserialize_with = "present")]
    pub name: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub time_zone: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub app_token_max_age_days: Option<Option<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsBody {
    pub household: SettingsAttributes,
}

impl Whole for SettingsBody {
    const KEY: &'static str = "household";
    const FIELDS: &'static [&'static str] = &["name", "time_zone", "app_token_max_age_days"];
}

pub fn settings_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "portable_id", "name", "time_zone", "app_token_max_age_days",
            "created_at", "updated_at"],
        "properties": {
            "id": {"$ref": "#/components/schemas/NumericId"},
            "portable_id": {"$ref": "#/components/schemas/PortableId"},
            "name": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": "\\S"},
            "time_zone": {"type": "string", "minLength": 1, "description": "IANA time zone name"},
            "app_token_max_age_days": {"type": "integer", "minimum": 1, "maximum": 3650,
                "description": "Longest life, in days, of a new household app token"},
            "created_at": {"$ref": "#/components/schemas/Timestamp"},
            "updated_at": {"$ref": "#/components/schemas/Timestamp"},
        },
    })
}

/// Settings attributes; `required` lists what a replace needs.
pub fn settings_attributes_schema(required: &[&str]) -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": "\\S"},
            "time_zone": {"$ref": "#/components/schemas/TimeZone"},
            "app_token_max_age_days": {"type": "integer", "minimum": 1, "maximum": 3650,
                "description": "Longest life, in days, of a new household app token"},
        },
    })
}
