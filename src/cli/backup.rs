//! `pillbox backup` and `pillbox restore`: a consistent copy of the whole
//! database while the server runs, and putting one back while it is
//! stopped.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use super::common::CliResult;
use super::progress::ProgressLine;
use crate::config::DataDirArgs;

#[derive(Debug, Args)]
pub struct BackupArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// File to write the backup to (a SQLite database; replaced atomically if it exists)
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct RestoreArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// Backup file made by `pillbox backup` (or a scheduled backup)
    pub file: PathBuf,
}

pub async fn backup(args: BackupArgs) -> CliResult {
    let dir = args.data.data_dir.clone();
    let out = args.out.clone();
    let line = Arc::new(ProgressLine::on_stderr());
    let shown = line.clone();
    let written = tokio::task::spawn_blocking(move || {
        let written = crate::backup::backup(&dir, &out, |done, total| {
            shown.bytes("copying", done, total);
        });
        shown.finish();
        written
    })
    .await
    .map_err(|e| format!("the backup task failed: {e}"))??;
    println!(
        "backup written to {} ({} bytes, schema version {}, integrity ok)",
        written.path.display(),
        written.bytes,
        written.schema_version
    );
    Ok(())
}

pub async fn restore(args: RestoreArgs) -> CliResult {
    let dir = args.data.data_dir.clone();
    let file = args.file.clone();
    let restored = tokio::task::spawn_blocking(move || {
        let line = ProgressLine::on_stderr();
        let restored = crate::backup::restore(&dir, &file, |step| line.step(step));
        line.finish();
        restored
    })
    .await
    .map_err(|e| format!("the restore task failed: {e}"))??;
    println!(
        "restored {} into {} (schema version {})",
        args.file.display(),
        restored.database.display(),
        restored.schema_version
    );
    if let Some(kept) = restored.kept {
        println!("the replaced database is kept at {}", kept.display());
    }
    Ok(())
}
