//! One run as a reader sees it, folded from the server's frames. Pure, so the browser's live view,
//! a replay and the tests agree on what a stream means.

use crate::event::Rows;
use crate::ledger::Table;
use crate::timeline::Timeline;
use crate::{Event, EventKind, Ledger, Moment, Outcome, ServerMsg, Verdict};

/// Where a run is.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Phase {
    /// Nothing started yet.
    #[default]
    Idle,
    /// Waiting for a free slot; 1 = next in line.
    Queued(usize),
    Running,
    Finished(Outcome),
}

/// Everything the page draws for one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunState {
    pub phase: Phase,
    pub run_id: Option<String>,
    pub events: Vec<Event>,
    /// In step mode, whose step comes next, and what it is: `("bob", "SELECT …")`.
    pub next_step: Option<(String, String)>,
    /// The last error frame the server sent (a refused start, a bad frame).
    pub refused: Option<String>,
    /// The room this socket follows and how many participants it has, if it follows one; kept
    /// from run to run.
    pub room: Option<(String, usize)>,
    /// The room's question: the scenario and variant its next run plays, to predict.
    pub asked: Option<(String, String)>,
    /// How many predicted each choice, and whether the run revealed the answer.
    pub tally: Option<(Vec<(String, usize)>, bool)>,
}

impl RunState {
    /// A state holding a stored run's events, for replays.
    pub fn replay(run_id: String, events: Vec<Event>) -> RunState {
        let mut state = RunState {
            run_id: Some(run_id),
            ..RunState::default()
        };
        for event in events {
            state.apply(ServerMsg::Event { event });
        }
        state
    }

    /// Folds one server frame in.
    pub fn apply(&mut self, msg: ServerMsg) {
        match msg {
            ServerMsg::Queued { position } => self.phase = Phase::Queued(position),
            ServerMsg::Started { run_id } => {
                *self = RunState {
                    phase: Phase::Running,
                    run_id: Some(run_id),
                    room: self.room.take(),
                    asked: self.asked.take(),
                    tally: self.tally.take(),
                    ..RunState::default()
                };
            }
            ServerMsg::Room {
                room,
                participants,
                asked,
            } => {
                if asked != self.asked {
                    // A new question: the last one's tally is gone.
                    self.tally = None;
                }
                self.room = Some((room, participants));
                self.asked = asked;
            }
            ServerMsg::Tally { counts, revealed } => self.tally = Some((counts, revealed)),
            ServerMsg::Event { event } => {
                match &event.kind {
                    EventKind::Paused { actor, step } => self.next_step = Some((actor.clone(), step.clone())),
                    EventKind::Step { .. } => self.next_step = None,
                    EventKind::Done { outcome } => {
                        self.phase = Phase::Finished(outcome.clone());
                        self.next_step = None;
                    }
                    _ => {}
                }
                self.events.push(event);
            }
            ServerMsg::Error { message, .. } => self.refused = Some(message),
            ServerMsg::Done { run_id, outcome } => {
                if !run_id.is_empty() {
                    self.run_id = Some(run_id);
                }
                self.phase = Phase::Finished(outcome);
                self.next_step = None;
            }
        }
    }

    pub fn is_active(&self) -> bool {
        matches!(self.phase, Phase::Queued(_) | Phase::Running)
    }

    pub fn timeline(&self) -> Timeline {
        Timeline::from_events(&self.events)
    }

    /// The ledger snapshot taken at `moment`, if the run has emitted it.
    pub fn ledger(&self, moment: Moment) -> Option<&Ledger> {
        self.events.iter().find_map(|e| match &e.kind {
            EventKind::Ledger { moment: m, ledger } if *m == moment => Some(ledger),
            _ => None,
        })
    }

    pub fn verdict(&self) -> Option<&Verdict> {
        self.events.iter().find_map(|e| match &e.kind {
            EventKind::Verdict { verdict } => Some(verdict),
            _ => None,
        })
    }

    /// The transcript, exactly as the CLI prints it.
    pub fn transcript(&self) -> String {
        crate::event::transcript(&self.events).join("\n")
    }

    /// The latest progress of a free-running workload: `(label, done, total)`.
    pub fn progress(&self) -> Option<(&str, u64, u64)> {
        self.events.iter().rev().find_map(|e| match &e.kind {
            EventKind::Progress { label, done, total } => Some((label.as_str(), *done, *total)),
            _ => None,
        })
    }

    /// A table of the final ledger by name (the load test's `strategies`).
    pub fn table_after(&self, name: &str) -> Option<&Table> {
        self.ledger(Moment::After)?.table(name)
    }

    /// The run header's title and server version.
    /// The run's answer to its scenario's prediction: the right choice and why.
    pub fn revealed(&self) -> Option<(&str, &str)> {
        self.events.iter().find_map(|e| match &e.kind {
            EventKind::Reveal { choice, why } => Some((choice.as_str(), why.as_str())),
            _ => None,
        })
    }

    pub fn header(&self) -> Option<(&str, &str)> {
        self.events.iter().find_map(|e| match &e.kind {
            EventKind::RunStarted { title, server, .. } => Some((title.as_str(), server.as_str())),
            _ => None,
        })
    }
}

/// Rows as a plain table, for cards that show what a query returned.
pub fn rows_text(rows: &Rows) -> String {
    rows.rows
        .iter()
        .map(|r| r.iter().map(ToString::to_string).collect::<Vec<_>>().join(" | "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, kind: EventKind) -> ServerMsg {
        ServerMsg::Event {
            event: Event { seq, at_ms: 0, kind },
        }
    }

    #[test]
    fn a_stream_folds_into_phases_and_a_next_step() {
        let mut state = RunState::default();
        state.apply(ServerMsg::Queued { position: 2 });
        assert_eq!(state.phase, Phase::Queued(2));
        state.apply(ServerMsg::Started { run_id: "r1".into() });
        assert_eq!(state.phase, Phase::Running);
        state.apply(event(
            1,
            EventKind::Paused {
                actor: "alice".into(),
                step: "SELECT 1".into(),
            },
        ));
        assert_eq!(state.next_step, Some(("alice".to_owned(), "SELECT 1".to_owned())));
        state.apply(event(
            2,
            EventKind::Step {
                actor: "alice".into(),
                service: crate::Service::Postgres,
                text: "SELECT 1".into(),
                params: vec![],
                detail: None,
            },
        ));
        assert_eq!(state.next_step, None);
        state.apply(event(
            3,
            EventKind::Say {
                actor: None,
                line: "done".into(),
            },
        ));
        state.apply(ServerMsg::Done {
            run_id: "r1".into(),
            outcome: Outcome::Completed,
        });
        assert_eq!(state.phase, Phase::Finished(Outcome::Completed));
        assert_eq!(state.transcript(), "done");
        assert!(!state.is_active());
    }

    #[test]
    fn a_refusal_is_kept_without_ending_anything() {
        let mut state = RunState::default();
        state.apply(ServerMsg::Error {
            code: crate::ErrorCode::Busy,
            message: "busy".into(),
        });
        assert_eq!(state.refused.as_deref(), Some("busy"));
        assert_eq!(state.phase, Phase::Idle);
    }
}
