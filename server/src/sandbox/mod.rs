//! Sandboxes: everything a run owns in a shared service, so a thousand readers can run the same
//! scenario at once without seeing each other's rows, locks, keys or messages.
//!
//! A run's sandbox is its **namespaces**, one kind per service:
//! - PostgreSQL schemas, one per logical database the tutorial uses (`run_<id>` for a lab with
//!   one, `run_<id>_payments` and `run_<id>_notifier` for the outbox), made from the lab's schema
//!   SQL ([`postgres`]);
//! - an advisory-lock space: the run's own first key of PostgreSQL's two-key advisory locks, so
//!   two runs using the tutorial's key 4200 never contend ([`Sandbox::lock_space`]);
//! - a Redis key prefix, `racelab:<id>:`, placed before the tutorial's key so a hash tag such as
//!   `{wallet:42}` still chooses the slot ([`redis`]);
//! - broker topics (with their partition count) and consumer groups, `racelab.<id>.<name>`
//!   ([`broker`]);
//! - on MariaDB, a database and a user of its own, bounded from outside by a watchdog
//!   ([`mariadb`]: the first part of MariaDB beside PostgreSQL; no run plays there yet).
//!
//! `<id>` is the sandbox's own id ([`new_run_id`] when it is made), never a run's: these names
//! are seen by every role on the server, and a run's id fetches its stored transcript
//! ([`sandbox_id_of`] finds a run's sandbox again).
//!
//! Each sandbox is written to racelab's `sandboxes` table (run id, creation time, what it holds)
//! *before* anything is created, and removed from it only once everything is gone, so whatever a
//! crash leaves behind is known and [`sweep`] removes it. The supervisor destroys a sandbox on
//! success, failure, cancel, disconnect and time limit alike.

pub mod broker;
pub mod mariadb;
pub mod postgres;
pub mod redis;
mod reset;
mod sweep;
pub mod vacuum;

pub use crate::services::Services;
pub use postgres::application_name;
pub use reset::seed_statements;
pub use sweep::sweep;

use std::time::{SystemTime, UNIX_EPOCH};
use thiserror::Error;

/// What a scenario's sandbox holds, as the scenario declares it.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// PostgreSQL schemas: `(logical name, schema SQL)`. The first is every actor's default
    /// `search_path`; an empty logical name makes the schema plain `run_<id>`.
    pub schemas: &'static [(&'static str, &'static str)],
    /// Whether the run writes Redis keys (under its prefix).
    pub redis: bool,
    /// Broker topics: `(logical name, partitions)`.
    pub topics: &'static [(&'static str, i32)],
}

/// A sandbox of nothing on PostgreSQL (a race on MariaDB makes its own there): only its name in
/// the registry.
pub const NOTHING: Spec = Spec {
    schemas: &[],
    redis: false,
    topics: &[],
};

