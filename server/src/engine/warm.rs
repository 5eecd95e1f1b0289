//! Sandboxes made ahead of demand: a reader who presses Run gets a sandbox that is already there
//! (schemas created and seeded, topics made), and a new one is made in the background for the
//! next reader.
//!
//! A sandbox is played in by one run at a time, and comes back as new: when a run completes, its
//! sandbox is reset ([`Sandbox::reset`]: its rows, sequences and Redis keys put back as made, no
//! DDL) and put back on the shelf for the next run of its lab ([`Warm::take_back`]). A run that
//! failed or was cancelled destroys its sandbox, as does one whose lab has broker topics, one
//! the run changed the shape of, one that held [`MOST_RUNS`] runs, and one the shelf has no room
//! for. What the shelf keeps is only ever fresh: a kind of sandbox nobody asked for in
//! [`UNWANTED_AFTER`] is taken down, and one that waited longer than [`STALE_AFTER`] is replaced
//! (another replica's startup sweep removes registered sandboxes older than a run may live, and a
//! shelf's must never look like that; a reset renews its registry row). Every sandbox on a shelf
//! is registered like any other, so a crash leaves nothing the sweep cannot find.
//! `RACELAB_WARM_SANDBOXES` says how many to make ready per kind; the tests keep none (and so
//! reuse none), so each test's leftovers are its own runs'.

use crate::sandbox::{Sandbox, SandboxError, Services, Spec, new_run_id};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::Instant;

/// A kind of sandbox nobody asked for in this long is taken down.
const UNWANTED_AFTER: Duration = Duration::from_secs(5 * 60);
/// A sandbox that waited this long on the shelf is replaced by a fresh one.
const STALE_AFTER: Duration = Duration::from_secs(10 * 60);
/// How long emptying the shelves waits for sandboxes still being made.
const FILLS_END_WITHIN: Duration = Duration::from_secs(15);
/// How often the shelves are looked over.
const LOOK_OVER_EVERY: Duration = Duration::from_secs(30);
/// Runs one sandbox holds before it is destroyed rather than reset: every reset leaves the
/// deleted rows behind as dead tuples until a vacuum, and on a server with autovacuum off
/// nothing else would bound them (a hundred runs' worth is a few pages).
pub const MOST_RUNS: u32 = 100;
/// The most reset sandboxes a shelf keeps, whatever the runs at once.
const MOST_ON_A_SHELF: usize = 32;

pub struct Warm {
    services: Services,
    /// Ready sandboxes to make per kind that readers ask for.
    keep: usize,
    /// How many a shelf keeps when runs give theirs back: as many as may play at once, so that
    /// a crowd's runs take turns in the same few sandboxes (never fewer than `keep`).
    room: usize,
    shelves: Mutex<Vec<Shelf>>,
    /// Emptied for good (the engine is closing): nothing is made or kept any more.
    closed: std::sync::atomic::AtomicBool,
    /// Sandboxes reset and put back on a shelf so far.
    reused: std::sync::atomic::AtomicU64,
    /// Fill tasks running: [`Warm::empty`] waits for them, so a sandbox being made as the
    /// server stops is destroyed before the process exits, not left half made.
    fills: tokio::sync::watch::Sender<usize>,
}

/// A sandbox on a shelf, as the engine reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadySandbox {
    /// The run it was made for: its namespaces carry this id.
    pub run_id: String,
    /// How many runs have played in it (0: made ahead and not taken yet).
    pub runs: u32,
}

/// The ready sandboxes of one kind (one lab's [`Spec`]).
struct Shelf {
    kind: u64,
    spec: Spec,
    ready: Vec<(Sandbox, Instant)>,
    wanted_at: Instant,
    /// A task is making sandboxes for this shelf.
    filling: bool,
}

/// What tells two specs apart: their schemas (names and SQL), Redis and topics.
fn kind_of(spec: &Spec) -> u64 {
    let mut hasher = DefaultHasher::new();
    spec.schemas.hash(&mut hasher);
    spec.redis.hash(&mut hasher);
    spec.topics.hash(&mut hasher);
    hasher.finish()
}

impl Warm {
    /// Shelves keeping `keep` ready sandboxes per kind (none: every run makes its own, and
    /// destroys it), and up to `runs_at_once` that runs gave back.
    pub fn new(services: Services, keep: usize, runs_at_once: usize) -> Arc<Warm> {
        let warm = Arc::new(Warm {
            services,
            keep,
            room: runs_at_once.clamp(keep, MOST_ON_A_SHELF.max(keep)),
            shelves: Mutex::new(Vec::new()),
            reused: std::sync::atomic::AtomicU64::new(0),
            closed: std::sync::atomic::AtomicBool::new(false),
            fills: tokio::sync::watch::Sender::new(0),
        });
        if keep > 0 {
            tokio::spawn(look_over(Arc::downgrade(&warm)));
        }
        warm
    }

