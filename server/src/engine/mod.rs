//! The scenario engine: plays actors against real services in a fixed choreography, and turns
//! everything that happens into [`shared::Event`]s.
//!
//! Reading order:
//! - [`run`]: the [`Run`] a scenario plays in (its sandbox, lanes, transcript lines, snapshots).
//! - [`lane`]: the [`Lane`] every actor kind speaks through (step, result, error, line, gate).
//! - The actor kinds, each adding its constructor to [`Run`]:
//!   - [`postgres`]: [`PgActor`], a session on its own connection, in a transaction at an
//!     isolation level or in autocommit; a started step is [`Pending`], and a blocked one is
//!     *seen* in `pg_blocking_pids`, not assumed.
//!   - [`redis`]: [`RedisActor`], a Redis client on its own connection, keys under the run's
//!     prefix.
//!   - [`http`]: [`HttpServer`]s the run owns on loopback, and [`HttpClient`] lanes with
//!     per-attempt timeouts.
//!   - [`broker`]: [`Producer`] and [`Consumer`] lanes on librdkafka.
//!   - [`process`] and [`child`]: [`ChildActor`]s, `racelab actor <kind>` processes that really
//!     die (SIGKILL) at a named crash point and can be started again.
//! - [`sql`]: the PostgreSQL helpers everything uses (a leaf).
//! - [`retry`]: the whole-transaction retry for 40001/40P01.
//! - [`budget`] and [`admission`]: what a run holds per service, and the fair queue.
//! - [`supervisor`]: [`Engine::start`], which queues, sandboxes, plays and always cleans up.
//!
//! A scenario is a [`Scenario`]: its catalog entry, its sandbox, its budget, and an async
//! `play` that drives its actors. A two-actor scenario reads like an isolation-tester spec:
//!
//! ```no_run
//! # use racelab::engine::{Level, Run, RunError};
//! # async fn row_lock(run: &Run) -> Result<(), RunError> {
//! let alice = run.actor("alice", Level::ReadCommitted).await?;
//! let bob = run.actor("bob", Level::ReadCommitted).await?;
//! alice.query("SELECT 1 FROM teams WHERE id = $1 FOR UPDATE", &["design".into()]).await?;
//! let (bob_waits, by) = bob
//!     .start("SELECT 1 FROM teams WHERE id = $1 FOR UPDATE", &["design".into()])
//!     .await?
//!     .expect_blocked() // seen in pg_blocking_pids, not assumed
//!     .await?;
//! bob.say(format!("waiting for {}", by.join(", ")));
//! alice.commit().await?;
//! bob_waits.finish().await?; // emits Unblocked { waited_ms }, then its result
//! # Ok(())
//! # }
//! ```
//!
//! The other services' actors speak through the same lanes and the same stream:
//!
//! ```no_run
//! # use racelab::engine::{Call, Command, Level, Run, RunError};
//! # use std::time::Duration;
//! # async fn others(run: &Run, shop: axum::Router) -> Result<(), RunError> {
//! // A Redis client racing for the lock; its key lives under the run's prefix.
//! let a = run.redis("a").await?;
//! a.run(&Command::new("SET").key("lock:wallet:42").arg("token-a").arg("NX").arg("PX").arg(30000))
//!     .await?;
//!
//! // A server the run owns, and a phone whose first attempt gives up after 600 ms.
//! let api = run.http_server(shop).await?;
//! let phone = run.http_client("phone");
//! let first = phone
//!     .send(&Call {
//!         method: "POST".into(),
//!         base: api.url(""),
//!         path: "/payments".into(),
//!         headers: vec![("Idempotency-Key".into(), "order-7731".into())],
//!         body: r#"{"amount": 2500, "card": "tok_visa"}"#.into(),
//!         timeout: Duration::from_millis(600),
//!     })
//!     .await; // a timeout is an error on the phone's lane; the server keeps working
//!
//! // A relay as its own process: killed with SIGKILL at its crash point, then started again.
//! let mut relay = run
//!     .process("relay", "sql-script", serde_json::json!({"steps": ["BEGIN", "crash:after_produce"]}))
//!     .await?;
//! relay.wait_end(Duration::from_secs(10)).await?;
//! relay.restart().await?;
//! # let _ = first;
//! # Ok(())
//! # }
//! ```

pub mod admission;
pub mod broker;
pub mod budget;
pub mod child;
pub mod error;
pub mod events;
pub mod http;
pub mod kept;
pub mod lane;
pub mod leases;
pub mod mariadb;
pub mod metrics;
pub mod postgres;
pub mod probes;
pub mod process;
pub mod redis;
pub mod retry;
pub mod run;
pub mod servers;
pub mod signal;
pub mod sql;
pub mod supervisor;
pub mod warm;

