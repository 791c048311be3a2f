//! Dry run and import of a portable payload. Every record is created
//! through the rule its REST operation and sync batches use (one rule per
//! mutation), inside the caller's write transaction; a dry run runs the
//! very same import and rolls it back, so it finds exactly what the import
//! would refuse and writes nothing.
//!
//! Each record is made with the portable id it had in the bundle
//! (`db::with_portable_id`), so the same record keeps one identity across
//! installations.

use std::collections::{BTreeMap, HashMap};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::model::{Conflict, ImportSummary, Payload, RawRecord, RecordError};
use super::store;
use crate::auth::{AccessLevel, Actor};
use crate::care::person_medications::{self, model::PersonMedicationRow};
use crate::care::schedules::{self, model::ScheduleRow};
use crate::care::sources;
use crate::care::{health_events, medication_takes, notification_preferences};
use crate::db::WriteTx;
use crate::domain::{IfMatch, ResourceId, record_type};
use crate::error::{ApiError, Result};
use crate::household::{audit, locations, people};
use crate::medicine::{dosage_options, medications};
use crate::sync::snapshot::{FORMAT_V1, FORMAT_V2};
use crate::sync::snapshot_store::Reader;

/// A portable collection: its name, record type, table and the fields a
/// record of it may carry besides portable_id, updated_at and etag.
pub struct Collection {
    pub name: &'static str,
    pub record_type: &'static str,
    pub table: &'static str,
    fields: &'static [&'static str],
}

pub const PEOPLE: Collection = Collection {
    name: "people",
    record_type: record_type::PERSON,
    table: "people",
    fields: &[
        "name",
        "email",
        "date_of_birth",
        "person_type",
        "has_capacity",
        "location_portable_ids",
        "notification_preference_portable_id",
    ],
};
pub const LOCATIONS: Collection = Collection {
    name: "locations",
    record_type: record_type::LOCATION,
    table: "locations",
    fields: &["name", "description"],
};
pub const MEDICATIONS: Collection = Collection {
    name: "medications",
    record_type: record_type::MEDICATION,
    table: "medications",
    fields: &[
        "location_portable_id",
        "name",
        "friendly_name",
        "category",
        "description",
        "dose_amount",
        "dose_unit",
        "default_schedule_type",
        "current_supply",
        "reorder_threshold",
        "barcode",
        "dmd_code",
        "dmd_system",
        "dmd_concept_class",
    ],
};
pub const DOSAGE_OPTIONS: Collection = Collection {
    name: "dosage_options",
    record_type: record_type::DOSAGE_OPTION,
    table: "dosage_options",
    fields: &[
        "medication_portable_id",
        "amount",
        "unit",
        "frequency",
        "description",
        "default_for_adults",
        "default_for_children",
        "default_max_daily_doses",
        "default_min_hours_between_doses",
        "default_dose_cycle",
        "current_supply",
        "reorder_threshold",
    ],
};
pub const SCHEDULES: Collection = Collection {
    name: "schedules",
    record_type: record_type::SCHEDULE,
    table: "schedules",
    fields: &[
        "source_dosage_option_portable_id",
        "retired_at",
        "person_portable_id",
        "medication_portable_id",
        "dose_amount",
        "dose_unit",
        "frequency",
        "dose_cycle",
        "max_daily_doses",
        "min_hours_between_doses",
        "schedule_type",
        "schedule_config",
        "start_date",
        "end_date",
        "active",
        "notes",
    ],
};
pub const PERSON_MEDICATIONS: Collection = Collection {
    name: "person_medications",
    record_type: record_type::PERSON_MEDICATION,
    table: "person_medications",
    fields: &[
        "source_dosage_option_portable_id",
        "retired_at",
        "person_portable_id",
        "medication_portable_id",
        "dose_amount",
        "dose_unit",
        "dose_cycle",
        "max_daily_doses",
        "min_hours_between_doses",
        "administration_kind",
        "active",
        "notes",
        "position",
    ],
};
pub const MEDICATION_TAKES: Collection = Collection {
    name: "medication_takes",
    record_type: record_type::MEDICATION_TAKE,
    table: "medication_takes",
    fields: &[
        "client_uuid",
        "source_type",
        "source_portable_id",
        "taken_at",
        "dose_amount",
        "dose_unit",
        "taken_from_medication_portable_id",
        "taken_from_location_portable_id",
    ],
};
pub const NOTIFICATION_PREFERENCES: Collection = Collection {
    name: "notification_preferences",
    record_type: record_type::NOTIFICATION_PREFERENCE,
    table: "notification_preferences",
    fields: &[
        "person_portable_id",
        "enabled",
        "dose_due_enabled",
        "missed_dose_enabled",
        "low_stock_enabled",
        "private_text_enabled",
        "morning_time",
        "afternoon_time",
        "evening_time",
        "night_time",
    ],
};
pub const HEALTH_EVENTS: Collection = Collection {
    name: "health_events",
    record_type: record_type::HEALTH_EVENT,
    table: "health_events",
    fields: &[
        "person_portable_id",
        "event_kind",
        "severity",
        "title",
        "notes",
        "started_on",
        "ended_on",
        "medication_portable_ids",
    ],
};
pub const PAUSE_PERIODS: Collection = Collection {
    name: "medication_pause_periods",
    record_type: record_type::PAUSE_PERIOD,
    table: "medication_pause_periods",
    fields: &[
        "source_type",
        "source_portable_id",
        "reason",
        "note",
        "started_at",
        "ended_at",
        "created_at",
        "legacy_context",
        "imported_context",
        "recorded_by_person_portable_id",
        "resumed_by_person_portable_id",
    ],
};
pub const DOSE_OCCURRENCES: Collection = Collection {
    name: "dose_occurrences",
    record_type: record_type::DOSE_OCCURRENCE,
    table: "dose_occurrences",
    fields: &[
        "source_type",
        "source_portable_id",
        "window_starts_on",
        "window_ends_on",
        "position",
        "scheduled_at",
        "outcome",
        "reason",
        "note",
        "resolved_at",
        "medication_take_portable_id",
    ],
};

