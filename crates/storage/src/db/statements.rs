//! Prepared statements kept by the address of their SQL text.
//!
//! rusqlite's `prepare_cached` finds a statement by its SQL text: every use
//! trims it, hashes all of it twice (to take the statement out and to put
//! it back), compares it and copies it into a new `Arc<str>`. For a take's
//! twenty statements that was about a tenth of the writer's instructions.
//! Every statement of a hot path is a `&'static str` (a literal or
//! `db::sql!`), so the writer and the reader threads keep theirs by the
//! text's address instead, for as long as they own their connection
//! ([`keep`]). Anywhere else `prepare_kept` is rusqlite's cache.

use std::cell::RefCell;
use std::ops::{Deref, DerefMut};

use rusqlite::{CachedStatement, Connection, PrepFlags, Statement};

/// Statements one connection keeps at most, as many as rusqlite's cache
/// holds; past it, one is let go to make room.
const CAPACITY: usize = super::STATEMENT_CACHE;

/// The text's address and length: two `static`s never share both.
type Key = (usize, usize);

/// The connection whose statements this thread keeps, and the statements
/// not in use right now.
struct Kept {
    conn: *const Connection,
    /// `'static` stands for "while `conn` is kept": [`keep`] borrows the
    /// connection for as long as this exists and empties it before
    /// returning, so no statement here outlives its connection.
    statements: foldhash::HashMap<Key, Statement<'static>>,
}

thread_local! {
    static KEPT: RefCell<Option<Kept>> = const { RefCell::new(None) };
}

/// Runs `run` with this thread keeping `conn`'s statements; they are
/// finalized when it returns (or unwinds). Within it, `prepare_kept` on
/// `conn` costs a lookup by address. A thread already keeping another
/// connection's statements goes on keeping those.
pub fn keep<R>(conn: &Connection, run: impl FnOnce() -> R) -> R {
    let registered = KEPT.with(|kept| {
        let mut kept = kept.borrow_mut();
        if kept.is_some() {
            return false;
        }
        *kept = Some(Kept {
            conn,
            statements: foldhash::HashMap::default(),
        });
        true
    });
    /// Empties the thread's statements however `run` ends.
    struct Release(bool);
    impl Drop for Release {
        fn drop(&mut self) {
            if self.0 {
                let statements = KEPT.try_with(|kept| kept.borrow_mut().take());
                drop(statements);
            }
        }
    }
    let _release = Release(registered);
    run()
}

/// `prepare_cached` for SQL known when the program was built.
pub trait PrepareKept {
    /// A prepared statement for `sql`, kept for the next use.
    fn prepare_kept(&self, sql: &'static str) -> rusqlite::Result<Prepared<'_>>;
}

impl PrepareKept for Connection {
    fn prepare_kept(&self, sql: &'static str) -> rusqlite::Result<Prepared<'_>> {
        let key = (sql.as_ptr() as usize, sql.len());
        let found = KEPT.with(|kept| {
            let mut kept = kept.borrow_mut();
            match kept.as_mut() {
                Some(kept) if std::ptr::eq(kept.conn, self) => Some(kept.statements.remove(&key)),
                _ => None,
            }
        });
        let Some(found) = found else {
            return self.prepare_cached(sql).map(Prepared::Cached);
        };
        let statement = match found {
            // SAFETY: kept for this very connection (checked above), which
            // `keep` borrows for as long as it keeps anything; handed out
            // for no longer than the caller's borrow of it.
            Some(statement) => unsafe {
                std::mem::transmute::<Statement<'static>, Statement<'_>>(statement)
            },
            None => self.prepare_with_flags(sql.trim(), PrepFlags::SQLITE_PREPARE_PERSISTENT)?,
        };
        Ok(Prepared::Kept(KeptStatement {
            statement: Some(statement),
            key,
            conn: self,
        }))
    }
}

/// A statement from [`PrepareKept::prepare_kept`]; back to be kept when
/// dropped.
pub enum Prepared<'c> {
    Kept(KeptStatement<'c>),
    Cached(CachedStatement<'c>),
}

pub struct KeptStatement<'c> {
    statement: Option<Statement<'c>>,
    key: Key,
    conn: &'c Connection,
}

impl<'c> Deref for Prepared<'c> {
    type Target = Statement<'c>;

    fn deref(&self) -> &Statement<'c> {
        match self {
            Prepared::Kept(kept) => kept.statement.as_ref().expect("taken only on drop"),
            Prepared::Cached(cached) => cached,
        }
    }
}

impl<'c> DerefMut for Prepared<'c> {
    fn deref_mut(&mut self) -> &mut Statement<'c> {
        match self {
            Prepared::Kept(kept) => kept.statement.as_mut().expect("taken only on drop"),
            Prepared::Cached(cached) => cached,
        }
    }
}

