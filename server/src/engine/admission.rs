//! Admission: how many runs play at once, and a fair queue for the rest.
//!
//! The scarce thing is PostgreSQL connections (each actor has its own, plus a monitor per run),
//! so a run asks for as many slots as it will open connections. The semaphore is fair (first in,
//! first served), so a load test needing 17 slots is not starved by a stream of small runs. While
//! a run waits it is told its place in line whenever the line moves.

use super::BoxFuture;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use thiserror::Error;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

/// A run asked for more connections than the server may ever give one run.
#[derive(Debug, Error)]
#[error("this run needs {needed} connections, but the server allows at most {capacity}")]
pub struct TooBig {
    pub needed: u32,
    pub capacity: u32,
}

/// The gate runs pass through before they open any connection.
pub struct Admission {
    slots: Arc<Semaphore>,
    capacity: u32,
    next_ticket: AtomicU64,
    line: Mutex<VecDeque<u64>>,
    moved: watch::Sender<()>,
}

/// A run's place: holds its slots until dropped.
pub struct Admitted {
    _slots: OwnedSemaphorePermit,
}

impl Admission {
    /// `capacity` connections shared by all runs.
    pub fn new(capacity: u32) -> Self {
        Admission {
            slots: Arc::new(Semaphore::new(capacity as usize)),
            capacity,
            next_ticket: AtomicU64::new(0),
            line: Mutex::new(VecDeque::new()),
            moved: watch::Sender::new(()),
        }
    }

    /// Waits for `needed` slots. If the run has to wait, `on_position` hears its place in line
    /// (1 = next) at once and again whenever the line moves. Dropping the future leaves the line.
    pub fn enter<'a>(
        &'a self,
        needed: u32,
        on_position: impl FnMut(usize) + Send + 'a,
    ) -> BoxFuture<'a, Result<Admitted, TooBig>> {
        Box::pin(self.wait_in_line(needed, on_position))
    }

    async fn wait_in_line(&self, needed: u32, mut on_position: impl FnMut(usize)) -> Result<Admitted, TooBig> {
        if needed > self.capacity {
            return Err(TooBig {
                needed,
                capacity: self.capacity,
            });
        }
        let ticket = self.next_ticket.fetch_add(1, Ordering::SeqCst);
        let _place = Place::join(self, ticket);
        let mut moved = self.moved.subscribe();
        let acquire = self.slots.clone().acquire_many_owned(needed);
        tokio::pin!(acquire);
        let mut last_told = None;
        loop {
            tokio::select! {
                biased;
                permit = &mut acquire => {
                    // The semaphore is never closed, so this cannot fail; stay safe anyway.
                    let permit = permit.map_err(|_| TooBig { needed, capacity: self.capacity })?;
                    return Ok(Admitted { _slots: permit });
                }
                _ = std::future::ready(()), if last_told.is_none() => {}
                changed = moved.changed() => { let _ = changed; }
            }
            let position = self.position(ticket);
            if last_told != Some(position) {
                on_position(position);
                last_told = Some(position);
            }
        }
    }

    fn position(&self, ticket: u64) -> usize {
        let line = self.line.lock().unwrap_or_else(|p| p.into_inner());
        line.iter().position(|t| *t == ticket).map_or(1, |i| i + 1)
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

    #[tokio::test]
    async fn second_run_waits_in_line_until_the_first_leaves() {
        let admission = Arc::new(Admission::new(3));
        let first = admission.enter(3, |_| {}).await.expect("fits");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let waiting = {
            let admission = admission.clone();
            tokio::spawn(async move {
                admission
                    .enter(2, move |p| {
                        let _ = tx.send(p);
                    })
                    .await
                    .map(|_| ())
            })
        };
        assert_eq!(rx.recv().await, Some(1));
        drop(first);
        waiting.await.expect("join").expect("admitted");
    }

    #[tokio::test]
    async fn a_run_bigger_than_the_server_is_refused() {
        let admission = Admission::new(3);
        assert!(admission.enter(4, |_| {}).await.is_err());
    }
}
