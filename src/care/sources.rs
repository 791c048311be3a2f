//! What schedules and direct assignments (the two kinds of dose source)
//! share: access (view to read, manage to change the plan), the person a
//! source belongs to for life, reading, saving, retiring and the deprecated
//! pause and resume, the list, and the rules of the common attributes
//! (`apply_common`: the same person, the dose, the notes). The common
//! fields are declared once in `sources/model.rs`, their SQL once in
//! `source_row`. Each kind keeps its own attributes and rules (`apply`,
//! create, replace).

use crate::db::WriteTx;
use std::collections::HashMap;

use rusqlite::Connection;

use crate::auth::{AccessLevel, Actor, access};
use crate::care::dose_occurrences::history;
use crate::care::pause_periods::{self, model::PausePeriod};
use crate::care::source_row::{self, Filter, SourceRow, Sourced};
use crate::care::sources::dose::Settled;
use crate::care::sources::model::{Dose, SourceAttributes, SourceHead};
use crate::db::change_feed::{self, Action, Change};
use crate::domain::{IfMatch, Page, ResourceId, Text, Timestamp, etag, trimmed};
use crate::error::{ApiError, Problems, Result};
use crate::household::people;

pub mod dose;
pub mod model;

/// The access to the person that changing the plan needs.
pub const WRITE_LEVEL: AccessLevel = AccessLevel::Manage;

/// The API shape of stored sources, each with its open pause period (one
/// query for the whole page).
pub fn shape<R: SourceRow>(conn: &Connection, rows: Vec<R>) -> Result<Vec<Sourced<R>>> {
    let ids: Vec<i64> = rows.iter().map(SourceRow::id).collect();
    let mut open: HashMap<i64, PausePeriod> = pause_periods::open_for(conn, R::KIND, &ids)?;
    Ok(rows
        .into_iter()
        .map(|row| Sourced {
            current_pause_period: open.remove(&row.id()),
            record: row,
        })
        .collect())
}

/// The API shape of one stored source.
pub fn to_api<R: SourceRow>(conn: &Connection, row: R) -> Result<Sourced<R>> {
    shape(conn, vec![row])?
        .pop()
        .ok_or_else(|| ApiError::internal("shaping lost a source"))
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
        "changing a person's medication plan needs manage access to the person",
    )
}

/// The person a new source is for: (id, portable id), with manage access
/// (404 outside scope, 403 below).
pub fn person_for_plan(
    conn: &Connection,
    actor: &Actor,
    person_id: Option<Option<ResourceId>>,
) -> Result<(i64, String)> {
    match person_id {
        None => Err(ApiError::invalid("person_id", "is required")),
        Some(None) => Err(ApiError::invalid("person_id", "must not be null")),
        Some(Some(id)) => {
            let person = people::store::find(conn, actor.household_id, &id)?
                .ok_or_else(|| ApiError::not_found("person"))?;
            require_access(conn, actor, person.id, WRITE_LEVEL, "person")?;
            Ok((person.id, person.portable_id))
        }
    }
}

/// Checks that a person_id sent on a change names the source's own person.
pub fn check_same_person(
    sent: Option<Option<ResourceId>>,
    person_id: i64,
    person_portable_id: &str,
    problems: &mut Problems,
) {
    match sent {
        None => {}
        Some(Some(ResourceId::Numeric(n))) if n == person_id => {}
        Some(Some(ResourceId::Portable(p))) if p == person_portable_id => {}
        Some(None) => problems.add("person_id", "must not be null"),
        Some(Some(_)) => problems.add(
            "person_id",
            "cannot change: create a new one for the other person instead",
        ),
    }
}

/// What applying attributes starts with for both kinds: person_id, when
/// sent, must name the source's own person, and the dose is settled
/// (`dose::settle`) and, when valid, set. `current` is the saved dose (PATCH
/// and PUT); `whole` (create and PUT) gives omitted attributes their
/// defaults. Also applies the notes.
pub fn apply_common(
    conn: &Connection,
    actor: &Actor,
    (head, notes): (&mut SourceHead, &mut Option<String>),
    current: Option<&Dose>,
    attrs: &mut impl SourceAttributes,
    whole: bool,
    problems: &mut Problems,
) -> Result<Option<Settled>> {
    check_same_person(
        attrs.take_person_id(),
        head.person_id,
        &head.person_portable_id,
        problems,
    );
    match attrs.take_notes() {
        Some(value) => *notes = trimmed(value.map(Text::into_inner)),
        None if whole => *notes = None,
        None => {}
    }
    let mut settled = dose::settle(
        conn,
        actor.household_id,
        current,
        whole,
        attrs.take_dose(),
        problems,
    )?;
    if let Some(dose) = settled.as_mut().and_then(|s| s.dose.take()) {
        head.dose = dose;
    }
    Ok(settled)
}

