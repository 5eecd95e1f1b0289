//! What every integration test shares: an engine on the real PostgreSQL, a server on port 0, a
//! way to play a run to its end, and the leak checks.
#![allow(dead_code)]

pub mod every_service;
pub mod load_test;
pub mod mariadb;
pub mod socket;
pub mod spec_runs;
pub mod versions;

use racelab::config::Config;
use racelab::engine::Engine;
use racelab::web::{self, AppState};
use shared::json::FromJson;
use shared::{Event, EventKind, Ledger, Mode, Moment, Outcome, ServerFrame, ServerMsg, Value};
use sqlx::{Connection, PgConnection};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, SemaphorePermit};

/// Tests in one binary run in parallel, each with its own engine; this keeps them, together,
/// well inside PostgreSQL's max_connections.
static DB_SLOTS: Semaphore = Semaphore::const_new(6);

pub async fn db_slot() -> SemaphorePermit<'static> {
    DB_SLOTS.acquire().await.expect("the test semaphore is never closed")
}

/// `n` slots at once, for a test whose run holds many connections (a load test with a pool of
/// thirty), so that few others run beside it.
pub async fn db_slots(n: u32) -> SemaphorePermit<'static> {
    DB_SLOTS
        .acquire_many(n)
        .await
        .expect("the test semaphore is never closed")
}

