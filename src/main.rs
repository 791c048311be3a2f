#![forbid(unsafe_code)]

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = pillbox::cli::Cli::parse();
    pillbox::cli::run(cli)
}
