//! What a run's sandbox on MariaDB costs: `MariaSandbox::open` then `close` (a database, a user
//! with its limits and its grant, the watchdog started; then the run's sessions ended, the user
//! and the database dropped), beside a bare program that makes and drops the same database and
//! user on one connection it keeps, measured side by side in one run. Whether MariaDB's
//! sandboxes need a pool of ready ones, as PostgreSQL's spec databases do (a copy of a template,
//! and a drop that waits for a checkpoint: 1.2 to 1.8 s), is this figure's to say
//! (docs/mariadb.md).
//!
//! `cargo bench --bench mariadb_sandbox [N]` (N: rounds, default 20), against `MARIADB_URL`.
//! Interleaved (racelab, bare, racelab, …) after one untimed round of each.

use racelab::sandbox::mariadb::{Bounds, MariaSandbox};
use sqlx::mysql::MySqlConnection;
use sqlx::{Connection, Executor};
use std::time::{Duration, Instant};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const ROUNDS: usize = 20;

async fn racelab(url: &str) -> Result<Duration, BoxError> {
    let started = Instant::now();
    let sandbox = MariaSandbox::open(url, Bounds::default()).await?;
    let mut session = sandbox.connect().await?;
    session
        .execute("CREATE TABLE accounts (name VARCHAR(20) PRIMARY KEY, balance INT)")
        .await?;
    drop(session);
    sandbox.close().await;
    Ok(started.elapsed())
}

async fn bare(admin: &mut MySqlConnection, url: &str, round: usize) -> Result<Duration, BoxError> {
    let started = Instant::now();
    let name = format!("bench_bare_{round}");
    admin.execute(format!("CREATE DATABASE `{name}`").as_str()).await?;
    admin
        .execute(format!("CREATE USER '{name}'@'%' IDENTIFIED BY 'x'").as_str())
        .await?;
    admin
        .execute(format!("GRANT ALL ON `{name}`.* TO '{name}'@'%'").as_str())
        .await?;
    let host = url.rsplit('@').next().unwrap_or("127.0.0.1:3306");
    let mut session = MySqlConnection::connect(&format!("mysql://{name}:x@{host}/{name}")).await?;
    session
        .execute("CREATE TABLE accounts (name VARCHAR(20) PRIMARY KEY, balance INT)")
        .await?;
    session.close().await?;
    admin.execute(format!("DROP USER '{name}'@'%'").as_str()).await?;
    admin.execute(format!("DROP DATABASE `{name}`").as_str()).await?;
    Ok(started.elapsed())
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let rounds: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(ROUNDS);
    let url = std::env::var("MARIADB_URL").unwrap_or_else(|_| racelab::config::DEFAULT_MARIADB_URL.to_owned());
    let mut admin = MySqlConnection::connect(&url).await?;
    racelab(&url).await?;
    bare(&mut admin, &url, 0).await?;
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        ours.push(racelab(&url).await?);
        theirs.push(bare(&mut admin, &url, round).await?);
    }
    let (ours, theirs) = (median(ours), median(theirs));
    println!("a run's sandbox on MariaDB, made, used by one session and removed ({rounds} rounds, medians):");
    println!("  racelab (MariaSandbox::open, connect, close): {ours:?}");
    println!("  bare (the same DDL on one kept connection):   {theirs:?}");
    println!("  ratio: {:.2}×", ours.as_secs_f64() / theirs.as_secs_f64());
    Ok(())
}
