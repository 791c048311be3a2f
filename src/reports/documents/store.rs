//! SQL of the reports: reads only.

use crate::db::PrepareKept;
use rusqlite::{Connection, OptionalExtension, params};

use super::model::{ReportHealthEvent, ReportHousehold, ReportMedicine, ReportPause, ReportTake};
use crate::domain::Timestamp;
use crate::error::Result;

pub fn household(conn: &Connection, household_id: i64) -> Result<Option<ReportHousehold>> {
    Ok(conn
        .prepare_kept("SELECT id, name, time_zone FROM households WHERE id = ?1")?
        .query_row([household_id], |r| {
            Ok(ReportHousehold {
                id: r.get(0)?,
                name: r.get(1)?,
                time_zone: r.get(2)?,
            })
        })
        .optional()?)
}

/// What a schedule's timing is built from: (type, config JSON, frequency).
pub type Timing = (Option<String>, String, Option<String>);

/// The person's live schedules and direct assignments, schedules first,
/// each with what its timing is described from.
pub fn medicines(conn: &Connection, person_id: i64) -> Result<Vec<(ReportMedicine, Timing)>> {
    let mut out = Vec::new();
    let mut stmt = conn.prepare_kept(
        "SELECT s.portable_id, m.id, m.portable_id, m.name,
             s.dose_amount, s.dose_unit, s.schedule_type, s.start_date, s.end_date, s.active,
             s.schedule_config, s.frequency
         FROM schedules s JOIN medications m ON m.id = s.medication_id
         WHERE s.person_id = ?1 AND s.retired_at IS NULL
         ORDER BY s.id",
    )?;
    let rows = stmt.query_map([person_id], |r| {
        let schedule_type: String = r.get(6)?;
        Ok((
            ReportMedicine {
                source_type: "schedule".into(),
                source_portable_id: r.get(0)?,
                medication_id: r.get(1)?,
                medication_portable_id: r.get(2)?,
                medication_name: r.get(3)?,
                dose_amount: r.get(4)?,
                dose_unit: r.get(5)?,
                schedule_type: Some(schedule_type.clone()),
                administration_kind: None,
                timing: String::new(),
                start_date: r.get(7)?,
                end_date: r.get(8)?,
                active: r.get(9)?,
            },
            (Some(schedule_type), r.get(10)?, r.get(11)?),
        ))
    })?;
    for row in rows {
        out.push(row?);
    }
    let mut stmt = conn.prepare_kept(
        "SELECT a.portable_id, m.id, m.portable_id, m.name,
             a.dose_amount, a.dose_unit, a.administration_kind, a.active
         FROM person_medications a JOIN medications m ON m.id = a.medication_id
         WHERE a.person_id = ?1 AND a.retired_at IS NULL
         ORDER BY a.position",
    )?;
    let rows = stmt.query_map([person_id], |r| {
        Ok((
            ReportMedicine {
                source_type: "person_medication".into(),
                source_portable_id: r.get(0)?,
                medication_id: r.get(1)?,
                medication_portable_id: r.get(2)?,
                medication_name: r.get(3)?,
                dose_amount: r.get(4)?,
                dose_unit: r.get(5)?,
                schedule_type: None,
                administration_kind: Some(r.get(6)?),
                timing: String::new(),
                start_date: None,
                end_date: None,
                active: r.get(7)?,
            },
            (None, "{}".to_string(), None),
        ))
    })?;
    for row in rows {
        out.push(row?);
    }
    Ok(out)
}

/// The medicine name of a take's or pause's source.
const SOURCE_NAME: &str = "(SELECT m.name FROM medications m
    WHERE m.id = CASE x.source_type
        WHEN 'schedule' THEN (SELECT medication_id FROM schedules WHERE id = x.source_id)
        ELSE (SELECT medication_id FROM person_medications WHERE id = x.source_id) END)";

/// Pauses of the person that overlap [from, to).
pub fn pauses(
    conn: &Connection,
    person_id: i64,
    from: &Timestamp,
    to: &Timestamp,
) -> Result<Vec<ReportPause>> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT x.portable_id, x.source_type, coalesce({SOURCE_NAME}, ''), x.reason, x.note,
                 x.started_at, x.ended_at
             FROM medication_pause_periods x
             WHERE x.person_id = ?1 AND (x.started_at IS NULL OR x.started_at < ?3)
               AND (x.ended_at IS NULL OR x.ended_at >= ?2)
             ORDER BY coalesce(x.started_at, x.created_at), x.id"
        ))?
        .query_map(params![person_id, from, to], |r| {
            Ok(ReportPause {
                portable_id: r.get(0)?,
                source_type: r.get(1)?,
                medication_name: r.get(2)?,
                reason: r.get(3)?,
                note: r.get(4)?,
                started_at: r.get(5)?,
                ended_at: r.get(6)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Every take of the person in [from, to), oldest first; `taken_at_local`
/// is left for the caller (it knows the time zone).
pub fn takes(
    conn: &Connection,
    person_id: i64,
    from: &Timestamp,
    to: &Timestamp,
) -> Result<Vec<ReportTake>> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT x.portable_id, coalesce({SOURCE_NAME}, ''), x.taken_at, x.dose_amount,
                 x.dose_unit, x.source_type
             FROM medication_takes x
             WHERE x.person_id = ?1 AND x.taken_at >= ?2 AND x.taken_at < ?3
             ORDER BY x.taken_at, x.id"
        ))?
        .query_map(params![person_id, from, to], |r| {
            Ok(ReportTake {
                portable_id: r.get(0)?,
                medication_name: r.get(1)?,
                taken_at: r.get(2)?,
                taken_at_local: String::new(),
                dose_amount: r.get(3)?,
                dose_unit: r.get(4)?,
                source_type: r.get(5)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Live health events of the person overlapping [start, end] (ISO dates).
pub fn health_events(
    conn: &Connection,
    person_id: i64,
    start: &str,
    end: &str,
) -> Result<Vec<ReportHealthEvent>> {
    Ok(conn
        .prepare_kept(
            "SELECT portable_id, event_kind, severity, title, notes, started_on, ended_on
             FROM health_events
             WHERE person_id = ?1 AND deleted_at IS NULL AND started_on <= ?3
               AND (ended_on IS NULL OR ended_on >= ?2)
             ORDER BY started_on, id",
        )?
        .query_map(params![person_id, start, end], |r| {
            Ok(ReportHealthEvent {
                portable_id: r.get(0)?,
                event_kind: r.get(1)?,
                severity: r.get(2)?,
                title: r.get(3)?,
                notes: r.get(4)?,
                started_on: r.get(5)?,
                ended_on: r.get(6)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}
