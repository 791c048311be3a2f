//! Persisted dose outcomes (`medication_dose_occurrence` in a sync batch),
//! one rule per mutation:
//!
//! - [`record_not_taken`] (batch create): marks one expected dose of a live
//!   routine source not taken. The occurrence key must be one this server
//!   signed for that very source; prn schedules and as-needed assignments
//!   have no expected doses (422). Needs record access to the person (view
//!   → 403, out of scope → 404). Repeating the decision returns the saved
//!   row unchanged; a reopened (open) row is decided again; a dose already
//!   taken (a linked take or a taken row) is a 409 `dose_outcome_conflict`. Routine
//!   outcomes never invent a scheduled time (scheduled_at stays null) and
//!   never touch stock.
//! - [`reopen`] (batch update with attributes `{outcome: "open"}`): needs
//!   manage access and the row's current ETag; clears resolved_at, reason
//!   and note.
//!
//! - [`link_take`] (called by recording a take with an occurrence key):
//!   a saved outcome of that dose (not_taken, or open after a reopen)
//!   becomes `taken` with the take, so snapshots and the change feed agree
//!   with `listDoseOccurrences`. Takes are immutable and never deleted, so a
//!   taken outcome never has to go back.
//!
//! Deletes and direct updates to `taken` are not supported: a medication
//! take records an actual dose.

use crate::db::WriteTx;
use rusqlite::Connection;
use serde::Deserialize;

use super::model::{DoseOutcome, Outcome};
use crate::auth::Actor;
use crate::auth::access::{self, AccessLevel};
use crate::care::dose_occurrences::{PERSON_MEDICATION, SCHEDULE, cycle_window, store};
use crate::care::medication_takes::model::SourceType;
use crate::care::medication_takes::store as takes_store;
use crate::care::occurrence_key;
use crate::db::change_feed::{self, Action, Change};
use crate::domain::{IfMatch, ResourceId, Text, Versioned};
use crate::error::{ApiError, Problems, Result};

pub const RECORD_TYPE: &str = crate::domain::record_type::DOSE_OCCURRENCE;
/// Deciding a dose (not taken) needs this access to the person...
pub const RECORD_LEVEL: AccessLevel = AccessLevel::Record;
/// ...and reopening a decided one this.
pub const REOPEN_LEVEL: AccessLevel = AccessLevel::Manage;
/// A decision that contradicts the occurrence's saved outcome or take.
pub const CONFLICT: &str = "dose_outcome_conflict";
pub const MAX_REASON: usize = 200;
pub const MAX_NOTE: usize = 1000;

/// Batch create attributes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotTakenAttrs {
    pub source_type: SourceType,
    pub source_id: ResourceId,
    pub occurrence_key: String,
    pub outcome: Outcome,
    #[serde(default)]
    pub reason: Option<Text<MAX_REASON>>,
    #[serde(default)]
    pub note: Option<Text<MAX_NOTE>>,
}

/// Batch update attributes: only `{outcome: "open"}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReopenAttrs {
    pub outcome: Outcome,
}

fn taken_conflict() -> ApiError {
    ApiError::conflict(
        CONFLICT,
        "this expected dose already has a different outcome; reload the day's doses",
    )
}

/// The permission check of [`record_not_taken`] on `person_id`'s dose (404
/// naming `missing`, 403); also run before a saved batch is replayed.
pub fn authorize_record(
    conn: &Connection,
    actor: &Actor,
    person_id: i64,
    missing: &str,
) -> Result<()> {
    access::require_level(
        conn,
        actor,
        person_id,
        RECORD_LEVEL,
        missing,
        "recording a dose outcome needs record access to the person",
    )
}

/// The permission check of [`reopen`] on `person_id`'s dose outcome; also
/// run before a saved batch is replayed.
pub fn authorize_reopen(conn: &Connection, actor: &Actor, person_id: i64) -> Result<()> {
    access::require_level(
        conn,
        actor,
        person_id,
        REOPEN_LEVEL,
        "dose occurrence",
        "reopening a dose outcome needs manage access to the person",
    )
}

