//! Person medications: direct assignments of a medication to a person,
//! taken on a routine or as needed, without a schedule. The rules for
//! reading, creating, changing, reordering and retiring them.
//!
//! Access works as for schedules: reading needs view access to the person
//! (404 otherwise); creating, changing, reordering and deleting need manage
//! access (`view` and `record` → 403). An assignment stays with its person
//! for life. If-Match is optional on changes (stale → 409). Each assignment
//! has a `position` among its person's: a new one goes last, positions are
//! unique per person and never reused, and only reordering moves them.
//! Deleting retires, as for schedules: the row stays for the history that
//! points at it, the assignment leaves every list and read (404), and the
//! change feed records the retirement and a deletion marker.

pub mod model;
pub mod routes;
pub mod store;

use crate::db::WriteTx;
use rusqlite::Connection;

use crate::auth::Actor;
use crate::care::pause_periods::model::SourceType;
pub use crate::care::source_row::Filter;
use crate::care::source_row::{self, SourceRow};
use crate::care::sources::model::{Dose, SourceHead, SourceStamps};
use crate::care::sources::{self, person_for_plan};
use crate::db::change_feed::Action;
use crate::domain::{IfMatch, ResourceId, Timestamp};
use crate::error::{Problems, Result};
use model::{
    AdministrationKind, Direction, PersonMedication, PersonMedicationAttributes,
    PersonMedicationRow,
};

pub const RECORD_TYPE: &str = crate::domain::record_type::PERSON_MEDICATION;

crate::care::source_row::source_row!(
    PersonMedicationRow,
    SourceType::PersonMedication,
    RECORD_TYPE,
    "person medication"
);

/// `getPersonMedication`: view access to the person.
pub fn get(conn: &Connection, actor: &Actor, id: &ResourceId) -> Result<PersonMedication> {
    sources::get(conn, actor, id)
}

/// Applies attributes to an assignment, collecting every problem before
/// answering. `current` is the saved dose (PATCH and PUT); `whole` (create
/// and PUT) gives omitted attributes their defaults.
fn apply(
    conn: &Connection,
    actor: &Actor,
    row: &mut PersonMedicationRow,
    current: Option<&Dose>,
    mut attrs: PersonMedicationAttributes,
    whole: bool,
) -> Result<()> {
    let mut problems = Problems::default();
    let target = (&mut row.source, &mut row.notes);
    sources::apply_common(
        conn,
        actor,
        target,
        current,
        &mut attrs,
        whole,
        &mut problems,
    )?;
    match attrs.administration_kind {
        Some(None) => problems.add(
            "administration_kind",
            "must be routine or as_needed, not null",
        ),
        Some(Some(kind)) => row.administration_kind = kind,
        None if whole => row.administration_kind = AdministrationKind::Routine,
        None => {}
    }
    problems.check("the person medication's attributes are invalid")
}

/// An assignment with no attributes applied yet (placeholders for the
/// required ones, which `apply` insists on).
fn blank(source: SourceHead, stamps: SourceStamps) -> PersonMedicationRow {
    PersonMedicationRow {
        source,
        administration_kind: AdministrationKind::Routine,
        active: true,
        notes: None,
        position: 0,
        stamps,
    }
}

/// `createPersonMedication`: person_id and medication_id are required, and
/// dose_amount and dose_unit unless the dosage option or the medication
/// gives them; the assignment goes last among the person's. Needs manage
/// access to the person.
pub fn create(
    conn: &WriteTx,
    actor: &Actor,
    mut attrs: PersonMedicationAttributes,
) -> Result<PersonMedication> {
    let (person_id, person_portable_id) = person_for_plan(conn, actor, attrs.person_id.take())?;
    let mut row = blank(
        SourceHead::new(person_id, person_portable_id),
        SourceStamps::new(),
    );
    apply(conn, actor, &mut row, None, attrs, true)?;
    row.position = store::next_position(conn, person_id)?;
    row.source.id = source_row::insert(conn, actor.household_id, &row)?;
    sources::record(conn, actor, &row, Action::Create)?;
    sources::to_api(conn, row)
}

/// `updatePersonMedication` (PATCH): any subset of the attributes;
/// person_id, when sent, must name the assignment's person.
pub fn update(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    attrs: PersonMedicationAttributes,
) -> Result<PersonMedication> {
    let mut row: PersonMedicationRow = sources::find_for_change(conn, actor, id, if_match)?;
    let current = row.source.dose.clone();
    apply(conn, actor, &mut row, Some(&current), attrs, false)?;
    sources::save(conn, actor, row)
}

/// `replacePersonMedication` (PUT): the whole assignment as on create (an
/// omitted medication_id keeps the medication); other omitted attributes
/// take their defaults or become null. The position stays.
pub fn replace(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    attrs: PersonMedicationAttributes,
) -> Result<PersonMedication> {
    let current: PersonMedicationRow = sources::find_for_change(conn, actor, id, if_match)?;
    let mut row = PersonMedicationRow {
        active: current.active,
        position: current.position,
        ..blank(current.source.without_dose(), current.stamps.clone())
    };
    let saved = current.source.dose;
    apply(conn, actor, &mut row, Some(&saved), attrs, true)?;
    sources::save(conn, actor, row)
}

/// `reorderPersonMedication`: swaps the assignment's position with the
/// person's live assignment before it (`up`) or after it (`down`); both
/// change (new ETags, change-feed updates). At the top or the bottom
/// nothing changes and the assignment is returned as it is.
pub fn reorder(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    direction: Direction,
) -> Result<PersonMedication> {
    let mut row: PersonMedicationRow = sources::find_for_change(conn, actor, id, if_match)?;
    let person_id = row.source.person_id;
    let Some(mut other) = store::neighbour(conn, person_id, row.position, direction)? else {
        return sources::to_api(conn, row);
    };
    let now = Timestamp::now();
    std::mem::swap(&mut row.position, &mut other.position);
    for moved in [&mut row, &mut other] {
        moved.touch(now.clone());
    }
    store::save_swapped(conn, &row, &other)?;
    sources::record(conn, actor, &row, Action::Update)?;
    sources::record(conn, actor, &other, Action::Update)?;
    sources::to_api(conn, row)
}

/// `deletePersonMedication`: retires the assignment (see `sources::delete`).
pub fn delete(conn: &WriteTx, actor: &Actor, id: &ResourceId, if_match: &IfMatch) -> Result<()> {
    sources::delete::<PersonMedicationRow>(conn, actor, id, if_match)
}

/// `pausePersonMedication` (deprecated; see `sources::pause`).
pub fn pause(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
) -> Result<PersonMedication> {
    sources::pause(conn, actor, id, if_match)
}

/// `resumePersonMedication` (deprecated; see `sources::resume`).
pub fn resume(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
) -> Result<PersonMedication> {
    sources::resume(conn, actor, id, if_match)
}
