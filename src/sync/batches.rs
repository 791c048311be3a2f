//! `createSyncBatch`: a phone's offline queue of writes, applied in order in
//! one transaction by calling the same rule functions the REST handlers use
//! (DESIGN.md "one rule per mutation").
//!
//! - Every (resource_type, action) pair is checked against
//!   [`SUPPORTED`](super::batches_model::SUPPORTED) before anything is
//!   written: an unsupported pair is a 422 `sync_operation_unsupported`.
//! - Any failing operation aborts the batch; the closure's `Err` rolls back
//!   every write of the batch (records, stock, audit, change feed).
//! - A stale `if_match` is a 409 `sync_conflict`; a missing one on update,
//!   delete, close, pause, resume and the inventory actions a 428.
//! - Errors name the failing operation's index and never echo submitted
//!   values.
//! - With an `Idempotency-Key` an identical replay gets the saved response
//!   (see `db::idempotency`). Before a replay the actor is re-resolved by
//!   the `Actor` extractor (credential live, membership active, in this
//!   household), the batch's pairs are re-checked, and the caller must
//!   still be able to view every person the saved results touch (person
//!   results, and the person of each person-scoped record that still
//!   exists); otherwise 404, as a direct read would answer.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use rusqlite::Connection;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::batches_model::{
    BatchBody, MAX_OPERATIONS, Operation, OperationResult, batch_request_schema,
    batch_result_schema, operation_schema, supported,
};
use super::batches_store;
use crate::auth::Actor;
use crate::auth::access::{self, AccessLevel};
use crate::care::dose_occurrences::outcomes as dose_outcomes;
use crate::care::{
    health_events, medication_takes, pause_periods, person_medications, schedules, sources,
};
use crate::db::idempotency::{self, Replay, SavedResponse};
use crate::domain::{IfMatch, ResourceId, Versioned};
use crate::error::{ApiError, FieldErrors, Result};
use crate::household::{locations, people};
use crate::http::extract::{ApiJson, IdempotencyKey, typed};
use crate::http::openapi::{Api, Op};
use crate::medicine::{dosage_options, medications, stock_removals};
use crate::state::AppState;

const TAG: &str = "Sync";
const PATH: &str = "/households/{household_id}/sync/batches";

/// The error code of a pair a batch does not carry.
pub const UNSUPPORTED: &str = "sync_operation_unsupported";
/// The error code of a stale `if_match` inside a batch.
pub const SYNC_CONFLICT: &str = "sync_conflict";

pub fn routes(api: Api) -> Api {
    api.schema("SyncOperation", operation_schema())
        .schema("SyncBatchRequest", batch_request_schema())
        .single_schema("SyncBatchResult", batch_result_schema())
        .route(
            Op::post(PATH, "createSyncBatch", TAG)
                .summary("Apply a batch of queued offline writes in one transaction")
                .description("Applies batch.operations (1 to 200) in submitted order inside one transaction, each through the same rule as its REST endpoint (same permissions, validation, audit and change-feed entries). Supported pairs are listed in the capability document's sync.operations. Behavioural rules that take precedence over the formal schema: create operations carry no id and no if_match; update, delete, adjust_inventory, mark_as_ordered, mark_as_received, pause, resume and close need id and the record's latest ETag in if_match (missing: 428 precondition_required; stale: 409 sync_conflict); close, pause, resume and delete carry empty (or no) attributes; remove_stock carries the medication's id, attributes quantity (decimal string), reason, submission_id and optional note and dosage_id (the dosage option's portable or numeric id), and no if_match, and its result (record_type StockRemoval, naming the removal) carries the medication's new ETag as etag; medication_pause_period close takes the period's portable id. attributes are the resource's fields as in its REST request body, without the wrapping key; decimals are strings and references are portable ids or string database ids. References to results of earlier operations of the same batch are not supported. An unsupported pair is refused with 422 sync_operation_unsupported before anything is written. Any failing operation rolls back the whole batch; the error message names the failing operation's index and never repeats submitted values. Results hold index, action, record_type, record_id (string), record_portable_id and, except for deletes, the record's new etag; pause-period results also hold replayed. medication_dose_occurrence create records outcome not_taken for an expected dose of a routine schedule or assignment (attributes source_type, source_id, occurrence_key from listDoseOccurrences, outcome not_taken, optional reason and note; never changes stock; the same decision again returns the saved outcome; a dose already taken or otherwise resolved is a 409 dose_outcome_conflict); its update takes the outcome's portable id, if_match and attributes {outcome: open} only, and needs manage access.")
                .body("SyncBatchRequest")
                .idempotency_key()
                .created("SyncBatchResultResponse")
                .errors(&[403, 404, 409, 422, 428]),
            post(create),
        )
}

