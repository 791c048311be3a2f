//! The history an import restores once the records are in place: pause
//! periods (and imported open periods the bundle now closes), saved dose
//! outcomes, and each source's retirement and active state.

use serde_json::Value;

use super::records::{portable_ref, same_value, text, timestamp, typed};
use super::{Importer, store};
use crate::care::dose_occurrences::model::Outcome;
use crate::care::pause_periods::store::Resumer;
use crate::care::person_medications::{self, model::PersonMedicationRow};
use crate::care::schedules::{self, model::ScheduleRow};
use crate::care::sources;
use crate::domain::{IfMatch, ResourceId};
use crate::error::{ApiError, Result};
use crate::household::memberships;
use crate::portable::collections::*;
use crate::portable::model::RawRecord;

impl Importer<'_, '_> {
    pub(super) fn pause_periods(&mut self, records: &[RawRecord]) -> Result<()> {
        let household_id = self.actor.household_id;
        for record in records {
            for field in [
                "recorded_by_person_portable_id",
                "resumed_by_person_portable_id",
            ] {
                if let Some(person) = record.get(field).and_then(Value::as_str) {
                    self.original_actors.insert(person.to_string());
                }
            }
            let open = record.get("ended_at").is_none_or(Value::is_null);
            if let (true, Some(source)) = (
                open,
                record.get("source_portable_id").and_then(Value::as_str),
            ) {
                self.open_paused.insert(source.to_string());
            }
        }
        self.each(&PAUSE_PERIODS, records, |tx, actor, rec| {
            let source_type = typed(rec.get("source_type").cloned().unwrap_or(Value::Null))
                .map_err(|_| {
                    ApiError::invalid("source_type", "must be schedule or person_medication")
                })?;
            let reason = typed(rec.get("reason").cloned().unwrap_or(Value::Null))
                .map_err(|_| ApiError::invalid("reason", "is not a supported pause reason"))?;
            let source = portable_ref(rec, "source_portable_id")?;
            // (membership here, the bundle's reference kept when none or
            // several memberships match: import rule 8)
            let actor_of = |field: &str| -> Result<(Option<i64>, Option<&str>)> {
                let Some(person) = rec.get(field).and_then(Value::as_str) else {
                    return Ok((None, None));
                };
                Ok(
                    match memberships::store::sole_membership_of(tx, household_id, person)? {
                        Some(membership) => (Some(membership), None),
                        None => (None, Some(person)),
                    },
                )
            };
            let (recorded_by_membership_id, recorded_by_person_ref) =
                actor_of("recorded_by_person_portable_id")?;
            let (resumed_by_membership_id, resumed_by_person_ref) =
                actor_of("resumed_by_person_portable_id")?;
            let started_at = timestamp(rec, "started_at")?;
            let ended_at = timestamp(rec, "ended_at")?;
            let created_at = timestamp(rec, "created_at")?
                .ok_or_else(|| ApiError::invalid("created_at", "is required"))?;
            let period = crate::care::pause_periods::Restored {
                source_type,
                source_id: &source,
                reason,
                note: text(rec, "note")?,
                started_at: started_at.as_deref(),
                ended_at: ended_at.as_deref(),
                created_at: &created_at,
                legacy_context: rec.get("legacy_context") == Some(&Value::Bool(true)),
                recorded_by_membership_id,
                resumed_by_membership_id,
                recorded_by_person_ref,
                resumed_by_person_ref,
            };
            crate::care::pause_periods::restore(tx, actor, &period)
        })
    }

    pub(super) fn dose_occurrences(&mut self, records: &[RawRecord]) -> Result<()> {
        let household_id = self.actor.household_id;
        self.each(&DOSE_OCCURRENCES, records, |tx, actor, rec| {
            let source_type = typed(rec.get("source_type").cloned().unwrap_or(Value::Null))
                .map_err(|_| {
                    ApiError::invalid("source_type", "must be schedule or person_medication")
                })?;
            let source = portable_ref(rec, "source_portable_id")?;
            let take = match rec
                .get("medication_take_portable_id")
                .and_then(Value::as_str)
            {
                Some(take) => Some(
                    store::row_id(tx, MEDICATION_TAKES.table, household_id, take)?
                        .ok_or_else(|| ApiError::not_found("medication take"))?,
                ),
                None => None,
            };
            let date = |field: &str| -> Result<String> {
                rec.get(field)
                    .and_then(Value::as_str)
                    .filter(|d| d.parse::<jiff::civil::Date>().is_ok())
                    .map(str::to_string)
                    .ok_or_else(|| ApiError::invalid(field, "must be a date (YYYY-MM-DD)"))
            };
            let starts = date("window_starts_on")?;
            // An older v2 row may have no end: the source's cycle decides.
            let ends = match rec.get("window_ends_on") {
                None | Some(Value::Null) => None,
                Some(_) => Some(date("window_ends_on")?),
            };
            if ends.as_ref().is_some_and(|ends| *ends < starts) {
                return Err(ApiError::invalid(
                    "window_ends_on",
                    "must not be before window_starts_on",
                ));
            }
            let position = rec
                .get("position")
                .and_then(Value::as_i64)
                .filter(|p| *p >= 1)
                .ok_or_else(|| ApiError::invalid("position", "must be an integer of at least 1"))?;
            let outcome = rec
                .get("outcome")
                .and_then(Value::as_str)
                .ok_or_else(|| ApiError::invalid("outcome", "is required"))?;
            let outcome = Outcome::parse(outcome).ok_or_else(|| {
                ApiError::invalid("outcome", format!("must be {}", Outcome::ALL.join(", ")))
            })?;
            let scheduled_at = timestamp(rec, "scheduled_at")?;
            let resolved_at = timestamp(rec, "resolved_at")?;
            let restored = crate::care::dose_occurrences::outcomes::Restored {
                source_type,
                source_id: &source,
                window_starts_on: &starts,
                window_ends_on: ends.as_deref(),
                position,
                scheduled_at: scheduled_at.as_deref(),
                outcome,
                reason: text(rec, "reason")?,
                note: text(rec, "note")?,
                resolved_at: resolved_at.as_deref(),
                medication_take_id: take,
            };
            crate::care::dose_occurrences::outcomes::restore(tx, actor, &restored)
        })
    }

