//! Profile API shapes.

use crate::domain::{Timestamp, present};
use crate::http::openapi;
use jiff::civil::Date;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// At most this many mobile shortcuts, each of at most this many characters.
pub const MAX_SHORTCUTS: usize = 20;
pub const MAX_SHORTCUT_CHARS: usize = 50;

// The signed-in member's own profile: their linked person and the
// preferences of their account. Every key is always present.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Profile {
    /// The linked person's numeric id, as a string
    #[schemars(pattern("^[1-9][0-9]*$"))]
    pub id: String,
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    #[schemars(length(min = 1))]
    pub name: String,
    /// The account's email; not changeable through the profile
    #[schemars(extend("format" = "email"))]
    pub email: String,
    #[schemars(with = "Option<openapi::Date>")]
    pub date_of_birth: Option<String>,
    #[schemars(range(min = 0))]
    pub age: Option<i64>,
    /// IANA time zone name, or null to follow the household
    #[schemars(length(min = 1))]
    pub time_zone: Option<String>,
    pub gravatar_enabled: bool,
    #[schemars(length(max = MAX_SHORTCUTS), inner(length(min = 1, max = MAX_SHORTCUT_CHARS)))]
    pub mobile_shortcuts: Vec<String>,
    pub has_avatar: bool,
    // The latest change to the person, the account preferences or the avatar.
    pub updated_at: Timestamp,
}

/// Absent fields stay as they are; only `time_zone` may be null.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct ProfileAttributes {
    /// Not in the future; saved on the linked person
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "openapi::Date")]
    pub date_of_birth: Option<Option<Date>>,
    /// IANA time zone name; null clears it
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<openapi::TimeZone>")]
    pub time_zone: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool")]
    pub gravatar_enabled: Option<Option<bool>>,
    // Entries are trimmed before they are counted, compared and saved, so
    // the rule checks them.
    /// Entries are trimmed before saving and must not be blank
    #[serde(default, deserialize_with = "present")]
    #[schemars(
        with = "Vec<String>",
        length(max = MAX_SHORTCUTS),
        extend("uniqueItems" = true),
        inner(length(min = 1, max = MAX_SHORTCUT_CHARS), pattern("\\S"))
    )]
    pub mobile_shortcuts: Option<Option<Vec<String>>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ProfileUpdateRequest")]
pub struct ProfileBody {
    pub profile: ProfileAttributes,
}

/// An avatar as stored: the sniffed media type and the exact bytes.
#[derive(Debug, Clone)]
pub struct Avatar {
    pub content_type: String,
    pub data: Vec<u8>,
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
