//! Opening the database: the checks of the data directory before SQLite
//! sees it, each way it can be wrong with its own actionable message, and
//! the connections and threads a database starts with.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::{Connection, OpenFlags};

use super::{
    DATABASE_FILE, DEFAULT_READERS, Db, Inner, Writer, configure, configure_sqlite_once,
    gathered_wal, instance, migrate, open_reader, private_files, readers,
};

/// Frames the WAL may hold before the writer copies them into the database
/// file inside a commit (SQLite's automatic checkpoint; its default is
/// 1,000): about 40 MB of WAL at 4 KiB pages. A checkpoint writes each page
/// once however many commits rewrote it (the end of every growing table
/// and index is rewritten by each group of takes) and syncs the database
/// file once, so ten times fewer checkpoints cost the writer far less than
/// a tenth of the time; a quiet server folds the WAL back at once anyway
/// (`Writer::release_idle`), so it reaches this bound only under a long
/// stream of writes.
const WAL_FRAMES_BEFORE_CHECKPOINT: u32 = 10_000;

/// Errors while opening the database at start-up; shown to the operator as one line.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("permission denied: the data directory {path} is not writable by the user {user}")]
    PermissionDenied { path: PathBuf, user: String },
    #[error(
        "the data directory {path} belongs to the user {owner}; run this command as that user (sudo -u {login} pillbox ...) so the server can still open the files it creates"
    )]
    WrongUser {
        path: PathBuf,
        owner: String,
        login: String,
    },
    #[error("cannot create data directory {path}: {source}")]
    DataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the data directory {path} is a file, not a directory; pass --data-dir a directory")]
    NotADirectory { path: PathBuf },
    #[error(
        "no Pillbox database at {path}; run `pillbox setup` first, or pass the --data-dir the server uses"
    )]
    Missing { path: PathBuf },
    #[error(
        "{path} is not a Pillbox database (it belongs to another program); refusing to change it: move it away or choose another --data-dir"
    )]
    Foreign { path: PathBuf },
    #[error("cannot open database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(
        "database {path} has schema version {found}, newer than this pillbox binary supports ({supported}); run a newer pillbox or restore a backup"
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("cannot start the database readers: {0}")]
    Readers(std::io::Error),
    #[error("cannot start the database writer: {0}")]
    Writer(std::io::Error),
}

/// Whether opening may create the data directory and a new database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// `serve` and `setup`: the first start creates everything.
    Create,
    /// Administration commands: a mistyped --data-dir must not leave an
    /// empty database behind.
    Existing,
}

impl Db {
    /// Opens (creating on first start) the database under `data_dir`, applies
    /// migrations and starts the writer thread.
    pub fn open(data_dir: &Path) -> std::result::Result<Db, OpenError> {
        Db::open_with(data_dir, OpenMode::Create)
    }

    pub fn open_with(data_dir: &Path, mode: OpenMode) -> std::result::Result<Db, OpenError> {
        Db::open_with_readers(data_dir, mode, DEFAULT_READERS)
    }

    /// `open_with`, serving reads from `readers` threads (at least one).
    pub fn open_with_readers(
        data_dir: &Path,
        mode: OpenMode,
        readers: u32,
    ) -> std::result::Result<Db, OpenError> {
        let path = data_dir.join(DATABASE_FILE);
        prepare_data_dir(data_dir, mode)?;
        configure_sqlite_once();
        let sqlite_err = |source| OpenError::Sqlite {
            path: path.clone(),
            source,
        };
        // The writer's connection gathers each commit's WAL frames into one
        // write (see `gathered_wal`); every other connection reads the same
        // files through SQLite's default VFS.
        let vfs = gathered_wal::register().map_err(|code| {
            sqlite_err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(code),
                Some("cannot register the writer's VFS".into()),
            ))
        })?;
        let mut conn = Connection::open_with_flags_and_vfs(&path, OpenFlags::default(), vfs)
            .map_err(sqlite_err)?;
        // Before anything writes (even the journal mode): another program's
        // database is refused untouched.
        migrate::check_is_ours(&conn, &path)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(sqlite_err)?;
        configure(&conn).map_err(sqlite_err)?;
        conn.pragma_update(None, "wal_autocheckpoint", WAL_FRAMES_BEFORE_CHECKPOINT)
            .map_err(sqlite_err)?;
        migrate::migrate(&mut conn, &path)?;
        instance::ensure(&conn).map_err(sqlite_err)?;

        let connections = (0..readers.max(1))
            .map(|_| open_reader(&path))
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sqlite_err)?;
        let reopen: readers::Open = {
            let path = path.clone();
            Arc::new(move || open_reader(&path))
        };
        let readers = readers::Readers::start(connections, reopen).map_err(OpenError::Readers)?;
        let writer = Writer::start(conn).map_err(OpenError::Writer)?;
        Ok(Db {
            inner: Arc::new(Inner {
                path,
                serial: {
                    static SERIALS: std::sync::atomic::AtomicU64 =
                        std::sync::atomic::AtomicU64::new(0);
                    SERIALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                },
                readers,
                writer,
                attached: std::sync::RwLock::default(),
                jobs: std::sync::atomic::AtomicU64::new(0),
            }),
        })
    }
}

