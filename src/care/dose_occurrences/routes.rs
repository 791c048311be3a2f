//! Dose occurrence handlers: parse, call the rule, shape the response.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use jiff::civil::Date;
use schemars::JsonSchema;
use serde::Deserialize;

use super::model::DoseOccurrenceDay;
use crate::auth::Actor;
use crate::error::Result;
use crate::http::openapi::{Api, Op};
use crate::http::query::{Query, Reference, query_param, reference};
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Dose occurrences";
const COLLECTION: &str = "/households/{household_id}/dose_occurrences";

pub fn routes(api: Api) -> Api {
    api.route(
            Op::get(COLLECTION, "listDoseOccurrences", TAG)
                .summary("List the expected doses of a day")
                .description("Projects the day's expected doses (in the household's time zone) of the routine schedules and routine person medications of one person, or of everyone the caller may view. prn schedules and as-needed assignments have none, and a source has none on days outside its start_date..end_date (end_date included). Each dose is projected from the plan, slot times and time zone in force at its scheduled time, so a later change of any of them never moves, renumbers or re-times a past dose (positions count the day's planned doses in time order); an untimed window follows the plan in force at its end, or now for the current window. A dose whose scheduled time falls inside a pause period (from started_at up to ended_at) or at or after the source's deletion is left out; doses before and after stay listed with their outcomes. An untimed window is left out only when pause periods cover all of it or the source was deleted before it began. Schedules give one dose per clock time (times, plus slots read through the person's notification preference) with scheduled_at in UTC; across a daylight-saving change a skipped local time moves forward by the gap and a repeated one is the earlier. Routine person medications give max_daily_doses (default 1) untimed doses per dose-cycle window (day, ISO week or calendar month), listed on every day of the window with the same keys. Each dose carries a signed occurrence_key, its outcome (taken through a linked medication take, else the saved outcome, else open) and warnings about its source's takes. Reads never persist anything. Not paginated: one day is small.")
                .query_params::<ListQuery>()
                .ok_unwrapped::<DoseOccurrenceDay>(),
            get(list),
        )
}

/// The day and person of a list of expected doses.
#[derive(Deserialize, JsonSchema)]
struct ListQuery {
    /// The day, YYYY-MM-DD (default today in the household's time zone)
    date: Option<DateText>,
    /// Only this person (numeric or portable id); 404 outside the caller's scope
    person_id: Option<Reference>,
}

query_param!(
    /// A day written strictly YYYY-MM-DD, as the MCP tool reads it too.
    DateText(Date),
    crate::care::schedule_config::parse_date,
    super::DATE_RULE,
    {"$ref": "#/components/schemas/Date"}
);

async fn list(
    State(state): State<AppState>,
    actor: Actor,
    Query(query): Query<ListQuery>,
) -> Result<Response> {
    let date = query.date.map(|DateText(day)| day);
    let person_id = reference(query.person_id);
    let (data, meta) = state
        .db
        .read(move |conn| super::list(conn, &actor, date, person_id.as_ref()))
        .await?;
    let count = data.len();
    Ok(respond::json(
        StatusCode::OK,
        &DoseOccurrenceDay { data, meta },
        count,
    ))
}
