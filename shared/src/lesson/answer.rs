//! A trainer's question's right answer, derived from the run rather than written down: the run
//! decides, so the answer the room is scored against is what the database really did.

use crate::event::{Event, EventKind, Moment};

/// How a round's right answer is read off its run: the id of the choice that happened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Derived {
    /// `failed 40001`: who was refused with that error (SQLSTATE, or MariaDB's number), or with
    /// any error (`failed`): the actor's name, `several` if more than one, `nobody` if none.
    Failed { code: Option<String> },
    /// `verdict`: `reproduced` (the bug happened), `prevented`, or `unstated` (a spec that
    /// states no check).
    #[default]
    Verdict,
    /// `broken`: the number of the first check that broke (1-based, as the verdict lists them),
    /// or `none`.
    Broken,
    /// `sum TABLE.COLUMN`: the column's total in the ledger after the run (`6000`).
    Sum { table: String, column: String },
}

impl Derived {
    /// Reads an `answer:` line's value (`failed 40001`, `sum expenses.amount`).
    pub fn parse(text: &str) -> Result<Derived, String> {
        let mut words = text.split_whitespace();
        let derived = match (words.next(), words.next()) {
            (Some("failed"), code) => Derived::Failed {
                code: code.map(str::to_owned),
            },
            (Some("verdict"), None) => Derived::Verdict,
            (Some("broken"), None) => Derived::Broken,
            (Some("sum"), Some(column)) => {
                let (table, column) = column
                    .split_once('.')
                    .filter(|(t, c)| !t.is_empty() && !c.is_empty())
                    .ok_or_else(|| format!("sum wants TABLE.COLUMN, not {column:?}"))?;
                Derived::Sum {
                    table: table.to_owned(),
                    column: column.to_owned(),
                }
            }
            _ => {
                return Err(format!(
                    "an answer is derived from the run: failed [CODE], verdict, broken or sum TABLE.COLUMN, not {text:?}"
                ));
            }
        };
        match words.next() {
            Some(extra) => Err(format!("{extra:?} after the answer {text:?}")),
            None => Ok(derived),
        }
    }

    /// The choice id the run's `events` answer with; `None` when the run has not answered yet
    /// (no verdict, no ledger after it).
    pub fn of(&self, events: &[Event]) -> Option<String> {
        match self {
            Derived::Failed { code } => Some(who_failed(events, code.as_deref())),
            Derived::Verdict => verdict(events).map(|v| v.kind_name().to_owned()),
            Derived::Broken => verdict(events).map(|v| {
                v.checks
                    .iter()
                    .position(|c| !c.holds)
                    .map_or_else(|| "none".to_owned(), |i| (i + 1).to_string())
            }),
            Derived::Sum { table, column } => sum_after(events, table, column).map(|n| n.to_string()),
        }
    }
}

impl std::fmt::Display for Derived {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Derived::Failed { code: Some(code) } => write!(f, "failed {code}"),
            Derived::Failed { code: None } => f.write_str("failed"),
            Derived::Verdict => f.write_str("verdict"),
            Derived::Broken => f.write_str("broken"),
            Derived::Sum { table, column } => write!(f, "sum {table}.{column}"),
        }
    }
}

fn verdict(events: &[Event]) -> Option<&crate::verdict::Verdict> {
    events.iter().rev().find_map(|e| match &e.kind {
        EventKind::Verdict { verdict } => Some(verdict),
        _ => None,
    })
}

/// Who was refused with `code` (any error without one), each once, in the order they were.
fn who_failed(events: &[Event], code: Option<&str>) -> String {
    let mut who: Vec<&str> = Vec::new();
    for event in events {
        if let EventKind::Error { actor, code: got, .. } = &event.kind
            && code.is_none_or(|c| got.as_deref() == Some(c))
            && !who.contains(&actor.as_str())
        {
            who.push(actor);
        }
    }
    match who.as_slice() {
        [] => "nobody".to_owned(),
        [one] => (*one).to_owned(),
        _ => "several".to_owned(),
    }
}

