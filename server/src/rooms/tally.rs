//! A room's question (predict, then run) and its tally: how many picked each choice, never who.
//!
//! The trainer asks before a run ("write skew at SERIALIZABLE: what happens?"); each page
//! following the room picks one of the scenario's choices, and may change its mind until the run
//! starts. The trainer sees the counts live; everyone sees them after the run reveals the answer.

use crate::control::Refusal;
use shared::lesson::Derived;
use shared::{ErrorCode, ScenarioInfo};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// One question and the picks made for it.
#[derive(Debug)]
pub struct Question {
    pub scenario: String,
    pub variant: String,
    /// The choices' ids, in the scenario's order.
    choices: Vec<String>,
    /// Each page's pick, by its place in the room (`replica/place` for a page on another replica)
    /// or, in a lesson, its handle; with how long after the question it was made.
    picks: HashMap<String, (String, Duration)>,
    /// When the question was asked: a pick's time counts from it.
    asked_at: Instant,
    /// How a lesson's own question is answered, read off the run when it ends; `None`: by the
    /// run's `reveal` (the scenario's own question).
    pub derived: Option<Derived>,
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
    /// without a question: the load test, a monitor). A reader's spec asks its own question
    /// (which of its outcomes comes), as its page does.
    pub fn ask(scenario: &ScenarioInfo, variant: &str) -> Result<Option<Question>, Refusal> {
        if scenario.variant(variant).is_none() {
            return Err(refusal(
                ErrorCode::UnknownVariant,
                format!("{} has no variant {variant:?}", scenario.id),
            ));
        }
        Ok(scenario.question_at(variant).map(|prediction| {
            let choices = prediction.choices.iter().map(|c| c.id.clone()).collect();
            Question::new(&scenario.id, variant, choices, None)
        }))
    }

    /// A question with these `choices` (ids), answered by `derived` or by the run's `reveal`.
    pub fn new(scenario: &str, variant: &str, choices: Vec<String>, derived: Option<Derived>) -> Question {
        Question {
            scenario: scenario.to_owned(),
            variant: variant.to_owned(),
            choices,
            picks: HashMap::new(),
            asked_at: Instant::now(),
            derived,
            started: false,
            revealed: false,
        }
    }

    /// Each pick, by who made it, with how long after the question.
    pub fn picks(&self) -> &HashMap<String, (String, Duration)> {
        &self.picks
    }

    /// Who picked what, by name, in that order (so the same picks always read the same).
    pub fn picked(&self) -> Vec<(String, String)> {
        let mut picked: Vec<(String, String)> = self
            .picks
            .iter()
            .map(|(who, (choice, _))| (who.clone(), choice.clone()))
            .collect();
        picked.sort();
        picked
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
        self.picks.insert(who, (choice.to_owned(), self.asked_at.elapsed()));
        Ok(())
    }

    /// How many picked each choice, every choice listed, in the scenario's order.
    pub fn counts(&self) -> Vec<(String, usize)> {
        self.choices
            .iter()
            .map(|choice| {
                let picked = self.picks.values().filter(|(p, _)| p == choice).count();
                (choice.clone(), picked)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(id: &str) -> ScenarioInfo {
        crate::engine::Scenario::info(crate::control::scenario_named(id).expect("in the catalog"))
    }

    #[test]
    fn picks_are_counted_per_choice_and_a_change_of_mind_moves_one() {
        let mut question = Question::ask(&catalog("isolation/write-skew"), "serializable")
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
                ("alice-fails", 0),
                ("deadlock", 0)
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
            Question::ask(&catalog("isolation/load-test"), "serializable")
                .expect("a scenario")
                .is_none(),
            "the load test asks nothing"
        );
        assert_eq!(
            Question::ask(&catalog("isolation/write-skew"), "snapshot")
                .map(|_| ())
                .map_err(|r| r.code),
            Err(ErrorCode::UnknownVariant)
        );
    }

    /// A reader's spec asks the question its author wrote, with its choices, at each of its
    /// permutations (not at every one); a spec that asks nothing has rounds without a question.
    #[test]
    fn a_spec_asks_its_authors_question() {
        let steps = "session a\nstep a1 { SELECT 1; }\nsession b\nstep b1 { SELECT 2; }\n";
        let asking = format!(
            "# question: Which runs first?\n# choice a: a does\n# choice b: b does\n\
             # answer 1 a: a1 is first\n# answer 2 b: b1 is first\n{steps}"
        );
        let spec = |text: &str| {
            crate::engine::Scenario::info(
                &crate::specs::scenario::SpecScenario::new("0123456789abcdef", text).expect("a spec"),
            )
        };
        assert!(
            Question::ask(&spec(&asking), "every").expect("its variant").is_none(),
            "every permutation answers no one question"
        );
        for variant in ["p1", "p2"] {
            let mut question = Question::ask(&spec(&asking), variant)
                .expect("its variant")
                .expect("it asks");
            assert_eq!(question.scenario, "spec/0123456789abcdef");
            question.pick("1".into(), "b").expect("one of its choices");
            assert_eq!(
                question.counts(),
                [("a".to_owned(), 0), ("b".to_owned(), 1)],
                "{variant}"
            );
        }
        assert_eq!(
            Question::ask(&spec(&asking), "p3").map(|_| ()).map_err(|r| r.code),
            Err(ErrorCode::UnknownVariant)
        );
        assert!(Question::ask(&spec(steps), "p1").expect("its variant").is_none());
    }
}
