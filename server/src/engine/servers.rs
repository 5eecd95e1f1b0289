//! The PostgreSQL servers runs play on, each with its version.
//!
//! A reader may ask for a version ("play this on 18"); a run asked for none plays on the first
//! configured server's version, so a page's transcript never changes version by chance. Servers
//! of one version share the load: admission ([`super::Admission`]) places each run on one with
//! room in its connection budget. Each server keeps its own racelab database (the sandbox
//! registry the sweep reads, the connection leases replicas share), its own sandboxes made
//! ahead of demand and its own kept sessions, so nothing of one server's runs is ever looked for
//! on another.
//!
//! A server that stops answering is taken out of the rotation: a run that fails on it is told
//! which server went, starts probe it again at most once a second ([`RETRY_DOWN_AFTER`]), and it
//! rejoins as soon as a probe finds it answering.

use super::probes::Probes;
use super::run::Reach;
use super::warm::Warm;
use shared::Service;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A server found down is not asked again for this long: a crowd's starts would otherwise each
/// wait on a connection attempt to a server that is gone.
pub const RETRY_DOWN_AFTER: Duration = Duration::from_secs(1);

/// One PostgreSQL server.
pub struct Server {
    /// `127.0.0.1:5432`: how the pages, the metrics and error messages name it.
    pub name: String,
    /// `PostgreSQL 15.20`, as every run header on it says.
    pub version: String,
    /// `15`: what a reader picks.
    pub major: u32,
    /// How runs on it reach it (its pool, its sessions' options, the URL child processes use),
    /// and the other services.
    pub(crate) reach: Reach,
    /// Its sandboxes made ahead of demand.
    pub(crate) warm: Arc<Warm>,
    /// What its probes last found (only [`Service::Postgres`] is asked).
    probes: Probes,
}

/// A server's state for `/healthz` and the catalog.
pub use shared::catalog::PostgresServer as ServerState;
pub use shared::versions::{NoSuchVersion, major_of};

impl Server {
    pub(crate) fn new(name: String, version: String, reach: Reach, warm: Arc<Warm>) -> Server {
        Server {
            major: major_of(&version).unwrap_or(0),
            name,
            version,
            reach,
            warm,
            probes: Probes::default(),
        }
    }

    /// Whether it answers now. An answer seen a moment ago stands (a crowd's starts make one
    /// probe, not one each); so does a "down" younger than [`RETRY_DOWN_AFTER`].
    pub async fn probe(&self) -> Result<(), String> {
        let asked = Instant::now();
        if self.probes.recently_up(Service::Postgres, asked) {
            return Ok(());
        }
        if let Some(Err(why)) = self
            .probes
            .answered_since(Service::Postgres, asked.checked_sub(RETRY_DOWN_AFTER).unwrap_or(asked))
        {
            return Err(why);
        }
        self.probe_since(asked).await
    }

    /// Whether it answers, asked now whatever an earlier probe found (a run on it just failed).
    pub async fn probe_afresh(&self) -> Result<(), String> {
        self.probe_since(Instant::now()).await
    }

    /// Asks it in its turn, unless a probe that ended after `since` answered meanwhile (a start
    /// that waited for another's probe takes its answer).
    async fn probe_since(&self, since: Instant) -> Result<(), String> {
        let _turn = self.probes.turn(Service::Postgres).await;
        if let Some(found) = self.probes.answered_since(Service::Postgres, since) {
            return found;
        }
        let probed = self.ask().await;
        if probed.up { Ok(()) } else { Err(probed.detail) }
    }

    /// One probe, its answer remembered.
    async fn ask(&self) -> crate::health::Dependency {
        let started = Instant::now();
        let probed = crate::health::postgres(&self.reach.services).await;
        let found = if probed.up { Ok(()) } else { Err(probed.detail.clone()) };
        self.probes.answer(Service::Postgres, started, found);
        probed
    }

    /// Whether its latest probe found it down (without asking again): admission passes it over.
    pub fn seems_down(&self) -> bool {
        matches!(self.probes.last_found(Service::Postgres), Some(Err(_)))
    }

    /// Its state now, asked afresh.
    pub async fn state(&self) -> ServerState {
        let probed = self.ask().await;
        ServerState {
            name: self.name.clone(),
            version: self.version.clone(),
            major: self.major,
            up: probed.up,
            detail: probed.detail,
        }
    }
}

/// The servers a run asking for `major` may play on (none asked: the first server's version),
/// by their places in `servers`; an error names the versions there are.
pub fn of_major(servers: &[Arc<Server>], major: Option<u32>) -> Result<Vec<usize>, NoSuchVersion> {
    let wanted = major.or_else(|| servers.first().map(|s| s.major)).unwrap_or(0);
    let found: Vec<usize> = servers
        .iter()
        .enumerate()
        .filter(|(_, s)| s.major == wanted)
        .map(|(i, _)| i)
        .collect();
    if found.is_empty() {
        return Err(NoSuchVersion {
            asked: wanted,
            have: versions(servers),
        });
    }
    Ok(found)
}

/// The versions racelab plays on, each once, in the servers' order: `15, 18`.
pub fn versions(servers: &[Arc<Server>]) -> Vec<u32> {
    let mut majors: Vec<u32> = Vec::new();
    for server in servers {
        if !majors.contains(&server.major) {
            majors.push(server.major);
        }
    }
    majors
}
