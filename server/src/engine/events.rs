//! The event sink: numbers and timestamps every event a run emits, in one order.

use shared::{Event, EventKind};
use std::sync::Mutex;
use std::time::Instant;
use tokio::sync::mpsc;

/// Where a run's events go. Actors on several tasks emit through one sink, so the sequence
/// numbers give the single order every reader sees.
pub struct EventSink {
    started: Instant,
    next_seq: Mutex<u64>,
    tx: mpsc::UnboundedSender<Event>,
}

impl EventSink {
    pub fn new(tx: mpsc::UnboundedSender<Event>) -> Self {
        EventSink {
            started: Instant::now(),
            next_seq: Mutex::new(1),
            tx,
        }
    }

    /// Emits one event. A reader that went away is not an error: the run is being cancelled
    /// and its supervisor cleans up.
    pub fn emit(&self, kind: EventKind) {
        // Hold the lock while sending so that sequence order and channel order agree.
        let mut seq = self.next_seq.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let event = Event {
            seq: *seq,
            at_ms: self.elapsed_ms(),
            kind,
        };
        *seq += 1;
        let _ = self.tx.send(event);
    }

    /// Milliseconds since the run started.
    pub fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}
