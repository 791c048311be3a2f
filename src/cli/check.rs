//! `pillbox check`: is the database whole? Read-only, so it is safe while
//! the server runs; exits non-zero on any problem.

use clap::Args;

use super::common::CliResult;
use crate::config::DataDirArgs;
use crate::db::{SCHEMA_VERSION, check, private_files};

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
}

pub async fn run(args: CheckArgs) -> CliResult {
    let dir = args.data.data_dir.clone();
    let report = tokio::task::spawn_blocking(move || check::inspect(&dir))
        .await
        .map_err(|e| format!("cannot run the check: {e}"))?
        .map_err(|e| e.to_string())?;
    if let Some(line) = private_files::exposure_warning(&args.data.data_dir) {
        eprintln!("pillbox: warning: {line}");
    }
    println!("database: {}", report.path.display());
    let schema_note = match report.schema_version.cmp(&SCHEMA_VERSION) {
        std::cmp::Ordering::Equal => "current".to_string(),
        std::cmp::Ordering::Less => {
            format!("older than this binary's {SCHEMA_VERSION}; migrated at the next start")
        }
        std::cmp::Ordering::Greater => format!("newer than this binary's {SCHEMA_VERSION}"),
    };
    println!("schema version: {} ({schema_note})", report.schema_version);
    println!(
        "size: {} bytes in the file, {} in the write-ahead log; {} pages of {} bytes, {} free",
        report.file_bytes, report.wal_bytes, report.page_count, report.page_size, report.free_pages
    );
    println!("rows:");
    let width = report
        .tables
        .iter()
        .map(|(n, _)| n.len())
        .max()
        .unwrap_or(0);
    for (name, rows) in &report.tables {
        println!("  {name:<width$}  {rows}");
    }
    if report.problems.is_empty() {
        println!("integrity: ok; foreign keys: ok");
        return Ok(());
    }
    for problem in &report.problems {
        println!("problem: {problem}");
    }
    Err(format!(
        "{} problem(s) found in {}; restore a backup or ask for help with the lines above",
        report.problems.len(),
        report.path.display()
    ))
}
