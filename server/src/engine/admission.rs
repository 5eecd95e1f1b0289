//! Admission: how many runs play at once, and a fair queue for the rest.
//!
//! The scarce things are the shared services' connections: PostgreSQL's above all (each actor
//! has its own, plus a monitor per run), then Redis connections, broker clients and child
//! processes. A run asks each pool for what its [`Budget`] says it will hold, always in the same
//! order, so two runs never each hold what the other waits for. The semaphores are fair (first
//! in, first served), so a load test needing 17 slots is not starved by a stream of small runs.
//! While a run waits it is told its place in line whenever the line moves.
//!
//! PostgreSQL's connections are counted per server ([`super::servers`]): a run is placed on the
//! server, among those of its version, with the most room, or on the first where room frees up.
//! Each server's connections are shared with every other racelab replica playing on it: once a
//! run has its place here, it also takes a lease on the budget they share ([`super::leases`])
//! before it opens a connection.
//!
//! Connections are not the only limit. Runs that play by themselves (not step by step) also
//! take one of a few places ([`Admission::playing_at_most`]): past a few per core they only
//! slow each other down. Every run's sandbox is new tables, and PostgreSQL tells every session
//! of every catalog change. Measured on 2 cores, a crowd of 200 write skews was served
//! 1.11–1.32× faster 6 at a time than 23–29 at a time in three benches of four (docs/performance.md,
//! "Measured speed"). A run played step by step mostly waits for its reader and takes no such
//! place.

use super::BoxFuture;
use super::budget::{Budget, Capacity, POOLED};
use super::leases::{Lease, Leases};
use super::servers::Places;
use shared::{Mode, Service};
use sqlx::postgres::PgConnection;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use thiserror::Error;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

/// How long a run may take to get in before it is told its place in line.
const TELL_AFTER: std::time::Duration = std::time::Duration::from_millis(50);
/// A waiting run is told its new place at most this often: every run that gets in moves the
/// whole line, so a line of a thousand told at every move is a million messages (and a
/// million scans of the line) for a thousand runs, which is what slowed a crowd of 1,000 to
/// half the runs a second of a crowd of 200.
const TELL_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// A run asked for more of a service than the server may ever give one run.
#[derive(Debug, Error)]
#[error("this run needs {needed} {what}, but the server allows at most {capacity}")]
pub struct TooBig {
    pub needed: u32,
    pub capacity: u32,
    /// `PostgreSQL connections`, `Redis connections`, …
    pub what: &'static str,
}

/// Why a run was not admitted.
#[derive(Debug, Error)]
pub enum NotAdmitted {
    #[error(transparent)]
    TooBig(#[from] TooBig),
    /// The shared budget could not be asked: the server (by its place in the servers' order)
    /// is unreachable.
    #[error("PostgreSQL could not be asked for this run's connections: {error}")]
    Postgres { server: usize, error: sqlx::Error },
}

/// What admission calls one unit of a service, for messages.
fn unit_of(service: Service) -> &'static str {
    match service {
        Service::Postgres => "PostgreSQL connections",
        Service::Redis => "Redis connections",
        Service::Kafka => "broker clients",
        Service::Process => "child processes",
        Service::Mariadb => "MariaDB connections",
        Service::Http => "HTTP servers",
    }
}

/// The gate runs pass through before they open any connection.
pub struct Admission {
    /// Each PostgreSQL server's connections, in the servers' order. A server that joins later
    /// (down when racelab started) is added at the end, so a server's place never changes.
    servers: Places<Slots>,
    /// One fair semaphore per other pooled service, in [`POOLED`] order.
    pools: Vec<(Service, Arc<Semaphore>, u32)>,
    /// Places for runs that play by themselves, and how many (none: no such limit).
    playing: Option<(Arc<Semaphore>, usize)>,
    next_ticket: AtomicU64,
    line: Mutex<VecDeque<u64>>,
    moved: watch::Sender<()>,
}

