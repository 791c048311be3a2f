//! A VFS over SQLite's default one ("unix") that gathers the frames of a
//! commit into one write of the WAL file, and splits a write of any other
//! file into pieces the default VFS takes whole.
//!
//! SQLite writes each WAL frame with two `pwrite`s (its 24-byte header,
//! then the page), all at consecutive offsets: a group of seven takes wrote
//! about 26 frames, 52 system calls, each paying the kernel's per-write
//! work on the same few pages again. Measured on this project's VM, the
//! same 26 frames and an fsync cost 111 µs of CPU written frame by frame
//! and 59 µs written at once. Only the writer's connection opens the
//! database through this VFS; readers and commands beside the server use
//! the default one on the same files.
//!
//! Nothing SQLite relies on is held back:
//! - What is gathered is written before the WAL is synced, read, truncated,
//!   sized, controlled or closed, and before a write anywhere else in it:
//!   the file always reads as if every write had gone straight through.
//! - A commit's frames are written as soon as its commit frame (a frame
//!   header naming the database size) is complete, whatever the
//!   `synchronous` setting: SQLite publishes a commit to other connections
//!   right after writing it, and they read the frames from the file.
//! - What is still gathered when the connection releases the WAL's write
//!   lock belongs to a transaction that rolled back (frames SQLite wrote
//!   early to make room in its cache): it is forgotten, never written, as
//!   another connection may commit frames at the same place next.
//! - With `synchronous=FULL` (the writer's) SQLite syncs the WAL before it
//!   answers a commit, so an acknowledged commit is on disk as before. A
//!   failed write is reported by the call that made it go out (the sync of
//!   the commit, at the latest), and SQLite fails the commit.
//!
//! Every other method passes straight through to the default VFS.

use std::ffi::{CStr, c_int, c_void};
use std::ptr;
use std::sync::OnceLock;

use rusqlite::ffi;

use super::commit_mark::CommitMark;

mod vfs;

/// The VFS's registered name.
pub const NAME: &CStr = c"pillbox-gathered-wal";

/// The most bytes gathered into one write: the default VFS writes at most
/// this much at once (its `seekAndWriteFd` keeps 17 bits of a length, as
/// SQLite itself never writes more than a page). A large group's frames go
/// out in a few writes of about 30 frames each.
const MAX_GATHERED: usize = 0x1ffff;

/// Size of a WAL frame header; bytes 4..8 of it are the database size in
/// pages for a commit frame, zero for any other frame.
const FRAME_HEADER: c_int = 24;

/// Registers the VFS (once per process) and answers its name, or SQLite's
/// error code when it could not be registered.
pub fn register() -> Result<&'static CStr, c_int> {
    static REGISTERED: OnceLock<Result<(), c_int>> = OnceLock::new();
    // SAFETY: `sqlite3_vfs_find(NULL)` answers the default VFS, which
    // SQLite never frees; the new VFS is leaked, so it outlives every
    // connection that uses it, as `sqlite3_vfs_register` requires.
    let registered = REGISTERED.get_or_init(|| unsafe {
        // Finding a VFS initialises SQLite, after which its process-wide
        // settings are refused.
        super::configure_sqlite_once();
        let real = ffi::sqlite3_vfs_find(ptr::null());
        if real.is_null() {
            return Err(ffi::SQLITE_ERROR);
        }
        let vfs = Box::leak(Box::new(ffi::sqlite3_vfs {
            iVersion: 2,
            szOsFile: c_int::try_from(real_offset()).expect("small") + (*real).szOsFile,
            mxPathname: (*real).mxPathname,
            pNext: ptr::null_mut(),
            zName: NAME.as_ptr(),
            pAppData: real.cast(),
            xOpen: Some(open),
            xDelete: Some(vfs::delete),
            xAccess: Some(vfs::access),
            xFullPathname: Some(vfs::full_pathname),
            xDlOpen: Some(vfs::dl_open),
            xDlError: Some(vfs::dl_error),
            xDlSym: Some(vfs::dl_sym),
            xDlClose: Some(vfs::dl_close),
            xRandomness: Some(vfs::randomness),
            xSleep: Some(vfs::sleep),
            xCurrentTime: Some(vfs::current_time),
            xGetLastError: Some(vfs::get_last_error),
            xCurrentTimeInt64: Some(vfs::current_time_int64),
            xSetSystemCall: None,
            xGetSystemCall: None,
            xNextSystemCall: None,
        }));
        match ffi::sqlite3_vfs_register(vfs, 0) {
            ffi::SQLITE_OK => Ok(()),
            rc => Err(rc),
        }
    });
    registered.map(|()| NAME)
}

