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

use std::collections::HashMap;

use rusqlite::{Connection, Row, ToSql};
use serde::Serialize;
use serde_json::Value;

use crate::auth::Actor;
use crate::auth::store::VISIBLE_PERSON;
use crate::error::Result;
use crate::http::respond::etag;

/// The named parameters every person-scoped query binds.
struct Visibility {
    household_id: i64,
    membership_id: i64,
    is_manager: bool,
    now: String,
}

impl Visibility {
    fn of(actor: &Actor) -> Visibility {
        Visibility {
            household_id: actor.household_id,
            membership_id: actor.membership_id,
            is_manager: actor.is_manager(),
            now: crate::time::now(),
        }
    }
}

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
    let mut params: Vec<(&str, &dyn ToSql)> = vec![
        (":household_id", &vis.household_id),
        (":membership_id", &vis.membership_id),
        (":is_manager", &vis.is_manager),
        (":now", &vis.now),
    ];
    params.extend_from_slice(extra);
    each_row(conn, sql, &params, map, each)
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

/// The common fields: portable_id, updated_at and etag from columns 0..=2
/// (portable_id, updated_at, lock_version).
#[derive(Debug, Clone, Serialize)]
pub struct Common {
    pub portable_id: String,
    pub updated_at: String,
    pub etag: String,
}

fn common(r: &Row<'_>) -> rusqlite::Result<Common> {
    let portable_id: String = r.get(0)?;
    let lock_version: i64 = r.get(2)?;
    Ok(Common {
        etag: etag(&portable_id, lock_version),
        portable_id,
        updated_at: r.get(1)?,
    })
}

