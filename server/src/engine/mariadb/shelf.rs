//! MariaDB sandboxes made ahead of demand, each with its lab's tables already in it.
//!
//! A sandbox alone takes MariaDB 7 ms, but the tables a run plays on take far longer: InnoDB
//! makes a file for each table and syncs it, some 30 ms a table here. A bare program pays that
//! too, so racelab's run would cost about twice a bare one's (`cargo bench --bench mariadb_lab`)
//! if it made its tables while its reader waits. So, as PostgreSQL's sandboxes are
//! (`engine::warm`), a few are made ahead for each schema a run asked for, and a run takes one:
//! its database, user, watchdog and the session that made the tables. And as there, a completed
//! run's sandbox is reset and put back ([`Shelf::take_back`]): emptying two tables takes a
//! millisecond or two, dropping a database several.
//!
//! A sandbox waits on the shelf at most [`Shelf::FRESH_FOR`]: another racelab starting on the
//! same server sweeps what is older than any run lasts, and would take a ready one for a crash's
//! leftover. Runs played a step at a time make their own (their statement bound is longer, and
//! the user's is fixed when it is made). Nothing on the shelf outlives [`Shelf::empty`], which
//! the engine calls as it closes.

use super::place::{Prepared, prepare, reset};
use crate::sandbox::mariadb::{Bounds, MariaSandbox};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Ready {
    prepared: Prepared,
    schema: &'static str,
    made: Instant,
}

/// The shelf: up to `want` ready sandboxes per schema.
pub struct Shelf {
    url: String,
    want: usize,
    ready: Mutex<Vec<Ready>>,
    /// Sandboxes being made now, by schema, so a burst of takes does not overfill the shelf.
    making: Mutex<Vec<&'static str>>,
    closed: std::sync::atomic::AtomicBool,
    /// Sandboxes runs took from it, since it was made.
    taken: std::sync::atomic::AtomicUsize,
    /// Sandboxes of completed runs reset and put back, since it was made.
    reused: std::sync::atomic::AtomicUsize,
}

impl Shelf {
    /// How long a ready sandbox waits before it is made again.
    pub const FRESH_FOR: Duration = Duration::from_secs(300);

    /// A shelf of `want` sandboxes per schema on the MariaDB at `url` (none: every run makes its
    /// own).
    pub fn new(url: String, want: usize) -> Arc<Shelf> {
        Arc::new(Shelf {
            url,
            want,
            ready: Mutex::new(Vec::new()),
            making: Mutex::new(Vec::new()),
            closed: std::sync::atomic::AtomicBool::new(false),
            taken: std::sync::atomic::AtomicUsize::new(0),
            reused: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// A ready sandbox for `schema`, if one is fresh; stale ones found on the way are removed.
    pub fn take(&self, schema: &'static str) -> Option<Prepared> {
        let mut ready = self.ready.lock().unwrap_or_else(|p| p.into_inner());
        let (stale, fresh): (Vec<Ready>, Vec<Ready>) =
            ready.drain(..).partition(|r| r.made.elapsed() > Self::FRESH_FOR);
        *ready = fresh;
        for old in stale {
            tokio::spawn(old.prepared.sandbox.close());
        }
        let at = ready.iter().position(|r| r.schema == schema)?;
        self.taken.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Some(ready.swap_remove(at).prepared)
    }

    /// Makes sandboxes for `schema` on their own tasks until `want` are ready or being made
    /// (after each run that played on the shelf, as it ends).
    pub fn refill(self: &Arc<Self>, schema: &'static str) {
        loop {
            if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            {
                if self.held(schema) >= self.want {
                    return;
                }
                self.making.lock().unwrap_or_else(|p| p.into_inner()).push(schema);
            }
            let shelf = self.clone();
            tokio::spawn(async move {
                let made = match MariaSandbox::open(&shelf.url, Bounds::default()).await {
                    Ok(sandbox) => prepare(sandbox, schema).await.ok(),
                    Err(_) => None,
                };
                // On the shelf (or removed, if it closed meanwhile) before it counts as made:
                // `empty` waits for what is being made.
                if let Some(prepared) = made {
                    if shelf.closed.load(std::sync::atomic::Ordering::SeqCst) {
                        prepared.sandbox.close().await;
                    } else {
                        shelf.put(prepared, schema);
                    }
                }
                shelf.made(schema);
            });
        }
    }

    /// Sandboxes for `schema` ready or being made.
    fn held(&self, schema: &'static str) -> usize {
        let ready = self.ready.lock().unwrap_or_else(|p| p.into_inner());
        let making = self.making.lock().unwrap_or_else(|p| p.into_inner());
        ready.iter().filter(|r| r.schema == schema).count() + making.iter().filter(|s| **s == schema).count()
    }

    fn put(&self, prepared: Prepared, schema: &'static str) {
        self.ready.lock().unwrap_or_else(|p| p.into_inner()).push(Ready {
            made: prepared.made,
            prepared,
            schema,
        });
    }

    /// A completed run's sandbox, taken back to be reset for the next run of `schema` and put
    /// back, on a task of its own: its reader hears `done` meanwhile (the reset is the
    /// shelf's work, not the run's). Reused while fresh and while the shelf wants one more;
    /// otherwise handed back for the caller to remove now (and one whose reset failed, or that
    /// is reset after the shelf closed, is removed by that task). Counted as being made until
    /// it is back: [`Shelf::empty`] waits for it, and a refill does not make one more meanwhile.
    pub fn take_back(self: &Arc<Self>, prepared: Prepared, schema: &'static str) -> Option<Prepared> {
        let wanted = self.held(schema) < self.want;
        let fresh = prepared.made.elapsed() < Self::FRESH_FOR;
        if !wanted || !fresh || self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return Some(prepared);
        }
        self.making.lock().unwrap_or_else(|p| p.into_inner()).push(schema);
        let shelf = self.clone();
        tokio::spawn(async move {
            let mut prepared = prepared;
            match reset(&mut prepared, schema).await {
                Ok(()) if !shelf.closed.load(std::sync::atomic::Ordering::SeqCst) => {
                    shelf.reused.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    shelf.put(prepared, schema);
                }
                Ok(()) => prepared.sandbox.close().await,
                Err(error) => {
                    tracing::warn!(%error, "a MariaDB sandbox could not be reset; removed instead");
                    prepared.sandbox.close().await;
                }
            }
            shelf.made(schema);
        });
        None
    }

    fn made(&self, schema: &'static str) {
        let mut making = self.making.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(at) = making.iter().position(|s| *s == schema) {
            making.swap_remove(at);
        }
    }

    /// How many sandboxes runs took from the shelf so far.
    pub fn taken(&self) -> usize {
        self.taken.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How many sandboxes of completed runs were reset and put back so far.
    pub fn reused(&self) -> usize {
        self.reused.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How many sandboxes are ready now.
    pub fn len(&self) -> usize {
        self.ready.lock().map_or(0, |r| r.len())
    }

    /// Whether none is ready.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every ready sandbox, those being made too; none is made after.
    pub async fn empty(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        // One being made (or reset) closes itself when it is; wait for that (a few milliseconds).
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.making.lock().map_or(true, |m| m.is_empty()) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let ready: Vec<Ready> = std::mem::take(&mut *self.ready.lock().unwrap_or_else(|p| p.into_inner()));
        futures_util::future::join_all(ready.into_iter().map(|r| r.prepared.sandbox.close())).await;
    }
}
