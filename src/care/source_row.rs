//! What a schedule and a direct assignment (the two kinds of dose source)
//! are to the code that stores and shows them: the stored-row trait, the
//! shape sent with its open pause period, and the paged list query. Kept
//! below `sources` (the rules), which uses pause periods, whose rules in
//! turn use the two kinds' stores; the stores and models need only this.

use rusqlite::{Connection, Row, named_params};
use schemars::JsonSchema;
use serde::Serialize;

use crate::auth::Actor;
use crate::auth::access::{self, Named};
use crate::auth::store::{VISIBLE_PERSON, Visibility};
use crate::care::pause_periods::model::{PausePeriod, SourceType};
use crate::care::plan::Planned;
use crate::db::PrepareKept;
use crate::db::WriteTx;
use crate::db::page::{self, PageQuery};
use crate::domain::{Page, ResourceId, Timestamp, Versioned, etag};
use crate::error::Result;

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
    fn touch(&mut self, now: Timestamp);

    /// The live (not retired) row `id` of the household.
    fn find(conn: &Connection, household_id: i64, id: &ResourceId) -> Result<Option<Self>>;
    fn update(conn: &WriteTx, row: &Self) -> Result<()>;
    fn retire(conn: &WriteTx, id: i64, now: &Timestamp) -> Result<()>;
}

/// Implements `SourceRow` for a row with `id`, `portable_id`, `person_id`,
/// `lock_version` and `updated_at` fields, stored through the calling
/// module's `store` (`find`, `update`, `retire`).
macro_rules! source_row {
    ($row:ty, $kind:expr, $record_type:expr, $noun:literal) => {
        impl $crate::care::source_row::SourceRow for $row {
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
            fn touch(&mut self, now: $crate::domain::Timestamp) {
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
            fn retire(
                conn: &$crate::db::WriteTx,
                id: i64,
                now: &$crate::domain::Timestamp,
            ) -> $crate::error::Result<()> {
                store::retire(conn, id, now)
            }
        }
    };
}
pub(crate) use source_row;

// A source as sent: the stored row and its open pause period. Documented
// under the row's name (`Schedule`, `PersonMedication`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields, rename = "{R}")]
pub struct Sourced<R> {
    #[serde(flatten)]
    pub record: R,
    /// The open pause period, or null when none is open
    pub current_pause_period: Option<PausePeriod>,
}

impl<R: SourceRow> Versioned for Sourced<R> {
    fn etag(&self) -> String {
        etag(self.record.portable_id(), self.record.lock_version())
    }
}

/// Which sources to list.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub person_id: Option<ResourceId>,
    pub medication_id: Option<ResourceId>,
    pub updated_since: Option<String>,
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

/// The people with a live (not retired) schedule or assignment of a medication.
pub fn people_using(conn: &Connection, medication_id: i64) -> Result<Vec<i64>> {
    let mut stmt = conn.prepare_kept(
        "SELECT person_id FROM schedules WHERE medication_id = ?1 AND retired_at IS NULL
         UNION
         SELECT person_id FROM person_medications WHERE medication_id = ?1 AND retired_at IS NULL
         ORDER BY 1",
    )?;
    let ids = stmt
        .query_map([medication_id], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    Ok(ids)
}