/// Why a sandbox could not be made or removed.
#[derive(Debug, Error)]
pub enum SandboxError {
    #[error("PostgreSQL: {0}")]
    Postgres(#[from] sqlx::Error),
    #[error("Redis: {0}")]
    Redis(#[from] ::redis::RedisError),
    #[error("broker: {0}")]
    Broker(String),
}

impl Spec {
    /// Whether a finished run's sandbox of this spec can be put back as made and played in
    /// again ([`Sandbox::reset`]): it has schemas, and no broker topics (a topic's messages and
    /// its consumer groups' offsets cannot be taken back).
    pub fn resettable(&self) -> bool {
        !self.schemas.is_empty() && self.topics.is_empty()
    }
}

/// One run's namespaces. Serialisable: a child process gets its run's sandbox from its parent.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Sandbox {
    /// Its own id, made with it: it names every namespace. Never a run's id (see
    /// [`sandbox_id_of`]); a sandbox that is reset and played in again ([`Sandbox::reset`])
    /// keeps it.
    pub run_id: String,
    pub created_unix: u64,
    /// `(logical name, schema name)`, in the spec's order.
    pub schemas: Vec<(String, String)>,
    pub redis_prefix: Option<String>,
    /// `(logical name, topic name, partitions)`.
    pub topics: Vec<(String, String, i32)>,
    /// Each schema's shape when it was made, in `schemas`' order (`reset::relations`): a reset
    /// refuses a schema that is not that shape any more.
    #[serde(skip)]
    pub shapes: Vec<String>,
    /// How many runs have played in it.
    #[serde(skip)]
    pub runs: u32,
}

/// A new random run id: 12 hex digits, safe inside identifiers, key prefixes, topic names and
/// application names.
pub fn new_run_id() -> String {
    format!("{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff)
}

/// A new run's own id, the one that fetches its stored transcript (`/runs/<id>`): 24 hex
/// digits, 96 random bits, so that nobody finds another reader's run by trying ids (48 bits,
/// against a million stored runs, would give one a few days of guessing a hit). It is never in
/// a name a service shows: a sandbox has an id of its own ([`new_run_id`]).
pub fn new_stored_run_id() -> String {
    format!("{:024x}", rand::random::<u128>() >> 32)
}

/// Which sandbox each recent run of this process played in, by run id: the id its names carry.
/// A run's own id (which fetches its stored transcript) appears in no name a service shows every
/// role (`pg_stat_activity`'s application names, schemas, keys, topics), so a reader's spec that
/// reads them learns nothing it could fetch; this is how racelab itself, and its tests, find a
/// run's names again. The oldest are forgotten past [`REMEMBERED`].
static PLAYED_IN: std::sync::LazyLock<std::sync::Mutex<std::collections::VecDeque<(String, String)>>> =
    std::sync::LazyLock::new(Default::default);
const REMEMBERED: usize = 4096;

/// Remembers that run `run_id` plays in the sandbox named by `sandbox_id`.
pub fn remember(run_id: &str, sandbox_id: &str) {
    let mut played = PLAYED_IN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if played.len() >= REMEMBERED {
        played.pop_front();
    }
    played.push_back((run_id.to_owned(), sandbox_id.to_owned()));
}

/// The id run `run_id`'s sandbox is named by, if this process played it recently.
pub fn sandbox_id_of(run_id: &str) -> Option<String> {
    let played = PLAYED_IN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    played
        .iter()
        .rev()
        .find(|(run, _)| run == run_id)
        .map(|(_, sandbox)| sandbox.clone())
}

/// Whether `id` has the shape [`new_run_id`] gives (12 hex digits): anything else found in a
/// service is not one of ours, and never goes near a query.
pub fn is_run_id(id: &str) -> bool {
    id.len() == 12 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The schema name of logical database `logical` in run `run_id`.
pub fn schema_name(run_id: &str, logical: &str) -> String {
    if logical.is_empty() {
        format!("run_{run_id}")
    } else {
        format!("run_{run_id}_{logical}")
    }
}

/// The Redis key prefix of run `run_id`. No `{` in it, so a key's own hash tag stays the first
/// one and still chooses the slot.
pub fn redis_prefix(run_id: &str) -> String {
    format!("racelab:{run_id}:")
}

/// The broker name (topic or consumer group) of `logical` in run `run_id`.
pub fn broker_name(run_id: &str, logical: &str) -> String {
    format!("racelab.{run_id}.{logical}")
}

/// The run's advisory-lock space: the first key of every two-key advisory lock the run takes.
/// From the run id, so every process of the run (the relay, its standby, a restarted one) agrees
/// on it without being told. Two runs share one only if their ids agree in 31 bits.
pub fn lock_space(run_id: &str) -> i32 {
    let prefix = run_id.get(..8).unwrap_or(run_id);
    i32::try_from(u32::from_str_radix(prefix, 16).unwrap_or(0) & 0x7fff_ffff).unwrap_or(0)
}

impl Sandbox {
    /// The names `spec` gets in run `run_id` (nothing is created).
    pub fn plan(run_id: &str, spec: &Spec) -> Sandbox {
        Sandbox {
            run_id: run_id.to_owned(),
            created_unix: now_unix(),
            schemas: spec
                .schemas
                .iter()
                .map(|(logical, _)| ((*logical).to_owned(), schema_name(run_id, logical)))
                .collect(),
            redis_prefix: spec.redis.then(|| redis_prefix(run_id)),
            topics: spec
                .topics
                .iter()
                .map(|(logical, partitions)| ((*logical).to_owned(), broker_name(run_id, logical), *partitions))
                .collect(),
            shapes: Vec::new(),
            runs: 0,
        }
    }

    /// Registers, then creates, every namespace of `spec` for run `run_id` (the registry row
    /// is written with the first schema, in its transaction). If any part fails, what was made
    /// is removed again before the error returns.
    pub async fn create(services: &Services, run_id: &str, spec: &Spec) -> Result<Sandbox, SandboxError> {
        let mut sandbox = Sandbox::plan(run_id, spec);
        let made = async {
            if sandbox.schemas.is_empty() {
                sweep::register(&services.pool, &sandbox).await?;
            }
            for (i, ((_, schema), (_, sql))) in sandbox.schemas.iter().zip(spec.schemas).enumerate() {
                let shape = postgres::create_schema(&services.pool, &sandbox, (schema, sql), i == 0).await?;
                sandbox.shapes.push(shape);
            }
            if !sandbox.topics.is_empty() {
                broker::create_topics(&services.brokers, &sandbox.topics).await?;
            }
            Ok::<(), SandboxError>(())
        }
        .await;
        match made {
            Ok(()) => Ok(sandbox),
            Err(error) => {
                if let Err(cleanup) = sandbox.destroy(services).await {
                    tracing::warn!(run = run_id, %cleanup, "could not remove a half-made sandbox; the sweep will");
                }
                Err(error)
            }
        }
    }

    /// The schema of logical database `logical`, if the run has one.
    pub fn schema(&self, logical: &str) -> Option<&str> {
        self.schemas
            .iter()
            .find(|(l, _)| l == logical)
            .map(|(_, name)| name.as_str())
    }

    /// The actors' default schema (the spec's first).
    pub fn default_schema(&self) -> Option<&str> {
        self.schemas.first().map(|(_, name)| name.as_str())
    }

    /// See [`lock_space`].
    pub fn lock_space(&self) -> i32 {
        lock_space(&self.run_id)
    }

    /// The run's topic for logical topic `logical`.
    pub fn topic(&self, logical: &str) -> Option<&str> {
        self.topics
            .iter()
            .find(|(l, _, _)| l == logical)
            .map(|(_, name, _)| name.as_str())
    }

    /// Destroys the sandbox once its services answer again: tried again after 1 s, then less
    /// and less often (at most every 15 s), for as long as `within` (after that the periodic
    /// sweep has it, as it has everything older than a run may live).
    pub async fn destroy_when_back(self, services: Services, within: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + within;
        let mut pause = std::time::Duration::from_secs(1);
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep(pause).await;
            match self.destroy(&services).await {
                Ok(()) => {
                    tracing::info!(run = %self.run_id, "sandbox destroyed now that its services are back");
                    return;
                }
                Err(error) => tracing::debug!(run = %self.run_id, %error, "the sandbox's services are still down"),
            }
            pause = (pause * 2).min(std::time::Duration::from_secs(15));
        }
    }

    /// Puts the sandbox back as it was made, for another run of `spec` (the spec it was made
    /// from) to play in: ends the finished run's sessions, then resets every schema
    /// (`reset::reset_schemas`: rows, sequences, seed, registry row, in one transaction) and
    /// removes every Redis key under its prefix. `Ok(false)` if it cannot be reset (a spec with
    /// topics, a schema the run changed the shape of): the caller destroys it. On an error part
    /// of it may be reset: the caller destroys it too.
    pub async fn reset(&self, services: &Services, spec: &Spec) -> Result<bool, SandboxError> {
        if !spec.resettable() || !self.topics.is_empty() {
            return Ok(false);
        }
        postgres::end_sessions(&services.pool, &self.run_id).await?;
        let seeds: Vec<Vec<String>> = spec
            .schemas
            .iter()
            .map(|(_, sql)| reset::seed_statements(sql))
            .collect();
        if !reset::reset_schemas(&services.pool, self, &seeds).await? {
            return Ok(false);
        }
        if let Some(prefix) = &self.redis_prefix {
            redis::unlink_prefix(&services.redis, prefix).await?;
        }
        Ok(true)
    }

    /// Ends every session of the run, then removes every namespace it has (whether the run made
    /// it yet or not), then its registry row. Safe to call twice. Each service is cleaned even if
    /// another fails; the first error is returned and the row stays for the sweep.
    pub async fn destroy(&self, services: &Services) -> Result<(), SandboxError> {
        let mut first_error = None;
        let schemas: Vec<&str> = self.schemas.iter().map(|(_, s)| s.as_str()).collect();
        // A sandbox only in PostgreSQL loses its row with its schemas, in one transaction.
        let only_schemas = self.redis_prefix.is_none() && self.topics.is_empty();
        if let Err(e) = postgres::drop_schemas(&services.pool, &self.run_id, &schemas, only_schemas).await {
            first_error.get_or_insert(SandboxError::Postgres(e));
        }
        if let Some(prefix) = &self.redis_prefix
            && let Err(e) = redis::unlink_prefix(&services.redis, prefix).await
        {
            first_error.get_or_insert(SandboxError::Redis(e));
        }
        if !self.topics.is_empty() {
            // A broker that is gone would hold each admin call for its whole timeout (10 s), and
            // the reader's `done` with it: the health probe (refused at once, at most 2 s per
            // broker for one that hangs) tells first, and the topics wait for
            // `destroy_when_back`.
            let broker = crate::health::kafka(&services.brokers).await;
            let removed = if broker.up {
                broker::remove_run(&services.brokers, &self.run_id, &self.topics).await
            } else {
                Err(SandboxError::Broker(format!("the broker is down: {}", broker.detail)))
            };
            if let Err(e) = removed {
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            Some(error) => Err(error),
            None if only_schemas => Ok(()),
            None => Ok(sweep::unregister(&services.pool, &self.run_id).await?),
        }
    }
}

fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_run_ids_are_trusted() {
        assert!(is_run_id(&new_run_id()));
        let stored = new_stored_run_id();
        assert!(
            stored.len() == 24 && stored.bytes().all(|b| b.is_ascii_hexdigit()),
            "{stored}"
        );
        assert_ne!(stored, new_stored_run_id());
        assert!(!is_run_id("%"));
        assert!(!is_run_id("abc; DROP x"));
    }

    #[test]
    fn every_namespace_carries_the_run_id() {
        let spec = Spec {
            schemas: &[("payments", ""), ("notifier", "")],
            redis: true,
            topics: &[("payments", 3)],
        };
        let sandbox = Sandbox::plan("0123456789ab", &spec);
        assert_eq!(sandbox.schema("payments"), Some("run_0123456789ab_payments"));
        assert_eq!(sandbox.default_schema(), Some("run_0123456789ab_payments"));
        assert_eq!(sandbox.redis_prefix.as_deref(), Some("racelab:0123456789ab:"));
        assert_eq!(sandbox.topic("payments"), Some("racelab.0123456789ab.payments"));
        assert_eq!(schema_name("0123456789ab", ""), "run_0123456789ab");
    }

    #[test]
    fn lock_spaces_differ_between_runs_and_fit_an_int4() {
        assert_eq!(lock_space("0123456789ab"), 0x0123_4567);
        assert_eq!(lock_space("ffffffffffff"), 0x7fff_ffff);
        assert_ne!(lock_space("0123456789ab"), lock_space("1123456789ab"));
    }
}
