//! SQL for medication takes and the sources they were given under.

use crate::db::PrepareKept;
use crate::db::WriteTx;
use rusqlite::{Connection, OptionalExtension, Row, ToSql, named_params, params};

use super::model::{MedicationTake, SourceType};
use crate::auth::Actor;
use crate::auth::access::{self, Named};
use crate::auth::store::{VISIBLE_PERSON, Visibility};
use crate::db::page::{self, PageQuery};
use crate::decimal::Dec;
use crate::domain::{Page, ResourceId};
use crate::error::Result;
use crate::medicine::vocab::{DoseCycle, DoseUnit, ScheduleType};

const COLUMNS: &str = "t.id, t.portable_id, t.person_id, p.portable_id, t.source_type, t.source_id,
    coalesce(s.portable_id, a.portable_id), t.client_uuid, t.taken_at, t.dose_amount, t.dose_unit,
    t.taken_from_medication_id, m.portable_id, t.taken_from_location_id, l.portable_id,
    t.occurrence_key, t.recorded_by_membership_id, t.lock_version, t.created_at";

/// One set of joins gives every row its portable references (no query per row).
const FROM: &str = "medication_takes t
    JOIN people p ON p.id = t.person_id
    LEFT JOIN schedules s ON t.source_type = 'schedule' AND s.id = t.source_id
    LEFT JOIN person_medications a ON t.source_type = 'person_medication' AND a.id = t.source_id
    LEFT JOIN medications m ON m.id = t.taken_from_medication_id
    LEFT JOIN locations l ON l.id = t.taken_from_location_id";

fn from_row(r: &Row<'_>) -> rusqlite::Result<MedicationTake> {
    Ok(MedicationTake {
        id: r.get(0)?,
        portable_id: r.get(1)?,
        person_id: r.get(2)?,
        person_portable_id: r.get(3)?,
        source_type: r.get(4)?,
        source_id: r.get(5)?,
        source_portable_id: r.get(6)?,
        client_uuid: r.get(7)?,
        taken_at: r.get(8)?,
        dose_amount: r.get(9)?,
        dose_unit: r.get(10)?,
        taken_from_medication_id: r.get(11)?,
        taken_from_medication_portable_id: r.get(12)?,
        taken_from_location_id: r.get(13)?,
        taken_from_location_portable_id: r.get(14)?,
        occurrence_key: r.get(15)?,
        recorded_by_membership_id: r.get(16)?,
        lock_version: r.get(17)?,
        created_at: r.get(18)?,
    })
}

pub fn find(conn: &Connection, id: i64) -> Result<Option<MedicationTake>> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM {FROM} WHERE t.id = ?1"
        ))?
        .query_row([id], from_row)
        .optional()?)
}

/// The take a client_uuid already recorded in this household.
pub fn find_by_client_uuid(
    conn: &Connection,
    household_id: i64,
    client_uuid: &str,
) -> Result<Option<MedicationTake>> {
    // Nearly every take brings a new client_uuid: its index alone answers
    // that, without opening the six tables a saved take is read through.
    let id: Option<i64> = conn
        .prepare_kept(
            "SELECT id FROM medication_takes WHERE household_id = ?1 AND client_uuid = ?2",
        )?
        .query_row(params![household_id, client_uuid], |r| r.get(0))
        .optional()?;
    match id {
        Some(id) => find(conn, id),
        None => Ok(None),
    }
}

/// The id of the take already linked to an expected dose, if any.
pub fn find_by_occurrence(
    conn: &Connection,
    source_type: SourceType,
    source_id: i64,
    window_starts_on: &str,
    position: i64,
) -> Result<Option<i64>> {
    Ok(conn
        .prepare_kept(
            "SELECT id FROM medication_takes
             WHERE source_type = ?1 AND source_id = ?2 AND occurrence_window_starts_on = ?3
               AND occurrence_position = ?4",
        )?
        .query_row(
            params![source_type, source_id, window_starts_on, position],
            |r| r.get(0),
        )
        .optional()?)
}

