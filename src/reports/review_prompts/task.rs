//! The background task that keeps prompts up to date: a full pass at
//! start, then a pass for each person whose schedules, assignments or
//! medicines changed (read from the change feed after the writer says a
//! commit changed household data), and a full pass when the evidence
//! changed (an import by `pillbox evidence import` beside the server).
//! It answers no request; requests never wait for it.

use std::time::Duration;

use crate::db::Db;
use crate::error::Result;
use crate::reports::evidence::store as evidence_store;

use super::{pass, store};

/// Writes come in bursts (a sync batch, an import); one pass follows them.
const SETTLE: Duration = Duration::from_millis(200);
/// How often the evidence is checked for an import by another process.
const EVIDENCE_CHECK: Duration = Duration::from_secs(60);

/// Where the task has read up to.
struct Seen {
    seq: i64,
    evidence: (i64, Option<String>),
}

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
            Seen {
                seq: 0,
                evidence: (0, None),
            }
        }
    };
    loop {
        tokio::select! {
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
                tokio::time::sleep(SETTLE).await;
            }
            _ = tokio::time::sleep(EVIDENCE_CHECK) => {}
        }
        if let Err(e) = step(&db, &mut seen).await {
            tracing::warn!("review prompt pass failed: {e}");
        }
    }
}

async fn start(db: &Db) -> Result<Seen> {
    let (seen_seq, evidence) = db
        .read(|conn| {
            let (_, last) = store::people_changed_since(conn, i64::MAX)?;
            Ok((last, evidence_store::stamp(conn)?))
        })
        .await?;
    let made = db.write(pass::run_all).await?;
    if made > 0 {
        tracing::info!(prompts = made, "review prompts made");
    }
    Ok(Seen {
        seq: seen_seq,
        evidence,
    })
}

/// One round: a full pass if the evidence changed, else a pass for the
/// people whose plan changed since the last round.
async fn step(db: &Db, seen: &mut Seen) -> Result<()> {
    let since = seen.seq;
    let (people, last, evidence) = db
        .read(move |conn| {
            let (people, last) = store::people_changed_since(conn, since)?;
            Ok((people, last, evidence_store::stamp(conn)?))
        })
        .await?;
    let made = if evidence != seen.evidence {
        db.write(pass::run_all).await?
    } else if !people.is_empty() {
        db.write(move |tx| pass::run_for_people(tx, &people))
            .await?
    } else {
        0
    };
    seen.seq = last;
    seen.evidence = evidence;
    if made > 0 {
        tracing::info!(prompts = made, "review prompts made");
    }
    Ok(())
}
