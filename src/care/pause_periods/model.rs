//! Pause period API shapes.

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::domain::{Versioned, etag};
use crate::http::openapi::nullable;

/// What a period pauses: a schedule or a direct assignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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

    /// How the source is named in messages.
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

/// Why a medicine was paused: the five public reasons of the capability
/// document (`medication_pause_periods.supported`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseReason {
    ClinicianAdvice,
    SideEffects,
    OutOfSupply,
    Other,
    /// Legacy pauses and the deprecated pause operations.
    ReasonNotRecorded,
}

impl PauseReason {
    pub const ALL: &'static [&'static str] = &[
        "clinician_advice",
        "side_effects",
        "out_of_supply",
        "other",
        "reason_not_recorded",
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PauseReason::ClinicianAdvice => "clinician_advice",
            PauseReason::SideEffects => "side_effects",
            PauseReason::OutOfSupply => "out_of_supply",
            PauseReason::Other => "other",
            PauseReason::ReasonNotRecorded => "reason_not_recorded",
        }
    }

    pub fn parse(text: &str) -> Option<PauseReason> {
        match text {
            "clinician_advice" => Some(PauseReason::ClinicianAdvice),
            "side_effects" => Some(PauseReason::SideEffects),
            "out_of_supply" => Some(PauseReason::OutOfSupply),
            "other" => Some(PauseReason::Other),
            "reason_not_recorded" => Some(PauseReason::ReasonNotRecorded),
            _ => None,
        }
    }

    pub fn schema() -> Value {
        json!({"type": "string", "enum": Self::ALL})
    }
}

macro_rules! text_enum_sql {
    ($t:ty, $what:literal) => {
        impl ToSql for $t {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(self.as_str().into())
            }
        }

        impl FromSql for $t {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                let text = value.as_str()?;
                <$t>::parse(text)
                    .ok_or_else(|| FromSqlError::Other(format!("unknown {} {text}", $what).into()))
            }
        }
    };
}

text_enum_sql!(SourceType, "pause source type");
text_enum_sql!(PauseReason, "pause reason");

/// A pause period as sent. `id` is the portable id (the path names periods
/// by it); `source_id` is the source's portable id.
#[derive(Debug, Clone, Serialize)]
pub struct PausePeriod {
    pub id: String,
    pub portable_id: String,
    pub source_type: SourceType,
    pub source_id: String,
    pub source_numeric_id: i64,
    pub person_id: i64,
    pub person_portable_id: String,
    pub reason: PauseReason,
    pub note: Option<String>,
    /// Null for a legacy period whose start is unknown.
    pub started_at: Option<String>,
    /// Null while the period is open.
    pub ended_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub legacy_context: bool,
    pub imported_context: bool,
    pub recorded_by_membership_id: Option<i64>,
    pub recorded_by_display_name: Option<String>,
    pub resumed_by_membership_id: Option<i64>,
    pub resumed_by_display_name: Option<String>,
    #[serde(skip)]
    pub row_id: i64,
    #[serde(skip)]
    pub lock_version: i64,
}

impl PausePeriod {
    pub fn is_open(&self) -> bool {
        self.ended_at.is_none()
    }
}

impl Versioned for PausePeriod {
    fn etag(&self) -> String {
        etag(&self.portable_id, self.lock_version)
    }
}

/// What a client sends to open a period. The server sets the start and the
/// actor: there is no way to backdate.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PausePeriodAttributes {
    pub source_type: SourceType,
    /// The source's portable id (UUID).
    pub source_id: String,
    pub reason: PauseReason,
    #[serde(default)]
    pub note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PausePeriodBody {
    pub medication_pause_period: PausePeriodAttributes,
}

/// A body with no attributes: `{}` (or no body at all).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmptyBody {}

pub const EMPTY_REQUEST: &str = "EmptyRequest";

pub fn empty_request_schema() -> Value {
    json!({"type": "object", "additionalProperties": false, "maxProperties": 0,
        "description": "No attributes: send {} or no body"})
}

pub fn pause_period_schema() -> Value {
    let membership = || nullable(json!({"$ref": "#/components/schemas/NumericId"}));
    let name = || nullable(json!({"type": "string"}));
    let props = json!({
        "id": {"allOf": [{"$ref": "#/components/schemas/PortableId"}],
            "description": "The period's portable id (periods are addressed by it)"},
        "portable_id": {"$ref": "#/components/schemas/PortableId"},
        "source_type": SourceType::schema(),
        "source_id": {"allOf": [{"$ref": "#/components/schemas/PortableId"}],
            "description": "Portable id of the paused schedule or direct assignment"},
        "source_numeric_id": {"$ref": "#/components/schemas/NumericId"},
        "person_id": {"$ref": "#/components/schemas/NumericId"},
        "person_portable_id": {"$ref": "#/components/schemas/PortableId"},
        "reason": PauseReason::schema(),
        "note": nullable(json!({"type": "string"})),
        "started_at": {"anyOf": [{"$ref": "#/components/schemas/Timestamp"}, {"type": "null"}],
            "description": "Set by the server; null only for a legacy period with an unknown start"},
        "ended_at": {"anyOf": [{"$ref": "#/components/schemas/Timestamp"}, {"type": "null"}],
            "description": "Null while the period is open"},
        "created_at": {"$ref": "#/components/schemas/Timestamp"},
        "updated_at": {"$ref": "#/components/schemas/Timestamp"},
        "legacy_context": {"type": "boolean"},
        "imported_context": {"type": "boolean"},
        "recorded_by_membership_id": membership(),
        "recorded_by_display_name": name(),
        "resumed_by_membership_id": membership(),
        "resumed_by_display_name": name(),
    });
    let required: Vec<&String> = props
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    json!({"type": "object", "additionalProperties": false, "required": required, "properties": props})
}

pub fn pause_period_attributes_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["source_type", "source_id", "reason"],
        "properties": {
            "source_type": SourceType::schema(),
            "source_id": {"allOf": [{"$ref": "#/components/schemas/PortableId"}],
                "description": "Portable id of the schedule or direct assignment to pause"},
            "reason": {"allOf": [PauseReason::schema()],
                "description": "One of the capability document's medication_pause_periods.supported"},
            "note": nullable(json!({"type": "string", "maxLength": 1000})),
        },
    })
}
