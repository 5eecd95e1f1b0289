//! "Run every permutation": what each permutation did, in one line a reader can compare, and the
//! permutations grouped by it.

use crate::event::{Event, EventKind};
use crate::verdict::Check;
use serde::{Deserialize, Serialize};

/// A spec's variant that plays every permutation, one after another, for the matrix.
pub const EVERY: &str = "every";

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

impl PlayedStep {
    /// What marks the step in a permutation's row: ` ✗ 40001` where it failed, ` waited` where
    /// the server made it wait, nothing where it just ran.
    pub fn mark(&self) -> String {
        match (&self.error, self.waited) {
            (Some(code), _) => format!(" ✗ {code}"),
            (None, true) => " waited".to_owned(),
            (None, false) => String::new(),
        }
    }
}

/// One permutation as a run at every permutation reported it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row<'a> {
    /// From 0; a reader counts from 1.
    pub index: u32,
    pub steps: &'a [PlayedStep],
    pub outcome: &'a str,
}

/// The permutations a run has reported so far, in the order played: a run at every
/// permutation's whole content (its lanes stay quiet), and empty for any other run.
pub fn rows(events: &[Event]) -> Vec<Row<'_>> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Permutation { index, steps, outcome } => Some(Row {
                index: *index,
                steps,
                outcome,
            }),
            _ => None,
        })
        .collect()
}

