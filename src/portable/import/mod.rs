//! Dry run and import of a portable payload. Every record is created
//! through the rule its REST operation and sync batches use (one rule per
//! mutation), inside the caller's write transaction; a dry run runs the
//! very same import and rolls it back, so it finds exactly what the import
//! would refuse and writes nothing.
//!
//! Each record is made with the portable id it had in the bundle
//! (`db::with_portable_id`), so the same record keeps one identity across
//! installations.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Value, json};

mod create;
mod history;
mod permission;
mod records;

pub use permission::require_may_import;

use records::{is_uuid, same_value};

use super::collections::*;
use super::model::{Conflict, ImportSummary, Payload, RawRecord, RecordError};
use super::store;
use crate::auth::{AccessLevel, Actor};
use crate::db::WriteTx;
use crate::domain::ResourceId;
use crate::error::{ApiError, Result};
use crate::household::{audit, people};
use crate::sync::snapshot::{FORMAT_V1, FORMAT_V2};
use crate::sync::snapshot_store::Reader;

/// Parses the decrypted payload; a payload that is not one is a 422 naming
/// where it went wrong (never the value found there).
pub fn parse(plaintext: &[u8]) -> Result<Payload> {
    let de = &mut serde_json::Deserializer::from_slice(plaintext);
    let payload: Payload = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = if inner.to_string().starts_with("unknown field") {
            "is not a known portable field or collection"
        } else {
            "is not valid portable data"
        };
        ApiError::invalid(&format!("bundle.{path}"), message)
    })?;
    match payload.format.as_str() {
        FORMAT_V1 => {
            if payload.records.medication_pause_periods.is_some()
                || payload.records.dose_occurrences.is_some()
            {
                return Err(ApiError::invalid(
                    "bundle.records",
                    "a service.portable.v1 payload has no medication_pause_periods or dose_occurrences",
                ));
            }
        }
        FORMAT_V2 => {}
        _ => {
            return Err(ApiError::invalid(
                "bundle.format",
                format!("must be {FORMAT_V1} or {FORMAT_V2}"),
            ));
        }
    }
    Ok(payload)
}

/// Runs the import in `tx`. With `apply` false (a dry run) everything is
/// rolled back and the summary says what the import would find; with
/// `apply` true any conflict or error is a 422 and nothing is kept.
pub fn run(tx: &WriteTx, actor: &Actor, payload: Payload, apply: bool) -> Result<ImportSummary> {
    run_reporting(tx, actor, payload, apply, &crate::portable::quiet)
}

/// [`run`], telling `progress` how many records of each collection were
/// handled.
pub fn run_reporting(
    tx: &WriteTx,
    actor: &Actor,
    payload: Payload,
    apply: bool,
    progress: crate::portable::Progress<'_>,
) -> Result<ImportSummary> {
    // Adapters check this before decrypting; the rule keeps it all the same.
    require_may_import(tx, actor)?;
    tx.execute_batch("SAVEPOINT portable_import")?;
    let outcome = Importer::new(tx, actor, &payload.format, progress).and_then(|mut importer| {
        importer.all(payload)?;
        Ok((importer.summary, importer.original_actors))
    });
    let keep = apply
        && matches!(&outcome, Ok((summary, _)) if summary.conflicts.is_empty() && summary.errors.is_empty());
    if keep {
        tx.execute_batch("RELEASE portable_import")?;
    } else {
        tx.execute_batch("ROLLBACK TO portable_import; RELEASE portable_import")?;
    }
    let (mut summary, original_actors) = outcome?;
    if apply && !keep {
        return Err(refused(&summary));
    }
    if apply {
        summary.applied = true;
        audit::record(
            tx,
            actor.household_id,
            Some(actor.membership_id),
            "portable.imported",
            ("household", actor.household_id),
            json!({
                "imported_by_membership_id": actor.membership_id,
                "original_actor_person_portable_ids": original_actors,
                "format": summary.format,
                "created": summary.created,
            }),
        )?;
    }
    Ok(summary)
}

