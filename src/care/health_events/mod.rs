//! Health events of a person (illnesses and suspected side effects): the
//! rules for reading, recording, changing and deleting them.
//!
//! Reading needs view access to the event's person; an event of a person
//! outside the caller's scope does not exist for it (404). Recording,
//! changing and deleting need `record` access or better: a carer who gives
//! medicines may log an illness or a suspected side effect, while a
//! view-only grant cannot (403). An event stays with its person for life.
//! If-Match is optional on changes (stale → 409). Deletion is soft: the row
//! stays as the tombstone, and the change-feed entry carries the person so
//! the deletion is filtered by access like the event was. Titles and notes
//! are clinical text: they appear only in the event itself, never in audit
//! or change-feed metadata.

pub mod model;
pub mod routes;
pub mod store;

use crate::db::WriteTx;
use std::collections::HashSet;

use jiff::civil::Date;
use rusqlite::Connection;

use crate::auth::{AccessLevel, Actor, access};
use crate::db::change_feed::{self, Action, Change};
use crate::domain::{IfMatch, Page, ResourceId, Timestamp, etag, trimmed};
use crate::error::{ApiError, Problems, Result};
use crate::household::people;

use model::{HealthEvent, HealthEventAttributes, HealthEventRow};
pub use store::Filter;

pub const RECORD_TYPE: &str = crate::domain::record_type::HEALTH_EVENT;
/// The access to the event's person that recording, changing and deleting need.
pub const WRITE_LEVEL: AccessLevel = AccessLevel::Record;
const EARLIEST_YEAR: i16 = 1880;

/// A linked medication: (numeric id, portable id).
type Link = (i64, String);

fn to_api(row: HealthEventRow, links: Vec<Link>) -> HealthEvent {
    let (medication_ids, medication_portable_ids) = links.into_iter().unzip();
    HealthEvent {
        id: row.id,
        portable_id: row.portable_id,
        person_id: row.person_id,
        person_portable_id: row.person_portable_id,
        event_kind: row.event_kind,
        severity: row.severity,
        title: row.title,
        notes: row.notes,
        started_on: row.started_on,
        ended_on: row.ended_on,
        medication_ids,
        medication_portable_ids,
        created_at: row.created_at,
        updated_at: row.updated_at,
        lock_version: row.lock_version,
    }
}

/// Shapes rows with their medication links, fetched in one query.
fn shape(conn: &Connection, rows: Vec<HealthEventRow>) -> Result<Vec<HealthEvent>> {
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let mut links = store::medications_of(conn, &ids)?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let own = links.remove(&row.id).unwrap_or_default();
            to_api(row, own)
        })
        .collect())
}

fn links_of(conn: &Connection, event_id: i64) -> Result<Vec<Link>> {
    Ok(store::medications_of(conn, &[event_id])?
        .remove(&event_id)
        .unwrap_or_default())
}

/// 404 (naming `missing`) when the person is outside the actor's scope, 403
/// when visible but the access is below `needed`.
pub fn require_access(
    conn: &Connection,
    actor: &Actor,
    person_id: i64,
    needed: AccessLevel,
    missing: &str,
) -> Result<()> {
    access::require_level(
        conn,
        actor,
        person_id,
        needed,
        missing,
        "recording, changing or deleting a health event needs record or manage access to the \
         person",
    )
}

/// The live event `id` whose person the actor may reach at `needed` (404/403).
fn find(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    needed: AccessLevel,
) -> Result<HealthEventRow> {
    let row = store::find(conn, actor.household_id, id)?
        .ok_or_else(|| ApiError::not_found("health event"))?;
    require_access(conn, actor, row.person_id, needed, "health event")?;
    Ok(row)
}

/// `getHealthEvent`: view access to the person.
pub fn get(conn: &Connection, actor: &Actor, id: &ResourceId) -> Result<HealthEvent> {
    let row = find(conn, actor, id, AccessLevel::View)?;
    let links = links_of(conn, row.id)?;
    Ok(to_api(row, links))
}

/// `listHealthEvents`: events of the people the actor may view.
pub fn list(
    conn: &Connection,
    actor: &Actor,
    filter: &Filter,
    page: Page,
) -> Result<(Vec<HealthEvent>, i64)> {
    let (rows, total) = store::list_visible(conn, actor, filter, page)?;
    Ok((shape(conn, rows)?, total))
}

/// Whether a submitted person reference names the event's person.
fn names_person(id: &ResourceId, row: &HealthEventRow) -> bool {
    match id {
        ResourceId::Numeric(n) => *n == row.person_id,
        ResourceId::Portable(p) => *p == row.person_portable_id,
    }
}

