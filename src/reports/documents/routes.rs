//! Report handlers: read the report, render it (PDF on a blocking thread,
//! a few at a time), audit the download, answer. Any failure after the
//! read is a 503 `report_unavailable`.

use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::Semaphore;

use super::model::{HealthHistoryReport, MedicationReviewsReport};
use super::{HistoryQuery, Kind, unavailable};
use crate::auth::Actor;
use crate::error::{ApiError, Result};
use crate::http::openapi::{Api, Op};
use crate::http::query::{Checked, Day, Flag, Query, Reference, Supported};
use crate::reports::review_prompts::model::ReviewStatus;
use crate::state::AppState;

const TAG: &str = "Reports";
const HISTORY: &str = "/households/{household_id}/reports/health_history";
const HISTORY_PDF: &str = "/households/{household_id}/reports/health_history.pdf";
const REVIEWS: &str = "/households/{household_id}/reports/medication_reviews";
const REVIEWS_PDF: &str = "/households/{household_id}/reports/medication_reviews.pdf";

/// PDF renderings at once: each holds a document in memory.
const RENDERERS: usize = 2;

const HISTORY_TEXT: &str = "The health history of one person: current medicines with doses and schedules, pauses with their reasons, health events, the person's review prompts (only for callers with the adult review permission) and, with include_medication_takes=1, every dose given. person_id (numeric or portable) is required; start_date and end_date are ISO dates at most 366 days apart (default: the 365 days up to today in the household time zone). Needs manage access to the person. Responses are no-store; every successful download is audited. A rendering or audit failure is 503 report_unavailable.";
const REVIEWS_TEXT: &str = "The medication review prompts of one person, with their evidence and reviews, and the person's current medicines. person_id (numeric or portable) is required; review_status filters by exact status; there are no date filters. Needs view access to the person and the adult review permission. Responses are no-store; every successful download is audited. A rendering or audit failure is 503 report_unavailable.";

/// The query of a health history report.
#[derive(Deserialize, JsonSchema)]
struct HistoryParams {
    /// The person the report is about (numeric or portable id); required
    person_id: Reference,
    /// First day of the period
    start_date: Option<Day>,
    /// Last day of the period (at most 366 days after start_date)
    end_date: Option<Day>,
    /// 1 adds every dose given in the period
    include_medication_takes: Option<Flag>,
}

/// The query of a medication reviews report.
#[derive(Deserialize, JsonSchema)]
struct ReviewsParams {
    /// The person the report is about (numeric or portable id); required
    person_id: Reference,
    /// Only prompts with exactly this status
    review_status: Option<Supported<ReviewStatus>>,
    /// The older name of review_status, read only without it.
    #[schemars(skip)]
    status: Option<Checked<Supported<ReviewStatus>>>,
}

fn unavailable_response(op: Op) -> Op {
    op.response(
        503,
        json!({
            "description": "report_unavailable: the report could not be rendered or its download audited",
            "headers": {"X-Request-Id": {"$ref": "#/components/headers/RequestId"}},
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }),
    )
}

pub fn routes(api: Api) -> Api {
    api.route(
        unavailable_response(
            Op::get(HISTORY, "getHealthHistoryReport", TAG)
                .summary("Health history report (JSON)")
                .description(HISTORY_TEXT)
                .query_params::<HistoryParams>(),
        )
        .ok::<HealthHistoryReport>(),
        get(history_json),
    )
    .route(
        unavailable_response(
            Op::get(HISTORY_PDF, "getHealthHistoryReportPdf", TAG)
                .summary("Health history report (PDF)")
                .description(HISTORY_TEXT)
                .query_params::<HistoryParams>(),
        )
        .binary_ok(&["application/pdf"]),
        get(history_pdf),
    )
    .route(
        unavailable_response(
            Op::get(REVIEWS, "getMedicationReviewsReport", TAG)
                .summary("Medication reviews report (JSON)")
                .description(REVIEWS_TEXT)
                .query_params::<ReviewsParams>(),
        )
        .ok::<MedicationReviewsReport>(),
        get(reviews_json),
    )
    .route(
        unavailable_response(
            Op::get(REVIEWS_PDF, "getMedicationReviewsReportPdf", TAG)
                .summary("Medication reviews report (PDF)")
                .description(REVIEWS_TEXT)
                .query_params::<ReviewsParams>(),
        )
        .binary_ok(&["application/pdf"]),
        get(reviews_pdf),
    )
}

fn history_query(query: HistoryParams) -> Result<HistoryQuery> {
    let start_date = query.start_date.map(|Day(day)| day);
    let end_date = query.end_date.map(|Day(day)| day);
    if let (Some(start), Some(end)) = (start_date, end_date) {
        super::check_span(start, end)?;
    }
    Ok(HistoryQuery {
        person_id: query.person_id.0,
        start_date,
        end_date,
        include_medication_takes: query.include_medication_takes.unwrap_or_default().0,
    })
}

