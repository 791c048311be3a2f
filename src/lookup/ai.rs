//! AI set-up suggestions: free text about a medicine cabinet goes to an
//! OpenAI-compatible chat completions endpoint with every name of the
//! household's people taken out; the model's JSON answer is checked
//! strictly and each proposed medication is grounded on a dictionary
//! concept when lookup is on. Nothing is written.

use serde_json::{Value, json};

use super::ai_model::{self, MAX_MEDICATIONS, ModelAnswer, SuggestedMedication, Suggestions};
use super::{AiSettings, Services, TerminologySettings};
use crate::error::{ApiError, Result};
use crate::medicine::vocab::{DoseUnit, ScheduleType};

const SERVICE: &str = "the AI endpoint";
/// Put where a person's name was.
pub const REDACTED: &str = "[person]";
/// Dictionary concepts considered when grounding one suggestion.
const GROUNDING_CANDIDATES: u32 = 5;
pub const NOTICE: &str = "These are suggestions only and nothing has been saved: check each one against the packaging or with a pharmacist before adding it.";

/// What a suggestion call needs besides the outbound services.
pub struct Request<'a> {
    pub ai: &'a AiSettings,
    /// Set when lookup is on and the caller wants grounding.
    pub terminology: Option<&'a TerminologySettings>,
    /// Every person's name in the household.
    pub names: &'a [String],
    pub text: &'a str,
}

pub async fn suggest(services: &Services, request: Request<'_>) -> Result<Suggestions> {
    let prompt = redact(request.text, request.names);
    let body = chat_request(&request.ai.model, &prompt);
    let url = format!("{}/chat/completions", request.ai.base_url);
    let answer = services
        .http
        .post_json(
            &url,
            request.ai.api_key.as_ref().map(|k| k.expose()),
            &body,
            request.ai.timeout,
        )
        .await?
        .map_err(|failure| failure.to_error(SERVICE))?;
    let proposed = read_answer(&answer).ok_or_else(invalid_answer)?;
    let mut medications = Vec::with_capacity(proposed.len());
    for (name, mut attributes, dosage_options, schedule) in proposed {
        let grounding = match request.terminology {
            Some(settings) => {
                super::terminology::search(services, settings, &name, GROUNDING_CANDIDATES)
                    .await?
                    .into_iter()
                    .next()
            }
            None => None,
        };
        if let Some(concept) = &grounding {
            attributes.dmd_code = Some(concept.code.clone());
            attributes.dmd_system = Some(concept.system.clone());
            attributes.dmd_concept_class = Some(concept.concept_class);
        }
        medications.push(SuggestedMedication {
            suggestion: true,
            grounding,
            medication: attributes,
            dosage_options,
            schedules: vec![schedule],
        });
    }
    Ok(Suggestions {
        medications,
        grounded_with_lookup: request.terminology.is_some(),
        notice: NOTICE,
    })
}

fn invalid_answer() -> ApiError {
    tracing::warn!(
        service = SERVICE,
        "the model's answer was not the JSON asked for"
    );
    ApiError::bad_gateway(
        "ai_response_invalid",
        "the AI endpoint's answer was not the set-up the server asked for; try again or describe the medicines differently",
    )
}

fn chat_request(model: &str, text: &str) -> Value {
    let system = format!(
        "You help a household set up a medication tracker. From the user's description of their medicine cabinet, \
         propose one entry per medicine. Answer with JSON only, exactly this shape: \
         {{\"medications\": [{{\"name\": string (the medicine and strength, e.g. \"Paracetamol 500mg tablets\"), \
         \"dose_amount\": string decimal > 0 (amount per dose), \"dose_unit\": one of {units}, \
         \"schedule_type\": one of {types}, \"times\": array of \"HH:MM\" (empty for prn), \
         \"dosage_options\": array of {{\"amount\": string decimal > 0, \"unit\": one of {units}, \"description\": string}}}}]}}. \
         Use schedule_type prn for as-needed medicines. Propose at most {MAX_MEDICATIONS} medicines. \
         Do not give medical advice; do not invent medicines that are not described.",
        units = serde_json::to_string(DoseUnit::ALL).unwrap_or_default(),
        types = serde_json::to_string(&[
            ScheduleType::Daily.as_str(),
            ScheduleType::MultipleDaily.as_str(),
            ScheduleType::EveryOtherDay.as_str(),
            ScheduleType::Prn.as_str(),
        ])
        .unwrap_or_default(),
    );
    json!({
        "model": model,
        "temperature": 0,
        "response_format": {"type": "json_object"},
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": text},
        ],
    })
}

