//! Medication take API shapes.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::decimal::{self, Dec};
use crate::domain::{ResourceId, Versioned, etag, resource_ref_schema};
use crate::http::openapi::nullable;
use crate::medicine::vocab::DoseUnit;

/// What a take was given under: a schedule or a direct assignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceType {
    Schedule,
    PersonMedication,
}

impl SourceType {
    pub const ALL: &'static [&'static str] = &["schedule", "person_medication"];

    pub fn as_str(self) -> &'static str {
        match self {
            SourceType::Schedule => "schedule",
            SourceType::PersonMedication => "person_medication",
        }
    }

    pub fn parse(text: &str) -> Option<SourceType> {
        match text {
            "schedule" => Some(SourceType::Schedule),
            "person_medication" => Some(SourceType::PersonMedication),
            _ => None,
        }
    }

    /// How a missing source is named in a 404.
    pub fn noun(self) -> &'static str {
        match self {
            SourceType::Schedule => "schedule",
            SourceType::PersonMedication => "person medication",
        }
    }

    pub fn schema() -> Value {
        json!({"type": "string", "enum": Self::ALL})
    }
}

impl rusqlite::types::ToSql for SourceType {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl rusqlite::types::FromSql for SourceType {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        let text = value.as_str()?;
        SourceType::parse(text).ok_or_else(|| {
            rusqlite::types::FromSqlError::Other(format!("unknown source type {text}").into())
        })
    }
}

/// A recorded take, exactly as it is returned (also on a replay).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MedicationTake {
    pub id: i64,
    pub portable_id: String,
    pub person_id: i64,
    pub person_portable_id: String,
    pub source_type: SourceType,
    pub source_id: i64,
    pub source_portable_id: String,
    pub client_uuid: Option<String>,
    pub taken_at: String,
    pub dose_amount: Dec,
    pub dose_unit: DoseUnit,
    pub taken_from_medication_id: Option<i64>,
    pub taken_from_medication_portable_id: Option<String>,
    pub taken_from_location_id: Option<i64>,
    pub taken_from_location_portable_id: Option<String>,
    /// The occurrence key the take was linked to an expected dose with.
    pub occurrence_key: Option<String>,
    pub recorded_by_membership_id: Option<i64>,
    pub created_at: String,
    #[serde(skip)]
    pub lock_version: i64,
}

impl Versioned for MedicationTake {
    fn etag(&self) -> String {
        etag(&self.portable_id, self.lock_version)
    }
}

/// A warning about a recorded take: never a refusal, the dose was given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    pub code: &'static str,
    pub message: String,
}

pub const WARNING_CODES: &[&str] = &[
    "max_daily_doses_exceeded",
    "min_hours_between_doses",
    "min_hours_between_doses_other_source",
    "before_start_date",
    "after_end_date",
    "source_paused",
    "stock_not_deducted",
    "stock_ran_out",
];

