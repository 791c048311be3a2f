//! Dose occurrence (expected dose) API shapes.

use jiff::civil::Date;
use serde::Serialize;
use serde_json::{Value, json};

use crate::decimal::{self, Dec};
use crate::domain::{Versioned, etag};
use crate::http::openapi::nullable;
use crate::medicine::vocab::DoseUnit;

/// Outcome values of an expected dose (DESIGN.md: `taken` only through a
/// medication take that names the occurrence).
pub const OUTCOMES: &[&str] = &["open", "not_taken", "taken"];
/// The kinds of source an expected dose comes from.
pub const SOURCE_TYPES: &[&str] = &["schedule", "person_medication"];
/// Warnings an expected dose can carry.
pub const MAX_DAILY_DOSES_EXCEEDED: &str = "max_daily_doses exceeded";
pub const TOO_SOON: &str = "taken earlier than min_hours_between_doses";
pub const OTHER_SOURCE_TOO_SOON: &str =
    "taken within min_hours_between_doses of a dose of the same medication under another source";

/// One expected dose as sent.
#[derive(Debug, Clone, Serialize)]
pub struct DoseOccurrence {
    /// Signed by this server: names source, window and position.
    pub occurrence_key: String,
    pub source_type: &'static str,
    pub source_id: i64,
    pub source_portable_id: String,
    pub person_id: i64,
    pub person_portable_id: String,
    pub medication_id: i64,
    pub medication_portable_id: String,
    pub medication_display_name: String,
    pub dose_amount: Dec,
    pub dose_unit: DoseUnit,
    pub window_starts_on: Date,
    pub window_ends_on: Date,
    /// 1-based, in time order within the window.
    pub position: u32,
    /// UTC; null for routine assignments (they have no set time).
    pub scheduled_at: Option<String>,
    pub outcome: String,
    pub reason: Option<String>,
    pub note: Option<String>,
    pub medication_take_id: Option<i64>,
    pub medication_take_portable_id: Option<String>,
    pub warnings: Vec<String>,
}

/// `listDoseOccurrences`'s `meta`.
#[derive(Debug, Clone, Serialize)]
pub struct DayMeta {
    pub date: Date,
    pub time_zone: String,
}

pub fn dose_occurrence_schema() -> Value {
    let props = json!({
        "occurrence_key": {"type": "string", "minLength": 1,
            "description": "Opaque key signed by this server naming the source, window and position; send it with a medication take to link the take to this dose. Not portable between installations."},
        "source_type": {"type": "string", "enum": SOURCE_TYPES},
        "source_id": {"$ref": "#/components/schemas/NumericId"},
        "source_portable_id": {"$ref": "#/components/schemas/PortableId"},
        "person_id": {"$ref": "#/components/schemas/NumericId"},
        "person_portable_id": {"$ref": "#/components/schemas/PortableId"},
        "medication_id": {"$ref": "#/components/schemas/NumericId"},
        "medication_portable_id": {"$ref": "#/components/schemas/PortableId"},
        "medication_display_name": {"type": "string"},
        "dose_amount": decimal::positive_schema(),
        "dose_unit": DoseUnit::schema(),
        "window_starts_on": {"$ref": "#/components/schemas/Date"},
        "window_ends_on": {"$ref": "#/components/schemas/Date"},
        "position": {"type": "integer", "minimum": 1,
            "description": "1-based position of the dose in its window, in time order"},
        "scheduled_at": {
            "anyOf": [{"$ref": "#/components/schemas/Timestamp"}, {"type": "null"}],
            "description": "When the dose is due (UTC), from the schedule's local time in the household time zone; null for routine person medications, which have no set time",
        },
        "outcome": {"type": "string", "enum": OUTCOMES,
            "description": "taken when a medication take names this occurrence, else the saved outcome (not_taken), else open"},
        "reason": nullable(json!({"type": "string"})),
        "note": nullable(json!({"type": "string"})),
        "medication_take_id": nullable(json!({"$ref": "#/components/schemas/NumericId"})),
        "medication_take_portable_id": nullable(json!({"$ref": "#/components/schemas/PortableId"})),
        "warnings": {"type": "array", "items": {"type": "string"},
            "description": "Safety notes about the takes of this dose's source in its dose-cycle window (doses of the same medication for the person under other sources count too): \"max_daily_doses exceeded\", \"taken earlier than min_hours_between_doses\", \"taken within min_hours_between_doses of a dose of the same medication under another source\""},
    });
    let required: Vec<&String> = props
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    json!({"type": "object", "additionalProperties": false, "required": required,
        "properties": props})
}

pub fn collection_schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false, "required": ["data", "meta"],
        "properties": {
            "data": {"type": "array", "items": {"$ref": "#/components/schemas/DoseOccurrence"}},
            "meta": {
                "type": "object", "additionalProperties": false,
                "required": ["date", "time_zone"],
                "properties": {
                    "date": {"$ref": "#/components/schemas/Date"},
                    "time_zone": {"type": "string", "description": "The household's IANA time zone the day is taken in"},
                },
            },
        },
    })
}

/// A saved outcome row.
#[derive(Debug, Clone, Serialize)]
pub struct DoseOutcome {
    pub id: i64,
    pub portable_id: String,
    pub person_id: i64,
    pub source_type: String,
    pub source_id: i64,
    pub window_starts_on: String,
    pub window_ends_on: String,
    pub position: i64,
    pub scheduled_at: Option<String>,
    pub outcome: String,
    pub reason: Option<String>,
    pub note: Option<String>,
    pub resolved_at: Option<String>,
    pub medication_take_id: Option<i64>,
    pub lock_version: i64,
    pub created_at: String,
    pub updated_at: String,
}

impl Versioned for DoseOutcome {
    fn etag(&self) -> String {
        etag(&self.portable_id, self.lock_version)
    }
}