/// The 422 of an import that found conflicts or errors: each named as
/// `records.<collection>.<portable id>.<field>`.
fn refused(summary: &ImportSummary) -> ApiError {
    let mut errors = crate::error::FieldErrors::new();
    for c in &summary.conflicts {
        errors
            .entry(format!(
                "records.{}.{}.{}",
                c.collection, c.portable_id, c.field
            ))
            .or_default()
            .push(format!(
                "conflicts with the existing record {}",
                c.existing_portable_id
            ));
    }
    for e in &summary.errors {
        let id = e.portable_id.as_deref().unwrap_or("?");
        errors
            .entry(format!("records.{}.{}.{}", e.collection, id, e.field))
            .or_default()
            .push(e.message.clone());
    }
    ApiError::Validation {
        message: "the bundle cannot be imported: run the dry run to see every conflict and error"
            .into(),
        errors,
    }
}

struct Importer<'t, 'c> {
    tx: &'t WriteTx<'c>,
    actor: &'t Actor,
    v2: bool,
    summary: ImportSummary,
    /// What the destination holds now, as portable records, per collection.
    existing: HashMap<&'static str, HashMap<String, Value>>,
    /// Sources with an open period in the bundle (portable id).
    open_paused: std::collections::HashSet<String>,
    /// Imported open periods the bundle now closes (portable ids).
    pending_advances: Vec<String>,
    /// The people the bundle names as having paused or resumed a source
    /// (portable ids), for the audit event: they are the original actors,
    /// apart from the importing member.
    original_actors: BTreeSet<String>,
    progress: crate::portable::Progress<'t>,
}

/// Reads one collection of the destination as portable JSON by portable id.
fn index<T: serde::Serialize>(
    read: impl FnOnce(&mut dyn FnMut(T) -> Result<()>) -> Result<()>,
) -> Result<HashMap<String, Value>> {
    let mut found = HashMap::new();
    read(&mut |record: T| {
        let value = serde_json::to_value(&record).map_err(ApiError::internal)?;
        if let Some(id) = value["portable_id"].as_str() {
            found.insert(id.to_string(), value);
        }
        Ok(())
    })?;
    Ok(found)
}

impl<'t, 'c> Importer<'t, 'c> {
    fn new(
        tx: &'t WriteTx<'c>,
        actor: &'t Actor,
        format: &str,
        progress: crate::portable::Progress<'t>,
    ) -> Result<Importer<'t, 'c>> {
        let read = Reader::new(tx, actor);
        let mut existing = HashMap::new();
        existing.insert(PEOPLE.name, index(|s| read.people(s))?);
        existing.insert(LOCATIONS.name, index(|s| read.locations(s))?);
        existing.insert(MEDICATIONS.name, index(|s| read.medications(s))?);
        existing.insert(DOSAGE_OPTIONS.name, index(|s| read.dosage_options(s))?);
        existing.insert(SCHEDULES.name, index(|s| read.schedules(s))?);
        existing.insert(
            PERSON_MEDICATIONS.name,
            index(|s| read.person_medications(s))?,
        );
        existing.insert(MEDICATION_TAKES.name, index(|s| read.medication_takes(s))?);
        existing.insert(
            NOTIFICATION_PREFERENCES.name,
            index(|s| read.notification_preferences(s))?,
        );
        existing.insert(HEALTH_EVENTS.name, index(|s| read.health_events(s))?);
        existing.insert(PAUSE_PERIODS.name, index(|s| read.pause_periods(s))?);
        existing.insert(DOSE_OCCURRENCES.name, index(|s| read.dose_occurrences(s))?);
        Ok(Importer {
            tx,
            actor,
            v2: format == FORMAT_V2,
            summary: ImportSummary {
                format: format.to_string(),
                ..ImportSummary::default()
            },
            existing,
            open_paused: Default::default(),
            pending_advances: Vec::new(),
            original_actors: BTreeSet::new(),
            progress,
        })
    }

    fn all(&mut self, payload: Payload) -> Result<()> {
        let r = payload.records;
        self.require_manage_of_existing_people(&r.people)?;
        self.each(&LOCATIONS, &r.locations, create::location)?;
        self.each(&MEDICATIONS, &r.medications, create::medication)?;
        self.each(&DOSAGE_OPTIONS, &r.dosage_options, create::dosage_option)?;
        self.each(&PEOPLE, &r.people, create::person)?;
        // People of the bundle are in place under their own portable ids
        // from here on, so later records may name them.
        self.each(
            &NOTIFICATION_PREFERENCES,
            &r.notification_preferences,
            create::notification_preferences,
        )?;
        self.each(&SCHEDULES, &r.schedules, create::schedule)?;
        self.each(
            &PERSON_MEDICATIONS,
            &r.person_medications,
            create::person_medication,
        )?;
        self.each(
            &MEDICATION_TAKES,
            &r.medication_takes,
            create::medication_take,
        )?;
        self.each(&HEALTH_EVENTS, &r.health_events, create::health_event)?;
        if let Some(periods) = &r.medication_pause_periods {
            self.pause_periods(periods)?;
            self.advance_periods(periods)?;
        }
        if let Some(outcomes) = &r.dose_occurrences {
            self.dose_occurrences(outcomes)?;
        }
        self.source_states(&SCHEDULES, &r.schedules)?;
        self.source_states(&PERSON_MEDICATIONS, &r.person_medications)?;
        Ok(())
    }

