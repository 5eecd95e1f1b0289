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
//! rejoins as soon as a probe finds it answering. A server that was already down when racelab
//! started (any but the first, whose database holds the run store) waits outside the rotation
//! with the reason, shown by `/healthz`; starts and the servers' list try it again, at most once
//! a second, and it joins (migrated, swept, its budget read) as soon as it answers.

use super::BoxFuture;
use super::leases::Leases;
use super::probes::Probes;
use super::run::Reach;
use super::supervisor::Engine;
use super::warm::Warm;
use shared::Service;
use std::sync::{Arc, Mutex, RwLock};
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
        // In its turn; a start that waited for another's probe takes that probe's answer.
        self.probe_unless(asked, Probes::answered_since).await
    }

    /// Whether it answers, asked now whatever an earlier probe found (a run on it just failed),
    /// on a connection made from now: only a probe started from now counts, not one under way,
    /// which may have found it up just before it stopped, and the probes' kept connection is
    /// dropped ([`crate::health::forget_kept_connection`]).
    pub async fn probe_afresh(&self) -> Result<(), String> {
        crate::health::forget_kept_connection(&self.reach.services).await;
        self.probe_unless(Instant::now(), Probes::started_since).await
    }

    /// Asks it in its turn, unless `answered` finds an answer since `since` meanwhile: one that
    /// ended since ([`Probes::answered_since`], for a start) or that started since
    /// ([`Probes::started_since`], after a failure).
    async fn probe_unless(
        &self,
        since: Instant,
        answered: fn(&Probes, Service, Instant) -> Option<Result<(), String>>,
    ) -> Result<(), String> {
        let _turn = self.probes.turn(Service::Postgres).await;
        if let Some(found) = answered(&self.probes, Service::Postgres, since) {
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

/// How long reaching a server may take (connecting, migrating, sweeping) before it is left
/// waiting: a host that drops packets would otherwise hold racelab's start, or a join, for the
/// system's two minutes of TCP retries.
pub const JOIN_TIMEOUT: Duration = Duration::from_secs(10);

/// A server reached: what runs need of it, its connection budget, and the leases every replica
/// takes on that budget.
pub struct Joining {
    pub server: Server,
    pub budget: u32,
    pub leases: Arc<Leases>,
}

/// How a server is reached at its URL, or why it could not be: given by what made the engine
/// (`db::connect_engine`), which knows the configuration.
pub type Connect = Box<dyn Fn(String) -> BoxFuture<'static, Result<Joining, String>> + Send + Sync>;

/// A list that only grows, read as a snapshot: an item keeps its place for good. The servers in
/// the rotation and their connections in admission are both such lists, counted by the same
/// places.
pub(crate) struct Places<T>(RwLock<Arc<[T]>>);

impl<T: Clone> Places<T> {
    pub(crate) fn new(items: Vec<T>) -> Self {
        Places(RwLock::new(items.into()))
    }

    /// The items now (one added later is not in this copy).
    pub(crate) fn now(&self) -> Arc<[T]> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Adds `item` in the next place; returns the place.
    pub(crate) fn push(&self, item: T) -> usize {
        let mut items = self.0.write().unwrap_or_else(|p| p.into_inner());
        let mut grown = items.to_vec();
        grown.push(item);
        *items = grown.into();
        items.len() - 1
    }
}

/// Whether `server` is already among `servers` (two URLs naming one server): it is played on
/// once, and the second name is logged and dropped.
pub(crate) fn named_twice(servers: &[Arc<Server>], server: &Server) -> bool {
    let twice = servers.iter().any(|s| s.name == server.name);
    if twice {
        tracing::warn!(server = %server.name, "named twice among the servers; playing on it once");
    }
    twice
}

/// The servers runs play on, in their places: those that answered when racelab started, then
/// those that joined later. A server keeps its place (admission counts its connections by it).
pub struct Servers {
    /// The first server, always in the first place.
    home: Arc<Server>,
    joined: Places<Arc<Server>>,
    /// Named in the configuration, not answered since racelab started.
    waiting: Mutex<Vec<Waiting>>,
    connect: Option<Connect>,
    /// One attempt to reach the waiting servers at a time, at most once per [`RETRY_DOWN_AFTER`].
    tries: Mutex<Tries>,
}

/// The attempts to reach the waiting servers: whether one is under way, and when the last began.
#[derive(Default)]
struct Tries {
    under_way: bool,
    last: Option<Instant>,
}

/// A server that has not answered since racelab started.
pub struct Waiting {
    pub url: String,
    /// `127.0.0.1:5433`
    pub name: String,
    pub why: String,
}

impl Servers {
    /// `joined` (the first is the home server) and those `waiting`, reached later by `connect`.
    /// Panics without a first server: `connect_engine` never makes an engine without one.
    pub fn new(joined: Vec<Arc<Server>>, waiting: Vec<Waiting>, connect: Option<Connect>) -> Servers {
        Servers {
            home: joined[0].clone(),
            joined: Places::new(joined),
            waiting: Mutex::new(waiting),
            connect,
            tries: Mutex::default(),
        }
    }

    /// The servers in the rotation now, in their places.
    pub fn all(&self) -> Arc<[Arc<Server>]> {
        self.joined.now()
    }

    /// The first server: racelab's store is in its database.
    pub fn home(&self) -> &Arc<Server> {
        &self.home
    }

    /// The servers not reached since racelab started, as `/healthz` shows them: down, with why.
    pub fn waiting(&self) -> Vec<ServerState> {
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|w| ServerState {
                name: w.name.clone(),
                version: String::new(),
                major: 0,
                up: false,
                detail: format!("not reached since racelab started: {}", w.why),
            })
            .collect()
    }

    /// The waiting servers' URLs, if it is time to try them again (and marks the attempt).
    fn due(&self) -> Option<Vec<String>> {
        let urls: Vec<String> = {
            let waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            waiting.iter().map(|w| w.url.clone()).collect()
        };
        if urls.is_empty() || self.connect.is_none() {
            return None;
        }
        let mut tries = self.tries.lock().unwrap_or_else(|p| p.into_inner());
        if tries.under_way || tries.last.is_some_and(|at| at.elapsed() < RETRY_DOWN_AFTER) {
            return None;
        }
        *tries = Tries {
            under_way: true,
            last: Some(Instant::now()),
        };
        Some(urls)
    }

    fn still_waiting(&self, url: &str, why: String) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(w) = waiting.iter_mut().find(|w| w.url == url) {
            w.why = why;
        }
    }

    fn stop_waiting(&self, url: &str) {
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|w| w.url != url);
    }

    /// The attempt to reach the waiting servers has ended.
    fn tried(&self) {
        self.tries.lock().unwrap_or_else(|p| p.into_inner()).under_way = false;
    }
}

