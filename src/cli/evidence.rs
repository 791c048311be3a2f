//! `pillbox evidence import FILE`: loads interaction evidence from an
//! openFDA drug-label JSON file (the bulk download a self-hoster fetches
//! from https://open.fda.gov/apis/drug/label/download/, unzipped), then
//! runs the review pass so new prompts appear. Safe while the server runs:
//! it writes through its own writer like any other process would, and the
//! server notices new evidence on its own too.

use std::io::{BufReader, IsTerminal, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand};
use tokio::sync::mpsc;

use super::common::{CliResult, open_db};
use crate::config::DataDirArgs;
use crate::db::OpenMode;
use crate::reports::evidence::model::{Evidence, ImportCounts};
use crate::reports::evidence::{self, openfda};
use crate::reports::review_prompts::pass;

/// Labels written per transaction.
const BATCH: usize = 500;

#[derive(Debug, Subcommand)]
pub enum EvidenceCommand {
    /// Import interaction evidence from an openFDA drug-label JSON file; re-importing updates records in place
    Import(ImportArgs),
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// The openFDA drug-label JSON file (`{"results": [...]}`)
    pub file: PathBuf,
}

pub async fn run(command: EvidenceCommand) -> CliResult {
    match command {
        EvidenceCommand::Import(args) => import(args).await,
    }
}

async fn import(args: ImportArgs) -> CliResult {
    let file = std::fs::File::open(&args.file)
        .map_err(|e| format!("cannot read {}: {e}", args.file.display()))?;
    let db = open_db(&args.data, OpenMode::Existing).await?;
    // The parser runs on a blocking thread and hands over batches through a
    // small bounded channel: a bulk file is never held in memory.
    let (sender, mut receiver) = mpsc::channel::<(Vec<Evidence>, u64)>(2);
    let parser = tokio::task::spawn_blocking(move || {
        let mut batch = Vec::with_capacity(BATCH);
        let mut skipped = 0;
        let result = openfda::read_labels(BufReader::new(file), &mut |label| {
            match openfda::evidence_of(label) {
                Some(evidence) => batch.push(evidence),
                None => skipped += 1,
            }
            if batch.len() >= BATCH {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                sender
                    .blocking_send((full, std::mem::take(&mut skipped)))
                    .map_err(|_| "the import stopped".to_string())?;
            }
            Ok(())
        });
        if result.is_ok() && (!batch.is_empty() || skipped > 0) {
            let _ = sender.blocking_send((batch, skipped));
        }
        result
    });
    let progress = std::io::stderr().is_terminal();
    let mut counts = ImportCounts::default();
    while let Some((batch, skipped)) = receiver.recv().await {
        let mut done = db
            .write(move |tx| evidence::import_batch(tx, &batch))
            .await
            .map_err(|e| format!("cannot store the evidence: {e}"))?;
        done.skipped = skipped;
        counts.add(done);
        if progress {
            eprint!("\rread {} labels", counts.labels());
            let _ = std::io::stderr().flush();
        }
    }
    if progress {
        eprintln!();
    }
    parser
        .await
        .map_err(|e| format!("the import failed: {e}"))??;
    let prompts = db
        .write(pass::run_all)
        .await
        .map_err(|e| format!("the evidence is imported, but the review pass failed: {e}"))?;
    println!(
        "imported {} labels: {} new, {} updated, {} unchanged, {} without interaction text; {} new review prompts",
        counts.labels(),
        counts.created,
        counts.updated,
        counts.unchanged,
        counts.skipped,
        prompts
    );
    db.close().await;
    Ok(())
}
