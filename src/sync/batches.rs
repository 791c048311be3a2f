//! `createSyncBatch`: a phone's offline queue of writes, applied in order in
//! one transaction by calling the same rule functions the REST handlers use
//! (one rule per mutation, whichever adapter calls it).
//!
//! - Every (resource_type, action) pair is looked up in the operation
//!   table ([`OPERATIONS`](super::batches_ops::OPERATIONS)) before anything
//!   is written: an unsupported pair is a 422 `sync_operation_unsupported`.
//! - Any failing operation aborts the batch; the closure's `Err` rolls back
//!   every write of the batch (records, stock, audit, change feed).
//! - A stale `if_match` is a 409 `sync_conflict`; a missing one on update,
//!   delete, close, pause, resume and the inventory actions a 428.
//! - Errors name the failing operation's index and never echo submitted
//!   values.
//! - With an `Idempotency-Key` an identical replay gets the saved response
//!   (see `db::idempotency`). Before a replay the actor is re-resolved by
//!   the `Actor` extractor (credential live, membership active, in this
//!   household), and each saved result is checked again by its table row's
//!   `authorize`, the permission check its rule made (as REST replays call
//!   their rule's authorize function): 404 out of scope, 403 too little.

use crate::db::WriteTx;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use rusqlite::Connection;
use serde_json::{Value, json};

use super::batches_model::{BatchBody, BatchResult, Operation, OperationResult};
use super::batches_ops::{self, OperationKind, Replayed};
use super::batches_step::Step;
use crate::auth::Actor;
use crate::db::idempotency::SavedResponse;
use crate::domain::body::typed;
use crate::error::{ApiError, FieldErrors, Result};
use crate::http::extract::ApiJson;
use crate::http::openapi::{Api, Op};
use crate::http::replay::Idempotent;
use crate::state::AppState;

const TAG: &str = "Sync";
const PATH: &str = "/households/{household_id}/sync/batches";

/// The error code of a pair a batch does not carry.
pub const UNSUPPORTED: &str = "sync_operation_unsupported";
/// The error code of a stale `if_match` inside a batch.
pub const SYNC_CONFLICT: &str = "sync_conflict";

pub fn routes(api: Api) -> Api {
    api.route(
            Op::post(PATH, "createSyncBatch", TAG)
                .summary("Apply a batch of queued offline writes in one transaction")
                .description("Applies batch.operations (1 to 200) in submitted order inside one transaction, each through the same rule as its REST endpoint (same permissions, validation, audit and change-feed entries). Supported pairs are listed in the capability document's sync.operations. Behavioural rules that take precedence over the formal schema: create operations carry no id and no if_match; update, delete, adjust_inventory, mark_as_ordered, mark_as_received, pause, resume and close need id and the record's latest ETag in if_match (missing: 428 precondition_required; stale: 409 sync_conflict); close, pause, resume and delete carry empty (or no) attributes; remove_stock carries the medication's id, attributes quantity (decimal string), reason, submission_id and optional note and dosage_id (the dosage option's portable or numeric id), and no if_match, and its result (record_type StockRemoval, naming the removal) carries the medication's new ETag as etag; medication_pause_period close takes the period's portable id. attributes are the resource's fields as in its REST request body, without the wrapping key; decimals are strings and references are portable ids or string database ids. References to results of earlier operations of the same batch are not supported. An unsupported pair is refused with 422 sync_operation_unsupported before anything is written. Any failing operation rolls back the whole batch; the error message names the failing operation's index and never repeats submitted values. Results hold index, action, record_type, record_id (string), record_portable_id and, except for deletes, the record's new etag; pause-period results also hold replayed. medication_dose_occurrence create records outcome not_taken for an expected dose of a routine schedule or assignment (attributes source_type, source_id, occurrence_key from listDoseOccurrences, outcome not_taken, optional reason and note; never changes stock; the same decision again returns the saved outcome; a dose already taken or otherwise resolved is a 409 dose_outcome_conflict); its update takes the outcome's portable id, if_match and attributes {outcome: open} only, and needs manage access.")
                .body::<BatchBody>()
                .idempotency_key()
                .created::<BatchResult>()
                .errors(&[403, 404, 409, 422, 428]),
            post(create),
        )
}

