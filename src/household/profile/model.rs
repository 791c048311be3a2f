//! Profile API shapes.

use crate::domain::present;
use jiff::civil::Date;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The signed-in member's own profile: their linked person and the
/// preferences of their account. Every key is always present.
#[derive(Debug, Clone, Serialize)]
pub struct Profile {
    /// The person's numeric id, as a string (the spec's profile identifiers are strings).
    pub id: String,
    pub portable_id: String,
    pub name: String,
    /// The account's email.
    pub email: String,
    pub date_of_birth: Option<String>,
    pub age: Option<i64>,
    pub time_zone: Option<String>,
    pub gravatar_enabled: bool,
    pub mobile_shortcuts: Vec<String>,
    pub has_avatar: bool,
    /// The latest change to the person, the account preferences or the avatar.
    pub updated_at: String,
}

/// ProfileAttributes: absent fields stay as they are; only `time_zone` may be null.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileAttributes {
    #[serde(default, deserialize_with = "present")]
    pub date_of_birth: Option<Option<Date>>,
    #[serde(default, deserialize_with = "present")]
    pub time_zone: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub gravatar_enabled: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    pub mobile_shortcuts: Option<Option<Vec<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileBody {
    pub profile: ProfileAttributes,
}

/// An avatar as stored: the sniffed media type and the exact bytes.
#[derive(Debug, Clone)]
pub struct Avatar {
    pub content_type: String,
    pub data: Vec<u8>,
}

pub fn profile_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["id", "portable_id", "name", "email", "date_of_birth", "age", "time_zone",
            "gravatar_enabled", "mobile_shortcuts", "has_avatar", "updated_at"],
        "properties": {
            "id": {"type": "string", "pattern": "^[1-9][0-9]*$",
                "description": "The linked person's numeric id, as a string"},
            "portable_id": {"$ref": "#/components/schemas/PortableId"},
            "name": {"type": "string", "minLength": 1},
            "email": {"type": "string", "format": "email",
                "description": "The account's email; not changeable through the profile"},
            "date_of_birth": {"type": ["string", "null"], "format": "date"},
            "age": {"type": ["integer", "null"], "minimum": 0},
            "time_zone": {"type": ["string", "null"], "minLength": 1,
                "description": "IANA time zone name, or null to follow the household"},
            "gravatar_enabled": {"type": "boolean"},
            "mobile_shortcuts": {"type": "array", "maxItems": super::MAX_SHORTCUTS,
                "items": {"type": "string", "minLength": 1, "maxLength": super::MAX_SHORTCUT_CHARS}},
            "has_avatar": {"type": "boolean"},
            "updated_at": {"$ref": "#/components/schemas/Timestamp"},
        },
    })
}

pub fn profile_attributes_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "date_of_birth": {"type": "string", "format": "date",
                "description": "Not in the future; saved on the linked person"},
            "time_zone": {"anyOf": [{"$ref": "#/components/schemas/TimeZone"}, {"type": "null"}],
                "description": "IANA time zone name; null clears it"},
            "gravatar_enabled": {"type": "boolean"},
            "mobile_shortcuts": {"type": "array", "maxItems": super::MAX_SHORTCUTS,
                "uniqueItems": true,
                "items": {"type": "string", "minLength": 1, "maxLength": super::MAX_SHORTCUT_CHARS,
                    "pattern": "\\S", "description": "Trimmed before saving; not blank"}},
        },
    })
}

pub fn avatar_upload_schema() -> Value {
    let file = json!({"type": "string", "format": "binary",
        "description": "A PNG, JPEG or WebP image of at most 5 MiB, recognised by its content (not its file name or part Content-Type)"});
    json!({
        "type": "object",
        "additionalProperties": false,
        "description": "One file part named `avatar`",
        "required": ["avatar"],
        "properties": {"avatar": file},
    })
}
