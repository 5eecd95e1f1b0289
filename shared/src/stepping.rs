//! Stepping through a finished run a statement at a time, as a live run is stepped.
//!
//! A moment of a run is how many of its events have happened (0: none yet; the event count: the
//! end). One statement is several events (its step, then its result, or a wait and later the
//! wait's end, a commit, a retry), so a reader who steps one *event* at a time presses three or
//! four times per statement and sees cards half drawn. The player's step buttons move between
//! *statement stops* instead: the start, the moment before each step after the first (all the
//! earlier statements did, a wait included, is on the lanes, and the next has not begun), and
//! the end. So from the start, one press plays the setup and the first statement. A chapter
//! pauses before a step ([`crate::chapters::Pauses`]), and the player never steps past one.

use crate::event::{Event, EventKind};

/// The first statement stop after moment `at` (the end, past the last statement).
pub fn next_statement(events: &[Event], at: usize) -> usize {
    let stop = stops(events);
    (at.min(events.len()) + 1..=events.len())
        .find(|&n| stop(n))
        .unwrap_or(events.len())
}

/// The last statement stop before moment `at` (the start, before the first statement).
pub fn previous_statement(events: &[Event], at: usize) -> usize {
    let stop = stops(events);
    (0..at.min(events.len())).rev().find(|&n| stop(n)).unwrap_or(0)
}

/// Whether a moment is a statement stop: the start, the end, or just before a step that is not
/// the run's first.
fn stops(events: &[Event]) -> impl Fn(usize) -> bool {
    let is_step = |e: &Event| matches!(e.kind, EventKind::Step { .. });
    let first = events.iter().position(is_step);
    move |n| n == 0 || n == events.len() || (events.get(n).is_some_and(is_step) && first < Some(n))
}

/// The moment after `n` of the run's `events`, in words (the scrubber's caption): event n is
/// the n-th, 1-based, so at 0 none has happened yet.
pub fn moment(events: &[Event], n: usize) -> String {
    n.checked_sub(1).and_then(|i| events.get(i)).map_or_else(
        || "before the first event".to_owned(),
        |e| format!("event {n} of {}, at {} ms: {}", events.len(), e.at_ms, said(&e.kind)),
    )
}

/// One event in a few words.
fn said(kind: &EventKind) -> String {
    match kind {
        EventKind::Step { actor, text, .. } => format!("{actor}: {}", first_line(text)),
        EventKind::Result { actor, summary, .. } => format!("{actor}: {summary}"),
        EventKind::Blocked { actor, by, .. } => format!("{actor} waits for {}", by.join(", ")),
        EventKind::Unblocked { actor, .. } => format!("{actor} stops waiting"),
        EventKind::Error { actor, code, .. } => {
            format!("{actor}: error {}", code.as_deref().unwrap_or("(no code)"))
        }
        EventKind::Commit { actor } => format!("{actor} commits"),
        EventKind::Rollback { actor } => format!("{actor} rolls back"),
        EventKind::Verdict { .. } => "the verdict".to_owned(),
        EventKind::Proof { .. } => "why it happened".to_owned(),
        EventKind::Ledger { .. } => "the ledger".to_owned(),
        EventKind::Say { line, .. } => first_line(line),
        EventKind::Done { .. } => "the end".to_owned(),
        other => other.actor().map_or_else(|| "racelab".to_owned(), str::to_owned),
    }
}

/// A statement's first line, cut at 60 characters.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    if line.chars().count() > 60 {
        format!("{}…", line.chars().take(59).collect::<String>())
    } else {
        line.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, kind: EventKind) -> Event {
        Event {
            seq,
            at_ms: seq * 10,
            kind,
        }
    }

    fn step(seq: u64, actor: &str) -> Event {
        event(
            seq,
            EventKind::Step {
                actor: actor.to_owned(),
                service: crate::catalog::Service::Postgres,
                text: "SELECT 1".to_owned(),
                params: Vec::new(),
                detail: None,
            },
        )
    }

    fn commit(seq: u64, actor: &str) -> Event {
        event(
            seq,
            EventKind::Commit {
                actor: actor.to_owned(),
            },
        )
    }

    fn blocked(seq: u64, actor: &str, by: &str) -> Event {
        event(
            seq,
            EventKind::Blocked {
                actor: actor.to_owned(),
                by: vec![by.to_owned()],
                on: None,
            },
        )
    }

    /// alice's step commits; bob's step waits for her; alice's second step; then the end.
    fn race() -> Vec<Event> {
        vec![
            event(
                0,
                EventKind::Say {
                    actor: None,
                    line: "setup".to_owned(),
                },
            ),
            step(1, "alice"),
            commit(2, "alice"),
            step(3, "bob"),
            blocked(4, "bob", "alice"),
            step(5, "alice"),
            commit(6, "alice"),
            commit(7, "bob"),
        ]
    }

    #[test]
    fn forward_plays_the_setup_and_first_statement_then_one_statement_a_press() {
        let events = race();
        let mut stops = vec![0];
        while *stops.last().unwrap_or(&0) < events.len() {
            stops.push(next_statement(&events, *stops.last().unwrap_or(&0)));
        }
        assert_eq!(stops, vec![0, 3, 5, 8]);
    }

    #[test]
    fn back_stops_where_forward_does() {
        let events = race();
        let mut stops = vec![events.len()];
        while *stops.last().unwrap_or(&0) > 0 {
            stops.push(previous_statement(&events, *stops.last().unwrap_or(&0)));
        }
        assert_eq!(stops, vec![8, 5, 3, 0]);
    }

    #[test]
    fn from_between_two_stops_each_way_goes_to_the_nearest() {
        let events = race();
        // Moment 4: bob's step has played, his wait not yet.
        assert_eq!(next_statement(&events, 4), 5);
        assert_eq!(previous_statement(&events, 4), 3);
    }

    #[test]
    fn a_run_without_steps_goes_from_its_start_to_its_end() {
        let events = vec![
            event(
                0,
                EventKind::Say {
                    actor: None,
                    line: "a".to_owned(),
                },
            ),
            event(
                1,
                EventKind::Say {
                    actor: None,
                    line: "b".to_owned(),
                },
            ),
        ];
        assert_eq!(next_statement(&events, 0), 2);
        assert_eq!(previous_statement(&events, 2), 0);
        assert_eq!(next_statement(&[], 0), 0);
        assert_eq!(previous_statement(&[], 0), 0);
    }

    #[test]
    fn past_the_end_is_the_end() {
        let events = race();
        assert_eq!(next_statement(&events, 50), 8);
        assert_eq!(previous_statement(&events, 50), 5);
    }

    #[test]
    fn a_moment_is_said_after_the_event_it_follows() {
        let commit = |seq: u64, actor: &str| Event {
            seq,
            at_ms: seq,
            kind: EventKind::Commit {
                actor: actor.to_owned(),
            },
        };
        let events = [commit(3, "alice"), commit(9, "bob")];
        assert_eq!(moment(&events, 0), "before the first event");
        assert_eq!(moment(&events, 2), "event 2 of 2, at 9 ms: bob commits");
        assert_eq!(
            first_line(&format!("{}\nsecond", "x".repeat(70))),
            format!("{}…", "x".repeat(59))
        );
    }
}