#[derive(Debug, Serialize)]
pub struct Scope {
    pub household_portable_id: String,
    pub person_portable_ids: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct PersonRecord {
    #[serde(flatten)]
    pub common: Common,
    pub name: String,
    pub email: Option<String>,
    pub date_of_birth: Option<String>,
    pub person_type: String,
    pub has_capacity: bool,
    pub location_portable_ids: Vec<String>,
    pub notification_preference_portable_id: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct LocationRecord {
    #[serde(flatten)]
    pub common: Common,
    pub name: String,
    pub description: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct MedicationRecord {
    #[serde(flatten)]
    pub common: Common,
    pub location_portable_id: Option<String>,
    pub name: String,
    pub friendly_name: Option<String>,
    pub category: Option<String>,
    pub description: Option<String>,
    pub dose_amount: Option<String>,
    pub dose_unit: Option<String>,
    pub default_schedule_type: Option<String>,
    pub current_supply: String,
    pub reorder_threshold: Option<String>,
    pub barcode: Option<String>,
    pub dmd_code: Option<String>,
    pub dmd_system: Option<String>,
    pub dmd_concept_class: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct DosageOptionRecord {
    #[serde(flatten)]
    pub common: Common,
    pub medication_portable_id: String,
    pub amount: String,
    pub unit: String,
    pub frequency: Option<String>,
    pub description: Option<String>,
    pub default_for_adults: bool,
    pub default_for_children: bool,
    pub default_max_daily_doses: Option<i64>,
    pub default_min_hours_between_doses: Option<String>,
    pub default_dose_cycle: Option<String>,
    pub current_supply: Option<String>,
    pub reorder_threshold: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct ScheduleRecord {
    #[serde(flatten)]
    pub common: Common,
    pub source_dosage_option_portable_id: Option<String>,
    pub retired_at: Option<String>,
    pub person_portable_id: String,
    pub medication_portable_id: String,
    pub dose_amount: String,
    pub dose_unit: String,
    pub frequency: Option<String>,
    pub dose_cycle: Option<String>,
    pub max_daily_doses: Option<i64>,
    pub min_hours_between_doses: Option<String>,
    pub schedule_type: String,
    pub schedule_config: Value,
    pub start_date: String,
    pub end_date: Option<String>,
    pub active: bool,
    pub notes: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct PersonMedicationRecord {
    #[serde(flatten)]
    pub common: Common,
    pub source_dosage_option_portable_id: Option<String>,
    pub retired_at: Option<String>,
    pub person_portable_id: String,
    pub medication_portable_id: String,
    pub dose_amount: String,
    pub dose_unit: String,
    pub dose_cycle: Option<String>,
    pub max_daily_doses: Option<i64>,
    pub min_hours_between_doses: Option<String>,
    pub administration_kind: String,
    pub active: bool,
    pub notes: Option<String>,
    pub position: i64,
}

#[derive(Debug, Serialize)]
pub struct MedicationTakeRecord {
    #[serde(flatten)]
    pub common: Common,
    pub client_uuid: Option<String>,
    pub source_type: String,
    pub source_portable_id: Option<String>,
    pub taken_at: String,
    pub dose_amount: String,
    pub dose_unit: String,
    pub taken_from_medication_portable_id: Option<String>,
    pub taken_from_location_portable_id: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct NotificationPreferenceRecord {
    #[serde(flatten)]
    pub common: Common,
    pub person_portable_id: String,
    pub enabled: bool,
    pub dose_due_enabled: bool,
    pub missed_dose_enabled: bool,
    pub low_stock_enabled: bool,
    pub private_text_enabled: bool,
    pub morning_time: Option<String>,
    pub afternoon_time: Option<String>,
    pub evening_time: Option<String>,
    pub night_time: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct HealthEventRecord {
    #[serde(flatten)]
    pub common: Common,
    pub person_portable_id: String,
    pub event_kind: String,
    pub severity: Option<String>,
    pub title: String,
    pub notes: Option<String>,
    pub started_on: String,
    pub ended_on: Option<String>,
    pub medication_portable_ids: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct PausePeriodRecord {
    #[serde(flatten)]
    pub common: Common,
    pub source_type: String,
    pub source_portable_id: Option<String>,
    pub reason: String,
    pub note: Option<String>,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub created_at: String,
    pub legacy_context: bool,
    pub imported_context: bool,
    pub recorded_by_person_portable_id: Option<String>,
    pub resumed_by_person_portable_id: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DoseOccurrenceRecord {
    #[serde(flatten)]
    pub common: Common,
    pub source_type: String,
    pub source_portable_id: Option<String>,
    pub window_starts_on: String,
    pub window_ends_on: String,
    pub position: i64,
    pub scheduled_at: Option<String>,
    pub outcome: String,
    pub reason: Option<String>,
    pub note: Option<String>,
    pub resolved_at: Option<String>,
    pub medication_take_portable_id: Option<String>,
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
    vis: Visibility,
}

impl<'a> Reader<'a> {
    pub fn new(conn: &'a Connection, actor: &Actor) -> Reader<'a> {
        Reader {
            conn,
            vis: Visibility::of(actor),
        }
    }

    pub fn household_portable_id(&self) -> Result<String> {
        Ok(self
            .conn
            .prepare_cached("SELECT portable_id FROM households WHERE id = ?1")?
            .query_row([self.vis.household_id], |r| r.get(0))?)
    }

    /// The change-feed position now: the household's highest seq (0 if none).
    pub fn max_seq(&self) -> Result<i64> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT COALESCE(MAX(seq), 0) FROM change_feed WHERE household_id = ?1",
            )?
            .query_row([self.vis.household_id], |r| r.get(0))?)
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
                let common = common(r)?;
                let location_portable_ids =
                    by_person.remove(&common.portable_id).unwrap_or_default();
                Ok(PersonRecord {
                    common,
                    name: r.get(3)?,
                    email: r.get(4)?,
                    date_of_birth: r.get(5)?,
                    person_type: r.get(6)?,
                    has_capacity: r.get(7)?,
                    location_portable_ids,
                    notification_preference_portable_id: r.get(8)?,
                })
            },
            each,
        )
    }

    pub fn locations(&self, each: impl FnMut(LocationRecord) -> Result<()>) -> Result<()> {
        each_row(
            self.conn,
                "SELECT portable_id, updated_at, lock_version, name, description
                 FROM locations WHERE household_id = :household_id AND deleted_at IS NULL ORDER BY id",
            &[(":household_id", &self.vis.household_id)],
            |r| {
                Ok(LocationRecord {
                    common: common(r)?,
                    name: r.get(3)?,
                    description: r.get(4)?,
                })
            },
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
            &[(":household_id", &self.vis.household_id)],
            |r| {
                Ok(MedicationRecord {
                    common: common(r)?,
                    location_portable_id: r.get(3)?,
                    name: r.get(4)?,
                    friendly_name: r.get(5)?,
                    category: r.get(6)?,
                    description: r.get(7)?,
                    dose_amount: r.get(8)?,
                    dose_unit: r.get(9)?,
                    default_schedule_type: r.get(10)?,
                    current_supply: r.get(11)?,
                    reorder_threshold: r.get(12)?,
                    barcode: r.get(13)?,
                    dmd_code: r.get(14)?,
                    dmd_system: r.get(15)?,
                    dmd_concept_class: r.get(16)?,
                })
            },
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
            &[(":household_id", &self.vis.household_id)],
            |r| {
                Ok(DosageOptionRecord {
                    common: common(r)?,
                    medication_portable_id: r.get(3)?,
                    amount: r.get(4)?,
                    unit: r.get(5)?,
                    frequency: r.get(6)?,
                    description: r.get(7)?,
                    default_for_adults: r.get(8)?,
                    default_for_children: r.get(9)?,
                    default_max_daily_doses: r.get(10)?,
                    default_min_hours_between_doses: r.get(11)?,
                    default_dose_cycle: r.get(12)?,
                    current_supply: r.get(13)?,
                    reorder_threshold: r.get(14)?,
                })
            },
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
            |r| {
                let config: String = r.get(14)?;
                Ok(ScheduleRecord {
                    common: common(r)?,
                    source_dosage_option_portable_id: r.get(3)?,
                    retired_at: r.get(4)?,
                    person_portable_id: r.get(5)?,
                    medication_portable_id: r.get(6)?,
                    dose_amount: r.get(7)?,
                    dose_unit: r.get(8)?,
                    frequency: r.get(9)?,
                    dose_cycle: r.get(10)?,
                    max_daily_doses: r.get(11)?,
                    min_hours_between_doses: r.get(12)?,
                    schedule_type: r.get(13)?,
                    schedule_config: serde_json::from_str(&config)
                        .unwrap_or_else(|_| Value::Object(Default::default())),
                    start_date: r.get(15)?,
                    end_date: r.get(16)?,
                    active: r.get(17)?,
                    notes: r.get(18)?,
                })
            },
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
            |r| {
                Ok(PersonMedicationRecord {
                    common: common(r)?,
                    source_dosage_option_portable_id: r.get(3)?,
                    retired_at: r.get(4)?,
                    person_portable_id: r.get(5)?,
                    medication_portable_id: r.get(6)?,
                    dose_amount: r.get(7)?,
                    dose_unit: r.get(8)?,
                    dose_cycle: r.get(9)?,
                    max_daily_doses: r.get(10)?,
                    min_hours_between_doses: r.get(11)?,
                    administration_kind: r.get(12)?,
                    active: r.get(13)?,
                    notes: r.get(14)?,
                    position: r.get(15)?,
                })
            },
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
            |r| {
                Ok(MedicationTakeRecord {
                    common: common(r)?,
                    client_uuid: r.get(3)?,
                    source_type: r.get(4)?,
                    source_portable_id: r.get(5)?,
                    taken_at: r.get(6)?,
                    dose_amount: r.get(7)?,
                    dose_unit: r.get(8)?,
                    taken_from_medication_portable_id: r.get(9)?,
                    taken_from_location_portable_id: r.get(10)?,
                })
            },
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
            |r| {
                Ok(NotificationPreferenceRecord {
                    common: common(r)?,
                    person_portable_id: r.get(3)?,
                    enabled: r.get(4)?,
                    dose_due_enabled: r.get(5)?,
                    missed_dose_enabled: r.get(6)?,
                    low_stock_enabled: r.get(7)?,
                    private_text_enabled: r.get(8)?,
                    morning_time: r.get(9)?,
                    afternoon_time: r.get(10)?,
                    evening_time: r.get(11)?,
                    night_time: r.get(12)?,
                })
            },
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
                let common = common(r)?;
                let medication_portable_ids =
                    by_event.remove(&common.portable_id).unwrap_or_default();
                Ok(HealthEventRecord {
                    common,
                    person_portable_id: r.get(3)?,
                    event_kind: r.get(4)?,
                    severity: r.get(5)?,
                    title: r.get(6)?,
                    notes: r.get(7)?,
                    started_on: r.get(8)?,
                    ended_on: r.get(9)?,
                    medication_portable_ids,
                })
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
                        rec_p.portable_id, res_p.portable_id
                 FROM medication_pause_periods x
                 JOIN people p ON p.id = x.person_id
                 {SOURCE_JOINS}
                 LEFT JOIN memberships rec ON rec.id = x.recorded_by_membership_id
                 LEFT JOIN people rec_p ON rec_p.id = rec.person_id
                 LEFT JOIN memberships res ON res.id = x.resumed_by_membership_id
                 LEFT JOIN people res_p ON res_p.id = res.person_id
                 WHERE x.household_id = :household_id AND {VISIBLE_PERSON}
                 ORDER BY x.id"
            ),
            &[],
            |r| {
                Ok(PausePeriodRecord {
                    common: common(r)?,
                    source_type: r.get(3)?,
                    source_portable_id: r.get(4)?,
                    reason: r.get(5)?,
                    note: r.get(6)?,
                    started_at: r.get(7)?,
                    ended_at: r.get(8)?,
                    created_at: r.get(9)?,
                    legacy_context: r.get(10)?,
                    imported_context: r.get(11)?,
                    recorded_by_person_portable_id: r.get(12)?,
                    resumed_by_person_portable_id: r.get(13)?,
                })
            },
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
                let record = DoseOccurrenceRecord {
                    common: common(r)?,
                    source_type: r.get(3)?,
                    source_portable_id: r.get(4)?,
                    window_starts_on: r.get(5)?,
                    window_ends_on: r.get(6)?,
                    position: r.get(7)?,
                    scheduled_at: r.get(8)?,
                    outcome: r.get(9)?,
                    reason: r.get(10)?,
                    note: r.get(11)?,
                    resolved_at: r.get(12)?,
                    medication_take_portable_id: r.get(13)?,
                };
                Ok(map((r.get(14)?, record)))
            },
            each,
        )
    }
}
