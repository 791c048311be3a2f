//! Stock removal handlers.

use axum::extract::{FromRequestParts, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::Value;

use super::model::{StockRemoval, StockRemovalBody};
use crate::auth::Actor;
use crate::db::idempotency::SavedResponse;
use crate::domain::ResourceId;
use crate::domain::body::typed;
use crate::error::{ApiError, Result};
use crate::http::extract::{ApiJson, raw_param};
use crate::http::openapi::{Api, Op};
use crate::http::query::Paged;
use crate::http::replay::Idempotent;
use crate::http::respond;
use crate::state::AppState;

const TAG: &str = "Stock removals";
const COLLECTION: &str = "/households/{household_id}/medications/{medication_id}/stock_removals";

/// The operation description, which also documents the supported reasons;
/// a unit test keeps it in step with `StockRemovalReason::ALL`.
const CREATE_DESCRIPTION: &str = "Records stock that left other than as a dose (it is not a \
medication take) and decrements the medication's current_supply by quantity, exactly, in the same \
transaction; with dosage_id, the stock of that dosage option (which must belong to this medication \
and track its own stock) is decremented instead. A removal that would take the stock below zero is \
refused with 422 and changes nothing. submission_id is chosen by the client once per intended \
removal: repeating it for this medication with the same quantity, reason, note and dosage_id \
returns the saved removal (201, same body) without another decrement; repeating it with different \
facts is refused with 409 submission_id_reused. With an Idempotency-Key, an identical retry gets \
the saved response as well. Needs the inventory management permission, checked again before a \
repeated submission or a saved response is answered. Each new removal writes a \
medication.stock_removed audit event (without the note). Supported reasons: `expired` (past its \
use-by date), `damaged` (broken, spoiled or contaminated), `lost` (missing or mislaid), \
`disposed` (thrown away or destroyed for another reason), `returned_to_pharmacy` (handed back for \
disposal or credit), `other` (say why in the note); the capability document lists them under \
inventory.stock_removal_reasons.";

pub fn routes(api: Api) -> Api {
    api.route(
        Op::get(COLLECTION, "listStockRemovals", TAG)
            .summary("List a medication's stock removals, newest first")
            .description(
                "Needs the inventory management permission (owners and administrators hold it).",
            )
            .paginated()
            .page::<StockRemoval>(),
        get(list),
    )
    .route(
        Op::post(COLLECTION, "createStockRemoval", TAG)
            .summary("Remove stock that left other than as a dose")
            .description(CREATE_DESCRIPTION)
            .body::<StockRemovalBody>()
            .idempotency_key()
            .created::<StockRemoval>()
            .errors(&[409]),
        post(create),
    )
}

/// `{medication_id}` as a numeric or portable id; anything else names no medication (404).
pub struct MedicationPathId(pub ResourceId);

impl<S: Send + Sync> FromRequestParts<S> for MedicationPathId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self> {
        let raw = raw_param(parts, state, "medication_id").await?;
        ResourceId::parse(&raw)
            .map(MedicationPathId)
            .ok_or_else(|| ApiError::not_found("medication"))
    }
}

async fn list(
    State(state): State<AppState>,
    actor: Actor,
    MedicationPathId(medication_id): MedicationPathId,
    Paged(page, _): Paged,
) -> Result<Response> {
    let (items, total) = state
        .db
        .read(move |conn| super::list(conn, &actor, &medication_id, page))
        .await?;
    Ok(respond::collection(items, page, total))
}

async fn create(
    State(state): State<AppState>,
    actor: Actor,
    MedicationPathId(medication_id): MedicationPathId,
    request: Idempotent,
    ApiJson(body): ApiJson<Value>,
) -> Result<Response> {
    let removal = typed::<StockRemovalBody>(Some(&body))?.stock_removal;
    request
        .write(
            &state.db,
            (actor, medication_id),
            Some(&body),
            |conn, actor, medication_id, _| super::authorize(conn, actor, medication_id).map(drop),
            move |conn, actor, medication_id| {
                let removal = super::create(conn, actor, medication_id, removal)?;
                SavedResponse::data(StatusCode::CREATED, &removal)
            },
        )
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::medicine::vocab::StockRemovalReason;

    #[test]
    fn every_reason_is_documented() {
        for reason in StockRemovalReason::ALL {
            let named = format!("`{reason}`");
            assert!(
                CREATE_DESCRIPTION.contains(&named),
                "{reason} missing from the operation description"
            );
        }
    }
}
