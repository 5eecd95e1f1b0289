//! A lesson: the races a trainer strings into one session, each with its question, notes and
//! explanation, as a plain text file a person writes, diffs and sends (docs/lessons.md).
//!
//! ```text
//! ---
//! title: Isolation levels in an hour
//! leaderboard: shown
//! ---
//!
//! ## Two managers overspend a budget
//! scenario: isolation/write-skew
//! variant: read-committed
//! postgres: 18
//! notes: Ask who has seen this in production before pressing Run.
//! explain: Both read $0 before either wrote; READ COMMITTED makes neither wait.
//!
//! ## The same race at SERIALIZABLE
//! scenario: isolation/write-skew
//! variant: serializable
//! question: Whose COMMIT fails?
//! choice alice: Alice's
//! choice bob: Bob's
//! choice nobody: Nobody's
//! answer: failed 40001
//! ```
//!
//! A round is a catalog scenario at a variant (and a PostgreSQL version), a reader's saved spec
//! (`spec: <id>`, at a `permutation:`), or a recording (`recording: <address>`). Its question is
//! the scenario's own unless the round writes one: then its right answer is never written down
//! but derived from the run ([`answer::Derived`]), so it cannot disagree with what happened.
//!
//! Pure, like the rest of this crate: [`parse`] reads, [`print`] writes it back as it reads,
//! and [`refusals`] checks its rounds against a catalog.

pub mod answer;
pub mod live;
mod parse;

pub use answer::Derived;
pub use parse::{parse, print};

use crate::catalog::ScenarioInfo;

/// A lesson, as its file says it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lesson {
    pub title: String,
    /// One line that says what the session is for.
    pub about: Option<String>,
    /// Whether participants see the running leaderboard (the trainer may still switch it).
    pub leaderboard: Leaderboard,
    pub rounds: Vec<Round>,
}

impl Lesson {
    /// Round `number`, counted from 1 as the trainer's page and the rooms number them.
    pub fn round(&self, number: usize) -> Option<&Round> {
        self.rounds.get(number.checked_sub(1)?)
    }
}

/// Whether participants see the leaderboard.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Leaderboard {
    #[default]
    Shown,
    Hidden,
}

/// One round: a race, what the room is asked before it plays, and what the trainer says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    /// Its heading (`## …`).
    pub title: String,
    /// The line its heading is on, for errors about it.
    pub line: u32,
    pub race: Race,
    /// The trainer's own question; `None`: the scenario's, if it asks one.
    pub question: Option<Question>,
    /// For the trainer's eyes only, a paragraph each.
    pub notes: Vec<String>,
    /// Revealed to everyone after the run.
    pub explain: Option<String>,
}

/// What a round plays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Race {
    /// A catalog scenario (`isolation/write-skew`) at a variant, on a PostgreSQL major version
    /// (`None`: the server's own).
    Scenario {
        id: String,
        variant: String,
        postgres: Option<u32>,
    },
    /// A reader's saved spec, by its id, at one permutation (1-based; `None`: the first).
    Spec { id: String, permutation: Option<usize> },
    /// A recording (`*.racelab.json`), by its address.
    Recording { src: String },
}

/// The id of the run a racelab keeps that a recording round's `src` names
/// (`/api/runs/<id>/recording`, or the run's page `/runs/<id>`): what a room can replay.
pub fn kept_run(src: &str) -> Option<&str> {
    let id = src
        .strip_prefix("/api/runs/")
        .and_then(|rest| rest.strip_suffix("/recording"))
        .or_else(|| src.strip_prefix("/runs/"))?;
    let well_formed = !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    well_formed.then_some(id)
}

/// Where a recording round's file is read: a kept run's recording at this racelab, or the
/// address the lesson gives (a static file on a blog: its host must let other sites read it).
pub fn recording_address(src: &str) -> String {
    match kept_run(src) {
        Some(id) => format!("/api/runs/{id}/recording"),
        None => src.to_owned(),
    }
}

impl Default for Race {
    fn default() -> Race {
        Race::Scenario {
            id: String::new(),
            variant: String::new(),
            postgres: None,
        }
    }
}

/// A trainer's own multiple-choice question.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Question {
    pub text: String,
    /// `(id, label)`: the id is what [`Derived`] answers with (`alice`, `none`, `6000`).
    pub choices: Vec<(String, String)>,
    pub answer: Derived,
}

/// A lesson's `(id, label)` choices as the predict panel lists a scenario's (offered on every
/// database: a trainer's question names no database's own error).
pub fn as_choices(choices: &[(String, String)]) -> Vec<crate::Choice> {
    choices
        .iter()
        .map(|(id, label)| crate::Choice {
            id: id.clone(),
            label: label.clone(),
            only_on: None,
        })
        .collect()
}

/// Something wrong in a lesson, at its line (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LessonError {
    pub line: u32,
    pub message: String,
}

impl std::fmt::Display for LessonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for LessonError {}

/// What a server plays that a lesson's rounds may name.
pub struct Plays<'a> {
    pub scenarios: &'a [ScenarioInfo],
    /// The PostgreSQL major versions it plays on.
    pub postgres: &'a [u32],
}

/// Each round that names what `plays` does not have, refused by name at its line: an unknown
/// scenario, a variant its scenario does not have, a version not played here, a scenario round
/// without a question to ask. (Saved specs and recordings are checked where they are kept.)
pub fn refusals(lesson: &Lesson, plays: &Plays) -> Vec<LessonError> {
    let mut refused = Vec::new();
    for round in &lesson.rounds {
        let Race::Scenario { id, variant, postgres } = &round.race else {
            continue;
        };
        let at = |message: String| LessonError {
            line: round.line,
            message: format!("\"{}\": {message}", round.title),
        };
        let Some(scenario) = plays.scenarios.iter().find(|s| s.id == *id) else {
            refused.push(at(format!("racelab has no scenario {id}")));
            continue;
        };
        if scenario.variant(variant).is_none() {
            let known: Vec<&str> = scenario.variants.iter().map(|v| v.id.as_str()).collect();
            refused.push(at(format!(
                "{id} has no variant {variant} (it has {})",
                known.join(", ")
            )));
        }
        if let Some(major) = postgres
            && !plays.postgres.contains(major)
        {
            let here: Vec<String> = plays.postgres.iter().map(u32::to_string).collect();
            refused.push(at(format!(
                "racelab plays on PostgreSQL {} here, not {major}",
                here.join(" and ")
            )));
        }
        if round.question.is_none() && scenario.question_at(variant).is_none() {
            refused.push(at(format!(
                "{id} asks no question: write one (question:, choice, answer:)"
            )));
        }
    }
    refused
}

#[cfg(test)]
mod tests;