/// The medications the event will name: each a medication of this
/// household, deduplicated, ordered by id. A deleted medication may stay
/// linked when it already was; it cannot be newly linked.
fn resolve_links(
    conn: &Connection,
    actor: &Actor,
    ids: &[ResourceId],
    current: &[Link],
) -> Result<Vec<Link>> {
    let found = store::resolve_medications(conn, actor.household_id, ids)?;
    let already: HashSet<i64> = current.iter().map(|(id, _)| *id).collect();
    let mut links: Vec<Link> = Vec::new();
    for (position, id) in ids.iter().enumerate() {
        let hit = found.iter().find(|m| match id {
            ResourceId::Numeric(n) => m.id == *n,
            ResourceId::Portable(p) => m.portable_id == *p,
        });
        match hit {
            Some(m) if !m.deleted || already.contains(&m.id) => {
                if !links.iter().any(|(linked, _)| *linked == m.id) {
                    links.push((m.id, m.portable_id.clone()));
                }
            }
            // A reference that names nothing in the household is "not found".
            _ => {
                return Err(ApiError::NotFound(format!(
                    "medication not found (medication_ids item {position})"
                )));
            }
        }
    }
    links.sort();
    Ok(links)
}

fn check_date(field: &str, date: Date, problems: &mut Problems) -> Option<String> {
    if date.year() < EARLIEST_YEAR {
        problems.add(field, "is not a plausible date");
        None
    } else {
        Some(date.to_string())
    }
}

/// Applies attributes to a row, collecting every problem before answering.
/// `whole` (create and PUT) makes the required attributes required. Returns
/// the new medication links when `medication_ids` was given.
fn apply(
    conn: &Connection,
    actor: &Actor,
    row: &mut HealthEventRow,
    current_links: &[Link],
    attrs: HealthEventAttributes,
    whole: bool,
) -> Result<Option<Vec<Link>>> {
    let mut problems = Problems::default();
    match &attrs.person_id {
        None if whole => problems.add("person_id", "is required"),
        Some(None) => problems.add("person_id", "must not be null"),
        Some(Some(id)) if !names_person(id, row) => problems.add(
            "person_id",
            "cannot change: a health event stays with its person",
        ),
        _ => {}
    }
    match attrs.event_kind {
        None if whole => problems.add("event_kind", "is required"),
        Some(None) => problems.add("event_kind", "must not be null"),
        Some(Some(kind)) => row.event_kind = kind,
        None => {}
    }
    if let Some(severity) = attrs.severity {
        row.severity = severity;
    }
    match attrs.title {
        None if whole => problems.add("title", "is required"),
        Some(None) => problems.add("title", "must not be null"),
        Some(Some(title)) => row.title = title.trim().to_string(),
        None => {}
    }
    if let Some(notes) = attrs.notes {
        row.notes = trimmed(notes.map(|n| n.into_inner()));
    }
    let mut dates_ok = true;
    match attrs.started_on {
        None if whole => problems.add("started_on", "is required"),
        Some(None) => problems.add("started_on", "must not be null"),
        Some(Some(date)) => match check_date("started_on", date, &mut problems) {
            Some(date) => row.started_on = date,
            None => dates_ok = false,
        },
        None => {}
    }
    match attrs.ended_on {
        Some(None) => row.ended_on = None,
        Some(Some(date)) => match check_date("ended_on", date, &mut problems) {
            Some(date) => row.ended_on = Some(date),
            None => dates_ok = false,
        },
        None => {}
    }
    if dates_ok
        && !row.started_on.is_empty()
        && row
            .ended_on
            .as_ref()
            .is_some_and(|ended| *ended < row.started_on)
    {
        problems.add("ended_on", "must be on or after started_on");
    }
    let links = match attrs.medication_ids {
        None => None,
        Some(None) => {
            problems.add(
                "medication_ids",
                "must be an array of medication ids (send [] to link none)",
            );
            None
        }
        Some(Some(ids)) => Some(resolve_links(conn, actor, &ids, current_links)?),
    };
    problems.check("the health event's attributes are invalid")?;
    Ok(links)
}

fn record(conn: &WriteTx, actor: &Actor, row: &HealthEventRow, action: Action) -> Result<()> {
    change_feed::append(
        conn,
        Change {
            household_id: actor.household_id,
            record_type: RECORD_TYPE,
            record_id: row.id,
            record_portable_id: &row.portable_id,
            action,
            person_id: Some(row.person_id),
        },
    )
}

