//! Care's portable rows: the read model the sync snapshot and the export
//! consume. Each query streams its rows to a callback (a snapshot of years
//! of takes is written out as it is read, never held) and selects the
//! columns of its portable record in the record's order; every relationship
//! is a portable id. Person-scoped rows are limited by `VISIBLE_PERSON` on
//! alias `p`: the people the actor may view right now.

use rusqlite::{Connection, Row, ToSql};

use crate::db::PrepareKept;

use crate::auth::Actor;
use crate::auth::store::{VISIBLE_PERSON, Visibility};
use crate::db::each_row;
use crate::error::Result;

/// The joins naming the source of a row `x` with `source_type`/`source_id`.
const SOURCE_JOINS: &str = "LEFT JOIN schedules src_s
           ON x.source_type = 'schedule' AND src_s.id = x.source_id
         LEFT JOIN person_medications src_pm
           ON x.source_type = 'person_medication' AND src_pm.id = x.source_id";
const SOURCE_PORTABLE_ID: &str = "COALESCE(src_s.portable_id, src_pm.portable_id)";

/// Runs a person-scoped query (its SQL names `:household_id` and includes
/// `VISIBLE_PERSON` on alias `p`, plus any `extra` parameters) row by row.
fn visible(
    conn: &Connection,
    vis: &Visibility,
    sql: &str,
    extra: &[(&str, &dyn ToSql)],
    each: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    each_row(conn, sql, &vis.with(extra), each)
}

/// Visible people with their notification preferences' portable id:
/// (portable_id, updated_at, lock_version, name, email, date_of_birth,
/// person_type, has_capacity, preferences' portable_id).
pub fn people(
    conn: &Connection,
    vis: &Visibility,
    each: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    visible(
        conn,
        vis,
        &format!(
            "SELECT p.portable_id, p.updated_at, p.lock_version, p.name, p.email,
                        p.date_of_birth, p.person_type, p.has_capacity, np.portable_id
                 FROM people p
                 LEFT JOIN notification_preferences np ON np.person_id = p.id
                 WHERE p.household_id = :household_id AND {VISIBLE_PERSON}
                 ORDER BY p.id"
        ),
        &[],
        each,
    )
}

/// Schedules of visible people, retired ones included (with retired_at).
pub fn schedules(
    conn: &Connection,
    vis: &Visibility,
    each: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    visible(
        conn,
        vis,
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
        each,
    )
}

/// Direct assignments of visible people, retired ones included.
pub fn person_medications(
    conn: &Connection,
    vis: &Visibility,
    each: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    visible(
        conn,
        vis,
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
        each,
    )
}

/// Takes of visible people, oldest first.
pub fn medication_takes(
    conn: &Connection,
    vis: &Visibility,
    each: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    visible(
        conn,
        vis,
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
        each,
    )
}

pub fn notification_preferences(
    conn: &Connection,
    vis: &Visibility,
    each: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    visible(
        conn,
        vis,
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
        each,
    )
}

/// The medications of live health events of visible people: (event's
/// portable id, medication's portable id), by event.
pub fn health_event_medications(
    conn: &Connection,
    vis: &Visibility,
    each: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    visible(
        conn,
        vis,
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
        each,
    )
}

/// Live (not deleted) health events of visible people.
pub fn health_events(
    conn: &Connection,
    vis: &Visibility,
    each: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    visible(
        conn,
        vis,
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
        each,
    )
}

pub fn pause_periods(
    conn: &Connection,
    vis: &Visibility,
    each: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    visible(
        conn,
        vis,
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
        each,
    )
}

/// Persisted outcomes of visible people (reads never project open
/// occurrences), with the row id last; `ids`, a JSON array, keeps only
/// those rows (one query for a whole page of change-feed entries).
pub fn dose_occurrences(
    conn: &Connection,
    vis: &Visibility,
    ids: Option<&str>,
    each: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    let (filter, extra): (&str, &[(&str, &dyn ToSql)]) = match &ids {
        None => ("", &[]),
        Some(ids) => (
            "AND x.id IN (SELECT value FROM json_each(:ids))",
            &[(":ids", ids)],
        ),
    };
    visible(
        conn,
        vis,
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
        each,
    )
}

/// A take as the CSV export lists it.
pub struct CsvTake {
    pub portable_id: String,
    pub taken_at: String,
    pub person: String,
    pub medication: String,
    pub dose_amount: String,
    pub dose_unit: String,
    pub source_type: String,
    pub location: Option<String>,
}

/// The takes of the people the actor may view, oldest first, one at a time.
pub fn takes_for_csv(
    conn: &Connection,
    actor: &Actor,
    mut each: impl FnMut(CsvTake) -> Result<()>,
) -> Result<()> {
    let vis = Visibility::of(actor);
    let household_id = actor.household_id;
    let mut stmt = conn.prepare_kept(crate::db::sql!(
        "SELECT t.portable_id, t.taken_at, p.name, COALESCE(m.friendly_name, m.name),
                t.dose_amount, t.dose_unit, t.source_type, l.name
         FROM medication_takes t
         JOIN people p ON p.id = t.person_id
         LEFT JOIN medications m ON m.id = t.taken_from_medication_id
         LEFT JOIN locations l ON l.id = t.taken_from_location_id
         WHERE t.household_id = :household_id AND {VISIBLE_PERSON}
         ORDER BY t.taken_at, t.id"
    ))?;
    let params = vis.with(&[(":household_id", &household_id)]);
    let mut rows = stmt.query(params.as_slice())?;
    while let Some(r) = rows.next()? {
        each(CsvTake {
            portable_id: r.get(0)?,
            taken_at: r.get(1)?,
            person: r.get(2)?,
            medication: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
            dose_amount: r.get(4)?,
            dose_unit: r.get(5)?,
            source_type: r.get(6)?,
            location: r.get(7)?,
        })?;
    }
    Ok(())
}
