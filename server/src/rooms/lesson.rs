//! A room that runs a lesson: the trainer moves round by round, each participant answers under
//! a handle, and every answer is scored against what the run really did.
//!
//! The holder keeps the session ([`Session`]): which round is open, who sits under which handle
//! (a seat: the hash of a secret the participant's page keeps, so a reload or a reconnect on any
//! replica takes the handle, and its score, back; a second person asking for the same handle is
//! told it is taken), and every scored answer. What pages are shown is [`Live`], sent through the
//! room like its question and tally.
//!
//! A round's question is the scenario's own (answered by the run's `reveal`) or the trainer's
//! (answered by [`Derived`], read off the run's events when it ends): either way, never written
//! down, so a score cannot disagree with the database.

use crate::control::Refusal;
use shared::lesson::live::{Answer, Live, LiveRound, standings};
use shared::lesson::{Derived, Lesson, Race};
use shared::protocol::StoredRun;
use shared::recording::Recording;
use shared::{ErrorCode, ScenarioInfo};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// One lesson as one room runs it.
#[derive(Debug)]
pub struct Session {
    /// Where the session's results are read (`/api/results/<id>`): a secret handed to the
    /// trainer, since results name participants.
    pub results: String,
    pub lesson_id: String,
    lesson: Lesson,
    /// The round the room is on, and how its answer is read off its run.
    round: Option<(LiveRound, Option<Derived>)>,
    /// Each handle's seat: the SHA-256 of the secret its page keeps.
    seats: HashMap<String, [u8; 32]>,
    /// Every scored answer; a repeated round's replace its last ones.
    answers: Vec<Answer>,
    shown: bool,
    /// The run the open round plays again, when it is a recording round: set with `round`.
    replay: Option<Replay>,
}

/// What a lesson round plays: the scenario (`spec/<id>` for a saved spec), variant and version;
/// for a recording, the run this racelab keeps that it plays again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoundRace {
    pub scenario: String,
    pub variant: String,
    pub postgres: Option<u32>,
    /// The run a recording round plays again instead (its scenario and variant are read from it).
    pub replay: Option<Replay>,
}

/// A recording round's run: one this racelab keeps, by its id, or one the trainer's page read
/// from another site and sent (`PUT /api/rooms/<code>/rounds/<n>/recording`: the server itself
/// fetches nothing).
#[derive(Clone, Debug)]
pub enum Replay {
    Kept(String),
    Sent(Arc<StoredRun>),
}

