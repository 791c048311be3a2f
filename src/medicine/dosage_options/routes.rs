//! Dosage option handlers.

use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, patch, post, put};
use schemars::JsonSchema;
use serde::Deserialize;

use super::model::{DosageOptionBody, DosageOptionView};
use crate::auth::Actor;
use crate::domain::IfMatch;
use crate::error::Result;
use crate::http::extract::{ApiJson, PathId};
use crate::http::openapi::{Api, Op};
use crate::http::query::{At, Paged, Reference, at, reference};
use crate::http::replace::{ReplaceJson, Whole};
use crate::http::respond;
use crate::medicine::forecast::PlannedUse;
use crate::state::AppState;

const TAG: &str = "Dosage options";
const COLLECTION: &str = "/households/{household_id}/dosage_options";
const MEMBER: &str = "/households/{household_id}/dosage_options/{id}";

const WRITERS: &str = "Needs the inventory management permission (owners and administrators hold it). medication_id cannot change.";

pub fn routes(api: Api) -> Api {
    api
        .route(
            Op::get(COLLECTION, "listDosageOptions", TAG)
                .summary("List the household's dosage options")
                .description("In id order; only options of medications that have not been deleted.")
                .paginated()
                .query_params::<ListQuery>()
                .page::<DosageOptionView>(),
            get(list),
        )
        .route(
            Op::post(COLLECTION, "createDosageOption", TAG)
                .summary("Add a dosage option to a medication")
                .description("A non-null current_supply makes the option keep its own stock (a tracked dosage stock source). Needs the inventory management permission (owners and administrators hold it).")
                .create_body::<DosageOptionBody>(
                    "DosageOptionCreateRequest",
                    &["medication_id", "amount", "unit"],
                )
                .created::<DosageOptionView>()
                .etag(),
            post(create),
        )
        .route(
            Op::get(MEMBER, "getDosageOption", TAG)
                .summary("Get a dosage option")
                .ok::<DosageOptionView>()
                .etag(),
            get(show),
        )
        .route(
            Op::patch(MEMBER, "updateDosageOption", TAG)
                .summary("Change some attributes of a dosage option")
                .description(WRITERS)
                .body::<DosageOptionBody>()
                .if_match()
                .ok::<DosageOptionView>()
                .etag(),
            patch(update),
        )
        .route(
            Op::put(MEMBER, "replaceDosageOption", TAG)
                .summary("Replace a dosage option's attributes")
                .description("The whole option: every attribute except medication_id is required (null clears an optional one), current_supply included; a missing one is a 422 naming it. medication_id cannot change. Needs the inventory management permission.")
                .create_body::<DosageOptionBody>("DosageOptionReplaceRequest", DosageOptionBody::FIELDS)
                .if_match()
                .ok::<DosageOptionView>()
                .etag(),
            put(replace),
        )
}

/// The filters of a list of dosage options.
#[derive(Deserialize, JsonSchema)]
struct ListQuery {
    /// Only records updated at or after this time
    updated_since: Option<At>,
    /// Only the options of this medication (numeric or portable id)
    medication_id: Option<Reference>,
}

async fn list(
    State(state): State<AppState>,
    actor: Actor,
    Paged(page, query): Paged<ListQuery>,
) -> Result<Response> {
    let plan = state.part::<dyn PlannedUse>().clone();
    let since = at(query.updated_since);
    let medication = reference(query.medication_id);
    let (items, total) = state
        .db
        .read(move |conn| {
            super::list(
                conn,
                &actor,
                &*plan,
                medication.as_ref(),
                since.as_deref(),
                page,
            )
        })
        .await?;
    Ok(respond::collection(items, page, total))
}

async fn create(
    State(state): State<AppState>,
    actor: Actor,
    ApiJson(body): ApiJson<DosageOptionBody>,
) -> Result<Response> {
    let plan = state.part::<dyn PlannedUse>().clone();
    let option = state
        .db
        .write(move |conn| super::create(conn, &actor, &*plan, body.dosage_option))
        .await?;
    Ok(respond::created_tagged(option))
}

async fn show(State(state): State<AppState>, actor: Actor, PathId(id): PathId) -> Result<Response> {
    let plan = state.part::<dyn PlannedUse>().clone();
    let option = state
        .db
        .read_here(|conn| super::get(conn, &actor, &*plan, &id))?;
    Ok(respond::ok_tagged(option))
}

async fn update(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    ApiJson(body): ApiJson<DosageOptionBody>,
) -> Result<Response> {
    let plan = state.part::<dyn PlannedUse>().clone();
    let option = state
        .db
        .write(move |conn| super::update(conn, &actor, &*plan, &id, &if_match, body.dosage_option))
        .await?;
    Ok(respond::ok_tagged(option))
}

async fn replace(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    ReplaceJson(body): ReplaceJson<DosageOptionBody>,
) -> Result<Response> {
    let plan = state.part::<dyn PlannedUse>().clone();
    let option = state
        .db
        .write(move |conn| super::replace(conn, &actor, &*plan, &id, &if_match, body.dosage_option))
        .await?;
    Ok(respond::ok_tagged(option))
}