const COMMON: &[&str] = &["portable_id", "updated_at", "etag"];

/// Fields an import itself sets on what it restores (the restored mark, and
/// actors only the source's memberships may name), so a reimport of the
/// same bundle does not count them as changes.
const IMPORT_MARKED: &[&str] = &[
    "imported_context",
    "recorded_by_person_portable_id",
    "resumed_by_person_portable_id",
];

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
    tx.execute_batch("SAVEPOINT portable_import")?;
    let outcome = Importer::new(tx, actor, &payload.format).and_then(|mut importer| {
        importer.all(payload)?;
        Ok(importer.summary)
    });
    let keep = apply
        && matches!(&outcome, Ok(summary) if summary.conflicts.is_empty() && summary.errors.is_empty());
    if keep {
        tx.execute_batch("RELEASE portable_import")?;
    } else {
        tx.execute_batch("ROLLBACK TO portable_import; RELEASE portable_import")?;
    }
    let mut summary = outcome?;
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
    fn new(tx: &'t WriteTx<'c>, actor: &'t Actor, format: &str) -> Result<Importer<'t, 'c>> {
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
        })
    }

    fn all(&mut self, payload: Payload) -> Result<()> {
        let r = payload.records;
        self.require_manage_of_existing_people(&r.people)?;
        self.each(&LOCATIONS, &r.locations, |tx, actor, rec| {
            let attrs = typed(attributes(
                rec,
                &[("name", "name"), ("description", "description")],
            ))?;
            let made = locations::create(tx, actor, attrs)?;
            Ok((made.id, made.portable_id))
        })?;
        self.each(&MEDICATIONS, &r.medications, |tx, actor, rec| {
            let attrs = typed(attributes(
                rec,
                &[
                    ("location_portable_id", "location_id"),
                    ("name", "name"),
                    ("friendly_name", "friendly_name"),
                    ("category", "category"),
                    ("description", "description"),
                    ("dose_amount", "dose_amount"),
                    ("dose_unit", "dose_unit"),
                    ("default_schedule_type", "default_schedule_type"),
                    ("current_supply", "current_supply"),
                    ("reorder_threshold", "reorder_threshold"),
                    ("barcode", "barcode"),
                    ("dmd_code", "dmd_code"),
                    ("dmd_system", "dmd_system"),
                    ("dmd_concept_class", "dmd_concept_class"),
                ],
            ))?;
            let made = medications::create(tx, actor, attrs)?;
            Ok((made.id, made.portable_id))
        })?;
        self.each(&DOSAGE_OPTIONS, &r.dosage_options, |tx, actor, rec| {
            let attrs = typed(attributes(
                rec,
                &[
                    ("medication_portable_id", "medication_id"),
                    ("amount", "amount"),
                    ("unit", "unit"),
                    ("frequency", "frequency"),
                    ("description", "description"),
                    ("default_for_adults", "default_for_adults"),
                    ("default_for_children", "default_for_children"),
                    ("default_max_daily_doses", "default_max_daily_doses"),
                    (
                        "default_min_hours_between_doses",
                        "default_min_hours_between_doses",
                    ),
                    ("default_dose_cycle", "default_dose_cycle"),
                    ("current_supply", "current_supply"),
                    ("reorder_threshold", "reorder_threshold"),
                ],
            ))?;
            let made = dosage_options::create(tx, actor, attrs)?;
            Ok((made.option.id, made.option.portable_id))
        })?;
        self.each(&PEOPLE, &r.people, |tx, actor, rec| {
            let made = create_person(tx, actor, rec)?;
            for location in strings(rec, "location_portable_ids") {
                let attrs = typed(json!({"person_id": made.1}))?;
                locations::memberships::create(tx, actor, &ResourceId::Portable(location), attrs)?;
            }
            Ok(made)
        })?;
        // People of the bundle are in place under their own portable ids
        // from here on, so later records may name them.
        self.each(
            &NOTIFICATION_PREFERENCES,
            &r.notification_preferences,
            |tx, actor, rec| {
                let person = portable_ref(rec, "person_portable_id")?;
                let attrs = typed(attributes(
                    rec,
                    &[
                        ("enabled", "enabled"),
                        ("dose_due_enabled", "dose_due_enabled"),
                        ("missed_dose_enabled", "missed_dose_enabled"),
                        ("low_stock_enabled", "low_stock_enabled"),
                        ("private_text_enabled", "private_text_enabled"),
                        ("morning_time", "morning_time"),
                        ("afternoon_time", "afternoon_time"),
                        ("evening_time", "evening_time"),
                        ("night_time", "night_time"),
                    ],
                ))?;
                let made = notification_preferences::restore_for(tx, actor, &person, attrs)?;
                let id = made
                    .id
                    .ok_or_else(|| ApiError::internal("restored preferences have no id"))?;
                let pid = made
                    .portable_id
                    .ok_or_else(|| ApiError::internal("restored preferences have no id"))?;
                Ok((id, pid))
            },
        )?;
        self.each(&SCHEDULES, &r.schedules, |tx, actor, rec| {
            let attrs = typed(attributes(
                rec,
                &[
                    ("person_portable_id", "person_id"),
                    ("medication_portable_id", "medication_id"),
                    (
                        "source_dosage_option_portable_id",
                        "source_dosage_option_id",
                    ),
                    ("dose_amount", "dose_amount"),
                    ("dose_unit", "dose_unit"),
                    ("frequency", "frequency"),
                    ("dose_cycle", "dose_cycle"),
                    ("max_daily_doses", "max_daily_doses"),
                    ("min_hours_between_doses", "min_hours_between_doses"),
                    ("schedule_type", "schedule_type"),
                    ("schedule_config", "schedule_config"),
                    ("start_date", "start_date"),
                    ("end_date", "end_date"),
                    ("notes", "notes"),
                ],
            ))?;
            let made = schedules::create(tx, actor, attrs)?;
            Ok((made.record.id, made.record.portable_id))
        })?;
        self.each(
            &PERSON_MEDICATIONS,
            &r.person_medications,
            |tx, actor, rec| {
                let attrs = typed(attributes(
                    rec,
                    &[
                        ("person_portable_id", "person_id"),
                        ("medication_portable_id", "medication_id"),
                        (
                            "source_dosage_option_portable_id",
                            "source_dosage_option_id",
                        ),
                        ("dose_amount", "dose_amount"),
                        ("dose_unit", "dose_unit"),
                        ("dose_cycle", "dose_cycle"),
                        ("max_daily_doses", "max_daily_doses"),
                        ("min_hours_between_doses", "min_hours_between_doses"),
                        ("administration_kind", "administration_kind"),
                        ("notes", "notes"),
                    ],
                ))?;
                let made = person_medications::create(tx, actor, attrs)?;
                Ok((made.record.id, made.record.portable_id))
            },
        )?;
        self.each(&MEDICATION_TAKES, &r.medication_takes, |tx, actor, rec| {
            let input = typed(attributes(
                rec,
                &[
                    ("source_type", "source_type"),
                    ("source_portable_id", "source_id"),
                    ("taken_at", "taken_at"),
                    ("client_uuid", "client_uuid"),
                    ("dose_amount", "dose_amount"),
                    ("dose_unit", "dose_unit"),
                    (
                        "taken_from_medication_portable_id",
                        "taken_from_medication_id",
                    ),
                    ("taken_from_location_portable_id", "taken_from_location_id"),
                ],
            ))?;
            let made = medication_takes::restore(tx, actor, input)?;
            if made.replayed {
                return Err(ApiError::conflict("client_uuid", made.take.portable_id));
            }
            Ok((made.take.id, made.take.portable_id))
        })?;
        self.each(&HEALTH_EVENTS, &r.health_events, |tx, actor, rec| {
            let attrs = typed(attributes(
                rec,
                &[
                    ("person_portable_id", "person_id"),
                    ("event_kind", "event_kind"),
                    ("severity", "severity"),
                    ("title", "title"),
                    ("notes", "notes"),
                    ("started_on", "started_on"),
                    ("ended_on", "ended_on"),
                    ("medication_portable_ids", "medication_ids"),
                ],
            ))?;
            let made = health_events::create(tx, actor, attrs)?;
            Ok((made.id, made.portable_id))
        })?;
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

    fn pause_periods(&mut self, records: &[RawRecord]) -> Result<()> {
        let household_id = self.actor.household_id;
        for record in records {
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
            let actor_of = |field: &str| -> Result<Option<i64>> {
                match rec.get(field).and_then(Value::as_str) {
                    Some(person) => store::sole_membership_of(tx, household_id, person),
                    None => Ok(None),
                }
            };
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
                recorded_by_membership_id: actor_of("recorded_by_person_portable_id")?,
                resumed_by_membership_id: actor_of("resumed_by_person_portable_id")?,
            };
            crate::care::pause_periods::restore(tx, actor, &period)
        })
    }

    fn dose_occurrences(&mut self, records: &[RawRecord]) -> Result<()> {
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
            let ends = date("window_ends_on")?;
            if ends < starts {
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
            let scheduled_at = timestamp(rec, "scheduled_at")?;
            let resolved_at = timestamp(rec, "resolved_at")?;
            let restored = crate::care::dose_occurrences::outcomes::Restored {
                source_type,
                source_id: &source,
                window_starts_on: &starts,
                window_ends_on: &ends,
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

    /// Import rule 8: the importer needs a current manage grant for every
    /// person of the bundle the destination already holds (new people are
    /// checked by the person rule as they are made).
    fn require_manage_of_existing_people(&mut self, people: &[RawRecord]) -> Result<()> {
        for record in people {
            let Some(portable_id) = record.get("portable_id").and_then(Value::as_str) else {
                continue;
            };
            if store::portable_id_owner(self.tx, PEOPLE.table, portable_id)?
                != Some(self.actor.household_id)
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
        for record in records {
            let Some(portable_id) = self.check_shape(collection, record) else {
                continue;
            };
            if self.compare_existing(collection, &portable_id, record) {
                continue;
            }
            if let Some(household) =
                store::portable_id_owner(self.tx, collection.table, &portable_id)?
            {
                let field = if household == self.actor.household_id {
                    "access"
                } else {
                    "portable_id"
                };
                self.error(
                    collection,
                    Some(&portable_id),
                    field,
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

    /// Whether an existing period differs from the incoming one only by
    /// being open where the bundle has it closed.
    fn advances_open_period(
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
    fn advance_periods(&mut self, records: &[RawRecord]) -> Result<()> {
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
                Some(person) => store::sole_membership_of(self.tx, household_id, person)?,
                None => None,
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

    /// Retirement and the active flag, applied once every record of the
    /// bundle is in place (takes are recorded on live sources first). v1
    /// carries no pause history, so a paused source is paused again through
    /// the deprecated pause rule (reason_not_recorded); in v2 the state
    /// follows the source's final open period, and an inactive source
    /// without one is incomplete history.
    fn source_states(
        &mut self,
        collection: &'static Collection,
        records: &[RawRecord],
    ) -> Result<()> {
        for record in records {
            let Some(portable_id) = record.get("portable_id").and_then(Value::as_str) else {
                continue;
            };
            let created = store::portable_id_owner(self.tx, collection.table, portable_id)?
                == Some(self.actor.household_id)
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

/// An optional text field: a string or null.
fn text<'r>(record: &'r RawRecord, field: &str) -> Result<Option<&'r str>> {
    match record.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ApiError::invalid(field, "must be text or null")),
    }
}

/// An optional timestamp, in the one stored form (so stored times compare
/// as text).
fn timestamp(record: &RawRecord, field: &str) -> Result<Option<String>> {
    match text(record, field)? {
        None => Ok(None),
        Some(t) => crate::domain::Timestamp::parse(t)
            .map(|ts| Some(ts.into_string()))
            .ok_or_else(|| {
                ApiError::invalid(field, "must be an ISO 8601 date-time with an offset")
            }),
    }
}

fn is_uuid(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| uuid::Uuid::parse_str(s).is_ok())
}

/// Equal as portable values: decimals and dates compared as sent, objects
/// key by key.
fn same_value(a: &Value, b: &Value) -> bool {
    a == b
}

/// The request attributes of a record: `(portable field, attribute name)`
/// pairs, taking only the fields the record carries.
fn attributes(record: &RawRecord, pairs: &[(&str, &str)]) -> Value {
    let mut out = Map::new();
    for (from, to) in pairs {
        if let Some(value) = record.get(*from) {
            out.insert((*to).to_string(), value.clone());
        }
    }
    Value::Object(out)
}

/// Attributes as the rule's own input type, with the same 422s a REST body
/// would get.
fn typed<T: DeserializeOwned>(value: Value) -> Result<T> {
    crate::http::extract::typed(Some(&value))
}

fn strings(record: &RawRecord, field: &str) -> Vec<String> {
    record
        .get(field)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn portable_ref(record: &RawRecord, field: &str) -> Result<ResourceId> {
    record
        .get(field)
        .and_then(Value::as_str)
        .map(|id| ResourceId::Portable(id.to_string()))
        .ok_or_else(|| ApiError::invalid(field, "is required"))
}

/// A person through the person rule. Only set-up makes a person without a
/// date of birth (a member's own person); such a person is made the same
/// way and then given the bundle's type and capacity through the update
/// rule.
fn create_person(tx: &WriteTx, actor: &Actor, record: &RawRecord) -> Result<(i64, String)> {
    let has_birth_date = record.get("date_of_birth").is_some_and(|v| !v.is_null());
    if has_birth_date {
        let attrs = typed(attributes(
            record,
            &[
                ("name", "name"),
                ("email", "email"),
                ("date_of_birth", "date_of_birth"),
                ("person_type", "person_type"),
                ("has_capacity", "has_capacity"),
            ],
        ))?;
        let made = people::create(tx, actor, attrs)?;
        return Ok((made.id, made.portable_id));
    }
    actor.require_manager("import a person without a date of birth")?;
    let name = record
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::invalid("name", "is required"))?;
    let id = people::create_linked(tx, actor.household_id, name)?;
    let attrs = typed(attributes(
        record,
        &[
            ("email", "email"),
            ("person_type", "person_type"),
            ("has_capacity", "has_capacity"),
        ],
    ))?;
    let made = people::update(tx, actor, &ResourceId::Numeric(id), &IfMatch(None), attrs)?;
    Ok((made.id, made.portable_id))
}

/// Counts of a summary, for the audit event and the command line.
pub fn total(counts: &BTreeMap<String, u64>) -> u64 {
    counts.values().sum()
}
