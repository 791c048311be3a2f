//! SQL for medication review prompts.

use crate::db::PrepareKept;
use rusqlite::{Connection, OptionalExtension, Row, named_params, params};

use super::model::{EvidenceSnapshot, Priority, PromptRow, ReviewStatus};
use crate::auth::Actor;
use crate::auth::store::{VISIBLE_PERSON, Visibility};
use crate::db::WriteTx;
use crate::db::page::{self, PageQuery};
use crate::domain::{Page, ResourceId, Timestamp};
use crate::error::{ApiError, Result};

const COLUMNS: &str = "r.id, r.portable_id, r.person_id, p.portable_id, r.medication_id,
    m.portable_id, r.other_medication_id, o.portable_id, r.evidence, r.priority, r.review_status,
    r.practitioner_name, r.practitioner_role, r.reviewed_on, r.notes, r.lock_version,
    r.created_at, r.updated_at";

const FROM: &str = "medication_review_prompts r JOIN people p ON p.id = r.person_id
    JOIN medications m ON m.id = r.medication_id
    JOIN medications o ON o.id = r.other_medication_id";

const COUNT_FROM: &str = "medication_review_prompts r JOIN people p ON p.id = r.person_id";

fn from_row(r: &Row<'_>) -> rusqlite::Result<PromptRow> {
    let evidence: String = r.get(8)?;
    let evidence: EvidenceSnapshot = serde_json::from_str(&evidence).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(8, rusqlite::types::Type::Text, Box::new(e))
    })?;
    Ok(PromptRow {
        id: r.get(0)?,
        portable_id: r.get(1)?,
        person_id: r.get(2)?,
        person_portable_id: r.get(3)?,
        medication_id: r.get(4)?,
        medication_portable_id: r.get(5)?,
        other_medication_id: r.get(6)?,
        other_medication_portable_id: r.get(7)?,
        evidence,
        priority: r.get(9)?,
        review_status: r.get(10)?,
        practitioner_name: r.get(11)?,
        practitioner_role: r.get(12)?,
        reviewed_on: r.get(13)?,
        notes: r.get(14)?,
        lock_version: r.get(15)?,
        created_at: r.get(16)?,
        updated_at: r.get(17)?,
    })
}

/// A prompt of the household by numeric or portable id, whoever its person is.
pub fn find(conn: &Connection, household_id: i64, id: &ResourceId) -> Result<Option<PromptRow>> {
    let (numeric, portable) = id.sql_parts();
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE r.household_id = ?1 AND r.id = coalesce(?2, (SELECT id FROM medication_review_prompts WHERE household_id = ?1 AND portable_id = ?3))"
        ))?
        .query_row(params![household_id, numeric, portable], from_row)
        .optional()?)
}

/// Which prompts to list.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub review_status: Option<ReviewStatus>,
    pub priority: Option<Priority>,
    pub show_hidden: bool,
    /// Only this person's (a numeric id already checked visible).
    pub person_id: Option<i64>,
}

/// One page of the prompts of people the actor may view: highest priority
/// first, then newest. Hidden prompts only when asked for.
pub fn list_visible(
    conn: &Connection,
    actor: &Actor,
    filter: &Filter,
    page: Page,
) -> Result<(Vec<PromptRow>, i64)> {
    let condition = format!(
        "r.household_id = :household_id AND {VISIBLE_PERSON}
         AND (:status IS NULL OR r.review_status = :status)
         AND (:priority IS NULL OR r.priority = :priority)
         AND (:show_hidden = 1 OR :status = 'hidden' OR r.review_status <> 'hidden')
         AND (:person_id IS NULL OR r.person_id = :person_id)"
    );
    let visibility = Visibility::of(actor);
    let params = visibility.with(named_params! {
        ":status": filter.review_status,
        ":priority": filter.priority,
        ":show_hidden": filter.show_hidden,
        ":person_id": filter.person_id,
    });
    let query = PageQuery {
        columns: COLUMNS,
        from: FROM,
        count_from: COUNT_FROM,
        condition: &condition,
        order_by: "CASE r.priority WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END, r.id DESC",
    };
    page::read(conn, &query, &params, page, from_row)
}

/// Every prompt of a person (hidden ones too), optionally of one status,
/// highest priority first: what the reports show.
pub fn of_person(
    conn: &Connection,
    person_id: i64,
    status: Option<ReviewStatus>,
) -> Result<Vec<PromptRow>> {
    Ok(conn
        .prepare_kept(crate::db::sql!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE r.person_id = ?1 AND (?2 IS NULL OR r.review_status = ?2)
             ORDER BY CASE r.priority WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END, r.id"
        ))?
        .query_map(params![person_id, status], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// A prompt the pass is about to make.
pub struct NewPrompt<'a> {
    pub household_id: i64,
    pub person_id: i64,
    pub medication_id: i64,
    pub other_medication_id: i64,
    pub evidence_id: i64,
    pub evidence: &'a EvidenceSnapshot,
    pub priority: Priority,
    pub now: &'a Timestamp,
}

/// Adds the prompt unless one for the same person, pair and evidence
/// record exists (whatever its status): true when it was added.
pub fn insert_once(conn: &WriteTx, prompt: &NewPrompt<'_>) -> Result<bool> {
    let evidence = serde_json::to_string(prompt.evidence).map_err(ApiError::internal)?;
    let added = conn
        .prepare_kept(
            "INSERT OR IGNORE INTO medication_review_prompts (portable_id, household_id, person_id,
                 medication_id, other_medication_id, evidence_id, evidence, priority,
                 review_status, lock_version, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'pending', 1, ?9, ?9)",
        )?
        .execute(params![
            crate::db::new_portable_id(),
            prompt.household_id,
            prompt.person_id,
            prompt.medication_id,
            prompt.other_medication_id,
            prompt.evidence_id,
            evidence,
            prompt.priority,
            prompt.now,
        ])?;
    Ok(added == 1)
}

