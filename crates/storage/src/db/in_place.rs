//! Reads of a few microseconds run in place, on the async thread that asks
//! for them, through that thread's own read-only connection. Handing such
//! a read to a reader thread and its answer back costs two thread wakes,
//! more than the read itself once its answer is kept (`kept`): a point
//! read of a medication spent most of its time in that hand-off. Only
//! reads that cannot take long go this way (one resource, found by id);
//! lists, exports and anything that waits on a client keep to the readers.
//!
//! Each thread's connection is opened on its first such read and kept for
//! the database it was opened on, until a quiet server closes it
//! (`Db::release_idle_memory`); the runtime's threads are a fixed set, so
//! the connections are too.

use std::cell::Cell;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use rusqlite::Connection;

use super::{kept, readers};
use crate::error::{ApiError, Result};

/// A thread's connection, and the serial number of the database it reads;
/// `None` until its first read, and after a quiet server closed it.
type Slot = Mutex<Option<(u64, Connection)>>;

/// Every thread's slot, so that a quiet server can close their connections
/// from elsewhere ([`close_all`]): each holds its parsed schema, statements
/// and page cache, about a megabyte, on a thread that may not read again
/// for hours.
static SLOTS: Mutex<Vec<Weak<Slot>>> = Mutex::new(Vec::new());

thread_local! {
    static HERE: Arc<Slot> = {
        let slot = Arc::new(Slot::default());
        let mut all = SLOTS.lock().unwrap_or_else(PoisonError::into_inner);
        all.retain(|slot| slot.strong_count() > 0);
        all.push(Arc::downgrade(&slot));
        slot
    };
    /// Set while this thread reads in place: a read inside another would
    /// wait for its own slot.
    static READING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `read` on this thread's connection to the database `serial` at
/// `path`, opening it first if need be.
pub(super) fn read<T>(
    serial: u64,
    path: &Path,
    read: impl FnOnce(&Connection) -> Result<T>,
) -> Result<T> {
    if READING.replace(true) {
        return Err(ApiError::internal("an in-place read inside another"));
    }
    struct Done;
    impl Drop for Done {
        fn drop(&mut self) {
            READING.set(false);
        }
    }
    let _done = Done;
    HERE.with(|slot| {
        // Held only by this thread's reads, and by `close_all` for as long
        // as it takes the connection out.
        let mut here = slot.lock().unwrap_or_else(PoisonError::into_inner);
        if here.as_ref().is_none_or(|(on, _)| *on != serial) {
            // What this thread kept came from the connection it had.
            kept::forget();
            *here = Some((serial, super::open_reader(path)?));
        }
        let (_, conn) = here.as_ref().expect("opened above");
        readers::run_read(conn, read).unwrap_or_else(|| Err(ApiError::internal("read failed")))
    })
}

/// Closes every thread's connection that is not reading at this moment
/// (one that is keeps it until the next quiet spell); the thread's next
/// read opens it again.
pub(super) fn close_all() {
    let slots: Vec<Arc<Slot>> = SLOTS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    for slot in slots {
        let closed = match slot.try_lock() {
            Ok(mut here) => here.take(),
            Err(_) => None,
        };
        // Closed outside the lock: the thread's next read waits for nothing.
        drop(closed);
    }
}

#[cfg(test)]
/// Whether this thread holds an open connection.
pub(super) fn open_here() -> bool {
    HERE.with(|slot| {
        slot.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    })
}
