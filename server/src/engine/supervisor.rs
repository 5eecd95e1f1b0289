//! The supervisor: takes a run from the queue to its sandbox, plays it, and cleans up whatever
//! happens.
//!
//! The scenario plays on its own task; the supervisor stays outside it, forwarding events,
//! passing `next` to the step gate, and watching for cancel, disconnect and the time limit. When
//! the scenario ends — finished, failed, aborted — the supervisor destroys the sandbox (ending every
//! session the run opened, its child processes' included, and removing its keys, topics and
//! groups) while it stores the events for replay, and only then says `done`.

use super::admission::{Admitted, NotAdmitted, Placement};
use super::events::EventSink;
use super::run::{Gate, Limits, Reach, Run};
use super::servers::{NoSuchVersion, Server, ServerState, Servers};
use super::signal::raised;
use super::{Admission, RunError, Scenario};
use crate::sandbox::{self, Sandbox};
use crate::store::Store;
use shared::{Event, EventKind, Mode, Outcome, ScenarioInfo, ServerMsg, Service};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use thiserror::Error;
use tokio::sync::{mpsc, watch};

/// Everything runs need: the PostgreSQL servers they play on, the queue and the store.
pub struct Engine {
    /// The servers runs play on, the first racelab's home: the store lives in its database,
    /// and its version is the one a run plays on unless asked for another. Those down when
    /// racelab started join when they answer.
    pub(crate) servers: Servers,
    /// The version a run plays on unless asked for another (`--postgres`); none: the home
    /// server's.
    pub(crate) default_postgres: Option<u32>,
    pub(crate) admission: Admission,
    pub(crate) limits: Limits,
    pub(crate) store: Store,
    pub(crate) live: LiveRuns,
    pub(crate) pace: Pace,
    /// When Redis and the broker last answered a probe (each server keeps its own).
    pub(crate) probes: super::probes::Probes,
    /// Runs started and finished, their waits and durations (`/metrics`).
    pub(crate) metrics: super::metrics::Metrics,
    /// MariaDB's version as its last probe found it (`MariaDB 10.11.19`): the header of a run
    /// that plays there.
    pub(crate) mariadb_version: std::sync::Mutex<Option<String>>,
    /// MariaDB sandboxes made ahead of demand, with their lab's tables.
    pub(crate) mariadb_shelf: Arc<super::mariadb::Shelf>,
}

/// The services' state, PostgreSQL's being the home server's.
fn health_of(
    home: Option<&ServerState>,
    (redis, kafka): (crate::health::Dependency, crate::health::Dependency),
) -> crate::health::Health {
    crate::health::Health {
        postgres: crate::health::Dependency {
            up: home.is_some_and(|s| s.up),
            detail: home.map_or_else(String::new, |s| s.detail.clone()),
        },
        redis,
        kafka,
    }
}

/// How long runs take lately (a moving average), to tell a reader refused by a full line when
/// to come back.
#[derive(Default)]
pub(crate) struct Pace {
    average_ms: std::sync::atomic::AtomicU64,
}

impl Pace {
    fn record(&self, took: Duration) {
        let took = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        let _ = self
            .average_ms
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |average| {
                Some(if average == 0 { took } else { (average * 7 + took) / 8 })
            });
    }

    /// Seconds until a place frees up for one more run behind `waiting` others, with `playing`
    /// runs ahead (at least 1 s).
    fn retry_after_s(&self, waiting: usize, playing: usize) -> u64 {
        retry_after_s(self.average_ms.load(Ordering::SeqCst), waiting, playing)
    }
}

/// `waiting + 1` runs' worth of the average run time, shared by the runs that play at once.
fn retry_after_s(average_ms: u64, waiting: usize, playing: usize) -> u64 {
    let average_ms = if average_ms == 0 { 1_000 } else { average_ms };
    let ahead = u64::try_from(waiting + 1).unwrap_or(u64::MAX);
    let lanes = u64::try_from(playing.max(1)).unwrap_or(1);
    (average_ms.saturating_mul(ahead) / lanes).div_ceil(1_000).max(1)
}

#[cfg(test)]
mod pace_tests {
    use super::retry_after_s;

    #[test]
    fn the_wait_grows_with_the_line_and_shrinks_with_the_runs_playing() {
        assert_eq!(retry_after_s(0, 0, 0), 1, "no measure yet: a second");
        assert_eq!(retry_after_s(200, 9, 2), 1);
        assert_eq!(retry_after_s(2_000, 9, 2), 10);
        assert_eq!(retry_after_s(2_000, 99, 4), 50);
    }
}

/// The runs in flight, so that a server asked to stop can let them finish (for a while), cancel
/// the rest, and wait until each has cleaned its sandbox, instead of leaving schemas, keys and
/// processes for the next sweep.
pub(crate) struct LiveRuns {
    count: watch::Sender<usize>,
    /// No new run starts, and queued ones are cancelled.
    closing: watch::Sender<bool>,
    /// Running ones are cancelled too.
    cancelling: watch::Sender<bool>,
}

impl Default for LiveRuns {
    fn default() -> Self {
        LiveRuns {
            count: watch::Sender::new(0),
            closing: watch::Sender::new(false),
            cancelling: watch::Sender::new(false),
        }
    }
}

/// One run counted in [`LiveRuns`] until dropped.
struct LiveRun<'a>(&'a LiveRuns);

impl LiveRuns {
    fn enter(&self) -> LiveRun<'_> {
        self.count.send_modify(|n| *n += 1);
        LiveRun(self)
    }
}

impl Drop for LiveRun<'_> {
    fn drop(&mut self) {
        self.0.count.send_modify(|n| *n -= 1);
    }
}

/// What the client can ask of a running run.
#[derive(Debug)]
enum Control {
    Next,
    Cancel,
}

/// The longest a replay takes: a run that took longer plays faster, keeping its rhythm.
pub const REPLAY_AT_MOST: Duration = Duration::from_millis(shared::recording::REPLAY_AT_MOST_MS);