/// A file opened through this VFS: the default VFS's file follows it in
/// the memory SQLite allocates (`szOsFile` covers both).
#[repr(C)]
struct File {
    /// First, as SQLite requires: its methods are [`METHODS`].
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    /// Only a WAL's writes are gathered.
    wal: bool,
    /// The last write gathered was the header of a commit frame: the
    /// commit is complete with the next one.
    commit_header: bool,
    /// A WAL's: a commit frame was written since the write lock was last
    /// released.
    committed: bool,
    /// A database file's: the start of SQLite's mapping of its WAL index
    /// (null until mapped), and the index header as the write lock was
    /// released after a commit (see [`take_committed_header`]).
    wal_index: *mut c_void,
    committed_header: Option<CommitMark>,
    gathered: Vec<u8>,
    /// Where `gathered` goes in the file.
    gathered_at: i64,
    /// The main database file's [`File`] for its WAL, and the WAL's for the
    /// database file while the WAL is open (null otherwise): the database
    /// file is the one whose WAL write lock SQLite takes and releases.
    partner: *mut File,
}

/// Where the default VFS's file starts, past [`File`], 8-byte aligned.
const fn real_offset() -> usize {
    std::mem::size_of::<File>().next_multiple_of(8)
}

/// The default VFS, kept in this VFS's `pAppData`.
unsafe fn real_vfs(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
    // SAFETY: every VFS passed here is ours, whose pAppData `register` set.
    unsafe { (*vfs).pAppData.cast() }
}

unsafe extern "C" fn open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: SQLite hands `szOsFile` bytes, 8-byte aligned, at `file`; the
    // default VFS's file is opened in the part past `File`.
    unsafe {
        let real_vfs = real_vfs(vfs);
        let real = file
            .cast::<u8>()
            .add(real_offset())
            .cast::<ffi::sqlite3_file>();
        (*real).pMethods = ptr::null();
        let xopen = (*real_vfs).xOpen.expect("a VFS opens files");
        let rc = xopen(real_vfs, name, real, flags, out_flags);
        if (*real).pMethods.is_null() {
            // Nothing was opened: SQLite will not call xClose.
            (*file).pMethods = ptr::null();
            return rc;
        }
        // Opened (even when `rc` is an error, SQLite then calls xClose,
        // which closes the default VFS's file).
        ptr::write(
            file.cast::<File>(),
            File {
                base: ffi::sqlite3_file { pMethods: &METHODS },
                real,
                wal: flags & ffi::SQLITE_OPEN_WAL != 0,
                commit_header: false,
                committed: false,
                wal_index: ptr::null_mut(),
                committed_header: None,
                gathered: Vec::new(),
                gathered_at: 0,
                partner: ptr::null_mut(),
            },
        );
        if flags & ffi::SQLITE_OPEN_WAL != 0 {
            // SAFETY: `name` is the WAL's name as SQLite passed it to xOpen,
            // which is what sqlite3_database_file_object takes; the database
            // file it answers is open, and is a `File` when its methods are
            // ours (it was opened through this VFS).
            let db = ffi::sqlite3_database_file_object(name);
            if !db.is_null() && ptr::eq((*db).pMethods, &METHODS) {
                let db = db.cast::<File>();
                (*db).partner = file.cast::<File>();
                (*file.cast::<File>()).partner = db;
            }
        }
        rc
    }
}

/// The file behind `file`, a [`File`] that `open` wrote.
unsafe fn this<'a>(file: *mut ffi::sqlite3_file) -> &'a mut File {
    // SAFETY: SQLite calls these methods only on files `open` made, one
    // call at a time per file.
    unsafe { &mut *file.cast::<File>() }
}

/// The default VFS's method `$method` of `$file`'s file, called with it
/// and the remaining arguments.
macro_rules! forward {
    ($file:expr, $method:ident $(, $arg:expr)*) => {{
        let real = $file.real;
        // SAFETY: `real` is the default VFS's open file, whose methods
        // take it and these arguments.
        unsafe {
            match (*(*real).pMethods).$method {
                Some(method) => method(real $(, $arg)*),
                None => ffi::SQLITE_IOERR,
            }
        }
    }};
}