/// Batch create of a `not_taken` outcome.
pub fn record_not_taken(
    conn: &WriteTx,
    actor: &Actor,
    attrs: NotTakenAttrs,
) -> Result<DoseOutcome> {
    let source_type = attrs.source_type;
    if attrs.outcome != Outcome::NotTaken {
        return Err(ApiError::invalid("outcome", "must be not_taken"));
    }
    let occurrence = occurrence_key::verify(conn, &attrs.occurrence_key)?;
    let source = occurrence_source(conn, actor, source_type, &attrs.source_id, &occurrence)?;

    let window_start = occurrence.window_starts_on;
    let window_end = match source_type {
        SourceType::Schedule => window_start,
        SourceType::PersonMedication => cycle_window(source.dose_cycle, window_start).1,
    };
    let window = window_start.to_string();
    let position = i64::from(occurrence.position);
    let type_text = match source_type {
        SourceType::Schedule => SCHEDULE,
        SourceType::PersonMedication => PERSON_MEDICATION,
    };

    let existing = store::outcome_by_occurrence(conn, type_text, source.id, &window, position)?;
    if takes_store::find_by_occurrence(conn, source_type, source.id, &window, position)?.is_some() {
        return Err(taken_conflict());
    }
    if let Some(saved) = existing {
        return match saved.outcome.as_str() {
            "not_taken" => Ok(saved),
            // A reopened dose can be decided again.
            "open" => decide_again(conn, actor, &saved, &attrs),
            _ => Err(taken_conflict()),
        };
    }

    let portable_id = crate::db::new_portable_id();
    let id = store::insert_not_taken(
        conn,
        &store::NewNotTaken {
            portable_id: &portable_id,
            household_id: actor.household_id,
            person_id: source.person_id,
            source_type: type_text,
            source_id: source.id,
            window_starts_on: &window,
            window_ends_on: &window_end.to_string(),
            position,
            reason: attrs.reason.as_deref(),
            note: attrs.note.as_deref(),
            membership_id: actor.membership_id,
        },
    )?;
    change_feed::append(
        conn,
        Change {
            household_id: actor.household_id,
            record_type: RECORD_TYPE,
            record_id: id,
            record_portable_id: &portable_id,
            action: Action::Create,
            person_id: Some(source.person_id),
        },
    )?;
    store::outcome_by_id(conn, id)
}

/// The live routine source an outcome names, which the caller may record
/// for and the occurrence key belongs to.
fn occurrence_source(
    conn: &Connection,
    actor: &Actor,
    source_type: SourceType,
    source_id: &ResourceId,
    occurrence: &occurrence_key::Occurrence,
) -> Result<takes_store::Source> {
    let noun = source_type.noun();
    let source = takes_store::find_source(conn, actor.household_id, source_type, source_id)?
        .filter(|s| !s.retired)
        .ok_or_else(|| ApiError::not_found(noun))?;
    authorize_record(conn, actor, source.person_id, noun)?;
    if occurrence.source_type != source_type.as_str()
        || occurrence.source_portable_id != source.portable_id
    {
        return Err(ApiError::invalid(
            "occurrence_key",
            "names an expected dose of another schedule or person medication",
        ));
    }
    if source.as_needed {
        return Err(ApiError::invalid(
            "source_id",
            "names an as-needed source, which has no expected doses",
        ));
    }
    Ok(source)
}

/// A reopened dose decided `not_taken` again.
fn decide_again(
    conn: &WriteTx,
    actor: &Actor,
    saved: &DoseOutcome,
    attrs: &NotTakenAttrs,
) -> Result<DoseOutcome> {
    store::decide_not_taken(
        conn,
        saved.id,
        attrs.reason.as_deref(),
        attrs.note.as_deref(),
        actor.membership_id,
    )?;
    change_feed::append(
        conn,
        Change {
            household_id: actor.household_id,
            record_type: RECORD_TYPE,
            record_id: saved.id,
            record_portable_id: &saved.portable_id,
            action: Action::Update,
            person_id: Some(saved.person_id),
        },
    )?;
    store::outcome_by_id(conn, saved.id)
}

