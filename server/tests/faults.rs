//! Services failing under racelab: PostgreSQL restarted, Redis restarted, the broker stopped and
//! started again, in the middle of a run.
//! The run in flight ends with an error that names the service; meanwhile the health check says
//! what is down and a new run is refused with the reason; once the service is back, the run's
//! sandbox is cleaned and the next run is right, with no restart of racelab.
//!
//! The services that fail are private ones this test starts (`racelab::embedded`), so nothing
//! else on the machine notices.

#![allow(clippy::too_many_lines, reason = "a test reads top to bottom as the story it checks")]

mod common;

use racelab::engine::{Engine, RunHandle, StartError};
use shared::{EventKind, Mode, Outcome, ServerMsg};
use sqlx::{Connection, PgConnection};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A directory of this test's own for a private service, readable by the `postgres` user
/// (PostgreSQL refuses to run as root).
fn instance(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("racelab-faults-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("an instance directory");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("its permissions");
    dir
}

/// Reads a run's updates until its first pause in step mode; returns its run id.
async fn until_paused(handle: &mut RunHandle) -> String {
    until_event(handle, |kind| matches!(kind, EventKind::Paused { .. })).await
}

/// Steps a paused run until it ends; returns how it ended and its error events.
async fn step_to_the_end(handle: &mut RunHandle) -> (Outcome, Vec<String>) {
    handle.next();
    until_done(handle, Duration::from_secs(60)).await
}

/// What is left of run `run_id` in the database at `url`: its sandbox's schemas and registry row.
async fn left_in(url: &str, run_id: &str) -> (i64, i64) {
    let mut conn = PgConnection::connect(url).await.expect("PostgreSQL");
    let left = sqlx::query_as(
        "SELECT (SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'run\\_' || $1 || '%'),
                (SELECT count(*) FROM sandboxes WHERE run_id = $1)",
    )
    .bind(common::named(run_id))
    .fetch_one(&mut conn)
    .await
    .expect("leftovers");
    let _ = conn.close().await;
    left
}

async fn until_gone(url: &str, run_id: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let left = left_in(url, run_id).await;
        if left == (0, 0) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "run {run_id}'s sandbox still there a minute after its service came back: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The services `lab` needs that the catalog says are down.
async fn down_in_catalog(address: std::net::SocketAddr, lab: &str) -> Vec<String> {
    let (status, _, body) = common::get(address, "/api/labs").await;
    assert_eq!(status, 200, "the catalog answers while a service is down: {body}");
    let labs: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let lab = labs
        .as_array()
        .and_then(|labs| labs.iter().find(|l| l["id"] == lab))
        .unwrap_or_else(|| panic!("no lab {lab} in {body}"));
    lab["down"]
        .as_array()
        .expect("down")
        .iter()
        .map(|s| s.as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn plays_right(engine: &Arc<Engine>) {
    let again = common::play(engine, "isolation/write-skew", "serializable").await;
    assert_eq!(again.outcome, Outcome::Completed);
    assert_eq!(again.transcript(), common::lines(common::WRITE_SKEW_SERIALIZABLE));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_restarted_mid_run() {
    let bin = racelab::embedded::postgres::find_binaries().expect("PostgreSQL's binaries (initdb, postgres)");
    let dir = instance("postgres");
    let postgres = racelab::embedded::postgres::start(&bin, &dir)
        .await
        .expect("a private PostgreSQL");
    let url = postgres.url();
    let mut config = common::config();
    config.database_url = url.clone();
    let engine = Arc::new(racelab::db::connect_engine(&config).await.expect("the engine"));
    let write_skew = racelab::labs::find("isolation/write-skew").expect("write skew");

    // A stepped run, paused with its sessions open and its sandbox made.
    let mut run = engine
        .start(write_skew, "serializable", Mode::Step)
        .await
        .expect("started");
    let run_id = until_paused(&mut run).await;
    assert_eq!(left_in(&url, &run_id).await, (1, 1));

    // PostgreSQL stops under it.
    let address = common::serve_engine(engine.clone(), config.clone(), std::path::Path::new("no-such-dist")).await;
    let stopped = postgres.stop_keeping_data().await;
    let (status, _, healthz) = common::get(address, "/healthz").await;
    assert_eq!(status, 503, "{healthz}");
    let healthz: serde_json::Value = serde_json::from_str(&healthz).expect("JSON");
    assert_eq!(healthz["postgres"]["up"], false, "{healthz}");
    assert!(
        down_in_catalog(address, "isolation")
            .await
            .contains(&"postgres".to_owned())
    );
    match engine.start(write_skew, "serializable", Mode::Auto).await {
        Err(StartError::ServiceDown { service, .. }) => assert_eq!(service, "PostgreSQL"),
        Err(other) => panic!("refused, but not for PostgreSQL: {other}"),
        Ok(_) => panic!("a run started while PostgreSQL was down"),
    }
    let (outcome, errors) = step_to_the_end(&mut run).await;
    let Outcome::Failed { message } = outcome else {
        panic!("the run in flight did not fail: {outcome:?}");
    };
    assert!(
        message.contains("PostgreSQL"),
        "the failure names PostgreSQL: {message}"
    );
    println!("the run in flight: {message}");
    assert!(!errors.is_empty(), "the timeline shows the error where it happened");

    // It comes back: the sandbox goes, and the next run is right, with the same engine.
    let postgres = stopped.start(&bin).await.expect("PostgreSQL again");
    until_gone(&url, &run_id).await;
    assert_eq!(common::get(address, "/healthz").await.0, 200);
    assert!(down_in_catalog(address, "isolation").await.is_empty());
    plays_right(&engine).await;

    engine.close(Duration::from_secs(5), Duration::from_secs(5)).await;
    postgres.process.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restarted_mid_run() {
    let _slot = common::db_slot().await;
    let dir = instance("redis");
    let (redis, port) = racelab::embedded::redis::start(&dir).await.expect("a private Redis");
    let mut config = common::config();
    config.redis_url = format!("redis://127.0.0.1:{port}");
    let engine = Arc::new(racelab::db::connect_engine(&config).await.expect("the engine"));
    let double_tap = racelab::labs::find("locks/double-tap").expect("double tap");
    let variant = double_tap.variants[0].0;

    let mut run = engine.start(double_tap, variant, Mode::Step).await.expect("started");
    let run_id = until_paused(&mut run).await;

    // Redis stops under it (and comes back empty, as a Redis that keeps nothing on disk does).
    let address = common::serve_engine(engine.clone(), config.clone(), std::path::Path::new("no-such-dist")).await;
    redis.stop().await;
    let (status, _, healthz) = common::get(address, "/healthz").await;
    assert_eq!(status, 200, "degraded, not down: {healthz}");
    let healthz: serde_json::Value = serde_json::from_str(&healthz).expect("JSON");
    assert_eq!(
        (&healthz["redis"]["up"], &healthz["postgres"]["up"]),
        (&false.into(), &true.into()),
        "{healthz}"
    );
    assert_eq!(down_in_catalog(address, "locks").await, ["redis"]);
    assert!(down_in_catalog(address, "isolation").await.is_empty());
    match engine.start(double_tap, variant, Mode::Auto).await {
        Err(StartError::ServiceDown { service, .. }) => assert_eq!(service, "Redis"),
        Err(other) => panic!("refused, but not for Redis: {other}"),
        Ok(_) => panic!("a run started while Redis was down"),
    }
    // The isolation lab needs no Redis: it plays on meanwhile.
    plays_right(&engine).await;
    let (outcome, _) = step_to_the_end(&mut run).await;
    let Outcome::Failed { message } = outcome else {
        panic!("the run in flight did not fail: {outcome:?}");
    };
    assert!(message.contains("Redis"), "the failure names Redis: {message}");
    println!("the run in flight: {message}");

    let redis = racelab::embedded::redis::start_on(&dir, port)
        .await
        .expect("Redis again");
    assert!(down_in_catalog(address, "locks").await.is_empty());
    assert_eq!(
        common::wait_until_clean(&run_id).await,
        common::Leftovers::NONE,
        "the sandbox goes once Redis is back"
    );
    let again = common::play(&engine, "locks/double-tap", variant).await;
    assert_eq!(again.outcome, Outcome::Completed);
    assert_eq!(
        again.transcript().last().map(String::as_str),
        Some("accepted=2 balance=90 expected=80 BROKEN")
    );

    engine.close(Duration::from_secs(5), Duration::from_secs(5)).await;
    redis.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Reads a run's updates until an event `seen` matches; returns the run id.
async fn until_event(handle: &mut RunHandle, seen: impl Fn(&EventKind) -> bool) -> String {
    let mut run_id = None;
    loop {
        match tokio::time::timeout(Duration::from_secs(60), handle.updates.recv())
            .await
            .expect("an update in time")
            .expect("the run goes on")
        {
            ServerMsg::Started { run_id: id } => run_id = Some(id),
            ServerMsg::Event { event } if seen(&event.kind) => return run_id.expect("started first"),
            ServerMsg::Done { outcome, .. } => panic!("ended before the moment awaited: {outcome:?}"),
            _ => {}
        }
    }
}

/// Reads a run's updates until it ends (within `within`), stepping it on whenever it pauses;
/// returns how it ended, and its error events as `actor: message`.
async fn until_done(handle: &mut RunHandle, within: Duration) -> (Outcome, Vec<String>) {
    let mut errors = Vec::new();
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, handle.updates.recv())
            .await
            .expect("the run ended in time")
        {
            Some(ServerMsg::Event { event }) => match event.kind {
                EventKind::Paused { .. } => handle.next(),
                EventKind::Error { actor, message, .. } => errors.push(format!("{actor}: {message}")),
                _ => {}
            },
            Some(ServerMsg::Done { outcome, .. }) => return (outcome, errors),
            Some(_) => {}
            None => panic!("the run's updates ended without done"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_stopped_mid_run() {
    let _slot = common::db_slots(2).await;
    let bin = racelab::embedded::broker::find().expect("the test broker (scripts/broker.sh install)");
    let dir = instance("broker");
    let (broker, port) = racelab::embedded::broker::start(&bin, &dir)
        .await
        .expect("a private broker");
    let brokers = format!("127.0.0.1:{port}");
    let mut config = common::config();
    config.kafka_brokers = brokers.clone();
    let engine = Arc::new(racelab::db::connect_engine(&config).await.expect("the engine"));
    let two_relays = racelab::labs::find("outbox/two-relays").expect("two relays");

    // Relay A holds its batch (and the advisory lock), relay B waits, the notifier listens.
    let mut run = engine
        .start(two_relays, "advisory-lock", Mode::Auto)
        .await
        .expect("started");
    let began = tokio::time::Instant::now();
    let run_id = until_event(
        &mut run,
        |kind| matches!(kind, EventKind::Note { actor, .. } if actor == "relay A"),
    )
    .await;
    let names = common::broker_names_by_run_at(brokers.clone(), std::slice::from_ref(&run_id)).await;
    assert_eq!(
        names.get(&run_id).map(|(topics, _)| topics.len()),
        Some(1),
        "the run's topic: {names:?}"
    );

    // The broker stops under it.
    let address = common::serve_engine(engine.clone(), config.clone(), std::path::Path::new("no-such-dist")).await;
    broker.stop().await;
    let stopped = tokio::time::Instant::now();
    let (status, _, healthz) = common::get(address, "/healthz").await;
    assert_eq!(status, 200, "degraded, not down: {healthz}");
    let healthz: serde_json::Value = serde_json::from_str(&healthz).expect("JSON");
    assert_eq!(
        (&healthz["kafka"]["up"], &healthz["postgres"]["up"]),
        (&false.into(), &true.into()),
        "{healthz}"
    );
    assert_eq!(down_in_catalog(address, "outbox").await, ["kafka"]);
    assert!(down_in_catalog(address, "isolation").await.is_empty());
    match engine.start(two_relays, "advisory-lock", Mode::Auto).await {
        Err(StartError::ServiceDown { service, .. }) => assert_eq!(service, "Kafka"),
        Err(other) => panic!("refused, but not for the broker: {other}"),
        Ok(_) => panic!("a run started while the broker was down"),
    }
    plays_right(&engine).await;

    // The run in flight ends soon, saying why, with the broker's error on the timeline: not
    // after librdkafka's 30 s message timeout, nor the 14 s the whole run takes.
    let (outcome, errors) = until_done(&mut run, Duration::from_secs(20)).await;
    let Outcome::Failed { message } = outcome else {
        panic!("the run in flight did not fail: {outcome:?}");
    };
    println!(
        "the run in flight, {:?} after the broker stopped ({:?} into the run): {message}",
        stopped.elapsed(),
        began.elapsed()
    );
    assert!(
        message.starts_with("Kafka stopped answering during this run"),
        "{message}"
    );
    assert!(
        errors.iter().any(|e| e.starts_with("Kafka: stopped answering")),
        "the timeline shows the broker's error: {errors:?}"
    );
    assert!(
        stopped.elapsed() < Duration::from_secs(10),
        "ended {:?} after the broker stopped",
        stopped.elapsed()
    );
    // Its processes and schemas are gone at once; its registry row stays until its topic and
    // group are gone too.
    assert_eq!(left_in(&config.database_url, &run_id).await, (0, 1));
    assert_eq!(common::processes_of(&run_id), 0);

    // The broker comes back with its data: the run's topic and group go, and the next run is
    // right, with the same engine.
    let broker = racelab::embedded::broker::start_on(&bin, &dir, port)
        .await
        .expect("the broker again");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let left = common::broker_names_by_run_at(brokers.clone(), std::slice::from_ref(&run_id)).await;
        if left.is_empty() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the run's topic and group still there a minute after the broker came back: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    until_gone(&config.database_url, &run_id).await;
    assert!(down_in_catalog(address, "outbox").await.is_empty());
    let again = common::play(&engine, "outbox/dual-write", "publish-first").await;
    assert_eq!(again.outcome, Outcome::Completed);
    assert_eq!(
        again.transcript().last().map(String::as_str),
        Some("Processed a total of 1 messages")
    );

    engine.close(Duration::from_secs(5), Duration::from_secs(5)).await;
    broker.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}
