//! Two racelab replicas on one PostgreSQL share its run connections: admission takes a lease on
//! one budget in the database itself (`engine/leases.rs`), so together they never hold more run
//! sessions than that budget, however many readers press Run on each.
//!
//! The two play in a database of their own (`racelab_replicas`, dropped at the end), so the
//! sessions counted are theirs alone, whatever else runs on the server meanwhile. Both keep
//! finished runs' sessions for their next runs (`engine::kept`), as served: kept sessions are
//! counted too, and must fit in the same budget.

#![allow(clippy::too_many_lines, reason = "a test reads top to bottom as the story it checks")]

mod common;

use common::{WRITE_SKEW_SERIALIZABLE, lines, play};
use shared::Outcome;
use sqlx::Connection;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

/// A write-skew run holds three sessions: alice's, bob's and its monitor's.
const BUDGET: u32 = 6;
const RUNS_PER_REPLICA: usize = 16;
const DATABASE: &str = "racelab_replicas";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_never_hold_more_run_sessions_than_their_shared_budget() {
    let mut config = common::config();
    config.run_connections = Some(BUDGET);
    config.keep_sessions = true;
    let base = config.database_url.split('?').next().unwrap_or_default();
    let server = base[..base.rfind('/').expect("a database URL")].to_owned();
    config.database_url = format!("{server}/{DATABASE}");
    let connect = || async {
        Arc::new(
            racelab::db::connect_engine(&config)
                .await
                .expect("racelab needs PostgreSQL at DATABASE_URL"),
        )
    };
    let (first, second) = (connect().await, connect().await);

    // Counts the run sessions on the server as fast as it can, for as long as the runs play.
    let (most, playing) = (Arc::new(AtomicI64::new(0)), Arc::new(AtomicBool::new(true)));
    let watcher = {
        let (most, playing) = (most.clone(), playing.clone());
        let url = config.database_url.clone();
        tokio::spawn(async move {
            let mut conn = sqlx::PgConnection::connect(&url).await.expect("PostgreSQL");
            let mut samples = 0u64;
            while playing.load(Ordering::SeqCst) {
                let now: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM pg_stat_activity
                     WHERE datname = $1
                       AND (application_name LIKE 'racelab/%/%' OR application_name = 'racelab/kept')",
                )
                .bind(DATABASE)
                .fetch_one(&mut conn)
                .await
                .expect("a count");
                most.fetch_max(now, Ordering::SeqCst);
                samples += 1;
            }
            samples
        })
    };

    let runs = futures_util::future::join_all((0..2 * RUNS_PER_REPLICA).map(|i| {
        let engine = if i % 2 == 0 { first.clone() } else { second.clone() };
        async move { play(&engine, "isolation/write-skew", "serializable").await }
    }))
    .await;
    playing.store(false, Ordering::SeqCst);
    let samples = watcher.await.expect("the watcher");

    for run in &runs {
        assert_eq!(run.outcome, Outcome::Completed, "run {}", run.run_id);
        assert_eq!(run.transcript(), lines(WRITE_SKEW_SERIALIZABLE), "run {}", run.run_id);
    }
    let most = most.load(Ordering::SeqCst);
    assert!(
        samples > 100,
        "the sessions were counted often enough ({samples} times)"
    );
    assert!(
        most <= i64::from(BUDGET),
        "{most} run sessions at once on two replicas sharing a budget of {BUDGET}"
    );
    assert!(
        most > 3,
        "two runs played at once somewhere (at most {most} sessions seen): the budget was used"
    );
    // Nothing left (kept sessions close with their engines), then the database goes.
    for engine in [first, second] {
        assert_eq!(engine.close(Duration::from_secs(5), Duration::from_secs(5)).await, 0);
    }
    let mut conn = sqlx::PgConnection::connect(&config.database_url)
        .await
        .expect("PostgreSQL");
    let left: (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'run\\_%'),
                (SELECT count(*) FROM sandboxes),
                (SELECT count(*) FROM connection_leases)",
    )
    .fetch_one(&mut conn)
    .await
    .expect("leftovers");
    assert_eq!(left, (0, 0, 0), "schemas, sandboxes and leases left");
    // A closed session's backend ends a moment after its client said goodbye.
    common::until_no_kept_sessions(&mut conn).await;
    conn.close().await.expect("closed");
    let mut admin = sqlx::PgConnection::connect(&format!("{server}/postgres"))
        .await
        .expect("PostgreSQL");
    sqlx::query(&format!("DROP DATABASE {DATABASE} WITH (FORCE)"))
        .execute(&mut admin)
        .await
        .expect("the test's database dropped");
}