/// A schedule or direct assignment as a take sees it: whose it is, its
/// dose and its limits.
#[derive(Debug, Clone)]
pub struct Source {
    pub source_type: SourceType,
    pub id: i64,
    pub portable_id: String,
    pub person_id: i64,
    pub person_portable_id: String,
    /// The person's date of birth as stored, if known.
    pub person_born_on: Option<String>,
    pub medication_id: i64,
    /// The dosage option the source was built from, if any.
    pub source_dosage_option_id: Option<i64>,
    pub dose_amount: Dec,
    pub dose_unit: DoseUnit,
    pub dose_cycle: Option<DoseCycle>,
    pub max_daily_doses: Option<i64>,
    pub min_hours_between_doses: Option<Dec>,
    /// A prn schedule or an as-needed assignment.
    pub as_needed: bool,
    pub retired: bool,
    /// Schedules only: the plan a take is judged against (taper steps,
    /// the dates it runs between). None for direct assignments.
    pub schedule_type: Option<ScheduleType>,
    pub schedule_config: Option<String>,
    pub start_date: Option<String>,
    pub end_date: Option<String>,
}

/// `find_source`'s query for one kind of source, written out when the
/// program is built.
macro_rules! find_source_sql {
    ($table:literal, $as_needed:literal, $plan:literal) => {
        concat!(
            "SELECT x.id, x.portable_id, x.person_id, x.medication_id, x.dose_amount, x.dose_unit,
                    x.dose_cycle, x.max_daily_doses, x.min_hours_between_doses, ",
            $as_needed,
            ",
                    x.retired_at IS NOT NULL, x.source_dosage_option_id, ",
            $plan,
            ",
                    p.portable_id, p.date_of_birth
             FROM ",
            $table,
            " x
             JOIN people p ON p.id = x.person_id
             WHERE x.household_id = ?1 AND x.id = coalesce(?2, (SELECT id FROM ",
            $table,
            " WHERE household_id = ?1 AND portable_id = ?3))"
        )
    };
}

/// The schedule or assignment `id` of the household, retired ones included.
pub fn find_source(
    conn: &Connection,
    household_id: i64,
    source_type: SourceType,
    id: &ResourceId,
) -> Result<Option<Source>> {
    let sql = match source_type {
        SourceType::Schedule => find_source_sql!(
            "schedules",
            "x.schedule_type = 'prn'",
            "x.schedule_type, x.schedule_config, x.start_date, x.end_date"
        ),
        SourceType::PersonMedication => find_source_sql!(
            "person_medications",
            "x.administration_kind = 'as_needed'",
            "NULL, NULL, NULL, NULL"
        ),
    };
    let (numeric, portable) = id.sql_parts();
    Ok(conn
        .prepare_kept(sql)?
        .query_row(params![household_id, numeric, portable], |r| {
            Ok(Source {
                source_type,
                id: r.get(0)?,
                portable_id: r.get(1)?,
                person_id: r.get(2)?,
                medication_id: r.get(3)?,
                dose_amount: r.get(4)?,
                dose_unit: r.get(5)?,
                dose_cycle: r.get(6)?,
                max_daily_doses: r.get(7)?,
                min_hours_between_doses: r.get(8)?,
                as_needed: r.get(9)?,
                retired: r.get(10)?,
                source_dosage_option_id: r.get(11)?,
                schedule_type: r.get(12)?,
                schedule_config: r.get(13)?,
                start_date: r.get(14)?,
                end_date: r.get(15)?,
                person_portable_id: r.get(16)?,
                person_born_on: r.get(17)?,
            })
        })
        .optional()?)
}

pub struct NewRow<'a> {
    pub portable_id: &'a str,
    pub household_id: i64,
    pub person_id: i64,
    pub source_type: SourceType,
    pub source_id: i64,
    pub client_uuid: Option<&'a str>,
    pub taken_at: &'a crate::domain::Timestamp,
    pub dose_amount: Dec,
    pub dose_unit: DoseUnit,
    pub taken_from_medication_id: Option<i64>,
    pub taken_from_location_id: Option<i64>,
    pub occurrence_key: Option<&'a str>,
    pub occurrence_window_starts_on: Option<String>,
    pub occurrence_position: Option<i64>,
    pub recorded_by_membership_id: Option<i64>,
    pub created_at: &'a crate::domain::Timestamp,
}

/// Inserts a take and answers its id; `None`, having written nothing,
/// when the household already has a take with its client_uuid.
pub fn insert(conn: &WriteTx, row: &NewRow<'_>) -> Result<Option<i64>> {
    let inserted = conn
        .prepare_kept(
            "INSERT INTO medication_takes (portable_id, household_id, person_id, source_type,
             source_id, client_uuid, taken_at, dose_amount, dose_unit, taken_from_medication_id,
             taken_from_location_id, occurrence_key, occurrence_window_starts_on,
             occurrence_position, recorded_by_membership_id, lock_version, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, 1, ?16, ?16)
         ON CONFLICT (household_id, client_uuid) DO NOTHING",
        )?
        .execute(params![
            row.portable_id,
            row.household_id,
            row.person_id,
            row.source_type,
            row.source_id,
            row.client_uuid,
            row.taken_at,
            row.dose_amount,
            row.dose_unit,
            row.taken_from_medication_id,
            row.taken_from_location_id,
            row.occurrence_key,
            row.occurrence_window_starts_on,
            row.occurrence_position,
            row.recorded_by_membership_id,
            row.created_at,
        ])?;
    Ok((inserted == 1).then(|| conn.last_insert_rowid()))
}

