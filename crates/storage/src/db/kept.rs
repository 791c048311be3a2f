//! Values worked out from the data, kept on a reader thread until the next
//! commit. A household's plan or schedules are the same for every read
//! until something commits, and phones ask often; SQLite's `data_version`
//! (see [`read_generation`]) tells a reader thread, in one cheap read of
//! the WAL index, whether anything was committed since, by this server's
//! writer or by a command run beside it.
//!
//! What is worked out from the care plan's tables alone is also kept on
//! the writer thread, under the plan stamp ([`kept_with_plan`]): most of
//! the writer's commits are recorded doses, which leave the plan as it
//! was.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::rc::Rc;

use rusqlite::Connection;

use crate::db::PrepareKept;

/// Values of one type kept per thread: a few households (or days) at once.
const KEPT_PER_TYPE: usize = 4;

/// Values of one type kept on the writer: the sources of a household's
/// round of doses.
const KEPT_ON_WRITER_PER_TYPE: usize = 32;

/// Reads the plan stamp (see the schema's `plan_stamp`).
const PLAN_STAMP: &str = "SELECT stamp FROM plan_stamp";

#[derive(Default)]
struct Kept {
    /// The generation every kept value was worked out at.
    generation: Option<i64>,
    /// Per value type, a `Vec<(key, Rc<value>)>`, oldest first.
    values: Vec<(TypeId, Box<dyn Any>)>,
}

thread_local! {
    static KEPT: RefCell<Kept> = RefCell::new(Kept::default());
}

thread_local! {
    /// The writer's, under the plan stamp: apart from `KEPT`, which the
    /// writer never uses.
    static KEPT_WITH_PLAN: RefCell<Kept> = RefCell::new(Kept::default());
}

/// Where this thread stands for [`read_generation`].
#[derive(Clone, Copy)]
enum Generation {
    /// Neither a reader thread nor the writer.
    Elsewhere,
    /// The writer thread.
    Writer,
    /// A read is running and has not asked yet.
    Unread,
    Read(Option<i64>),
}

thread_local! {
    static GENERATION: std::cell::Cell<Generation> =
        const { std::cell::Cell::new(Generation::Elsewhere) };
}

/// On a reader thread, a number that stays the same between two reads
/// exactly while nothing was committed between them (SQLite's
/// `data_version` of the thread's read-only connection, `conn`, which
/// every commit of another connection, this server's writer or a command
/// beside it, moves on); `None` anywhere else. What is worked out from the
/// data can be kept under it, on that thread, and is current while it is
/// unchanged. Read once per read, when first asked.
pub fn read_generation(conn: &Connection) -> Option<i64> {
    match GENERATION.get() {
        Generation::Elsewhere | Generation::Writer => None,
        Generation::Read(generation) => generation,
        Generation::Unread => {
            let generation = data_version(conn);
            GENERATION.set(Generation::Read(generation));
            generation
        }
    }
}

/// A read on a reader thread (see `readers::run_read`) begins: the next
/// [`read_generation`] reads the connection's `data_version`.
pub(super) fn begin_read() {
    GENERATION.set(Generation::Unread);
}

/// The read has ended: off a read, nothing is kept.
pub(super) fn end_read() {
    GENERATION.set(Generation::Elsewhere);
}

/// This thread is the writer's, until it ends: [`kept_with_plan`] keeps
/// values on it.
pub(super) fn begin_writing() {
    GENERATION.set(Generation::Writer);
}

fn data_version(conn: &Connection) -> Option<i64> {
    conn.prepare_kept("PRAGMA data_version")
        .and_then(|mut s| s.query_row([], |r| r.get(0)))
        .ok()
}

/// The value `make` works out for `key`, kept on a reader thread while
/// nothing is committed: the first read after any commit makes it again.
/// Off the reader threads (the writer, a command, a test's own connection)
/// it is made every time. `make` may itself use `kept`.
pub fn kept<K, T, E>(
    conn: &Connection,
    key: K,
    make: impl FnOnce() -> Result<T, E>,
) -> Result<Rc<T>, E>
where
    K: PartialEq + 'static,
    T: 'static,
{
    let Some(generation) = read_generation(conn) else {
        return make().map(Rc::new);
    };
    kept_in(&KEPT, (generation, KEPT_PER_TYPE), key, make)
}

/// The value `make` works out for `key` from the care plan's tables alone
/// (those whose triggers move the plan stamp: the schema's `plan_stamp`):
/// kept on a reader thread as [`kept`] keeps it, and on the writer thread
/// while the plan stamp stays the same. The writer reads the stamp at
/// every call, in its open transaction: a plan changed earlier in the same
/// transaction, a change rolled back, and a command's commit beside the
/// server are each seen by the very next call. Elsewhere it is made every
/// time.
pub fn kept_with_plan<K, T, E>(
    conn: &Connection,
    key: K,
    make: impl FnOnce() -> Result<T, E>,
) -> Result<Rc<T>, E>
where
    K: PartialEq + 'static,
    T: 'static,
    E: From<rusqlite::Error>,
{
    if !matches!(GENERATION.get(), Generation::Writer) {
        return kept(conn, key, make);
    }
    let stamp: i64 = conn.prepare_kept(PLAN_STAMP)?.query_row([], |r| r.get(0))?;
    kept_in(&KEPT_WITH_PLAN, (stamp, KEPT_ON_WRITER_PER_TYPE), key, make)
}

/// The value kept in `store` for `key` while `generation` is the one its
/// values were worked out at, or else made by `make` and kept (at most
/// `capacity` of its type, the oldest dropped first).
fn kept_in<K, T, E>(
    store: &'static std::thread::LocalKey<RefCell<Kept>>,
    (generation, capacity): (i64, usize),
    key: K,
    make: impl FnOnce() -> Result<T, E>,
) -> Result<Rc<T>, E>
where
    K: PartialEq + 'static,
    T: 'static,
{
    let found = store.with_borrow_mut(|kept| {
        if kept.generation != Some(generation) {
            kept.values.clear();
            kept.generation = Some(generation);
        }
        entries::<K, T>(kept)
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, value)| value.clone())
    });
    if let Some(value) = found {
        return Ok(value);
    }
    let value = Rc::new(make()?);
    store.with_borrow_mut(|kept| {
        // `make` may have kept values of its own, or met a new generation.
        if kept.generation != Some(generation) {
            return;
        }
        let entries = entries::<K, T>(kept);
        if entries.len() >= capacity {
            entries.remove(0);
        }
        entries.push((key, value.clone()));
    });
    Ok(value)
}

/// Drops everything this thread kept: it is about to read through another
/// connection, whose `data_version` says nothing about this one's.
pub(super) fn forget() {
    KEPT.with_borrow_mut(|kept| *kept = Kept::default());
}

/// The kept values of type `T` under keys of type `K`.
fn entries<K: 'static, T: 'static>(kept: &mut Kept) -> &mut Vec<(K, Rc<T>)> {
    let id = TypeId::of::<(K, T)>();
    let index = match kept.values.iter().position(|(t, _)| *t == id) {
        Some(index) => index,
        None => {
            kept.values.push((id, Box::new(Vec::<(K, Rc<T>)>::new())));
            kept.values.len() - 1
        }
    };
    kept.values[index]
        .1
        .downcast_mut::<Vec<(K, Rc<T>)>>()
        .expect("kept values are stored under their own type")
}