impl Engine {
    /// Tries the servers not reached since racelab started, in the background, if it is time
    /// (see [`Servers`]): whoever asked does not wait on a server that may be gone.
    pub(crate) fn join_waiting(self: &Arc<Self>) {
        let Some(urls) = self.servers.due() else {
            return;
        };
        let engine = self.clone();
        tokio::spawn(async move {
            for url in urls {
                let Some(connect) = engine.servers.connect.as_ref() else {
                    break;
                };
                match tokio::time::timeout(JOIN_TIMEOUT, connect(url.clone())).await {
                    Ok(Ok(joining)) if !engine.is_closing() => engine.join(&url, joining),
                    Ok(Ok(_)) => break,
                    Ok(Err(why)) => engine.servers.still_waiting(&url, why),
                    Err(_) => engine
                        .servers
                        .still_waiting(&url, format!("no answer in {} s", JOIN_TIMEOUT.as_secs())),
                }
            }
            engine.servers.tried();
        });
    }

    /// A waiting server answered: it takes the next place, in admission as in the rotation.
    fn join(&self, url: &str, joining: Joining) {
        let Joining { server, budget, leases } = joining;
        self.servers.stop_waiting(url);
        if named_twice(&self.servers.all(), &server) {
            return;
        }
        // Admission first: a run placed on the new place must find its connections there.
        let place = self.admission.add_server(budget, Some(leases));
        let (name, version) = (server.name.clone(), server.version.clone());
        let at = self.servers.joined.push(Arc::new(server));
        debug_assert_eq!(place, at, "a server's place is the same in admission and the rotation");
        tracing::info!(server = %name, %version, connections = budget, "a server down when racelab started answers: runs play here too");
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