/// [`forward!`] once what is gathered is written (a failure to write it is
/// the call's answer): for every call that reads, syncs, sizes, truncates,
/// controls or maps the file.
macro_rules! forward_after_writing {
    ($file:expr, $method:ident $(, $arg:expr)*) => {{
        // SAFETY: see `this`.
        let this = unsafe { this($file) };
        match this.write_gathered() {
            ffi::SQLITE_OK => forward!(this, $method $(, $arg)*),
            rc => rc,
        }
    }};
}

impl File {
    /// Writes what is gathered, at once.
    fn write_gathered(&mut self) -> c_int {
        if self.gathered.is_empty() {
            return ffi::SQLITE_OK;
        }
        let Ok(len) = c_int::try_from(self.gathered.len()) else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        let bytes = self.gathered.as_ptr().cast::<c_void>();
        let rc = forward!(self, xWrite, bytes, len, self.gathered_at);
        #[cfg(test)]
        tests::WRITES_OUT.set(tests::WRITES_OUT.get() + 1);
        // Written or failed, it is no longer held: a failure goes to the
        // caller, and SQLite fails the transaction that wrote it.
        self.gathered.clear();
        self.commit_header = false;
        rc
    }

    /// Forgets what is gathered without writing it: frames of a
    /// transaction that gave up the WAL without committing (a commit's
    /// frames were written with its commit frame). Written later, they
    /// would land on frames another connection has since committed there.
    fn discard_uncommitted(&mut self) {
        #[cfg(test)]
        if !self.gathered.is_empty() {
            tests::DISCARDED.set(tests::DISCARDED.get() + 1);
        }
        self.gathered.clear();
        self.commit_header = false;
    }

    /// Writes `bytes` at `at` in pieces the default VFS takes whole: a
    /// savepoint journal moves from memory to its file in one write as
    /// large as SQLite kept in memory (`SUBJOURNAL_IN_MEMORY`), which the
    /// unix VFS would cut short and fail with "database or disk is full".
    fn write_through(&mut self, bytes: &[u8], at: i64) -> c_int {
        let mut at = at;
        for piece in bytes.chunks(MAX_GATHERED) {
            // Each piece is at most MAX_GATHERED bytes: it fits a c_int.
            let len = piece.len() as c_int;
            let rc = forward!(self, xWrite, piece.as_ptr().cast::<c_void>(), len, at);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            at += i64::from(len);
        }
        ffi::SQLITE_OK
    }

    fn gather(&mut self, bytes: &[u8], at: i64) -> c_int {
        let end = self.gathered_at + self.gathered.len() as i64;
        if !self.gathered.is_empty()
            && (at != end || self.gathered.len() + bytes.len() > MAX_GATHERED)
        {
            let rc = self.write_gathered();
            if rc != ffi::SQLITE_OK {
                return rc;
            }
        }
        if self.gathered.is_empty() {
            self.gathered_at = at;
        }
        self.gathered.extend_from_slice(bytes);
        if self.commit_header {
            return self.write_gathered();
        }
        self.commit_header = bytes.len() == FRAME_HEADER as usize && bytes[4..8] != [0; 4];
        self.committed |= self.commit_header;
        ffi::SQLITE_OK
    }
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: see `this`.
    let this = unsafe { this(file) };
    let written = this.write_gathered();
    if !this.partner.is_null() {
        // SAFETY: a partner is open until it closes, and unlinks itself here.
        unsafe { (*this.partner).partner = ptr::null_mut() };
    }
    let rc = forward!(this, xClose);
    // SAFETY: the fields `open` wrote are dropped once, after the default
    // VFS's file is closed; SQLite uses the file no more.
    unsafe { ptr::drop_in_place(file.cast::<File>()) };
    if written != ffi::SQLITE_OK {
        written
    } else {
        rc
    }
}

unsafe extern "C" fn read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    forward_after_writing!(file, xRead, buf, amount, offset)
}

unsafe extern "C" fn write(
    file: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    // SAFETY: see `this`.
    let this = unsafe { this(file) };
    if amount <= 0 {
        return forward!(this, xWrite, buf, amount, offset);
    }
    // SAFETY: SQLite passes `amount` readable bytes at `buf`.
    let bytes = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), amount as usize) };
    if this.wal {
        this.gather(bytes, offset)
    } else {
        this.write_through(bytes, offset)
    }
}