/// Sends `run`'s start, events (each at its moment, scaled to fit [`REPLAY_AT_MOST`]) and end to
/// `reader`, until it ends or is cancelled.
async fn replay(
    run: crate::store::StoredRun,
    reader: mpsc::Sender<ServerMsg>,
    mut orders: mpsc::UnboundedReceiver<Control>,
) {
    let began = tokio::time::Instant::now();
    let span = run.events.last().map_or(0, |e| e.at_ms);
    let at_most = shared::recording::REPLAY_AT_MOST_MS;
    let due = |at_ms: u64| began + Duration::from_millis(shared::recording::replay_at(at_ms, span, at_most));
    let _ = reader.send(ServerMsg::Started { run_id: run.id.clone() }).await;
    for event in run.events {
        let when = due(event.at_ms);
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(when) => break,
                order = orders.recv() => if matches!(order, Some(Control::Cancel) | None) {
                    let cancelled = ServerMsg::Done { run_id: run.id, outcome: Outcome::Cancelled };
                    let _ = reader.send(cancelled).await;
                    return;
                },
            }
        }
        if reader.send(ServerMsg::Event { event }).await.is_err() {
            return;
        }
    }
    let _ = reader
        .send(ServerMsg::Done {
            run_id: run.id,
            outcome: run.outcome,
        })
        .await;
}

/// A started run, seen from its client (the websocket or the CLI). Dropping it cancels the run.
pub struct RunHandle {
    /// Queue position, start, events and done, in order. Ends after `Done`, or early if the
    /// reader fell behind (see [`RunHandle::fell_behind`]).
    pub updates: mpsc::Receiver<ServerMsg>,
    control: mpsc::UnboundedSender<Control>,
    lagged: Arc<AtomicBool>,
    pub mode: Mode,
}

impl RunHandle {
    /// Step mode: let exactly one more step play.
    pub fn next(&self) {
        let _ = self.control.send(Control::Next);
    }

    /// Stops the run; its sandbox is cleaned and a `Done { Cancelled }` follows.
    pub fn cancel(&self) {
        let _ = self.control.send(Control::Cancel);
    }

    /// A run that already happened, played again from its stored events at its own pace (sped
    /// up to last at most [`REPLAY_AT_MOST`]): what a room shows for a lesson's recording round.
    /// Nothing runs on a database; `cancel` ends it with `Done { Cancelled }`.
    pub fn replay(run: crate::store::StoredRun) -> RunHandle {
        let (to_reader, updates) = mpsc::channel(64);
        let (control, orders) = mpsc::unbounded_channel();
        tokio::spawn(replay(run, to_reader, orders));
        RunHandle {
            updates,
            control,
            lagged: Arc::new(AtomicBool::new(false)),
            mode: Mode::Auto,
        }
    }

    /// Whether the reader left more than [`Limits::reader_backlog`] messages unread, so the run
    /// was cancelled (and cleaned) and `updates` ended without its `Done`.
    pub fn fell_behind(&self) -> bool {
        self.lagged.load(Ordering::SeqCst)
    }
}

/// The way to a run's reader: bounded, so a reader who stops reading cannot make the server
/// hold the run in memory for it; once the backlog is full the reader has fallen behind.
struct ReaderLink {
    tx: mpsc::Sender<ServerMsg>,
    lagged: Arc<AtomicBool>,
}

impl ReaderLink {
    /// Sends `message` unless the reader has fallen behind (then it is dropped and marked).
    fn send(&self, message: ServerMsg) {
        if self.fell_behind() {
            return;
        }
        if let Err(mpsc::error::TrySendError::Full(_)) = self.tx.try_send(message) {
            self.lagged.store(true, Ordering::SeqCst);
        }
    }

    fn fell_behind(&self) -> bool {
        self.lagged.load(Ordering::SeqCst)
    }
}

/// Why a run could not even be queued.
#[derive(Debug, Error)]
pub enum StartError {
    #[error("unknown variant {variant:?} for {scenario}; choose one of: {valid}")]
    UnknownVariant {
        scenario: String,
        variant: String,
        valid: String,
    },
    /// Step mode for a scenario that cannot pause between steps.
    #[error("{0} cannot be played step by step; start it in auto mode")]
    NotSteppable(String),
    /// The server is stopping (SIGTERM, Ctrl-C).
    #[error("racelab is shutting down; no new runs start")]
    ShuttingDown,
    /// The line is full: a clear answer now instead of a long silent wait.
    #[error("racelab is busy: {waiting} runs are waiting already; try again in {retry_after_s} s")]
    QueueFull { waiting: usize, retry_after_s: u64 },
    /// No server plays the PostgreSQL version asked for.
    #[error(transparent)]
    NoSuchVersion(#[from] NoSuchVersion),
    /// A service the run needs is not answering: refused before it queues, never left to hang.
    #[error("{scenario} needs {service}, which is down right now ({detail}); the other labs still work")]
    ServiceDown {
        scenario: String,
        service: &'static str,
        detail: String,
    },
}

impl Engine {
    /// The home server: racelab's store is in its database.
    fn home(&self) -> &Arc<Server> {
        self.servers.home()
    }

    /// Whether the engine is closing: no new runs, and no server joins.
    pub(crate) fn is_closing(&self) -> bool {
        *self.live.closing.borrow()
    }

    /// Whether Redis or the broker answers right now, and if not, why (each PostgreSQL server is
    /// asked by its own [`Server::probe`]).
    async fn probe(&self, service: Service) -> Result<(), String> {
        let services = &self.home().reach.services;
        let asked = std::time::Instant::now();
        if self.probes.recently_up(service, asked) {
            return Ok(());
        }
        let _turn = self.probes.turn(service).await;
        // The probe this start waited for answered: that is its answer too.
        if let Some(found) = self.probes.answered_since(service, asked) {
            return found;
        }
        let started = std::time::Instant::now();
        let probed = match service {
            Service::Redis => crate::health::redis(&services.redis_url).await,
            Service::Kafka => crate::health::kafka(&services.brokers).await,
            Service::Mariadb => self.mariadb().await,
            Service::Postgres | Service::Http | Service::Process => return Ok(()),
        };
        let dependency = crate::health::explained(services, service, probed);
        let found = if dependency.up { Ok(()) } else { Err(dependency.detail) };
        self.probes.answer(service, started, found.clone());
        found
    }

