//! The command line: one file per subcommand. Every command exits non-zero
//! with one clear line on failure; secrets never travel as arguments.

mod account;
mod backup;
mod check;
mod common;
mod evidence;
mod health;
mod household;
mod log_line;
mod log_writer;
mod member;
mod name;
mod output;
mod password;
mod portable;
mod progress;
mod serve;
mod setup;
mod token;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::{LogFormat, ServeArgs};

#[derive(Debug, Parser)]
#[command(
    name = "pillbox",
    version,
    about = "Self-hosted household medication tracker"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the API
    Serve(Box<ServeArgs>),
    /// Create a household, its owner account and the owner's own person (password from stdin or a prompt)
    Setup(setup::SetupArgs),
    /// Help a locked-out account: set its password, or remove its second factor
    #[command(subcommand)]
    Account(account::AccountCommand),
    /// Manage household members
    #[command(subcommand)]
    Member(member::MemberCommand),
    /// Manage household app tokens
    #[command(subcommand)]
    Token(token::TokenCommand),
    /// List the households on this server
    #[command(subcommand)]
    Household(household::HouseholdCommand),
    /// Check the database read-only (integrity, foreign keys, schema version, sizes, row counts); safe while serving
    Check(check::CheckArgs),
    /// Interaction evidence for medication review prompts
    #[command(subcommand)]
    Evidence(evidence::EvidenceCommand),
    /// Print the version of this binary and the database schema it writes
    Version,
    /// Exit 0 when the server on this machine answers (the container health check)
    Health(health::HealthArgs),
    /// Write a consistent, checked copy of the whole database (safe while serving)
    Backup(backup::BackupArgs),
    /// Replace the database with a backup (the server must be stopped; the replaced database is kept beside it)
    Restore(backup::RestoreArgs),
    /// Write a household's encrypted portable bundle (passphrase from stdin or a prompt)
    Export(portable::ExportArgs),
    /// Import an encrypted portable bundle into a household (passphrase from stdin or a prompt)
    Import(portable::ImportArgs),
}

pub fn run(cli: Cli) -> ExitCode {
    let (log_format, default_level) = match &cli.command {
        Command::Serve(args) => (args.log_format, "info"),
        _ => (LogFormat::Text, "warn"),
    };
    let serving = matches!(cli.command, Command::Serve(_));
    if serving {
        crate::memory::start_again_with_allocator_settings();
    }
    let log = init_tracing(log_format, default_level, serving);
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    if let Command::Serve(args) = &cli.command {
        // Under a burst every waiting read would otherwise get a thread of
        // its own (up to 512), and the memory they take is not given back.
        builder.max_blocking_threads(args.blocking_threads as usize);
    }
    let runtime = match builder.build() {
        Ok(rt) => rt,
        Err(e) => return fail(format!("cannot start the async runtime: {e}")),
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Serve(args) => serve::run(*args).await,
            Command::Setup(args) => setup::run(args).await,
            Command::Account(command) => account::run(command).await,
            Command::Member(command) => member::run(command).await,
            Command::Token(command) => token::run(command).await,
            Command::Household(command) => household::run(command).await,
            Command::Check(args) => check::run(args).await,
            Command::Evidence(command) => evidence::run(command).await,
            Command::Health(args) => health::run(args),
            Command::Backup(args) => backup::backup(args).await,
            Command::Restore(args) => backup::restore(args).await,
            Command::Export(args) => portable::export(args).await,
            Command::Import(args) => portable::import(args).await,
            Command::Version => {
                println!(
                    "pillbox {} (database schema {})",
                    env!("CARGO_PKG_VERSION"),
                    crate::db::SCHEMA_VERSION
                );
                Ok(())
            }
        }
    });
    // The server's last lines are written before its exit status.
    drop(log);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => fail(message),
    }
}

fn fail(message: String) -> ExitCode {
    eprintln!("pillbox: error: {message}");
    ExitCode::FAILURE
}

/// Logging to stderr; the server's lines through a log thread of their own
/// (`log_writer`), whose guard writes out what is queued when dropped.
fn init_tracing(
    format: LogFormat,
    default_level: &str,
    serving: bool,
) -> Option<log_writer::LogGuard> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    // Colour only on a terminal: journald and log files get plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi);
    let background = serving.then(log_writer::start).and_then(Result::ok);
    let Some((writer, guard)) = background else {
        let builder = builder.with_writer(std::io::stderr);
        let _ = match format {
            LogFormat::Text => builder.try_init(),
            LogFormat::Json => builder.json().try_init(),
        };
        return None;
    };
    let builder = builder.with_writer(writer);
    let _ = match format {
        LogFormat::Text if !ansi => builder.event_format(log_line::TextLine).try_init(),
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    Some(guard)
}
