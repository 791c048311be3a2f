//! Lookup and suggestion handlers.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

use super::ai_model::Suggestions;
use super::model::{MedicationLookupResults, SuggestionBody};
use crate::auth::Actor;
use crate::error::{ApiError, Result};
use crate::http::extract::{ApiJson, QueryParams};
use crate::http::openapi::{Api, Op};
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Lookup";
const LOOKUP: &str = "/households/{household_id}/medication_lookup";
const SUGGESTIONS: &str = "/households/{household_id}/ai_medication_suggestions";
/// Concepts asked for per concept class unless `count` says otherwise.
const DEFAULT_COUNT: u32 = 20;
const MAX_COUNT: u32 = 50;
const MIN_TEXT: usize = 2;
const MAX_TEXT: usize = 100;

pub fn routes(api: Api) -> Api {
    api.route(
        Op::get(LOOKUP, "searchMedicationLookup", TAG)
            .summary("Search the national medicines dictionary")
            .description("Searches dm+d for generic (VMP) and branded (AMP) products whose names match `q`, and lists them together, generic ones first, each concept once. The dictionary carries no dosage guidance, contraindication or interaction data. Off (503 feature_unavailable) unless the server has both TERMINOLOGY_DMD_CLIENT_ID and TERMINOLOGY_DMD_CLIENT_SECRET; a dictionary that cannot answer now is a 503, one that answers with something unusable a 502.")
            .query(
                "q",
                json!({"type": "string", "minLength": MIN_TEXT, "maxLength": MAX_TEXT}),
                "Text to search for, e.g. paracetamol 500 (required)",
            )
            .query(
                "count",
                json!({"type": "integer", "minimum": 1, "maximum": MAX_COUNT, "default": DEFAULT_COUNT}),
                "Most concepts asked for per concept class",
            )
            .errors(&[502, 503])
            .ok_unwrapped::<MedicationLookupResults>(),
        get(lookup),
    )
    .route(
        Op::post(SUGGESTIONS, "generateAiMedicationSuggestions", TAG)
            .summary("Propose a medication set-up from a description")
            .description("Sends the description, with every name of the household's people taken out, to the OpenAI-compatible endpoint the server is configured with, and answers proposed medications with dosage options and a schedule in the attribute names of the create requests, each marked as a suggestion and, when medication lookup is on, grounded on a dictionary concept (its code). Nothing is saved. Off (503 feature_unavailable) until PILLBOX_AI_BASE_URL and PILLBOX_AI_MODEL are set; an answer of the model that is not the asked-for set-up is a 502 ai_response_invalid.")
            .body::<SuggestionBody>()
            .errors(&[502, 503])
            .ok::<Suggestions>(),
        post(suggest),
    )
}

/// The `q` and `count` of a lookup, checked.
pub fn lookup_query(query: &QueryParams) -> Result<(String, u32)> {
    let text = query.get("q").map(str::trim).unwrap_or_default();
    let length = text.chars().count();
    if !(MIN_TEXT..=MAX_TEXT).contains(&length) {
        return Err(ApiError::invalid(
            "q",
            format!("must be {MIN_TEXT} to {MAX_TEXT} characters"),
        ));
    }
    let count = match query.get("count") {
        None => DEFAULT_COUNT,
        Some(raw) => raw
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_COUNT).contains(n))
            .ok_or_else(|| {
                ApiError::invalid("count", format!("must be an integer from 1 to {MAX_COUNT}"))
            })?,
    };
    Ok((text.to_string(), count))
}

async fn lookup(
    State(state): State<AppState>,
    _actor: Actor,
    query: QueryParams,
) -> Result<Response> {
    let settings = state
        .try_part::<crate::lookup::TerminologySettings>()
        .ok_or_else(lookup_off)?;
    let (text, count) = lookup_query(&query)?;
    let data = super::terminology::search(
        state.part::<crate::lookup::Services>(),
        settings,
        &text,
        count,
    )
    .await?;
    Ok(Json(MedicationLookupResults { data }).into_response())
}

async fn suggest(
    State(state): State<AppState>,
    actor: Actor,
    ApiJson(body): ApiJson<SuggestionBody>,
) -> Result<Response> {
    let ai = state
        .try_part::<crate::lookup::AiSettings>()
        .ok_or_else(|| {
            ApiError::feature_unavailable(
                "AI suggestions are off; the server needs PILLBOX_AI_BASE_URL and PILLBOX_AI_MODEL",
            )
        })?;
    let attributes = body.ai_medication_suggestion;
    if attributes.text.trim().is_empty() {
        return Err(ApiError::invalid(
            "ai_medication_suggestion.text",
            "must not be blank",
        ));
    }
    let terminology = state
        .try_part::<super::TerminologySettings>()
        .map(|settings| &**settings)
        .filter(|_| attributes.use_lookup.unwrap_or(true));
    let household_id = actor.household_id;
    let names = state
        .db
        .read(move |conn| crate::household::people::store::names(conn, household_id))
        .await?;
    let request = super::ai::Request {
        ai,
        terminology,
        names: &names,
        text: &attributes.text,
    };
    let suggestions = super::ai::suggest(state.part::<crate::lookup::Services>(), request).await?;
    Ok(respond::ok(suggestions))
}

pub fn lookup_off() -> ApiError {
    ApiError::feature_unavailable(format!(
        "{}; the server needs TERMINOLOGY_DMD_CLIENT_ID and TERMINOLOGY_DMD_CLIENT_SECRET",
        super::LOOKUP_OFF_WARNING
    ))
}