fn unsupported_response(index: usize) -> Response {
    let body = json!({"error": {
        "code": UNSUPPORTED,
        "message": format!("operation {index}: this resource_type and action pair is not supported in a sync batch; see sync.operations in the capability document"),
        "request_id": crate::http::request_id::current(),
    }});
    (StatusCode::UNPROCESSABLE_ENTITY, Json(body)).into_response()
}

async fn create(
    State(state): State<AppState>,
    actor: Actor,
    IdempotencyKey(key): IdempotencyKey,
    uri: Uri,
    ApiJson(body): ApiJson<Value>,
) -> Result<Response> {
    let replay = Replay::new(key, "POST", uri.path(), Some(&body));
    let batch: BatchBody = typed(Some(&body))?;
    let operations = batch.batch.operations;
    if operations.is_empty() || operations.len() > MAX_OPERATIONS {
        return Err(ApiError::invalid(
            "batch.operations",
            format!("must hold 1 to {MAX_OPERATIONS} operations"),
        ));
    }
    if let Some(index) = operations
        .iter()
        .position(|op| !supported(&op.resource_type, &op.action))
    {
        return Ok(unsupported_response(index));
    }
    let saved = state
        .db
        .write(move |conn| {
            idempotency::run(
                conn,
                &actor,
                &replay,
                // Each operation's rule checks a fresh batch; a replay is
                // checked result by result.
                |conn, saved| recheck_replay(conn, &actor, &saved.body),
                |conn| apply_all(conn, &actor, &operations),
            )
        })
        .await?;
    Ok(saved.into_response())
}

/// Applies every operation in order; the first failure is the batch's error.
fn apply_all(conn: &Connection, actor: &Actor, operations: &[Operation]) -> Result<SavedResponse> {
    let mut results = Vec::with_capacity(operations.len());
    for (index, op) in operations.iter().enumerate() {
        results.push(apply(conn, actor, index, op).map_err(|e| at_operation(index, e))?);
    }
    let body = serde_json::to_string(&json!({"data": {"applied": true, "results": results}}))
        .map_err(ApiError::internal)?;
    Ok(SavedResponse {
        status: StatusCode::CREATED.as_u16(),
        body,
        etag: None,
    })
}

/// What a caller must still hold for a saved result to be replayed: the
/// authority its operation's rule checked when it ran.
enum Authority {
    /// Nothing beyond membership (no record type of the table below).
    Member,
    Inventory,
    Locations,
    /// This access to the person of the record, found in `table` (whose
    /// person is in `column`).
    Person {
        level: AccessLevel,
        table: &'static str,
        column: &'static str,
    },
}

fn authority(record_type: &str, action: &str) -> Authority {
    let person = |level, table| Authority::Person {
        level,
        table,
        column: "person_id",
    };
    match (record_type, action) {
        ("Location", _) => Authority::Locations,
        ("Medication" | "MedicationDosageOption" | "StockRemoval", _) => Authority::Inventory,
        ("Person", action) => Authority::Person {
            level: if action == "create" {
                AccessLevel::View
            } else {
                people::WRITE_LEVEL
            },
            table: "people",
            column: "id",
        },
        ("HealthEvent", _) => person(health_events::WRITE_LEVEL, "health_events"),
        ("Schedule", _) => person(sources::WRITE_LEVEL, "schedules"),
        ("PersonMedication", _) => person(sources::WRITE_LEVEL, "person_medications"),
        ("MedicationPausePeriod", _) => {
            person(pause_periods::WRITE_LEVEL, "medication_pause_periods")
        }
        ("MedicationTake", _) => person(medication_takes::WRITE_LEVEL, "medication_takes"),
        (dose_outcomes::RECORD_TYPE, "create") => {
            person(dose_outcomes::RECORD_LEVEL, "dose_occurrences")
        }
        (dose_outcomes::RECORD_TYPE, _) => person(dose_outcomes::REOPEN_LEVEL, "dose_occurrences"),
        _ => Authority::Member,
    }
}