/// The saved outcome of an expected dose a new take may link to (`None`:
/// nothing saved); the 409 when it is already taken. The take rule asks
/// before it writes anything.
pub fn linkable_outcome(
    conn: &Connection,
    source_type: SourceType,
    source_id: i64,
    window_starts_on: &str,
    position: i64,
) -> Result<Option<DoseOutcome>> {
    let type_text = match source_type {
        SourceType::Schedule => SCHEDULE,
        SourceType::PersonMedication => PERSON_MEDICATION,
    };
    let saved =
        store::outcome_by_occurrence(conn, type_text, source_id, window_starts_on, position)?;
    if saved.as_ref().is_some_and(|saved| saved.outcome == "taken") {
        return Err(ApiError::conflict(
            "occurrence_already_taken",
            "this expected dose is already recorded as taken",
        ));
    }
    Ok(saved)
}

/// Marks `saved` (the saved outcome of the expected dose a new take names,
/// as [`linkable_outcome`] found it) taken by take `take_id`, in the
/// caller's transaction, with its change-feed entry. A dose without a
/// saved outcome needs nothing: the projection shows it taken from the
/// take itself.
pub fn link_take(conn: &WriteTx, actor: &Actor, saved: &DoseOutcome, take_id: i64) -> Result<()> {
    store::mark_taken(conn, saved.id, take_id, actor.membership_id)?;
    change_feed::append(
        conn,
        Change {
            household_id: actor.household_id,
            record_type: RECORD_TYPE,
            record_id: saved.id,
            record_portable_id: &saved.portable_id,
            action: Action::Update,
            person_id: Some(saved.person_id),
        },
    )
}

/// Batch update reopening a saved outcome (`{outcome: "open"}`).
pub fn reopen(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    attrs: ReopenAttrs,
) -> Result<DoseOutcome> {
    if attrs.outcome != Outcome::Open {
        return Err(ApiError::invalid(
            "outcome",
            "must be open; a medication take records an actual dose",
        ));
    }
    let saved = store::find_outcome(conn, actor.household_id, id)?
        .ok_or_else(|| ApiError::not_found("dose occurrence"))?;
    authorize_reopen(conn, actor, saved.person_id)?;
    if_match.require(&saved.etag())?;
    if saved.outcome == "open" {
        return Ok(saved);
    }
    let linked_take = match SourceType::parse(&saved.source_type) {
        Some(kind) => takes_store::find_by_occurrence(
            conn,
            kind,
            saved.source_id,
            &saved.window_starts_on,
            saved.position,
        )?,
        None => None,
    };
    if saved.outcome != "not_taken" || linked_take.is_some() {
        return Err(taken_conflict());
    }
    store::reopen(conn, saved.id, actor.membership_id)?;
    change_feed::append(
        conn,
        Change {
            household_id: actor.household_id,
            record_type: RECORD_TYPE,
            record_id: saved.id,
            record_portable_id: &saved.portable_id,
            action: Action::Update,
            person_id: Some(saved.person_id),
        },
    )?;
    store::outcome_by_id(conn, saved.id)
}

pub use super::store::Restored;