/// One page of the live sources of people the actor may view, each with
/// its open pause period, and the total.
pub fn list<R: SourceRow>(
    conn: &Connection,
    actor: &Actor,
    filter: &Filter,
    page: Page,
) -> Result<(Vec<Sourced<R>>, i64)> {
    let (rows, total) = source_row::list::<R>(conn, actor, filter, page)?;
    Ok((shape(conn, rows)?, total))
}

/// The live source `id` whose person the actor may reach at `needed`
/// (404/403).
pub fn find<R: SourceRow>(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    needed: AccessLevel,
) -> Result<R> {
    let row = source_row::find::<R>(conn, actor.household_id, id)?
        .ok_or_else(|| ApiError::not_found(R::NOUN))?;
    require_access(conn, actor, row.person_id(), needed, R::NOUN)?;
    Ok(row)
}

/// Reading: view access to the person.
pub fn get<R: SourceRow>(conn: &Connection, actor: &Actor, id: &ResourceId) -> Result<Sourced<R>> {
    let row = find(conn, actor, id, AccessLevel::View)?;
    to_api(conn, row)
}

/// Appends the source's change-feed entry.
pub fn record<R: SourceRow>(conn: &WriteTx, actor: &Actor, row: &R, action: Action) -> Result<()> {
    change_feed::append(
        conn,
        Change {
            household_id: actor.household_id,
            record_type: R::RECORD_TYPE,
            record_id: row.id(),
            record_portable_id: row.portable_id(),
            action,
            person_id: Some(row.person_id()),
        },
    )
}

/// The source to change: live and its person in scope (404), manage access
/// (403), and If-Match, when sent, current (409).
pub fn find_for_change<R: SourceRow>(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
) -> Result<R> {
    let row: R = find(conn, actor, id, WRITE_LEVEL)?;
    if_match.check(&etag(row.portable_id(), row.lock_version()))?;
    Ok(row)
}

/// Writes a changed source as a new version. A change of its plan is kept
/// in the plan history, effective now, so doses before it stay as they were.
pub fn save<R: SourceRow>(conn: &WriteTx, actor: &Actor, mut row: R) -> Result<Sourced<R>> {
    let now = Timestamp::now();
    let before = source_row::find::<R>(conn, actor.household_id, &ResourceId::Numeric(row.id()))?
        .ok_or_else(|| ApiError::not_found(R::NOUN))?;
    history::record_source(
        conn,
        actor.household_id,
        row.id(),
        &before,
        &row,
        now.as_str(),
    )?;
    row.touch(now);
    source_row::update(conn, &row)?;
    record(conn, actor, &row, Action::Update)?;
    to_api(conn, row)
}

/// Deleting retires: the row stays for the history that points at it, the
/// source leaves every list and read, and the change feed records the
/// retirement (an update) and a deletion marker.
pub fn delete<R: SourceRow>(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
) -> Result<()> {
    delete_at::<R>(conn, actor, id, if_match, &crate::domain::Timestamp::now())
}

/// [`delete`] with the retirement time a portable import restores.
pub fn delete_at<R: SourceRow>(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    retired_at: &Timestamp,
) -> Result<()> {
    let row: R = find_for_change(conn, actor, id, if_match)?;
    source_row::retire(conn, R::TABLE, row.id(), retired_at)?;
    record(conn, actor, &row, Action::Update)?;
    record(conn, actor, &row, Action::Delete)
}

/// The deprecated pause: opens a pause period with the reason
/// `reason_not_recorded` through the pause-period rule (409
/// `pause_period_open` when one is open). Needs manage access; a retired
/// source is not found. If-Match, when sent, must be current.
pub fn pause<R: SourceRow>(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
) -> Result<Sourced<R>> {
    let row: R = find_for_change(conn, actor, id, if_match)?;
    pause_periods::pause_without_reason(conn, actor, R::KIND, row.portable_id())?;
    get(conn, actor, &ResourceId::Numeric(row.id()))
}

/// The deprecated resume: closes the source's open pause period through
/// the pause-period rule (409 when none is open).
pub fn resume<R: SourceRow>(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
) -> Result<Sourced<R>> {
    let row: R = find_for_change(conn, actor, id, if_match)?;
    pause_periods::resume_source(conn, actor, R::KIND, row.id())?;
    get(conn, actor, &ResourceId::Numeric(row.id()))
}
