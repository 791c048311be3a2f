//! Notification preference API shapes.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::domain::{Versioned, etag, present};
use crate::http::replace::Whole;

/// A person's notification preferences: every key always present, nothing
/// else. Before the first write the defaults are answered with `id`,
/// `portable_id` and `updated_at` null (and no ETag).
#[derive(Debug, Clone, Serialize)]
pub struct NotificationPreference {
    pub id: Option<i64>,
    pub portable_id: Option<String>,
    pub person_id: i64,
    pub person_portable_id: String,
    pub enabled: bool,
    pub dose_due_enabled: bool,
    pub missed_dose_enabled: bool,
    pub low_stock_enabled: bool,
    pub private_text_enabled: bool,
    pub morning_time: Option<String>,
    pub afternoon_time: Option<String>,
    pub evening_time: Option<String>,
    pub night_time: Option<String>,
    pub updated_at: Option<String>,
    #[serde(skip)]
    pub lock_version: i64,
}

impl NotificationPreference {
    /// Whether a row stands behind this (so it has a version and an ETag).
    pub fn persisted(&self) -> bool {
        self.portable_id.is_some()
    }
}

impl Versioned for NotificationPreference {
    fn etag(&self) -> String {
        etag(self.portable_id.as_deref().unwrap_or(""), self.lock_version)
    }
}

/// NotificationPreferenceAttributes: absent fields stay as they are (PATCH)
/// or, for times, become null (PUT); a time may be set to null.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotificationPreferenceAttributes {
    #[serde(default, deserialize_with = "present")]
    pub enabled: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    pub dose_due_enabled: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    pub missed_dose_enabled: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    pub low_stock_enabled: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    pub private_text_enabled: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    pub morning_time: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub afternoon_time: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub evening_time: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub night_time: Option<Option<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotificationPreferenceBody {
    pub notification_preference: NotificationPreferenceAttributes,
}

/// A replace carries every writable attribute.
impl Whole for NotificationPreferenceBody {
    const KEY: &'static str = "notification_preference";
    const FIELDS: &'static [&'static str] = &[
        "enabled",
        "dose_due_enabled",
        "missed_dose_enabled",
        "low_stock_enabled",
        "private_text_enabled",
        "morning_time",
        "afternoon_time",
        "evening_time",
        "night_time",
    ];
}

pub const FLAGS: [&str; 5] = [
    "enabled",
    "dose_due_enabled",
    "missed_dose_enabled",
    "low_stock_enabled",
    "private_text_enabled",
];

pub const TIMES: [&str; 4] = [
    "morning_time",
    "afternoon_time",
    "evening_time",
    "night_time",
];

fn flag_descriptions() -> [(&'static str, &'static str); 5] {
    [
        (
            "enabled",
            "Master switch: no notifications at all when false",
        ),
        ("dose_due_enabled", "Remind when a dose is due"),
        (
            "missed_dose_enabled",
            "Tell when a dose was not recorded in time",
        ),
        ("low_stock_enabled", "Tell when a medicine runs low"),
        (
            "private_text_enabled",
            "Name medicines in notification text (false keeps the text generic)",
        ),
    ]
}

pub fn notification_preference_schema() -> Value {
    let mut props = serde_json::Map::new();
    let nullable_id = |name: &str, description: &str| {
        json!({"description": description,
            "anyOf": [{"$ref": format!("#/components/schemas/{name}")}, {"type": "null"}]})
    };
    props.insert(
        "id".into(),
        nullable_id("NumericId", "null until the preferences are first saved"),
    );
    props.insert(
        "portable_id".into(),
        nullable_id("PortableId", "null until the preferences are first saved"),
    );
    props.insert(
        "person_id".into(),
        json!({"$ref": "#/components/schemas/NumericId"}),
    );
    props.insert(
        "person_portable_id".into(),
        json!({"$ref": "#/components/schemas/PortableId"}),
    );
    for (flag, description) in flag_descriptions() {
        props.insert(
            flag.into(),
            json!({"type": "boolean", "description": description}),
        );
    }
    for time in TIMES {
        props.insert(
            time.into(),
            json!({
                "description": "Time of day of this slot (HH:MM:SS, household time zone); null when the slot is unused",
                "type": ["string", "null"],
                "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]$",
            }),
        );
    }
    props.insert(
        "updated_at".into(),
        nullable_id("Timestamp", "null until the preferences are first saved"),
    );
    let required: Vec<String> = props.keys().cloned().collect();
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": props,
    })
}

/// NotificationPreferenceAttributes; `required` lists what the request needs.
pub fn notification_preference_attributes_schema(required: &[&str]) -> Value {
    let mut props = serde_json::Map::new();
    for (flag, description) in flag_descriptions() {
        props.insert(
            flag.into(),
            json!({"type": "boolean", "description": description}),
        );
    }
    for time in TIMES {
        props.insert(
            time.into(),
            json!({
                "description": "HH:MM or HH:MM:SS (answered as HH:MM:SS); null clears the slot",
                "type": ["string", "null"],
                "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?$",
            }),
        );
    }
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": required,
        "properties": props,
    })
}
