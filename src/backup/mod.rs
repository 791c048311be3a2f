//! Whole-database backups: a consistent copy taken with SQLite's online
//! backup while the server runs, checked before it counts as a backup, and
//! restored into a data directory whose server is stopped. `schedule` runs
//! them from the server at an interval.
//!
//! A running server holds an exclusive advisory lock on `pillbox.lock` in
//! its data directory; a restore takes the same lock and so refuses to
//! replace a database under a running server.

pub mod schedule;

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use crate::db::{DATABASE_FILE, SCHEMA_VERSION, private_files};

pub const LOCK_FILE: &str = "pillbox.lock";

/// What a finished backup is.
#[derive(Debug, Clone)]
pub struct Written {
    pub path: PathBuf,
    pub bytes: u64,
    pub schema_version: i64,
}

/// The exclusive lock a server holds on its data directory while it runs.
pub struct ServerLock {
    _file: File,
}

/// Takes the data directory's lock; `Err` says a server already holds it.
pub fn lock(data_dir: &Path) -> Result<ServerLock, String> {
    let path = data_dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(private_files::FILE_MODE)
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).map_err(
        |_| {
            format!(
                "a pillbox server is running with data in {}; stop it first",
                data_dir.display()
            )
        },
    )?;
    Ok(ServerLock { _file: file })
}

fn open_read_only(path: &Path) -> Result<Connection, String> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    conn.busy_timeout(std::time::Duration::from_secs(30))
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    Ok(conn)
}

/// Checks a database file: SQLite's integrity check passes, it is a
/// Pillbox database, and its schema is not newer than this binary's.
/// Returns its schema version.
pub fn verify(path: &Path) -> Result<i64, String> {
    let conn = open_read_only(path)?;
    crate::db::check_is_ours(&conn, path).map_err(|e| e.to_string())?;
    let result: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(|e| format!("{} is not a readable database: {e}", path.display()))?;
    if result != "ok" {
        return Err(format!(
            "{} fails SQLite's integrity check: {result}",
            path.display()
        ));
    }
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| format!("cannot read the schema version of {}: {e}", path.display()))?;
    if version > SCHEMA_VERSION {
        return Err(format!(
            "{} has schema version {version}, newer than this binary's {SCHEMA_VERSION}; \
             use a newer pillbox",
            path.display()
        ));
    }
    Ok(version)
}

/// Pages copied per backup step, between two progress reports.
const PAGES_PER_STEP: i32 = 1024;

/// Copies the database under `data_dir` to `out` with SQLite's online
/// backup (one read transaction, so the copy is one consistent moment even
/// while the server writes), into a temporary file beside `out` that is
/// checked, synced and then renamed, so `out` is either the old file or a
/// whole checked backup. `progress` gets (bytes copied, bytes in all)
/// after each step.
pub fn backup(
    data_dir: &Path,
    out: &Path,
    mut progress: impl FnMut(u64, u64),
) -> Result<Written, String> {
    let source_path = data_dir.join(DATABASE_FILE);
    if !source_path.is_file() {
        return Err(format!("no database at {}", source_path.display()));
    }
    let source = open_read_only(&source_path)?;
    crate::db::check_is_ours(&source, &source_path).map_err(|e| e.to_string())?;
    let partial = partial_path(out);
    let _ = std::fs::remove_file(&partial);
    let result = (|| {
        // Owner-only before SQLite opens it (its journal takes the mode).
        private_files::create_file(&partial)
            .map_err(|e| format!("cannot create {}: {e}", partial.display()))?;
        let mut copy = Connection::open(&partial)
            .map_err(|e| format!("cannot create {}: {e}", partial.display()))?;
        {
            // The source's own read transaction spans every step: each step
            // reads the same snapshot, so the server's writes (to the WAL)
            // neither block the copy nor restart it, and the copy is the
            // database as it was when the transaction began.
            let page_size: i64 = source
                .query_row("PRAGMA page_size", [], |r| r.get(0))
                .map_err(|e| format!("cannot start the backup: {e}"))?;
            source
                .execute_batch("BEGIN")
                .and_then(|()| {
                    source.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))
                })
                .map_err(|e| format!("cannot start the backup: {e}"))?;
            let backup = rusqlite::backup::Backup::new(&source, &mut copy)
                .map_err(|e| format!("cannot start the backup: {e}"))?;
            let bytes = |pages: i32| u64::try_from(i64::from(pages) * page_size).unwrap_or(0);
            let mut waits = 0;
            loop {
                let step = backup
                    .step(PAGES_PER_STEP)
                    .map_err(|e| format!("the backup failed: {e}"))?;
                let p = backup.progress();
                progress(bytes(p.pagecount - p.remaining), bytes(p.pagecount));
                match step {
                    rusqlite::backup::StepResult::Done => break,
                    rusqlite::backup::StepResult::More => {}
                    _ if waits < 600 => {
                        waits += 1;
                        std::thread::sleep(std::time::Duration::from_millis(50));
                    }
                    _ => return Err("the database stayed locked; try again".into()),
                }
            }
            drop(backup);
            source
                .execute_batch("COMMIT")
                .map_err(|e| format!("cannot finish the backup: {e}"))?;
        }
        copy.execute_batch("PRAGMA journal_mode = DELETE;")
            .map_err(|e| format!("cannot finish {}: {e}", partial.display()))?;
        drop(copy);
        let version = verify(&partial)?;
        let finished = if is_zip_name(out) {
            let zipped = partial.with_extension("zip.partial");
            let zipped_result = zip_database(&partial, &zipped);
            let _ = std::fs::remove_file(&partial);
            zipped_result?;
            zipped
        } else {
            partial.clone()
        };
        File::open(&finished)
            .and_then(|f| f.sync_all())
            .map_err(|e| format!("cannot sync {}: {e}", finished.display()))?;
        std::fs::rename(&finished, out)
            .map_err(|e| format!("cannot move the backup to {}: {e}", out.display()))?;
        sync_dir(out);
        let bytes = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
        Ok(Written {
            path: out.to_path_buf(),
            bytes,
            schema_version: version,
        })
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    result
}