/// Before a saved batch response is replayed, every result's authority is
/// checked again as it stands now: a member whose grant was lowered or
/// revoked, or whose inventory or location permission was withdrawn, gets
/// the error the operation itself would give (404 out of scope, 403 too
/// little), never the saved results.
fn recheck_replay(conn: &Connection, actor: &Actor, body: &str) -> Result<()> {
    let saved: Value = serde_json::from_str(body).map_err(ApiError::internal)?;
    let results = saved["data"]["results"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for result in results {
        let record_type = result["record_type"].as_str().unwrap_or_default();
        let action = result["action"].as_str().unwrap_or_default();
        match authority(record_type, action) {
            Authority::Member => {}
            Authority::Inventory => access::require_inventory(actor)?,
            Authority::Locations => locations::require_location_manager(actor)?,
            Authority::Person {
                level,
                table,
                column,
            } => {
                let portable_id = result["record_portable_id"].as_str().unwrap_or_default();
                // A record gone since names nobody whose access could be
                // checked, so nothing is replayed.
                let person =
                    batches_store::person_of(conn, actor.household_id, table, column, portable_id)?
                        .ok_or_else(|| ApiError::not_found("record"))?;
                access::require_person(conn, actor, person, level)?;
            }
        }
    }
    Ok(())
}

/// Names the failing operation in an error, and turns a stale ETag into the
/// batch's `sync_conflict`.
fn at_operation(index: usize, err: ApiError) -> ApiError {
    match err {
        ApiError::Conflict {
            code: "edit_conflict",
            ..
        } => ApiError::conflict(
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

/// The operation's attributes as the resource's attribute struct, with the
/// same 422s as a REST body (absent attributes are `{}`).
fn attributes<T: DeserializeOwned>(op: &Operation) -> Result<T> {
    typed(op.attributes.as_ref()).map_err(|e| match e {
        ApiError::Validation { message, errors } => ApiError::Validation {
            message: format!("attributes: {message}"),
            errors: errors
                .into_iter()
                .map(|(field, messages)| (format!("attributes.{field}"), messages))
                .collect(),
        },
        other => other,
    })
}

/// Close, pause, resume and delete carry no attributes (or `{}`).
fn no_attributes(op: &Operation) -> Result<()> {
    match &op.attributes {
        None => Ok(()),
        Some(Value::Object(map)) if map.is_empty() => Ok(()),
        Some(_) => Err(ApiError::invalid(
            "attributes",
            "must be empty for this action",
        )),
    }
}

/// A create carries neither id nor if_match.
fn for_create(op: &Operation) -> Result<()> {
    if op.id.is_some() {
        return Err(ApiError::invalid("id", "must be left out of a create"));
    }
    if op.if_match.is_some() {
        return Err(ApiError::invalid(
            "if_match",
            "must be left out of a create",
        ));
    }
    Ok(())
}

/// The target of a change: its id, and its ETag (missing → 428).
fn for_change(op: &Operation) -> Result<(&ResourceId, IfMatch)> {
    let id = op
        .id
        .as_ref()
        .ok_or_else(|| ApiError::invalid("id", "is required for this action"))?;
    let if_match = op.if_match.clone().ok_or_else(|| {
        ApiError::PreconditionRequired(
            "this action needs the record's current ETag in if_match".into(),
        )
    })?;
    Ok((id, IfMatch(Some(if_match))))
}

fn id_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

/// A result naming `record` (its `id` and `portable_id`), with its ETag
/// unless it was deleted.
fn result_for<T: Serialize + Versioned>(
    index: usize,
    op: &Operation,
    record_type: &'static str,
    record: &T,
    deleted: bool,
) -> Result<OperationResult> {
    let value = serde_json::to_value(record).map_err(ApiError::internal)?;
    Ok(OperationResult {
        index,
        action: op.action.clone(),
        record_type,
        record_id: id_text(&value["id"]),
        record_portable_id: id_text(&value["portable_id"]),
        etag: (!deleted).then(|| record.etag()),
        replayed: None,
    })
}

/// One operation on its way through its resource's rule: checks the
/// operation's shape for the kind of action and turns the rule's record
/// into the batch result.
struct Step<'a> {
    index: usize,
    op: &'a Operation,
}

impl Step<'_> {
    fn result<R: Serialize + Versioned>(
        &self,
        record_type: &'static str,
        record: &R,
        deleted: bool,
    ) -> Result<OperationResult> {
        result_for(self.index, self.op, record_type, record, deleted)
    }

    /// A create: no id, no if_match, the resource's attributes.
    fn create<A: DeserializeOwned, R: Serialize + Versioned>(
        &self,
        record_type: &'static str,
        rule: impl FnOnce(A) -> Result<R>,
    ) -> Result<OperationResult> {
        for_create(self.op)?;
        let record = rule(attributes(self.op)?)?;
        self.result(record_type, &record, false)
    }

    /// An update: id, if_match and the resource's attributes.
    fn update<A: DeserializeOwned, R: Serialize + Versioned>(
        &self,
        record_type: &'static str,
        rule: impl FnOnce(&ResourceId, &IfMatch, A) -> Result<R>,
    ) -> Result<OperationResult> {
        let (id, if_match) = for_change(self.op)?;
        let record = rule(id, &if_match, attributes(self.op)?)?;
        self.result(record_type, &record, false)
    }

    /// A change without attributes (pause, resume): id and if_match.
    fn transition<R: Serialize + Versioned>(
        &self,
        record_type: &'static str,
        rule: impl FnOnce(&ResourceId, &IfMatch) -> Result<R>,
    ) -> Result<OperationResult> {
        let (id, if_match) = for_change(self.op)?;
        no_attributes(self.op)?;
        let record = rule(id, &if_match)?;
        self.result(record_type, &record, false)
    }

    /// A delete: id and if_match; the result names the record as it was.
    fn delete<R: Serialize + Versioned>(
        &self,
        record_type: &'static str,
        get: impl FnOnce(&ResourceId) -> Result<R>,
        rule: impl FnOnce(&ResourceId, &IfMatch) -> Result<()>,
    ) -> Result<OperationResult> {
        let (id, if_match) = for_change(self.op)?;
        no_attributes(self.op)?;
        let record = get(id)?;
        rule(id, &if_match)?;
        self.result(record_type, &record, true)
    }
}

/// Applies one operation through its resource's rule.
fn apply(
    conn: &Connection,
    actor: &Actor,
    index: usize,
    op: &Operation,
) -> Result<OperationResult> {
    let step = Step { index, op };
    match (op.resource_type.as_str(), op.action.as_str()) {
        ("location", "create") => step.create("Location", |a| locations::create(conn, actor, a)),
        ("location", "update") => step.update("Location", |id, m, a| {
            locations::update(conn, actor, id, m, a)
        }),
        ("location", "delete") => step.delete(
            "Location",
            |id| locations::get(conn, actor, id),
            |id, m| locations::delete(conn, actor, id, m),
        ),
        ("person", "create") => step.create("Person", |a| people::create(conn, actor, a)),
        ("person", "update") => {
            step.update("Person", |id, m, a| people::update(conn, actor, id, m, a))
        }
        ("medication", "create") => {
            step.create("Medication", |a| medications::create(conn, actor, a))
        }
        ("medication", "update") => step.update("Medication", |id, m, a| {
            medications::update(conn, actor, id, m, a)
        }),
        ("medication", "delete") => step.delete(
            "Medication",
            |id| medications::get(conn, actor, id),
            |id, m| medications::delete(conn, actor, id, m),
        ),
        ("medication", "adjust_inventory") => step.update("Medication", |id, m, a| {
            medications::inventory::adjust_inventory(conn, actor, id, m, a)
        }),
        ("medication", "mark_as_ordered") => step.update("Medication", |id, m, a| {
            medications::inventory::mark_as_ordered(conn, actor, id, m, a)
        }),
        ("medication", "mark_as_received") => step.update("Medication", |id, m, a| {
            medications::inventory::mark_as_received(conn, actor, id, m, a)
        }),
        ("medication", "remove_stock") => {
            let id = op
                .id
                .as_ref()
                .ok_or_else(|| ApiError::invalid("id", "is required for this action"))?;
            if op.if_match.is_some() {
                return Err(ApiError::invalid(
                    "if_match",
                    "must be left out of remove_stock",
                ));
            }
            let removal = stock_removals::create(conn, actor, id, attributes(op)?)?;
            // The medication the operation addressed moved on; its new ETag
            // lets the client's next queued change of it apply.
            let medication = medications::find(conn, actor, id)?;
            Ok(OperationResult {
                index,
                action: op.action.clone(),
                record_type: "StockRemoval",
                record_id: removal.id.to_string(),
                record_portable_id: removal.portable_id,
                etag: Some(crate::domain::etag(
                    &medication.portable_id,
                    medication.lock_version,
                )),
                replayed: None,
            })
        }
        ("medication_dosage_option", "create") => step.create("MedicationDosageOption", |a| {
            dosage_options::create(conn, actor, a)
        }),
        ("medication_dosage_option", "update") => step
            .update("MedicationDosageOption", |id, m, a| {
                dosage_options::update(conn, actor, id, m, a)
            }),
        ("health_event", "create") => {
            step.create("HealthEvent", |a| health_events::create(conn, actor, a))
        }
        ("health_event", "update") => step.update("HealthEvent", |id, m, a| {
            health_events::update(conn, actor, id, m, a)
        }),
        ("health_event", "delete") => step.delete(
            "HealthEvent",
            |id| health_events::get(conn, actor, id),
            |id, m| health_events::delete(conn, actor, id, m),
        ),
        ("schedule", "create") => step.create("Schedule", |a| schedules::create(conn, actor, a)),
        ("schedule", "update") => step.update("Schedule", |id, m, a| {
            schedules::update(conn, actor, id, m, a)
        }),
        ("schedule", "delete") => step.delete(
            "Schedule",
            |id| schedules::get(conn, actor, id),
            |id, m| schedules::delete(conn, actor, id, m),
        ),
        ("schedule", "pause") => {
            step.transition("Schedule", |id, m| schedules::pause(conn, actor, id, m))
        }
        ("schedule", "resume") => {
            step.transition("Schedule", |id, m| schedules::resume(conn, actor, id, m))
        }
        ("person_medication", "create") => step.create("PersonMedication", |a| {
            person_medications::create(conn, actor, a)
        }),
        ("person_medication", "update") => step.update("PersonMedication", |id, m, a| {
            person_medications::update(conn, actor, id, m, a)
        }),
        ("person_medication", "delete") => step.delete(
            "PersonMedication",
            |id| person_medications::get(conn, actor, id),
            |id, m| person_medications::delete(conn, actor, id, m),
        ),
        ("person_medication", "pause") => step.transition("PersonMedication", |id, m| {
            person_medications::pause(conn, actor, id, m)
        }),
        ("person_medication", "resume") => step.transition("PersonMedication", |id, m| {
            person_medications::resume(conn, actor, id, m)
        }),
        ("medication_pause_period", "create") => {
            let mut result = step.create("MedicationPausePeriod", |a| {
                pause_periods::create(conn, actor, &a)
            })?;
            // A pause period is addressed by its portable id.
            result.record_id = result.record_portable_id.clone();
            result.replayed = Some(false);
            Ok(result)
        }
        ("medication_pause_period", "close") => {
            let mut result = step.transition("MedicationPausePeriod", |id, m| {
                let ResourceId::Portable(portable_id) = id else {
                    return Err(ApiError::invalid(
                        "id",
                        "must be the pause period's portable id",
                    ));
                };
                pause_periods::resume(conn, actor, portable_id, m)
            })?;
            result.record_id = result.record_portable_id.clone();
            result.replayed = Some(false);
            Ok(result)
        }
        ("medication_take", "create") => {
            let mut replayed = false;
            let mut result = step.create("MedicationTake", |a| {
                let recorded = medication_takes::create(conn, actor, a)?;
                replayed = recorded.replayed;
                Ok(recorded.take)
            })?;
            result.replayed = Some(replayed);
            Ok(result)
        }
        ("medication_dose_occurrence", "create") => step.create(dose_outcomes::RECORD_TYPE, |a| {
            dose_outcomes::record_not_taken(conn, actor, a)
        }),
        ("medication_dose_occurrence", "update") => step
            .update(dose_outcomes::RECORD_TYPE, |id, m, a| {
                dose_outcomes::reopen(conn, actor, id, m, a)
            }),
        // The pairs were checked before the transaction began.
        _ => Err(ApiError::internal("unchecked sync operation")),
    }
}
