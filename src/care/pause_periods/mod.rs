//! Pause periods: when and why a schedule or direct assignment was paused.
//! The rules for listing, opening (pausing) and closing (resuming) them.
//!
//! A source has at most one open period. Opening one needs manage access to
//! the source's person and a live (unretired) source; the server sets the
//! start and the actor (no backdating), the source's `active` becomes false
//! and its version moves on. Resuming closes only the addressed period: an
//! already closed one is a 409 `pause_period_closed` and nothing changes, so
//! a retry aimed at an older, completed period never closes a newer pause.
//! Periods are never edited or deleted. Reading needs view access to the
//! person; the history of retired sources stays visible. The deprecated
//! pause/resume operations of schedules and assignments call these same
//! rules.

pub mod model;
pub mod routes;
pub mod store;

use crate::db::WriteTx;
use std::collections::HashMap;

use rusqlite::Connection;

use crate::auth::{AccessLevel, Actor, access};
use crate::care::person_medications::model::PersonMedicationRow;
use crate::care::schedules::model::ScheduleRow;
use crate::care::source_row::{self, SourceRow};
use crate::db::change_feed::{self, Action, Change};
use crate::domain::{IfMatch, Page, ResourceId, Timestamp, Versioned, trimmed};
use crate::error::{ApiError, Result};
pub use model::Restored;
use model::{PausePeriod, PausePeriodAttributes, PauseReason, SourceType};
pub use store::SourceFilter;

pub const RECORD_TYPE: &str = crate::domain::record_type::PAUSE_PERIOD;
/// The access to the person that pausing and resuming need.
pub const WRITE_LEVEL: AccessLevel = AccessLevel::Manage;
/// A source that already has an open period cannot be paused again.
pub const PERIOD_OPEN: &str = "pause_period_open";
/// The addressed period is already closed.
pub const PERIOD_CLOSED: &str = "pause_period_closed";
/// A deprecated resume of a source that has no open period.
pub const NOT_PAUSED: &str = "pause_period_not_open";

/// A live schedule or direct assignment that a period belongs to.
#[derive(Debug, Clone)]
pub struct Source {
    pub source_type: SourceType,
    pub id: i64,
    pub portable_id: String,
    pub person_id: i64,
}

/// The live (unretired) source of the household named by `id`.
fn live_source(
    conn: &Connection,
    household_id: i64,
    source_type: SourceType,
    id: &ResourceId,
) -> Result<Option<Source>> {
    match source_type {
        SourceType::Schedule => source_of::<ScheduleRow>(conn, household_id, id),
        SourceType::PersonMedication => source_of::<PersonMedicationRow>(conn, household_id, id),
    }
}

fn source_of<R: SourceRow>(
    conn: &Connection,
    household_id: i64,
    id: &ResourceId,
) -> Result<Option<Source>> {
    Ok(
        source_row::find::<R>(conn, household_id, id)?.map(|row| Source {
            source_type: R::KIND,
            id: row.id(),
            portable_id: row.portable_id().to_owned(),
            person_id: row.person_id(),
        }),
    )
}

/// 404 (naming `missing`) when the person is outside the actor's scope, 403
/// when visible but the access is below manage.
fn require_manage(conn: &Connection, actor: &Actor, person_id: i64, missing: &str) -> Result<()> {
    access::require_level(
        conn,
        actor,
        person_id,
        WRITE_LEVEL,
        missing,
        "pausing and resuming a medicine needs manage access to the person",
    )
}

/// A portable id (UUID) in its canonical form.
fn portable(text: &str) -> Option<String> {
    uuid::Uuid::parse_str(text)
        .ok()
        .map(|u| u.hyphenated().to_string())
}

/// The permission check of [`create`]: the source is live and in the
/// actor's scope (404), with manage access (403). Runs before a saved
/// response is replayed.
pub fn authorize_create(
    conn: &Connection,
    actor: &Actor,
    attrs: &PausePeriodAttributes,
) -> Result<Source> {
    let source_id = portable(&attrs.source_id)
        .ok_or_else(|| ApiError::invalid("source_id", "must be a portable id (UUID)"))?;
    let noun = attrs.source_type.noun();
    let source = live_source(
        conn,
        actor.household_id,
        attrs.source_type,
        &ResourceId::Portable(source_id),
    )?
    .ok_or_else(|| ApiError::not_found(noun))?;
    require_manage(conn, actor, source.person_id, noun)?;
    Ok(source)
}

fn record(
    conn: &WriteTx,
    household_id: i64,
    record_type: &'static str,
    (id, portable_id): (i64, &str),
    action: Action,
    person_id: i64,
) -> Result<()> {
    change_feed::append(
        conn,
        Change {
            household_id,
            record_type,
            record_id: id,
            record_portable_id: portable_id,
            action,
            person_id: Some(person_id),
        },
    )
}