/// Waits (at most 20 s) until `engine` has `count` sandboxes on its shelves, and returns them.
pub async fn until_on_shelves(engine: &Arc<Engine>, count: usize) -> Vec<racelab::engine::warm::ReadySandbox> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let ready = engine.ready_sandboxes();
        if ready.len() == count {
            return ready;
        }
        assert!(tokio::time::Instant::now() < deadline, "{ready:?} ready, not {count}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The ready sandbox made for run `run_id`, if it is on a shelf.
pub fn on_shelf(ready: &[racelab::engine::warm::ReadySandbox], run_id: &str) -> Option<u32> {
    ready.iter().find(|r| r.run_id == run_id).map(|r| r.runs)
}

/// The configuration tests run with: the environment's, else the local defaults.
pub fn config() -> Config {
    let mut config = Config::from_env().expect("racelab's settings in the environment");
    // The tests are not the racelab binary: child-process actors start the real one.
    config.actor_binary = Some(env!("CARGO_BIN_EXE_racelab").into());
    // No sandbox made ahead: an engine a test drops without closing it would leave them behind
    // (`tests/engine.rs` tests the shelf with an engine it closes).
    config.warm_sandboxes = 0;
    // Nor sessions kept between runs, for the same reason: a dropped engine's would outlive its
    // test (`tests/engine.rs` and `tests/replicas.rs` keep them, with engines they close).
    config.keep_sessions = false;
    config
}

pub async fn engine() -> Arc<Engine> {
    Arc::new(
        racelab::db::connect_engine(&config())
            .await
            .expect("racelab needs PostgreSQL at DATABASE_URL"),
    )
}

/// Predict, then run: the choice run `variant` of `scenario` revealed, after checking that the
/// reveal comes right after the verdict and right before the end, that it is one of the choices
/// the catalog offers, and that a sentence says why. Each lab's test then checks the choice
/// against what the run did.
pub fn revealed(run: &Finished, scenario: &str, variant: &str) -> String {
    let def = racelab::labs::find(scenario).expect("the scenario");
    let prediction = racelab::engine::Scenario::info(def)
        .predict
        .unwrap_or_else(|| panic!("{scenario} asks for a prediction"));
    let kinds: Vec<&EventKind> = run.events.iter().map(|e| &e.kind).collect();
    let [.., verdict, reveal, done] = kinds.as_slice() else {
        panic!("{scenario} {variant}: too few events");
    };
    assert!(
        matches!(verdict, EventKind::Verdict { .. }),
        "{scenario} {variant}: {verdict:?}"
    );
    assert!(matches!(done, EventKind::Done { .. }), "{scenario} {variant}: {done:?}");
    let EventKind::Reveal { choice, why } = reveal else {
        panic!("{scenario} {variant}: no reveal before the end, {reveal:?}");
    };
    assert!(
        prediction.choices.iter().any(|c| &c.id == choice),
        "{scenario} {variant}: {choice} is offered"
    );
    assert!(why.len() > 40, "{scenario} {variant}: a sentence says why: {why:?}");
    choice.clone()
}

/// A finished run, as its client saw it.
pub struct Finished {
    pub run_id: String,
    pub events: Vec<Event>,
    pub outcome: Outcome,
}

impl Finished {
    pub fn transcript(&self) -> Vec<String> {
        shared::event::transcript(&self.events)
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    pub fn ledger(&self, moment: Moment) -> Ledger {
        self.events
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::Ledger { moment: m, ledger } if *m == moment => Some(ledger.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no {moment:?} ledger in the run"))
    }

    pub fn verdict(&self) -> shared::Verdict {
        self.events
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::Verdict { verdict } => Some(verdict.clone()),
                _ => None,
            })
            .expect("a verdict")
    }

    /// Rows of one table of the final ledger.
    pub fn rows_after(&self, table: &str) -> Vec<Vec<Value>> {
        self.ledger(Moment::After)
            .table(table)
            .unwrap_or_else(|| panic!("no table {table}"))
            .rows
            .clone()
    }
}

/// Plays `scenario`/`variant` to its end through the engine, as the CLI does.
pub async fn play(engine: &Arc<Engine>, scenario: &str, variant: &str) -> Finished {
    let def = racelab::labs::find(scenario).unwrap_or_else(|| panic!("no scenario {scenario}"));
    play_def(engine, def, variant).await
}

/// Plays `scenario`/`variant` on PostgreSQL `postgres` (a major version).
pub async fn play_on(engine: &Arc<Engine>, scenario: &str, variant: &str, postgres: u32) -> Finished {
    let def = racelab::labs::find(scenario).unwrap_or_else(|| panic!("no scenario {scenario}"));
    let handle = engine
        .start_on(def, variant, Mode::Auto, Some(postgres))
        .await
        .expect("a known variant and version");
    follow(handle).await
}

/// Plays a scenario that is not in the catalog (an engine test's own).
pub async fn play_def(engine: &Arc<Engine>, def: &'static racelab::labs::ScenarioDef, variant: &str) -> Finished {
    let handle = engine.start(def, variant, Mode::Auto).await.expect("a known variant");
    follow(handle).await
}

/// Follows a started run to its end.
pub async fn follow(mut handle: racelab::engine::RunHandle) -> Finished {
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let update = tokio::time::timeout_at(deadline, handle.updates.recv())
            .await
            .expect("the run ended in time");
        let update = update.expect("the run said done before closing");
        browser_reads_alike::<ServerFrame>(&serde_json::to_string(&ServerFrame::from(update.clone())).expect("JSON"));
        match update {
            ServerMsg::Event { event } => events.push(event),
            ServerMsg::Done { run_id, outcome } => {
                return Finished {
                    run_id,
                    events,
                    outcome,
                };
            }
            _ => {}
        }
    }
}

/// The browser app reads `text` (a frame or an answer the server wrote) exactly as serde does:
/// its hand-written reader (`shared::decode`) is held to serde on every frame of every lab's
/// tests, since `play` and the websocket client call this.
pub fn browser_reads_alike<T: serde::de::DeserializeOwned + FromJson + PartialEq + std::fmt::Debug>(text: &str) {
    let by_serde: T = serde_json::from_str(text).unwrap_or_else(|e| panic!("serde: {e}: {text}"));
    assert_eq!(
        shared::json::from_str::<T>(text),
        Ok(by_serde),
        "the browser's reading of {text}"
    );
}

/// The golden transcript of `isolation/write-skew serializable` (specs/isolation.md §4), used by
/// the scenario test and the fifty-concurrent-runs test.
pub const WRITE_SKEW_SERIALIZABLE: &str = "--- write skew, serializable ---
[alice] check: approved $0 + $3,000 <= $5,000? True
[bob] check: approved $0 + $3,000 <= $5,000? True
[alice] insert $3,000
[bob] insert $3,000
[alice] commit
[bob] COMMIT failed: SQLSTATE 40001: could not serialize access due to read/write dependencies among transactions
[bob] retry the whole transaction
[bob] check: approved $3,000 + $3,000 <= $5,000? False
[bob] rejected: over budget
approved 1 expense(s) totalling $3,000 on a $5,000 budget";

