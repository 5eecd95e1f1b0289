//! The `racelab` binary: see [`racelab::cli`].

use clap::Parser;
use std::io::IsTerminal;
use std::process::ExitCode;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> ExitCode {
    // Logs go to stderr, so `racelab run` keeps stdout for the transcript alone. sqlx's own
    // slow-statement warnings are off by default: in racelab a slow statement is usually a lock
    // wait, which is the lesson, not a problem.
    let filter = EnvFilter::try_from_env("RACELAB_LOG").unwrap_or_else(|_| EnvFilter::new("info,sqlx=error"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours for a terminal only: a log file or a test reading stderr gets plain text.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    racelab::cli::Cli::parse().execute().await
}