/// `review_status`, or else its older name `status`.
fn review_status(query: ReviewsParams) -> Result<Option<ReviewStatus>> {
    match (query.review_status, query.status) {
        (Some(Supported(status)), _) => Ok(Some(status)),
        (None, Some(Checked(older))) => older
            .map(|Supported(status)| Some(status))
            .map_err(|message| ApiError::invalid("status", message)),
        (None, None) => Ok(None),
    }
}

async fn history(
    state: &AppState,
    actor: &Actor,
    query: HistoryParams,
) -> Result<HealthHistoryReport> {
    let query = history_query(query)?;
    let actor = actor.clone();
    state
        .db
        .read(move |conn| super::health_history(conn, &actor, &query))
        .await
}

async fn reviews(
    state: &AppState,
    actor: &Actor,
    query: ReviewsParams,
) -> Result<MedicationReviewsReport> {
    let person = query.person_id.0.clone();
    let status = review_status(query)?;
    let actor = actor.clone();
    state
        .db
        .read(move |conn| super::medication_reviews(conn, &actor, &person, status))
        .await
}

/// Audits the download; a failure is `report_unavailable`.
async fn audited(
    state: &AppState,
    actor: &Actor,
    kind: Kind,
    format: &'static str,
    person_id: i64,
) -> Result<()> {
    let actor = actor.clone();
    state
        .db
        .write(move |tx| super::record_download(tx, &actor, kind, format, person_id))
        .await
        .map_err(unavailable)
}

#[derive(Serialize)]
struct Data<'a, T> {
    data: &'a T,
}

fn json_bytes<T: Serialize>(report: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(&Data { data: report }).map_err(unavailable)
}

fn json_response(bytes: Vec<u8>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        Body::from(bytes),
    )
        .into_response()
}

fn pdf_response(bytes: Vec<u8>, name: &str) -> Response {
    let disposition = format!("attachment; filename=\"{name}.pdf\"");
    let mut response = (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/pdf"),
        )],
        Body::from(bytes),
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        response
            .headers_mut()
            .insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

/// Renders on a blocking thread, at most `RENDERERS` at once.
async fn render<T: Send + Sync + 'static>(
    report: T,
    rendering: fn(&T) -> std::result::Result<Vec<u8>, String>,
) -> Result<Vec<u8>> {
    static PERMITS: OnceLock<Arc<Semaphore>> = OnceLock::new();
    let permits = PERMITS.get_or_init(|| Arc::new(Semaphore::new(RENDERERS)));
    let _permit = permits.clone().acquire_owned().await.map_err(unavailable)?;
    tokio::task::spawn_blocking(move || rendering(&report))
        .await
        .map_err(unavailable)?
        .map_err(unavailable)
}

async fn history_json(
    State(state): State<AppState>,
    actor: Actor,
    Query(query): Query<HistoryParams>,
) -> Result<Response> {
    let report = history(&state, &actor, query).await?;
    let bytes = json_bytes(&report)?;
    audited(
        &state,
        &actor,
        Kind::HealthHistory,
        "json",
        report.person.id,
    )
    .await?;
    Ok(json_response(bytes))
}

async fn history_pdf(
    State(state): State<AppState>,
    actor: Actor,
    Query(query): Query<HistoryParams>,
) -> Result<Response> {
    let report = history(&state, &actor, query).await?;
    let person_id = report.person.id;
    let bytes = render(report, super::pdf::health_history).await?;
    audited(&state, &actor, Kind::HealthHistory, "pdf", person_id).await?;
    Ok(pdf_response(bytes, "health_history"))
}

async fn reviews_json(
    State(state): State<AppState>,
    actor: Actor,
    Query(query): Query<ReviewsParams>,
) -> Result<Response> {
    let report = reviews(&state, &actor, query).await?;
    let bytes = json_bytes(&report)?;
    audited(
        &state,
        &actor,
        Kind::MedicationReviews,
        "json",
        report.person.id,
    )
    .await?;
    Ok(json_response(bytes))
}

async fn reviews_pdf(
    State(state): State<AppState>,
    actor: Actor,
    Query(query): Query<ReviewsParams>,
) -> Result<Response> {
    let report = reviews(&state, &actor, query).await?;
    let person_id = report.person.id;
    let bytes = render(report, super::pdf::medication_reviews).await?;
    audited(&state, &actor, Kind::MedicationReviews, "pdf", person_id).await?;
    Ok(pdf_response(bytes, "medication_reviews"))
}