type Proposed = (
    String,
    ai_model::SuggestedAttributes,
    Vec<ai_model::SuggestedDosageOption>,
    ai_model::SuggestedSchedule,
);

/// The checked medications of a chat completion; `None` when any part is
/// missing, of the wrong shape or out of range.
fn read_answer(answer: &Value) -> Option<Vec<Proposed>> {
    let content = answer["choices"][0]["message"]["content"].as_str()?;
    let content = strip_fence(content);
    let parsed: ModelAnswer = serde_json::from_str(content).ok()?;
    if parsed.medications.len() > MAX_MEDICATIONS {
        return None;
    }
    parsed
        .medications
        .into_iter()
        .map(ai_model::check)
        .collect()
}

/// Models often wrap JSON in a Markdown code fence despite being asked not to.
fn strip_fence(content: &str) -> &str {
    let trimmed = content.trim();
    trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.trim_end().strip_suffix("```"))
        .map(str::trim)
        .unwrap_or(trimmed)
}

/// `text` with each name, and each part of a name, replaced by
/// `[person]` wherever it stands as a whole word, whatever its case.
pub fn redact(text: &str, names: &[String]) -> String {
    let mut words: Vec<Vec<char>> = Vec::new();
    for name in names {
        let whole: Vec<char> = fold(name.trim());
        if !whole.is_empty() {
            words.push(whole);
        }
        for part in name.split(|c: char| !c.is_alphanumeric()) {
            if part.chars().count() >= 2 {
                words.push(fold(part));
            }
        }
    }
    // Longer first, so a full name goes before its parts.
    words.sort_by_key(|w| std::cmp::Reverse(w.len()));
    words.dedup();
    let chars: Vec<char> = text.chars().collect();
    let folded: Vec<char> = fold(text);
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let at_start = i == 0 || !chars[i - 1].is_alphanumeric();
        let matched = at_start
            .then(|| {
                words.iter().find(|w| {
                    let end = i + w.len();
                    end <= chars.len()
                        && folded[i..end] == w[..]
                        && (end == chars.len() || !chars[end].is_alphanumeric())
                })
            })
            .flatten();
        match matched {
            Some(word) => {
                out.push_str(REDACTED);
                i += word.len();
            }
            None => {
                out.push(chars[i]);
                i += 1;
            }
        }
    }
    out
}

/// One lower-case char per char, so positions line up with the original.
fn fold(text: &str) -> Vec<char> {
    text.chars()
        .map(|c| c.to_lowercase().next().unwrap_or(c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_their_parts_are_redacted_as_whole_words() {
        let names = vec!["Zebedee Quartermaine".to_string(), "Al".to_string()];
        assert_eq!(
            redact(
                "zebedee QUARTERMAINE takes Alendronic acid; Al takes 1",
                &names
            ),
            "[person] takes Alendronic acid; [person] takes 1"
        );
        assert_eq!(
            redact("Quartermaine's inhaler", &names),
            "[person]'s inhaler"
        );
    }

    #[test]
    fn fenced_json_is_read() {
        assert_eq!(strip_fence("```json\n{\"a\":1}\n```"), "{\"a\":1}");
        assert_eq!(strip_fence(" {\"a\":1} "), "{\"a\":1}");
    }
}
