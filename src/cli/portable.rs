//! `pillbox export` and `pillbox import`: the encrypted household bundle
//! from the command line, acting as the household's owner (the host
//! operator). The passphrase comes from stdin or a double prompt, never
//! from an argument.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use super::common::{CliResult, open_db};
use super::progress::ProgressLine;
use crate::auth::{Actor, Authenticated, Credential};
use crate::config::DataDirArgs;
use crate::db::OpenMode;
use crate::portable::envelope::{self, Passphrase};
use crate::portable::export::{self, Version};
use crate::portable::import;
use crate::reports::review_prompts::pass;

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// Household id (see `pillbox household list`)
    #[arg(long)]
    pub household: i64,
    /// File to write the encrypted bundle to
    #[arg(long)]
    pub out: PathBuf,
    /// Write service.portable.v2 (pause history, dose outcomes, health events) instead of v1
    #[arg(long)]
    pub v2: bool,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(flatten)]
    pub data: DataDirArgs,
    /// Household id to import into
    #[arg(long)]
    pub household: i64,
    /// The encrypted bundle
    pub file: PathBuf,
    /// Check the bundle and report what an import would do, writing nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// The passphrase: one line of stdin, or typed twice (once when only
/// reading an existing bundle) without echo on a terminal.
fn read_passphrase(confirm: bool) -> CliResult<Passphrase> {
    let stdin = std::io::stdin();
    let text = if stdin.is_terminal() {
        let first = rpassword::prompt_password(format!(
            "Bundle passphrase (at least {} characters): ",
            envelope::MIN_PASSPHRASE_CHARS
        ))
        .map_err(|e| format!("cannot read the passphrase: {e}"))?;
        if confirm {
            let second = rpassword::prompt_password("Repeat the passphrase: ")
                .map_err(|e| format!("cannot read the passphrase: {e}"))?;
            if first != second {
                return Err("the two passphrases differ".into());
            }
        }
        first
    } else {
        let mut line = String::new();
        stdin
            .lock()
            .take(envelope::MAX_PASSPHRASE_BYTES as u64 + 2)
            .read_to_string(&mut line)
            .map_err(|e| format!("cannot read the passphrase from stdin: {e}"))?;
        line.lines().next().unwrap_or_default().to_string()
    };
    Passphrase::new(Some(&text)).map_err(|_| {
        format!(
            "the passphrase must be {} to {} characters (send it on stdin or type it at the prompt)",
            envelope::MIN_PASSPHRASE_CHARS,
            envelope::MAX_PASSPHRASE_BYTES
        )
    })
}