    /// Whether an existing period differs from the incoming one only by
    /// being open where the bundle has it closed.
    pub(super) fn advances_open_period(
        &self,
        collection: &'static Collection,
        portable_id: &str,
        record: &RawRecord,
        existing: &Value,
    ) -> bool {
        collection.name == PAUSE_PERIODS.name
            && existing["ended_at"].is_null()
            && record.get("ended_at").is_some_and(|v| !v.is_null())
            && self.existing[collection.name].contains_key(portable_id)
            && collection
                .fields
                .iter()
                .filter(|f| !IMPORT_MARKED.contains(f) && **f != "ended_at")
                .all(|f| same_value(record.get(*f).unwrap_or(&Value::Null), &existing[*f]))
    }

    /// Closes the imported open periods the bundle now has closed.
    pub(super) fn advance_periods(&mut self, records: &[RawRecord]) -> Result<()> {
        let household_id = self.actor.household_id;
        for portable_id in std::mem::take(&mut self.pending_advances) {
            let Some(record) = records
                .iter()
                .find(|r| r.get("portable_id").and_then(Value::as_str) == Some(&portable_id))
            else {
                continue;
            };
            let ended_at = match timestamp(record, "ended_at") {
                Ok(Some(at)) => at,
                _ => {
                    self.error(
                        &PAUSE_PERIODS,
                        Some(&portable_id),
                        "ended_at",
                        "must be an ISO 8601 date-time with an offset",
                    );
                    continue;
                }
            };
            let resumed_by = match record
                .get("resumed_by_person_portable_id")
                .and_then(Value::as_str)
            {
                Some(person) => {
                    match memberships::store::sole_membership_of(self.tx, household_id, person)? {
                        Some(membership) => Resumer::Member(Some(membership)),
                        None => Resumer::Original(person),
                    }
                }
                None => Resumer::Member(None),
            };
            self.tx.execute_batch("SAVEPOINT portable_record")?;
            match crate::care::pause_periods::advance_imported(
                self.tx,
                self.actor,
                &portable_id,
                &ended_at,
                resumed_by,
            ) {
                Ok(()) => self.tx.execute_batch("RELEASE portable_record")?,
                Err(err) => {
                    self.tx
                        .execute_batch("ROLLBACK TO portable_record; RELEASE portable_record")?;
                    self.rule_error(&PAUSE_PERIODS, &portable_id, err)?;
                }
            }
        }
        Ok(())
    }

    /// Retirement and the active flag, applied once every record of the
    /// bundle is in place (takes are recorded on live sources first). v1
    /// carries no pause history, so a paused source is paused again through
    /// the deprecated pause rule (reason_not_recorded); in v2 the state
    /// follows the source's final open period, and an inactive source
    /// without one is incomplete history.
    pub(super) fn source_states(
        &mut self,
        collection: &'static Collection,
        records: &[RawRecord],
    ) -> Result<()> {
        for record in records {
            let Some(portable_id) = record.get("portable_id").and_then(Value::as_str) else {
                continue;
            };
            let created = store::row_id(
                self.tx,
                collection.table,
                self.actor.household_id,
                portable_id,
            )?
            .is_some()
                && !self
                    .existing
                    .get(collection.name)
                    .is_some_and(|e| e.contains_key(portable_id));
            if !created {
                continue;
            }
            let id = ResourceId::Portable(portable_id.to_string());
            let inactive = record.get("active") == Some(&Value::Bool(false));
            let retired = record.get("retired_at").is_some_and(|v| !v.is_null());
            let paused_in_bundle = self.open_paused.contains(portable_id);
            if inactive && !paused_in_bundle && !retired {
                if self.v2 {
                    self.error(
                        collection,
                        Some(portable_id),
                        "active",
                        "is false but the bundle has no open pause period for it: incomplete history",
                    );
                    continue;
                }
                let paused = if collection.name == SCHEDULES.name {
                    schedules::pause(self.tx, self.actor, &id, &IfMatch(None)).map(drop)
                } else {
                    person_medications::pause(self.tx, self.actor, &id, &IfMatch(None)).map(drop)
                };
                if let Err(err) = paused {
                    self.rule_error(collection, portable_id, err)?;
                }
            }
            if retired {
                let at = match timestamp(record, "retired_at") {
                    Ok(Some(at)) => at,
                    _ => {
                        self.error(
                            collection,
                            Some(portable_id),
                            "retired_at",
                            "must be an ISO 8601 date-time with an offset",
                        );
                        continue;
                    }
                };
                let done = if collection.name == SCHEDULES.name {
                    sources::delete_at::<ScheduleRow>(self.tx, self.actor, &id, &IfMatch(None), &at)
                } else {
                    sources::delete_at::<PersonMedicationRow>(
                        self.tx,
                        self.actor,
                        &id,
                        &IfMatch(None),
                        &at,
                    )
                };
                if let Err(err) = done {
                    self.rule_error(collection, portable_id, err)?;
                }
            }
        }
        Ok(())
    }
}
