//! SQL for pause periods. Periods of retired sources stay readable (pause
//! history is kept). This is also the one place that flips a source's
//! `active` flag.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Row, named_params, params};

use super::model::{PausePeriod, PauseReason, SourceType};
use crate::auth::Actor;
use crate::auth::store::{VISIBLE_PERSON, Visibility};
use crate::db::page::{self, PageQuery};
use crate::domain::{Page, Timestamp};
use crate::error::Result;

const COLUMNS: &str = "pp.id, pp.portable_id, pp.source_type, pp.source_id,
    COALESCE(s.portable_id, a.portable_id), pp.person_id, p.portable_id, pp.reason, pp.note,
    pp.started_at, pp.ended_at, pp.created_at, pp.updated_at, pp.legacy_context,
    pp.imported_context, pp.recorded_by_membership_id,
    CASE WHEN rm.id IS NOT NULL
         THEN COALESCE(NULLIF(TRIM(ra.display_name), ''), rp.name, ra.email)
         ELSE orp.name END,
    pp.resumed_by_membership_id,
    CASE WHEN em.id IS NOT NULL
         THEN COALESCE(NULLIF(TRIM(ea.display_name), ''), ep.name, ea.email)
         ELSE oep.name END,
    pp.lock_version";

/// One set of joins gives every row its portable references and actor
/// names (no query per row). An imported period whose actor matched no
/// single membership names the person its kept reference points to, when
/// that person is in the household.
const FROM: &str = "medication_pause_periods pp
    JOIN people p ON p.id = pp.person_id
    LEFT JOIN schedules s ON pp.source_type = 'schedule' AND s.id = pp.source_id
    LEFT JOIN person_medications a ON pp.source_type = 'person_medication' AND a.id = pp.source_id
    LEFT JOIN memberships rm ON rm.id = pp.recorded_by_membership_id
    LEFT JOIN accounts ra ON ra.id = rm.account_id
    LEFT JOIN people rp ON rp.id = rm.person_id
    LEFT JOIN memberships em ON em.id = pp.resumed_by_membership_id
    LEFT JOIN accounts ea ON ea.id = em.account_id
    LEFT JOIN people ep ON ep.id = em.person_id
    LEFT JOIN medication_pause_period_actor_refs ar ON ar.pause_period_id = pp.id
    LEFT JOIN people orp ON orp.household_id = pp.household_id
        AND orp.portable_id = ar.recorded_by_person_ref
    LEFT JOIN people oep ON oep.household_id = pp.household_id
        AND oep.portable_id = ar.resumed_by_person_ref";

fn from_row(r: &Row<'_>) -> rusqlite::Result<PausePeriod> {
    let portable_id: String = r.get(1)?;
    Ok(PausePeriod {
        row_id: r.get(0)?,
        id: portable_id.clone(),
        portable_id,
        source_type: r.get(2)?,
        source_numeric_id: r.get(3)?,
        source_id: r.get(4)?,
        person_id: r.get(5)?,
        person_portable_id: r.get(6)?,
        reason: r.get(7)?,
        note: r.get(8)?,
        started_at: r.get(9)?,
        ended_at: r.get(10)?,
        created_at: r.get(11)?,
        updated_at: r.get(12)?,
        legacy_context: r.get(13)?,
        imported_context: r.get(14)?,
        recorded_by_membership_id: r.get(15)?,
        recorded_by_display_name: r.get(16)?,
        resumed_by_membership_id: r.get(17)?,
        resumed_by_display_name: r.get(18)?,
        lock_version: r.get(19)?,
    })
}

/// A period of the household by portable id, whoever its person is: the
/// caller's access is checked by the rules.
pub fn find(
    conn: &Connection,
    household_id: i64,
    portable_id: &str,
) -> Result<Option<PausePeriod>> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM {FROM} WHERE pp.household_id = ?1 AND pp.portable_id = ?2"
        ))?
        .query_row(params![household_id, portable_id], from_row)
        .optional()?)
}

pub fn find_by_id(conn: &Connection, id: i64) -> Result<Option<PausePeriod>> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM {FROM} WHERE pp.id = ?1"
        ))?
        .query_row([id], from_row)
        .optional()?)
}

/// The open periods of these sources of one type, by source id: one query
/// for a whole page of sources.
pub fn open_for(
    conn: &Connection,
    source_type: SourceType,
    source_ids: &[i64],
) -> Result<HashMap<i64, PausePeriod>> {
    if source_ids.is_empty() {
        return Ok(HashMap::new());
    }
    let ids = serde_json::Value::from(source_ids.to_vec()).to_string();
    let rows = conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE pp.source_type = ?1 AND pp.ended_at IS NULL
               AND pp.source_id IN (SELECT value FROM json_each(?2))"
        ))?
        .query_map(params![source_type, ids], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows
        .into_iter()
        .map(|period| (period.source_numeric_id, period))
        .collect())
}

/// Restricts a list to one source's history.
#[derive(Debug, Clone)]
pub struct SourceFilter {
    pub source_type: SourceType,
    /// The source's portable id; retired sources count (history stays visible).
    pub source_portable_id: String,
}

