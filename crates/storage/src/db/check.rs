//! `pillbox check`: a health report of the database file, read through a
//! read-only connection so it is safe beside a running server and never
//! changes what it inspects.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::{DATABASE_FILE, OpenError, SCHEMA_VERSION, migrate};

pub struct Report {
    pub path: PathBuf,
    pub schema_version: i64,
    pub file_bytes: u64,
    pub wal_bytes: u64,
    pub page_size: i64,
    pub page_count: i64,
    pub free_pages: i64,
    /// Every table with its row count, by name.
    pub tables: Vec<(String, i64)>,
    /// What is wrong; empty when the database is healthy.
    pub problems: Vec<String>,
}

/// Inspects the database under `data_dir`. Errors are reasons the file could
/// not be inspected at all; problems found inside it are in the report.
pub fn inspect(data_dir: &Path) -> Result<Report, OpenError> {
    let path = data_dir.join(DATABASE_FILE);
    if std::fs::metadata(data_dir).is_ok_and(|m| !m.is_dir()) {
        return Err(OpenError::NotADirectory {
            path: data_dir.to_path_buf(),
        });
    }
    if !path.is_file() {
        return Err(OpenError::Missing { path });
    }
    let sqlite_err = |source| OpenError::Sqlite {
        path: path.clone(),
        source,
    };
    let conn = Connection::open_with_flags(
        &path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sqlite_err)?;
    conn.busy_timeout(super::BUSY_TIMEOUT).map_err(sqlite_err)?;
    migrate::check_is_ours(&conn, &path)?;

    let number = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0));
    let schema_version = number("PRAGMA user_version").map_err(sqlite_err)?;
    let page_size = number("PRAGMA page_size").map_err(sqlite_err)?;
    let page_count = number("PRAGMA page_count").map_err(sqlite_err)?;
    let free_pages = number("PRAGMA freelist_count").map_err(sqlite_err)?;

    let mut problems = Vec::new();
    if schema_version > SCHEMA_VERSION {
        problems.push(format!(
            "schema version {schema_version} is newer than this binary supports ({SCHEMA_VERSION})"
        ));
    }
    let integrity: Vec<String> = conn
        .prepare("PRAGMA integrity_check")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(sqlite_err)?;
    if integrity != ["ok"] {
        problems.extend(integrity.into_iter().map(|m| format!("integrity: {m}")));
    }
    let foreign_keys: Vec<(String, Option<i64>, String)> = conn
        .prepare("PRAGMA foreign_key_check")
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect()
        })
        .map_err(sqlite_err)?;
    problems.extend(foreign_keys.into_iter().map(|(table, rowid, parent)| {
        let row = rowid.map_or_else(|| "a row".to_string(), |id| format!("row {id}"));
        format!("foreign key: {row} of {table} names a missing {parent} row")
    }));

    let names: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_schema
             WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(sqlite_err)?;
    let mut tables = Vec::with_capacity(names.len());
    for name in names {
        // Table names come from sqlite_schema, quoted as identifiers.
        let quoted = format!("\"{}\"", name.replace('"', "\"\""));
        let rows = number(&format!("SELECT count(*) FROM {quoted}")).map_err(sqlite_err)?;
        tables.push((name, rows));
    }

    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let mut wal = path.clone().into_os_string();
    wal.push("-wal");
    Ok(Report {
        file_bytes: size(&path),
        wal_bytes: size(Path::new(&wal)),
        path,
        schema_version,
        page_size,
        page_count,
        free_pages,
        tables,
        problems,
    })
}
