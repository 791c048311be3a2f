//! Dose occurrence (expected dose) API shapes.

use jiff::civil::Date;
use schemars::JsonSchema;
use serde::Serialize;

use crate::decimal::{Dec, PositiveDecimal};
use crate::domain::vocabulary;
use crate::domain::{Timestamp, Versioned, etag};
use crate::http::openapi;
use crate::medicine::vocab::DoseUnit;

vocabulary!(
    /// Outcome values of an expected dose (`taken` only through
    /// a medication take that names the occurrence).
    Outcome {
        Open => "open",
        NotTaken => "not_taken",
        Taken => "taken",
    }
);
/// Warnings an expected dose can carry.
pub const MAX_DAILY_DOSES_EXCEEDED: &str = "max_daily_doses exceeded";
pub const TOO_SOON: &str = "taken earlier than min_hours_between_doses";
pub const OTHER_SOURCE_TOO_SOON: &str =
    "taken within min_hours_between_doses of a dose of the same medication under another source";

/// One expected dose as sent.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct DoseOccurrence {
    /// Opaque key signed by this server naming the source, window and position; send it with a medication take to link the take to this dose. Not portable between installations.
    #[schemars(length(min = 1))]
    pub occurrence_key: String,
    #[schemars(with = "crate::care::pause_periods::model::SourceType")]
    pub source_type: &'static str,
    #[schemars(with = "openapi::NumericId")]
    pub source_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub source_portable_id: String,
    #[schemars(with = "openapi::NumericId")]
    pub person_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub person_portable_id: String,
    #[schemars(with = "openapi::NumericId")]
    pub medication_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub medication_portable_id: String,
    pub medication_display_name: String,
    #[schemars(with = "PositiveDecimal")]
    pub dose_amount: Dec,
    pub dose_unit: DoseUnit,
    #[schemars(with = "openapi::Date")]
    #[serde(serialize_with = "crate::domain::timestamp::serialize_date")]
    pub window_starts_on: Date,
    #[schemars(with = "openapi::Date")]
    #[serde(serialize_with = "crate::domain::timestamp::serialize_date")]
    pub window_ends_on: Date,
    /// 1-based position of the dose in its window, in time order
    #[schemars(range(min = 1))]
    pub position: u32,
    /// When the dose is due (UTC), from the schedule's local time in the household time zone; null for routine person medications, which have no set time
    pub scheduled_at: Option<Timestamp>,
    /// taken when a medication take names this occurrence, else the saved outcome (not_taken), else open
    pub outcome: Outcome,
    pub reason: Option<String>,
    pub note: Option<String>,
    #[schemars(with = "Option<openapi::NumericId>")]
    pub medication_take_id: Option<i64>,
    #[schemars(with = "Option<openapi::PortableId>")]
    pub medication_take_portable_id: Option<String>,
    /// Safety notes about the takes of this dose's source in its dose-cycle window (doses of the same medication for the person under other sources count too): "max_daily_doses exceeded", "taken earlier than min_hours_between_doses", "taken within min_hours_between_doses of a dose of the same medication under another source"
    pub warnings: Vec<String>,
}

/// `listDoseOccurrences`'s `meta`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields, inline)]
pub struct DayMeta {
    #[schemars(with = "openapi::Date")]
    pub date: Date,
    /// The household's IANA time zone the day is taken in
    pub time_zone: String,
}

/// `listDoseOccurrences`'s body: one day's expected doses (not paged).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "DoseOccurrenceCollection")]
pub struct DoseOccurrenceDay {
    pub data: Vec<DoseOccurrence>,
    pub meta: DayMeta,
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
    pub scheduled_at: Option<Timestamp>,
    pub outcome: String,
    pub reason: Option<String>,
    pub note: Option<String>,
    pub resolved_at: Option<Timestamp>,
    pub medication_take_id: Option<i64>,
    pub lock_version: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Versioned for DoseOutcome {
    fn etag(&self) -> String {
        etag(&self.portable_id, self.lock_version)
    }
}