/// Lines as owned strings, for comparing transcripts.
pub fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_owned).collect()
}

/// Rows written compactly: `row!["design", 5000, 0]`.
#[macro_export]
macro_rules! row {
    ($($cell:expr),* $(,)?) => { vec![$(shared::Value::from($cell)),*] };
}

/// A connection for inspecting the database from outside racelab.
pub async fn inspector() -> PgConnection {
    PgConnection::connect(&config().database_url).await.expect("PostgreSQL")
}

/// What a run left behind, in every service: schemas, sessions, locks (advisory ones of its
/// lock space too), registry rows, Redis keys, broker topics and consumer groups, and its child
/// processes (`racelab actor …`) still running.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Leftovers {
    pub schemas: i64,
    pub sessions: i64,
    pub locks: i64,
    pub registry: i64,
    pub keys: i64,
    pub topics: i64,
    pub groups: i64,
    pub processes: i64,
}

impl Leftovers {
    pub const NONE: Leftovers = Leftovers {
        schemas: 0,
        sessions: 0,
        locks: 0,
        registry: 0,
        keys: 0,
        topics: 0,
        groups: 0,
        processes: 0,
    };
}

/// Processes started for run `run_id` that still run: those whose environment names the run
/// (`RACELAB_RUN=<id>`, as every child-process actor's does). Zombies are not running.
pub fn processes_of(run_id: &str) -> i64 {
    processes_by_run(&[run_id.to_owned()]).get(run_id).copied().unwrap_or(0)
}

/// [`processes_of`] for many runs at once: one look through `/proc`.
pub fn processes_by_run(run_ids: &[String]) -> BTreeMap<String, i64> {
    by_run_id(processes_of_every_run(), run_ids)
}

/// Every run's processes still running, by the id their sandbox is named by.
pub fn processes_of_every_run() -> BTreeMap<String, i64> {
    let mut found = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
    {
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        if status.lines().any(|l| l.starts_with("State:") && l.contains('Z')) {
            continue;
        }
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let run = environ
            .split(|b| *b == 0)
            .find_map(|var| var.strip_prefix(b"RACELAB_RUN="))
            .map(|id| String::from_utf8_lossy(id).into_owned());
        if let Some(run) = run {
            *found.entry(run).or_insert(0) += 1;
        }
    }
    found
}

/// The id run `run_id`'s sandbox is named by: its names never carry the run's own id. As this
/// process's engine remembers it; a run another process played (a `racelab` the test started)
/// is looked for under its own id, and the CI's count of every run's leftovers catches the rest.
pub fn named(run_id: &str) -> String {
    racelab::sandbox::sandbox_id_of(run_id).unwrap_or_else(|| run_id.to_owned())
}

/// `found`, keyed by sandbox ids, for the runs `run_ids` only, keyed by their run ids.
fn by_run_id<T>(found: BTreeMap<String, T>, run_ids: &[String]) -> BTreeMap<String, T> {
    let names: Vec<(String, &String)> = run_ids.iter().map(|r| (named(r), r)).collect();
    found
        .into_iter()
        .filter_map(|(sandbox, v)| {
            names
                .iter()
                .find(|(n, _)| *n == sandbox)
                .map(|(_, run)| ((*run).clone(), v))
        })
        .collect()
}

/// The PostgreSQL side of what a run left behind (spelled here, not borrowed from the code
/// under test).
pub async fn leftovers_in_postgres(conn: &mut PgConnection, run_id: &str) -> Leftovers {
    let mut by_run = leftovers_in_postgres_by_run(conn, &[run_id.to_owned()]).await;
    by_run.remove(run_id).unwrap_or(Leftovers::NONE)
}