/// One server's connections: a fair semaphore of this process's runs, its size, and the budget
/// shared with other replicas (none in unit tests of the line).
#[derive(Clone)]
struct Slots {
    pool: Arc<Semaphore>,
    size: u32,
    leases: Option<Arc<Leases>>,
}

/// A run's place: holds its slots in every pool, and its lease, until released or dropped.
pub struct Admitted {
    /// The server it plays on, by its place in the servers' order.
    pub server: usize,
    _slots: Vec<OwnedSemaphorePermit>,
    lease: Option<Lease>,
    /// Sessions a finished run left under the lease, for this run to take ([`super::kept`]).
    kept: Vec<PgConnection>,
}

impl Admitted {
    /// The sessions kept for this run (taken once).
    pub fn take_kept(&mut self) -> Vec<PgConnection> {
        std::mem::take(&mut self.kept)
    }

    /// Gives everything back, the shared lease before the process's own slots; `sessions`
    /// (reset) stay under the lease for the next run.
    pub async fn release(mut self, sessions: Vec<PgConnection>) {
        if let Some(lease) = self.lease.take() {
            lease.keep(sessions).await;
        }
    }
}

impl Admission {
    /// Pools of `capacity`, shared by all runs of this process, on one PostgreSQL server whose
    /// connections are shared with other replicas through `leases`.
    pub fn new(capacity: Capacity, leases: Option<Arc<Leases>>) -> Self {
        Admission::on_servers(vec![(capacity.postgres, leases)], capacity)
    }

    /// Pools of `capacity` but PostgreSQL's, which is each server's: `(connections, leases)`.
    pub fn on_servers(servers: Vec<(u32, Option<Arc<Leases>>)>, capacity: Capacity) -> Self {
        Admission {
            servers: Places::new(
                servers
                    .into_iter()
                    .map(|(size, leases)| Slots::new(size, leases))
                    .collect(),
            ),
            playing: None,
            pools: POOLED
                .iter()
                .filter(|&&service| service != Service::Postgres)
                .map(|&service| {
                    let size = capacity.of(service);
                    (service, Arc::new(Semaphore::new(size as usize)), size)
                })
                .collect(),
            next_ticket: AtomicU64::new(0),
            line: Mutex::new(VecDeque::new()),
            moved: watch::Sender::new(()),
        }
    }

    /// The servers' connections now (a server that joins later is not in an older copy).
    fn slots(&self) -> Arc<[Slots]> {
        self.servers.now()
    }

    /// Adds a server that joined after racelab started (it was down then), with `size`
    /// connections shared with other replicas through `leases`; returns its place.
    pub fn add_server(&self, size: u32, leases: Option<Arc<Leases>>) -> usize {
        self.servers.push(Slots::new(size, leases))
    }

    /// At most `runs` runs play by themselves at once; the others wait in the same fair line.
    pub fn playing_at_most(self, runs: usize) -> Self {
        Admission {
            playing: Some((Arc::new(Semaphore::new(runs)), runs)),
            ..self
        }
    }

    /// How many runs may play by themselves at once, if that is limited.
    pub fn runs_at_once(&self) -> Option<usize> {
        self.playing.as_ref().map(|(_, runs)| *runs)
    }

    /// How many of each service but PostgreSQL a run holds for `budget`, or the whole pool for
    /// the service it needs to itself (PostgreSQL cannot be had to oneself: it is many servers).
    fn needs(&self, budget: &Budget) -> Vec<(Arc<Semaphore>, u32, Service, u32)> {
        self.pools
            .iter()
            .map(|(service, pool, size)| {
                let mut needed = budget.of(*service);
                if budget.exclusive == Some(*service) {
                    needed = *size;
                }
                (pool.clone(), needed, *service, *size)
            })
            .collect()
    }