    /// Why a run asking for a version no server in the rotation has is refused: that version
    /// is not played here, or (while a server has not answered since racelab started, and may
    /// be of that version) its server may be the one that is down.
    fn not_yet_joined(&self, scenario: String, missing: NoSuchVersion) -> StartError {
        let waiting = self.servers.waiting();
        if waiting.is_empty() {
            return StartError::NoSuchVersion(missing);
        }
        let down = waiting
            .iter()
            .map(|s| format!("{} ({})", s.name, s.detail))
            .collect::<Vec<_>>()
            .join("; ");
        StartError::ServiceDown {
            scenario,
            service: Service::Postgres.label(),
            detail: format!("no server of PostgreSQL {} answers; {down}", missing.asked),
        }
    }

    /// Runs playing or waiting now, and runs finished since the engine started: what the
    /// catalog's vacuum watches to find racelab idle.
    pub fn activity(&self) -> (usize, u64) {
        (*self.live.count.borrow(), self.metrics.finished_total())
    }

    /// The engine's part of `/metrics` in Prometheus's text format: runs started and finished,
    /// waits and durations, the line, runs playing, sandboxes alive (playing and made ahead),
    /// and PostgreSQL connections in use of the budget, by server.
    pub fn metrics(&self, out: &mut String) {
        use super::metrics::{counter, gauge, label};
        self.metrics.render(out);
        let waiting = self.admission.waiting();
        let live = *self.live.count.borrow();
        let playing = live.saturating_sub(waiting);
        gauge(
            out,
            "racelab_queue_length",
            "Runs waiting in line.",
            &[("", waiting as f64)],
        );
        gauge(
            out,
            "racelab_runs_playing",
            "Runs playing now.",
            &[("", playing as f64)],
        );
        let ready = self.ready_sandboxes().len();
        gauge(
            out,
            "racelab_sandboxes_alive",
            "Sandboxes of runs playing, and made ahead of demand.",
            &[("", (playing + ready) as f64)],
        );
        let servers = self.servers.all();
        let reused: u64 = servers.iter().map(|s| s.warm.reused()).sum();
        counter(
            out,
            "racelab_sandboxes_reused_total",
            "Sandboxes of completed runs reset and put back for the next run, instead of destroyed and made again.",
            &[("", reused as f64)],
        );
        let (labels, held): (Vec<String>, Vec<(u32, u32)>) = servers
            .iter()
            .enumerate()
            .map(|(i, server)| {
                let labels = format!("{{server=\"{}\",version=\"{}\"}}", label(&server.name), server.major);
                (labels, self.admission.connections_in_use(i))
            })
            .unzip();
        let by_server = |pick: fn(&(u32, u32)) -> u32| {
            labels
                .iter()
                .zip(&held)
                .map(|(labels, held)| (labels.as_str(), f64::from(pick(held))))
                .collect::<Vec<_>>()
        };
        gauge(
            out,
            "racelab_connections_in_use",
            "PostgreSQL connections runs hold now, by server.",
            &by_server(|(in_use, _)| *in_use),
        );
        gauge(
            out,
            "racelab_connections_budget",
            "PostgreSQL connections runs may hold at once, by server.",
            &by_server(|(_, budget)| *budget),
        );
        self.mariadb_metrics(out);
    }

    /// MariaDB's state now (`/healthz`), its version remembered for run headers and `/metrics`.
    pub async fn mariadb(&self) -> crate::health::Dependency {
        let found = crate::health::mariadb(&self.home().reach.services.mariadb_url).await;
        if found.up {
            *self.mariadb_version.lock().unwrap_or_else(|p| p.into_inner()) = Some(found.detail.clone());
        }
        found
    }

    /// MariaDB's part of `/metrics`: its version as its last probe found it (no sample until a
    /// run or `/healthz` asked), its sandboxes made ahead and taken.
    fn mariadb_metrics(&self, out: &mut String) {
        use super::metrics::{counter, gauge, label};
        let version = self.mariadb_version.lock().map(|v| v.clone()).unwrap_or_default();
        let info = version.map(|v| format!("{{version=\"{}\"}}", label(&v)));
        gauge(
            out,
            "racelab_mariadb_info",
            "The MariaDB runs on MariaDB play on, by version (1 once a probe found it).",
            &info.iter().map(|labels| (labels.as_str(), 1.0)).collect::<Vec<_>>(),
        );
        let (ready, taken, _) = self.ready_on_mariadb();
        gauge(
            out,
            "racelab_mariadb_sandboxes_ready",
            "MariaDB sandboxes made ahead of demand, with their lab's tables.",
            &[("", ready as f64)],
        );
        counter(
            out,
            "racelab_mariadb_sandboxes_taken_total",
            "Runs that took a MariaDB sandbox made ahead instead of making their own.",
            &[("", taken as f64)],
        );
    }

    /// Every service's state right now (for the catalog), remembered so that a start right
    /// after a probe found a service down asks again instead of trusting an older answer.
    pub async fn health(&self) -> crate::health::Health {
        let home = self.home();
        let (postgres, others) = tokio::join!(home.state(), self.redis_and_broker());
        health_of(Some(&postgres), others)
    }

    /// `/healthz`'s answer: every service, and every server in the rotation, each asked once
    /// (the home server is the `postgres` service).
    pub async fn health_and_servers(self: &Arc<Self>) -> (crate::health::Health, Vec<ServerState>) {
        let (servers, others) = tokio::join!(self.servers(), self.redis_and_broker());
        // The home server is always the first.
        (health_of(servers.first(), others), servers)
    }

