//! Medication handlers.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, patch, post, put};

use super::inventory;
use super::model::{AdjustmentBody, Medication, MedicationBody, OrderBody, ReceiptBody};
use crate::auth::Actor;
use crate::domain::IfMatch;
use crate::error::Result;
use crate::http::extract::{ApiJson, OptionalApiJson, PathId};
use crate::http::openapi::{Api, Op};
use crate::http::query::{Paged, Since};
use crate::http::replace::{ReplaceJson, Whole};
use crate::http::respond::{self, Rendered};
use crate::medicine::forecast::PlannedUse;
use crate::state::AppState;

const TAG: &str = "Medications";
const COLLECTION: &str = "/households/{household_id}/medications";
const MEMBER: &str = "/households/{household_id}/medications/{id}";

const WRITERS: &str =
    "Needs the inventory management permission (owners and administrators hold it).";

pub fn routes(api: Api) -> Api {
    api
        .route(
            Op::get(COLLECTION, "listMedications", TAG)
                .summary("List the household's medications")
                .paginated()
                .query_params::<Since>()
                .page::<Medication>(),
            get(list),
        )
        .route(
            Op::post(COLLECTION, "createMedication", TAG)
                .summary("Add a medication")
                .description(WRITERS)
                .create_body::<MedicationBody>("MedicationCreateRequest", &["name"])
                .created::<Medication>()
                .etag(),
            post(create),
        )
        .route(
            Op::get(MEMBER, "getMedication", TAG)
                .summary("Get a medication")
                .ok::<Medication>()
                .etag(),
            get(show),
        )
        .route(
            Op::patch(MEMBER, "updateMedication", TAG)
                .summary("Change some attributes of a medication")
                .description(WRITERS)
                .body::<MedicationBody>()
                .if_match()
                .ok::<Medication>()
                .etag(),
            patch(update),
        )
        .route(
            Op::put(MEMBER, "replaceMedication", TAG)
                .summary("Replace a medication's attributes")
                .description("The whole medication: every attribute except current_supply is required (null clears an optional one); a missing one is a 422 naming it. An omitted current_supply keeps the stock count, which has its own operations. Needs the inventory management permission.")
                .create_body::<MedicationBody>("MedicationReplaceRequest", MedicationBody::FIELDS)
                .if_match()
                .ok::<Medication>()
                .etag(),
            put(replace),
        )
        .route(
            Op::delete(MEMBER, "deleteMedication", TAG)
                .summary("Remove a medication from the household")
                .description("Past takes and stock history that name it are kept. Refused with 409 while an active schedule or assignment uses it. Needs the inventory management permission.")
                .if_match()
                .no_content(),
            delete(remove),
        )
        .route(
            Op::patch("/households/{household_id}/medications/{id}/adjust_inventory", "adjustMedicationInventory", TAG)
                .summary("Set the stock to a counted quantity")
                .description(WRITERS)
                .body::<AdjustmentBody>()
                .if_match()
                .ok::<Medication>()
                .etag(),
            patch(adjust_inventory),
        )
        .route(
            Op::patch("/households/{household_id}/medications/{id}/mark_as_ordered", "markMedicationAsOrdered", TAG)
                .summary("Record that more has been ordered")
                .description("While an order is outstanding (reorder_status ordered) a repeated order amends it, never adds a second: each field sent replaces the recorded one (quantity is the whole amount still expected, so a retry never counts twice; null clears a field) and fields not sent are kept, reorder_ordered_at included. After a receipt closed the last order (or before any) an order starts afresh. Needs the inventory management permission.")
                .body_optional::<OrderBody>()
                .if_match()
                .ok::<Medication>()
                .etag(),
            patch(mark_as_ordered),
        )
        .route(
            Op::patch("/households/{household_id}/medications/{id}/mark_as_received", "markMedicationAsReceived", TAG)
                .summary("Record a delivery and add it to the stock")
                .description("order_details.quantity is added to current_supply; without it, the quantity still outstanding on the open order is received. With neither (nothing on order, or an order without a quantity) it is a 409 no_order_quantity: a receipt never repeats an earlier one. A delivery short of the outstanding quantity leaves the rest on order (reorder_status stays ordered, reorder_quantity becomes what is still expected); one that covers it closes the order (reorder_status received, reorder_quantity the quantity of this delivery). A result above 999999999999.999999 is a 422 naming quantity and changes nothing. Needs the inventory management permission.")
                .body_optional::<ReceiptBody>()
                .if_match()
                .ok::<Medication>()
                .etag(),
            patch(mark_as_received),
        )
}

