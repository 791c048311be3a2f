//! Health event API shapes.

use jiff::civil::Date;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::vocabulary;
use crate::domain::{Bounded, Name, ResourceId, Text, Timestamp, Versioned, etag, present};
use crate::http::openapi;
use crate::http::replace::Whole;

vocabulary!(
    /// What kind of health event this is: a closed list, so reports can
    /// group events.
    EventKind {
        Illness => "illness",
        SuspectedSideEffect => "suspected_side_effect",
    }
);

vocabulary!(
    /// How bad it was; null when not recorded.
    Severity {
        Mild => "mild",
        Moderate => "moderate",
        Severe => "severe",
    }
);

/// A health event's title: not blank, at most 200 characters.
pub type Title = Name<200>;
/// A health event's notes: at most 4000 characters.
pub type Notes = Text<4000>;
/// How many medications one event may name.
pub const MAX_MEDICATIONS: usize = 100;
/// The medications an event names.
pub type MedicationIds = Bounded<ResourceId, 0, MAX_MEDICATIONS>;

/// A health event as stored, before its medication links are added.
#[derive(Debug, Clone)]
pub struct HealthEventRow {
    pub id: i64,
    pub portable_id: String,
    pub person_id: i64,
    pub person_portable_id: String,
    pub event_kind: EventKind,
    pub severity: Option<Severity>,
    pub title: String,
    pub notes: Option<String>,
    /// ISO dates ('YYYY-MM-DD').
    pub started_on: String,
    pub ended_on: Option<String>,
    pub lock_version: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

// The API shape: every key always present, nothing else.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct HealthEvent {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    #[schemars(with = "openapi::NumericId")]
    pub person_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub person_portable_id: String,
    pub event_kind: EventKind,
    pub severity: Option<Severity>,
    #[schemars(with = "Title")]
    pub title: String,
    #[schemars(with = "Option<Notes>")]
    pub notes: Option<String>,
    #[schemars(with = "openapi::Date")]
    pub started_on: String,
    #[schemars(with = "Option<openapi::Date>")]
    pub ended_on: Option<String>,
    #[schemars(with = "Vec<openapi::NumericId>")]
    pub medication_ids: Vec<i64>,
    #[schemars(with = "Vec<openapi::PortableId>")]
    pub medication_portable_ids: Vec<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    #[serde(skip)]
    pub lock_version: i64,
}

impl Versioned for HealthEvent {
    fn etag(&self) -> String {
        etag(&self.portable_id, self.lock_version)
    }
}

/// HealthEventAttributes: absent fields stay as they are (PATCH) or take
/// their defaults (create, PUT); nullable fields may be set to null.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HealthEventAttributes {
    /// The person the event happened to (numeric or portable id); it cannot change after creation
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "ResourceId")]
    pub person_id: Option<Option<ResourceId>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "EventKind")]
    pub event_kind: Option<Option<EventKind>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<Severity>")]
    pub severity: Option<Option<Severity>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Title")]
    pub title: Option<Option<Title>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<Notes>")]
    pub notes: Option<Option<Notes>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "openapi::Date")]
    pub started_on: Option<Option<Date>>,
    /// On or after started_on; null while the event is ongoing
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<openapi::Date>")]
    pub ended_on: Option<Option<Date>>,
    /// Medications of this household the event names (numeric or portable ids); duplicates are ignored
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "MedicationIds")]
    pub medication_ids: Option<Option<MedicationIds>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "HealthEventUpdateRequest")]
pub struct HealthEventBody {
    pub health_event: HealthEventAttributes,
}

/// A replace carries every writable attribute.
impl Whole for HealthEventBody {
    const KEY: &'static str = "health_event";
    const FIELDS: &'static [&'static str] = &[
        "person_id",
        "event_kind",
        "severity",
        "title",
        "notes",
        "started_on",
        "ended_on",
        "medication_ids",
    ];
}