impl Drop for KeptStatement<'_> {
    fn drop(&mut self) {
        let Some(mut statement) = self.statement.take() else {
            return;
        };
        // As rusqlite's cache does: a named parameter left unbound by the
        // next use is NULL, not this use's value.
        statement.clear_bindings();
        let (conn, key) = (self.conn as *const Connection, self.key);
        // Not kept (its connection is no longer kept, or the thread is
        // ending): dropped here, which finalizes it.
        let _ = KEPT.try_with(move |kept| {
            let Ok(mut kept) = kept.try_borrow_mut() else {
                return;
            };
            let Some(kept) = kept.as_mut().filter(|kept| kept.conn == conn) else {
                return;
            };
            if kept.statements.len() >= CAPACITY && !kept.statements.contains_key(&key) {
                let any = kept.statements.keys().next().copied();
                if let Some(any) = any {
                    kept.statements.remove(&any);
                }
            }
            // SAFETY: the connection it belongs to is the one kept, which
            // `keep` borrows until it empties the map.
            let statement =
                unsafe { std::mem::transmute::<Statement<'_>, Statement<'static>>(statement) };
            kept.statements.insert(key, statement);
        });
    }
}

/// Runs `sql` and hands each row to `each` as it is read: the streaming
/// reads (the sync snapshot, the exports) never hold a whole collection.
pub fn each_row(
    conn: &Connection,
    sql: &str,
    params: &[(&str, &dyn rusqlite::ToSql)],
    mut each: impl FnMut(&rusqlite::Row<'_>) -> crate::error::Result<()>,
) -> crate::error::Result<()> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query(params)?;
    while let Some(row) = rows.next()? {
        each(row)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept_count() -> usize {
        KEPT.with(|kept| kept.borrow().as_ref().map_or(0, |k| k.statements.len()))
    }

    #[test]
    fn a_kept_connection_prepares_each_text_once() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE statement_probe (a INTEGER)")
            .unwrap();
        static INSERT: &str = "INSERT INTO statement_probe (a) VALUES (?1)";
        keep(&conn, || {
            for n in 0..3 {
                let mut statement = conn.prepare_kept(INSERT).unwrap();
                assert!(matches!(statement, Prepared::Kept(_)));
                statement.execute([n]).unwrap();
            }
            assert_eq!(kept_count(), 1);
            // The same text in use twice at once: a second statement.
            let mut first = conn.prepare_kept(INSERT).unwrap();
            let mut second = conn.prepare_kept(INSERT).unwrap();
            first.execute([10]).unwrap();
            second.execute([11]).unwrap();
        });
        assert!(KEPT.with(|kept| kept.borrow().is_none()));
        let total: i64 = conn
            .query_row("SELECT sum(a) FROM statement_probe", [], |r| r.get(0))
            .unwrap();
        assert_eq!(total, 24);
    }

    #[test]
    fn bindings_do_not_carry_over_and_other_connections_use_the_cache() {
        let conn = Connection::open_in_memory().unwrap();
        let other = Connection::open_in_memory().unwrap();
        static SELECT: &str = "SELECT :a, :b";
        keep(&conn, || {
            let first: i64 = conn
                .prepare_kept(SELECT)
                .unwrap()
                .query_row(rusqlite::named_params! {":a": 5, ":b": 6}, |r| r.get(0))
                .unwrap();
            assert_eq!(first, 5);
            let unbound: Option<i64> = conn
                .prepare_kept(SELECT)
                .unwrap()
                .query_row(rusqlite::named_params! {":b": 6}, |r| r.get(0))
                .unwrap();
            assert_eq!(unbound, None);
            assert!(matches!(
                other.prepare_kept(SELECT).unwrap(),
                Prepared::Cached(_)
            ));
        });
        assert!(matches!(
            conn.prepare_kept(SELECT).unwrap(),
            Prepared::Cached(_)
        ));
    }

    #[test]
    fn a_statement_outliving_the_scope_is_finalized_not_kept() {
        let conn = Connection::open_in_memory().unwrap();
        static SELECT: &str = "SELECT 1";
        let outlived = keep(&conn, || conn.prepare_kept(SELECT).unwrap());
        drop(outlived);
        assert!(KEPT.with(|kept| kept.borrow().is_none()));
        // Closing finalizes nothing twice and finds nothing left open.
        conn.close().map_err(|(_, e)| e).unwrap();
    }

    #[test]
    fn the_capacity_bounds_what_is_kept() {
        let conn = Connection::open_in_memory().unwrap();
        let texts: Vec<&'static str> = (0..CAPACITY + 5)
            .map(|n| &*format!("SELECT {n}").leak())
            .collect();
        keep(&conn, || {
            for text in &texts {
                let value: i64 = conn
                    .prepare_kept(text)
                    .unwrap()
                    .query_row([], |r| r.get(0))
                    .unwrap();
                assert!(value >= 0);
            }
            assert_eq!(kept_count(), CAPACITY);
        });
    }
}
