//! Scheduled backups by the server: every interval a backup into the
//! backup directory, named by its UTC time (`pillbox-20261126T120000Z.sqlite3`,
//! so names sort by age), written atomically by `backup`, then the oldest
//! beyond `keep` are removed. A failure is logged (never with data) and
//! kept in `Status`, which the capability document shows.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use crate::db::DATABASE_FILE;

pub const PREFIX: &str = "pillbox-";
pub const SUFFIX: &str = ".sqlite3";

/// The settings of scheduled backups.
#[derive(Debug, Clone)]
pub struct Plan {
    pub data_dir: PathBuf,
    pub dir: PathBuf,
    pub interval: Duration,
    pub keep: usize,
}

/// What the last scheduled backup did.
#[derive(Debug, Default)]
pub struct Status {
    inner: Mutex<StatusInner>,
}

#[derive(Debug, Default, Clone)]
pub struct StatusInner {
    pub enabled: bool,
    pub last_success_at: Option<crate::domain::Timestamp>,
    pub last_failure_at: Option<crate::domain::Timestamp>,
    pub failing: bool,
}

impl Status {
    pub fn enabled() -> Status {
        Status {
            inner: Mutex::new(StatusInner {
                enabled: true,
                ..StatusInner::default()
            }),
        }
    }

    pub fn get(&self) -> StatusInner {
        self.inner.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn record(&self, ok: bool) {
        if let Ok(mut s) = self.inner.lock() {
            let now = crate::domain::Timestamp::now();
            if ok {
                s.last_success_at = Some(now);
            } else {
                s.last_failure_at = Some(now);
            }
            s.failing = !ok;
        }
    }
}

/// The file a backup taken at `at` is written to.
pub fn file_name(at: jiff::Timestamp) -> String {
    format!("{PREFIX}{}{SUFFIX}", at.strftime("%Y%m%dT%H%M%SZ"))
}

/// Scheduled backup files in `dir`, oldest first.
pub fn existing(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(PREFIX) && n.ends_with(SUFFIX))
        })
        .collect();
    found.sort();
    Ok(found)
}

/// Removes the oldest scheduled backups beyond `keep`.
pub fn prune(dir: &Path, keep: usize) -> std::io::Result<Vec<PathBuf>> {
    let found = existing(dir)?;
    let excess = found.len().saturating_sub(keep);
    let mut removed = Vec::new();
    for old in found.into_iter().take(excess) {
        std::fs::remove_file(&old)?;
        removed.push(old);
    }
    Ok(removed)
}

/// One scheduled backup and the pruning after it.
pub fn run_once(plan: &Plan) -> Result<super::Written, String> {
    crate::db::private_files::create_dir(&plan.dir)
        .map_err(|e| format!("cannot create {}: {e}", plan.dir.display()))?;
    let out = plan.dir.join(file_name(jiff::Timestamp::now()));
    let written = super::backup(&plan.data_dir, &out, |_, _| {})?;
    prune(&plan.dir, plan.keep)
        .map_err(|e| format!("cannot prune old backups in {}: {e}", plan.dir.display()))?;
    Ok(written)
}

/// Runs backups every interval until the process ends (the first one an
/// interval after start). Each runs off the async threads.
pub async fn run(plan: Plan, status: std::sync::Arc<Status>) {
    let mut ticker =
        tokio::time::interval_at(tokio::time::Instant::now() + plan.interval, plan.interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let job = plan.clone();
        let result = tokio::task::spawn_blocking(move || run_once(&job))
            .await
            .unwrap_or_else(|e| Err(format!("the backup task failed: {e}")));
        match result {
            Ok(written) => {
                status.record(true);
                tracing::info!(
                    path = %written.path.display(),
                    bytes = written.bytes,
                    "scheduled backup written"
                );
            }
            Err(message) => {
                status.record(false);
                tracing::error!(
                    database = DATABASE_FILE,
                    "scheduled backup failed: {message}"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_by_time_and_pruning_keeps_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let times = [
            "2026-01-01T00:00:00Z",
            "2026-01-02T00:00:00Z",
            "2026-01-03T00:00:00Z",
        ];
        for t in times {
            let name = file_name(t.parse().unwrap());
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        std::fs::write(dir.path().join("notes.txt"), b"keep me").unwrap();
        let removed = prune(dir.path(), 2).unwrap();
        assert_eq!(removed.len(), 1);
        assert!(removed[0].ends_with("pillbox-20260101T000000Z.sqlite3"));
        assert_eq!(existing(dir.path()).unwrap().len(), 2);
        assert!(dir.path().join("notes.txt").exists());
    }
}
