//! Person medication handlers: parse, call the rule, shape the response.

use axum::extract::State;
use axum::response::Response;
use axum::routing::{delete, get, patch, post, put};
use schemars::JsonSchema;
use serde::Deserialize;

use super::model::{PersonMedication, PersonMedicationBody, PersonMedicationRow, ReorderBody};
use crate::auth::Actor;
use crate::care::pause_periods::model::EmptyBody;
use crate::care::source_routes;
use crate::domain::IfMatch;
use crate::error::Result;
use crate::http::extract::{ApiJson, PathId};
use crate::http::openapi::{Api, Op};
use crate::http::query::{At, Reference};
use crate::http::replace::{ReplaceJson, Whole};
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Person medications";
const COLLECTION: &str = "/households/{household_id}/person_medications";
const MEMBER: &str = "/households/{household_id}/person_medications/{id}";

pub fn routes(api: Api) -> Api {
    api
        .route(
            Op::get(COLLECTION, "listPersonMedications", TAG)
                .summary("List direct assignments of the people you may view")
                .description("By person, then position; only live (not deleted) assignments of people the caller has view access to.")
                .paginated()
                .query_params::<ListQuery>()
                .page::<PersonMedication>(),
            get(source_routes::list::<PersonMedicationRow, ListQuery>),
        )
        .route(
            Op::post(COLLECTION, "createPersonMedication", TAG)
                .summary("Assign a medication to a person")
                .description("person_id and medication_id are required. A source_dosage_option_id (an option of the medication) fills dose_amount, dose_unit, dose_cycle, max_daily_doses and min_hours_between_doses from its defaults unless the body gives them; otherwise dose_amount and dose_unit default to the medication's. dose_cycle defaults to daily and administration_kind to routine. The assignment goes last among the person's. Needs manage access to the person (view and record access get 403, a person outside the caller's scope 404).")
                .create_body::<PersonMedicationBody>("PersonMedicationCreateRequest", &["person_id", "medication_id"])
                .created::<PersonMedication>()
                .etag(),
            post(create),
        )
        .route(
            Op::get(MEMBER, "getPersonMedication", TAG)
                .summary("Get a direct assignment")
                .description("Needs view access to the assignment's person (404 otherwise). `{id}` is its numeric or portable id; a deleted assignment is not found.")
                .ok::<PersonMedication>()
                .etag(),
            get(source_routes::show::<PersonMedicationRow>),
        )
        .route(
            Op::patch(MEMBER, "updatePersonMedication", TAG)
                .summary("Change some attributes of a direct assignment")
                .description("Changes any subset of the attributes; person_id, when sent, must name the assignment's person. Naming a different dosage option fills the dose attributes the body leaves out from its defaults. A changed dose applies from now on: recorded takes keep theirs. Changes never rewrite the past: past windows keep their doses, positions, outcomes and linked takes; the current dose-cycle window and later ones follow the plan in force now. Needs manage access to the assignment's person. If-Match is optional; a stale one returns 409.")
                .body::<PersonMedicationBody>()
                .if_match()
                .ok::<PersonMedication>()
                .etag(),
            patch(update),
        )
        .route(
            Op::put(MEMBER, "replacePersonMedication", TAG)
                .summary("Replace a direct assignment's attributes")
                .description("The whole assignment: every attribute except person_id (which cannot change) is required; a missing one is a 422 naming it. dose_amount, dose_unit and dose_cycle are never null; a null optional attribute is cleared. The position stays. Needs manage access to the assignment's person. If-Match is optional; a stale one returns 409.")
                .create_body::<PersonMedicationBody>("PersonMedicationReplaceRequest", PersonMedicationBody::FIELDS)
                .if_match()
                .ok::<PersonMedication>()
                .etag(),
            put(replace),
        )
        .route(
            Op::delete(MEMBER, "deletePersonMedication", TAG)
                .summary("Retire a direct assignment")
                .description("The assignment stops and leaves every list; later requests for it return 404. Past takes, outcomes and pause history are kept, and the change feed records the retirement and a deletion marker. Needs manage access to the assignment's person. If-Match is optional; a stale one returns 409.")
                .if_match()
                .no_content(),
            delete(source_routes::remove::<PersonMedicationRow>),
        )
        .route(
            Op::patch(
                "/households/{household_id}/person_medications/{id}/reorder",
                "reorderPersonMedication",
                TAG,
            )
            .summary("Move a direct assignment up or down its person's list")
            .description("Swaps position with the person's live assignment before it (up) or after it (down); both get a new ETag. At the top or the bottom nothing changes. Needs manage access to the assignment's person. If-Match is optional; a stale one returns 409.")
            .body::<ReorderBody>()
            .if_match()
            .ok::<PersonMedication>()
            .etag(),
            patch(reorder),
        )
        .route(
            Op::patch(
                "/households/{household_id}/person_medications/{id}/pause",
                "pausePersonMedication",
                TAG,
            )
            .summary("Pause a person medication (deprecated)")
            .description("Deprecated: use createMedicationPausePeriod (POST /households/{household_id}/medication_pause_periods), which records why. Accepts an empty body (or {}) and opens a pause period with the reason reason_not_recorded; 409 pause_period_open when the assignment is already paused. Returns the assignment with its current_pause_period. Needs manage access to its person; a deleted assignment is not found (404). If-Match is optional; a stale one returns 409.")
            .deprecated()
            .body_optional::<EmptyBody>()
            .if_match()
            .ok::<PersonMedication>()
            .etag(),
            patch(source_routes::pause::<PersonMedicationRow>),
        )
        .route(
            Op::patch(
                "/households/{household_id}/person_medications/{id}/resume",
                "resumePersonMedication",
                TAG,
            )
            .summary("Resume a paused person medication (deprecated)")
            .description("Deprecated: use resumeMedicationPausePeriod (POST /households/{household_id}/medication_pause_periods/{portable_id}/resume). Accepts an empty body (or {}) and closes the assignment's open pause period; 409 pause_period_not_open when it is not paused. Returns the assignment. Needs manage access to its person; a deleted assignment is not found (404). If-Match is optional; a stale one returns 409.")
            .deprecated()
            .body_optional::<EmptyBody>()
            .if_match()
            .ok::<PersonMedication>()
            .etag(),
            patch(source_routes::resume::<PersonMedicationRow>),
        )
}