    /// Waits for what `budget` holds, and for a place to play if the run plays by itself
    /// (`mode`), on the first server it may play on (`on` the first of them, in the servers'
    /// order). If the run has to wait, `on_position` hears its place in line (1 = next) at
    /// once and again whenever the line moves. Dropping the future leaves the line.
    pub fn enter<'a>(
        &'a self,
        budget: Budget,
        mode: Mode,
        on_position: impl FnMut(usize) + Send + 'a,
    ) -> BoxFuture<'a, Result<Admitted, NotAdmitted>> {
        Box::pin(self.wait_in_line(budget, mode, Placement::first(), on_position))
    }

    /// [`Admission::enter`], on one of the servers `placement` allows.
    pub fn enter_on<'a>(
        &'a self,
        budget: Budget,
        mode: Mode,
        placement: Placement<'a>,
        on_position: impl FnMut(usize) + Send + 'a,
    ) -> BoxFuture<'a, Result<Admitted, NotAdmitted>> {
        Box::pin(self.wait_in_line(budget, mode, placement, on_position))
    }

    async fn wait_in_line(
        &self,
        budget: Budget,
        mode: Mode,
        placement: Placement<'_>,
        mut on_position: impl FnMut(usize),
    ) -> Result<Admitted, NotAdmitted> {
        let needs = self.needs(&budget);
        if let Some(too_big) = more_than_a_pool_holds(&needs) {
            return Err(too_big.into());
        }
        // Its own sessions and the monitor, on a server big enough for them.
        let connections = budget.sessions();
        let servers = self.slots();
        let fits = servers_big_enough(&servers, &placement.allowed, connections)?;
        let ticket = self.next_ticket.fetch_add(1, Ordering::SeqCst);
        let _place = Place::join(self, ticket);
        let mut moved = self.moved.subscribe();
        let playing = self
            .playing
            .as_ref()
            .filter(|_| mode == Mode::Auto)
            .map(|(places, _)| places.clone());
        let acquire = self.take_all(playing, (servers, fits, placement, connections), needs);
        tokio::pin!(acquire);
        // A run that gets in at once (its lease is one short transaction away) is never told it
        // waits: its page would flash "queued" for nothing.
        let grace = tokio::time::sleep(TELL_AFTER);
        tokio::pin!(grace);
        let mut last_told = None;
        loop {
            tokio::select! {
                biased;
                admitted = &mut acquire => return admitted,
                () = &mut grace, if last_told.is_none() => {}
                changed = moved.changed() => {
                    let _ = changed;
                    if last_told.is_none() {
                        continue;
                    }
                    // The moves of the next moment are told together.
                    let quiet = tokio::time::sleep(TELL_EVERY);
                    tokio::pin!(quiet);
                    tokio::select! {
                        biased;
                        admitted = &mut acquire => return admitted,
                        () = &mut quiet => {}
                    }
                    moved.borrow_and_update();
                }
            }
            let position = self.position(ticket);
            if last_told != Some(position) {
                on_position(position);
                last_told = Some(position);
            }
        }
    }

    /// Takes everything a run holds, in the one order every run takes it in (so two runs never
    /// each hold what the other waits for): a place to play (`playing`, for a run that plays by
    /// itself), its connections on one of the servers that `fit` it, the other services' `needs`,
    /// and last the lease on the connections other replicas share.
    async fn take_all(
        &self,
        playing: Option<Arc<Semaphore>>,
        (servers, fits, placement, connections): (Arc<[Slots]>, Vec<usize>, Placement<'_>, u32),
        needs: Vec<(Arc<Semaphore>, u32, Service, u32)>,
    ) -> Result<Admitted, NotAdmitted> {
        let mut held = Vec::new();
        // A place to play first, then the services, always in this order.
        if let Some(places) = playing
            && let Ok(place) = places.acquire_owned().await
        {
            held.push(place);
        }
        let (server, connections_held) = self.place(&servers, &fits, &placement, connections).await;
        held.extend(connections_held);
        for (pool, needed, _, _) in needs {
            if needed > 0 {
                // The semaphores are never closed.
                if let Ok(permit) = pool.acquire_many_owned(needed).await {
                    held.push(permit);
                }
            }
        }
        let (lease, kept) = match &servers[server].leases {
            Some(leases) => {
                let (lease, kept) = leases
                    .take(connections)
                    .await
                    .map_err(|error| NotAdmitted::Postgres { server, error })?;
                (Some(lease), kept)
            }
            None => (None, Vec::new()),
        };
        Ok(Admitted {
            server,
            _slots: held,
            lease,
            kept,
        })
    }

    /// Takes `connections` on one of the servers `fits` (each big enough): the one with the
    /// most room now among those not passed over, or else the first where room frees up.
    /// Returns its place in the servers' order.
    async fn place(
        &self,
        servers: &[Slots],
        fits: &[usize],
        placement: &Placement<'_>,
        connections: u32,
    ) -> (usize, Option<OwnedSemaphorePermit>) {
        loop {
            let answering: Vec<usize> = fits.iter().copied().filter(|&i| !(placement.passed_over)(i)).collect();
            // Every server of the version seems down: wait on them all, the run will say which
            // went.
            let candidates = if answering.is_empty() { fits.to_vec() } else { answering };
            let mut by_room = candidates.clone();
            by_room.sort_by_key(|&i| std::cmp::Reverse(servers[i].pool.available_permits()));
            for &i in &by_room {
                // Fair: permits are free only while nobody waits for them.
                if let Ok(permit) = servers[i].pool.clone().try_acquire_many_owned(connections) {
                    return (i, Some(permit));
                }
            }
            let waits = candidates.iter().map(|&i| {
                let pool = servers[i].pool.clone();
                Box::pin(async move { (i, pool.acquire_many_owned(connections).await.ok()) })
            });
            // The waits not chosen are dropped, giving back what they were assigned.
            let ((server, permit), _, _) = futures_util::future::select_all(waits).await;
            // Room freed on a server that went down meanwhile (its runs failed): not there,
            // while another answers.
            let others_answer = candidates.iter().any(|&i| i != server && !(placement.passed_over)(i));
            if (placement.passed_over)(server) && others_answer {
                continue;
            }
            return (server, permit);
        }
    }

    /// Closes the sessions kept between runs; none are kept from now on.
    pub async fn close_kept(&self) {
        futures_util::future::join_all(
            self.slots()
                .iter()
                .filter_map(|s| s.leases.as_ref())
                .map(|l| l.close_kept()),
        )
        .await;
    }

    /// Whether a finished run's sessions are kept for the next runs.
    pub fn keeps_sessions(&self) -> bool {
        self.slots()
            .iter()
            .any(|s| s.leases.as_ref().is_some_and(|l| l.keeps()))
    }

    /// How many sessions are kept for the next runs, on every server.
    pub fn kept_sessions(&self) -> usize {
        self.slots()
            .iter()
            .filter_map(|s| s.leases.as_ref())
            .map(|l| l.kept_sessions())
            .sum()
    }

    /// The size of `service`'s pool (PostgreSQL's: every server's together).
    pub fn capacity(&self, service: Service) -> u32 {
        if service == Service::Postgres {
            return self.slots().iter().map(|s| s.size).sum();
        }
        self.pools
            .iter()
            .find(|(s, _, _)| *s == service)
            .map_or(0, |(_, _, size)| *size)
    }

    /// How many of `service`'s pool runs hold now, and the pool's size (PostgreSQL's: every
    /// server's together; [`Admission::connections_in_use`] for one).
    pub fn in_use(&self, service: Service) -> (u32, u32) {
        if service == Service::Postgres {
            return self
                .slots()
                .iter()
                .map(|s| in_use(&s.pool, s.size))
                .fold((0, 0), |(a, b), (c, d)| (a + c, b + d));
        }
        self.pools
            .iter()
            .find(|(s, _, _)| *s == service)
            .map_or((0, 0), |(_, pool, size)| in_use(pool, *size))
    }

    /// How many of server `server`'s connections runs of this process hold now, and how many
    /// they may.
    pub fn connections_in_use(&self, server: usize) -> (u32, u32) {
        self.slots().get(server).map_or((0, 0), |s| in_use(&s.pool, s.size))
    }

    /// How many runs are in line (waiting, or passing through on their way in).
    pub fn waiting(&self) -> usize {
        self.line.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    fn position(&self, ticket: u64) -> usize {
        let line = self.line.lock().unwrap_or_else(|p| p.into_inner());
        line.iter().position(|t| *t == ticket).map_or(1, |i| i + 1)
    }
}

impl Slots {
    fn new(size: u32, leases: Option<Arc<Leases>>) -> Slots {
        Slots {
            pool: Arc::new(Semaphore::new(size as usize)),
            size,
            leases,
        }
    }
}

/// How many of a pool of `size` are held.
fn in_use(pool: &Semaphore, size: u32) -> (u32, u32) {
    let free = u32::try_from(pool.available_permits()).unwrap_or(size);
    (size.saturating_sub(free), size)
}

/// The first service of `needs` (pool, needed, service, pool size) a run asks more of than its
/// pool holds: refused at once, as no wait would ever let it in.
fn more_than_a_pool_holds(needs: &[(Arc<Semaphore>, u32, Service, u32)]) -> Option<TooBig> {
    let (_, needed, service, capacity) = needs.iter().find(|(_, needed, _, size)| needed > size)?;
    Some(TooBig {
        needed: *needed,
        capacity: *capacity,
        what: unit_of(*service),
    })
}

/// The servers among `allowed` big enough for a run's `connections`, in the order allowed; if
/// none is, the refusal names the biggest of them.
fn servers_big_enough(servers: &[Slots], allowed: &[usize], connections: u32) -> Result<Vec<usize>, TooBig> {
    let fits: Vec<usize> = allowed
        .iter()
        .copied()
        .filter(|&i| servers.get(i).is_some_and(|s| s.size >= connections))
        .collect();
    if fits.is_empty() {
        return Err(TooBig {
            needed: connections,
            capacity: allowed
                .iter()
                .filter_map(|&i| servers.get(i).map(|s| s.size))
                .max()
                .unwrap_or(0),
            what: unit_of(Service::Postgres),
        });
    }
    Ok(fits)
}

/// Where a run may be placed: the servers it may play on (by place in the servers' order), and
/// those to pass over while another answers (seen down).
pub struct Placement<'a> {
    pub allowed: Vec<usize>,
    pub passed_over: &'a (dyn Fn(usize) -> bool + Send + Sync),
}