fn unsupported_response(index: usize) -> Response {
    let body = json!({"error": {
        "code": UNSUPPORTED,
        "message": format!("operation {index}: this resource_type and action pair is not supported in a sync batch; see sync.operations in the capability document"),
        "request_id": crate::domain::request_id::current(),
    }});
    (StatusCode::UNPROCESSABLE_ENTITY, Json(body)).into_response()
}

async fn create(
    State(state): State<AppState>,
    actor: Actor,
    request: Idempotent,
    ApiJson(body): ApiJson<Value>,
) -> Result<Response> {
    let batch: BatchBody = typed(Some(&body))?;
    let operations = batch.batch.operations.into_inner();
    let mut queued = Vec::with_capacity(operations.len());
    for (index, op) in operations.into_iter().enumerate() {
        match batches_ops::find(&op.resource_type, &op.action) {
            Some(kind) => queued.push((kind, op)),
            None => return Ok(unsupported_response(index)),
        }
    }
    request
        .write(
            &state.db,
            (actor, queued),
            Some(&body),
            // Each operation's rule checks a fresh batch; a replay is
            // checked result by result.
            |conn, actor, queued, saved| recheck_replay(conn, actor, queued, &saved.body),
            |conn, actor, queued| apply_all(conn, actor, queued),
        )
        .await
}

/// An operation of the batch with the row of the operation table it is.
type Queued = (&'static OperationKind, Operation);

/// Applies every operation in order through its rule; the first failure is
/// the batch's error.
fn apply_all(conn: &WriteTx, actor: &Actor, queued: &[Queued]) -> Result<SavedResponse> {
    let mut results: Vec<OperationResult> = Vec::with_capacity(queued.len());
    for (index, (kind, op)) in queued.iter().enumerate() {
        let step = Step {
            conn,
            actor,
            index,
            op,
            record_type: kind.record_type,
        };
        results.push((kind.apply)(&step).map_err(|e| at_operation(index, e))?);
    }
    let body = serde_json::to_string(&json!({"data": BatchResult { applied: true, results }}))
        .map_err(ApiError::internal)?;
    Ok(SavedResponse {
        status: StatusCode::CREATED.as_u16(),
        body,
        etag: None,
    })
}

/// Before a saved batch response is replayed, every result's authority is
/// checked again as it stands now: a member whose grant was lowered or
/// revoked, or whose inventory or location permission was withdrawn, gets
/// the error the operation itself would give (404 out of scope, 403 too
/// little), never the saved results.
fn recheck_replay(conn: &Connection, actor: &Actor, queued: &[Queued], body: &str) -> Result<()> {
    let saved: Value = serde_json::from_str(body).map_err(ApiError::internal)?;
    let results = saved["data"]["results"].as_array().map(Vec::as_slice);
    // The fingerprint matched, so the saved results are those of these
    // operations, in order.
    for ((kind, op), result) in queued.iter().zip(results.unwrap_or_default()) {
        let replayed = Replayed {
            op,
            record_portable_id: result["record_portable_id"].as_str().unwrap_or_default(),
        };
        (kind.authorize)(conn, actor, &replayed)?;
    }
    Ok(())
}

/// Names the failing operation in an error, and turns a stale ETag into the
/// batch's `sync_conflict`.
fn at_operation(index: usize, err: ApiError) -> ApiError {
    match err {
        ApiError::StaleEtag => ApiError::conflict(
            SYNC_CONFLICT,
            format!(
                "operation {index}: the record has changed since it was read; reload it and retry with its new ETag (nothing in this batch was applied)"
            ),
        ),
        ApiError::Conflict { code, message } => ApiError::Conflict {
            code,
            message: format!("operation {index}: {message}"),
        },
        ApiError::Validation { message, errors } => {
            let errors: FieldErrors = errors
                .into_iter()
                .map(|(field, messages)| (format!("operations[{index}].{field}"), messages))
                .collect();
            ApiError::Validation {
                message: format!("operation {index}: {message}"),
                errors,
            }
        }
        ApiError::PreconditionRequired(message) => {
            ApiError::PreconditionRequired(format!("operation {index}: {message}"))
        }
        ApiError::NotFound(message) => ApiError::NotFound(format!("operation {index}: {message}")),
        ApiError::Forbidden(message) => {
            ApiError::Forbidden(format!("operation {index}: {message}"))
        }
        other => other,
    }
}