    fn shelves(&self) -> MutexGuard<'_, Vec<Shelf>> {
        self.shelves.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A ready sandbox of `spec`'s kind, if one is on the shelf. The shelf is filled again once
    /// the run is done ([`Warm::refill`]).
    pub fn take(self: &Arc<Self>, spec: &Spec) -> Option<Sandbox> {
        if self.keep == 0 || self.is_closed() {
            return None;
        }
        let kind = kind_of(spec);
        let mut shelves = self.shelves();
        let index = match shelves.iter().position(|s| s.kind == kind) {
            Some(index) => index,
            None => {
                shelves.push(Shelf {
                    kind,
                    spec: *spec,
                    ready: Vec::new(),
                    wanted_at: Instant::now(),
                    filling: false,
                });
                shelves.len() - 1
            }
        };
        let shelf = &mut shelves[index];
        shelf.wanted_at = Instant::now();
        // The oldest first: every sandbox spends as little time on the shelf as it can.
        (!shelf.ready.is_empty()).then(|| shelf.ready.remove(0).0)
    }

    /// Fills the shelf of `spec`'s kind again in the background: called when a run that asked
    /// for one is done, not when it takes one, so that making the next sandbox (a schema's DDL,
    /// milliseconds of PostgreSQL's CPU) never competes with the run it was taken for. On two
    /// cores that competition cost a write skew about 2 ms of its 17 (engine/bare 1.32× → 1.15×
    /// in `benches/engine_overhead.rs`); a reader who presses Run again finds the shelf full
    /// either way.
    pub fn refill(self: &Arc<Self>, spec: &Spec) {
        if self.keep == 0 || self.is_closed() {
            return;
        }
        let kind = kind_of(spec);
        let mut shelves = self.shelves();
        if let Some(shelf) = shelves.iter_mut().find(|s| s.kind == kind)
            && !shelf.filling
            && shelf.ready.len() < self.keep
        {
            shelf.filling = true;
            self.spawn_fill(kind);
        }
    }

    /// Takes back the sandbox of a run of `spec` that completed: reset and put on its shelf for
    /// the next run if it can be ([`Sandbox::reset`]), destroyed if not. An error is the
    /// destroy's (the caller destroys it again once its services are back); one from the reset
    /// only means it is destroyed instead.
    pub async fn take_back(self: &Arc<Self>, mut sandbox: Sandbox, spec: &Spec) -> Result<(), SandboxError> {
        sandbox.runs += 1;
        if self.has_room_for(&sandbox, spec) {
            match sandbox.reset(&self.services, spec).await {
                Ok(true) => match self.shelve(sandbox, spec) {
                    None => return Ok(()),
                    Some(unwanted) => sandbox = unwanted,
                },
                Ok(false) => {}
                Err(error) => {
                    tracing::info!(run = %sandbox.run_id, %error, "could not reset a sandbox; it is destroyed instead");
                }
            }
        }
        sandbox.destroy(&self.services).await
    }

    /// Whether `sandbox` may go back on its shelf: the shelves are open, its kind can be reset,
    /// it has not held too many runs and its shelf has room.
    fn has_room_for(&self, sandbox: &Sandbox, spec: &Spec) -> bool {
        if self.keep == 0 || self.is_closed() || !spec.resettable() || sandbox.runs >= MOST_RUNS {
            return false;
        }
        let kind = kind_of(spec);
        self.shelves()
            .iter()
            .any(|shelf| shelf.kind == kind && shelf.ready.len() < self.room)
    }

    /// Puts a reset sandbox on its shelf; gives it back if it may not stay (closed meanwhile, or
    /// the shelf filled up).
    fn shelve(&self, sandbox: Sandbox, spec: &Spec) -> Option<Sandbox> {
        if self.is_closed() {
            return Some(sandbox);
        }
        let kind = kind_of(spec);
        let mut shelves = self.shelves();
        match shelves.iter_mut().find(|s| s.kind == kind) {
            Some(shelf) if shelf.ready.len() < self.room => {
                shelf.ready.push((sandbox, Instant::now()));
                self.reused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                None
            }
            _ => Some(sandbox),
        }
    }

    /// Starts [`Warm::fill`] on a task of its own, counted in `fills` until it ends.
    fn spawn_fill(self: &Arc<Self>, kind: u64) {
        self.fills.send_modify(|n| *n += 1);
        let warm = self.clone();
        tokio::spawn(async move {
            warm.clone().fill(kind).await;
            warm.fills.send_modify(|n| *n -= 1);
        });
    }

