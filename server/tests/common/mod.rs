//! What every integration test shares: an engine on the real PostgreSQL, a server on port 0, a
//! way to play a run to its end, and the leak checks.
#![allow(dead_code)]

use racelab::config::Config;
use racelab::engine::Engine;
use racelab::web::{self, AppState};
use shared::{Event, EventKind, Ledger, Mode, Moment, Outcome, ServerMsg, Value};
use sqlx::{Connection, PgConnection};
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

/// The configuration tests run with: the environment's, else the local defaults.
pub fn config() -> Config {
    Config {
        database_url: std::env::var("DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/racelab".into()),
        redis_url: std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into()),
        kafka_brokers: std::env::var("KAFKA_BROKERS").unwrap_or_else(|_| "127.0.0.1:9092".into()),
        run_connections: None,
    }
}

pub async fn engine() -> Arc<Engine> {
    Arc::new(
        racelab::db::connect_engine(&config())
            .await
            .expect("racelab needs PostgreSQL at DATABASE_URL"),
    )
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
    let mut handle = engine.start(def, variant, Mode::Auto).expect("a known variant");
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let update = tokio::time::timeout_at(deadline, handle.updates.recv())
            .await
            .expect("the run ended in time");
        match update.expect("the run said done before closing") {
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

/// What a run left behind: its schema, its sessions, the locks its sessions hold.
pub async fn leftovers(conn: &mut PgConnection, run_id: &str) -> (i64, i64, i64) {
    let schemas: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_namespace WHERE nspname = $1")
        .bind(format!("run_{run_id}"))
        .fetch_one(&mut *conn)
        .await
        .expect("query");
    let pattern = format!("racelab/{run_id}/%");
    let sessions: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE $1")
        .bind(&pattern)
        .fetch_one(&mut *conn)
        .await
        .expect("query");
    let locks: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE a.application_name LIKE $1",
    )
    .bind(&pattern)
    .fetch_one(&mut *conn)
    .await
    .expect("query");
    (schemas, sessions, locks)
}

/// Waits (polling, up to 15 s) until a run has left nothing behind; returns what is left.
pub async fn wait_until_clean(run_id: &str) -> (i64, i64, i64) {
    let mut conn = inspector().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let left = leftovers(&mut conn, run_id).await;
        if left == (0, 0, 0) || tokio::time::Instant::now() >= deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The real router on a free loopback port; returns its address.
pub async fn server() -> SocketAddr {
    let state = AppState {
        engine: engine().await,
        config: Arc::new(config()),
    };
    let app = web::router(state, std::path::Path::new("no-such-dist"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a free port");
    let address = listener.local_addr().expect("bound");
    tokio::spawn(async move { axum::serve(listener, app).await });
    address
}