/// The household's first active owner, as the actor of the command.
fn owner_actor(conn: &rusqlite::Connection, household_id: i64) -> crate::error::Result<Actor> {
    use rusqlite::OptionalExtension;
    let found: Option<(i64, i64)> = conn
        .query_row(
            "SELECT id, account_id FROM memberships
             WHERE household_id = ?1 AND role = 'owner' AND status = 'active'
             ORDER BY id LIMIT 1",
            [household_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let (membership_id, account_id) =
        found.ok_or_else(|| crate::error::ApiError::not_found("household"))?;
    crate::auth::store::household_actor(
        conn,
        &Authenticated {
            account_id,
            credential: Credential::AppToken {
                id: 0,
                membership_id,
            },
            last_used_at: None,
        },
        household_id,
    )
}

pub async fn export(args: ExportArgs) -> CliResult {
    let passphrase = read_passphrase(true)?;
    let db = open_db(&args.data, OpenMode::Existing).await?;
    let household = args.household;
    let version = if args.v2 { Version::V2 } else { Version::V1 };
    let actor = db
        .read(move |conn| owner_actor(conn, household))
        .await
        .map_err(|e| format!("household {household}: {e}"))?;
    let line = Arc::new(ProgressLine::on_stderr());
    let shown = line.clone();
    let reader = actor.clone();
    let sealed = db
        .read(move |conn| {
            let plain = export::payload_reporting(conn, &reader, version, &|what, done, total| {
                shown.records("reading", what, done, total)
            })?;
            shown.step("encrypting");
            envelope::seal(plain, &passphrase)
        })
        .await
        .map_err(|e| e.to_string());
    line.finish();
    let sealed = sealed?;
    db.write(move |tx| {
        crate::household::audit::record(
            tx,
            actor.household_id,
            None,
            "portable.exported",
            ("household", actor.household_id),
            serde_json::json!({"format": version.format(), "encrypted": true, "command_line": true}),
        )
    })
    .await
    .map_err(|e| e.to_string())?;
    db.close().await;
    let text = serde_json::to_vec(&sealed).map_err(|e| format!("cannot write the bundle: {e}"))?;
    let partial = args.out.with_extension("partial");
    crate::db::private_files::write(&partial, &text)
        .and_then(|_| std::fs::rename(&partial, &args.out))
        .map_err(|e| format!("cannot write {}: {e}", args.out.display()))?;
    println!(
        "wrote {} ({} bytes, {} inside {})",
        args.out.display(),
        text.len(),
        version.format(),
        envelope::FORMAT
    );
    Ok(())
}

pub async fn import(args: ImportArgs) -> CliResult {
    let bytes = std::fs::read(&args.file)
        .map_err(|e| format!("cannot read {}: {e}", args.file.display()))?;
    let passphrase = read_passphrase(false)?;
    let db = open_db(&args.data, OpenMode::Existing).await?;
    let household = args.household;
    let apply = !args.dry_run;
    // The same rule as the API's, before the bundle's key derivation.
    let actor = db
        .read(move |conn| {
            let actor = owner_actor(conn, household)?;
            import::require_may_import(conn, &actor)?;
            Ok(actor)
        })
        .await
        .map_err(|e| format!("household {household}: {e}"))?;
    let line = Arc::new(ProgressLine::on_stderr());
    line.step("decrypting");
    let decrypted = tokio::task::spawn_blocking(move || {
        let envelope = match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(serde_json::Value::Object(mut map)) if map.contains_key("data") => {
                serde_json::from_value(map.remove("data").unwrap_or_default())
                    .map_err(|_| envelope::unreadable())?
            }
            _ => envelope::parse(&bytes)?,
        };
        let plain = envelope::open(envelope, &passphrase)?;
        import::parse(&plain)
    })
    .await;
    line.finish();
    let payload = decrypted
        .map_err(|e| format!("the import task failed: {e}"))
        .and_then(|opened| opened.map_err(describe));
    let payload = match payload {
        Ok(payload) => payload,
        Err(message) => {
            db.close().await;
            return Err(message);
        }
    };
    let shown = line.clone();
    let verb = if apply { "importing" } else { "checking" };
    let result = db
        .write(move |tx| {
            import::run_reporting(tx, &actor, payload, apply, &|what, done, total| {
                shown.records(verb, what, done, total)
            })
        })
        .await;
    line.finish();
    // The server makes prompts only for its own writes, so an import
    // beside it runs the review pass itself, as `pillbox evidence import`
    // does.
    let prompts = match &result {
        Ok(_) if apply => Some(db.write(pass::run_all).await),
        _ => None,
    };
    db.close().await;
    let summary = result.map_err(describe)?;
    println!(
        "{} {} ({} records)",
        if apply { "imported" } else { "dry run of" },
        summary.format,
        import::total(&summary.counts)
    );
    for (collection, n) in &summary.counts {
        let created = summary.created.get(collection).copied().unwrap_or(0);
        let unchanged = summary.unchanged.get(collection).copied().unwrap_or(0);
        println!("  {collection}: {n} ({created} new, {unchanged} unchanged)");
    }
    for c in &summary.conflicts {
        println!(
            "conflict: {} {} field {} (existing {})",
            c.collection, c.portable_id, c.field, c.existing_portable_id
        );
    }
    for e in &summary.errors {
        println!(
            "error: {} {} {}: {}",
            e.collection,
            e.portable_id.as_deref().unwrap_or("?"),
            e.field,
            e.message
        );
    }
    if !summary.conflicts.is_empty() || !summary.errors.is_empty() {
        return Err(format!(
            "{} conflict(s) and {} error(s): nothing would be imported",
            summary.conflicts.len(),
            summary.errors.len()
        ));
    }
    match prompts {
        Some(Ok(made)) if made > 0 => println!("  {made} new review prompts"),
        Some(Err(e)) => {
            return Err(format!(
                "the household is imported, but the review pass failed: {e}"
            ));
        }
        _ => {}
    }
    Ok(())
}

/// One line for an import refused as a whole, with every field it names.
fn describe(err: crate::error::ApiError) -> String {
    match err {
        crate::error::ApiError::Validation { message, errors } => {
            let fields: Vec<String> = errors
                .iter()
                .map(|(field, messages)| format!("{field} {}", messages.join("; ")))
                .collect();
            format!("{message}: {}", fields.join("; "))
        }
        other => other.to_string(),
    }
}