/// The filters of a list of assignments.
#[derive(Deserialize, JsonSchema)]
struct ListQuery {
    /// Only records updated at or after this time
    updated_since: Option<At>,
    /// Only assignments of this person (numeric or portable id)
    person_id: Option<Reference>,
    /// Only assignments of this medication (numeric or portable id)
    medication_id: Option<Reference>,
}

impl source_routes::ListQuery for ListQuery {
    fn filter(self) -> crate::care::source_row::Filter {
        source_routes::filter(self.updated_since, self.person_id, self.medication_id)
    }
}

async fn create(
    State(state): State<AppState>,
    actor: Actor,
    ApiJson(body): ApiJson<PersonMedicationBody>,
) -> Result<Response> {
    let assignment = state
        .db
        .write(move |conn| super::create(conn, &actor, body.person_medication))
        .await?;
    Ok(respond::created_tagged(assignment))
}

async fn update(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    ApiJson(body): ApiJson<PersonMedicationBody>,
) -> Result<Response> {
    let assignment = state
        .db
        .write(move |conn| super::update(conn, &actor, &id, &if_match, body.person_medication))
        .await?;
    Ok(respond::ok_tagged(assignment))
}

async fn replace(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    ReplaceJson(body): ReplaceJson<PersonMedicationBody>,
) -> Result<Response> {
    let assignment = state
        .db
        .write(move |conn| super::replace(conn, &actor, &id, &if_match, body.person_medication))
        .await?;
    Ok(respond::ok_tagged(assignment))
}

async fn reorder(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    ApiJson(body): ApiJson<ReorderBody>,
) -> Result<Response> {
    let assignment = state
        .db
        .write(move |conn| super::reorder(conn, &actor, &id, &if_match, body.direction))
        .await?;
    Ok(respond::ok_tagged(assignment))
}
