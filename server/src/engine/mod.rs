//! The scenario engine: plays actors against real services in a fixed choreography, and turns
//! everything that happens into [`shared::Event`]s.
//!
//! Reading order:
//! - [`run`]: the [`Run`] a scenario plays in (actors, transcript lines, snapshots, step gate).
//! - [`actor`]: a PostgreSQL actor, [`PgActor`], on its own connection and task.
//! - [`blocking`]: started steps ([`Pending`]) and how a blocked one is detected.
//! - [`retry`]: the whole-transaction retry for 40001/40P01.
//! - [`admission`]: the cap on concurrent runs and the fair queue behind it.
//! - [`supervisor`]: [`Engine::start`], which queues, sandboxes, plays and always cleans up.
//!
//! A scenario is a [`Scenario`]: its catalog entry, its schema, how many connections it needs, and
//! an async `play` that drives its actors. A two-actor scenario reads like an isolation-tester
//! spec:
//!
//! ```ignore
//! let alice = run.actor("alice", Level::Serializable).await?;
//! let bob = run.actor("bob", Level::Serializable).await?;
//! alice.query("SELECT 1 FROM teams WHERE id = $1 FOR UPDATE", &["design".into()]).await?;
//! let (bob_waits, by) = bob.start("SELECT 1 FROM teams WHERE id = $1 FOR UPDATE", &["design".into()])
//!     .await?.expect_blocked().await?;          // seen in pg_blocking_pids, not assumed
//! run.say("bob", format!("waiting for {}", by.join(", ")));
//! alice.commit().await?;
//! bob_waits.finish().await?;                    // emits Unblocked { waited_ms } then its result
//! ```
//!
//! How the other labs' actors plug into the same run, event stream and sandbox:
//! - **Redis clients racing on a lock** (locks lab): an actor type holding its own Redis
//!   connection, emitting `Step { service: Redis, text: "SET lock:{wallet:42} … NX PX 3000" }`;
//!   its keys live under the run's key prefix, swept with the sandbox.
//! - **HTTP clients and servers with timeouts** (idempotency lab): the API server and the card
//!   provider run as tasks on port 0 inside the run; the client actor's requests are `Step
//!   { service: Http, text: "POST /payments" }`, and a timeout is an `Error` without SQLSTATE.
//! - **Processes that die at a crash point** (outbox lab): the relay or consumer runs as a child
//!   `racelab actor …` process; the engine kills it at the named point and emits `Crash`, so
//!   PostgreSQL really rolls back and the broker really keeps a dead group member.
//! - **Free-running load tests**: dozens of quiet [`Run::worker`]s pull jobs from a shared queue
//!   and the scenario emits `Progress` events instead of one card per statement.

pub mod actor;
pub mod admission;
pub mod blocking;
pub mod error;
pub mod events;
pub mod retry;
pub mod run;
pub mod signal;
pub mod supervisor;

pub use actor::{Level, Output, PgActor};
pub use admission::Admission;
pub use blocking::{Pending, Settled};
pub use error::{DbError, RunError, StepError};
pub use retry::{Retried, RetryPolicy, retry};
pub use run::{Limits, Run, TableQuery};
pub use signal::Signal;
pub use supervisor::{Engine, RunHandle, StartError};

use shared::ScenarioInfo;
use shared::event::ActorInfo;
use std::future::Future;
use std::pin::Pin;

/// A boxed future, as [`Scenario::play`] returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One scenario: what the catalog shows, what its sandbox holds, and how it plays.
pub trait Scenario: Send + Sync + 'static {
    /// Its catalog entry (id, title, hook, variants).
    fn info(&self) -> ScenarioInfo;
    /// The lab's schema SQL: tables and seed rows, run inside the run's fresh schema.
    fn schema_sql(&self) -> &'static str;
    /// The actors of `variant`, in swimlane order, for the run header.
    fn actors(&self, variant: &str) -> Vec<ActorInfo>;
    /// How many PostgreSQL connections a run of `variant` opens (its actors plus the monitor).
    fn connections(&self, variant: &str) -> u32;
    /// Plays `variant` (already checked to be one of the scenario's).
    fn play<'a>(&'a self, run: &'a Run, variant: &'a str) -> BoxFuture<'a, Result<(), RunError>>;
}