/// [`leftovers_in_postgres`] for many runs at once (one query per kind of leftover); only runs
/// that left something are in the map.
pub async fn leftovers_in_postgres_by_run(conn: &mut PgConnection, run_ids: &[String]) -> BTreeMap<String, Leftovers> {
    // A run's lock space is the first 31 bits of its sandbox's id; its advisory locks carry it
    // as classid.
    let sandbox_ids: Vec<String> = run_ids.iter().map(|r| named(r)).collect();
    let spaces: Vec<i64> = sandbox_ids
        .iter()
        .map(|id| i64::from_str_radix(&id[..8], 16).expect("a hex run id") & 0x7fff_ffff)
        .collect();
    let rows: Vec<(String, i64, i64, i64, i64, i64)> = sqlx::query_as(
        "WITH runs AS (SELECT * FROM unnest($1::text[], $2::bigint[]) AS r(id, space))
         SELECT id,
                (SELECT count(*) FROM pg_namespace
                  WHERE nspname = 'run_' || id OR nspname LIKE 'run\\_' || id || '\\_%'),
                (SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'racelab/' || id || '/%'),
                (SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                  WHERE a.application_name LIKE 'racelab/' || id || '/%'),
                (SELECT count(*) FROM pg_locks
                  WHERE locktype = 'advisory' AND classid::bigint = space AND objsubid = 2),
                (SELECT count(*) FROM sandboxes WHERE run_id = id)
           FROM runs",
    )
    .bind(&sandbox_ids)
    .bind(&spaces)
    .fetch_all(conn)
    .await
    .expect("leftovers in PostgreSQL");
    let found = rows
        .into_iter()
        .map(|(id, schemas, sessions, locks, advisory, registry)| {
            let left = Leftovers {
                schemas,
                sessions,
                locks: locks + advisory,
                registry,
                ..Leftovers::NONE
            };
            (id, left)
        })
        .filter(|(_, left)| *left != Leftovers::NONE)
        .collect();
    by_run_id(found, run_ids)
}

/// Keys under the run's Redis prefix.
pub async fn redis_keys_of(run_id: &str) -> i64 {
    redis_keys_by_run(&[run_id.to_owned()])
        .await
        .get(run_id)
        .copied()
        .unwrap_or(0)
}

/// [`redis_keys_of`] for many runs at once: one scan of `racelab:*`.
pub async fn redis_keys_by_run(run_ids: &[String]) -> BTreeMap<String, i64> {
    by_run_id(redis_keys_of_every_run().await, run_ids)
}

/// Every run's Redis keys (`racelab:<sandbox id>:…`, not the rooms' `racelab:room:…`), by the
/// id their sandbox is named by.
pub async fn redis_keys_of_every_run() -> BTreeMap<String, i64> {
    let client = redis::Client::open(config().redis_url.as_str()).expect("a Redis URL");
    let mut conn = client.get_multiplexed_async_connection().await.expect("Redis");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("racelab:*")
        .query_async(&mut conn)
        .await
        .expect("KEYS");
    let mut found = BTreeMap::new();
    let is_run_id = |r: &&str| r.len() == 12 && r.bytes().all(|b| b.is_ascii_hexdigit());
    for key in keys {
        if let Some(run) = key.split(':').nth(1).filter(is_run_id) {
            *found.entry(run.to_owned()).or_insert(0) += 1;
        }
    }
    found
}

/// The broker's topics and consumer groups of a run (both named `racelab.<run>.…`).
pub async fn broker_names_of(run_id: &str) -> (Vec<String>, Vec<String>) {
    broker_names_by_run(&[run_id.to_owned()])
        .await
        .remove(run_id)
        .unwrap_or_default()
}

/// [`broker_names_of`] for many runs at once: one metadata request and one group list.
pub async fn broker_names_by_run(run_ids: &[String]) -> BTreeMap<String, (Vec<String>, Vec<String>)> {
    broker_names_by_run_at(config().kafka_brokers, run_ids).await
}