/// How many takes of a source, recorded up to take `up_to_id`, fall in
/// [start, end).
pub fn count_in_window(
    conn: &Connection,
    source_type: SourceType,
    source_id: i64,
    start: &str,
    end: &str,
    up_to_id: i64,
) -> Result<i64> {
    Ok(conn
        .prepare_kept(
            "SELECT count(*) FROM medication_takes
             WHERE source_type = ?1 AND source_id = ?2 AND taken_at >= ?3 AND taken_at < ?4
               AND id <= ?5",
        )?
        .query_row(params![source_type, source_id, start, end, up_to_id], |r| {
            r.get(0)
        })?)
}

/// The times of the source's takes recorded before take `take_id` that are
/// nearest to `taken_at`: the latest at or before it and the earliest after it.
pub fn neighbours(
    conn: &Connection,
    source_type: SourceType,
    source_id: i64,
    taken_at: &str,
    take_id: i64,
) -> Result<(Option<String>, Option<String>)> {
    let before = conn
        .prepare_kept(
            "SELECT taken_at FROM medication_takes
             WHERE source_type = ?1 AND source_id = ?2 AND id < ?4 AND taken_at <= ?3
             ORDER BY taken_at DESC LIMIT 1",
        )?
        .query_row(params![source_type, source_id, taken_at, take_id], |r| {
            r.get(0)
        })
        .optional()?;
    let after = conn
        .prepare_kept(
            "SELECT taken_at FROM medication_takes
             WHERE source_type = ?1 AND source_id = ?2 AND id < ?4 AND taken_at > ?3
             ORDER BY taken_at ASC LIMIT 1",
        )?
        .query_row(params![source_type, source_id, taken_at, take_id], |r| {
            r.get(0)
        })
        .optional()?;
    Ok((before, after))
}

/// The latest time a dose of the source was taken, among takes recorded up
/// to take `up_to_id`.
pub fn latest_taken_at(
    conn: &Connection,
    source_type: SourceType,
    source_id: i64,
    up_to_id: i64,
) -> Result<Option<String>> {
    Ok(conn
        .prepare_kept(
            "SELECT max(taken_at) FROM medication_takes
             WHERE source_type = ?1 AND source_id = ?2 AND id <= ?3",
        )?
        .query_row(params![source_type, source_id, up_to_id], |r| r.get(0))?)
}

/// A pause period of a source, as stored: when it started (a legacy period
/// of unknown start from when it was recorded) and ended, if it has.
pub struct PausePeriod {
    started_at: Option<String>,
    ended_at: Option<String>,
}