    /// Redis's and the broker's state right now, remembered (see [`Engine::health`]).
    async fn redis_and_broker(&self) -> (crate::health::Dependency, crate::health::Dependency) {
        let started = std::time::Instant::now();
        let (redis, kafka) = crate::health::redis_and_broker(&self.home().reach.services).await;
        self.probes.record(Service::Redis, redis.up, started);
        self.probes.record(Service::Kafka, kafka.up, started);
        (redis, kafka)
    }

    /// Every server's URL, in the servers' order.
    pub fn server_urls(&self) -> Vec<String> {
        self.servers
            .all()
            .iter()
            .map(|s| s.reach.database_url.clone())
            .collect()
    }

    /// The PostgreSQL versions runs play on, each once, in the servers' order.
    pub fn versions(&self) -> Vec<u32> {
        super::servers::versions(&self.servers.all())
    }

    /// The URL of the first server of PostgreSQL `major` (where a proof plays a run again).
    pub fn url_of(&self, major: u32) -> Option<String> {
        self.servers
            .all()
            .iter()
            .find(|s| s.major == major)
            .map(|s| s.reach.database_url.clone())
    }

    /// Whether a server here plays PostgreSQL `major`; if none does, which versions there are.
    pub fn plays(&self, major: u32) -> Result<(), super::servers::NoSuchVersion> {
        super::servers::of_major(&self.servers.all(), Some(major)).map(|_| ())
    }

    /// The PostgreSQL version runs play on unless asked for another.
    pub fn default_postgres(&self) -> u32 {
        self.default_postgres.unwrap_or(self.home().major)
    }

    /// Every PostgreSQL server runs play on, with its version, asked afresh (a server found
    /// down is taken out of the rotation; one found up rejoins it). A server not reached since
    /// racelab started is tried again meanwhile ([`Engine::waiting_servers`] lists them).
    pub async fn servers(self: &Arc<Self>) -> Vec<ServerState> {
        self.join_waiting();
        futures_util::future::join_all(self.servers.all().iter().map(|s| s.state())).await
    }

    /// The servers named in the configuration that have not answered since racelab started,
    /// each down with the reason: they join the rotation when they answer.
    pub fn waiting_servers(&self) -> Vec<ServerState> {
        self.servers.waiting()
    }

    /// Where runs on the home server reach their shared services (and where the sweep cleans
    /// up); [`Engine::services_of`] for every server's.
    pub fn services(&self) -> &crate::sandbox::Services {
        &self.home().reach.services
    }

    /// The services of every server runs play on, in the servers' order, with each server's
    /// name.
    pub fn services_of(&self) -> Vec<(String, crate::sandbox::Services)> {
        self.servers
            .all()
            .iter()
            .map(|s| (s.name.clone(), s.reach.services.clone()))
            .collect()
    }

    /// Drains the engine: refuses new runs and cancels queued ones, lets running ones finish for
    /// at most `finish`, then cancels the rest and waits (at most `cleanup`) until each has
    /// destroyed its sandbox. Returns how many runs were still live at the end (0 normally).
    pub async fn close(&self, finish: Duration, cleanup: Duration) -> usize {
        self.live.closing.send_replace(true);
        let mut count = self.live.count.subscribe();
        let _ = tokio::time::timeout(finish, count.wait_for(|n| *n == 0)).await;
        self.live.cancelling.send_replace(true);
        let _ = tokio::time::timeout(cleanup, count.wait_for(|n| *n == 0)).await;
        let left = *count.borrow();
        // No run takes a ready sandbox or a kept session any more: they go too.
        let servers = self.servers.all();
        tokio::join!(
            futures_util::future::join_all(servers.iter().map(|s| s.warm.empty())),
            self.admission.close_kept(),
            self.mariadb_shelf.empty()
        );
        left
    }

    /// How many PostgreSQL sessions finished runs left for the next runs (`engine::kept`).
    pub fn kept_sessions(&self) -> usize {
        self.admission.kept_sessions()
    }

    /// The sandboxes ready for the next runs (made ahead of demand, or reset after a run).
    pub fn ready_sandboxes(&self) -> Vec<super::warm::ReadySandbox> {
        self.servers.all().iter().flat_map(|s| s.warm.ready()).collect()
    }

    /// MariaDB sandboxes ready for the next runs, with their lab's tables; how many runs took
    /// one so far, and how many completed runs' sandboxes were reset and put back.
    pub fn ready_on_mariadb(&self) -> (usize, usize, usize) {
        let shelf = &self.mariadb_shelf;
        (shelf.len(), shelf.taken(), shelf.reused())
    }

    /// PostgreSQL connections runs may hold at once (every replica together).
    pub fn connection_budget(&self) -> u32 {
        self.admission.capacity(Service::Postgres)
    }

    /// How many runs may play by themselves at once, if that is limited.
    pub fn runs_at_once(&self) -> Option<usize> {
        self.admission.runs_at_once()
    }

    /// The limits every run is held to (the sweep's age threshold comes from them).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Queues a run of `scenario`'s `variant` and returns its handle once it is queued. A run
    /// whose services are down is refused here, with the reason.
    pub async fn start(
        self: &Arc<Self>,
        scenario: impl super::IntoScenario,
        variant: &str,
        mode: Mode,
    ) -> Result<RunHandle, StartError> {
        self.start_on(scenario, variant, mode, None).await
    }

