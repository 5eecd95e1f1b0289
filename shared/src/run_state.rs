//! One run as a reader sees it, folded from the server's frames. Pure, so the browser's live view,
//! a replay and the tests agree on what a stream means.

use crate::event::Rows;
use crate::ledger::Table;
use crate::timeline::Timeline;
use crate::{Event, EventKind, Ledger, Moment, Outcome, ServerMsg, Service, Verdict};

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

/// In step mode, whose step comes next, on which service, and what it is.
#[derive(Clone, Debug, PartialEq)]
pub struct NextStep {
    pub actor: String,
    pub service: Service,
    /// `SELECT …`, `SET lock:wallet:42 … NX PX 100`, `POST /payments`.
    pub step: String,
}

/// Everything the page draws for one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunState {
    pub phase: Phase,
    pub run_id: Option<String>,
    pub events: Vec<Event>,
    /// In step mode, the step the run waits to play.
    pub next_step: Option<NextStep>,
    /// The last error frame the server sent (a refused start, a bad frame).
    pub refused: Option<String>,
    /// The room this socket follows and how many participants it has, if it follows one; kept
    /// from run to run.
    pub room: Option<(String, usize)>,
    /// The room's question: the scenario and variant its next run plays, to predict.
    pub asked: Option<(String, String)>,
    /// How many predicted each choice, and whether the run revealed the answer.
    pub tally: Option<(Vec<(String, usize)>, bool)>,
    /// The room this socket followed has closed (or never was): nothing can be picked or run.
    pub room_closed: bool,
    /// The lesson the room runs, if it runs one: its round and leaderboard.
    pub lesson: Option<crate::lesson::live::Live>,
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

    /// Folds one server frame in. (Never inlined: the live socket and a replay both call it,
    /// and one copy of it is what the embed's budget can carry.)
    #[inline(never)]
    pub fn apply(&mut self, msg: ServerMsg) {
        match msg {
            ServerMsg::Queued { position } => self.phase = Phase::Queued(position),
            ServerMsg::Started { run_id } => {
                self.forget_run();
                self.phase = Phase::Running;
                self.run_id = Some(run_id);
            }
            ServerMsg::Room {
                room,
                participants,
                asked,
            } => {
                if asked != self.asked {
                    // A new question, a new round: the last one's tally is gone, and so is its
                    // finished run, whose answer must not sit under the new question.
                    self.tally = None;
                    if !self.is_active() {
                        self.forget_run();
                    }
                }
                self.room = Some((room, participants));
                self.asked = asked;
            }
            ServerMsg::Tally { counts, revealed } => self.tally = Some((counts, revealed)),
            ServerMsg::Lesson(live) => self.lesson = Some(live),
            ServerMsg::Event { event } => {
                match &event.kind {
                    EventKind::Paused { actor, service, step } => {
                        self.next_step = Some(NextStep {
                            actor: actor.clone(),
                            service: *service,
                            step: step.clone(),
                        });
                    }
                    EventKind::Step { .. } => self.next_step = None,
                    EventKind::Done { outcome } => {
                        self.phase = Phase::Finished(outcome.clone());
                        self.next_step = None;
                    }
                    _ => {}
                }
                self.events.push(event);
            }
            ServerMsg::Error { code, message } => {
                self.room_closed |= code == crate::ErrorCode::UnknownRoom;
                self.refused = Some(message);
            }
            ServerMsg::Done { run_id, outcome } => {
                if !run_id.is_empty() {
                    self.run_id = Some(run_id);
                }
                self.phase = Phase::Finished(outcome);
                self.next_step = None;
            }
        }
    }

    /// Back to no run, keeping what belongs to the room (which run, question and tally).
    fn forget_run(&mut self) {
        *self = RunState {
            room: self.room.take(),
            asked: self.asked.take(),
            tally: self.tally.take(),
            room_closed: self.room_closed,
            lesson: self.lesson.take(),
            ..RunState::default()
        };
    }

    pub fn is_active(&self) -> bool {
        matches!(self.phase, Phase::Queued(_) | Phase::Running)
    }

    /// A spec played at every permutation: its lanes stay quiet and its permutations are all it
    /// holds, drawn as the matrix rather than a timeline.
    pub fn is_every_permutation(&self) -> bool {
        self.events
            .iter()
            .any(|e| matches!(e.kind, EventKind::Permutation { .. }))
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

    /// The services the run's steps went to so far, in the order first used (a child process
    /// is not one: it is how an actor runs, not what it talks to).
    pub fn services(&self) -> Vec<Service> {
        let mut seen = Vec::new();
        for event in &self.events {
            if let EventKind::Step { service, .. } = event.kind
                && service != Service::Process
                && !seen.contains(&service)
            {
                seen.push(service);
            }
        }
        seen
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
                service: crate::Service::Postgres,
                step: "SELECT 1".into(),
            },
        ));
        assert_eq!(
            state.next_step,
            Some(NextStep {
                actor: "alice".to_owned(),
                service: crate::Service::Postgres,
                step: "SELECT 1".to_owned()
            })
        );
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

    fn step(seq: u64, service: Service) -> ServerMsg {
        event(
            seq,
            EventKind::Step {
                actor: "api".into(),
                service,
                text: "x".into(),
                params: vec![],
                detail: None,
            },
        )
    }

    #[test]
    fn the_services_a_run_talks_to_are_read_from_its_steps() {
        let mut state = RunState::default();
        assert_eq!(state.services(), []);
        for (seq, service) in [Service::Http, Service::Process, Service::Postgres, Service::Http]
            .into_iter()
            .enumerate()
        {
            state.apply(step(seq as u64, service));
        }
        assert_eq!(state.services(), [Service::Http, Service::Postgres]);
    }

    fn room(asked: Option<(&str, &str)>) -> ServerMsg {
        ServerMsg::Room {
            room: "K7QX2M".into(),
            participants: 3,
            asked: asked.map(|(s, v)| (s.to_owned(), v.to_owned())),
        }
    }

    #[test]
    fn a_new_question_clears_the_last_rounds_run_and_tally() {
        let mut state = RunState::default();
        state.apply(room(Some(("isolation/write-skew", "serializable"))));
        state.apply(ServerMsg::Started { run_id: "r1".into() });
        state.apply(event(
            1,
            EventKind::Reveal {
                choice: "bob-40001".into(),
                why: "…".into(),
            },
        ));
        state.apply(ServerMsg::Tally {
            counts: vec![("bob-40001".into(), 2)],
            revealed: true,
        });
        state.apply(ServerMsg::Done {
            run_id: "r1".into(),
            outcome: Outcome::Completed,
        });
        assert!(state.revealed().is_some());
        // The same question again (a participant joining) changes nothing.
        state.apply(room(Some(("isolation/write-skew", "serializable"))));
        assert_eq!(state.run_id.as_deref(), Some("r1"));
        state.apply(room(Some(("isolation/lost-update", "read-committed"))));
        assert_eq!(state.phase, Phase::Idle);
        assert_eq!(
            (state.run_id.as_deref(), state.events.len(), state.tally.as_ref()),
            (None, 0, None)
        );
        assert_eq!(state.revealed(), None);
        assert_eq!(state.room.as_ref().map(|(r, n)| (r.as_str(), *n)), Some(("K7QX2M", 3)));
    }

    #[test]
    fn a_new_question_leaves_a_run_still_playing_alone() {
        let mut state = RunState::default();
        state.apply(room(Some(("isolation/write-skew", "serializable"))));
        state.apply(ServerMsg::Started { run_id: "r1".into() });
        state.apply(room(Some(("isolation/lost-update", "read-committed"))));
        assert_eq!(
            (state.phase.clone(), state.run_id.as_deref()),
            (Phase::Running, Some("r1"))
        );
    }

    #[test]
    fn a_closed_room_is_remembered_across_runs() {
        let mut state = RunState::default();
        state.apply(room(None));
        state.apply(ServerMsg::Error {
            code: crate::ErrorCode::UnknownRoom,
            message: "room K7QX2M has closed".into(),
        });
        assert!(state.room_closed);
        state.apply(ServerMsg::Started { run_id: "r2".into() });
        assert!(state.room_closed);
    }

    /// A lesson's round and leaderboard belong to the room, not to one run: a new run keeps them.
    #[test]
    fn the_lesson_outlives_each_run() {
        let mut state = RunState::default();
        let live = crate::lesson::live::Live {
            title: "Isolation".into(),
            rounds: 3,
            ..Default::default()
        };
        state.apply(ServerMsg::Lesson(live.clone()));
        state.apply(ServerMsg::Started { run_id: "r1".into() });
        state.apply(ServerMsg::Started { run_id: "r2".into() });
        assert_eq!(state.lesson, Some(live));
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
        assert!(!state.room_closed, "only a room's end closes the room");
    }
}
