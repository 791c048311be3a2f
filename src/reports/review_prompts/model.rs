//! Medication review prompt shapes: the prompt as the API returns it, its
//! immutable evidence snapshot and the review a member records on it.

use jiff::civil::Date;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::vocabulary;
use crate::domain::{Name, Text, Timestamp, Versioned, etag, present};
use crate::http::openapi;

vocabulary!(
    /// Where a prompt's review stands: the practitioner
    /// statuses need a practitioner name, role and review date.
    ReviewStatus {
        Pending => "pending",
        Hidden => "hidden",
        Acknowledged => "acknowledged",
        PractitionerReviewed => "practitioner_reviewed",
        PractitionerChanged => "practitioner_changed",
    }
);

impl ReviewStatus {
    pub fn is_practitioner(self) -> bool {
        matches!(
            self,
            ReviewStatus::PractitionerReviewed | ReviewStatus::PractitionerChanged
        )
    }
}

vocabulary!(
    /// How urgently the pair should be raised with a pharmacist or doctor,
    /// read from the wording of the evidence.
    Priority {
        Low => "low",
        Medium => "medium",
        High => "high",
    }
);

/// A practitioner's name or role: not blank, at most 200 characters.
pub type PractitionerText = Name<200>;
/// Review notes: at most 4000 characters.
pub type Notes = Text<4000>;

/// What a prompt was made from, as it was when the prompt was made. It
/// never changes afterwards, whatever later imports do to the evidence.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EvidenceSnapshot {
    /// Where the evidence comes from (e.g. "openFDA drug label")
    pub source_name: String,
    /// The source's id of the record (an openFDA label's set_id)
    pub record_id: String,
    #[schemars(extend("format" = "uri"))]
    pub url: String,
    pub version: Option<String>,
    #[schemars(with = "Option<openapi::Date>")]
    pub effective_date: Option<String>,
    /// Products the record describes, as the source names them
    pub product_names: Vec<String>,
    /// Ingredients the record describes, as the source names them
    pub ingredient_names: Vec<String>,
    /// The household's name of the medicine the record describes
    pub medication_name: String,
    /// The household's name of the medicine the record's text names
    pub other_medication_name: String,
    /// The (normalised) name found in the record's text
    pub matched_term: String,
    /// The passage of the record's text that names it
    pub excerpt: String,
    pub captured_at: Timestamp,
}

/// A prompt as stored.
#[derive(Debug, Clone)]
pub struct PromptRow {
    pub id: i64,
    pub portable_id: String,
    pub person_id: i64,
    pub person_portable_id: String,
    pub medication_id: i64,
    pub medication_portable_id: String,
    pub other_medication_id: i64,
    pub other_medication_portable_id: String,
    pub evidence: EvidenceSnapshot,
    pub priority: Priority,
    pub review_status: ReviewStatus,
    pub practitioner_name: Option<String>,
    pub practitioner_role: Option<String>,
    /// ISO date.
    pub reviewed_on: Option<String>,
    pub notes: Option<String>,
    pub lock_version: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

// The API shape: every key always present.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MedicationReviewPrompt {
    #[schemars(with = "openapi::NumericId")]
    pub id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub portable_id: String,
    #[schemars(with = "openapi::NumericId")]
    pub person_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub person_portable_id: String,
    /// The medicine whose evidence names the other
    #[schemars(with = "openapi::NumericId")]
    pub medication_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub medication_portable_id: String,
    /// The medicine the evidence names
    #[schemars(with = "openapi::NumericId")]
    pub other_medication_id: i64,
    #[schemars(with = "openapi::PortableId")]
    pub other_medication_portable_id: String,
    pub review_status: ReviewStatus,
    pub priority: Priority,
    pub evidence: EvidenceSnapshot,
    #[schemars(with = "Option<PractitionerText>")]
    pub practitioner_name: Option<String>,
    #[schemars(with = "Option<PractitionerText>")]
    pub practitioner_role: Option<String>,
    #[schemars(with = "Option<openapi::Date>")]
    pub reviewed_on: Option<String>,
    #[schemars(with = "Option<Notes>")]
    pub notes: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// The prompt's current ETag (also the ETag header of a single prompt),
    /// so a queue entry can be reviewed without reading it again
    pub etag: String,
    #[serde(skip)]
    pub lock_version: i64,
}

impl Versioned for MedicationReviewPrompt {
    fn etag(&self) -> String {
        etag(&self.portable_id, self.lock_version)
    }
}

impl From<PromptRow> for MedicationReviewPrompt {
    fn from(row: PromptRow) -> Self {
        MedicationReviewPrompt {
            etag: etag(&row.portable_id, row.lock_version),
            id: row.id,
            portable_id: row.portable_id,
            person_id: row.person_id,
            person_portable_id: row.person_portable_id,
            medication_id: row.medication_id,
            medication_portable_id: row.medication_portable_id,
            other_medication_id: row.other_medication_id,
            other_medication_portable_id: row.other_medication_portable_id,
            review_status: row.review_status,
            priority: row.priority,
            evidence: row.evidence,
            practitioner_name: row.practitioner_name,
            practitioner_role: row.practitioner_role,
            reviewed_on: row.reviewed_on,
            notes: row.notes,
            created_at: row.created_at,
            updated_at: row.updated_at,
            lock_version: row.lock_version,
        }
    }
}

/// The review a member records. Absent fields stay as they are; the
/// practitioner fields and notes may be set to null. The evidence and the
/// medicines a prompt is about cannot change: sending any of them is a 422.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewAttributes {
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "ReviewStatus")]
    pub review_status: Option<Option<ReviewStatus>>,
    /// Who reviewed the pair (needed for the practitioner statuses)
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<PractitionerText>")]
    pub practitioner_name: Option<Option<PractitionerText>>,
    /// Their role, e.g. pharmacist or GP (needed for the practitioner statuses)
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<PractitionerText>")]
    pub practitioner_role: Option<Option<PractitionerText>>,
    /// The day of the review (needed for the practitioner statuses)
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<openapi::Date>")]
    pub reviewed_on: Option<Option<Date>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<Notes>")]
    pub notes: Option<Option<Notes>>,
    // Read-only fields, accepted only to be refused by name (422).
    #[serde(default, deserialize_with = "present")]
    #[schemars(skip)]
    pub evidence: Option<Option<serde::de::IgnoredAny>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(skip)]
    pub priority: Option<Option<serde::de::IgnoredAny>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(skip)]
    pub person_id: Option<Option<serde::de::IgnoredAny>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(skip)]
    pub medication_id: Option<Option<serde::de::IgnoredAny>>,
    #[serde(default, deserialize_with = "present")]
    #[schemars(skip)]
    pub other_medication_id: Option<Option<serde::de::IgnoredAny>>,
}

impl ReviewAttributes {
    /// The read-only fields this submission tried to set.
    pub fn read_only_sent(&self) -> Vec<&'static str> {
        [
            ("evidence", self.evidence.is_some()),
            ("priority", self.priority.is_some()),
            ("person_id", self.person_id.is_some()),
            ("medication_id", self.medication_id.is_some()),
            ("other_medication_id", self.other_medication_id.is_some()),
        ]
        .into_iter()
        .filter_map(|(field, sent)| sent.then_some(field))
        .collect()
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "MedicationReviewPromptUpdateRequest")]
pub struct ReviewBody {
    pub medication_review_prompt: ReviewAttributes,
}
