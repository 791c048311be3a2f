//! The one table of what a sync batch may carry. Each row is one
//! resource/action pair: the record type its result names, the rule it
//! calls and the authority a replay of its saved result checks again (the
//! rule's own permission check). The pre-write check of the pairs, the
//! capability document's `sync.operations`, the `SyncOperation` schema and
//! the dispatch are all read from it, so a pair is added in one place.

use rusqlite::Connection;
use serde_json::{Map, Value, json};

use super::batches_model::{Operation, OperationResult};
use super::batches_step::{Step, attributes};
use super::batches_store;
use crate::auth::Actor;
use crate::auth::access::AccessLevel;
use crate::care::dose_occurrences::outcomes as dose_outcomes;
use crate::care::person_medications::model::PersonMedicationRow;
use crate::care::schedules::model::ScheduleRow;
use crate::care::source_row::SourceRow;
use crate::care::sources;
use crate::care::{health_events, medication_takes, pause_periods, person_medications, schedules};
use crate::domain::ResourceId;
use crate::error::{ApiError, Result};
use crate::household::{locations, people};
use crate::medicine::{dosage_options, medications, stock_removals};
use crate::reports::review_prompts;

/// A saved result about to be replayed, with the operation that made it.
pub struct Replayed<'a> {
    pub op: &'a Operation,
    pub record_portable_id: &'a str,
}

impl Replayed<'_> {
    fn record(&self) -> ResourceId {
        ResourceId::Portable(self.record_portable_id.to_string())
    }
}

