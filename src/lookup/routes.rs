//! Lookup and suggestion handlers.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde::de::{self, Deserializer};

use super::ai_model::Suggestions;
use super::model::{MedicationLookupResults, SuggestionBody};
use crate::auth::Actor;
use crate::error::{ApiError, Result};
use crate::http::extract::ApiJson;
use crate::http::openapi::{Api, Op};
use crate::http::query::{Count, Query};
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
            .query_params::<LookupQuery>()
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

/// The `q` and `count` of a lookup.
#[derive(Deserialize, JsonSchema)]
struct LookupQuery {
    /// Text to search for, e.g. paracetamol 500 (required)
    q: SearchText,
    /// Most concepts asked for per concept class
    count: Count<MAX_COUNT, DEFAULT_COUNT>,
}

/// The text of a lookup, trimmed: `MIN_TEXT` to `MAX_TEXT` characters.
struct SearchText(String);

impl<'de> Deserialize<'de> for SearchText {
    fn deserialize<D: Deserializer<'de>>(de: D) -> std::result::Result<Self, D::Error> {
        let text = Option::<String>::deserialize(de)?.unwrap_or_default();
        let text = text.trim();
        if (MIN_TEXT..=MAX_TEXT).contains(&text.chars().count()) {
            Ok(SearchText(text.to_string()))
        } else {
            Err(de::Error::custom(format!(
                "must be {MIN_TEXT} to {MAX_TEXT} characters"
            )))
        }
    }
}

impl JsonSchema for SearchText {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SearchText".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "minLength": MIN_TEXT, "maxLength": MAX_TEXT})
    }
}

async fn lookup(
    State(state): State<AppState>,
    _actor: Actor,
    query: std::result::Result<Query<LookupQuery>, ApiError>,
) -> Result<Response> {
    let settings = state
        .try_part::<crate::lookup::TerminologySettings>()
        .ok_or_else(lookup_off)?;
    let Query(LookupQuery {
        q: SearchText(text),
        count: Count(count),
    }) = query?;
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