impl PausePeriod {
    /// Whether the period covers `at`: it started at or before it and had
    /// not ended by then. Stored timestamps are compared as text, as the
    /// period's own SQL compared them.
    pub fn covers(&self, at: &str) -> bool {
        self.started_at.as_deref().is_some_and(|s| s <= at)
            && self.ended_at.as_deref().is_none_or(|e| e > at)
    }
}

/// The pause periods of a source, ended ones included.
pub fn pause_periods(
    conn: &Connection,
    source_type: SourceType,
    source_id: i64,
) -> Result<Vec<PausePeriod>> {
    let rows = conn
        .prepare_kept(
            "SELECT coalesce(started_at, created_at), ended_at FROM medication_pause_periods
             WHERE source_type = ?1 AND source_id = ?2",
        )?
        .query_map(params![source_type, source_id], |r| {
            Ok(PausePeriod {
                started_at: r.get(0)?,
                ended_at: r.get(1)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Takes of the same medication for the same person under the person's
/// other sources, recorded before take `take_id` and given in `$window`
/// (the query's own comparisons of `t.taken_at`), as `$select` of each
/// take `t` and the source `x` it was given under. They are found from the sources, each through its takes in the window
/// (`medication_takes_by_source`): going through the person's takes in the
/// window instead looked up every take of every medication the person had
/// in it, and a batch of takes from a phone slowed down with each one.
/// `CROSS JOIN` keeps the sources outside: without statistics SQLite's
/// planner would walk every take of every schedule.
macro_rules! other_sources {
    ($select:literal, $window:literal) => {
        concat!(
            "SELECT ", $select, " FROM schedules x
               CROSS JOIN medication_takes t ON t.source_type = 'schedule' AND t.source_id = x.id
             WHERE x.person_id = :person_id AND x.medication_id = :medication_id
               AND NOT (:source_type = 'schedule' AND x.id = :source_id)
               AND t.id < :take_id AND ", $window, "
             UNION ALL
             SELECT ", $select, " FROM person_medications x
               CROSS JOIN medication_takes t ON t.source_type = 'person_medication' AND t.source_id = x.id
             WHERE x.person_id = :person_id AND x.medication_id = :medication_id
               AND NOT (:source_type = 'person_medication' AND x.id = :source_id)
               AND t.id < :take_id AND ", $window
        )
    };
}

/// Identifies the take whose other-source takes are wanted.
pub struct OtherSources {
    pub person_id: i64,
    pub medication_id: i64,
    pub source_type: SourceType,
    pub source_id: i64,
    pub take_id: i64,
}

impl OtherSources {
    /// The parameters of an [`other_sources!`] query, its window from `from` to `to`.
    fn params<'p>(&'p self, from: &'p &str, to: &'p &str) -> [(&'static str, &'p dyn ToSql); 7] {
        [
            (":person_id", &self.person_id),
            (":medication_id", &self.medication_id),
            (":source_type", &self.source_type),
            (":source_id", &self.source_id),
            (":take_id", &self.take_id),
            (":from", from),
            (":to", to),
        ]
    }
}

const COUNT_OTHER_SOURCES: &str = concat!(
    "SELECT sum(n) FROM (",
    other_sources!("count(*) AS n", "t.taken_at >= :from AND t.taken_at < :to"),
    ")"
);

const OTHER_SOURCES_BETWEEN: &str = concat!(
    other_sources!(
        "t.taken_at, x.min_hours_between_doses",
        "t.taken_at >= :from AND t.taken_at <= :to"
    ),
    " ORDER BY 1"
);

/// How many other-source takes fall in [start, end).
pub fn count_other_sources_in_window(
    conn: &Connection,
    of: &OtherSources,
    start: &str,
    end: &str,
) -> Result<i64> {
    Ok(conn
        .prepare_kept(COUNT_OTHER_SOURCES)?
        .query_row(&of.params(&start, &end)[..], |r| r.get(0))?)
}

/// The other-source takes in [from, until] with the min_hours_between_doses
/// of the source each was given under.
pub fn other_sources_between(
    conn: &Connection,
    of: &OtherSources,
    from: &str,
    until: &str,
) -> Result<Vec<(String, Option<Dec>)>> {
    let rows = conn
        .prepare_kept(OTHER_SOURCES_BETWEEN)?
        .query_map(&of.params(&from, &until)[..], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// The largest min_hours_between_doses among the person's other sources of
/// the medication of `source` (retired ones included: their takes still
/// count).
pub fn other_sources_max_min_hours(conn: &Connection, source: &Source) -> Result<Option<Dec>> {
    let rows = conn
        .prepare_kept(
            "SELECT min_hours_between_doses FROM schedules
             WHERE person_id = ?1 AND medication_id = ?2
               AND NOT (?3 = 'schedule' AND id = ?4)
               AND min_hours_between_doses IS NOT NULL
             UNION ALL
             SELECT min_hours_between_doses FROM person_medications
             WHERE person_id = ?1 AND medication_id = ?2
               AND NOT (?3 = 'person_medication' AND id = ?4)
               AND min_hours_between_doses IS NOT NULL",
        )?
        .query_map(
            params![
                source.person_id,
                source.medication_id,
                source.source_type,
                source.id
            ],
            |r| r.get::<_, Dec>(0),
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows.into_iter().max())
}

/// Which takes to list.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub person_id: Option<ResourceId>,
    pub source: Option<(SourceType, ResourceId)>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub updated_since: Option<String>,
}

/// One page of the takes of people the actor may view, newest first, and
/// the total.
pub fn list_visible(
    conn: &Connection,
    actor: &Actor,
    filter: &Filter,
    page: Page,
) -> Result<(Vec<MedicationTake>, i64)> {
    let person_id = access::filter_id(conn, actor, Named::Person, filter.person_id.as_ref())?;
    let source_type = filter.source.as_ref().map(|(t, _)| *t);
    let source_id = match &filter.source {
        None => None,
        Some((kind, id)) => {
            let named = match kind {
                SourceType::Schedule => Named::Schedule,
                SourceType::PersonMedication => Named::PersonMedication,
            };
            access::filter_id(conn, actor, named, Some(id))?
        }
    };
    let condition = format!(
        "t.household_id = :household_id AND {VISIBLE_PERSON}
         AND (:updated_since IS NULL OR t.updated_at >= :updated_since)
         AND (:from IS NULL OR t.taken_at >= :from)
         AND (:to IS NULL OR t.taken_at <= :to)
         AND (:person_id IS NULL OR t.person_id = :person_id)
         AND (:source_type IS NULL OR t.source_type = :source_type)
         AND (:source_id IS NULL OR t.source_id = :source_id)"
    );
    let visibility = Visibility::of(actor);
    let params = visibility.with(named_params! {
        ":updated_since": filter.updated_since,
        ":from": filter.from,
        ":to": filter.to,
        ":person_id": person_id,
        ":source_type": source_type,
        ":source_id": source_id,
    });
    let query = PageQuery {
        columns: COLUMNS,
        from: FROM,
        count_from: FROM,
        condition: &condition,
        order_by: "t.taken_at DESC, t.id DESC",
    };
    page::read(conn, &query, &params, page, from_row)
}

#[cfg(test)]
mod tests {
    /// The other sources' takes are found from the sources, each through
    /// its own takes in the window, never by walking the person's takes.
    #[test]
    fn other_sources_takes_are_found_through_each_source() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(crate::db::SCHEMA_SQL).unwrap();
        for sql in [super::COUNT_OTHER_SOURCES, super::OTHER_SOURCES_BETWEEN] {
            let mut explain = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
            // Unbound parameters are NULL: the plan is the same.
            let mut rows = explain.raw_query();
            let mut plan: Vec<String> = Vec::new();
            while let Some(row) = rows.next().unwrap() {
                plan.push(row.get(3).unwrap());
            }
            let takes: Vec<&String> = plan.iter().filter(|p| p.contains(" t ")).collect();
            assert_eq!(takes.len(), 2, "{plan:#?}");
            let by_source =
                "medication_takes_by_source (source_type=? AND source_id=? AND taken_at>";
            assert!(takes.iter().all(|p| p.contains(by_source)), "{plan:#?}");
        }
    }
}
