//! Report shapes: the health history and the medication reviews of one
//! person, as JSON (these types) and as PDF (rendered from them).

use schemars::JsonSchema;
use serde::Serialize;

use crate::domain::Timestamp;
use crate::http::openapi;
use crate::reports::review_prompts::model::{MedicationReviewPrompt, ReviewStatus};

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "ReportHousehold", deny_unknown_fields)]
pub struct ReportHousehold {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    pub name: String,
    /// The IANA time zone every local time in the report is given in
    pub time_zone: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "ReportPerson", deny_unknown_fields)]
pub struct ReportPerson {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    pub name: String,
    #[schemars(with = "Option<openapi::Date>")]
    pub date_of_birth: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "ReportPeriod", deny_unknown_fields)]
pub struct ReportPeriod {
    #[schemars(with = "openapi::Date")]
    pub start_date: String,
    #[schemars(with = "openapi::Date")]
    pub end_date: String,
}

/// A current medicine: a live schedule or direct assignment.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "ReportMedicine", deny_unknown_fields)]
pub struct ReportMedicine {
    /// schedule or person_medication
    pub source_type: String,
    #[schemars(with = "openapi::PortableId")]
    pub source_portable_id: String,
    #[schemars(with = "openapi::NumericId")]
    pub medication_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub medication_portable_id: String,
    pub medication_name: String,
    /// Exact decimal
    pub dose_amount: String,
    pub dose_unit: String,
    /// The schedule's type (null for a direct assignment)
    pub schedule_type: Option<String>,
    /// routine or as_needed for a direct assignment (null for a schedule)
    pub administration_kind: Option<String>,
    /// When it is taken, in words ("daily at 08:00, 20:00")
    pub timing: String,
    #[schemars(with = "Option<openapi::Date>")]
    pub start_date: Option<String>,
    #[schemars(with = "Option<openapi::Date>")]
    pub end_date: Option<String>,
    /// False while paused
    pub active: bool,
}

/// A pause of a medicine that overlaps the period.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "ReportPause", deny_unknown_fields)]
pub struct ReportPause {
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    pub source_type: String,
    pub medication_name: String,
    pub reason: String,
    pub note: Option<String>,
    /// Null when a legacy pause has an unknown start
    pub started_at: Option<Timestamp>,
    pub ended_at: Option<Timestamp>,
}

/// A dose actually given in the period.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "ReportTake", deny_unknown_fields)]
pub struct ReportTake {
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    pub medication_name: String,
    pub taken_at: Timestamp,
    /// taken_at in the household time zone, "YYYY-MM-DD HH:MM"
    pub taken_at_local: String,
    /// Exact decimal
    pub dose_amount: String,
    pub dose_unit: String,
    pub source_type: String,
}

/// A health event that overlaps the period.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "ReportHealthEvent", deny_unknown_fields)]
pub struct ReportHealthEvent {
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    pub event_kind: String,
    pub severity: Option<String>,
    pub title: String,
    pub notes: Option<String>,
    #[schemars(with = "openapi::Date")]
    pub started_on: String,
    #[schemars(with = "Option<openapi::Date>")]
    pub ended_on: Option<String>,
}

/// `GET .../reports/health_history`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct HealthHistoryReport {
    pub household: ReportHousehold,
    pub person: ReportPerson,
    pub period: ReportPeriod,
    pub generated_at: Timestamp,
    pub include_medication_takes: bool,
    pub medicines: Vec<ReportMedicine>,
    pub pauses: Vec<ReportPause>,
    /// Every dose given in the period when include_medication_takes=1, else null
    pub medication_takes: Option<Vec<ReportTake>>,
    pub health_events: Vec<ReportHealthEvent>,
    /// The person's review prompts when the caller holds the adult review permission, else null
    pub reviews: Option<Vec<MedicationReviewPrompt>>,
}

/// `GET .../reports/medication_reviews`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MedicationReviewsReport {
    pub household: ReportHousehold,
    pub person: ReportPerson,
    pub generated_at: Timestamp,
    /// The status filter the report was made with, if any
    pub review_status: Option<ReviewStatus>,
    pub medicines: Vec<ReportMedicine>,
    pub reviews: Vec<MedicationReviewPrompt>,
}