/// Whether a prompt exists for the person, pair and evidence record.
pub fn exists(
    conn: &Connection,
    person_id: i64,
    pair: (i64, i64),
    evidence_id: i64,
) -> Result<bool> {
    Ok(conn
        .prepare_kept(
            "SELECT 1 FROM medication_review_prompts
             WHERE person_id = ?1 AND min(medication_id, other_medication_id) = min(?2, ?3)
               AND max(medication_id, other_medication_id) = max(?2, ?3) AND evidence_id = ?4",
        )?
        .query_row(params![person_id, pair.0, pair.1, evidence_id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Saves the review fields with the new `lock_version`/`updated_at`; the
/// evidence is never written here.
pub fn save_review(conn: &WriteTx, row: &PromptRow, membership_id: i64) -> Result<()> {
    conn.prepare_kept(
        "UPDATE medication_review_prompts SET review_status = ?2, practitioner_name = ?3,
             practitioner_role = ?4, reviewed_on = ?5, notes = ?6, reviewed_by_membership_id = ?7,
             lock_version = ?8, updated_at = ?9
         WHERE id = ?1",
    )?
    .execute(params![
        row.id,
        row.review_status,
        row.practitioner_name,
        row.practitioner_role,
        row.reviewed_on,
        row.notes,
        membership_id,
        row.lock_version,
        row.updated_at,
    ])?;
    Ok(())
}

/// An active medicine of a person: (id, name, friendly name).
pub struct ActiveMedicine {
    pub id: i64,
    pub name: String,
    pub friendly_name: Option<String>,
}

/// The medicines a person takes now: those of their live, unpaused
/// schedules (not ended before `today`) and direct assignments.
pub fn active_medicines(
    conn: &Connection,
    person_id: i64,
    today: &str,
) -> Result<Vec<ActiveMedicine>> {
    Ok(conn
        .prepare_kept(
            "SELECT m.id, m.name, m.friendly_name FROM medications m
             WHERE m.deleted_at IS NULL AND m.id IN (
                 SELECT medication_id FROM schedules
                 WHERE person_id = ?1 AND retired_at IS NULL AND active = 1
                   AND (end_date IS NULL OR end_date >= ?2)
                 UNION
                 SELECT medication_id FROM person_medications
                 WHERE person_id = ?1 AND retired_at IS NULL AND active = 1)
             ORDER BY m.id",
        )?
        .query_map(params![person_id, today], |r| {
            Ok(ActiveMedicine {
                id: r.get(0)?,
                name: r.get(1)?,
                friendly_name: r.get(2)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Every person (household, person, household time zone) with at least
/// two live sources: only they can have a pair.
pub fn people_with_pairs(conn: &Connection) -> Result<Vec<(i64, i64, String)>> {
    Ok(conn
        .prepare_kept(
            "SELECT p.household_id, p.id, h.time_zone FROM people p
             JOIN households h ON h.id = p.household_id
             WHERE (SELECT count(*) FROM schedules s WHERE s.person_id = p.id AND s.retired_at IS NULL)
                 + (SELECT count(*) FROM person_medications a
                    WHERE a.person_id = p.id AND a.retired_at IS NULL) >= 2
             ORDER BY p.id",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// The household and time zone of a person.
pub fn person_household(conn: &Connection, person_id: i64) -> Result<Option<(i64, String)>> {
    Ok(conn
        .prepare_kept(
            "SELECT p.household_id, h.time_zone FROM people p
             JOIN households h ON h.id = p.household_id WHERE p.id = ?1",
        )?
        .query_row([person_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// People whose schedules, assignments, pauses or medicines changed after `seq` in
/// the change feed, and the feed's last seq. A changed medicine (its name)
/// concerns everyone with a live source of it.
pub fn people_changed_since(conn: &Connection, seq: i64) -> Result<(Vec<i64>, i64)> {
    let last: i64 = conn.query_row("SELECT coalesce(max(seq), 0) FROM change_feed", [], |r| {
        r.get(0)
    })?;
    let people = conn
        .prepare_kept(
            "SELECT person_id FROM change_feed
             WHERE seq > ?1 AND seq <= ?2 AND record_type IN (?3, ?4, ?6) AND person_id IS NOT NULL
             UNION
             SELECT s.person_id FROM change_feed c JOIN schedules s ON s.medication_id = c.record_id
             WHERE c.seq > ?1 AND c.seq <= ?2 AND c.record_type = ?5 AND s.retired_at IS NULL
             UNION
             SELECT a.person_id FROM change_feed c
             JOIN person_medications a ON a.medication_id = c.record_id
             WHERE c.seq > ?1 AND c.seq <= ?2 AND c.record_type = ?5 AND a.retired_at IS NULL",
        )?
        .query_map(
            params![
                seq,
                last,
                crate::domain::record_type::SCHEDULE,
                crate::domain::record_type::PERSON_MEDICATION,
                crate::domain::record_type::MEDICATION,
                crate::domain::record_type::PAUSE_PERIOD,
            ],
            |r| r.get(0),
        )?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok((people, last))
}