/// `createHealthEvent`: person_id, event_kind, title and started_on are
/// required; needs record access to the person (404 outside scope, 403 below).
pub fn create(conn: &WriteTx, actor: &Actor, attrs: HealthEventAttributes) -> Result<HealthEvent> {
    let person = match &attrs.person_id {
        Some(Some(id)) => {
            let person = people::store::find(conn, actor.household_id, id)?
                .ok_or_else(|| ApiError::not_found("person"))?;
            require_access(conn, actor, person.id, WRITE_LEVEL, "person")?;
            Some(person)
        }
        _ => None,
    };
    let now = Timestamp::now();
    let mut row = HealthEventRow {
        id: 0,
        portable_id: crate::db::new_portable_id(),
        person_id: person.as_ref().map_or(0, |p| p.id),
        person_portable_id: person.map(|p| p.portable_id).unwrap_or_default(),
        event_kind: model::EventKind::Illness,
        severity: None,
        title: String::new(),
        notes: None,
        started_on: String::new(),
        ended_on: None,
        lock_version: 1,
        created_at: now.clone(),
        updated_at: now,
    };
    let links = apply(conn, actor, &mut row, &[], attrs, true)?.unwrap_or_default();
    row.id = store::insert(conn, actor.household_id, &row)?;
    if !links.is_empty() {
        let ids: Vec<i64> = links.iter().map(|(id, _)| *id).collect();
        store::replace_medications(conn, row.id, &ids)?;
    }
    record(conn, actor, &row, Action::Create)?;
    Ok(to_api(row, links))
}

/// The event to change: it exists and its person is in scope (404), the
/// actor has record access (403) and If-Match, when sent, is current (409).
fn find_for_change(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
) -> Result<HealthEventRow> {
    let row = find(conn, actor, id, WRITE_LEVEL)?;
    if_match.check(&etag(&row.portable_id, row.lock_version))?;
    Ok(row)
}

fn save(
    conn: &WriteTx,
    actor: &Actor,
    mut row: HealthEventRow,
    links: Vec<Link>,
    links_changed: bool,
) -> Result<HealthEvent> {
    row.lock_version += 1;
    row.updated_at = Timestamp::now();
    store::update(conn, &row)?;
    if links_changed {
        let ids: Vec<i64> = links.iter().map(|(id, _)| *id).collect();
        store::replace_medications(conn, row.id, &ids)?;
    }
    record(conn, actor, &row, Action::Update)?;
    Ok(to_api(row, links))
}

/// `updateHealthEvent` (PATCH): any subset of the attributes; person_id,
/// when sent, must name the event's person.
pub fn update(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    attrs: HealthEventAttributes,
) -> Result<HealthEvent> {
    let mut row = find_for_change(conn, actor, id, if_match)?;
    let current = links_of(conn, row.id)?;
    let changed = apply(conn, actor, &mut row, &current, attrs, false)?;
    match changed {
        Some(links) => save(conn, actor, row, links, true),
        None => save(conn, actor, row, current, false),
    }
}

/// `replaceHealthEvent` (PUT): the whole event, required attributes as on
/// create; absent severity, notes and ended_on become null and absent
/// medication_ids links none. person_id must name the event's person.
pub fn replace(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    attrs: HealthEventAttributes,
) -> Result<HealthEvent> {
    let existing = find_for_change(conn, actor, id, if_match)?;
    let current = links_of(conn, existing.id)?;
    let mut row = HealthEventRow {
        severity: None,
        notes: None,
        ended_on: None,
        ..existing
    };
    let links = apply(conn, actor, &mut row, &current, attrs, true)?.unwrap_or_default();
    save(conn, actor, row, links, true)
}

/// `deleteHealthEvent`: soft delete; later reads answer 404 and the
/// change-feed tombstone carries the person.
pub fn delete(conn: &WriteTx, actor: &Actor, id: &ResourceId, if_match: &IfMatch) -> Result<()> {
    let mut row = find_for_change(conn, actor, id, if_match)?;
    row.lock_version += 1;
    row.updated_at = Timestamp::now();
    store::soft_delete(conn, &row)?;
    record(conn, actor, &row, Action::Delete)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> HealthEventRow {
        HealthEventRow {
            id: 7,
            portable_id: "0192a5b0-0000-7000-8000-000000000001".into(),
            person_id: 3,
            person_portable_id: "0192a5b0-0000-7000-8000-000000000003".into(),
            event_kind: model::EventKind::Illness,
            severity: None,
            title: "Cold".into(),
            notes: None,
            started_on: "2026-03-01".into(),
            ended_on: None,
            lock_version: 1,
            created_at: Timestamp::now(),
            updated_at: Timestamp::now(),
        }
    }

    #[test]
    fn person_references_match_either_id() {
        let r = row();
        assert!(names_person(&ResourceId::Numeric(3), &r));
        assert!(!names_person(&ResourceId::Numeric(4), &r));
        assert!(names_person(
            &ResourceId::Portable("0192a5b0-0000-7000-8000-000000000003".into()),
            &r
        ));
        assert!(!names_person(
            &ResourceId::Portable("0192a5b0-0000-7000-8000-000000000001".into()),
            &r
        ));
    }

    #[test]
    fn implausible_dates_are_problems() {
        let mut problems = Problems::default();
        assert_eq!(
            check_date("started_on", "2026-03-01".parse().unwrap(), &mut problems),
            Some("2026-03-01".to_string())
        );
        assert!(problems.is_empty());
        assert_eq!(
            check_date("started_on", "1066-10-14".parse().unwrap(), &mut problems),
            None
        );
        assert!(!problems.is_empty());
    }
}