unsafe extern "C" fn truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    forward_after_writing!(file, xTruncate, size)
}

unsafe extern "C" fn sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    forward_after_writing!(file, xSync, flags)
}

unsafe extern "C" fn file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    forward_after_writing!(file, xFileSize, size)
}

unsafe extern "C" fn file_control(
    file: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    forward_after_writing!(file, xFileControl, op, arg)
}

unsafe extern "C" fn lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: see `this`.
    forward!(unsafe { this(file) }, xLock, level)
}

unsafe extern "C" fn unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    // SAFETY: see `this`.
    forward!(unsafe { this(file) }, xUnlock, level)
}

unsafe extern "C" fn check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    // SAFETY: see `this`.
    forward!(unsafe { this(file) }, xCheckReservedLock, out)
}

unsafe extern "C" fn sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: see `this`.
    forward!(unsafe { this(file) }, xSectorSize)
}

unsafe extern "C" fn device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: see `this`.
    forward!(unsafe { this(file) }, xDeviceCharacteristics)
}

unsafe extern "C" fn shm_map(
    file: *mut ffi::sqlite3_file,
    page: c_int,
    page_size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    // SAFETY: see `this`.
    let this = unsafe { this(file) };
    let rc = forward!(this, xShmMap, page, page_size, extend, out);
    if rc == ffi::SQLITE_OK && page == 0 {
        // SAFETY: SQLite passes where the region's address goes, and the
        // default VFS wrote it (null when the region does not exist yet).
        this.wal_index = unsafe { (*out).cast() };
    }
    rc
}

unsafe extern "C" fn shm_lock(
    file: *mut ffi::sqlite3_file,
    offset: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    // SAFETY: see `this`.
    let this = unsafe { this(file) };
    // Releasing the WAL write lock (slot 0) ends a write transaction: a
    // committed one left nothing gathered, a rolled-back one must not leave
    // its frames to be written once another connection may write.
    if flags & ffi::SQLITE_SHM_UNLOCK != 0 && offset == 0 && !this.partner.is_null() {
        // SAFETY: the partner WAL is open (it unlinks itself when closed)
        // and used by this connection only, one call at a time.
        let wal = unsafe { &mut *this.partner };
        wal.discard_uncommitted();
        // Still holding the write lock, nobody else can have moved the
        // header since this connection's commit wrote it.
        if std::mem::take(&mut wal.committed) && !this.wal_index.is_null() {
            // SAFETY: the mapping lives until `shm_unmap`, which clears it.
            this.committed_header = Some(unsafe { CommitMark::read(this.wal_index.cast()) });
        }
    }
    forward!(this, xShmLock, offset, n, flags)
}

unsafe extern "C" fn shm_barrier(file: *mut ffi::sqlite3_file) {
    // SAFETY: see `this`; the default VFS's file has the method (version 3).
    unsafe {
        let real = this(file).real;
        if let Some(method) = (*(*real).pMethods).xShmBarrier {
            method(real);
        }
    }
}

unsafe extern "C" fn shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    // SAFETY: see `this`.
    let this = unsafe { this(file) };
    this.wal_index = ptr::null_mut();
    forward!(this, xShmUnmap, delete)
}

/// The WAL index header as `conn`'s last commit left it, if the
/// connection opened its database through this VFS and committed
/// anything since the last call; taken, so each commit answers once.
pub fn take_committed_header(conn: &rusqlite::Connection) -> Option<CommitMark> {
    // SAFETY: the connection is open; its main file is a `File` when its
    // methods are ours, used by this thread only (the connection's).
    unsafe {
        let file = super::commit_mark::main_file(conn)?;
        if !ptr::eq((*file).pMethods, &METHODS) {
            return None;
        }
        this(file).committed_header.take()
    }
}

unsafe extern "C" fn fetch(
    file: *mut ffi::sqlite3_file,
    offset: i64,
    amount: c_int,
    out: *mut *mut c_void,
) -> c_int {
    forward_after_writing!(file, xFetch, offset, amount, out)
}

unsafe extern "C" fn unfetch(
    file: *mut ffi::sqlite3_file,
    offset: i64,
    page: *mut c_void,
) -> c_int {
    // SAFETY: see `this`.
    forward!(unsafe { this(file) }, xUnfetch, offset, page)
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};

#[cfg(test)]
mod tests;