    /// [`Engine::start`] on PostgreSQL `postgres` (a major version, `18`), or on the home
    /// server's version.
    pub async fn start_on(
        self: &Arc<Self>,
        scenario: impl super::IntoScenario,
        variant: &str,
        mode: Mode,
        postgres: Option<u32>,
    ) -> Result<RunHandle, StartError> {
        let scenario = scenario.into_scenario();
        let info = scenario.info();
        self.refuse_at_once(&info, variant, mode)?;
        self.join_waiting();
        let servers = self.servers.all();
        let allowed = super::servers::of_major(&servers, postgres.or(self.default_postgres))
            .map_err(|missing| self.not_yet_joined(info.id.clone(), missing))?;
        let answers = futures_util::future::join_all(allowed.iter().map(|&i| servers[i].probe())).await;
        some_server_answers(&servers, &allowed, answers, &info.id)?;
        for service in scenario.budget(variant).services() {
            if service == Service::Postgres {
                continue;
            }
            if let Err(detail) = self.probe(service).await {
                return Err(StartError::ServiceDown {
                    scenario: info.id,
                    service: service.label(),
                    detail,
                });
            }
        }
        let (updates_tx, updates) = mpsc::channel(self.limits.reader_backlog.max(1));
        let lagged = Arc::new(AtomicBool::new(false));
        let (control, control_rx) = mpsc::unbounded_channel();
        let link = ReaderLink {
            tx: updates_tx,
            lagged: lagged.clone(),
        };
        let request = Request {
            scenario,
            info,
            variant: variant.to_owned(),
            mode,
        };
        tokio::spawn(self.clone().supervise(request, allowed, link, control_rx));
        Ok(RunHandle {
            updates,
            control,
            lagged,
            mode,
        })
    }