/// The total of `table.column` in the ledger after the run: whole numbers, or numbers written
/// as text (`6000`, `6000.00`); `None` without that ledger, table or column.
fn sum_after(events: &[Event], table: &str, column: &str) -> Option<i64> {
    let ledger = events.iter().rev().find_map(|e| match &e.kind {
        EventKind::Ledger {
            moment: Moment::After,
            ledger,
        } => Some(ledger),
        _ => None,
    })?;
    let table = ledger.table(table)?;
    let at = table.columns.iter().position(|c| c == column)?;
    let mut total = 0i64;
    for row in &table.rows {
        let value = row.get(at)?;
        let n = value.as_int().or_else(|| {
            let text = value.as_text()?.trim();
            let whole = text.split_once('.').map_or(text, |(w, _)| w);
            whole.parse().ok()
        });
        total = total.checked_add(n.unwrap_or(0))?;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::{Ledger, Table};
    use crate::verdict::{Check, Verdict};
    use crate::{Value, event::ErrorKind};

    fn events(kinds: Vec<EventKind>) -> Vec<Event> {
        kinds
            .into_iter()
            .zip(0..)
            .map(|(kind, seq)| Event { seq, at_ms: 0, kind })
            .collect()
    }

    fn error(actor: &str, code: &str) -> EventKind {
        EventKind::Error {
            actor: actor.into(),
            kind: ErrorKind::Database,
            code: Some(code.into()),
            message: "refused".into(),
        }
    }

    #[test]
    fn an_answer_line_reads_and_prints_back_as_written() {
        for text in ["failed 40001", "failed", "verdict", "broken", "sum expenses.amount"] {
            let derived = Derived::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(derived.to_string(), text);
        }
        assert!(Derived::parse("who knows").is_err());
        assert!(Derived::parse("sum amount").is_err());
        assert!(Derived::parse("verdict now").is_err());
    }

    #[test]
    fn who_failed_is_read_off_the_errors_of_the_run() {
        let run = events(vec![
            error("bob", "40001"),
            error("bob", "40001"),
            error("alice", "40P01"),
        ]);
        let failed = |code: Option<&str>| Derived::Failed {
            code: code.map(str::to_owned),
        };
        assert_eq!(failed(Some("40001")).of(&run).as_deref(), Some("bob"));
        assert_eq!(failed(Some("1213")).of(&run).as_deref(), Some("nobody"));
        assert_eq!(failed(None).of(&run).as_deref(), Some("several"));
    }

    #[test]
    fn the_verdict_its_first_broken_check_and_a_total_are_read_off_the_end() {
        let checks = vec![
            Check::new("a", "a", true),
            Check::new("total ≤ $5,000", "$6,000", false),
        ];
        let ledger = Ledger {
            tables: vec![Table {
                name: "expenses".into(),
                columns: vec!["id".into(), "amount".into()],
                rows: vec![
                    vec![Value::Int(1), Value::Int(3000)],
                    vec![Value::Int(2), Value::Text("3000.00".into())],
                ],
                key_columns: 1,
            }],
        };
        let run = events(vec![
            EventKind::Ledger {
                moment: Moment::After,
                ledger,
            },
            EventKind::Verdict {
                verdict: Verdict::judge(checks, "Overspent", "both"),
            },
        ]);
        assert_eq!(Derived::Verdict.of(&run).as_deref(), Some("reproduced"));
        assert_eq!(Derived::Broken.of(&run).as_deref(), Some("2"));
        let total = Derived::parse("sum expenses.amount").expect("a sum");
        assert_eq!(total.of(&run).as_deref(), Some("6000"));
        assert_eq!(Derived::parse("sum expenses.nope").expect("a sum").of(&run), None);
        assert_eq!(Derived::Verdict.of(&[]), None, "no verdict yet");
    }
}