    /// Import rule 8: the importer needs a current manage grant for every
    /// person of the bundle the destination already holds (new people are
    /// checked by the person rule as they are made).
    fn require_manage_of_existing_people(&mut self, people: &[RawRecord]) -> Result<()> {
        for record in people {
            let Some(portable_id) = record.get("portable_id").and_then(Value::as_str) else {
                continue;
            };
            if store::row_id(self.tx, PEOPLE.table, self.actor.household_id, portable_id)?.is_none()
            {
                continue;
            }
            let id = ResourceId::Portable(portable_id.to_string());
            if let Err(err) = people::find_for(self.tx, self.actor, &id, AccessLevel::Manage) {
                self.rule_error(&PEOPLE, portable_id, err)?;
            }
        }
        Ok(())
    }

    /// Applies `create` to every record of a collection, each in its own
    /// savepoint, so one refused record is reported and the rest still
    /// checked. Records already present are compared, not created.
    fn each(
        &mut self,
        collection: &'static Collection,
        records: &[RawRecord],
        mut create: impl FnMut(&WriteTx, &Actor, &RawRecord) -> Result<(i64, String)>,
    ) -> Result<()> {
        *self
            .summary
            .counts
            .entry(collection.name.to_string())
            .or_default() += records.len() as u64;
        let total = records.len() as u64;
        for (done, record) in (1..).zip(records) {
            (self.progress)(collection.name, done, total);
            let Some(portable_id) = self.check_shape(collection, record) else {
                continue;
            };
            if self.compare_existing(collection, &portable_id, record) {
                continue;
            }
            // A record of this household the import may not read: another
            // household's record of the same id is no concern of this one.
            if store::row_id(
                self.tx,
                collection.table,
                self.actor.household_id,
                &portable_id,
            )?
            .is_some()
            {
                self.error(
                    collection,
                    Some(&portable_id),
                    "access",
                    "is already used by a record this import may not change",
                );
                continue;
            }
            self.tx.execute_batch("SAVEPOINT portable_record")?;
            let made =
                crate::db::with_portable_id(&portable_id, || create(self.tx, self.actor, record));
            let made = match made {
                Ok((_, given)) if given != portable_id => Err(ApiError::internal(format!(
                    "the {} rule did not keep the record's portable id",
                    collection.name
                ))),
                other => other,
            };
            match made {
                Ok(_) => {
                    self.tx.execute_batch("RELEASE portable_record")?;
                    *self
                        .summary
                        .created
                        .entry(collection.name.to_string())
                        .or_default() += 1;
                }
                Err(err) => {
                    self.tx
                        .execute_batch("ROLLBACK TO portable_record; RELEASE portable_record")?;
                    self.rule_error(collection, &portable_id, err)?;
                }
            }
        }
        Ok(())
    }

    /// The record's portable id when its shape is portable: known fields
    /// only, no numeric database ids. Problems are reported, not raised.
    fn check_shape(
        &mut self,
        collection: &'static Collection,
        record: &RawRecord,
    ) -> Option<String> {
        let portable_id = record
            .get("portable_id")
            .and_then(Value::as_str)
            .filter(|id| uuid::Uuid::parse_str(id).is_ok())
            .map(str::to_string);
        let mut ok = portable_id.is_some();
        if portable_id.is_none() {
            self.error(
                collection,
                None,
                "portable_id",
                "must be a portable id (UUID)",
            );
        }
        for (key, value) in record {
            let numeric_id = (key == "id" || key.ends_with("_id") || key.ends_with("_ids"))
                && !key.ends_with("portable_id")
                && !key.ends_with("portable_ids");
            if numeric_id {
                self.error(
                    collection,
                    portable_id.as_deref(),
                    key,
                    "is a numeric database id; portable payloads carry portable ids only",
                );
                ok = false;
            } else if !COMMON.contains(&key.as_str()) && !collection.fields.contains(&key.as_str())
            {
                self.error(
                    collection,
                    portable_id.as_deref(),
                    key,
                    "is not a field of this collection",
                );
                ok = false;
            } else if key.ends_with("portable_id") && !value.is_null() && !is_uuid(value) {
                self.error(
                    collection,
                    portable_id.as_deref(),
                    key,
                    "must be a portable id (UUID) or null",
                );
                ok = false;
            } else if key.ends_with("portable_ids")
                && !value.as_array().is_some_and(|ids| ids.iter().all(is_uuid))
            {
                self.error(
                    collection,
                    portable_id.as_deref(),
                    key,
                    "must be an array of portable ids (UUIDs)",
                );
                ok = false;
            }
        }
        if ok { portable_id } else { None }
    }