    /// The refusals a start needs to ask no service for, in this order: a variant the scenario
    /// does not have, an engine that is closing, a full line, and step mode for a scenario that
    /// cannot pause between steps.
    fn refuse_at_once(&self, info: &ScenarioInfo, variant: &str, mode: Mode) -> Result<(), StartError> {
        if info.variant(variant).is_none() {
            let valid = info
                .variants
                .iter()
                .map(|v| v.id.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            return Err(StartError::UnknownVariant {
                scenario: info.id.clone(),
                variant: variant.to_owned(),
                valid,
            });
        }
        if *self.live.closing.borrow() {
            return Err(StartError::ShuttingDown);
        }
        let waiting = self.admission.waiting();
        if waiting >= self.limits.max_queue {
            let playing = (*self.live.count.borrow()).saturating_sub(waiting);
            return Err(StartError::QueueFull {
                waiting,
                retry_after_s: self.pace.retry_after_s(waiting, playing),
            });
        }
        if mode == Mode::Step && !info.steppable {
            return Err(StartError::NotSteppable(info.id.clone()));
        }
        Ok(())
    }

    async fn supervise(
        self: Arc<Self>,
        request: Request,
        allowed: Vec<usize>,
        updates: ReaderLink,
        mut control: mpsc::UnboundedReceiver<Control>,
    ) {
        let _live = self.live.enter();
        let entered = std::time::Instant::now();
        // Admission places the run among these (a server joining later is not one of them).
        let servers = self.servers.all();
        let Some(mut admitted) = self
            .wait_for_place(&request, allowed, &servers, &updates, &mut control)
            .await
        else {
            return;
        };
        // Where it plays (the home server if it was never admitted, for the header's version).
        let server = servers[admitted.as_ref().map_or(0, |a| a.server)].clone();
        // A sandbox ready on the shelf if there is one (made ahead, or reset after another run):
        // it keeps the id it was made with; the run has its own.
        let ready = admitted
            .as_ref()
            .ok()
            .and_then(|_| server.warm.take(request.scenario.sandbox_for(&request.variant)));
        let run_id = sandbox::new_stored_run_id();
        updates.send(ServerMsg::Started { run_id: run_id.clone() });
        let mut pipe = EventPipe::new(&updates);
        let mariadb = self.mariadb_version.lock().unwrap_or_else(|p| p.into_inner()).clone();
        pipe.sink.emit(run_started(&request, &run_id, (&server, mariadb)));
        let Ended {
            outcome,
            sandbox,
            kept,
            mariadb,
        } = match &mut admitted {
            Err(refused) => {
                let message = why_refused(refused, &servers).await;
                Ended::failed(message)
            }
            Ok(admitted) => {
                let placed = (&*server, run_id.as_str(), ready);
                self.play_counted(&request, (entered, admitted), placed, &mut pipe, &mut control)
                    .await
            }
        };
        if outcome == Outcome::Completed
            && let Some((choice, why)) = request.scenario.reveal(&request.variant)
        {
            pipe.sink.emit(EventKind::Reveal { choice, why });
        }
        pipe.sink.emit(EventKind::Done {
            outcome: outcome.clone(),
        });
        let events = pipe.drain();
        // Stored and cleaned at once (neither needs the other); `done` only after both, so a
        // reader who has it finds the run stored and nothing of it left (a completed run's
        // sandbox, reset, may wait on the shelf for the next run: `engine::warm`).
        // MariaDB's sandbox (removed, or reset for the next run) goes at the same time.
        tokio::join!(
            self.store_and_clean(&request, &server, sandbox, (&run_id, &outcome, &events)),
            async {
                if let Some(closing) = mariadb {
                    let _ = closing.await;
                }
            }
        );
        // Its place goes back before the reader hears `done`: a process that exits on it (the
        // command line, a test) leaves no lease for others to wait out.
        if let Ok(admitted) = admitted {
            // Its sessions, reset, stay under its lease for the next run (`engine::kept`).
            admitted.release(kept).await;
        }
        updates.send(ServerMsg::Done { run_id, outcome });
        // Not while the engine closes: `close` empties the shelves once the last run is done.
        if !*self.live.closing.borrow() {
            server.warm.refill(request.scenario.sandbox_for(&request.variant));
        }
    }

    /// Waits in line for the run's place on one of the servers `allowed` (among `servers`,
    /// passing over those that seem down), telling the reader its place as the line moves.
    /// `None` if the reader cancelled or went, or the engine began to close, first: the reader
    /// has heard `done` already.
    async fn wait_for_place(
        &self,
        request: &Request,
        allowed: Vec<usize>,
        servers: &[Arc<Server>],
        updates: &ReaderLink,
        control: &mut mpsc::UnboundedReceiver<Control>,
    ) -> Option<Result<Admitted, NotAdmitted>> {
        let budget = request.scenario.budget(&request.variant);
        // The engine outlives every run, so its flags' senders do too.
        let mut closing = self.live.closing.subscribe();
        let passed_over = |i: usize| servers.get(i).is_none_or(|s| s.seems_down());
        let placement = Placement {
            allowed,
            passed_over: &passed_over,
        };
        tokio::select! {
            admitted = self.admission.enter_on(budget, request.mode, placement, |position| updates.send(ServerMsg::Queued { position })) => Some(admitted),
            () = raised(&mut closing) => {
                updates.send(ServerMsg::Done { run_id: String::new(), outcome: Outcome::Cancelled });
                None
            }
            () = cancelled(control) => {
                updates.send(ServerMsg::Done { run_id: String::new(), outcome: Outcome::Cancelled });
                None
            }
        }
    }

    /// [`Engine::play`], counted: the run's wait in line (since it `entered`) and its time go to
    /// the metrics, a completed auto run's time to the pace a reader refused by a full line is
    /// told, and a failure names its server if that server stopped answering.
    async fn play_counted(
        &self,
        request: &Request,
        (entered, admitted): (std::time::Instant, &mut Admitted),
        (server, run_id, ready): (&Server, &str, Option<Sandbox>),
        pipe: &mut EventPipe<'_>,
        control: &mut mpsc::UnboundedReceiver<Control>,
    ) -> Ended {
        let began = std::time::Instant::now();
        self.metrics.started(&request.info.id, entered.elapsed());
        let kept = admitted.take_kept();
        let ended = self.play(request, (server, run_id, ready, kept), pipe, control).await;
        let outcome = ended.outcome.clone();
        if request.mode == Mode::Auto && outcome == Outcome::Completed {
            self.pace.record(began.elapsed());
        }
        let outcome = naming_a_lost_server(server, outcome).await;
        let ended_as = match &outcome {
            Outcome::Completed => "completed",
            Outcome::Failed { .. } => "failed",
            Outcome::Cancelled => "cancelled",
        };
        self.metrics.finished(&request.info.id, ended_as, began.elapsed());
        Ended { outcome, ..ended }
    }

    /// Stores run `run_id`'s `events` while its sandbox goes (destroyed, or put back on the
    /// shelf after a completed run). A sandbox whose services are down goes as soon as they are
    /// back.
    async fn store_and_clean(
        &self,
        request: &Request,
        server: &Server,
        sandbox: Option<Sandbox>,
        (run_id, outcome, events): (&str, &Outcome, &[Event]),
    ) {
        let (stored, destroyed) = tokio::join!(
            self.store
                .save(run_id, &request.info.id, &request.variant, outcome, events),
            async {
                match &sandbox {
                    Some(sandbox) if *outcome == Outcome::Completed => {
                        server
                            .warm
                            .take_back(sandbox.clone(), request.scenario.sandbox_for(&request.variant))
                            .await
                    }
                    Some(sandbox) => sandbox.destroy(&server.reach.services).await,
                    None => Ok(()),
                }
            }
        );
        if let Err(error) = stored {
            tracing::warn!(run = %run_id, %error, "could not store the run");
        }
        if let (Err(error), Some(sandbox)) = (destroyed, sandbox) {
            // A service is down (PostgreSQL restarting, Redis gone): the sandbox goes as soon as
            // it is back, not at the next sweep.
            tracing::warn!(run = %run_id, %error, "could not destroy the sandbox yet; trying again until its services are back");
            tokio::spawn(sandbox.destroy_when_back(server.reach.services.clone(), self.limits.sweep_age()));
        }
    }

    /// Creates the sandbox on `server` (unless one `ready` was made ahead for run `run_id`), readies its
    /// sessions (from those `kept` for it first) and plays the scenario on its own task; returns
    /// how it ended, the sandbox for its caller to destroy (none if it could not be made), and
    /// the run's sessions, reset, if they are to be kept for the next run.
    async fn play(
        &self,
        request: &Request,
        (server, run_id, ready, kept): (&Server, &str, Option<Sandbox>, Vec<sqlx::postgres::PgConnection>),
        pipe: &mut EventPipe<'_>,
        control: &mut mpsc::UnboundedReceiver<Control>,
    ) -> Ended {
        let (scenario, variant, mode) = (&request.scenario, request.variant.as_str(), request.mode);
        let services = &server.reach.services;
        let budget = scenario.budget(variant);
        let reach = self.reach_for(server, mode, budget.of(shared::Service::Mariadb));
        // The monitor and the actors' sessions connect while the sandbox is made: none waits
        // for another. A sandbox made for this run gets an id of its own, never the run's: its
        // names are seen by every role on the server, and the run's id fetches its transcript.
        let names = ready
            .clone()
            .unwrap_or_else(|| Sandbox::plan(&sandbox::new_run_id(), scenario.sandbox_for(variant)));
        sandbox::remember(run_id, &names.run_id);
        let ahead = scenario.sessions_ahead(variant);
        // Its budget and its monitor: the most sessions of its own the run may hold.
        let most = usize::try_from(budget.sessions()).unwrap_or(usize::MAX);
        let (made, sessions) = tokio::join!(
            async {
                match ready {
                    Some(sandbox) => Ok(sandbox),
                    None => Sandbox::create(services, &names.run_id, scenario.sandbox_for(variant)).await,
                }
            },
            Run::connect_sessions(&names, &reach, &ahead, kept, (self.admission.keeps_sessions(), most))
        );
        let sandbox = match made {
            Ok(sandbox) => sandbox,
            Err(error) => {
                return Ended::failed(format!("could not create the sandbox: {error}"));
            }
        };
        let (permits, gate_rx) = mpsc::unbounded_channel();
        let gate = (mode == Mode::Step).then(|| Gate::new(gate_rx));
        let opened = sessions.map(|sessions| {
            Run::open(
                sandbox.clone(),
                reach,
                pipe.sink.clone(),
                gate,
                self.limits.clone(),
                sessions,
            )
        });
        match opened {
            Err(error) => Ended {
                sandbox: Some(sandbox),
                ..Ended::failed(error.to_string())
            },
            Ok(run) => Ended {
                sandbox: Some(sandbox),
                ..self.watch_over(request, run, &permits, pipe, control).await
            },
        }
    }

    /// How the run's sessions reach `server`: as every run's, but for a run played step by step
    /// (`mode`), whose lock and statement waits last as long as its idle limit.
    fn reach_for(&self, server: &Server, mode: Mode, mariadb_sessions: u32) -> Reach {
        let mut reach = server.reach.clone();
        // A run played by itself may take a MariaDB sandbox made ahead; one played step by
        // step makes its own, with its longer statement bound, and so does one that holds more
        // sessions there than a sandbox made ahead allows (the load test's sixteen workers).
        let fits_the_shelf = mariadb_sessions <= crate::sandbox::mariadb::Bounds::default().connections;
        reach.mariadb_shelf = (mode == Mode::Auto && fits_the_shelf).then(|| self.mariadb_shelf.clone());
        reach.mariadb_sessions = mariadb_sessions;
        if mode == Mode::Step {
            // A reader may think for minutes while an actor waits for a lock: the wait must not
            // time out before the run's idle limit does. (Later `-c` options win.)
            // Set on each session as it takes the run, so a kept session keeps none of it.
            let idle = format!("{}ms", self.limits.idle_in_transaction_timeout.as_millis());
            reach.settings = vec![("lock_timeout", idle.clone()), ("statement_timeout", idle)];
        }
        reach
    }

    /// Plays the scenario on `run` on a task of its own, and stays outside it until the run
    /// ends ([`Engine::until_it_ends`]). Returns how it ended and, if it completed, its
    /// sessions, reset, for the next run.
    async fn watch_over(
        &self,
        request: &Request,
        run: Run,
        permits: &mpsc::UnboundedSender<()>,
        pipe: &mut EventPipe<'_>,
        control: &mut mpsc::UnboundedReceiver<Control>,
    ) -> Ended {
        let needs = request.scenario.budget(&request.variant).services();
        let (scenario, variant) = (request.scenario.clone(), request.variant.clone());
        let playing = run.clone();
        let mut task = tokio::spawn(async move { scenario.play(&playing, &variant).await });
        let (outcome, finished) = self.until_it_ends(&mut task, needs, permits, pipe, control).await;
        if outcome != Outcome::Completed {
            // Its actors' sessions are closed, not reset: a reset one would take a name
            // the sandbox's cleanup does not look for.
            run.abandon();
        }
        if !finished {
            // Dropping the scenario drops its actors; their sessions end with the sandbox.
            task.abort();
            let _ = task.await;
        }
        // Whatever happened: MariaDB's sandbox is removed, or for a completed run reset for
        // the next (`engine::mariadb::shelf`), while the run is stored.
        let completed = outcome == Outcome::Completed;
        let closing = run.clone();
        let mariadb = tokio::spawn(async move { closing.close_mariadb(completed).await });
        // A completed run's sessions are reset and kept for the next run (`kept`).
        let kept = match outcome {
            Outcome::Completed if self.admission.keeps_sessions() => run.hand_back().await,
            _ => Vec::new(),
        };
        Ended {
            outcome,
            sandbox: None,
            kept,
            mariadb: Some(mariadb),
        }
    }

    /// Forwards the run's events to its reader and passes `next` to its step gate (`permits`)
    /// until the scenario's `task` ends, or the reader cancels, goes or falls behind, or the
    /// engine cancels its runs, or a service the run `needs` is lost, or its time is up.
    /// Returns how the run ended, and whether its task finished by itself.
    async fn until_it_ends(
        &self,
        task: &mut tokio::task::JoinHandle<Result<(), RunError>>,
        needs: Vec<Service>,
        permits: &mpsc::UnboundedSender<()>,
        pipe: &mut EventPipe<'_>,
        control: &mut mpsc::UnboundedReceiver<Control>,
    ) -> (Outcome, bool) {
        let limit = tokio::time::sleep(self.limits.max_duration);
        tokio::pin!(limit);
        let mut cancelling = self.live.cancelling.subscribe();
        let shutdown = raised(&mut cancelling);
        tokio::pin!(shutdown);
        let lost = self.watch_services(needs);
        tokio::pin!(lost);
        let mut finished = false;
        let outcome = loop {
            tokio::select! {
                Some(event) = pipe.events_rx.recv() => {
                    pipe.forward(event);
                    // A reader this far behind is gone: its run stops and is cleaned.
                    if pipe.updates.fell_behind() {
                        break Outcome::Cancelled;
                    }
                }
                joined = &mut *task => break {
                    finished = true;
                    match joined {
                    Ok(Ok(())) => Outcome::Completed,
                    Ok(Err(error)) => Outcome::Failed { message: error.for_reader() },
                    Err(_) => Outcome::Failed { message: "the scenario crashed; see the server log".into() },
                    }
                },
                command = control.recv() => match command {
                    Some(Control::Next) => { let _ = permits.send(()); }
                    Some(Control::Cancel) | None => break Outcome::Cancelled,
                },
                () = &mut shutdown => break Outcome::Cancelled,
                (service, detail) = &mut lost => break lost_service(&pipe.sink, service, detail),
                () = &mut limit => break Outcome::Failed {
                    message: RunError::TooLong(self.limits.max_duration.as_secs()).to_string(),
                },
            }
        };
        (outcome, finished)
    }

    /// Ends, with the service and why, when a service among `services` that the run cannot
    /// notice losing by itself has stopped answering. PostgreSQL and Redis clients fail at once when their server goes (the
    /// lost connection is the actor's error); librdkafka instead reconnects in the background
    /// until a message times out (30 s), so a run whose broker went would sit silent. The broker
    /// is probed every second while the run plays; two failed probes in a row end the run (one
    /// could be a busy machine's slow answer). Never ends for a run without a broker.
    async fn watch_services(&self, services: Vec<Service>) -> (Service, String) {
        if !services.contains(&Service::Kafka) {
            return std::future::pending().await;
        }
        let mut failed = 0;
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            match self.probe(Service::Kafka).await {
                Ok(()) => failed = 0,
                Err(detail) => {
                    failed += 1;
                    if failed >= 2 {
                        return (Service::Kafka, detail);
                    }
                }
            }
        }
    }
}

/// A failed run's outcome, naming its server if the server no longer answers: the reader of
/// "alice: connection closed" learns that PostgreSQL went, and which. The server is asked
/// afresh, and found down it is passed over by the next runs until it answers again.
async fn naming_a_lost_server(server: &Server, outcome: Outcome) -> Outcome {
    let Outcome::Failed { message } = outcome else {
        return outcome;
    };
    match server.probe_afresh().await {
        Ok(()) => Outcome::Failed { message },
        Err(why) => Outcome::Failed {
            message: format!(
                "the PostgreSQL server this run played on ({} at {}) stopped answering ({why}): {message}",
                server.version, server.name
            ),
        },
    }
}

/// How a run ended, and what its cleanup is handed: its sandbox on PostgreSQL (none if it could
/// not be made), its sessions to keep, and its MariaDB sandbox going (removed, or reset for the
/// next run) on a task of its own, awaited beside storing the run.
struct Ended {
    outcome: Outcome,
    sandbox: Option<Sandbox>,
    kept: Vec<sqlx::postgres::PgConnection>,
    mariadb: Option<tokio::task::JoinHandle<()>>,
}

impl Ended {
    fn failed(message: String) -> Ended {
        Ended {
            outcome: Outcome::Failed { message },
            sandbox: None,
            kept: Vec::new(),
            mariadb: None,
        }
    }
}

/// A run as it was asked for: the scenario (and its catalog entry), the variant, and how it
/// plays. Every step of its supervision reads it.
struct Request {
    scenario: Arc<dyn Scenario>,
    info: ScenarioInfo,
    variant: String,
    mode: Mode,
}

/// The head of a run's transcript: what plays, who plays it, and on which server (MariaDB's
/// version, as its probe found it, for a run that plays there: one whose budget is MariaDB's
/// sessions, a `mariadb-…` variant's or a MariaDB spec's).
fn run_started(request: &Request, run_id: &str, (server, mariadb): (&Server, Option<String>)) -> EventKind {
    let on_mariadb = request.scenario.budget(&request.variant).services() == [Service::Mariadb];
    EventKind::RunStarted {
        run_id: run_id.to_owned(),
        scenario: request.info.id.clone(),
        variant: request.variant.clone(),
        title: request.info.title.clone(),
        actors: request.scenario.actors(&request.variant),
        server: match mariadb {
            Some(version) if on_mariadb => version,
            None if on_mariadb => "MariaDB".to_owned(),
            _ => server.version.clone(),
        },
    }
}

/// Refuses a run none of whose servers (`allowed`, of `servers`) answered its probe
/// (`answers`, in the same order), saying why each did not; one that answers is enough
/// (admission passes over the others while they are down).
fn some_server_answers(
    servers: &[Arc<Server>],
    allowed: &[usize],
    answers: Vec<Result<(), String>>,
    scenario: &str,
) -> Result<(), StartError> {
    if answers.iter().all(Result::is_err) {
        let detail = allowed
            .iter()
            .zip(answers)
            .map(|(&i, answer)| {
                let why = answer.err().unwrap_or_default();
                format!("{} at {}: {why}", servers[i].version, servers[i].name)
            })
            .collect::<Vec<_>>()
            .join("; ");
        return Err(StartError::ServiceDown {
            scenario: scenario.to_owned(),
            service: Service::Postgres.label(),
            detail,
        });
    }
    Ok(())
}

/// Why a run was not admitted, in its reader's words, naming the server it was placed on if
/// that server could not be asked for its connections.
async fn why_refused(refused: &NotAdmitted, servers: &[Arc<Server>]) -> String {
    match refused {
        NotAdmitted::Postgres { server, error } => {
            let server = &servers[*server];
            // Asked afresh, so that the next runs pass it over while it is down.
            let _ = server.probe_afresh().await;
            format!(
                "the PostgreSQL server this run was placed on ({} at {}) could not be asked for its connections: {error}",
                server.version, server.name
            )
        }
        other => other.to_string(),
    }
}

/// How a run ends when `service` stopped answering (`detail`): an error on the service's own
/// lane, then the run fails with it.
fn lost_service(sink: &EventSink, service: Service, detail: String) -> Outcome {
    sink.emit(EventKind::Error {
        actor: service.label().to_owned(),
        // Drawn against its service (`timeline::service_of_error`).
        kind: match service {
            Service::Kafka => shared::ErrorKind::Broker,
            _ => shared::ErrorKind::Connection,
        },
        code: None,
        message: format!("stopped answering: {detail}"),
    });
    Outcome::Failed {
        message: RunError::ServiceLost { service, detail }.to_string(),
    }
}

/// A run's event stream: the sink its actors emit into, and the way out, where each event goes
/// to the client and is kept for the store.
struct EventPipe<'a> {
    sink: Arc<EventSink>,
    events_rx: mpsc::UnboundedReceiver<Event>,
    updates: &'a ReaderLink,
    kept: Vec<Event>,
}

impl<'a> EventPipe<'a> {
    fn new(updates: &'a ReaderLink) -> Self {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        EventPipe {
            sink: Arc::new(EventSink::new(events_tx)),
            events_rx,
            updates,
            kept: Vec::new(),
        }
    }

    fn forward(&mut self, event: Event) {
        self.kept.push(event.clone());
        self.updates.send(ServerMsg::Event { event });
    }

    /// Forwards what is still queued and returns every event of the run, in order.
    fn drain(mut self) -> Vec<Event> {
        while let Ok(event) = self.events_rx.try_recv() {
            self.forward(event);
        }
        self.kept
    }
}

/// Resolves when the client cancels or goes away; `next` while queued is ignored.
async fn cancelled(control: &mut mpsc::UnboundedReceiver<Control>) {
    while let Some(command) = control.recv().await {
        if let Control::Cancel = command {
            return;
        }
    }
}
