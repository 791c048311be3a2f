//! Medication take handlers: parse, call the rule, shape the response.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use schemars::JsonSchema;
use serde::Deserialize;

use super::Filter;
use super::model::{
    MedicationTake, MedicationTakeBody, MedicationTakeCreated, SourceType, TakeMeta,
};
use crate::auth::Actor;
use crate::domain::{ResourceId, Versioned};
use crate::error::{ApiError, Result};
use crate::http::extract::ApiJson;
use crate::http::openapi::{Api, Op};
use crate::http::query::{At, OneOf, Paged, Reference, at, reference};
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Medication takes";
const COLLECTION: &str = "/households/{household_id}/medication_takes";

const CREATE_DESCRIPTION: &str = "Records a dose actually given under a schedule or a direct \
assignment (source_type and source_id, a live source of the household). taken_at may be at most 5 \
minutes in the future and not before 1900-01-01 nor before the person's date of birth (in the \
household time zone); otherwise a 422 naming taken_at. dose_amount and dose_unit default to what \
the source calls for: for a tapering schedule the taper step in force on the day of the linked \
expected dose (or, unlinked, on the day of taken_at in the household time zone), else the \
source's own; the take keeps them, so changing the plan later never rewrites it. In the same \
transaction the dose is deducted exactly once from the current_supply of \
taken_from_medication_id (default: the source's medication) when the units agree (or the \
medication has no dose_unit), never below zero; the medication gets a new version. An \
occurrence_key from listDoseOccurrences links the take to that expected dose of this source \
(marking it taken): taken_at must fall within the dose's window (a schedule's day, an \
assignment's dose-cycle window, in the household time zone) widened by 12 hours either side, so a \
dose of another day, or one not yet due beyond that grace, cannot be marked taken (422 naming \
occurrence_key, as is a key of another source or one this server did not issue); an expected \
dose already linked to another take is a 409 occurrence_already_taken. A saved outcome of the \
linked dose (not_taken, or open after a reopen) becomes taken with this take in the same \
transaction, with a new ETag and a MedicationDoseOccurrence change-feed entry. client_uuid makes \
a retry safe: the same client_uuid returns the recorded take with 200 and deducts nothing; reused \
with different facts it is a 409 client_uuid_reused. Recording is never refused for a safety \
limit (the dose was already given): meta.warnings reports `max_daily_doses_exceeded` (more takes \
of this medication for this person, under this source or any other, in this source's dose-cycle \
window containing taken_at, a day, ISO week or month in the household time zone, than the \
max_daily_doses in force that day, a taper step's own winning, as listDoseOccurrences applies \
it), `min_hours_between_doses` (another take of this source closer than the \
min_hours_between_doses in force), `min_hours_between_doses_other_source` (a take of the same \
medication for the same person under another source closer than the larger of the two sources' \
min_hours_between_doses), `before_start_date` and `after_end_date` (a schedule's dose given on a \
day outside its start_date..end_date), `source_paused` (given while a pause period of the source \
was open), `stock_not_deducted` (the take's unit differs from the medication's) and \
`stock_ran_out` (the supply was smaller than the dose and is now zero); for prn schedules and \
as-needed assignments meta.next_dose_allowed_at is the earliest time the next dose keeps within \
both limits, the same medication's doses under the person's other sources included. Takes cannot be changed or deleted, so a dose marked taken stays \
taken. Needs record access to the source's person (view access gets 403, a person outside the \
caller's scope 404).";

pub fn routes(api: Api) -> Api {
    api
        .route(
            Op::get(COLLECTION, "listMedicationTakes", TAG)
                .summary("List recorded doses, newest first")
                .description("Takes of the people the caller may view, by taken_at, newest first. source_type and source_id filter together (one without the other is a 422); takes of retired sources stay listed.")
                .paginated()
                .query_params::<ListQuery>()
                .page::<MedicationTake>(),
            get(list),
        )
        .route(
            Op::post(COLLECTION, "createMedicationTake", TAG)
                .summary("Record a dose that was given")
                .description(CREATE_DESCRIPTION)
                .body::<MedicationTakeBody>()
                .created_unwrapped::<MedicationTakeCreated>()
                .also_ok_unwrapped::<MedicationTakeCreated>()
                .etag()
                .errors(&[409]),
            post(create),
        )
}

/// The filters of a list of takes.
#[derive(Deserialize, JsonSchema)]
struct ListQuery {
    /// Only records updated at or after this time
    updated_since: Option<At>,
    /// Only takes of this person (numeric or portable id)
    person_id: Option<Reference>,
    /// Only takes of this kind of source; needs source_id
    source_type: Option<OneOf<SourceType>>,
    /// Only takes of this schedule or person medication (numeric or portable id); needs source_type
    source_id: Option<Reference>,
    /// Only takes taken at or after this time
    from: Option<At>,
    /// Only takes taken at or before this time
    to: Option<At>,
}

/// `source_type` and `source_id`, both or neither.
fn source_filter(
    source_type: Option<OneOf<SourceType>>,
    source_id: Option<Reference>,
) -> Result<Option<(SourceType, ResourceId)>> {
    match (source_type, source_id) {
        (None, None) => Ok(None),
        (Some(OneOf(t)), Some(Reference(id))) => Ok(Some((t, id))),
        (Some(_), None) => Err(ApiError::invalid(
            "source_id",
            "is required with source_type",
        )),
        (None, Some(_)) => Err(ApiError::invalid(
            "source_type",
            "is required with source_id",
        )),
    }
}

async fn list(
    State(state): State<AppState>,
    actor: Actor,
    Paged(page, query): Paged<ListQuery>,
) -> Result<Response> {
    let filter = Filter {
        person_id: reference(query.person_id),
        source: source_filter(query.source_type, query.source_id)?,
        from: at(query.from),
        to: at(query.to),
        updated_since: at(query.updated_since),
    };
    let (items, total) = state
        .db
        .read(move |conn| super::list(conn, &actor, &filter, page))
        .await?;
    Ok(respond::collection(items, page, total))
}

async fn create(
    State(state): State<AppState>,
    actor: Actor,
    ApiJson(body): ApiJson<MedicationTakeBody>,
) -> Result<Response> {
    let recorded = state
        .db
        .write_checked_first(move |conn| super::create(conn, &actor, body.medication_take))
        .await?;
    let status = if recorded.replayed {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let etag = recorded.take.etag();
    let body = MedicationTakeCreated {
        data: recorded.take,
        meta: TakeMeta {
            warnings: recorded.warnings,
            next_dose_allowed_at: recorded.next_dose_allowed_at,
        },
    };
    Ok(respond::with_etag(respond::json(status, &body, 1), &etag))
}
