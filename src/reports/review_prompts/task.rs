//! The background task that keeps prompts up to date: a full pass at
//! start, then a pass for each person whose schedules, assignments or
//! medicines changed (read from the change feed after the writer says a
//! commit changed household data). Commands that write beside the server
//! and can call for prompts (`pillbox evidence import`, `pillbox import`)
//! run the full pass themselves, so the task never polls the database: a
//! quiet server stays asleep.
//! It answers no request; requests never wait for it.

use std::time::Duration;

use crate::db::Db;
use crate::error::Result;

use super::{pass, store};

/// Writes come in bursts (a sync batch, an import); one pass follows them.
const SETTLE: Duration = Duration::from_millis(200);

/// Starts the task on the current runtime.
pub fn spawn(db: Db) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run(db))
}

async fn run(db: Db) {
    let mut changes = db.changes();
    let mut seen = match start(&db).await {
        Ok(seen) => seen,
        Err(e) => {
            tracing::warn!("review prompt pass failed at start: {e}");
            0
        }
    };
    while changes.changed().await.is_ok() {
        tokio::time::sleep(SETTLE).await;
        if let Err(e) = step(&db, &mut seen).await {
            tracing::warn!("review prompt pass failed: {e}");
        }
    }
}

/// A full pass; answers the change-feed position it covers.
async fn start(db: &Db) -> Result<i64> {
    let seen = db
        .read(|conn| Ok(store::people_changed_since(conn, i64::MAX)?.1))
        .await?;
    let made = db.write(pass::run_all).await?;
    if made > 0 {
        tracing::info!(prompts = made, "review prompts made");
    }
    Ok(seen)
}

/// One round: a pass for the people whose plan changed since `seen`, the
/// change-feed position read up to.
async fn step(db: &Db, seen: &mut i64) -> Result<()> {
    let since = *seen;
    let (people, last) = db
        .read(move |conn| store::people_changed_since(conn, since))
        .await?;
    let made = if people.is_empty() {
        0
    } else {
        db.write(move |tx| pass::run_for_people(tx, &people))
            .await?
    };
    *seen = last;
    if made > 0 {
        tracing::info!(prompts = made, "review prompts made");
    }
    Ok(())
}