type Apply = fn(&Step<'_>) -> Result<OperationResult>;
type Authorize = fn(&Connection, &Actor, &Replayed<'_>) -> Result<()>;

/// One resource/action pair a batch applies.
pub struct OperationKind {
    pub resource_type: &'static str,
    pub action: &'static str,
    pub record_type: &'static str,
    /// Applies the operation through its resource's rule.
    pub apply: Apply,
    /// What the caller must still hold for a saved result to be replayed:
    /// the permission check the rule made when it ran.
    pub authorize: Authorize,
}

const fn kind(
    resource_type: &'static str,
    action: &'static str,
    record_type: &'static str,
    apply: Apply,
    authorize: Authorize,
) -> OperationKind {
    OperationKind {
        resource_type,
        action,
        record_type,
        apply,
        authorize,
    }
}

const STOCK_REMOVAL: &str = "StockRemoval";

// One row per pair, read as a table: resource_type, action, record type,
// the rule it applies, the authority a replay checks again.
#[rustfmt::skip]
pub static OPERATIONS: &[OperationKind] = &[
    kind("location", "create", locations::RECORD_TYPE,
        |s| s.create(|a| locations::create(s.conn, s.actor, a)),
        location_manager),
    kind("location", "update", locations::RECORD_TYPE,
        |s| s.update(|id, m, a| locations::update(s.conn, s.actor, id, m, a)),
        location_manager),
    kind("location", "delete", locations::RECORD_TYPE,
        |s| s.delete(|id| locations::get(s.conn, s.actor, id),
                     |id, m| crate::medicine::locations::delete(s.conn, s.actor, id, m)),
        location_manager),
    // The creator's grant on the new person is what a replay needs.
    kind("person", "create", people::RECORD_TYPE,
        |s| s.create(|a| people::create(s.conn, s.actor, a)),
        |c, a, r| people::find_for(c, a, &r.record(), AccessLevel::View).map(drop)),
    kind("person", "update", people::RECORD_TYPE,
        |s| s.update(|id, m, a| people::update(s.conn, s.actor, id, m, a)),
        |c, a, r| people::find_for(c, a, &r.record(), people::WRITE_LEVEL).map(drop)),
    kind("medication", "create", medications::RECORD_TYPE,
        |s| s.create(|a| medications::create(s.conn, s.actor, &crate::care::forecast::CarePlan, a)),
        inventory),
    kind("medication", "update", medications::RECORD_TYPE,
        |s| s.update(|id, m, a| medications::update(s.conn, s.actor, &crate::care::forecast::CarePlan, id, m, a)),
        inventory),
    kind("medication", "delete", medications::RECORD_TYPE,
        |s| s.delete(|id| medications::get(s.conn, s.actor, &crate::care::forecast::CarePlan, id),
                     |id, m| medications::delete(s.conn, s.actor, &crate::care::forecast::CarePlan, id, m)),
        inventory),
    kind("medication", "adjust_inventory", medications::RECORD_TYPE,
        |s| s.update(|id, m, a| medications::inventory::adjust_inventory(s.conn, s.actor, &crate::care::forecast::CarePlan, id, m, a)),
        inventory),
    kind("medication", "mark_as_ordered", medications::RECORD_TYPE,
        |s| s.update(|id, m, a| medications::inventory::mark_as_ordered(s.conn, s.actor, &crate::care::forecast::CarePlan, id, m, a)),
        inventory),
    kind("medication", "mark_as_received", medications::RECORD_TYPE,
        |s| s.update(|id, m, a| medications::inventory::mark_as_received(s.conn, s.actor, &crate::care::forecast::CarePlan, id, m, a)),
        inventory),
    kind("medication", "remove_stock", STOCK_REMOVAL,
        remove_stock,
        |c, a, r| {
            let medication = r.op.id.as_ref().ok_or_else(|| ApiError::not_found("medication"))?;
            stock_removals::authorize(c, a, medication).map(drop)
        }),
    kind("medication_dosage_option", "create", dosage_options::RECORD_TYPE,
        |s| s.create(|a| dosage_options::create(s.conn, s.actor, &crate::care::forecast::CarePlan, a)),
        inventory),
    kind("medication_dosage_option", "update", dosage_options::RECORD_TYPE,
        |s| s.update(|id, m, a| dosage_options::update(s.conn, s.actor, &crate::care::forecast::CarePlan, id, m, a)),
        inventory),
    kind("health_event", "create", health_events::RECORD_TYPE,
        |s| s.create(|a| health_events::create(s.conn, s.actor, a)),
        health_event),
    kind("health_event", "update", health_events::RECORD_TYPE,
        |s| s.update(|id, m, a| health_events::update(s.conn, s.actor, id, m, a)),
        health_event),
    kind("health_event", "delete", health_events::RECORD_TYPE,
        |s| s.delete(|id| health_events::get(s.conn, s.actor, id),
                     |id, m| health_events::delete(s.conn, s.actor, id, m)),
        health_event),
    kind("schedule", "create", schedules::RECORD_TYPE,
        |s| s.create(|a| schedules::create(s.conn, s.actor, a)),
        source::<ScheduleRow>),
    kind("schedule", "update", schedules::RECORD_TYPE,
        |s| s.update(|id, m, a| schedules::update(s.conn, s.actor, id, m, a)),
        source::<ScheduleRow>),
    kind("schedule", "delete", schedules::RECORD_TYPE,
        |s| s.delete(|id| schedules::get(s.conn, s.actor, id),
                     |id, m| schedules::delete(s.conn, s.actor, id, m)),
        source::<ScheduleRow>),
    kind("schedule", "pause", schedules::RECORD_TYPE,
        |s| s.transition(|id, m| schedules::pause(s.conn, s.actor, id, m)),
        source::<ScheduleRow>),
    kind("schedule", "resume", schedules::RECORD_TYPE,
        |s| s.transition(|id, m| schedules::resume(s.conn, s.actor, id, m)),
        source::<ScheduleRow>),
    kind("person_medication", "create", person_medications::RECORD_TYPE,
        |s| s.create(|a| person_medications::create(s.conn, s.actor, a)),
        source::<PersonMedicationRow>),
    kind("person_medication", "update", person_medications::RECORD_TYPE,
        |s| s.update(|id, m, a| person_medications::update(s.conn, s.actor, id, m, a)),
        source::<PersonMedicationRow>),
    kind("person_medication", "delete", person_medications::RECORD_TYPE,
        |s| s.delete(|id| person_medications::get(s.conn, s.actor, id),
                     |id, m| person_medications::delete(s.conn, s.actor, id, m)),
        source::<PersonMedicationRow>),
    kind("person_medication", "pause", person_medications::RECORD_TYPE,
        |s| s.transition(|id, m| person_medications::pause(s.conn, s.actor, id, m)),
        source::<PersonMedicationRow>),
    kind("person_medication", "resume", person_medications::RECORD_TYPE,
        |s| s.transition(|id, m| person_medications::resume(s.conn, s.actor, id, m)),
        source::<PersonMedicationRow>),
    kind("medication_pause_period", "create", pause_periods::RECORD_TYPE,
        create_pause_period,
        |c, a, r| pause_periods::authorize_create(c, a, &attributes(r.op)?).map(drop)),
    kind("medication_pause_period", "close", pause_periods::RECORD_TYPE,
        close_pause_period,
        |c, a, r| pause_periods::authorize_resume(c, a, r.record_portable_id).map(drop)),
    kind("medication_take", "create", medication_takes::RECORD_TYPE,
        create_take,
        |c, a, r| {
            let person = person_of(c, a, "medication_takes", r)?;
            medication_takes::require_record(c, a, person, "medication take")
        }),
    kind("medication_dose_occurrence", "create", dose_outcomes::RECORD_TYPE,
        |s| s.create(|a| dose_outcomes::record_not_taken(s.conn, s.actor, a)),
        |c, a, r| {
            let person = person_of(c, a, "dose_occurrences", r)?;
            dose_outcomes::authorize_record(c, a, person, "dose occurrence")
        }),
    kind("medication_dose_occurrence", "update", dose_outcomes::RECORD_TYPE,
        |s| s.update(|id, m, a| dose_outcomes::reopen(s.conn, s.actor, id, m, a)),
        |c, a, r| dose_outcomes::authorize_reopen(c, a, person_of(c, a, "dose_occurrences", r)?)),
    kind("medication_review", "update", review_prompts::RECORD_TYPE,
        |s| s.update(|id, m, a| review_prompts::update(s.conn, s.actor, id, m, a)),
        |c, a, r| review_prompts::authorize(c, a, &r.record())),
];

/// The row of a pair, if a batch may carry it.
pub fn find(resource_type: &str, action: &str) -> Option<&'static OperationKind> {
    OPERATIONS
        .iter()
        .find(|k| k.resource_type == resource_type && k.action == action)
}

/// The table grouped by resource type, in table order:
/// `[(resource_type, [actions])]`.
pub fn by_resource() -> Vec<(&'static str, Vec<&'static str>)> {
    let mut grouped: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for k in OPERATIONS {
        match grouped.iter_mut().find(|(r, _)| *r == k.resource_type) {
            Some((_, actions)) => actions.push(k.action),
            None => grouped.push((k.resource_type, vec![k.action])),
        }
    }
    grouped
}

/// Every action of the table, sorted, once each.
pub fn actions() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = OPERATIONS.iter().map(|k| k.action).collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// `sync.operations` of the capability document: `{resource_type: [actions]}`.
pub fn operations_document() -> Value {
    let map: Map<String, Value> = by_resource()
        .into_iter()
        .map(|(r, actions)| (r.to_string(), json!(actions)))
        .collect();
    Value::Object(map)
}

fn location_manager(_: &Connection, actor: &Actor, _: &Replayed<'_>) -> Result<()> {
    locations::require_location_manager(actor)
}

fn inventory(_: &Connection, actor: &Actor, _: &Replayed<'_>) -> Result<()> {
    crate::auth::access::require_inventory(actor)
}

/// The person of a person-scoped record, deleted and retired ones included
/// (a replayed delete still names whose record it was); a record gone since
/// names nobody whose access could be checked, so nothing is replayed.
fn person_of(conn: &Connection, actor: &Actor, table: &str, r: &Replayed<'_>) -> Result<i64> {
    batches_store::person_of(conn, actor.household_id, table, r.record_portable_id)?
        .ok_or_else(|| ApiError::not_found("record"))
}

fn health_event(conn: &Connection, actor: &Actor, r: &Replayed<'_>) -> Result<()> {
    let person = person_of(conn, actor, "health_events", r)?;
    health_events::require_access(
        conn,
        actor,
        person,
        health_events::WRITE_LEVEL,
        "health event",
    )
}

fn source<R: SourceRow>(conn: &Connection, actor: &Actor, r: &Replayed<'_>) -> Result<()> {
    let table = match R::KIND {
        pause_periods::model::SourceType::Schedule => "schedules",
        pause_periods::model::SourceType::PersonMedication => "person_medications",
    };
    let person = person_of(conn, actor, table, r)?;
    sources::require_access(conn, actor, person, sources::WRITE_LEVEL, R::NOUN)
}

/// A stock removal names the medication it came from and carries no
/// if_match; its result names the removal and carries the medication's new
/// ETag, so the client's next queued change of the medication applies.
fn remove_stock(s: &Step<'_>) -> Result<OperationResult> {
    let id = s.target()?;
    if s.op.if_match.is_some() {
        return Err(ApiError::invalid(
            "if_match",
            "must be left out of remove_stock",
        ));
    }
    let removal = stock_removals::create(s.conn, s.actor, id, attributes(s.op)?)?;
    let medication = medications::find(s.conn, s.actor, id)?;
    Ok(OperationResult {
        index: s.index,
        action: s.op.action.clone(),
        record_type: s.record_type,
        record_id: removal.id.to_string(),
        record_portable_id: removal.portable_id,
        etag: Some(crate::domain::etag(
            &medication.portable_id,
            medication.lock_version,
        )),
        replayed: None,
    })
}

/// A pause period is addressed by its portable id, and its results say
/// whether they were replayed.
fn pause_period_result(mut result: OperationResult) -> OperationResult {
    result.record_id = result.record_portable_id.clone();
    result.replayed = Some(false);
    result
}

fn create_pause_period(s: &Step<'_>) -> Result<OperationResult> {
    s.create(|a| pause_periods::create(s.conn, s.actor, &a))
        .map(pause_period_result)
}

fn close_pause_period(s: &Step<'_>) -> Result<OperationResult> {
    s.transition(|id, m| {
        let ResourceId::Portable(portable_id) = id else {
            return Err(ApiError::invalid(
                "id",
                "must be the pause period's portable id",
            ));
        };
        pause_periods::resume(s.conn, s.actor, portable_id, m)
    })
    .map(pause_period_result)
}

/// A take is idempotent by its client_uuid; the result says whether this
/// one returned an earlier take.
fn create_take(s: &Step<'_>) -> Result<OperationResult> {
    let mut replayed = false;
    let mut result = s.create(|a| {
        let recorded = medication_takes::create(s.conn, s.actor, a)?;
        replayed = recorded.replayed;
        Ok(recorded.take)
    })?;
    result.replayed = Some(replayed);
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second row for a pair would never be dispatched: `find` takes the first.
    #[test]
    fn every_pair_has_one_row() {
        for (i, k) in OPERATIONS.iter().enumerate() {
            assert!(
                OPERATIONS[i + 1..]
                    .iter()
                    .all(|o| (o.resource_type, o.action) != (k.resource_type, k.action)),
                "{} {} is listed twice",
                k.resource_type,
                k.action
            );
        }
    }
}
