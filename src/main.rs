use clap::Parser;

// mimalloc: fewer futex round trips than glibc's malloc under many threads,
// and it hands freed pages back to the system after a burst instead of
// keeping them in per-thread arenas (see README, Performance).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let cli = pillbox::cli::Cli::parse();
    pillbox::cli::run(cli)
}