/// The client's id for one intended take: a UUID, kept in its lower-case
/// hyphenated form so that any spelling of it matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientUuid(pub String);

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
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewMedicationTake {
    pub source_type: SourceType,
    pub source_id: ResourceId,
    pub taken_at: String,
    #[serde(default)]
    pub client_uuid: Option<ClientUuid>,
    #[serde(default)]
    pub dose_amount: Option<Dec>,
    #[serde(default)]
    pub dose_unit: Option<DoseUnit>,
    #[serde(default)]
    pub taken_from_medication_id: Option<ResourceId>,
    #[serde(default)]
    pub taken_from_location_id: Option<ResourceId>,
    #[serde(default)]
    pub occurrence_key: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MedicationTakeBody {
    pub medication_take: NewMedicationTake,
}

pub fn medication_take_schema() -> Value {
    let props = json!({
        "id": {"$ref": "#/components/schemas/NumericId"},
        "portable_id": {"$ref": "#/components/schemas/PortableId"},
        "person_id": {"$ref": "#/components/schemas/NumericId"},
        "person_portable_id": {"$ref": "#/components/schemas/PortableId"},
        "source_type": SourceType::schema(),
        "source_id": {"$ref": "#/components/schemas/NumericId"},
        "source_portable_id": {"$ref": "#/components/schemas/PortableId"},
        "client_uuid": nullable(json!({"type": "string", "format": "uuid"})),
        "taken_at": {"$ref": "#/components/schemas/Timestamp"},
        "dose_amount": decimal::positive_schema(),
        "dose_unit": DoseUnit::schema(),
        "taken_from_medication_id": nullable(json!({"$ref": "#/components/schemas/NumericId"})),
        "taken_from_medication_portable_id": nullable(json!({"$ref": "#/components/schemas/PortableId"})),
        "taken_from_location_id": nullable(json!({"$ref": "#/components/schemas/NumericId"})),
        "taken_from_location_portable_id": nullable(json!({"$ref": "#/components/schemas/PortableId"})),
        "occurrence_key": {
            "anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}],
            "description": "The occurrence key of the expected dose this take was linked to, or null",
        },
        "recorded_by_membership_id": nullable(json!({"$ref": "#/components/schemas/NumericId"})),
        "created_at": {"$ref": "#/components/schemas/Timestamp"},
    });
    let required: Vec<&String> = props
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    json!({"type": "object", "additionalProperties": false, "required": required, "properties": props})
}

pub fn warning_schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false, "required": ["code", "message"],
        "properties": {
            "code": {"type": "string", "enum": WARNING_CODES},
            "message": {"type": "string", "minLength": 1},
        },
    })
}

/// The body of createMedicationTake's 201 and 200: the take and its warnings.
pub fn created_schema() -> Value {
    json!({
        "type": "object", "additionalProperties": false, "required": ["data", "meta"],
        "properties": {
            "data": {"$ref": "#/components/schemas/MedicationTake"},
            "meta": {
                "type": "object", "additionalProperties": false,
                "required": ["warnings", "next_dose_allowed_at"],
                "properties": {
                    "warnings": {
                        "type": "array",
                        "items": {"$ref": "#/components/schemas/MedicationTakeWarning"},
                        "description": "Safety limits this take went past and stock that could not be deducted; the take is recorded all the same",
                    },
                    "next_dose_allowed_at": {
                        "anyOf": [{"$ref": "#/components/schemas/Timestamp"}, {"type": "null"}],
                        "description": "For as-needed sources (prn schedules, as-needed assignments): the earliest time the next dose keeps within min_hours_between_doses and the dose-cycle limit, counting doses of the same medication for the person under other sources (by the larger of the two gaps); null for routine sources and when no limit applies",
                    },
                },
            },
        },
    })
}

pub fn new_medication_take_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["source_type", "source_id", "taken_at"],
        "properties": {
            "source_type": SourceType::schema(),
            "source_id": {
                "allOf": [resource_ref_schema()],
                "description": "A live schedule or person medication of the household (as source_type says), numeric or portable id",
            },
            "taken_at": {
                "type": "string", "format": "date-time",
                "description": "When the dose was given; not more than 5 minutes in the future, not before 1900-01-01 nor before the person's date of birth",
            },
            "client_uuid": {
                "anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}],
                "description": "Chosen by the client once per intended take: a retry with the same client_uuid returns the recorded take (200) without deducting stock again",
            },
            "dose_amount": {
                "anyOf": [decimal::positive_schema(), {"type": "null"}],
                "description": "Defaults to the source's dose_amount (a tapering schedule's: the step in force)",
            },
            "dose_unit": {
                "anyOf": [DoseUnit::schema(), {"type": "null"}],
                "description": "Defaults to the source's dose_unit (a tapering schedule's: the step in force)",
            },
            "taken_from_medication_id": {
                "anyOf": [resource_ref_schema(), {"type": "null"}],
                "description": "The medication whose stock the dose came from; defaults to the source's medication",
            },
            "taken_from_location_id": {
                "anyOf": [resource_ref_schema(), {"type": "null"}],
                "description": "A location of the household the dose was taken from",
            },
            "occurrence_key": {
                "anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}],
                "description": "The signed occurrence_key of an expected dose of this source (from listDoseOccurrences), marking that dose taken; taken_at must fall within the dose's window widened by 12 hours either side",
            },
        },
    })
}