/// The permutations in a group, as a reader counts them: `permutation 2`, `permutations 1, 3`.
pub fn which(members: &[usize]) -> String {
    let numbers: Vec<String> = members.iter().map(|i| (i + 1).to_string()).collect();
    let plural = if members.len() == 1 { "" } else { "s" };
    format!("permutation{plural} {}", numbers.join(", "))
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

/// The matrix as HTML text (inside its `<section class="rl-matrix">`): the permutations with the
/// same outcome grouped and counted, then one row per permutation, its steps in order with waits
/// and failures marked, its outcome; with `open`, a button per row to play it (a page that has a
/// server to play it on; `data-index` says which).
pub fn html(events: &[Event], open: bool) -> String {
    let rows = rows(events);
    let mut html = crate::markup::Html::default();
    html.open("ul", &[("class", Some("rl-matrix-groups"))]);
    for (outcome, members) in group(rows.iter().map(|row| (row.index as usize, row.outcome))) {
        let count = members.len().to_string();
        html.open(
            "li",
            &[("class", Some("rl-matrix-group")), ("data-count", Some(&count))],
        )
        .element("strong", &[], &format!("{count} × "))
        .element("span", &[("class", Some("rl-matrix-outcome"))], outcome)
        .element(
            "span",
            &[("class", Some("rl-matrix-which"))],
            &format!(" ({})", which(&members)),
        )
        .close("li");
    }
    html.close("ul")
        .open("div", &[("class", Some("rl-matrix-scroll"))])
        .open("table", &[])
        .open("thead", &[])
        .open("tr", &[])
        .element("th", &[("scope", Some("col"))], "#")
        .element(
            "th",
            &[("scope", Some("col"))],
            "Steps, in order (waits and failures marked)",
        )
        .element("th", &[("scope", Some("col"))], "Outcome");
    if open {
        html.element("th", &[], "");
    }
    html.close("tr").close("thead").open("tbody", &[]);
    for row in &rows {
        let index = row.index.to_string();
        html.open("tr", &[("class", Some("rl-matrix-row")), ("data-index", Some(&index))])
            .element("th", &[("scope", Some("row"))], &(u64::from(row.index) + 1).to_string())
            .open("td", &[])
            .open("ol", &[("class", Some("rl-matrix-steps"))]);
        for step in row.steps {
            html.element(
                "li",
                &[
                    ("class", Some("rl-matrix-step")),
                    ("data-session", Some(&step.session)),
                    ("data-waited", Some(&step.waited.to_string())),
                    ("data-error", Some(step.error.as_deref().unwrap_or_default())),
                    ("title", Some(&step.session)),
                ],
                &format!("{}{}", step.name, step.mark()),
            );
        }
        html.close("ol")
            .close("td")
            .element("td", &[("class", Some("rl-matrix-outcome"))], row.outcome);
        if open {
            html.open("td", &[])
                .element(
                    "button",
                    &[("class", Some("rl-matrix-open")), ("data-index", Some(&index))],
                    "Open",
                )
                .close("td");
        }
        html.close("tr");
    }
    html.close("tbody").close("table").close("div");
    html.into_string()
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
    fn a_step_is_marked_by_its_failure_first_then_its_wait() {
        let mut waited = step("b_read", None);
        waited.waited = true;
        let mut failed_after_waiting = step("b_commit", Some("40001"));
        failed_after_waiting.waited = true;
        assert_eq!(step("a", None).mark(), "");
        assert_eq!(waited.mark(), " waited");
        assert_eq!(failed_after_waiting.mark(), " ✗ 40001");
    }

    #[test]
    fn a_runs_rows_are_its_permutation_events_and_nothing_else() {
        let event = |seq, kind| Event { seq, at_ms: 0, kind };
        let steps = vec![step("a", None)];
        let events = [
            event(
                0,
                EventKind::Note {
                    actor: "tester".into(),
                    text: "header".into(),
                },
            ),
            event(
                1,
                EventKind::Permutation {
                    index: 1,
                    steps: steps.clone(),
                    outcome: "no errors".into(),
                },
            ),
            event(
                2,
                EventKind::Permutation {
                    index: 0,
                    steps: vec![],
                    outcome: "x".into(),
                },
            ),
        ];
        let rows = rows(&events);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].index, rows[0].steps, rows[0].outcome),
            (1, steps.as_slice(), "no errors")
        );
        assert_eq!((rows[1].index, rows[1].outcome), (0, "x"));
        assert!(super::rows(&events[..1]).is_empty());
    }

    #[test]
    fn a_group_is_named_as_a_reader_counts() {
        assert_eq!(which(&[1]), "permutation 2");
        assert_eq!(which(&[0, 2, 3]), "permutations 1, 3, 4");
    }

    #[test]
    fn permutations_with_the_same_outcome_are_grouped_and_counted() {
        let groups = group([(0, "x"), (1, "y"), (2, "x"), (3, "x")]);
        assert_eq!(groups, vec![("x", vec![0, 2, 3]), ("y", vec![1])]);
    }

    #[test]
    fn the_matrix_groups_then_lists_each_permutation_and_opens_one_only_where_asked() {
        let played = |index, error: Option<&str>, outcome: &str| Event {
            seq: u64::from(index),
            at_ms: 0,
            kind: EventKind::Permutation {
                index,
                steps: vec![step("<b>", error)],
                outcome: outcome.into(),
            },
        };
        let events = [played(0, None, "no errors"), played(1, Some("40001"), "<b> 40001")];
        let html = html(&events, false);
        assert!(html.starts_with(
            "<ul class=\"rl-matrix-groups\"><li class=\"rl-matrix-group\" data-count=\"1\"><strong>1 × </strong>\
             <span class=\"rl-matrix-outcome\">no errors</span><span class=\"rl-matrix-which\"> (permutation 1)</span></li>"
        ), "{html}");
        assert!(html.contains(
            "<tr class=\"rl-matrix-row\" data-index=\"1\"><th scope=\"row\">2</th><td><ol class=\"rl-matrix-steps\">\
             <li class=\"rl-matrix-step\" data-session=\"s\" data-waited=\"false\" data-error=\"40001\" title=\"s\">\
             &lt;b&gt; ✗ 40001</li></ol></td><td class=\"rl-matrix-outcome\">&lt;b&gt; 40001</td></tr>"
        ), "{html}");
        assert!(!html.contains("rl-matrix-open"));
        assert_eq!(
            super::html(&events, true)
                .matches("<button class=\"rl-matrix-open\" data-index=")
                .count(),
            2
        );
    }
}
