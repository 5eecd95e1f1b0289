//! The event sink: numbers and timestamps every event a run emits, in one order, and caps what
//! one run may emit ([`MAX_EVENTS`], [`MAX_BYTES`]): a reader's spec can print a great deal, and
//! what a run emits is sent to its readers, kept in racelab's memory while it plays, and stored.

use shared::{Event, EventKind};
use std::sync::Mutex;
use std::time::Instant;
use tokio::sync::mpsc;

/// The most events one run emits before its output is cut.
pub const MAX_EVENTS: u64 = 200_000;
/// The most bytes (as JSON) one run's events hold before its output is cut.
pub const MAX_BYTES: usize = 16 << 20;

/// Where a run's events go. Actors on several tasks emit through one sink, so the sequence
/// numbers give the single order every reader sees.
pub struct EventSink {
    started: Instant,
    count: Mutex<Count>,
    tx: mpsc::UnboundedSender<Event>,
}

/// What a run has emitted so far.
struct Count {
    next_seq: u64,
    bytes: usize,
    /// The output was cut: only the events that end a run, or that its choreography waits
    /// for, still go out.
    cut: bool,
}

/// Whether an event still goes out once a run's output is cut: what ends the run and what its
/// reader or its choreography waits for (its ledger, verdict and proof, a pause in step mode,
/// a child's milestone, the end), and the small events that keep its lanes whole.
fn kept_after_cut(kind: &EventKind) -> bool {
    !matches!(
        kind,
        EventKind::Say { .. }
            | EventKind::Note { .. }
            | EventKind::Step { .. }
            | EventKind::Result { .. }
            | EventKind::Error { .. }
            | EventKind::Progress { .. }
            | EventKind::Permutation { .. }
    )
}

/// The line a cut run's transcript ends its output with.
pub fn cut_line(events: u64, bytes: usize) -> String {
    format!(
        "racelab: output cut at {events} events and {} MB (at most {MAX_EVENTS} events or {} MB a run): \
         what the run prints past here is not shown",
        bytes >> 20,
        MAX_BYTES >> 20
    )
}

impl EventSink {
    pub fn new(tx: mpsc::UnboundedSender<Event>) -> Self {
        EventSink {
            started: Instant::now(),
            count: Mutex::new(Count {
                next_seq: 1,
                bytes: 0,
                cut: false,
            }),
            tx,
        }
    }

    /// Emits one event. A reader that went away is not an error: the run is being cancelled
    /// and its supervisor cleans up. Past the run's cap, only the events [`kept_after_cut`] go
    /// out, after one line that says so.
    pub fn emit(&self, kind: EventKind) {
        // Hold the lock while sending so that sequence order and channel order agree.
        let mut count = self.count.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if count.cut && !kept_after_cut(&kind) {
            return;
        }
        let size = serde_json::to_vec(&kind).map_or(0, |json| json.len());
        if !count.cut && (count.next_seq >= MAX_EVENTS || count.bytes + size > MAX_BYTES) {
            count.cut = true;
            let line = cut_line(count.next_seq - 1, count.bytes);
            self.send(&mut count, EventKind::Say { actor: None, line });
            if !kept_after_cut(&kind) {
                return;
            }
        }
        count.bytes += size;
        self.send(&mut count, kind);
    }

    fn send(&self, count: &mut Count, kind: EventKind) {
        let event = Event {
            seq: count.next_seq,
            at_ms: self.elapsed_ms(),
            kind,
        };
        count.next_seq += 1;
        let _ = self.tx.send(event);
    }

    /// Milliseconds since the run started.
    pub fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn say(line: String) -> EventKind {
        EventKind::Say { actor: None, line }
    }

    #[test]
    fn a_run_past_its_bytes_is_cut_with_one_line_and_still_ends() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let sink = EventSink::new(tx);
        let big = "x".repeat(1 << 20);
        for _ in 0..20 {
            sink.emit(say(big.clone()));
        }
        sink.emit(EventKind::Done {
            outcome: shared::Outcome::Completed,
        });
        let events: Vec<Event> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        let lines: Vec<&str> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Say { line, .. } => Some(line.as_str()),
                _ => None,
            })
            .collect();
        // 15 lines of 1 MiB (and their JSON) fit in 16 MiB; the 16th does not.
        assert_eq!(lines.len(), 16);
        assert!(
            lines[15].starts_with("racelab: output cut at 15 events and 15 MB"),
            "{}",
            lines[15]
        );
        assert!(matches!(events.last().map(|e| &e.kind), Some(EventKind::Done { .. })));
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=17).collect::<Vec<u64>>());
    }

    #[test]
    fn a_run_past_its_count_is_cut_too() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let sink = EventSink::new(tx);
        for i in 0..MAX_EVENTS + 10 {
            sink.emit(say(i.to_string()));
        }
        let events: Vec<Event> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        assert_eq!(events.len() as u64, MAX_EVENTS);
        assert!(matches!(&events[events.len() - 1].kind, EventKind::Say { line, .. } if line.contains("output cut")));
    }
}