    /// Makes sandboxes for shelf `kind` until it holds what it should (one at a time: a run
    /// waiting for its own sandbox comes first).
    async fn fill(self: Arc<Self>, kind: u64) {
        loop {
            if self.is_closed() {
                return;
            }
            let spec = {
                let mut shelves = self.shelves();
                let Some(shelf) = shelves.iter_mut().find(|s| s.kind == kind) else {
                    return;
                };
                if shelf.ready.len() >= self.keep || shelf.wanted_at.elapsed() > UNWANTED_AFTER {
                    shelf.filling = false;
                    return;
                }
                shelf.spec
            };
            let made = Sandbox::create(&self.services, &new_run_id(), &spec).await;
            if self.is_closed() {
                // Emptied while this one was being made: it goes too.
                if let Ok(sandbox) = made {
                    self.destroy(vec![sandbox]).await;
                }
                return;
            }
            let mut shelves = self.shelves();
            let Some(shelf) = shelves.iter_mut().find(|s| s.kind == kind) else {
                return;
            };
            match made {
                Ok(sandbox) => shelf.ready.push((sandbox, Instant::now())),
                Err(error) => {
                    // A service is down: runs make their own (and say why) until it is back.
                    tracing::warn!(%error, "could not make a sandbox ahead of demand");
                    shelf.filling = false;
                    return;
                }
            }
        }
    }

    /// How many sandboxes were reset and put back on a shelf so far.
    pub fn reused(&self) -> u64 {
        self.reused.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The sandboxes ready on every shelf.
    pub fn ready(&self) -> Vec<ReadySandbox> {
        self.shelves()
            .iter()
            .flat_map(|s| {
                s.ready.iter().map(|(sandbox, _)| ReadySandbox {
                    run_id: sandbox.run_id.clone(),
                    runs: sandbox.runs,
                })
            })
            .collect()
    }

    /// Takes down what nobody wants any more and what waited too long (the shelf refills with
    /// fresh ones if its kind is still asked for).
    async fn tidy(self: &Arc<Self>) {
        if self.is_closed() {
            return;
        }
        let (gone, refill) = {
            let mut shelves = self.shelves();
            let mut gone = Vec::new();
            let mut refill = Vec::new();
            for shelf in shelves.iter_mut() {
                let unwanted = shelf.wanted_at.elapsed() > UNWANTED_AFTER;
                let (old, fresh): (Vec<_>, Vec<_>) = std::mem::take(&mut shelf.ready)
                    .into_iter()
                    .partition(|(_, made)| unwanted || made.elapsed() > STALE_AFTER);
                shelf.ready = fresh;
                gone.extend(old.into_iter().map(|(sandbox, _)| sandbox));
                if !unwanted && !shelf.filling && shelf.ready.len() < self.keep {
                    shelf.filling = true;
                    refill.push(shelf.kind);
                }
            }
            shelves.retain(|s| !s.ready.is_empty() || s.filling || s.wanted_at.elapsed() <= UNWANTED_AFTER);
            (gone, refill)
        };
        for kind in refill {
            self.spawn_fill(kind);
        }
        self.destroy(gone).await;
    }

    fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Takes every ready sandbox down and keeps none from now on (the server is stopping; a
    /// sandbox still being made goes as soon as it is); returns how many.
    pub async fn empty(&self) -> usize {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        let gone: Vec<Sandbox> = {
            let mut shelves = self.shelves();
            shelves
                .iter_mut()
                .flat_map(|s| std::mem::take(&mut s.ready))
                .map(|(sandbox, _)| sandbox)
                .collect()
        };
        let count = gone.len();
        self.destroy(gone).await;
        // A sandbox being made now is destroyed by its fill task as soon as it is made.
        let mut fills = self.fills.subscribe();
        let _ = tokio::time::timeout(FILLS_END_WITHIN, fills.wait_for(|n| *n == 0)).await;
        count
    }

    async fn destroy(&self, sandboxes: Vec<Sandbox>) {
        for sandbox in sandboxes {
            if let Err(error) = sandbox.destroy(&self.services).await {
                tracing::warn!(run = %sandbox.run_id, %error, "could not take a ready sandbox down; the sweep will");
            }
        }
    }
}

/// Looks the shelves over every [`LOOK_OVER_EVERY`] while the engine lives.
async fn look_over(warm: std::sync::Weak<Warm>) {
    loop {
        tokio::time::sleep(LOOK_OVER_EVERY).await;
        let Some(warm) = warm.upgrade() else { return };
        warm.tidy().await;
    }
}

#[cfg(test)]
mod tests {
    use super::kind_of;
    use crate::sandbox::Spec;

    #[test]
    fn specs_of_one_lab_are_one_kind_and_other_labs_another() {
        const A: Spec = Spec {
            schemas: &[("", "CREATE TABLE teams (id text)")],
            redis: false,
            topics: &[],
        };
        let copy = A;
        let other = Spec {
            schemas: &[("", "CREATE TABLE wallets (id int)")],
            ..A
        };
        assert_eq!(kind_of(&A), kind_of(&copy));
        assert_ne!(kind_of(&A), kind_of(&other));
        assert_ne!(kind_of(&A), kind_of(&Spec { redis: true, ..A }));
    }
}
