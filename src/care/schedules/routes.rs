//! Schedule handlers: parse, call the rule, shape the response.

use axum::extract::State;
use axum::response::Response;
use axum::routing::{delete, get, patch, post, put};
use schemars::JsonSchema;
use serde::Deserialize;

use super::model::{Schedule, ScheduleBody, ScheduleRow};
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

const TAG: &str = "Schedules";
const COLLECTION: &str = "/households/{household_id}/schedules";
const MEMBER: &str = "/households/{household_id}/schedules/{id}";

pub fn routes(api: Api) -> Api {
    api
        .route(
            Op::get(COLLECTION, "listSchedules", TAG)
                .summary("List schedules of the people you may view")
                .description("In id order; only live (not deleted) schedules of people the caller has view access to.")
                .paginated()
                .query_params::<ListQuery>()
                .page::<Schedule>(),
            get(source_routes::list::<ScheduleRow, ListQuery>),
        )
        .route(
            Op::post(COLLECTION, "createSchedule", TAG)
                .summary("Schedule a medication for a person")
                .description("person_id, medication_id and start_date are required. A source_dosage_option_id (an option of the medication) fills dose_amount, dose_unit, dose_cycle, max_daily_doses, min_hours_between_doses and frequency from its defaults unless the body gives them; otherwise dose_amount, dose_unit and schedule_type default to the medication's. dose_cycle defaults to daily. The plan is checked as a whole (see Schedule): a slot without a time in the person's notification preferences, dates or taper steps outside start_date..end_date (end_date inclusive), a taper step in another unit, times on a prn schedule and a max_daily_doses the plan itself exceeds are each a 422 naming the field. Needs manage access to the person (view and record access get 403, a person outside the caller's scope 404).")
                .create_body::<ScheduleBody>("ScheduleCreateRequest", &["person_id", "medication_id", "start_date"])
                .created::<Schedule>()
                .etag(),
            post(create),
        )
        .route(
            Op::get(MEMBER, "getSchedule", TAG)
                .summary("Get a schedule")
                .description("Needs view access to the schedule's person (404 otherwise). `{id}` is its numeric or portable id; a deleted schedule is not found.")
                .ok::<Schedule>()
                .etag(),
            get(source_routes::show::<ScheduleRow>),
        )
        .route(
            Op::patch(MEMBER, "updateSchedule", TAG)
                .summary("Change some attributes of a schedule")
                .description("Changes any subset of the attributes; person_id, when sent, must name the schedule's person (a schedule cannot move to another person). Naming a different dosage option fills the dose attributes the body leaves out from its defaults. A changed dose applies from now on: recorded takes keep theirs. Changes never rewrite the past: a change applies from the moment it is made, so every expected dose scheduled before it (earlier days and the doses of today already due) keeps its time, dose, position, outcome and linked take, and doses later today and after follow the new plan (positions of today's later doses count on after the earlier ones). Untimed windows of the current cycle follow the plan in force now. The plan is checked as a whole (see Schedule): a slot without a time in the person's notification preferences, dates or taper steps outside start_date..end_date (end_date inclusive), a taper step in another unit, times on a prn schedule and a max_daily_doses the plan itself exceeds are each a 422 naming the field. Needs manage access to the schedule's person. If-Match is optional; a stale one returns 409.")
                .body::<ScheduleBody>()
                .if_match()
                .ok::<Schedule>()
                .etag(),
            patch(update),
        )
        .route(
            Op::put(MEMBER, "replaceSchedule", TAG)
                .summary("Replace a schedule's attributes")
                .description("The whole schedule: every attribute except person_id (which cannot change) is required; a missing one is a 422 naming it. dose_amount, dose_unit and dose_cycle are never null; a null optional attribute is cleared. Changes never rewrite the past: a change applies from the moment it is made, so every expected dose scheduled before it (earlier days and the doses of today already due) keeps its time, dose, position, outcome and linked take, and doses later today and after follow the new plan (positions of today's later doses count on after the earlier ones). Untimed windows of the current cycle follow the plan in force now. The plan is checked as a whole (see Schedule): a slot without a time in the person's notification preferences, dates or taper steps outside start_date..end_date (end_date inclusive), a taper step in another unit, times on a prn schedule and a max_daily_doses the plan itself exceeds are each a 422 naming the field. Needs manage access to the schedule's person. If-Match is optional; a stale one returns 409.")
                .create_body::<ScheduleBody>("ScheduleReplaceRequest", ScheduleBody::FIELDS)
                .if_match()
                .ok::<Schedule>()
                .etag(),
            put(replace),
        )
        .route(
            Op::delete(MEMBER, "deleteSchedule", TAG)
                .summary("Retire a schedule")
                .description("The schedule stops and leaves every list; later requests for it return 404. Past takes, outcomes and pause history are kept, and the change feed records the retirement and a deletion marker. Needs manage access to the schedule's person. If-Match is optional; a stale one returns 409.")
                .if_match()
                .no_content(),
            delete(source_routes::remove::<ScheduleRow>),
        )
        .route(
            Op::patch(
                "/households/{household_id}/schedules/{id}/pause",
                "pauseSchedule",
                TAG,
            )
            .summary("Pause a schedule (deprecated)")
            .description("Deprecated: use createMedicationPausePeriod (POST /households/{household_id}/medication_pause_periods), which records why. Accepts an empty body (or {}) and opens a pause period with the reason reason_not_recorded; 409 pause_period_open when the schedule is already paused. Returns the schedule with its current_pause_period. Needs manage access to its person; a deleted schedule is not found (404). If-Match is optional; a stale one returns 409.")
            .deprecated()
            .body_optional::<EmptyBody>()
            .if_match()
            .ok::<Schedule>()
            .etag(),
            patch(source_routes::pause::<ScheduleRow>),
        )
        .route(
            Op::patch(
                "/households/{household_id}/schedules/{id}/resume",
                "resumeSchedule",
                TAG,
            )
            .summary("Resume a paused schedule (deprecated)")
            .description("Deprecated: use resumeMedicationPausePeriod (POST /households/{household_id}/medication_pause_periods/{portable_id}/resume). Accepts an empty body (or {}) and closes the schedule's open pause period; 409 pause_period_not_open when it is not paused. Returns the schedule. Needs manage access to its person; a deleted schedule is not found (404). If-Match is optional; a stale one returns 409.")
            .deprecated()
            .body_optional::<EmptyBody>()
            .if_match()
            .ok::<Schedule>()
            .etag(),
            patch(source_routes::resume::<ScheduleRow>),
        )
}

/// The filters of a list of schedules.
#[derive(Deserialize, JsonSchema)]
struct ListQuery {
    /// Only records updated at or after this time
    updated_since: Option<At>,
    /// Only schedules of this person (numeric or portable id)
    person_id: Option<Reference>,
    /// Only schedules of this medication (numeric or portable id)
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
    ApiJson(body): ApiJson<ScheduleBody>,
) -> Result<Response> {
    let schedule = state
        .db
        .write(move |conn| super::create(conn, &actor, body.schedule))
        .await?;
    Ok(respond::created_tagged(schedule))
}

async fn update(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    ApiJson(body): ApiJson<ScheduleBody>,
) -> Result<Response> {
    let schedule = state
        .db
        .write(move |conn| super::update(conn, &actor, &id, &if_match, body.schedule))
        .await?;
    Ok(respond::ok_tagged(schedule))
}

async fn replace(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    ReplaceJson(body): ReplaceJson<ScheduleBody>,
) -> Result<Response> {
    let schedule = state
        .db
        .write(move |conn| super::replace(conn, &actor, &id, &if_match, body.schedule))
        .await?;
    Ok(respond::ok_tagged(schedule))
}
