//! The dm+d client: an OAuth 2.0 client_credentials token fetched once per
//! lookup and used for each of its requests, then one FHIR
//! `ValueSet/$expand` per concept type (VMP, AMP), each a value set whose
//! compose filters the dictionary on that concept class, with the searched
//! text as the expansion's `filter`. Results are merged, generic concepts
//! first, each (system, code) once.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::model::{ConceptClass, DMD_SYSTEM, MedicationLookupResult};
use super::{Services, TerminologySettings};
use crate::error::{ApiError, Result};

const SERVICE: &str = "the medicines dictionary";
/// Concept classes searched, in the order their results are listed.
const CLASSES: [ConceptClass; 2] = [ConceptClass::Vmp, ConceptClass::Amp];
/// The dm+d property holding a concept's class.
const CLASS_PROPERTY: &str = "CONCEPT_CLASS";

/// Searches the dictionary for `text`, at most `count` concepts per class.
pub async fn search(
    services: &Services,
    settings: &TerminologySettings,
    text: &str,
    count: u32,
) -> Result<Vec<MedicationLookupResult>> {
    // The token request and one expansion per class, all or none.
    if let Err(wait) = services.dictionary_limiter.acquire(1 + CLASSES.len()) {
        return Err(ApiError::unavailable(
            "upstream_rate_limited",
            format!(
                "medication search has reached the dictionary's request limit; try again in {} seconds",
                wait.as_secs().max(1)
            ),
        ));
    }
    let token = token(services, settings).await?;
    let url = format!("{}/ValueSet/$expand", settings.base_url);
    let (vmp, amp) = tokio::join!(
        expand(services, settings, &url, &token, CLASSES[0], text, count),
        expand(services, settings, &url, &token, CLASSES[1], text, count),
    );
    Ok(merge([vmp?, amp?]))
}

async fn token(services: &Services, settings: &TerminologySettings) -> Result<String> {
    let answer = services
        .http
        .post_form(
            &settings.token_url,
            &[
                ("grant_type", "client_credentials"),
                ("client_id", &settings.client_id),
                ("client_secret", settings.client_secret.expose()),
            ],
            settings.timeout,
        )
        .await?
        .map_err(|failure| failure.to_error(SERVICE))?;
    answer["access_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .ok_or_else(|| super::outbound::Failure::Malformed.to_error(SERVICE))
}

/// The `$expand` request for one concept class.
pub fn expand_parameters(class: ConceptClass, text: &str, count: u32) -> Value {
    json!({
        "resourceType": "Parameters",
        "parameter": [
            {"name": "valueSet", "resource": {
                "resourceType": "ValueSet",
                "status": "active",
                "compose": {"include": [{
                    "system": DMD_SYSTEM,
                    "filter": [{"property": CLASS_PROPERTY, "op": "=", "value": class.as_str()}],
                }]},
            }},
            {"name": "filter", "valueString": text},
            {"name": "count", "valueInteger": count},
            {"name": "activeOnly", "valueBoolean": true},
        ],
    })
}

async fn expand(
    services: &Services,
    settings: &TerminologySettings,
    url: &str,
    token: &str,
    class: ConceptClass,
    text: &str,
    count: u32,
) -> Result<Vec<MedicationLookupResult>> {
    let body = expand_parameters(class, text, count);
    let answer = services
        .http
        .post_json(url, Some(token), &body, settings.timeout)
        .await?
        .map_err(|failure| failure.to_error(SERVICE))?;
    concepts(&answer, class).ok_or_else(|| super::outbound::Failure::Malformed.to_error(SERVICE))
}

/// The concepts of an expanded ValueSet; `None` when it is not one.
fn concepts(answer: &Value, class: ConceptClass) -> Option<Vec<MedicationLookupResult>> {
    if answer["resourceType"] != "ValueSet" {
        return None;
    }
    let expansion = answer.get("expansion")?;
    let Some(contains) = expansion.get("contains") else {
        // An expansion with nothing in it leaves `contains` out.
        return Some(Vec::new());
    };
    let mut found = Vec::new();
    for entry in contains.as_array()? {
        let code = entry["code"].as_str().filter(|s| !s.is_empty());
        let display = entry["display"].as_str().filter(|s| !s.trim().is_empty());
        let (Some(code), Some(display)) = (code, display) else {
            // An abstract grouping entry names no concept.
            continue;
        };
        found.push(MedicationLookupResult {
            code: code.to_string(),
            display: display.to_string(),
            system: entry["system"]
                .as_str()
                .filter(|s| !s.is_empty())
                .unwrap_or(DMD_SYSTEM)
                .to_string(),
            concept_class: class,
        });
    }
    Some(found)
}

/// The classes' results in order, each (system, code) once.
fn merge<const N: usize>(lists: [Vec<MedicationLookupResult>; N]) -> Vec<MedicationLookupResult> {
    let mut seen = HashSet::new();
    lists
        .into_iter()
        .flatten()
        .filter(|r| seen.insert((r.system.clone(), r.code.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expansion_without_contains_is_empty_and_a_bundle_is_malformed() {
        let empty = json!({"resourceType": "ValueSet", "expansion": {"total": 0}});
        assert_eq!(concepts(&empty, ConceptClass::Vmp), Some(Vec::new()));
        let other = json!({"resourceType": "OperationOutcome"});
        assert_eq!(concepts(&other, ConceptClass::Vmp), None);
    }
}
