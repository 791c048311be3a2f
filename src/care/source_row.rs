//! What a schedule and a direct assignment (the two kinds of dose source)
//! are to the code that stores and shows them: the stored-row trait, the
//! shape sent with its open pause period, the paged list query, and the
//! SQL both kinds share: the common columns, one reader of them, and find,
//! list, insert, update and retire built once per kind from its
//! `SourceTable` (its table, joins and own columns, in its `store.rs`).
//! Kept below `sources` (the rules), which uses pause periods, whose rules
//! in turn use the two kinds' stores; the stores and models need only this.

use rusqlite::{Connection, Row, ToSql, named_params};
use schemars::JsonSchema;
use serde::Serialize;

use crate::auth::Actor;
use crate::auth::access::{self, Named};
use crate::auth::store::{VISIBLE_PERSON, Visibility};
use crate::care::pause_periods::model::{PausePeriod, SourceType};
use crate::care::plan::Planned;
use crate::care::sources::model::{SourceHead, SourceStamps};
use std::sync::OnceLock;

use rusqlite::{OptionalExtension, params, params_from_iter};

use crate::db::PrepareKept;
use crate::db::WriteTx;
use crate::db::page::{self, PageQuery};
use crate::domain::{Page, ResourceId, Timestamp, Versioned, etag};
use crate::error::Result;

/// A stored schedule or direct assignment: the common fields (`SourceHead`,
/// `active`, `notes`, `SourceStamps`) and how the kind is stored. Reading,
/// writing and retiring are the same for both kinds (`find`, `insert`,
/// `update`, `retire`), over the kind's `TABLE`.
pub trait SourceRow: Sized + Planned {
    const KIND: SourceType;
    const RECORD_TYPE: &'static str;
    /// How a missing one is named in a 404.
    const NOUN: &'static str;
    const TABLE: &'static SourceTable;

