//! Notification preference API shapes.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::domain::{Timestamp, Versioned, etag, present};
use crate::http::openapi;
use crate::http::replace::Whole;

/// A slot's time of day as answered: `HH:MM:SS`.
pub struct SlotTime;

impl JsonSchema for SlotTime {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "SlotTime".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Time of day of this slot (HH:MM:SS, household time zone); null when the slot is unused",
            "type": "string",
            "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]$",
        })
    }
}

/// A slot's time of day as sent: `HH:MM` or `HH:MM:SS` (read by
/// `slots::parse_time`).
pub struct SlotTimeInput;

impl JsonSchema for SlotTimeInput {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "SlotTimeInput".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "HH:MM or HH:MM:SS (answered as HH:MM:SS); null clears the slot",
            "type": "string",
            "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?$",
        })
    }
}

/// A person's notification preferences: every key always present, nothing
/// else. Before the first write the defaults are answered with `id`,
/// `portable_id` and `updated_at` null (and no ETag).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct NotificationPreference {
    /// null until the preferences are first saved
    #[schemars(with = "Option<openapi::NumericId>")]
    pub id: Option<i64>,
    /// null until the preferences are first saved
    #[schemars(with = "Option<openapi::PortableId>")]
    pub portable_id: Option<String>,
    #[schemars(with = "openapi::NumericId")]
    pub person_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub person_portable_id: String,
    /// Master switch: no notifications at all when false
    pub enabled: bool,
    /// Remind when a dose is due
    pub dose_due_enabled: bool,
    /// Tell when a dose was not recorded in time
    pub missed_dose_enabled: bool,
    /// Tell when a medicine runs low
    pub low_stock_enabled: bool,
    /// Name medicines in notification text (false keeps the text generic)
    pub private_text_enabled: bool,
    #[schemars(with = "Option<SlotTime>")]
    pub morning_time: Option<String>,
    #[schemars(with = "Option<SlotTime>")]
    pub afternoon_time: Option<String>,
    #[schemars(with = "Option<SlotTime>")]
    pub evening_time: Option<String>,
    #[schemars(with = "Option<SlotTime>")]
    pub night_time: Option<String>,
    /// null until the preferences are first saved
    pub updated_at: Option<Timestamp>,
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
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotificationPreferenceAttributes {
    /// Master switch: no notifications at all when false
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool")]
    pub enabled: Option<Option<bool>>,
    /// Remind when a dose is due
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool")]
    pub dose_due_enabled: Option<Option<bool>>,
    /// Tell when a dose was not recorded in time
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool")]
    pub missed_dose_enabled: Option<Option<bool>>,
    /// Tell when a medicine runs low
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool")]
    pub low_stock_enabled: Option<Option<bool>>,
    /// Name medicines in notification text (false keeps the text generic)
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "bool")]
    pub private_text_enabled: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<SlotTimeInput>")]
    pub morning_time: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<SlotTimeInput>")]
    pub afternoon_time: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<SlotTimeInput>")]
    pub evening_time: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<SlotTimeInput>")]
    pub night_time: Option<Option<String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "NotificationPreferenceUpdateRequest")]
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
