//! The VFS's own methods (as opposed to those of the files it opens), each
//! passed straight through to the default VFS.

use std::ffi::{c_char, c_int, c_void};
use std::ptr;

use rusqlite::ffi;

use super::real_vfs;

/// The default VFS's `$method`, called with it and the arguments; `$none`
/// when it has none.
macro_rules! forward_vfs {
    ($vfs:expr, $method:ident, $none:expr $(, $arg:expr)*) => {{
        // SAFETY: the default VFS's methods take it and these arguments.
        unsafe {
            let real = real_vfs($vfs);
            match (*real).$method {
                Some(method) => method(real $(, $arg)*),
                None => $none,
            }
        }
    }};
}

pub(super) unsafe extern "C" fn delete(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    sync: c_int,
) -> c_int {
    forward_vfs!(vfs, xDelete, ffi::SQLITE_IOERR_DELETE, name, sync)
}

pub(super) unsafe extern "C" fn access(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    flags: c_int,
    out: *mut c_int,
) -> c_int {
    forward_vfs!(vfs, xAccess, ffi::SQLITE_IOERR_ACCESS, name, flags, out)
}

pub(super) unsafe extern "C" fn full_pathname(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    size: c_int,
    out: *mut c_char,
) -> c_int {
    forward_vfs!(vfs, xFullPathname, ffi::SQLITE_CANTOPEN, name, size, out)
}

pub(super) unsafe extern "C" fn dl_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
) -> *mut c_void {
    forward_vfs!(vfs, xDlOpen, ptr::null_mut(), name)
}

pub(super) unsafe extern "C" fn dl_error(
    vfs: *mut ffi::sqlite3_vfs,
    size: c_int,
    out: *mut c_char,
) {
    forward_vfs!(vfs, xDlError, (), size, out)
}

pub(super) unsafe extern "C" fn dl_sym(
    vfs: *mut ffi::sqlite3_vfs,
    handle: *mut c_void,
    symbol: *const c_char,
) -> Option<unsafe extern "C" fn(*mut ffi::sqlite3_vfs, *mut c_void, *const c_char)> {
    forward_vfs!(vfs, xDlSym, None, handle, symbol)
}

pub(super) unsafe extern "C" fn dl_close(vfs: *mut ffi::sqlite3_vfs, handle: *mut c_void) {
    forward_vfs!(vfs, xDlClose, (), handle)
}

pub(super) unsafe extern "C" fn randomness(
    vfs: *mut ffi::sqlite3_vfs,
    size: c_int,
    out: *mut c_char,
) -> c_int {
    forward_vfs!(vfs, xRandomness, 0, size, out)
}

pub(super) unsafe extern "C" fn sleep(vfs: *mut ffi::sqlite3_vfs, micros: c_int) -> c_int {
    forward_vfs!(vfs, xSleep, 0, micros)
}

pub(super) unsafe extern "C" fn current_time(vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    forward_vfs!(vfs, xCurrentTime, ffi::SQLITE_ERROR, out)
}

pub(super) unsafe extern "C" fn get_last_error(
    vfs: *mut ffi::sqlite3_vfs,
    size: c_int,
    out: *mut c_char,
) -> c_int {
    forward_vfs!(vfs, xGetLastError, 0, size, out)
}

pub(super) unsafe extern "C" fn current_time_int64(
    vfs: *mut ffi::sqlite3_vfs,
    out: *mut i64,
) -> c_int {
    forward_vfs!(vfs, xCurrentTimeInt64, ffi::SQLITE_ERROR, out)
}