    /// True when the destination already holds the record: unchanged, or a
    /// conflict (reported). Existing takes stay authoritative.
    fn compare_existing(
        &mut self,
        collection: &'static Collection,
        portable_id: &str,
        record: &RawRecord,
    ) -> bool {
        let Some(existing) = self
            .existing
            .get(collection.name)
            .and_then(|by_id| by_id.get(portable_id))
        else {
            return false;
        };
        let differs = if collection.name == MEDICATION_TAKES.name {
            None
        } else {
            collection
                .fields
                .iter()
                .filter(|field| !IMPORT_MARKED.contains(field))
                // In v2 a source's active state follows its pause periods,
                // which are compared (and advanced) on their own.
                .filter(|field| !(self.v2 && **field == "active"))
                .find(|field| {
                    let incoming = record.get(**field).unwrap_or(&Value::Null);
                    !same_value(incoming, &existing[**field])
                })
                .copied()
        };
        match differs {
            None => {
                *self
                    .summary
                    .unchanged
                    .entry(collection.name.to_string())
                    .or_default() += 1;
            }
            Some("ended_at")
                if self.advances_open_period(collection, portable_id, record, existing) =>
            {
                self.pending_advances.push(portable_id.to_string());
            }
            Some(field) => self.summary.conflicts.push(Conflict {
                collection: collection.name.to_string(),
                record_type: collection.record_type.to_string(),
                portable_id: portable_id.to_string(),
                field: field.to_string(),
                existing_portable_id: portable_id.to_string(),
            }),
        }
        true
    }

    fn error(
        &mut self,
        collection: &'static Collection,
        portable_id: Option<&str>,
        field: &str,
        message: &str,
    ) {
        self.summary.errors.push(RecordError {
            collection: collection.name.to_string(),
            portable_id: portable_id.map(str::to_string),
            field: field.to_string(),
            message: message.to_string(),
        });
    }

    /// Turns what a rule refused into the summary's errors or conflicts.
    /// A failure of the database itself still ends the whole import.
    fn rule_error(
        &mut self,
        collection: &'static Collection,
        portable_id: &str,
        err: ApiError,
    ) -> Result<()> {
        match err {
            ApiError::Validation { errors, message } => {
                if errors.is_empty() {
                    self.error(collection, Some(portable_id), "record", &message);
                }
                for (field, messages) in errors {
                    for m in messages {
                        self.error(collection, Some(portable_id), &field, &m);
                    }
                }
            }
            ApiError::NotFound(message) => self.error(
                collection,
                Some(portable_id),
                "relationship",
                &format!("{message} in the destination household or the bundle"),
            ),
            ApiError::Forbidden(message) => {
                self.error(collection, Some(portable_id), "access", &message)
            }
            ApiError::Conflict { code, message } if code == "client_uuid" => {
                self.summary.conflicts.push(Conflict {
                    collection: collection.name.to_string(),
                    record_type: collection.record_type.to_string(),
                    portable_id: portable_id.to_string(),
                    field: code.to_string(),
                    existing_portable_id: message,
                })
            }
            ApiError::Conflict { code, message } => {
                self.error(collection, Some(portable_id), code, &message)
            }
            ApiError::StaleEtag | ApiError::PreconditionRequired(_) => self.error(
                collection,
                Some(portable_id),
                "record",
                "conflicts with a concurrent change",
            ),
            other => return Err(other),
        }
        Ok(())
    }
}

/// Counts of a summary, for the audit event and the command line.
pub fn total(counts: &BTreeMap<String, u64>) -> u64 {
    counts.values().sum()
}