/// Restores a saved outcome (import rules 6 and 7): it needs record access
/// to the person and a routine source; a taken outcome names a take of the
/// same source given inside the window (widened by a day either side, as a
/// dose may be given late at night or early); the dose slot must be free.
/// Nothing is administered and stock is untouched; the original resolution
/// time is kept and the importing member is the local actor.
pub fn restore(conn: &WriteTx, actor: &Actor, r: &Restored<'_>) -> Result<(i64, String)> {
    let noun = r.source_type.noun();
    let source = takes_store::find_source(conn, actor.household_id, r.source_type, r.source_id)?
        .ok_or_else(|| ApiError::not_found(noun))?;
    authorize_record(conn, actor, source.person_id, noun)?;
    let mut problems = Problems::default();
    if source.as_needed {
        problems.add(
            "source_portable_id",
            "names an as-needed source, which has no expected doses",
        );
    }
    if r.outcome == Outcome::Taken && r.medication_take_id.is_none() {
        problems.add(
            "medication_take_portable_id",
            "is required for a taken outcome",
        );
    }
    if r.outcome != Outcome::Taken && r.medication_take_id.is_some() {
        problems.add(
            "medication_take_portable_id",
            "must be null unless the outcome is taken",
        );
    }
    if !source.as_needed
        && r.scheduled_at.is_some()
        && r.source_type == SourceType::PersonMedication
    {
        problems.add(
            "scheduled_at",
            "must be null: a routine assignment has no scheduled time",
        );
    }
    if r.reason.is_some_and(|t| t.chars().count() > MAX_REASON) {
        problems.add("reason", format!("must be at most {MAX_REASON} characters"));
    }
    if r.note.is_some_and(|t| t.chars().count() > MAX_NOTE) {
        problems.add("note", format!("must be at most {MAX_NOTE} characters"));
    }
    let starts = r.window_starts_on.parse::<jiff::civil::Date>();
    if starts.is_err() {
        problems.add("window_starts_on", "must be a date (YYYY-MM-DD)");
    }
    problems.check("the dose outcome is invalid")?;
    let window_end = match (r.window_ends_on, starts) {
        (Some(end), _) => end.to_string(),
        (None, Ok(start)) => match r.source_type {
            SourceType::Schedule => start.to_string(),
            SourceType::PersonMedication => cycle_window(source.dose_cycle, start).1.to_string(),
        },
        (None, Err(_)) => return Err(ApiError::internal("window start checked above")),
    };
    let take_id = match r.medication_take_id {
        Some(take) => Some(restored_take(
            conn,
            &source,
            take,
            r.window_starts_on,
            &window_end,
        )?),
        None => None,
    };
    let source_text = match r.source_type {
        SourceType::Schedule => SCHEDULE,
        SourceType::PersonMedication => PERSON_MEDICATION,
    };
    if store::outcome_by_occurrence(conn, source_text, source.id, r.window_starts_on, r.position)?
        .is_some()
    {
        return Err(ApiError::conflict(
            CONFLICT,
            "this expected dose already has a saved outcome",
        ));
    }
    let portable_id = crate::db::new_portable_id();
    let id = store::insert_restored(
        conn,
        &store::RestoredOutcome {
            portable_id: &portable_id,
            household_id: actor.household_id,
            person_id: source.person_id,
            source_type: source_text,
            source_id: source.id,
            restored: r,
            window_ends_on: &window_end,
            medication_take_id: take_id,
            membership_id: actor.membership_id,
        },
    )?;
    change_feed::append(
        conn,
        Change {
            household_id: actor.household_id,
            record_type: RECORD_TYPE,
            record_id: id,
            record_portable_id: &portable_id,
            action: Action::Create,
            person_id: Some(source.person_id),
        },
    )?;
    Ok((id, portable_id))
}

/// The take a restored taken outcome names: one of the same source, given
/// within a day of the window.
fn restored_take(
    conn: &Connection,
    source: &takes_store::Source,
    take: i64,
    window_starts_on: &str,
    window_ends_on: &str,
) -> Result<i64> {
    let found =
        takes_store::find(conn, take)?.ok_or_else(|| ApiError::not_found("medication take"))?;
    let mismatch = || {
        ApiError::invalid(
            "medication_take_portable_id",
            "names a take of another source or outside the saved window",
        )
    };
    if found.source_type != source.source_type || found.source_id != source.id {
        return Err(mismatch());
    }
    let day = found.taken_at.get(..10).unwrap_or_default();
    let (Ok(day), Ok(starts), Ok(ends)) = (
        day.parse::<jiff::civil::Date>(),
        window_starts_on.parse::<jiff::civil::Date>(),
        window_ends_on.parse::<jiff::civil::Date>(),
    ) else {
        return Err(mismatch());
    };
    let slack = jiff::Span::new().days(1);
    let inside = starts.checked_sub(slack).is_ok_and(|s| day >= s)
        && ends.checked_add(slack).is_ok_and(|e| day <= e);
    if !inside {
        return Err(mismatch());
    }
    Ok(found.id)
}
