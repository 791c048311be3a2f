//! MCP tool inputs and outputs. Inputs reuse the REST attribute types
//! where one exists, so a tool accepts exactly what the API accepts;
//! outputs are the API's own record shapes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::care::dose_occurrences::model::DoseOccurrenceDay as ExpectedDoses;
use crate::care::health_events::model::HealthEvent;
use crate::care::medication_takes::model::MedicationTake;
use crate::care::pause_periods::model::{PausePeriod, SourceType};
use crate::domain::{PageMeta, ResourceId};
use crate::http::openapi;
use crate::medicine::medications::model::Medication;
use crate::medicine::stock_removals::model::{NewStockRemoval, StockRemoval};
use crate::reports::review_prompts::model::{MedicationReviewPrompt, Priority, ReviewStatus};

/// No arguments.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoInput {}

/// Which page of a list.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PageInput {
    /// Page number, from 1 (default 1)
    #[schemars(range(min = 1))]
    pub page: Option<u32>,
    /// Records per page, 1 to 100 (default 20)
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DayInput {
    /// The day (YYYY-MM-DD, in the household's time zone); today when left out
    #[schemars(with = "Option<openapi::Date>")]
    pub date: Option<String>,
    /// Only this person's doses (numeric or portable id)
    pub person_id: Option<ResourceId>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PersonInput {
    /// The person (numeric or portable id)
    pub person_id: ResourceId,
    /// Most recent records of each kind, 1 to 100 (default 20)
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotTakenInput {
    /// schedule or person_medication, as the expected dose says
    pub source_type: SourceType,
    /// The expected dose's source (numeric or portable id)
    pub source_id: ResourceId,
    /// The expected dose's occurrence_key, from list_expected_doses
    #[schemars(length(min = 1))]
    pub occurrence_key: String,
    /// Why it was not taken
    #[serde(default)]
    pub reason:
        Option<crate::domain::Text<{ crate::care::dose_occurrences::outcomes::MAX_REASON }>>,
    #[serde(default)]
    pub note: Option<crate::domain::Text<{ crate::care::dose_occurrences::outcomes::MAX_NOTE }>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeInput {
    /// The open pause period's id (a portable id, from list_pause_history or pause_medication_source)
    #[schemars(with = "openapi::PortableId")]
    pub pause_period_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StockRemovalInput {
    /// The medication the stock leaves (numeric or portable id)
    pub medication_id: ResourceId,
    pub stock_removal: NewStockRemoval,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PauseHistoryInput {
    /// Only this source's periods: schedule or person_medication (with source_id)
    pub source_type: Option<SourceType>,
    /// Portable id of the schedule or direct assignment
    #[schemars(with = "Option<openapi::PortableId>")]
    pub source_id: Option<String>,
    #[schemars(range(min = 1))]
    pub page: Option<u32>,
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct HouseholdSummary {
    pub household: HouseholdFacts,
    /// The people this token may see
    pub people: Vec<PersonFacts>,
    #[schemars(range(min = 0))]
    pub medications_total: i64,
    /// Medications at or below their reorder threshold, or out of stock
    pub medications_low_stock: Vec<String>,
    pub today: TodayFacts,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct HouseholdFacts {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    pub name: String,
    pub time_zone: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PersonFacts {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    pub name: String,
}

/// Today's expected doses of the people this token may see.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TodayFacts {
    #[schemars(with = "openapi::Date")]
    pub date: String,
    pub expected: usize,
    pub open: usize,
    pub taken: usize,
    pub not_taken: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Medications {
    /// Each with current_supply, low_stock, out_of_stock and the run-out forecast (days_until_out_of_stock)
    pub data: Vec<Medication>,
    pub meta: PageMeta,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PersonActivity {
    /// Most recent first
    pub medication_takes: Vec<MedicationTake>,
    /// Most recent first
    pub health_events: Vec<HealthEvent>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PauseHistory {
    pub data: Vec<PausePeriod>,
    pub meta: PageMeta,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PausePeriodOutput {
    pub data: PausePeriod,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct StockRemovalOutput {
    pub data: StockRemoval,
}

/// The saved outcome of the expected dose, as a sync batch returns it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DoseOutcomeOutput {
    #[schemars(with = "std::collections::BTreeMap<String, serde_json::Value>")]
    pub data: serde_json::Value,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewQueueInput {
    /// Only prompts in this review status
    pub review_status: Option<ReviewStatus>,
    /// Only prompts of this priority
    pub priority: Option<Priority>,
    /// Include prompts a member hid
    #[serde(default)]
    pub show_hidden: bool,
    #[schemars(range(min = 1))]
    pub page: Option<u32>,
    #[schemars(range(min = 1, max = 100))]
    pub per_page: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ReviewQueue {
    pub data: Vec<MedicationReviewPrompt>,
    pub meta: PageMeta,
}
