//! Reads of a few microseconds run in place, on the async thread that asks
//! for them, through that thread's own read-only connection. Handing such
//! a read to a reader thread and its answer back costs two thread wakes,
//! more than the read itself once its answer is kept (`kept`): a point
//! read of a medication spent most of its time in that hand-off. Only
//! reads that cannot take long go this way (one resource, found by id);
//! lists, exports and anything that waits on a client keep to the readers.
//!
//! Each thread's connection is opened on its first such read and kept for
//! the database it was opened on; the runtime's threads are a fixed set,
//! so the connections are too.

use std::cell::RefCell;
use std::path::Path;

use rusqlite::Connection;

use super::{kept, readers};
use crate::error::{ApiError, Result};

thread_local! {
    /// This thread's connection, and the serial number of the database it reads.
    static HERE: RefCell<Option<(u64, Connection)>> = const { RefCell::new(None) };
}

/// Runs `read` on this thread's connection to the database `serial` at
/// `path`, opening it first if need be.
pub(super) fn read<T>(
    serial: u64,
    path: &Path,
    read: impl FnOnce(&Connection) -> Result<T>,
) -> Result<T> {
    HERE.with(|here| {
        let Ok(mut here) = here.try_borrow_mut() else {
            return Err(ApiError::internal("an in-place read inside another"));
        };
        if here.as_ref().is_none_or(|(on, _)| *on != serial) {
            // What this thread kept came from the other connection.
            kept::forget();
            *here = Some((serial, super::open_reader(path)?));
        }
        let (_, conn) = here.as_ref().expect("opened above");
        readers::run_read(conn, read).unwrap_or_else(|| Err(ApiError::internal("read failed")))
    })
}