/// [`broker_names_by_run`], asking the broker at `brokers` (a test's private one).
pub async fn broker_names_by_run_at(
    brokers: String,
    run_ids: &[String],
) -> BTreeMap<String, (Vec<String>, Vec<String>)> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let (topics, groups) = tokio::task::spawn_blocking(move || {
        let client: BaseConsumer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", &brokers)
            .create()
            .expect("a client");
        let timeout = Duration::from_secs(10);
        let topics: Vec<String> = client
            .fetch_metadata(None, timeout)
            .expect("the broker's metadata (is the broker up at KAFKA_BROKERS? scripts/test starts one)")
            .topics()
            .iter()
            .map(|t| t.name().to_owned())
            .collect();
        let groups: Vec<String> = client
            .fetch_group_list(None, timeout)
            .expect("the broker's groups")
            .groups()
            .iter()
            .map(|g| g.name().to_owned())
            .collect();
        (topics, groups)
    })
    .await
    .expect("join");
    let run_of = |name: &str| {
        let sandbox = name.strip_prefix("racelab.")?.split('.').next()?;
        run_ids.iter().find(|id| named(id) == sandbox).cloned()
    };
    let mut found: BTreeMap<String, (Vec<String>, Vec<String>)> = BTreeMap::new();
    for topic in topics {
        if let Some(run) = run_of(&topic) {
            found.entry(run).or_default().0.push(topic);
        }
    }
    for group in groups {
        if let Some(run) = run_of(&group) {
            found.entry(run).or_default().1.push(group);
        }
    }
    found
}

/// How many partitions the broker says `topic` has (0 if it has no such topic), asked with a
/// client of the test's own.
pub async fn partitions_of(topic: &str) -> usize {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let (brokers, topic) = (config().kafka_brokers, topic.to_owned());
    tokio::task::spawn_blocking(move || {
        let client: BaseConsumer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", &brokers)
            .create()
            .expect("a client");
        client
            .fetch_metadata(Some(&topic), Duration::from_secs(10))
            .map(|m| m.topics().first().map_or(0, |t| t.partitions().len()))
            .unwrap_or(0)
    })
    .await
    .expect("join")
}

/// The tutorials' checkout request: `POST <path>` with key `order-7731` and the phone's body,
/// waiting at most `timeout_ms`.
pub fn checkout_call(base: String, path: &str, timeout_ms: u64) -> racelab::engine::Call {
    racelab::engine::Call {
        method: "POST".into(),
        base,
        path: path.into(),
        headers: vec![("Idempotency-Key".into(), "order-7731".into())],
        body: r#"{"amount": 2500, "card": "tok_visa"}"#.into(),
        timeout: Duration::from_millis(timeout_ms),
    }
}

