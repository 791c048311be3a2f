//! SQL for the sync and mobile snapshots: one query per collection (people
//! add one for their location links, health events one for their medication
//! links), all run on the caller's connection inside its read transaction.
//! Each collection hands its records one at a time to a callback, so a
//! snapshot of years of takes is written out as it is read, never held.
//!
//! Every relationship is a portable id; no numeric id leaves this module.
//! Person-scoped collections are limited by `VISIBLE_PERSON`: the people the
//! actor may view right now, and only their sources, takes, events,
//! preferences, pause periods and outcomes.

use crate::db::PrepareKept;
use std::collections::HashMap;

use rusqlite::{Connection, Row, ToSql};

pub use super::snapshot_model::*;
use crate::auth::Actor;
use crate::auth::store::{VISIBLE_PERSON, Visibility};
use crate::error::Result;

/// Runs a prepared query and hands each mapped row to `each`.
fn each_row<T>(
    conn: &Connection,
    sql: &str,
    params: &[(&str, &dyn ToSql)],
    mut map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    mut each: impl FnMut(T) -> Result<()>,
) -> Result<()> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query(params)?;
    while let Some(row) = rows.next()? {
        each(map(row)?)?;
    }
    Ok(())
}

/// Runs a person-scoped query (its SQL names `:household_id` and includes
/// `VISIBLE_PERSON` on alias `p`, plus any `extra` parameters) row by row.
fn visible<T>(
    conn: &Connection,
    vis: &Visibility,
    sql: &str,
    extra: &[(&str, &dyn ToSql)],
    map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    each: impl FnMut(T) -> Result<()>,
) -> Result<()> {
    each_row(conn, sql, &vis.with(extra), map, each)
}

/// Collects a streamed collection (for the few callers that need a list).
pub fn collect<T>(
    read: impl FnOnce(&mut dyn FnMut(T) -> Result<()>) -> Result<()>,
) -> Result<Vec<T>> {
    let mut items = Vec::new();
    read(&mut |item| {
        items.push(item);
        Ok(())
    })?;
    Ok(items)
}

/// The joins naming the source of a row `x` with `source_type`/`source_id`.
const SOURCE_JOINS: &str = "LEFT JOIN schedules src_s
           ON x.source_type = 'schedule' AND src_s.id = x.source_id
         LEFT JOIN person_medications src_pm
           ON x.source_type = 'person_medication' AND src_pm.id = x.source_id";
const SOURCE_PORTABLE_ID: &str = "COALESCE(src_s.portable_id, src_pm.portable_id)";

/// Reads every collection. `v2` adds pause periods and dose outcomes.
pub struct Reader<'a> {
    conn: &'a Connection,
    household_id: i64,
    vis: Visibility,
}

