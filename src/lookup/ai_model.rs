//! AI suggestion shapes: what the model must answer (checked strictly:
//! anything else is a 502, never a half-read suggestion) and what the API
//! answers, in the API's own attribute names and vocabularies.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::model::MedicationLookupResult;
use crate::decimal::{self, Dec};
use crate::medicine::vocab::{DoseUnit, ScheduleType};

/// Most medications one answer may propose.
pub const MAX_MEDICATIONS: usize = 20;
const MAX_OPTIONS: usize = 5;
const MAX_TIMES: usize = 8;
const MAX_NAME: usize = 200;

/// The model's answer, as the prompt asks for it.
#[derive(Debug, Deserialize)]
pub struct ModelAnswer {
    pub medications: Vec<ModelMedication>,
}

#[derive(Debug, Deserialize)]
pub struct ModelMedication {
    pub name: String,
    pub dose_amount: ModelAmount,
    pub dose_unit: DoseUnit,
    pub schedule_type: ScheduleType,
    #[serde(default)]
    pub times: Vec<String>,
    #[serde(default)]
    pub dosage_options: Vec<ModelOption>,
}

#[derive(Debug, Deserialize)]
pub struct ModelOption {
    pub amount: ModelAmount,
    pub unit: DoseUnit,
    #[serde(default)]
    pub description: Option<String>,
}

/// Models write amounts as numbers or strings; either is read as exact
/// decimal text (a number through its shortest text, never through f64
/// arithmetic).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum ModelAmount {
    Text(String),
    Number(serde_json::Number),
}

impl ModelAmount {
    /// A positive decimal within the API's range, or `None`.
    pub fn positive(&self) -> Option<Dec> {
        let text = match self {
            ModelAmount::Text(t) => t.trim().to_string(),
            ModelAmount::Number(n) => n.to_string(),
        };
        let dec: Dec = text.parse().ok()?;
        (dec.is_positive() && dec.in_range()).then_some(dec)
    }
}

/// The suggestion payload.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AiMedicationSuggestions", deny_unknown_fields)]
pub struct Suggestions {
    /// Proposed medications; nothing has been saved
    pub medications: Vec<SuggestedMedication>,
    /// Whether the dictionary was searched to ground the suggestions
    pub grounded_with_lookup: bool,
    #[schemars(length(min = 1))]
    pub notice: &'static str,
}

/// One proposed medication with its dosage options and schedule, each in
/// the attribute names of the create requests.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AiSuggestedMedication", deny_unknown_fields)]
pub struct SuggestedMedication {
    /// Always true: a proposal to confirm, not a record
    #[schemars(extend("const" = true))]
    pub suggestion: bool,
    /// The dictionary concept it was grounded on (its code), or null when none matched or lookup is off
    pub grounding: Option<MedicationLookupResult>,
    pub medication: SuggestedAttributes,
    pub dosage_options: Vec<SuggestedDosageOption>,
    pub schedules: Vec<SuggestedSchedule>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AiSuggestedMedicationAttributes", deny_unknown_fields)]
pub struct SuggestedAttributes {
    #[schemars(length(min = 1, max = 200))]
    pub name: String,
    #[schemars(with = "decimal::PositiveDecimal")]
    pub dose_amount: Dec,
    pub dose_unit: DoseUnit,
    pub default_schedule_type: ScheduleType,
    pub dmd_code: Option<String>,
    pub dmd_system: Option<String>,
    pub dmd_concept_class: Option<crate::medicine::vocab::ConceptClass>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AiSuggestedDosageOption", deny_unknown_fields)]
pub struct SuggestedDosageOption {
    #[schemars(extend("const" = true))]
    pub suggestion: bool,
    #[schemars(with = "decimal::PositiveDecimal")]
    pub amount: Dec,
    pub unit: DoseUnit,
    #[schemars(length(max = 500))]
    pub description: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AiSuggestedSchedule", deny_unknown_fields)]
pub struct SuggestedSchedule {
    #[schemars(extend("const" = true))]
    pub suggestion: bool,
    pub schedule_type: ScheduleType,
    /// `{"times": ["HH:MM", ...]}`, or `{"as_needed": true}` for prn
    #[schemars(with = "std::collections::BTreeMap<String, serde_json::Value>")]
    pub schedule_config: serde_json::Value,
    #[schemars(with = "decimal::PositiveDecimal")]
    pub dose_amount: Dec,
    pub dose_unit: DoseUnit,
}

/// Checks one proposed medication; `None` when any value is out of range
/// (the whole answer is then refused).
pub fn check(
    m: ModelMedication,
) -> Option<(
    String,
    SuggestedAttributes,
    Vec<SuggestedDosageOption>,
    SuggestedSchedule,
)> {
    let name = m.name.trim().to_string();
    if name.is_empty() || name.chars().count() > MAX_NAME {
        return None;
    }
    let dose_amount = m.dose_amount.positive()?;
    if m.dosage_options.len() > MAX_OPTIONS || m.times.len() > MAX_TIMES {
        return None;
    }
    let mut times = Vec::new();
    for time in &m.times {
        let parsed: jiff::civil::Time = time.trim().parse().ok()?;
        times.push(format!("{:02}:{:02}", parsed.hour(), parsed.minute()));
    }
    let schedule_config = match m.schedule_type {
        ScheduleType::Prn => serde_json::json!({"as_needed": true}),
        ScheduleType::Daily | ScheduleType::MultipleDaily | ScheduleType::EveryOtherDay => {
            if times.is_empty() {
                return None;
            }
            serde_json::json!({"times": times})
        }
        // Weekly, dated and tapering plans need facts a free-text cabinet
        // description does not give; the model may not invent them.
        ScheduleType::Weekly | ScheduleType::SpecificDates | ScheduleType::Tapering => {
            return None;
        }
    };
    let mut options = Vec::new();
    for option in m.dosage_options {
        let description = option
            .description
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty());
        if description
            .as_ref()
            .is_some_and(|d| d.chars().count() > 500)
        {
            return None;
        }
        options.push(SuggestedDosageOption {
            suggestion: true,
            amount: option.amount.positive()?,
            unit: option.unit,
            description,
        });
    }
    let schedule = SuggestedSchedule {
        suggestion: true,
        schedule_type: m.schedule_type,
        schedule_config,
        dose_amount,
        dose_unit: m.dose_unit,
    };
    let attributes = SuggestedAttributes {
        name: name.clone(),
        dose_amount,
        dose_unit: m.dose_unit,
        default_schedule_type: m.schedule_type,
        dmd_code: None,
        dmd_system: None,
        dmd_concept_class: None,
    };
    Some((name, attributes, options, schedule))
}