/// One page of the periods of people the actor may view, newest first, and
/// the total.
pub fn list_visible(
    conn: &Connection,
    actor: &Actor,
    filter: Option<&SourceFilter>,
    page: Page,
) -> Result<(Vec<PausePeriod>, i64)> {
    let condition = format!(
        "pp.household_id = :household_id AND {VISIBLE_PERSON}
         AND (:source_type IS NULL OR (pp.source_type = :source_type AND pp.source_id = (
             CASE :source_type
               WHEN 'schedule' THEN (SELECT id FROM schedules
                   WHERE portable_id = :source_portable AND household_id = :household_id)
               ELSE (SELECT id FROM person_medications
                   WHERE portable_id = :source_portable AND household_id = :household_id)
             END)))"
    );
    let source_type = filter.map(|f| f.source_type);
    let source_portable = filter.map(|f| f.source_portable_id.as_str());
    let visibility = Visibility::of(actor);
    let params = visibility.with(named_params! {
        ":source_type": source_type,
        ":source_portable": source_portable,
    });
    let query = PageQuery {
        columns: COLUMNS,
        from: FROM,
        count_from: FROM,
        condition: &condition,
        order_by: "COALESCE(pp.started_at, pp.created_at) DESC, pp.id DESC",
    };
    page::read(conn, &query, &params, page, from_row)
}

/// A new open period, started now by the actor.
pub struct NewPeriod<'a> {
    pub portable_id: &'a str,
    pub household_id: i64,
    pub source_type: SourceType,
    pub source_id: i64,
    pub person_id: i64,
    pub reason: PauseReason,
    pub note: Option<&'a str>,
    pub recorded_by_membership_id: i64,
    pub now: &'a Timestamp,
}

pub fn insert(conn: &WriteTx, p: &NewPeriod<'_>) -> Result<i64> {
    conn.prepare_kept(
        "INSERT INTO medication_pause_periods
           (portable_id, household_id, source_type, source_id, person_id, reason, note,
            started_at, recorded_by_membership_id, lock_version, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1, ?8, ?8)",
    )?
    .execute(params![
        p.portable_id,
        p.household_id,
        p.source_type,
        p.source_id,
        p.person_id,
        p.reason,
        p.note,
        p.now,
        p.recorded_by_membership_id,
    ])?;
    Ok(conn.last_insert_rowid())
}

/// A period restored by an import, with its own times.
pub struct RestoredRow<'a> {
    pub portable_id: &'a str,
    pub household_id: i64,
    pub source_type: SourceType,
    pub source_id: i64,
    pub person_id: i64,
    pub period: &'a super::model::Restored<'a>,
    pub now: &'a str,
}

pub fn insert_restored(conn: &WriteTx, r: &RestoredRow<'_>) -> Result<i64> {
    conn.prepare_kept(
        "INSERT INTO medication_pause_periods
           (portable_id, household_id, source_type, source_id, person_id, reason, note,
            started_at, ended_at, legacy_context, imported_context, recorded_by_membership_id,
            resumed_by_membership_id, lock_version, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 1, ?11, ?12, 1, ?13, ?14)",
    )?
    .execute(params![
        r.portable_id,
        r.household_id,
        r.source_type,
        r.source_id,
        r.person_id,
        r.period.reason,
        r.period.note,
        r.period.started_at,
        r.period.ended_at,
        r.period.legacy_context,
        r.period.recorded_by_membership_id,
        r.period.resumed_by_membership_id,
        r.period.created_at,
        r.now,
    ])?;
    let id = conn.last_insert_rowid();
    if r.period.recorded_by_person_ref.is_some() || r.period.resumed_by_person_ref.is_some() {
        conn.prepare_kept(
            "INSERT INTO medication_pause_period_actor_refs
               (pause_period_id, recorded_by_person_ref, resumed_by_person_ref)
             VALUES (?1, ?2, ?3)",
        )?
        .execute(params![
            id,
            r.period.recorded_by_person_ref,
            r.period.resumed_by_person_ref
        ])?;
    }
    Ok(id)
}

/// Whether [start, end) overlaps another period of the source (an unknown
/// start counts from the beginning, an open end to the end of time).
pub fn overlaps(
    conn: &Connection,
    source_type: SourceType,
    source_id: i64,
    start: Option<&str>,
    end: Option<&str>,
) -> Result<bool> {
    Ok(conn
        .prepare_kept(
            "SELECT EXISTS (SELECT 1 FROM medication_pause_periods
             WHERE source_type = ?1 AND source_id = ?2
               AND (?4 IS NULL OR started_at IS NULL OR started_at < ?4)
               AND (ended_at IS NULL OR ?3 IS NULL OR ended_at > ?3))",
        )?
        .query_row(params![source_type, source_id, start, end], |r| r.get(0))?)
}

/// Who resumed a period: a membership here, or (an imported period whose
/// resumer matched no single membership) the bundle's person reference.
#[derive(Debug, Clone, Copy)]
pub enum Resumer<'a> {
    Member(Option<i64>),
    Original(&'a str),
}

/// Closes an open period; false when it was already closed.
pub fn close(conn: &WriteTx, id: i64, resumed_by: Resumer<'_>, now: &Timestamp) -> Result<bool> {
    let membership = match resumed_by {
        Resumer::Member(membership) => membership,
        Resumer::Original(_) => None,
    };
    let changed = conn
        .prepare_kept(
            "UPDATE medication_pause_periods
             SET ended_at = ?3, resumed_by_membership_id = ?2, updated_at = ?3,
                 lock_version = lock_version + 1
             WHERE id = ?1 AND ended_at IS NULL",
        )?
        .execute(params![id, membership, now])?;
    if let (1, Resumer::Original(person_ref)) = (changed, resumed_by) {
        conn.prepare_kept(
            "INSERT INTO medication_pause_period_actor_refs (pause_period_id, resumed_by_person_ref)
             VALUES (?1, ?2)
             ON CONFLICT (pause_period_id) DO UPDATE SET resumed_by_person_ref = excluded.resumed_by_person_ref",
        )?
        .execute(params![id, person_ref])?;
    }
    Ok(changed == 1)
}