    fn head(&self) -> &SourceHead;
    fn active(&self) -> bool;
    fn notes(&self) -> Option<&str>;
    fn stamps(&self) -> &SourceStamps;
    fn stamps_mut(&mut self) -> &mut SourceStamps;
    /// A row read with the common columns first (see [`Common::read`]).
    fn from_row(r: &Row<'_>) -> rusqlite::Result<Self>;
    /// The values of the kind's own columns (`TABLE.own`), in order.
    fn own_values(&self) -> Vec<Box<dyn ToSql + '_>>;

    fn id(&self) -> i64 {
        self.head().id
    }
    fn portable_id(&self) -> &str {
        &self.head().portable_id
    }
    fn person_id(&self) -> i64 {
        self.head().person_id
    }
    fn lock_version(&self) -> i64 {
        self.stamps().lock_version
    }
    /// A new version written at `now`.
    fn touch(&mut self, now: Timestamp) {
        let stamps = self.stamps_mut();
        stamps.lock_version += 1;
        stamps.updated_at = now;
    }
}

/// Implements `SourceRow` for a row with `source`, `active`, `notes` and
/// `stamps` fields, stored through the calling module's `store` (`TABLE`,
/// `from_row`, `own_values`).
macro_rules! source_row {
    ($row:ty, $kind:expr, $record_type:expr, $noun:literal) => {
        impl $crate::care::source_row::SourceRow for $row {
            const KIND: $crate::care::pause_periods::model::SourceType = $kind;
            const RECORD_TYPE: &'static str = $record_type;
            const NOUN: &'static str = $noun;
            const TABLE: &'static $crate::care::source_row::SourceTable = &store::TABLE;

            fn head(&self) -> &$crate::care::sources::model::SourceHead {
                &self.source
            }
            fn active(&self) -> bool {
                self.active
            }
            fn notes(&self) -> Option<&str> {
                self.notes.as_deref()
            }
            fn stamps(&self) -> &$crate::care::sources::model::SourceStamps {
                &self.stamps
            }
            fn stamps_mut(&mut self) -> &mut $crate::care::sources::model::SourceStamps {
                &mut self.stamps
            }
            fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
                store::from_row(r)
            }
            fn own_values(&self) -> Vec<Box<dyn rusqlite::ToSql + '_>> {
                store::own_values(self)
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

/// How one kind of source is stored: its table and row alias, its joins,
/// the start of its writes (each kind's store names its own table) and the
/// columns only it has. Every statement reads the common columns first
/// (see [`Common::read`]) and then the kind's own; the SQL is built once.
pub struct SourceTable {
    pub table: &'static str,
    pub alias: &'static str,
    /// The table and its joins: people as `p`, medications as `m`, dosage
    /// options as `d`, so every row has its portable references (no query
    /// per row).
    pub from: &'static str,
    /// The start of an insert into the table.
    pub insert_into: &'static str,
    /// The start of an update of the table.
    pub update: &'static str,
    /// The kind's own columns, read from [`OWN`] on and inserted in this order.
    pub own: &'static [&'static str],
    /// How many of `own`, from the first, a change writes (the rest change
    /// only through a rule of their own).
    pub changeable: usize,
    pub order_by: &'static str,
    pub sql: Statements,
}

/// The statements built from a [`SourceTable`], each once.
pub struct Statements {
    columns: OnceLock<String>,
    find: OnceLock<String>,
    insert: OnceLock<String>,
    update: OnceLock<String>,
    retire: OnceLock<String>,
    set_active: OnceLock<String>,
    count_live: OnceLock<String>,
}

impl Statements {
    pub const fn new() -> Statements {
        Statements {
            columns: OnceLock::new(),
            find: OnceLock::new(),
            insert: OnceLock::new(),
            update: OnceLock::new(),
            retire: OnceLock::new(),
            set_active: OnceLock::new(),
            count_live: OnceLock::new(),
        }
    }
}

impl Default for Statements {
    fn default() -> Statements {
        Statements::new()
    }
}

/// The columns both kinds store and write alike, after `portable_id`,
/// `household_id` and `person_id` on insert.
const DOSE_COLUMNS: [&str; 7] = [
    "medication_id",
    "source_dosage_option_id",
    "dose_amount",
    "dose_unit",
    "dose_cycle",
    "max_daily_doses",
    "min_hours_between_doses",
];

/// Where a row's own columns start.
pub const OWN: usize = 19;

impl SourceTable {
    /// The selected columns: the common ones, then the kind's own.
    pub fn columns(&'static self) -> &'static str {
        self.sql.columns.get_or_init(|| {
            let own: String = self.own.iter().map(|c| format!(", {{x}}.{c}")).collect();
            (COMMON_COLUMNS.to_owned() + &own).replace("{x}", self.alias)
        })
    }
}

/// The columns every source is read with (`{x}` is the row alias), in
/// [`Common::read`] order.
const COMMON_COLUMNS: &str = "{x}.id, {x}.portable_id, {x}.person_id, p.portable_id,
    {x}.medication_id, m.portable_id, {x}.source_dosage_option_id, d.portable_id,
    {x}.dose_amount, {x}.dose_unit, {x}.dose_cycle, {x}.max_daily_doses,
    {x}.min_hours_between_doses, {x}.active, {x}.notes, {x}.retired_at, {x}.lock_version,
    {x}.created_at, {x}.updated_at";

/// The common fields of a stored source, as [`SourceTable::columns`]
/// selects them (columns 0 to 18).
pub struct Common {
    pub source: SourceHead,
    pub active: bool,
    pub notes: Option<String>,
    pub stamps: SourceStamps,
}

impl Common {
    pub fn read(r: &Row<'_>) -> rusqlite::Result<Common> {
        Ok(Common {
            source: SourceHead {
                id: r.get(0)?,
                portable_id: r.get(1)?,
                person_id: r.get(2)?,
                person_portable_id: r.get(3)?,
                dose: crate::care::sources::model::Dose {
                    medication_id: r.get(4)?,
                    medication_portable_id: r.get(5)?,
                    source_dosage_option_id: r.get(6)?,
                    source_dosage_option_portable_id: r.get(7)?,
                    dose_amount: r.get(8)?,
                    dose_unit: r.get(9)?,
                    dose_cycle: r.get(10)?,
                    max_daily_doses: r.get(11)?,
                    min_hours_between_doses: r.get(12)?,
                },
            },
            active: r.get(13)?,
            notes: r.get(14)?,
            stamps: SourceStamps {
                retired_at: r.get(15)?,
                lock_version: r.get(16)?,
                created_at: r.get(17)?,
                updated_at: r.get(18)?,
            },
        })
    }
}

/// A live (unretired) source of the household by numeric or portable id,
/// whoever its person is: the caller's access is checked by the rules.
pub fn find<R: SourceRow>(
    conn: &Connection,
    household_id: i64,
    id: &ResourceId,
) -> Result<Option<R>> {
    let t = R::TABLE;
    let sql = t.sql.find.get_or_init(|| {
        let (table, x) = (t.table, t.alias);
        format!(
            "SELECT {} FROM {}
             WHERE {x}.household_id = ?1 AND {x}.id = coalesce(?2, (SELECT id FROM {table} WHERE household_id = ?1 AND portable_id = ?3))
               AND {x}.retired_at IS NULL",
            t.columns(),
            t.from,
        )
    });
    let (numeric, portable) = id.sql_parts();
    Ok(conn
        .prepare_kept(sql)?
        .query_row(params![household_id, numeric, portable], R::from_row)
        .optional()?)
}

/// Numbered placeholders `?from` to `?to`.
fn placeholders(from: usize, to: usize) -> String {
    (from..=to)
        .map(|n| format!("?{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The common values a source writes: its dose, then (on insert, after
/// `active`) its notes, version and times.
fn dose_values(dose: &crate::care::sources::model::Dose) -> [&dyn ToSql; 7] {
    [
        &dose.medication_id,
        &dose.source_dosage_option_id,
        &dose.dose_amount,
        &dose.dose_unit,
        &dose.dose_cycle,
        &dose.max_daily_doses,
        &dose.min_hours_between_doses,
    ]
}

/// Inserts a new source of the household; its id.
pub fn insert<R: SourceRow>(conn: &WriteTx, household_id: i64, row: &R) -> Result<i64> {
    let t = R::TABLE;
    let sql = t.sql.insert.get_or_init(|| {
        let own: String = t.own.iter().map(|c| format!(", {c}")).collect();
        format!(
            "{} (portable_id, household_id, person_id, {}, active, notes,
                 lock_version, created_at, updated_at{own})
             VALUES ({})",
            t.insert_into,
            DOSE_COLUMNS.join(", "),
            placeholders(1, 15 + t.own.len()),
        )
    });
    let (head, stamps, notes) = (row.head(), row.stamps(), row.notes());
    let active = row.active();
    let own = row.own_values();
    let mut values: Vec<&dyn ToSql> = vec![&head.portable_id, &household_id, &head.person_id];
    values.extend(dose_values(&head.dose));
    values.extend([
        &active as &dyn ToSql,
        &notes,
        &stamps.lock_version,
        &stamps.created_at,
        &stamps.updated_at,
    ]);
    values.extend(own.iter().map(|v| v.as_ref() as &dyn ToSql));
    conn.prepare_kept(sql)?.execute(params_from_iter(values))?;
    Ok(conn.last_insert_rowid())
}

/// Saves every changeable field of the row; the person never changes,
/// `active` changes only through pausing and resuming, and the kind's own
/// columns past `changeable` only through their own rules.
pub fn update<R: SourceRow>(conn: &WriteTx, row: &R) -> Result<()> {
    let t = R::TABLE;
    let sql = t.sql.update.get_or_init(|| {
        let names = DOSE_COLUMNS
            .iter()
            .chain(&["notes", "lock_version", "updated_at"])
            .chain(&t.own[..t.changeable]);
        let set: Vec<String> = names
            .enumerate()
            .map(|(n, c)| format!("{c} = ?{}", n + 2))
            .collect();
        format!("{} SET {} WHERE id = ?1", t.update, set.join(", "))
    });
    let (head, stamps, notes) = (row.head(), row.stamps(), row.notes());
    let own = row.own_values();
    let mut values: Vec<&dyn ToSql> = vec![&head.id];
    values.extend(dose_values(&head.dose));
    values.extend([
        &notes as &dyn ToSql,
        &stamps.lock_version,
        &stamps.updated_at,
    ]);
    values.extend(own[..t.changeable].iter().map(|v| v.as_ref() as &dyn ToSql));
    conn.prepare_kept(sql)?.execute(params_from_iter(values))?;
    Ok(())
}

/// Retires a source: it leaves every list and read, and stops (active
/// false); the row stays for the history that points at it.
pub fn retire(conn: &WriteTx, table: &'static SourceTable, id: i64, now: &Timestamp) -> Result<()> {
    let sql = table.sql.retire.get_or_init(|| {
        format!(
            "{} SET retired_at = ?2, active = 0, updated_at = ?2,
                 lock_version = lock_version + 1
             WHERE id = ?1",
            table.update
        )
    });
    conn.prepare_kept(sql)?.execute(params![id, now])?;
    Ok(())
}

/// Sets the source's `active` flag (false while paused), as a change to
/// it: its version moves on.
pub fn set_active(
    conn: &WriteTx,
    table: &'static SourceTable,
    id: i64,
    active: bool,
    now: &Timestamp,
) -> Result<()> {
    let sql = table.sql.set_active.get_or_init(|| {
        format!(
            "{} SET active = ?2, updated_at = ?3, lock_version = lock_version + 1
             WHERE id = ?1",
            table.update
        )
    });
    conn.prepare_kept(sql)?.execute(params![id, active, now])?;
    Ok(())
}

/// How many live (unretired) sources of the kind use a medication.
pub fn count_live_for_medication(
    conn: &Connection,
    table: &'static SourceTable,
    medication_id: i64,
) -> Result<i64> {
    let sql = table.sql.count_live.get_or_init(|| {
        format!(
            "SELECT count(*) FROM {} WHERE medication_id = ?1 AND retired_at IS NULL",
            table.table
        )
    });
    Ok(conn
        .prepare_kept(sql)?
        .query_row([medication_id], |r| r.get(0))?)
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

/// One page of the live sources of people the actor may view, and the
/// total, in the kind's list order.
pub fn list<R: SourceRow>(
    conn: &Connection,
    actor: &Actor,
    filter: &Filter,
    page: Page,
) -> Result<(Vec<R>, i64)> {
    let table = R::TABLE;
    let sql = ListSql {
        alias: table.alias,
        columns: table.columns(),
        from: table.from,
        order_by: table.order_by,
    };
    list_visible(conn, actor, filter, page, &sql, R::from_row)
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
