//! What the engine costs on MariaDB: one write skew at REPEATABLE READ (`mariadb-repeatable-read`:
//! both managers check, both insert, both commit) through racelab's engine, beside a bare sqlx
//! program that sends MariaDB the same statements, measured side by side in one run.
//!
//! `cargo bench --bench mariadb_lab [N]` (N: runs per side, default 20), against `MARIADB_URL`
//! and racelab's PostgreSQL (the engine's store).
//!
//! Measured, for each side, from the first thing it asks of a database to the last:
//! - **engine**: `Engine::start` until `ServerMsg::Done`: admission, the run's sandboxes (on
//!   MariaDB a database and a user of its own with its tables, made ahead of demand as `racelab
//!   serve` makes them; the PostgreSQL one every run holds, from its shelf), one session per
//!   actor, every step's events, the ledger before and after, the verdict, storing the run.
//!   Its MariaDB sandbox is reset for the next run on the shelf's own task after `Done`, as the
//!   shelves refill between runs: untimed, as a reader does not wait for it.
//! - **bare**: a database `bench_lab_<n>` made with the lab's tables and seed on one kept
//!   connection, one connection per actor, the same statements in the same order, the
//!   connections closed and the database dropped. Nothing else: no user, no events, no
//!   snapshots, no store.
//!
//! Interleaved (engine, bare, engine, …) after one untimed pair, so whatever drifts lands on
//! both sides alike.

use racelab::config::Config;
use racelab::labs::isolation::TEAM;
use racelab::labs::isolation::mariadb::{SCHEMA, insert_for, select_approved, select_budget};
use shared::{Mode, Outcome, ServerMsg};
use sqlx::mysql::MySqlConnection;
use sqlx::{Connection, Executor};
use std::sync::Arc;
use std::time::{Duration, Instant};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const RUNS: usize = 20;
const VARIANT: &str = "mariadb-repeatable-read";
/// Sandboxes made ahead, as `racelab serve` makes by default.
const WARM: usize = 2;

/// One run through the engine, `Start` to `Done`.
async fn engine_run(engine: &Arc<racelab::engine::Engine>) -> Result<Duration, BoxError> {
    let def = racelab::labs::find("isolation/write-skew").ok_or("no write skew in the catalog")?;
    let started = Instant::now();
    let mut handle = engine.start(def, VARIANT, Mode::Auto).await?;
    loop {
        match tokio::time::timeout(Duration::from_secs(60), handle.updates.recv()).await? {
            Some(ServerMsg::Done { outcome, .. }) => {
                return match outcome {
                    Outcome::Completed => Ok(started.elapsed()),
                    other => Err(format!("the run did not complete: {other:?}").into()),
                };
            }
            Some(_) => {}
            None => return Err("the run closed without Done".into()),
        }
    }
}

/// The same race, bare: its own database, two sessions, the same statements.
async fn bare_run(admin: &mut MySqlConnection, url: &str, n: usize) -> Result<Duration, BoxError> {
    let started = Instant::now();
    let name = format!("bench_lab_{n}");
    admin.execute(format!("CREATE DATABASE `{name}`").as_str()).await?;
    let raced = async {
        let mut setup = MySqlConnection::connect(&format!("{url}/{name}")).await?;
        sqlx::raw_sql(SCHEMA).execute(&mut setup).await?;
        setup.close().await?;
        let mut alice = MySqlConnection::connect(&format!("{url}/{name}")).await?;
        let mut bob = MySqlConnection::connect(&format!("{url}/{name}")).await?;
        for who in [&mut alice, &mut bob] {
            who.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                .await?;
            who.execute("START TRANSACTION").await?;
            who.execute(select_budget(TEAM).as_str()).await?;
            who.execute(select_approved(TEAM).as_str()).await?;
        }
        alice.execute(insert_for("alice", TEAM).as_str()).await?;
        bob.execute(insert_for("bob", TEAM).as_str()).await?;
        alice.execute("COMMIT").await?;
        bob.execute("COMMIT").await?;
        alice.close().await?;
        bob.close().await?;
        Ok::<_, BoxError>(())
    }
    .await;
    admin.execute(format!("DROP DATABASE `{name}`").as_str()).await?;
    raced?;
    Ok(started.elapsed())
}

/// Waits (untimed) until the engine's MariaDB shelf holds `want` ready sandboxes: the shelf
/// refills after each run, as between one reader's runs, and neither side is timed while it does.
async fn until_shelf_full(engine: &racelab::engine::Engine, want: usize) -> Result<(), BoxError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while engine.ready_on_mariadb().0 < want {
        if Instant::now() > deadline {
            return Err("the MariaDB shelf did not fill in 30 s".into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let runs: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(RUNS);
    let mut config = Config::from_env()?;
    config.warm_sandboxes = WARM;
    let engine = Arc::new(racelab::db::connect_engine(&config).await?);
    let url = config.mariadb_url.trim_end_matches('/').to_owned();
    let mut admin = MySqlConnection::connect(&url).await?;
    for n in 0..=runs {
        admin
            .execute(format!("DROP DATABASE IF EXISTS `bench_lab_{n}`").as_str())
            .await?;
    }
    engine_run(&engine).await?;
    bare_run(&mut admin, &url, 0).await?;
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for n in 1..=runs {
        until_shelf_full(&engine, WARM).await?;
        ours.push(engine_run(&engine).await?);
        until_shelf_full(&engine, WARM).await?;
        theirs.push(bare_run(&mut admin, &url, n).await?);
    }
    let (_, taken, reused) = engine.ready_on_mariadb();
    engine.close(Duration::from_secs(5), Duration::from_secs(5)).await;
    if taken < runs {
        return Err(format!("only {taken} of {runs} runs took a ready sandbox").into());
    }
    println!("  ({taken} runs took a ready sandbox; {reused} sandboxes reset and reused)");
    let (ours, theirs) = (median(ours), median(theirs));
    println!("write skew on MariaDB ({VARIANT}), {runs} runs per side, interleaved, medians:");
    println!("  engine (Start → Done, sandbox and events included): {ours:?}");
    println!("  bare sqlx (the same statements, a database of its own):  {theirs:?}");
    println!("  engine / bare: {:.2}×", ours.as_secs_f64() / theirs.as_secs_f64());
    Ok(())
}
