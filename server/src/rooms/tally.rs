//! A room's question (predict, then run) and its tally: how many picked each choice, never who.
//!
//! The trainer asks before a run ("write skew at SERIALIZABLE: what happens?"); each page
//! following the room picks one of the scenario's choices, and may change its mind until the run
//! starts. The trainer sees the counts live; everyone sees them after the run reveals the answer.

use crate::control::Refusal;
use shared::ErrorCode;
use std::collections::HashMap;

/// One question and the picks made for it.
#[derive(Debug)]
pub struct Question {
    pub scenario: String,
    pub variant: String,
    /// The choices' ids, in the scenario's order.
    choices: Vec<String>,
    /// Each page's pick, by its place in the room (`replica/place` for a page on another replica).
    picks: HashMap<String, String>,
    /// A run of it has started: picks are closed, so nobody changes their mind while the steps
    /// show what happens.
    pub started: bool,
    pub revealed: bool,
}

fn refusal(code: ErrorCode, message: String) -> Refusal {
    Refusal { code, message }
}

impl Question {
    /// The question for `scenario` at `variant`; `None` when the scenario asks nothing (a round
    /// without a question: the load test, a monitor).
    pub fn ask(scenario: &str, variant: &str) -> Result<Option<Question>, Refusal> {
        // A reader's spec asks nothing (yet): its rounds are rounds without a question.
        if scenario.starts_with("spec/") {
            return Ok(None);
        }
        let def = crate::control::scenario_named(scenario)?;
        let info = crate::engine::Scenario::info(def);
        if info.variant(variant).is_none() {
            return Err(refusal(
                ErrorCode::UnknownVariant,
                format!("{scenario} has no variant {variant:?}"),
            ));
        }
        Ok(info.predict.map(|prediction| Question {
            scenario: scenario.to_owned(),
            variant: variant.to_owned(),
            choices: prediction.choices.into_iter().map(|c| c.id).collect(),
            picks: HashMap::new(),
            started: false,
            revealed: false,
        }))
    }

    /// `who` picks `choice` (again, if they change their mind); refused once its run started.
    pub fn pick(&mut self, who: String, choice: &str) -> Result<(), Refusal> {
        if self.started && !self.revealed {
            return Err(refusal(
                ErrorCode::BadFrame,
                "the run has started: predictions are closed until the next question".to_owned(),
            ));
        }
        if self.revealed {
            return Err(refusal(
                ErrorCode::BadFrame,
                "the run has revealed the answer: predictions are closed until the next question".to_owned(),
            ));
        }
        if !self.choices.iter().any(|c| c == choice) {
            return Err(refusal(
                ErrorCode::BadFrame,
                format!("{choice:?} is not one of the choices: {}", self.choices.join(", ")),
            ));
        }
        self.picks.insert(who, choice.to_owned());
        Ok(())
    }

    /// How many picked each choice, every choice listed, in the scenario's order.
    pub fn counts(&self) -> Vec<(String, usize)> {
        self.choices
            .iter()
            .map(|choice| (choice.clone(), self.picks.values().filter(|p| *p == choice).count()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_are_counted_per_choice_and_a_change_of_mind_moves_one() {
        let mut question = Question::ask("isolation/write-skew", "serializable")
            .expect("a scenario")
            .expect("that asks");
        question.pick("1".into(), "both-commit").expect("a choice");
        question.pick("2".into(), "both-commit").expect("a choice");
        question.pick("3".into(), "bob-40001").expect("a choice");
        question.pick("2".into(), "bob-waits").expect("a change of mind");
        assert_eq!(
            question.counts(),
            [
                ("both-commit", 1),
                ("bob-waits", 1),
                ("bob-40001", 1),
                ("alice-fails", 0)
            ]
            .map(|(c, n)| (c.to_owned(), n))
        );
        assert_eq!(
            question.pick("4".into(), "nope").map_err(|r| r.code),
            Err(ErrorCode::BadFrame)
        );
        question.started = true;
        assert!(
            question.pick("4".into(), "bob-40001").is_err(),
            "closed once its run started"
        );
        question.revealed = true;
        assert!(
            question.pick("4".into(), "bob-40001").is_err(),
            "closed after the reveal"
        );
        assert_eq!(question.counts().iter().map(|(_, n)| n).sum::<usize>(), 3);
    }

    #[test]
    fn only_scenarios_that_ask_have_questions() {
        assert!(
            Question::ask("isolation/load-test", "serializable")
                .expect("a scenario")
                .is_none(),
            "the load test asks nothing"
        );
        assert_eq!(
            Question::ask("isolation/write-skew", "snapshot")
                .map(|_| ())
                .map_err(|r| r.code),
            Err(ErrorCode::UnknownVariant)
        );
        assert_eq!(
            Question::ask("isolation/nope", "x").map(|_| ()).map_err(|r| r.code),
            Err(ErrorCode::UnknownScenario)
        );
    }
}