pub use admission::Admission;
pub use broker::{Consumer, Producer, Received};
pub use budget::{Budget, Capacity};
pub use child::{ChildContext, ChildKind, Crasher};
pub use error::{DbError, RunError, StepError};
pub use http::{Call, HttpClient, HttpServer, Reply};
pub use lane::Lane;
pub use postgres::{Level, Pending, PgActor, Settled};
pub use process::{ChildActor, End, News};
pub use redis::{Command, PrivateRedis, RedisActor, reply_int};
pub use retry::{Retried, RetryPolicy, retry};
pub use run::{Limits, Run, TableQuery};
pub use signal::Signal;
pub use sql::Output;
pub use supervisor::{Engine, RunHandle, StartError};

use crate::sandbox::Spec;
use shared::event::ActorInfo;
use shared::{Ledger, ScenarioInfo};

/// What [`Engine::start`] plays: a scenario of the catalog (`&'static`) or one made for the run
/// (a reader's spec), shared with the run's task.
pub trait IntoScenario {
    fn into_scenario(self) -> std::sync::Arc<dyn Scenario>;
}

impl IntoScenario for std::sync::Arc<dyn Scenario> {
    fn into_scenario(self) -> std::sync::Arc<dyn Scenario> {
        self
    }
}

impl<T: Scenario + ?Sized> IntoScenario for &'static T {
    fn into_scenario(self) -> std::sync::Arc<dyn Scenario> {
        std::sync::Arc::new(Catalogued(self))
    }
}

/// A catalog scenario, lent to a run for ever.
struct Catalogued<T: ?Sized + 'static>(&'static T);

impl<T: Scenario + ?Sized> Scenario for Catalogued<T> {
    fn info(&self) -> ScenarioInfo {
        self.0.info()
    }
    fn sandbox(&self) -> &Spec {
        self.0.sandbox()
    }
    fn sandbox_for(&self, variant: &str) -> &Spec {
        self.0.sandbox_for(variant)
    }
    fn actors(&self, variant: &str) -> Vec<ActorInfo> {
        self.0.actors(variant)
    }
    fn budget(&self, variant: &str) -> Budget {
        self.0.budget(variant)
    }
    fn play<'a>(&'a self, run: &'a Run, variant: &'a str) -> BoxFuture<'a, Result<(), RunError>> {
        self.0.play(run, variant)
    }
    fn summarize(&self, runs: &[Ledger]) -> Option<String> {
        self.0.summarize(runs)
    }
    fn reveal(&self, variant: &str) -> Option<(String, String)> {
        self.0.reveal(variant)
    }
    fn sessions_ahead(&self, variant: &str) -> Vec<String> {
        self.0.sessions_ahead(variant)
    }
}

/// A boxed future, as [`Scenario::play`] returns (futures' own, which the layers below use too).
pub use futures_util::future::BoxFuture;

/// One scenario: what the catalog shows, what its sandbox holds, what a run holds, and how it
/// plays.
pub trait Scenario: Send + Sync + 'static {
    /// Its catalog entry (id, title, hook, variants).
    fn info(&self) -> ScenarioInfo;
    /// Its sandbox: schemas (with the lab's SQL), whether it writes Redis keys, its topics.
    fn sandbox(&self) -> &Spec;
    /// The sandbox a run of `variant` holds: the scenario's, but for a variant that plays on
    /// MariaDB, which makes its own there and needs nothing of PostgreSQL's.
    fn sandbox_for(&self, _variant: &str) -> &Spec {
        self.sandbox()
    }
    /// The actors of `variant`, in swimlane order, for the run header.
    fn actors(&self, variant: &str) -> Vec<ActorInfo>;
    /// What a run of `variant` holds at most in each service (the monitor is added by the
    /// engine).
    fn budget(&self, variant: &str) -> Budget;
    /// Plays `variant` (already checked to be one of the scenario's).
    fn play<'a>(&'a self, run: &'a Run, variant: &'a str) -> BoxFuture<'a, Result<(), RunError>>;
    /// After `racelab run --runs N`, a summary of the runs' final ledgers (the load test's
    /// min–max table); none by default.
    fn summarize(&self, _runs: &[Ledger]) -> Option<String> {
        None
    }
    /// For a scenario that asks readers to predict: the choice that happens in `variant`, and
    /// why. The engine reveals it after a completed run.
    fn reveal(&self, _variant: &str) -> Option<(String, String)> {
        None
    }
    /// Actors of `variant` that each open one session in the run's default schema under their
    /// own name: the engine connects them while it makes the sandbox, so a run does not pay for
    /// its connections one after another. None by default.
    fn sessions_ahead(&self, _variant: &str) -> Vec<String> {
        Vec::new()
    }
}