/// `(major, minor)` of the Redis server the tests use.
pub async fn redis_version() -> (u32, u32) {
    let client = redis::Client::open(config().redis_url.as_str()).expect("a Redis URL");
    let mut conn = client.get_multiplexed_async_connection().await.expect("Redis");
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(&mut conn)
        .await
        .expect("INFO");
    let version = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .expect("a version line")
        .trim()
        .to_owned();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// Everything a run left behind. `with_broker`: also ask the broker (only runs that used it).
pub async fn leftovers(conn: &mut PgConnection, run_id: &str, with_broker: bool) -> Leftovers {
    let mut by_run = leftovers_by_run(conn, &[run_id.to_owned()], with_broker).await;
    by_run.remove(run_id).unwrap_or(Leftovers::NONE)
}

/// [`leftovers`] for many runs at once, asking each service once; only runs that left
/// something are in the map.
pub async fn leftovers_by_run(
    conn: &mut PgConnection,
    run_ids: &[String],
    with_broker: bool,
) -> BTreeMap<String, Leftovers> {
    let mut left = leftovers_in_postgres_by_run(conn, run_ids).await;
    for (run, keys) in redis_keys_by_run(run_ids).await {
        left.entry(run).or_default().keys = keys;
    }
    for (run, processes) in processes_by_run(run_ids) {
        left.entry(run).or_default().processes = processes;
    }
    if with_broker {
        for (run, (topics, groups)) in broker_names_by_run(run_ids).await {
            let entry = left.entry(run).or_default();
            entry.topics = topics.len() as i64;
            entry.groups = groups.len() as i64;
        }
    }
    left
}

/// What every run of a lab's test must do: complete, and leave nothing on the server `conn` is
/// connected to, nor in Redis (nor on the broker, `with_broker`).
pub async fn completed_and_clean(
    run: Finished,
    (scenario, variant): (&str, &str),
    conn: PgConnection,
    with_broker: bool,
) -> Finished {
    assert_eq!(
        run.outcome,
        Outcome::Completed,
        "{scenario} {variant}: {:?}",
        run.outcome
    );
    assert_eq!(
        wait_until_clean_on(conn, &run.run_id, with_broker).await,
        Leftovers::NONE,
        "{scenario} {variant}: leftovers"
    );
    run
}

/// Waits (polling, up to 15 s) until a run has left nothing behind; returns what is left.
pub async fn wait_until_clean(run_id: &str) -> Leftovers {
    wait_until_clean_of(run_id, false).await
}

/// As [`wait_until_clean`], asking the broker too.
pub async fn wait_until_clean_of(run_id: &str, with_broker: bool) -> Leftovers {
    wait_until_clean_on(inspector().await, run_id, with_broker).await
}

/// As [`wait_until_clean_of`], for a run on the server `conn` is connected to.
pub async fn wait_until_clean_on(mut conn: PgConnection, run_id: &str, with_broker: bool) -> Leftovers {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let left = leftovers(&mut conn, run_id, with_broker).await;
        if left == Leftovers::NONE || tokio::time::Instant::now() >= deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The real router on a free loopback port; returns its address.
pub async fn server() -> SocketAddr {
    server_with_dist(std::path::Path::new("no-such-dist")).await
}

/// The real router serving the app from `dist`, on a free loopback port.
pub async fn server_with_dist(dist: &std::path::Path) -> SocketAddr {
    serve_engine(engine().await, config(), dist).await
}

/// A room opened with `POST /api/rooms`: its code and trainer token.
pub async fn open_room(address: SocketAddr) -> (String, String) {
    let response = reqwest::Client::new()
        .post(format!("http://{address}/api/rooms"))
        .send()
        .await
        .expect("POST /api/rooms");
    assert_eq!(response.status().as_u16(), 201);
    let room: serde_json::Value = serde_json::from_str(&response.text().await.expect("a body")).expect("JSON");
    let id = room["id"].as_str().expect("an id").to_owned();
    assert_eq!(room["url"], format!("/room/{id}"));
    (id, room["trainer_token"].as_str().expect("a token").to_owned())
}

/// Redis keys of `room` (its claim and its run's log), which must leave with the room.
pub async fn keys_of(room: &str) -> Vec<String> {
    let client = redis::Client::open(config().redis_url.as_str()).expect("a Redis URL");
    let mut conn = client.get_multiplexed_async_connection().await.expect("Redis");
    redis::cmd("KEYS")
        .arg(format!("racelab:room:{room}*"))
        .query_async(&mut conn)
        .await
        .expect("KEYS")
}

/// The trainer closes `room` through `address` (any replica); its keys leave Redis with it.
pub async fn close_room(address: SocketAddr, room: &str, token: &str) {
    assert_eq!(delete_room(address, room, token).await, 204);
    until_no_keys(room).await;
}

/// `DELETE /api/rooms/<room>` through `address` with `token`: its status.
pub async fn delete_room(address: SocketAddr, room: &str, token: &str) -> u16 {
    reqwest::Client::new()
        .delete(format!("http://{address}/api/rooms/{room}"))
        .header("authorization", format!("Bearer {token}"))
        .send()
        .await
        .expect("DELETE")
        .status()
        .as_u16()
}

/// Waits until `room`'s keys have left Redis (a closed room's holder removes them).
pub async fn until_no_keys(room: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !keys_of(room).await.is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "room {room}'s keys left: {:?}",
            keys_of(room).await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The real router on `engine` (one a test already holds), serving the app from `dist`, on a
/// free loopback port.
pub async fn serve_engine(engine: Arc<Engine>, config: Config, dist: &std::path::Path) -> SocketAddr {
    let state = AppState::new(engine, Arc::new(config));
    let app = web::router(state, dist);
    let (listener, address) = racelab::web::listen(([127, 0, 0, 1], 0).into())
        .await
        .expect("a free port");
    tokio::spawn(async move { axum::serve(listener, app).await });
    address
}

/// The real router with `config` (its engine's too), told each peer's address as `racelab serve` is (so the
/// per-reader caps apply), on a free loopback port.
pub async fn server_with(config: Config) -> SocketAddr {
    let engine = racelab::db::connect_engine(&config)
        .await
        .expect("racelab needs PostgreSQL at DATABASE_URL");
    let state = AppState::new(Arc::new(engine), Arc::new(config));
    let app =
        web::router(state, std::path::Path::new("no-such-dist")).into_make_service_with_connect_info::<SocketAddr>();
    let (listener, address) = racelab::web::listen(([127, 0, 0, 1], 0).into())
        .await
        .expect("a free port");
    tokio::spawn(async move { axum::serve(listener, app).await });
    address
}

/// `racelab serve` as a process of its own on a free loopback port, serving the app from `dist`,
/// on the same PostgreSQL, Redis and broker as the tests; killed if dropped, and ready when this
/// returns.
pub async fn racelab_process(dist: &std::path::Path) -> (tokio::process::Child, SocketAddr) {
    let port = racelab::embedded::process::free_port().expect("a free port");
    let config = config();
    let mut racelab = tokio::process::Command::new(env!("CARGO_BIN_EXE_racelab"))
        .arg("serve")
        .env("PORT", port.to_string())
        .env("RACELAB_BIND", "127.0.0.1")
        .env("RACELAB_DIST", dist)
        .env("DATABASE_URL", &config.database_url)
        .env("REDIS_URL", &config.redis_url)
        // Configured, so no private broker is started for it.
        .env("KAFKA_BROKERS", &config.kafka_brokers)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("racelab serve starts");
    if let Err(said) = until_ready(&mut racelab).await {
        panic!("racelab serve did not become ready:\n{}", said.join("\n"));
    }
    (racelab, SocketAddr::from(([127, 0, 0, 1], port)))
}

/// Reads a `racelab serve` child's stderr until it says it is ready (at most 90 s). Returns the
/// lines it printed until then, as `Ok` if it became ready, `Err` if it exited or took too
/// long; its stderr is drained from then on, so it never blocks on a full pipe.
pub async fn until_ready(child: &mut tokio::process::Child) -> Result<Vec<String>, Vec<String>> {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let Some(stderr) = child.stderr.take() else {
        return Err(vec!["racelab's stderr is not piped".into()]);
    };
    let mut lines = BufReader::new(stderr).lines();
    let mut said = Vec::new();
    let ready = tokio::time::timeout(Duration::from_secs(90), async {
        while let Ok(Some(line)) = lines.next_line().await {
            let ready = line.contains("racelab is ready");
            said.push(line);
            if ready {
                return true;
            }
        }
        false
    })
    .await;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    if ready == Ok(true) { Ok(said) } else { Err(said) }
}

/// `GET path` on a test server: its status, content type and body.
pub async fn get(address: SocketAddr, path: &str) -> (u16, String, String) {
    let response = reqwest::get(format!("http://{address}{path}"))
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, kind, response.text().await.expect("a body"))
}

/// `GET path`'s JSON body, which must come with 200.
pub async fn get_json(address: SocketAddr, path: &str) -> serde_json::Value {
    let (status, _, body) = get(address, path).await;
    assert_eq!(status, 200, "{path}: {body}");
    if path == "/api/labs" {
        browser_reads_alike::<Vec<shared::catalog::LabStatus>>(&body);
    } else if path.starts_with("/api/scenarios/") {
        browser_reads_alike::<shared::catalog::ScenarioStatus>(&body);
    } else if path.starts_with("/api/runs/") {
        browser_reads_alike::<shared::protocol::StoredRun>(&body);
    }
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
}

/// Waits until no session kept between runs (`racelab/kept`) is left on `conn`'s database, once
/// the engines that kept them are closed: a backend ends a moment after its client's goodbye, so
/// at most 2 s.
pub async fn until_no_kept_sessions(conn: &mut PgConnection) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    loop {
        let kept: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
             WHERE application_name = 'racelab/kept' AND datname = current_database()",
        )
        .fetch_one(&mut *conn)
        .await
        .expect("kept sessions");
        if kept == 0 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{kept} kept sessions outlived their engines"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