/// Checks the data directory before SQLite sees it, so each way it can be
/// wrong gets its own actionable message.
fn prepare_data_dir(data_dir: &Path, mode: OpenMode) -> std::result::Result<(), OpenError> {
    let denied = || OpenError::PermissionDenied {
        path: data_dir.to_path_buf(),
        user: process_user(),
    };
    match std::fs::metadata(data_dir) {
        Ok(meta) if !meta.is_dir() => {
            return Err(OpenError::NotADirectory {
                path: data_dir.to_path_buf(),
            });
        }
        Ok(meta) => refuse_root_in_a_service_dir(data_dir, &meta)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && mode == OpenMode::Create => {
            private_files::create_dir(data_dir).map_err(|source| match source.kind() {
                std::io::ErrorKind::PermissionDenied => denied(),
                std::io::ErrorKind::NotADirectory => OpenError::NotADirectory {
                    path: data_dir.to_path_buf(),
                },
                _ => OpenError::DataDir {
                    path: data_dir.to_path_buf(),
                    source,
                },
            })?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return Err(denied()),
        Err(_) => {}
    }
    let path = data_dir.join(DATABASE_FILE);
    if mode == OpenMode::Existing && !path.is_file() {
        return Err(OpenError::Missing { path });
    }
    // SQLite needs to create its -wal and -shm files beside the database,
    // and reports a directory it cannot write to only as "unable to open".
    let probe = data_dir.join(format!(".pillbox-write-check-{}", std::process::id()));
    let failed = |source| OpenError::DataDir {
        path: data_dir.to_path_buf(),
        source,
    };
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
        }
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return Err(denied()),
        Err(source) => return Err(failed(source)),
    }
    // SQLite would create a missing database with the umask's mode (and
    // its -wal and -shm files with the database's): it opens ours instead.
    if mode == OpenMode::Create {
        private_files::create_database(&path).map_err(failed)?;
    }
    Ok(())
}

/// Root running a command on the service's data directory would leave the
/// database's -wal and -shm files owned by root, and the server, running as
/// its own user, could then no longer open the database.
fn refuse_root_in_a_service_dir(
    data_dir: &Path,
    meta: &std::fs::Metadata,
) -> std::result::Result<(), OpenError> {
    use std::os::unix::fs::MetadataExt;
    if effective_uid() == Some(0) && meta.uid() != 0 {
        let owner = user_name(meta.uid());
        let login = match owner.split_once(" (uid ") {
            Some((name, _)) => name.to_string(),
            None => format!("'#{}'", meta.uid()),
        };
        return Err(OpenError::WrongUser {
            path: data_dir.to_path_buf(),
            owner,
            login,
        });
    }
    Ok(())
}

/// The user this process runs as, by name where the system says it.
fn process_user() -> String {
    match effective_uid() {
        Some(uid) => user_name(uid),
        None => std::env::var("USER").unwrap_or_else(|_| "(unknown)".into()),
    }
}

fn effective_uid() -> Option<u32> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// "name (uid N)" from /etc/passwd, read directly: a static binary cannot
/// load the NSS modules `getpwuid` would need.
fn user_name(uid: u32) -> String {
    let uid = uid.to_string();
    std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|passwd| {
            passwd.lines().find_map(|line| {
                let mut fields = line.split(':');
                let name = fields.next()?;
                (fields.nth(1)? == uid).then(|| format!("{name} (uid {uid})"))
            })
        })
        .unwrap_or_else(|| format!("uid {uid}"))
}
