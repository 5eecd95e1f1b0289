//! "Run every permutation": what each permutation did, in one line a reader can compare, and the
//! permutations grouped by it.

use crate::verdict::Check;
use serde::{Deserialize, Serialize};

/// One step as a permutation played it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlayedStep {
    pub name: String,
    /// The session it belongs to.
    pub session: String,
    /// The server made it wait for another session.
    pub waited: bool,
    /// It failed: its SQLSTATE (`40001`), or the error's first words where there is none.
    pub error: Option<String>,
}

/// What a permutation came to, in a line: its failures by step, then its checks
/// (`b_commit 40001 · check held`). Permutations with the same line had the same outcome.
pub fn outcome(steps: &[PlayedStep], checks: &[Check]) -> String {
    let mut parts: Vec<String> = steps
        .iter()
        .filter_map(|s| s.error.as_ref().map(|e| format!("{} {e}", s.name)))
        .collect();
    if parts.is_empty() {
        parts.push("no errors".to_owned());
    }
    match (checks.is_empty(), checks.iter().all(|c| c.holds)) {
        (true, _) => parts.push("no check stated".to_owned()),
        (false, true) => parts.push("checks held".to_owned()),
        (false, false) => {
            let broken: Vec<String> = checks
                .iter()
                .filter(|c| !c.holds)
                .map(|c| format!("broken: {} → {}", c.rule, c.actual))
                .collect();
            parts.extend(broken);
        }
    }
    parts.join(" · ")
}

/// Permutation indexes grouped by outcome, in order of each outcome's first permutation.
pub fn group<'a>(outcomes: impl IntoIterator<Item = (usize, &'a str)>) -> Vec<(&'a str, Vec<usize>)> {
    let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
    for (index, outcome) in outcomes {
        match groups.iter_mut().find(|(o, _)| *o == outcome) {
            Some((_, members)) => members.push(index),
            None => groups.push((outcome, vec![index])),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(name: &str, error: Option<&str>) -> PlayedStep {
        PlayedStep {
            name: name.into(),
            session: "s".into(),
            waited: false,
            error: error.map(str::to_owned),
        }
    }

    #[test]
    fn an_outcome_names_failures_then_checks() {
        let steps = [step("a", None), step("b_commit", Some("40001"))];
        assert_eq!(
            outcome(&steps, &[Check::new("q", "t", true)]),
            "b_commit 40001 · checks held"
        );
        assert_eq!(
            outcome(&[step("a", None)], &[Check::new("sum <= 5000", "f", false)]),
            "no errors · broken: sum <= 5000 → f"
        );
        assert_eq!(outcome(&[], &[]), "no errors · no check stated");
    }

    #[test]
    fn permutations_with_the_same_outcome_are_grouped_and_counted() {
        let groups = group([(0, "x"), (1, "y"), (2, "x"), (3, "x")]);
        assert_eq!(groups, vec![("x", vec![0, 2, 3]), ("y", vec![1])]);
    }
}