impl<'a> Reader<'a> {
    pub fn new(conn: &'a Connection, actor: &Actor) -> Reader<'a> {
        Reader {
            conn,
            household_id: actor.household_id,
            vis: Visibility::of(actor),
        }
    }

    pub fn household_portable_id(&self) -> Result<String> {
        Ok(self
            .conn
            .prepare_kept("SELECT portable_id FROM households WHERE id = ?1")?
            .query_row([self.household_id], |r| r.get(0))?)
    }

    pub fn people(&self, each: impl FnMut(PersonRecord) -> Result<()>) -> Result<()> {
        let links = collect(|sink| {
            visible(
                self.conn,
                &self.vis,
                &format!(
                    "SELECT p.portable_id, l.portable_id
                 FROM location_memberships lm
                 JOIN people p ON p.id = lm.person_id
                 JOIN locations l ON l.id = lm.location_id AND l.deleted_at IS NULL
                 WHERE p.household_id = :household_id AND {VISIBLE_PERSON}
                 ORDER BY lm.person_id, l.id"
                ),
                &[],
                |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
                sink,
            )
        })?;
        let mut by_person: HashMap<String, Vec<String>> = HashMap::new();
        for (person, location) in links {
            by_person.entry(person).or_default().push(location);
        }
        visible(
            self.conn,
            &self.vis,
            &format!(
                "SELECT p.portable_id, p.updated_at, p.lock_version, p.name, p.email,
                        p.date_of_birth, p.person_type, p.has_capacity, np.portable_id
                 FROM people p
                 LEFT JOIN notification_preferences np ON np.person_id = p.id
                 WHERE p.household_id = :household_id AND {VISIBLE_PERSON}
                 ORDER BY p.id"
            ),
            &[],
            |r| {
                let mut person = PersonRecord::from_row(r)?;
                person.location_portable_ids = by_person
                    .remove(&person.common.portable_id)
                    .unwrap_or_default();
                Ok(person)
            },
            each,
        )
    }

    pub fn locations(&self, each: impl FnMut(LocationRecord) -> Result<()>) -> Result<()> {
        each_row(
            self.conn,
                "SELECT portable_id, updated_at, lock_version, name, description
                 FROM locations WHERE household_id = :household_id AND deleted_at IS NULL ORDER BY id",
            &[(":household_id", &self.household_id)],
            LocationRecord::from_row,
            each,
        )
    }

    pub fn medications(&self, each: impl FnMut(MedicationRecord) -> Result<()>) -> Result<()> {
        each_row(
            self.conn,
            "SELECT m.portable_id, m.updated_at, m.lock_version, l.portable_id, m.name,
                        m.friendly_name, m.category, m.description, m.dose_amount, m.dose_unit,
                        m.default_schedule_type, m.current_supply, m.reorder_threshold,
                        m.barcode, m.dmd_code, m.dmd_system, m.dmd_concept_class
                 FROM medications m
                 LEFT JOIN locations l ON l.id = m.location_id AND l.deleted_at IS NULL
                 WHERE m.household_id = :household_id AND m.deleted_at IS NULL
                 ORDER BY m.id",
            &[(":household_id", &self.household_id)],
            MedicationRecord::from_row,
            each,
        )
    }

    pub fn dosage_options(&self, each: impl FnMut(DosageOptionRecord) -> Result<()>) -> Result<()> {
        each_row(
            self.conn,
            "SELECT d.portable_id, d.updated_at, d.lock_version, m.portable_id, d.amount,
                        d.unit, d.frequency, d.description, d.default_for_adults,
                        d.default_for_children, d.default_max_daily_doses,
                        d.default_min_hours_between_doses, d.default_dose_cycle,
                        d.current_supply, d.reorder_threshold
                 FROM dosage_options d
                 JOIN medications m ON m.id = d.medication_id AND m.deleted_at IS NULL
                 WHERE d.household_id = :household_id
                 ORDER BY d.id",
            &[(":household_id", &self.household_id)],
            DosageOptionRecord::from_row,
            each,
        )
    }

    /// Schedules of visible people, retired ones included (with retired_at).
    pub fn schedules(&self, each: impl FnMut(ScheduleRecord) -> Result<()>) -> Result<()> {
        visible(
            self.conn,
            &self.vis,
            &format!(
                "SELECT s.portable_id, s.updated_at, s.lock_version, d.portable_id, s.retired_at,
                        p.portable_id, m.portable_id, s.dose_amount, s.dose_unit, s.frequency,
                        s.dose_cycle, s.max_daily_doses, s.min_hours_between_doses,
                        s.schedule_type, s.schedule_config, s.start_date, s.end_date, s.active,
                        s.notes
                 FROM schedules s
                 JOIN people p ON p.id = s.person_id
                 JOIN medications m ON m.id = s.medication_id
                 LEFT JOIN dosage_options d ON d.id = s.source_dosage_option_id
                 WHERE s.household_id = :household_id AND {VISIBLE_PERSON}
                 ORDER BY s.id"
            ),
            &[],
            ScheduleRecord::from_row,
            each,
        )
    }

    /// Direct assignments of visible people, retired ones included.
    pub fn person_medications(
        &self,
        each: impl FnMut(PersonMedicationRecord) -> Result<()>,
    ) -> Result<()> {
        visible(
            self.conn,
            &self.vis,
            &format!(
                "SELECT a.portable_id, a.updated_at, a.lock_version, d.portable_id, a.retired_at,
                        p.portable_id, m.portable_id, a.dose_amount, a.dose_unit, a.dose_cycle,
                        a.max_daily_doses, a.min_hours_between_doses, a.administration_kind,
                        a.active, a.notes, a.position
                 FROM person_medications a
                 JOIN people p ON p.id = a.person_id
                 JOIN medications m ON m.id = a.medication_id
                 LEFT JOIN dosage_options d ON d.id = a.source_dosage_option_id
                 WHERE a.household_id = :household_id AND {VISIBLE_PERSON}
                 ORDER BY a.person_id, a.position"
            ),
            &[],
            PersonMedicationRecord::from_row,
            each,
        )
    }

    pub fn medication_takes(
        &self,
        each: impl FnMut(MedicationTakeRecord) -> Result<()>,
    ) -> Result<()> {
        visible(
            self.conn,
            &self.vis,
            &format!(
                "SELECT x.portable_id, x.updated_at, x.lock_version, x.client_uuid,
                        x.source_type, {SOURCE_PORTABLE_ID}, x.taken_at, x.dose_amount,
                        x.dose_unit, tm.portable_id, tl.portable_id
                 FROM medication_takes x
                 JOIN people p ON p.id = x.person_id
                 {SOURCE_JOINS}
                 LEFT JOIN medications tm ON tm.id = x.taken_from_medication_id
                 LEFT JOIN locations tl ON tl.id = x.taken_from_location_id
                 WHERE x.household_id = :household_id AND {VISIBLE_PERSON}
                 ORDER BY x.taken_at, x.id"
            ),
            &[],
            MedicationTakeRecord::from_row,
            each,
        )
    }

    pub fn notification_preferences(
        &self,
        each: impl FnMut(NotificationPreferenceRecord) -> Result<()>,
    ) -> Result<()> {
        visible(
            self.conn,
            &self.vis,
            &format!(
                "SELECT n.portable_id, n.updated_at, n.lock_version, p.portable_id, n.enabled,
                        n.dose_due_enabled, n.missed_dose_enabled, n.low_stock_enabled,
                        n.private_text_enabled, n.morning_time, n.afternoon_time,
                        n.evening_time, n.night_time
                 FROM notification_preferences n
                 JOIN people p ON p.id = n.person_id
                 WHERE n.household_id = :household_id AND {VISIBLE_PERSON}
                 ORDER BY n.id"
            ),
            &[],
            NotificationPreferenceRecord::from_row,
            each,
        )
    }

    /// Live (not deleted) health events of visible people.
    pub fn health_events(&self, each: impl FnMut(HealthEventRecord) -> Result<()>) -> Result<()> {
        let links = collect(|sink| {
            visible(
                self.conn,
                &self.vis,
                &format!(
                    "SELECT h.portable_id, m.portable_id
                 FROM health_event_medications hm
                 JOIN health_events h ON h.id = hm.health_event_id AND h.deleted_at IS NULL
                 JOIN people p ON p.id = h.person_id
                 JOIN medications m ON m.id = hm.medication_id
                 WHERE h.household_id = :household_id AND {VISIBLE_PERSON}
                 ORDER BY hm.health_event_id, m.id"
                ),
                &[],
                |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
                sink,
            )
        })?;
        let mut by_event: HashMap<String, Vec<String>> = HashMap::new();
        for (event, medication) in links {
            by_event.entry(event).or_default().push(medication);
        }
        visible(
            self.conn,
            &self.vis,
            &format!(
                "SELECT h.portable_id, h.updated_at, h.lock_version, p.portable_id, h.event_kind,
                        h.severity, h.title, h.notes, h.started_on, h.ended_on
                 FROM health_events h
                 JOIN people p ON p.id = h.person_id
                 WHERE h.household_id = :household_id AND h.deleted_at IS NULL
                   AND {VISIBLE_PERSON}
                 ORDER BY h.id"
            ),
            &[],
            |r| {
                let mut event = HealthEventRecord::from_row(r)?;
                event.medication_portable_ids = by_event
                    .remove(&event.common.portable_id)
                    .unwrap_or_default();
                Ok(event)
            },
            each,
        )
    }

    pub fn pause_periods(&self, each: impl FnMut(PausePeriodRecord) -> Result<()>) -> Result<()> {
        visible(
            self.conn,
            &self.vis,
            &format!(
                "SELECT x.portable_id, x.updated_at, x.lock_version, x.source_type,
                        {SOURCE_PORTABLE_ID}, x.reason, x.note, x.started_at, x.ended_at,
                        x.created_at, x.legacy_context, x.imported_context,
                        COALESCE(rec_p.portable_id, ar.recorded_by_person_ref),
                        COALESCE(res_p.portable_id, ar.resumed_by_person_ref)
                 FROM medication_pause_periods x
                 JOIN people p ON p.id = x.person_id
                 {SOURCE_JOINS}
                 LEFT JOIN memberships rec ON rec.id = x.recorded_by_membership_id
                 LEFT JOIN people rec_p ON rec_p.id = rec.person_id
                 LEFT JOIN memberships res ON res.id = x.resumed_by_membership_id
                 LEFT JOIN people res_p ON res_p.id = res.person_id
                 LEFT JOIN medication_pause_period_actor_refs ar ON ar.pause_period_id = x.id
                 WHERE x.household_id = :household_id AND {VISIBLE_PERSON}
                 ORDER BY x.id"
            ),
            &[],
            PausePeriodRecord::from_row,
            each,
        )
    }

    /// Persisted outcomes only: reads never project open occurrences.
    pub fn dose_occurrences(
        &self,
        each: impl FnMut(DoseOccurrenceRecord) -> Result<()>,
    ) -> Result<()> {
        self.dose_occurrence_rows("", &[], |(_, record)| record, each)
    }

    /// The current portable outcomes of `ids` (the visible ones), by row id:
    /// one query for a whole page of change-feed entries.
    pub fn dose_occurrences_by_id(
        &self,
        ids: &[i64],
    ) -> Result<HashMap<i64, DoseOccurrenceRecord>> {
        let mut found = HashMap::with_capacity(ids.len());
        if ids.is_empty() {
            return Ok(found);
        }
        let ids = serde_json::to_string(ids)
            .map_err(|e| crate::error::ApiError::internal(format!("ids: {e}")))?;
        self.dose_occurrence_rows(
            "AND x.id IN (SELECT value FROM json_each(:ids))",
            &[(":ids", &ids)],
            |row| row,
            |(id, record)| {
                found.insert(id, record);
                Ok(())
            },
        )?;
        Ok(found)
    }

    fn dose_occurrence_rows<T>(
        &self,
        filter: &str,
        extra: &[(&str, &dyn ToSql)],
        mut map: impl FnMut((i64, DoseOccurrenceRecord)) -> T,
        each: impl FnMut(T) -> Result<()>,
    ) -> Result<()> {
        visible(
            self.conn,
            &self.vis,
            &format!(
                "SELECT x.portable_id, x.updated_at, x.lock_version, x.source_type,
                        {SOURCE_PORTABLE_ID}, x.window_starts_on, x.window_ends_on, x.position,
                        x.scheduled_at, x.outcome, x.reason, x.note, x.resolved_at,
                        t.portable_id, x.id
                 FROM dose_occurrences x
                 JOIN people p ON p.id = x.person_id
                 {SOURCE_JOINS}
                 LEFT JOIN medication_takes t ON t.id = x.medication_take_id
                 WHERE x.household_id = :household_id {filter} AND {VISIBLE_PERSON}
                 ORDER BY x.id"
            ),
            extra,
            |r| {
                let record = DoseOccurrenceRecord::from_row(r)?;
                Ok(map((r.get(14)?, record)))
            },
            each,
        )
    }
}
