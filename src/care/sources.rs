//! What schedules and direct assignments (the two kinds of dose source)
//! share: access (view to read, manage to change the plan), the person a
//! source belongs to for life, reading, saving, retiring and the deprecated
//! pause and resume, the list filter and the paged list query. Each kind
//! keeps its own attributes and rules (`apply`, create, replace).

use crate::db::WriteTx;
use std::collections::HashMap;

use rusqlite::{Connection, Row, named_params};
use serde::Serialize;

use crate::auth::access::Named;
use crate::auth::store::{VISIBLE_PERSON, Visibility};
use crate::auth::{AccessLevel, Actor, access};
use crate::care::dose_occurrences::history::{self, Planned};
use crate::care::pause_periods::{
    self,
    model::{PausePeriod, SourceType},
};
use crate::db::change_feed::{self, Action, Change};
use crate::db::page::{self, PageQuery};
use crate::domain::{IfMatch, Page, ResourceId, Versioned, etag};
use crate::error::{ApiError, Problems, Result};
use crate::household::people;
use crate::http::extract::QueryParams;

/// The access to the person that changing the plan needs.
pub const WRITE_LEVEL: AccessLevel = AccessLevel::Manage;

/// A stored schedule or direct assignment.
pub trait SourceRow: Sized + Planned {
    const KIND: SourceType;
    const RECORD_TYPE: &'static str;
    /// How a missing one is named in a 404.
    const NOUN: &'static str;

    fn id(&self) -> i64;
    fn portable_id(&self) -> &str;
    fn person_id(&self) -> i64;
    fn lock_version(&self) -> i64;
    /// A new version written at `now`.
    fn touch(&mut self, now: String);

    /// The live (not retired) row `id` of the household.
    fn find(conn: &Connection, household_id: i64, id: &ResourceId) -> Result<Option<Self>>;
    fn update(conn: &WriteTx, row: &Self) -> Result<()>;
    fn retire(conn: &WriteTx, id: i64, now: &str) -> Result<()>;
}

/// Implements `SourceRow` for a row with `id`, `portable_id`, `person_id`,
/// `lock_version` and `updated_at` fields, stored through the calling
/// module's `store` (`find`, `update`, `retire`).
macro_rules! source_row {
    ($row:ty, $kind:expr, $record_type:expr, $noun:literal) => {
        impl $crate::care::sources::SourceRow for $row {
            const KIND: $crate::care::pause_periods::model::SourceType = $kind;
            const RECORD_TYPE: &'static str = $record_type;
            const NOUN: &'static str = $noun;

            fn id(&self) -> i64 {
                self.id
            }
            fn portable_id(&self) -> &str {
                &self.portable_id
            }
            fn person_id(&self) -> i64 {
                self.person_id
            }
            fn lock_version(&self) -> i64 {
                self.lock_version
            }
            fn touch(&mut self, now: String) {
                self.lock_version += 1;
                self.updated_at = now;
            }
            fn find(
                conn: &rusqlite::Connection,
                household_id: i64,
                id: &$crate::domain::ResourceId,
            ) -> $crate::error::Result<Option<Self>> {
                store::find(conn, household_id, id)
            }
            fn update(conn: &$crate::db::WriteTx, row: &Self) -> $crate::error::Result<()> {
                store::update(conn, row)
            }
            fn retire(conn: &$crate::db::WriteTx, id: i64, now: &str) -> $crate::error::Result<()> {
                store::retire(conn, id, now)
            }
        }
    };
}
pub(crate) use source_row;

/// A source as sent: the stored row and its open pause period (null when
/// none is open).
#[derive(Debug, Clone, Serialize)]
pub struct Sourced<R> {
    #[serde(flatten)]
    pub record: R,
    pub current_pause_period: Option<PausePeriod>,
}

impl<R: SourceRow> Versioned for Sourced<R> {
    fn etag(&self) -> String {
        etag(self.record.portable_id(), self.record.lock_version())
    }
}

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

/// The live source `id` whose person the actor may reach at `needed`
/// (404/403).
pub fn find<R: SourceRow>(
    conn: &Connection,
    actor: &Actor,
    id: &ResourceId,
    needed: AccessLevel,
) -> Result<R> {
    let row = R::find(conn, actor.household_id, id)?.ok_or_else(|| ApiError::not_found(R::NOUN))?;
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
    let now = crate::time::now();
    let before = R::find(conn, actor.household_id, &ResourceId::Numeric(row.id()))?
        .ok_or_else(|| ApiError::not_found(R::NOUN))?;
    history::record_source(conn, actor.household_id, row.id(), &before, &row, &now)?;
    row.touch(now);
    R::update(conn, &row)?;
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
    delete_at::<R>(conn, actor, id, if_match, &crate::time::now())
}

/// [`delete`] with the retirement time a portable import restores.
pub fn delete_at<R: SourceRow>(
    conn: &WriteTx,
    actor: &Actor,
    id: &ResourceId,
    if_match: &IfMatch,
    retired_at: &str,
) -> Result<()> {
    let row: R = find_for_change(conn, actor, id, if_match)?;
    R::retire(conn, row.id(), retired_at)?;
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

/// Which sources to list.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub person_id: Option<ResourceId>,
    pub medication_id: Option<ResourceId>,
    pub updated_since: Option<String>,
}

impl Filter {
    /// `person_id`, `medication_id` and `updated_since` from the query string.
    pub fn from_query(query: &QueryParams) -> Result<Filter> {
        Ok(Filter {
            person_id: query.reference("person_id")?,
            medication_id: query.reference("medication_id")?,
            updated_since: query.updated_since()?,
        })
    }
}

/// How one kind of source is read: its row alias (people join as `p`,
/// medications as `m`), selected columns, joins and list order.
pub struct ListSql {
    pub alias: &'static str,
    pub columns: &'static str,
    pub from: &'static str,
    pub order_by: &'static str,
}

/// One page of the live sources of people the actor may view, and the
/// total: two queries whatever the page holds.
pub fn list_visible<T>(
    conn: &Connection,
    actor: &Actor,
    filter: &Filter,
    page: Page,
    sql: &ListSql,
    from_row: fn(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<(Vec<T>, i64)> {
    let person_id = access::filter_id(conn, actor, Named::Person, filter.person_id.as_ref())?;
    let medication_id = access::filter_id(
        conn,
        actor,
        Named::Medication,
        filter.medication_id.as_ref(),
    )?;
    let ListSql {
        alias: x,
        columns,
        from,
        order_by,
    } = sql;
    let condition = format!(
        "{x}.household_id = :household_id AND {x}.retired_at IS NULL AND {VISIBLE_PERSON}
         AND (:updated_since IS NULL OR {x}.updated_at >= :updated_since)
         AND (:person_id IS NULL OR {x}.person_id = :person_id)
         AND (:medication_id IS NULL OR {x}.medication_id = :medication_id)"
    );
    let visibility = Visibility::of(actor);
    let params = visibility.with(named_params! {
        ":updated_since": filter.updated_since,
        ":person_id": person_id,
        ":medication_id": medication_id,
    });
    let query = PageQuery {
        columns,
        from,
        count_from: from,
        condition: &condition,
        order_by,
    };
    page::read(conn, &query, &params, page, from_row)
}
