//! The command line: one file per subcommand. Every command exits non-zero
//! with one clear line on failure; secrets never travel as arguments.

mod member;
mod password;
mod serve;
mod setup;
mod token;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::{DataDirArgs, LogFormat, ServeArgs};
use crate::db::Db;

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
    Serve(ServeArgs),
    /// Create a household and its owner account (password from stdin or a prompt)
    Setup(setup::SetupArgs),
    /// Manage household members
    #[command(subcommand)]
    Member(member::MemberCommand),
    /// Manage household app tokens
    #[command(subcommand)]
    Token(token::TokenCommand),
}

/// A failed command: its one line for the operator.
pub type CliResult<T = ()> = Result<T, String>;

pub fn run(cli: Cli) -> ExitCode {
    let (log_format, default_level) = match &cli.command {
        Command::Serve(args) => (args.log_format, "info"),
        _ => (LogFormat::Text, "warn"),
    };
    init_tracing(log_format, default_level);
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
            Command::Serve(args) => serve::run(args).await,
            Command::Setup(args) => setup::run(args).await,
            Command::Member(command) => member::run(command).await,
            Command::Token(command) => token::run(command).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => fail(message),
    }
}

fn fail(message: String) -> ExitCode {
    eprintln!("pillbox: error: {message}");
    ExitCode::FAILURE
}

fn init_tracing(format: LogFormat, default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    // Colour only on a terminal: journald and log files get plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// Opens the database off the async threads.
async fn open_db(data: &DataDirArgs) -> CliResult<Db> {
    let dir = data.data_dir.clone();
    tokio::task::spawn_blocking(move || Db::open(&dir))
        .await
        .map_err(|e| format!("cannot open the database: {e}"))?
        .map_err(|e| e.to_string())
}
