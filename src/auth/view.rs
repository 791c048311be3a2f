//! The in-memory view of credentials and memberships that every request is
//! authenticated against, without handing a read to another thread.
//!
//! The view keeps the stored rows (never a verdict): the secret's digest
//! is compared, and revocation, expiry and membership status are checked,
//! on every request as before. What makes the rows current is the access
//! stamp, read on the view's own read-only connection: triggers change it
//! in the same commit as any row of the tables the view keeps (schema.sql,
//! `access_stamp`), whatever connection commits (this server's writer, or
//! an administration command run beside it), and the view is emptied
//! whenever it has changed. The stamp is read again at every request after
//! which anything at all was committed, by anyone (the WAL index's header,
//! `db::CommitMark`, tells that without a read). A request therefore never
//! sees a row older than the last commit made before it began: revoking a
//! token, suspending or removing a member, changing a role or signing out
//! takes effect on the very next request, whatever code made the change
//! and wherever; a commit that touched none of them (a recorded dose)
//! leaves the rows where they are.
//!
//! The check is a few atomic loads on the async thread when nothing was
//! committed, and one read transaction on the shared memory index (no
//! disk read) when something was; a row the view does not hold is read
//! there too, by primary key or unique index.

use crate::db::PrepareKept;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::model::{Actor, Authenticated};
use super::store::{self, AccessTokenRow, AppTokenRow, MembershipRow};
use super::token;
use crate::db::{CommitMark, Db, MarkedReader};
use crate::error::Result;

/// Reads the access stamp (see the schema's `access_stamp`).
const ACCESS_STAMP: &str = "SELECT stamp FROM access_stamp";

/// Rows held at most, per kind; past it the view starts again empty (a
/// flood of distinct valid credentials only costs reads).
const MAX_ROWS: usize = 4096;

#[derive(Default)]
pub struct AccessView {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Opened on first use: read-only, on the database `Db` names.
    reader: Option<MarkedReader>,
    /// The moment the access stamp below was read at, or before it.
    commit_mark: Option<CommitMark>,
    /// The access stamp the rows below are current for.
    access_stamp: Option<i64>,
    /// Shared with the request that checks them: taking one out copies no row.
    app_tokens: HashMap<String, Arc<AppTokenRow>>,
    access_tokens: HashMap<String, Arc<AccessTokenRow>>,
    /// Keyed by (household, account); `None` is "no active membership".
    memberships: HashMap<(i64, i64), Option<Arc<MembershipRow>>>,
}

impl Inner {
    /// Opens the connection if need be and drops every row that a commit
    /// since the last call may have changed.
    fn refresh(&mut self, db: &Db) -> Result<()> {
        if self.reader.is_none() {
            db.commit_watch().watch(ACCESS_STAMP);
            self.reader = Some(db.open_marked_reader()?);
        }
        let reader = self.reader.as_ref().expect("opened above");
        // Marked before the stamp is read: a commit between the two is
        // after the mark, so the next request reads the stamp again.
        let mark = reader.mark();
        if mark.is_some() && mark == self.commit_mark {
            return Ok(());
        }
        // When the last commit was this server's writer's (a group of
        // takes, say), it read the stamp in that very commit.
        let stamp = match mark.and_then(|mark| db.commit_watch().value_at(mark)) {
            Some(stamp) => stamp,
            // As cheap as `PRAGMA data_version` (either is one read
            // transaction), and it moves only when access may have changed.
            None => reader
                .conn()
                .prepare_kept(ACCESS_STAMP)?
                .query_row([], |r| r.get(0))?,
        };
        self.commit_mark = mark;
        if self.access_stamp != Some(stamp) {
            self.access_stamp = Some(stamp);
            self.app_tokens.clear();
            self.access_tokens.clear();
            self.memberships.clear();
        }
        Ok(())
    }
}

fn remember<K: std::hash::Hash + Eq, V>(map: &mut HashMap<K, V>, key: K, value: V) {
    if map.len() >= MAX_ROWS {
        map.clear();
    }
    map.insert(key, value);
}

impl AccessView {
    /// Closes the view's connection and forgets its rows until the next
    /// request, which opens it again: a server nobody asks anything need
    /// not hold a connection's parsed schema and statements for it.
    pub fn let_go(&self) {
        let closed = std::mem::take(&mut *self.inner.lock().unwrap_or_else(|e| e.into_inner()));
        // Closed outside the lock: a request waits for nothing.
        drop(closed);
    }

    /// The view, current as of the last commit.
    fn current(&self, db: &Db) -> Result<std::sync::MutexGuard<'_, Inner>> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.refresh(db)?;
        Ok(inner)
    }

    /// Verifies a presented bearer credential of any kind we issue.
    pub fn authenticate(&self, db: &Db, presented: &str) -> Result<Authenticated> {
        if presented.starts_with(token::ACCESS_TOKEN_PREFIX) {
            let parsed =
                token::parse_with(token::ACCESS_TOKEN_PREFIX, presented).ok_or(store::INVALID)?;
            let row = {
                let mut guard = self.current(db)?;
                let inner = &mut *guard;
                let conn = inner.reader.as_ref().expect("opened by refresh").conn();
                match inner.access_tokens.get(parsed.selector) {
                    Some(row) => Some(row.clone()),
                    None => {
                        let row = store::access_token_row(conn, parsed.selector)?.map(Arc::new);
                        if let Some(row) = &row {
                            let key = parsed.selector.to_string();
                            remember(&mut inner.access_tokens, key, row.clone());
                        }
                        row
                    }
                }
            };
            store::check_access_token(&parsed, row.as_deref())
        } else {
            let parsed = token::parse(presented).ok_or(store::INVALID)?;
            let row = {
                let mut guard = self.current(db)?;
                let inner = &mut *guard;
                let conn = inner.reader.as_ref().expect("opened by refresh").conn();
                match inner.app_tokens.get(parsed.selector) {
                    Some(row) => Some(row.clone()),
                    None => {
                        let row = store::app_token_row(conn, parsed.selector)?.map(Arc::new);
                        if let Some(row) = &row {
                            let key = parsed.selector.to_string();
                            remember(&mut inner.app_tokens, key, row.clone());
                        }
                        row
                    }
                }
            };
            store::check_app_token(&parsed, row.as_deref())
        }
    }

    /// The actor of `authenticated` in `household_id` (see
    /// [`store::household_actor`]), from the rows as current as the
    /// credential's verification earlier in the same request: that check
    /// already made the view no older than the last commit before the
    /// request began, so a second read of the stamp would only repeat it.
    pub fn household_actor(
        &self,
        db: &Db,
        authenticated: &Authenticated,
        household_id: i64,
    ) -> Result<Actor> {
        let key = (household_id, authenticated.account_id);
        let row = {
            let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            if guard.reader.is_none() {
                guard.refresh(db)?;
            }
            let inner = &mut *guard;
            let conn = inner.reader.as_ref().expect("opened by refresh").conn();
            match inner.memberships.get(&key) {
                Some(row) => row.clone(),
                None => {
                    let row = store::membership_row(conn, household_id, authenticated.account_id)?
                        .map(Arc::new);
                    remember(&mut inner.memberships, key, row.clone());
                    row
                }
            }
        };
        store::actor_from(authenticated, household_id, row.as_deref())
    }
}
