//! Medication take API shapes.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::decimal::{Dec, PositiveDecimal};
use crate::domain::vocabulary;
use crate::domain::{ResourceId, Timestamp, Versioned, etag};
use crate::http::openapi;
use crate::medicine::vocab::{DoseUnit, StockWarningCode};

/// What a take was given under: a schedule or a direct assignment (the
/// same vocabulary as a pause period's source).
pub use crate::care::pause_periods::model::SourceType;

/// A recorded take, exactly as it is returned (also on a replay).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MedicationTake {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    #[schemars(with = "openapi::NumericId")]
    pub person_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub person_portable_id: String,
    pub source_type: SourceType,
    #[schemars(with = "openapi::NumericId")]
    pub source_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub source_portable_id: String,
    #[schemars(with = "Option<ClientUuid>")]
    pub client_uuid: Option<String>,
    pub taken_at: Timestamp,
    #[schemars(with = "PositiveDecimal")]
    pub dose_amount: Dec,
    pub dose_unit: DoseUnit,
    #[schemars(with = "Option<openapi::NumericId>")]
    pub taken_from_medication_id: Option<i64>,
    #[schemars(with = "Option<openapi::PortableId>")]
    pub taken_from_medication_portable_id: Option<String>,
    #[schemars(with = "Option<openapi::NumericId>")]
    pub taken_from_location_id: Option<i64>,
    #[schemars(with = "Option<openapi::PortableId>")]
    pub taken_from_location_portable_id: Option<String>,
    /// The occurrence key of the expected dose this take was linked to, or null
    #[schemars(length(min = 1))]
    pub occurrence_key: Option<String>,
    #[schemars(with = "Option<openapi::NumericId>")]
    pub recorded_by_membership_id: Option<i64>,
    pub created_at: Timestamp,
    #[serde(skip)]
    pub lock_version: i64,
}

impl Versioned for MedicationTake {
    fn etag(&self) -> String {
        etag(&self.portable_id, self.lock_version)
    }
}

/// A warning about a recorded take: never a refusal, the dose was given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "MedicationTakeWarning")]
pub struct Warning {
    pub code: WarningCode,
    #[schemars(length(min = 1))]
    pub message: String,
}

vocabulary!(
    /// What a take's warning is about.
    WarningCode {
        MaxDailyDosesExceeded => "max_daily_doses_exceeded",
        MinHoursBetweenDoses => "min_hours_between_doses",
        MinHoursBetweenDosesOtherSource => "min_hours_between_doses_other_source",
        BeforeStartDate => "before_start_date",
        AfterEndDate => "after_end_date",
        SourcePaused => "source_paused",
        StockNotDeducted => "stock_not_deducted",
        StockRanOut => "stock_ran_out",
    }
);

impl From<StockWarningCode> for WarningCode {
    fn from(code: StockWarningCode) -> WarningCode {
        match code {
            StockWarningCode::NotDeducted => WarningCode::StockNotDeducted,
            StockWarningCode::RanOut => WarningCode::StockRanOut,
        }
    }
}

/// The client's id for one intended take: a UUID, kept in its lower-case
/// hyphenated form so that any spelling of it matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientUuid(pub String);

impl JsonSchema for ClientUuid {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "ClientUuid".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "format": "uuid"})
    }
}

impl<'de> Deserialize<'de> for ClientUuid {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        const EXPECTED: &str = "must be a UUID string, kept the same when the same take is retried";
        let text = String::deserialize(de).map_err(|_| serde::de::Error::custom(EXPECTED))?;
        uuid::Uuid::parse_str(&text)
            .map(|u| ClientUuid(u.hyphenated().to_string()))
            .map_err(|_| serde::de::Error::custom(EXPECTED))
    }
}

/// What a client sends to record a take.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMedicationTake {
    pub source_type: SourceType,
    /// A live schedule or person medication of the household (as source_type says), numeric or portable id
    pub source_id: ResourceId,
    /// When the dose was given; not more than 5 minutes in the future, not before 1900-01-01 nor before the person's date of birth
    #[schemars(with = "Timestamp")]
    pub taken_at: String,
    /// Chosen by the client once per intended take: a retry with the same client_uuid returns the recorded take (200) without deducting stock again
    #[serde(default)]
    pub client_uuid: Option<ClientUuid>,
    /// Defaults to the source's dose_amount (a tapering schedule's: the step in force)
    #[serde(default)]
    pub dose_amount: Option<PositiveDecimal>,
    /// Defaults to the source's dose_unit (a tapering schedule's: the step in force)
    #[serde(default)]
    pub dose_unit: Option<DoseUnit>,
    /// The medication whose stock the dose came from; defaults to the source's medication
    #[serde(default)]
    pub taken_from_medication_id: Option<ResourceId>,
    /// A location of the household the dose was taken from
    #[serde(default)]
    pub taken_from_location_id: Option<ResourceId>,
    /// The signed occurrence_key of an expected dose of this source (from listDoseOccurrences), marking that dose taken; taken_at must fall within the dose's window widened by 12 hours either side
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub occurrence_key: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "MedicationTakeCreateRequest")]
pub struct MedicationTakeBody {
    pub medication_take: NewMedicationTake,
}

/// The body of createMedicationTake's 201 and 200: the take and its warnings.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "MedicationTakeCreated")]
pub struct MedicationTakeCreated {
    pub data: MedicationTake,
    pub meta: TakeMeta,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields, inline)]
pub struct TakeMeta {
    /// Safety limits this take went past and stock that could not be deducted; the take is recorded all the same
    pub warnings: Vec<Warning>,
    /// For as-needed sources (prn schedules, as-needed assignments): the earliest time the next dose keeps within min_hours_between_doses and the dose-cycle limit, counting doses of the same medication for the person under other sources (by the larger of the two gaps); null for routine sources and when no limit applies
    pub next_dose_allowed_at: Option<Timestamp>,
}
