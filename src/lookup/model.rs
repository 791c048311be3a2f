//! Lookup and suggestion API shapes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::Text;
pub use crate::medicine::vocab::ConceptClass;

/// The code system address of the national medicines dictionary.
pub const DMD_SYSTEM: &str = "https://dmd.nhs.uk";

/// One concept of the national medicines dictionary (spec "Medication
/// lookup result"). The dictionary carries no dosage guidance,
/// contraindication or interaction data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MedicationLookupResult {
    /// The dictionary's concept code
    #[schemars(length(min = 1))]
    pub code: String,
    /// The concept's name
    #[schemars(length(min = 1))]
    pub display: String,
    /// The code system address
    #[schemars(length(min = 1))]
    pub system: String,
    pub concept_class: ConceptClass,
}

/// `{"data": [...]}`: VMP and AMP concepts together, generic ones first,
/// each concept once.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MedicationLookupResults {
    pub data: Vec<MedicationLookupResult>,
}

/// Free text describing a medicine cabinet.
pub type CabinetText = Text<4000>;

/// The suggestion request.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "AiMedicationSuggestionRequest")]
pub struct SuggestionBody {
    pub ai_medication_suggestion: SuggestionAttributes,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "AiMedicationSuggestionAttributes")]
pub struct SuggestionAttributes {
    /// What the household takes, in its own words (no names of people are needed)
    pub text: CabinetText,
    /// Look the medicines up in the dictionary first and ground each suggestion on a dictionary code (needs medication lookup; default true when it is on)
    #[serde(default)]
    pub use_lookup: Option<bool>,
}