/// `--out backup.zip` asks for the database inside a ZIP archive (as
/// `pillbox.sqlite3`); any other name gets the database file itself.
fn is_zip_name(out: &Path) -> bool {
    out.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("zip"))
}

fn zip_database(database: &Path, zipped: &Path) -> Result<(), String> {
    use zip::write::SimpleFileOptions;
    let failed = |e: &dyn std::fmt::Display| format!("cannot write {}: {e}", zipped.display());
    let file = private_files::create_file(zipped).map_err(|e| failed(&e))?;
    let mut archive = zip::ZipWriter::new(file);
    let options = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true)
        .unix_permissions(0o600);
    archive
        .start_file(DATABASE_FILE, options)
        .map_err(|e| failed(&e))?;
    let mut source = File::open(database).map_err(|e| failed(&e))?;
    std::io::copy(&mut source, &mut archive).map_err(|e| failed(&e))?;
    archive.finish().map_err(|e| failed(&e))?;
    Ok(())
}

/// Puts the database a backup file holds at `target`: the file itself, or
/// the `pillbox.sqlite3` inside a ZIP backup.
fn unpack(backup_file: &Path, target: &Path) -> Result<(), String> {
    let mut magic = [0u8; 4];
    let is_zip = File::open(backup_file)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok()
        && magic == *b"PK\x03\x04";
    if !is_zip {
        // Not `fs::copy`, which would give the database the backup's mode.
        let copied = File::open(backup_file).and_then(|mut from| {
            let mut to = private_files::create_file(target)?;
            std::io::copy(&mut from, &mut to)
        });
        copied.map_err(|e| format!("cannot copy {}: {e}", backup_file.display()))?;
        return Ok(());
    }
    let unreadable = |e: &dyn std::fmt::Display| {
        format!(
            "{} is not a pillbox backup archive: {e}",
            backup_file.display()
        )
    };
    let file = File::open(backup_file).map_err(|e| unreadable(&e))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| unreadable(&e))?;
    let mut entry = archive.by_name(DATABASE_FILE).map_err(|e| unreadable(&e))?;
    let mut out = private_files::create_file(target)
        .map_err(|e| format!("cannot create {}: {e}", target.display()))?;
    std::io::copy(&mut entry, &mut out).map_err(|e| unreadable(&e))?;
    Ok(())
}

fn partial_path(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "backup".into());
    out.with_file_name(format!(".{name}.partial"))
}

/// Makes a rename durable (best effort: not every file system allows it).
fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

/// What a restore did.
#[derive(Debug)]
pub struct Restored {
    pub database: PathBuf,
    /// Where the replaced database was kept, if there was one.
    pub kept: Option<PathBuf>,
    pub schema_version: i64,
}

/// Restores `backup_file` as the database of `data_dir`: refuses while a
/// server runs there (its lock), a damaged file, another program's
/// database and a newer schema; keeps the replaced database (and its WAL)
/// beside it under a name with the time.
/// `step` is told of each long step as it starts.
pub fn restore(
    data_dir: &Path,
    backup_file: &Path,
    mut step: impl FnMut(&str),
) -> Result<Restored, String> {
    if !backup_file.is_file() {
        return Err(format!("no backup file at {}", backup_file.display()));
    }
    if !data_dir.is_dir() {
        private_files::create_dir(data_dir)
            .map_err(|e| format!("cannot create {}: {e}", data_dir.display()))?;
    }
    let _lock = lock(data_dir)?;
    let database = data_dir.join(DATABASE_FILE);
    let incoming = data_dir.join(format!(".{DATABASE_FILE}.restoring"));
    step("copying the backup");
    let checked = unpack(backup_file, &incoming).and_then(|()| {
        step("checking the backup (integrity_check)");
        verify(&incoming)
    });
    let schema_version = match checked {
        Ok(version) => version,
        Err(message) => {
            let _ = std::fs::remove_file(&incoming);
            return Err(message);
        }
    };
    File::open(&incoming)
        .and_then(|f| f.sync_all())
        .map_err(|e| format!("cannot sync {}: {e}", incoming.display()))?;
    let kept = if database.exists() {
        let stamp = jiff::Timestamp::now()
            .strftime("%Y%m%dT%H%M%SZ")
            .to_string();
        let kept = data_dir.join(format!("{DATABASE_FILE}.replaced-{stamp}"));
        std::fs::rename(&database, &kept)
            .map_err(|e| format!("cannot move the current database aside: {e}"))?;
        for suffix in ["-wal", "-shm"] {
            let side = data_dir.join(format!("{DATABASE_FILE}{suffix}"));
            if side.exists() {
                let _ = std::fs::rename(&side, format!("{}{suffix}", kept.display()));
            }
        }
        Some(kept)
    } else {
        None
    };
    std::fs::rename(&incoming, &database)
        .map_err(|e| format!("cannot put the restored database in place: {e}"))?;
    sync_dir(&database);
    Ok(Restored {
        database,
        kept,
        schema_version,
    })
}