/// The change of a source's `active` flag: saved, and recorded in the
/// change feed as an update of the source.
fn set_active(conn: &WriteTx, actor: &Actor, source: &Source, active: bool) -> Result<()> {
    let now = Timestamp::now();
    let (table, record_type) = match source.source_type {
        SourceType::Schedule => (ScheduleRow::TABLE, ScheduleRow::RECORD_TYPE),
        SourceType::PersonMedication => {
            (PersonMedicationRow::TABLE, PersonMedicationRow::RECORD_TYPE)
        }
    };
    source_row::set_active(conn, table, source.id, active, &now)?;
    record(
        conn,
        actor.household_id,
        record_type,
        (source.id, &source.portable_id),
        Action::Update,
        source.person_id,
    )
}

fn reload(conn: &Connection, id: i64) -> Result<PausePeriod> {
    store::find_by_id(conn, id)?
        .ok_or_else(|| ApiError::internal("a pause period vanished inside its transaction"))
}

/// `createMedicationPausePeriod`: opens a period on a live source (reason
/// required, note optional); the source becomes inactive. Needs manage
/// access to the source's person; a source with an open period is a 409.
pub fn create(conn: &WriteTx, actor: &Actor, attrs: &PausePeriodAttributes) -> Result<PausePeriod> {
    let source = authorize_create(conn, actor, attrs)?;
    let note = trimmed(attrs.note.clone().map(|n| n.into_inner()));
    if !store::open_for(conn, source.source_type, &[source.id])?.is_empty() {
        return Err(ApiError::conflict(
            PERIOD_OPEN,
            format!(
                "this {} is already paused; resume its open pause period first",
                source.source_type.noun()
            ),
        ));
    }
    let now = Timestamp::now();
    let portable_id = crate::db::new_portable_id();
    let id = store::insert(
        conn,
        &store::NewPeriod {
            portable_id: &portable_id,
            household_id: actor.household_id,
            source_type: source.source_type,
            source_id: source.id,
            person_id: source.person_id,
            reason: attrs.reason,
            note: note.as_deref(),
            recorded_by_membership_id: actor.membership_id,
            now: &now,
        },
    )?;
    record(
        conn,
        actor.household_id,
        RECORD_TYPE,
        (id, &portable_id),
        Action::Create,
        source.person_id,
    )?;
    set_active(conn, actor, &source, false)?;
    reload(conn, id)
}

/// Restores a period without pausing or resuming (import rule 1): manage
/// access to the source's person, no second open period and no overlap
/// with the source's other periods (rule 2); an open period makes the
/// source inactive (rule 3). The restored period is `imported_context`.
pub fn restore(conn: &WriteTx, actor: &Actor, period: &Restored<'_>) -> Result<(i64, String)> {
    let noun = period.source_type.noun();
    let source = live_source(
        conn,
        actor.household_id,
        period.source_type,
        period.source_id,
    )?
    .ok_or_else(|| ApiError::not_found(noun))?;
    require_manage(conn, actor, source.person_id, noun)?;
    let mut problems = crate::error::Problems::default();
    crate::domain::bounded_text(
        "note",
        period.note.map(str::to_string),
        model::PauseNote::MAX,
        &mut problems,
    );
    if let (Some(start), Some(end)) = (period.started_at, period.ended_at)
        && end < start
    {
        problems.add("ended_at", "must not be before started_at");
    }
    problems.check("the pause period's attributes are invalid")?;
    let open = period.ended_at.is_none();
    if open && !store::open_for(conn, source.source_type, &[source.id])?.is_empty() {
        return Err(ApiError::conflict(
            PERIOD_OPEN,
            format!("this {noun} already has an open pause period"),
        ));
    }
    if store::overlaps(
        conn,
        source.source_type,
        source.id,
        period.started_at,
        period.ended_at,
    )? {
        return Err(ApiError::conflict(
            "pause_history_conflict",
            format!("this period overlaps another pause period of the {noun}"),
        ));
    }
    let portable_id = crate::db::new_portable_id();
    let id = store::insert_restored(
        conn,
        &store::RestoredRow {
            portable_id: &portable_id,
            household_id: actor.household_id,
            source_type: source.source_type,
            source_id: source.id,
            person_id: source.person_id,
            period,
            now: &crate::domain::Timestamp::now(),
        },
    )?;
    record(
        conn,
        actor.household_id,
        RECORD_TYPE,
        (id, &portable_id),
        Action::Create,
        source.person_id,
    )?;
    if open {
        set_active(conn, actor, &source, false)?;
    }
    Ok((id, portable_id))
}