async fn list(
    State(state): State<AppState>,
    actor: Actor,
    Paged(page, since): Paged<Since>,
) -> Result<Response> {
    let plan = state.part::<dyn PlannedUse>().clone();
    let since = since.at();
    let household = actor.household_id;
    let rendered = state
        .db
        .read(move |conn| {
            // The stock forecasts in a page are as of today.
            let today = crate::household::store::today(conn, household)?;
            Rendered::kept(conn, (household, today, since.clone(), page), || {
                let (items, total) = super::list(conn, &actor, &*plan, since.as_deref(), page)?;
                Rendered::collection(items, page, total)
            })
        })
        .await?;
    Ok(rendered.into_response())
}

async fn create(
    State(state): State<AppState>,
    actor: Actor,
    ApiJson(body): ApiJson<MedicationBody>,
) -> Result<Response> {
    let plan = state.part::<dyn PlannedUse>().clone();
    let medication = state
        .db
        .write(move |conn| super::create(conn, &actor, &*plan, body.medication))
        .await?;
    Ok(respond::created_tagged(medication))
}

async fn show(State(state): State<AppState>, actor: Actor, PathId(id): PathId) -> Result<Response> {
    let plan = state.part::<dyn PlannedUse>().clone();
    let household = actor.household_id;
    let rendered = state.db.read_here(|conn| {
        let today = crate::household::store::today(conn, household)?;
        Rendered::kept(conn, (household, today, id.clone()), || {
            Rendered::ok_tagged(super::get(conn, &actor, &*plan, &id)?)
        })
    })?;
    Ok(rendered.into_response())
}

async fn update(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    ApiJson(body): ApiJson<MedicationBody>,
) -> Result<Response> {
    let plan = state.part::<dyn PlannedUse>().clone();
    let medication = state
        .db
        .write(move |conn| super::update(conn, &actor, &*plan, &id, &if_match, body.medication))
        .await?;
    Ok(respond::ok_tagged(medication))
}

async fn replace(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    ReplaceJson(body): ReplaceJson<MedicationBody>,
) -> Result<Response> {
    let plan = state.part::<dyn PlannedUse>().clone();
    let medication = state
        .db
        .write(move |conn| super::replace(conn, &actor, &*plan, &id, &if_match, body.medication))
        .await?;
    Ok(respond::ok_tagged(medication))
}

async fn remove(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
) -> Result<Response> {
    let plan = state.part::<dyn PlannedUse>().clone();
    state
        .db
        .write(move |conn| super::delete(conn, &actor, &*plan, &id, &if_match))
        .await?;
    Ok(respond::no_content())
}

async fn adjust_inventory(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    ApiJson(body): ApiJson<AdjustmentBody>,
) -> Result<Response> {
    let plan = state.part::<dyn PlannedUse>().clone();
    let medication = state
        .db
        .write(move |conn| {
            inventory::adjust_inventory(conn, &actor, &*plan, &id, &if_match, body.adjustment)
        })
        .await?;
    Ok(respond::ok_tagged(medication))
}

async fn mark_as_ordered(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    OptionalApiJson(body): OptionalApiJson<OrderBody>,
) -> Result<Response> {
    let plan = state.part::<dyn PlannedUse>().clone();
    let details = body.unwrap_or_default().order_details;
    let medication = state
        .db
        .write(move |conn| {
            inventory::mark_as_ordered(conn, &actor, &*plan, &id, &if_match, details)
        })
        .await?;
    Ok(respond::ok_tagged(medication))
}

async fn mark_as_received(
    State(state): State<AppState>,
    actor: Actor,
    PathId(id): PathId,
    if_match: IfMatch,
    OptionalApiJson(body): OptionalApiJson<ReceiptBody>,
) -> Result<Response> {
    let plan = state.part::<dyn PlannedUse>().clone();
    let details = body.unwrap_or_default().order_details;
    let medication = state
        .db
        .write(move |conn| {
            inventory::mark_as_received(conn, &actor, &*plan, &id, &if_match, details)
        })
        .await?;
    Ok(respond::ok_tagged(medication))
}