impl Placement<'static> {
    /// The first server, whatever its state (one server, or unit tests of the line).
    pub fn first() -> Self {
        Placement {
            allowed: vec![0],
            passed_over: &|_| false,
        }
    }
}

/// A ticket in the line; leaving (admitted or gone) tells everyone behind that the line moved.
struct Place<'a> {
    admission: &'a Admission,
    ticket: u64,
}

impl<'a> Place<'a> {
    fn join(admission: &'a Admission, ticket: u64) -> Self {
        admission
            .line
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(ticket);
        Place { admission, ticket }
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.admission
            .line
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|t| *t != self.ticket);
        self.admission.moved.send_replace(());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Admission {
        /// A line with no other replica to share PostgreSQL with.
        fn new_alone(capacity: Capacity) -> Self {
            Admission::new(capacity, None)
        }
    }

    fn capacity(postgres: u32, redis: u32) -> Capacity {
        Capacity {
            postgres,
            redis,
            ..Capacity::default()
        }
    }

    /// A run of `budget` entering on a task of its own; its places in line arrive on the
    /// receiver, and the task ends once it is admitted.
    fn enter_on_its_own(
        admission: &Arc<Admission>,
        budget: Budget,
    ) -> (
        tokio::task::JoinHandle<Result<(), NotAdmitted>>,
        tokio::sync::mpsc::UnboundedReceiver<usize>,
    ) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let admission = admission.clone();
        let entering = tokio::spawn(async move {
            admission
                .enter(budget, Mode::Auto, move |p| {
                    let _ = tx.send(p);
                })
                .await
                .map(|_| ())
        });
        (entering, rx)
    }

    #[tokio::test]
    async fn second_run_waits_in_line_until_the_first_leaves() {
        let admission = Arc::new(Admission::new_alone(capacity(3, 10)));
        let first = admission
            .enter(Budget::postgres(2), Mode::Auto, |_| {})
            .await
            .expect("fits");
        let (waiting, mut rx) = enter_on_its_own(&admission, Budget::postgres(1));
        assert_eq!(rx.recv().await, Some(1));
        drop(first);
        waiting.await.expect("join").expect("admitted");
    }

    #[tokio::test]
    async fn a_run_bigger_than_the_server_is_refused() {
        let admission = Admission::new_alone(capacity(3, 10));
        let error = admission
            .enter(Budget::postgres(3), Mode::Auto, |_| {})
            .await
            .err()
            .expect("too big");
        assert_eq!(
            error.to_string(),
            "this run needs 4 PostgreSQL connections, but the server allows at most 3"
        );
        assert!(
            admission
                .enter(Budget::postgres(0).and_redis(11), Mode::Auto, |_| {})
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn fifty_redis_actors_hold_redis_connections_not_postgres_slots() {
        // Room for two monitors only: fifty Redis lanes must still fit beside another run.
        let admission = Admission::new_alone(capacity(2, 100));
        let locks = admission
            .enter(Budget::postgres(0).and_redis(50), Mode::Auto, |_| {})
            .await
            .expect("fifty Redis connections and one monitor fit");
        let other = admission
            .enter(Budget::postgres(0).and_redis(50), Mode::Auto, |_| {})
            .await
            .expect("so does a second such run");
        drop((locks, other));
    }

    #[tokio::test]
    async fn a_run_that_needs_redis_to_itself_waits_for_every_other_redis_run() {
        let admission = Arc::new(Admission::new_alone(capacity(10, 100)));
        let other = admission
            .enter(Budget::postgres(0).and_redis(1), Mode::Auto, |_| {})
            .await
            .expect("fits");
        let (alone, mut rx) = enter_on_its_own(&admission, Budget::postgres(0).exclusive(Service::Redis));
        assert_eq!(
            rx.recv().await,
            Some(1),
            "it waits while another run holds a Redis connection"
        );
        drop(other);
        alone.await.expect("join").expect("admitted once Redis is free");
    }

    #[tokio::test]
    async fn runs_that_play_by_themselves_wait_for_a_place_and_step_runs_do_not() {
        let admission = Arc::new(Admission::new_alone(capacity(20, 10)).playing_at_most(1));
        assert_eq!(admission.runs_at_once(), Some(1));
        let first = admission
            .enter(Budget::postgres(1), Mode::Auto, |_| {})
            .await
            .expect("fits");
        let stepped = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            admission.enter(Budget::postgres(1), Mode::Step, |_| {}),
        )
        .await
        .expect("a step-by-step run takes no place to play")
        .expect("fits");
        let (second, mut rx) = enter_on_its_own(&admission, Budget::postgres(1));
        assert_eq!(rx.recv().await, Some(1), "the second run waits, told it is next");
        drop(stepped);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(!second.is_finished(), "a step run leaving frees no place to play");
        drop(first);
        second.await.expect("join").expect("admitted once the first left");
    }
}
