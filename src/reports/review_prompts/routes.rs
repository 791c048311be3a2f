//! Review prompt handlers: parse, call the rule, shape the response.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, patch};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::Filter;
use super::model::{MedicationReviewPrompt, Priority, ReviewBody, ReviewStatus};
use crate::auth::Actor;
use crate::auth::access::{Named, filter_id};
use crate::db::idempotency::SavedResponse;
use crate::domain::IfMatch;
use crate::domain::body::typed;
use crate::error::Result;
use crate::http::extract::{ApiJson, PathId};
use crate::http::openapi::{Api, Op};
use crate::http::query::{Flag, Paged, Reference, Supported, reference};
use crate::http::replay::Idempotent;
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Medication review prompts";
const COLLECTION: &str = "/households/{household_id}/medication_review_prompts";
const MEMBER: &str = "/households/{household_id}/medication_review_prompts/{id}";

pub fn routes(api: Api) -> Api {
    api.route(
        Op::get(COLLECTION, "listMedicationReviewPrompts", TAG)
            .summary("List medication review prompts")
            .description("The review queue: prompts of the people the caller may view, highest priority first, then newest. Each holds the immutable evidence snapshot it was made from. Hidden prompts are left out unless show_hidden=1 (or review_status=hidden). Responses are no-store.")
            .paginated()
            .query_params::<ListQuery>()
            .page::<MedicationReviewPrompt>(),
        get(list),
    )
    .route(
        Op::get(MEMBER, "getMedicationReviewPrompt", TAG)
            .summary("Get a medication review prompt")
            .description("Needs view access to the prompt's person (404 otherwise). `{id}` is its numeric or portable id.")
            .ok::<MedicationReviewPrompt>()
            .etag(),
        get(show),
    )
    .route(
        Op::patch(MEMBER, "updateMedicationReviewPrompt", TAG)
            .summary("Record a review of a medication review prompt")
            .description("Moves the prompt's review_status (pending, hidden and acknowledged move freely; a practitioner status moves only to the other one) and records the practitioner's name, role and review date (required for practitioner_reviewed and practitioner_changed) and notes. The evidence snapshot, priority and medicines cannot change (422). Needs manage access to the person and the current ETag in If-Match (428 without, 409 when stale). The review and its audit event commit together. With an Idempotency-Key, a saved response is replayed only while the caller still has manage access to the person.")
            .body::<ReviewBody>()
            .if_match_required()
            .idempotency_key()
            .ok::<MedicationReviewPrompt>()
            .etag(),
        patch(update),
    )
}

/// The filters of the review queue.
#[derive(Deserialize, JsonSchema)]
struct ListQuery {
    /// Only prompts with this review status
    review_status: Option<Supported<ReviewStatus>>,
    /// Only prompts of this priority
    priority: Option<Supported<Priority>>,
    /// Include hidden prompts
    show_hidden: Option<Flag>,
    /// Only prompts of this person (numeric or portable id)
    person_id: Option<Reference>,
}

async fn list(
    State(state): State<AppState>,
    actor: Actor,
    Paged(page, query): Paged<ListQuery>,
) -> Result<Response> {
    let review_status = query.review_status.map(|Supported(status)| status);
    let priority = query.priority.map(|Supported(priority)| priority);
    let show_hidden = query.show_hidden.unwrap_or_default().0;
    let person = reference(query.person_id);
    let (prompts, total) = state
        .db
        .read(move |conn| {
            let filter = Filter {
                review_status,
                priority,
                show_hidden,
                person_id: filter_id(conn, &actor, Named::Person, person.as_ref())?,
            };
            super::list(conn, &actor, &filter, page)
        })
        .await?;
    Ok(respond::collection(prompts, page, total))
}

async fn show(State(state): State<AppState>, actor: Actor, PathId(id): PathId) -> Result<Response> {
    let prompt = state
        .db
        .read(move |conn| super::get(conn, &actor, &id))
        .await?;
    Ok(respond::ok_tagged(prompt))
}

async fn update(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    request: Idempotent,
    ApiJson(body): ApiJson<Value>,
) -> Result<Response> {
    let attrs = typed::<ReviewBody>(Some(&body))?.medication_review_prompt;
    request
        .write(
            &state.db,
            (actor, id),
            Some(&body),
            // A saved review is replayed only while the caller may still review.
            |conn, actor, id, _| super::authorize(conn, actor, id),
            move |tx, actor, id| {
                let prompt = super::update(tx, actor, id, &if_match, attrs)?;
                SavedResponse::tagged(StatusCode::OK, &prompt)
            },
        )
        .await
}