/// An imported open period arriving again, now closed (the state table's
/// "imported open period" row): it closes at the bundle's end time with its
/// recording context unchanged, and its source becomes active again. Only
/// an open period that was itself imported may advance this way.
pub fn advance_imported(
    conn: &WriteTx,
    actor: &Actor,
    portable_id: &str,
    ended_at: &Timestamp,
    resumed_by: store::Resumer<'_>,
) -> Result<()> {
    let period = authorize_resume(conn, actor, portable_id)?;
    if !period.is_open() || !period.imported_context {
        return Err(ApiError::conflict(
            "pause_history_conflict",
            "only an imported open pause period can be closed by an import",
        ));
    }
    if period
        .started_at
        .as_deref()
        .is_some_and(|start| ended_at.as_str() < start)
    {
        return Err(ApiError::invalid(
            "ended_at",
            "must not be before started_at",
        ));
    }
    let source = live_source(
        conn,
        actor.household_id,
        period.source_type,
        &ResourceId::Numeric(period.source_numeric_id),
    )?
    .ok_or_else(|| ApiError::not_found(period.source_type.noun()))?;
    store::close(conn, period.row_id, resumed_by, ended_at)?;
    record(
        conn,
        actor.household_id,
        RECORD_TYPE,
        (period.row_id, &period.portable_id),
        Action::Update,
        period.person_id,
    )?;
    set_active(conn, actor, &source, true)
}

/// The permission check of [`resume`]: the period's person is in the
/// actor's scope (404), with manage access (403). Runs before a saved
/// response is replayed.
pub fn authorize_resume(
    conn: &Connection,
    actor: &Actor,
    portable_id: &str,
) -> Result<PausePeriod> {
    let period = portable(portable_id)
        .map(|p| store::find(conn, actor.household_id, &p))
        .transpose()?
        .flatten()
        .ok_or_else(|| ApiError::not_found("pause period"))?;
    require_manage(conn, actor, period.person_id, "pause period")?;
    Ok(period)
}

/// `resumeMedicationPausePeriod`: closes the addressed period, only if it
/// is open (else 409 `pause_period_closed`, nothing changes), and makes its
/// source active again. If-Match is optional (stale → 409). A retired
/// source cannot be resumed (404).
pub fn resume(
    conn: &WriteTx,
    actor: &Actor,
    portable_id: &str,
    if_match: &IfMatch,
) -> Result<PausePeriod> {
    let period = authorize_resume(conn, actor, portable_id)?;
    if !period.is_open() {
        return Err(ApiError::conflict(
            PERIOD_CLOSED,
            "this pause period has already ended; nothing was changed",
        ));
    }
    if_match.check(&period.etag())?;
    let source = live_source(
        conn,
        actor.household_id,
        period.source_type,
        &ResourceId::Numeric(period.source_numeric_id),
    )?
    .ok_or_else(|| ApiError::not_found(period.source_type.noun()))?;
    if !store::close(
        conn,
        period.row_id,
        store::Resumer::Member(Some(actor.membership_id)),
        &crate::domain::Timestamp::now(),
    )? {
        return Err(ApiError::conflict(
            PERIOD_CLOSED,
            "this pause period has already ended; nothing was changed",
        ));
    }
    record(
        conn,
        actor.household_id,
        RECORD_TYPE,
        (period.row_id, &period.portable_id),
        Action::Update,
        period.person_id,
    )?;
    set_active(conn, actor, &source, true)?;
    reload(conn, period.row_id)
}

/// The deprecated pause operations: opens a period with the reason
/// `reason_not_recorded` through [`create`].
pub fn pause_without_reason(
    conn: &WriteTx,
    actor: &Actor,
    source_type: SourceType,
    source_portable_id: &str,
) -> Result<PausePeriod> {
    create(
        conn,
        actor,
        &PausePeriodAttributes {
            source_type,
            source_id: source_portable_id.to_string(),
            reason: PauseReason::ReasonNotRecorded,
            note: None,
        },
    )
}

/// The deprecated resume operations: closes the source's open period
/// through [`resume`]; 409 when none is open.
pub fn resume_source(
    conn: &WriteTx,
    actor: &Actor,
    source_type: SourceType,
    source_id: i64,
) -> Result<PausePeriod> {
    let open = store::open_for(conn, source_type, &[source_id])?
        .remove(&source_id)
        .ok_or_else(|| {
            ApiError::conflict(
                NOT_PAUSED,
                format!("this {} is not paused", source_type.noun()),
            )
        })?;
    resume(conn, actor, &open.portable_id, &IfMatch(None))
}

/// `listMedicationPausePeriods`: periods of the people the actor may view,
/// newest first; optionally one source's history (retired sources too).
pub fn list(
    conn: &Connection,
    actor: &Actor,
    filter: Option<&SourceFilter>,
    page: Page,
) -> Result<(Vec<PausePeriod>, i64)> {
    store::list_visible(conn, actor, filter, page)
}

/// The open period of each of these sources (by source id), in one query:
/// schedule and assignment reads add it as `current_pause_period`.
pub fn open_for(
    conn: &Connection,
    source_type: SourceType,
    source_ids: &[i64],
) -> Result<HashMap<i64, PausePeriod>> {
    store::open_for(conn, source_type, source_ids)
}