impl PartialEq for Replay {
    fn eq(&self, other: &Replay) -> bool {
        match (self, other) {
            (Replay::Kept(a), Replay::Kept(b)) => a == b,
            (Replay::Sent(a), Replay::Sent(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Replay {}

fn refusal(code: ErrorCode, message: String) -> Refusal {
    Refusal { code, message }
}

impl Session {
    pub fn new(lesson_id: String, lesson: Lesson, results: String) -> Session {
        let shown = lesson.leaderboard == shared::lesson::Leaderboard::Shown;
        Session {
            results,
            lesson_id,
            lesson,
            round: None,
            seats: HashMap::new(),
            answers: Vec::new(),
            shown,
            replay: None,
        }
    }

    pub fn lesson(&self) -> &Lesson {
        &self.lesson
    }

    /// What round `number` (1-based) plays, at its own variant or the trainer's `variant`.
    pub fn race(&self, number: usize, variant: Option<&str>) -> Result<RoundRace, Refusal> {
        let round = self.round_numbered(number)?;
        let (scenario, own, postgres) = match &round.race {
            Race::Scenario { id, variant, postgres } => (id.clone(), variant.clone(), *postgres),
            Race::Spec { id, permutation } => (format!("spec/{id}"), format!("p{}", permutation.unwrap_or(1)), None),
            Race::Recording { src } => {
                let run = shared::lesson::kept_run(src).ok_or_else(|| {
                    refusal(
                        ErrorCode::UnknownScenario,
                        format!(
                            "round {number} plays the recording {src}, which racelab does not fetch: the trainer's page reads it and sends it (PUT /api/rooms/<code>/rounds/{number}/recording)"
                        ),
                    )
                })?;
                // What it plays is read from the run itself (see `Room`'s round order).
                return Ok(RoundRace {
                    scenario: String::new(),
                    variant: String::new(),
                    postgres: None,
                    replay: Some(Replay::Kept(run.to_owned())),
                });
            }
        };
        Ok(RoundRace {
            scenario,
            variant: variant.map_or(own, str::to_owned),
            postgres,
            replay: None,
        })
    }

    /// What round `number` plays when its trainer's page sent its `recording`: the recorded run,
    /// played again. Refused for a round that is no recording at another address.
    pub fn sent(&self, number: usize, recording: &Recording) -> Result<RoundRace, Refusal> {
        match &self.round_numbered(number)?.race {
            Race::Recording { src } if shared::lesson::kept_run(src).is_none() => Ok(RoundRace {
                scenario: recording.run.scenario.clone(),
                variant: recording.run.variant.clone(),
                postgres: None,
                replay: Some(Replay::Sent(Arc::new(recording.run_to_play()))),
            }),
            Race::Recording { src } => Err(refusal(
                ErrorCode::BadFrame,
                format!("round {number} replays {src}, a run this racelab keeps: open it with round"),
            )),
            _ => Err(refusal(
                ErrorCode::BadFrame,
                format!("round {number} is no recording: open it with round"),
            )),
        }
    }

    /// Opens round `number` playing `race` (of scenario `info`): its question is the trainer's
    /// or else the scenario's own at that variant. Returns the question's choice ids and how its
    /// answer is read off the run (`None`: from the run's `reveal`); `None` altogether when the
    /// round asks nothing (the lesson was checked when it was saved, so only a changed variant
    /// that asks nothing comes here).
    pub fn open(
        &mut self,
        number: usize,
        race: &RoundRace,
        info: &ScenarioInfo,
    ) -> Result<(Vec<String>, Option<Derived>), Refusal> {
        let round = self.round_numbered(number)?;
        if info.variant(&race.variant).is_none() {
            let known: Vec<&str> = info.variants.iter().map(|v| v.id.as_str()).collect();
            return Err(refusal(
                ErrorCode::UnknownVariant,
                format!(
                    "{} has no variant {} (it has {})",
                    race.scenario,
                    race.variant,
                    known.join(", ")
                ),
            ));
        }
        let (question, choices, derived) = match &round.question {
            Some(own) => (own.text.clone(), own.choices.clone(), Some(own.answer.clone())),
            None => {
                let asked = info.question_at(&race.variant).ok_or_else(|| {
                    refusal(
                        ErrorCode::UnknownVariant,
                        format!(
                            "{} at {} asks no question; play the round at another variant",
                            race.scenario, race.variant
                        ),
                    )
                })?;
                let choices = asked.choices.into_iter().map(|c| (c.id, c.label)).collect();
                (asked.question, choices, None)
            }
        };
        let ids = choices.iter().map(|(id, _)| id.clone()).collect();
        let live = LiveRound {
            number,
            title: round.title.clone(),
            scenario: race.scenario.clone(),
            variant: race.variant.clone(),
            postgres: race.postgres,
            question,
            choices,
            answer: None,
            explain: None,
            picked: Vec::new(),
        };
        self.round = Some((live, derived.clone()));
        self.replay = race.replay.clone();
        Ok((ids, derived))
    }

    /// Round `number` (1-based), or the refusal that says which rounds there are.
    fn round_numbered(&self, number: usize) -> Result<&shared::lesson::Round, Refusal> {
        self.lesson.round(number).ok_or_else(|| {
            refusal(
                ErrorCode::BadFrame,
                format!("the lesson has rounds 1 to {}, not {number}", self.lesson.rounds.len()),
            )
        })
    }

    /// Whether round `number` at `race` is open and not yet answered (asking for it again, as a
    /// trainer's reloaded page might, changes nothing).
    pub fn is_open(&self, number: usize, race: &RoundRace) -> bool {
        self.round.as_ref().is_some_and(|(live, _)| {
            live.number == number
                && live.scenario == race.scenario
                && live.variant == race.variant
                && live.answer.is_none()
        })
    }

    /// The run the open round plays again, if it is a recording round playing `scenario` at
    /// `variant`.
    pub fn replay_of(&self, scenario: &str, variant: &str) -> Option<Replay> {
        let (live, _) = self.round.as_ref()?;
        (live.scenario == scenario && live.variant == variant)
            .then(|| self.replay.clone())
            .flatten()
    }

    /// How the open round's answer is read off its run (`None`: from its `reveal`).
    pub fn derived(&self) -> Option<&Derived> {
        self.round.as_ref().and_then(|(_, derived)| derived.as_ref())
    }

    /// Seats `handle` for the page whose secret hashes to `seat`: a new handle, or the same page
    /// (reloaded, reconnected) taking its handle back; another page's handle is refused.
    pub fn seat(&mut self, handle: &str, seat: [u8; 32]) -> Result<(), Refusal> {
        match self.seats.get(handle) {
            Some(held) if *held != seat => Err(refusal(
                ErrorCode::HandleTaken,
                format!("someone in this room already answers as {handle:?}; pick another handle"),
            )),
            Some(_) => Ok(()),
            None => {
                self.seats.insert(handle.to_owned(), seat);
                Ok(())
            }
        }
    }

    pub fn is_seated(&self, handle: &str) -> bool {
        self.seats.contains_key(handle)
    }

    /// The open round's run answered `answer`: each seated handle's pick (with the time it took)
    /// is scored, replacing what the same round scored before (a repeated round counts once),
    /// and the round shows its answer and explanation. Returns the round's number and answers;
    /// none when no round is open.
    pub fn score(&mut self, answer: &str, picks: &HashMap<String, (String, Duration)>) -> Option<(usize, Vec<Answer>)> {
        let (live, _) = self.round.as_mut()?;
        let number = live.number;
        live.answer = Some(answer.to_owned());
        live.explain = self.lesson.round(number).and_then(|r| r.explain.clone());
        let mut scored: Vec<Answer> = picks
            .iter()
            .filter(|(who, _)| self.seats.contains_key(*who))
            .map(|(handle, (choice, took))| Answer {
                round: number,
                handle: handle.clone(),
                choice: choice.clone(),
                right: choice == answer,
                millis: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
            })
            .collect();
        scored.sort_by(|a, b| a.handle.cmp(&b.handle));
        self.answers.retain(|a| a.round != number);
        self.answers.extend(scored.iter().cloned());
        Some((number, scored))
    }

    pub fn show(&mut self, shown: bool) {
        self.shown = shown;
    }

    /// What pages are shown now (the trainer's view; [`Live::for_page`] narrows it).
    pub fn live(&self) -> Live {
        Live {
            lesson: self.lesson_id.clone(),
            title: self.lesson.title.clone(),
            rounds: self.lesson.rounds.len(),
            round: self.round.as_ref().map(|(live, _)| live.clone()),
            leaderboard: standings(&self.answers, self.seats.keys().map(String::as_str)),
            shown: self.shown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Session {
        let text = include_str!("../../../lessons/isolation-in-an-hour.lesson.md");
        let lesson = shared::lesson::parse(text).unwrap_or_else(|e| panic!("{e}"));
        Session::new("0123456789abcdef".into(), lesson, "results".into())
    }

    fn info(id: &str) -> ScenarioInfo {
        crate::engine::Scenario::info(crate::control::scenario_named(id).expect("in the catalog"))
    }

    fn picks(of: &[(&str, &str, u64)]) -> HashMap<String, (String, Duration)> {
        of.iter()
            .map(|(who, choice, ms)| ((*who).to_owned(), ((*choice).to_owned(), Duration::from_millis(*ms))))
            .collect()
    }

    #[test]
    fn rounds_play_their_race_or_the_trainers_variant_and_ask_their_question() {
        let mut session = sample();
        let race = session.race(2, None).expect("round 2");
        assert_eq!(race.scenario, "isolation/write-skew");
        assert_eq!(race.variant, "serializable");
        let (ids, derived) = session.open(2, &race, &info(&race.scenario)).expect("opens");
        assert_eq!(ids, ["alice", "bob", "nobody"], "the trainer's own choices");
        assert_eq!(
            derived,
            Some(Derived::Failed {
                code: Some("40001".into())
            })
        );
        // Round 1 asks the scenario's own question, at the variant the trainer changed it to.
        let changed = session.race(1, Some("serializable")).expect("round 1");
        assert_eq!(changed.variant, "serializable");
        let (ids, derived) = session.open(1, &changed, &info(&changed.scenario)).expect("opens");
        assert_eq!(derived, None, "answered by the run's reveal");
        assert!(!ids.is_empty());
        assert_eq!(session.live().round.expect("a round").number, 1);
        for wrong in [0, 6] {
            let refused = session.race(wrong, None).expect_err("no such round");
            assert!(refused.message.contains("rounds 1 to 5"), "{}", refused.message);
        }
    }

    #[test]
    fn seats_keep_a_handle_for_its_page_and_refuse_it_to_anyone_else() {
        let mut session = sample();
        session.seat("ana", [1; 32]).expect("a new handle");
        session.seat("ana", [1; 32]).expect("the same page, reloaded");
        let taken = session.seat("ana", [2; 32]).expect_err("another page");
        assert_eq!(taken.code, ErrorCode::HandleTaken);
        assert!(session.is_seated("ana") && !session.is_seated("ben"));
    }

    #[test]
    fn a_round_scores_seated_picks_and_a_repeat_replaces_its_scores() {
        let mut session = sample();
        session.seat("ana", [1; 32]).expect("seated");
        session.seat("ben", [2; 32]).expect("seated");
        let race = session.race(2, None).expect("round 2");
        session.open(2, &race, &info(&race.scenario)).expect("opens");
        let (number, scored) = session
            .score(
                "bob",
                &picks(&[("ana", "bob", 3_000), ("ben", "alice", 1_000), ("#7", "bob", 10)]),
            )
            .expect("round 2 is open");
        assert_eq!(number, 2);
        let lines: Vec<(&str, bool, u64)> = scored.iter().map(|a| (a.handle.as_str(), a.right, a.millis)).collect();
        assert_eq!(
            lines,
            [("ana", true, 3_000), ("ben", false, 1_000)],
            "a page without a seat is not scored"
        );
        let live = session.live();
        let round = live.round.expect("round 2");
        assert_eq!(round.answer.as_deref(), Some("bob"));
        assert!(round.explain.expect("explained").contains("40001"));
        assert_eq!(live.leaderboard[0].handle, "ana");
        // Played again: the round counts once, as it went the second time.
        session.open(2, &race, &info(&race.scenario)).expect("opens again");
        session.score("bob", &picks(&[("ben", "bob", 2_000)]));
        let board: Vec<(String, usize, usize)> = session
            .live()
            .leaderboard
            .into_iter()
            .map(|s| (s.handle, s.right, s.answered))
            .collect();
        assert_eq!(board, [("ben".to_owned(), 1, 1), ("ana".to_owned(), 0, 0)]);
    }
}
