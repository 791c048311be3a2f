//! Pause period API shapes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::vocabulary;
use crate::domain::{ResourceId, Text, Timestamp, Versioned, etag};
use crate::http::openapi;

vocabulary!(
    /// What a period pauses: a schedule or a direct assignment.
    SourceType {
        Schedule => "schedule",
        PersonMedication => "person_medication",
    }
);

impl SourceType {
    /// How the source is named in messages.
    pub fn noun(self) -> &'static str {
        match self {
            SourceType::Schedule => "schedule",
            SourceType::PersonMedication => "person medication",
        }
    }
}

vocabulary!(
    /// Why a medicine was paused: the five public reasons of the capability
    /// document (`medication_pause_periods.supported`);
    /// `reason_not_recorded` marks legacy pauses and the deprecated pause
    /// operations.
    PauseReason {
        ClinicianAdvice => "clinician_advice",
        SideEffects => "side_effects",
        OutOfSupply => "out_of_supply",
        Other => "other",
        ReasonNotRecorded => "reason_not_recorded",
    }
);

/// A pause period's note: at most 1000 characters.
pub type PauseNote = Text<1000>;

/// A pause period as sent. `id` is the portable id (the path names periods
/// by it); `source_id` is the source's portable id.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "MedicationPausePeriod")]
pub struct PausePeriod {
    /// The period's portable id (periods are addressed by it)
    #[schemars(with = "openapi::PortableId")]
    pub id: String,
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    pub source_type: SourceType,
    /// Portable id of the paused schedule or direct assignment
    #[schemars(with = "openapi::PortableId")]
    pub source_id: String,
    #[schemars(with = "openapi::NumericId")]
    pub source_numeric_id: i64,
    #[schemars(with = "openapi::NumericId")]
    pub person_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub person_portable_id: String,
    pub reason: PauseReason,
    #[schemars(with = "Option<PauseNote>")]
    pub note: Option<String>,
    /// Set by the server; null only for a legacy period with an unknown start
    pub started_at: Option<Timestamp>,
    /// Null while the period is open
    pub ended_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub legacy_context: bool,
    pub imported_context: bool,
    #[schemars(with = "Option<openapi::NumericId>")]
    pub recorded_by_membership_id: Option<i64>,
    pub recorded_by_display_name: Option<String>,
    #[schemars(with = "Option<openapi::NumericId>")]
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
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PausePeriodAttributes {
    pub source_type: SourceType,
    /// Portable id of the schedule or direct assignment to pause
    #[schemars(with = "openapi::PortableId")]
    pub source_id: String,
    /// One of the capability document's medication_pause_periods.supported
    pub reason: PauseReason,
    #[serde(default)]
    pub note: Option<PauseNote>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "MedicationPausePeriodCreateRequest")]
pub struct PausePeriodBody {
    pub medication_pause_period: PausePeriodAttributes,
}

/// No attributes: send {} or no body
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "EmptyRequest", extend("maxProperties" = 0))]
pub struct EmptyBody {}

/// A period as a portable import restores it: its own times and context,
/// actors resolved by the importer (None when not exactly one membership
/// matches).
pub struct Restored<'a> {
    pub source_type: SourceType,
    pub source_id: &'a ResourceId,
    pub reason: PauseReason,
    pub note: Option<&'a str>,
    pub started_at: Option<&'a str>,
    pub ended_at: Option<&'a str>,
    pub created_at: &'a str,
    pub legacy_context: bool,
    pub recorded_by_membership_id: Option<i64>,
    pub resumed_by_membership_id: Option<i64>,
    /// The bundle's reference to the opener when it matched no single
    /// membership (import rule 8: the original reference is kept).
    pub recorded_by_person_ref: Option<&'a str>,
    /// The same for the period's resumer.
    pub resumed_by_person_ref: Option<&'a str>,
}
