//! A timeline card in one line: what the compact timeline (the embed's default) and the static
//! picture of a run (`/runs/<id>.svg`) both draw, so a step reads the same in either.

use crate::timeline::Card;

/// How a line is marked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// A statement, request or message that went through.
    Step,
    /// The actor is blocked.
    Waiting,
    /// An error (with its SQLSTATE or status as the outcome), or a crash.
    Failed,
    Commit,
    Rollback,
    /// A process started, or exited by itself.
    Process,
    /// A transcript line spoken on the lane.
    Note,
}

impl Tone {
    /// The CSS class suffix (and SVG class) for this tone.
    pub fn class(self) -> &'static str {
        match self {
            Tone::Step => "step",
            Tone::Waiting => "waiting",
            Tone::Failed => "failed",
            Tone::Commit => "commit",
            Tone::Rollback => "rollback",
            Tone::Process => "process",
            Tone::Note => "note",
        }
    }
}

/// One card as one line: the text (a statement on one line), how it ended, and its tone.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub text: String,
    /// `UPDATE 1`, `201 Created`, `40001`; `None` while a step runs, or for marks.
    pub outcome: Option<String>,
    pub tone: Tone,
}

impl Line {
    fn new(text: impl Into<String>, outcome: Option<String>, tone: Tone) -> Line {
        Line {
            text: text.into(),
            outcome,
            tone,
        }
    }
}

/// The card in one line.
pub fn line(card: &Card) -> Line {
    match card {
        Card::Statement {
            text, result, error, ..
        } => match error {
            Some(failure) => Line::new(one_line(text), Some(failure.badge()), Tone::Failed),
            None => Line::new(one_line(text), result.clone(), Tone::Step),
        },
        Card::Waiting { by } => Line::new(format!("waits for {}", by.join(", ")), None, Tone::Waiting),
        Card::Released {
            waited_ms,
            result,
            error,
            ..
        } => {
            let text = format!("waited {}", duration(*waited_ms));
            match error {
                Some(failure) => Line::new(text, Some(failure.badge()), Tone::Failed),
                None => Line::new(text, result.clone(), Tone::Step),
            }
        }
        Card::Commit => Line::new("COMMIT", None, Tone::Commit),
        Card::Rollback => Line::new("ROLLBACK", None, Tone::Rollback),
        Card::Process { pid, restart } => Line::new(
            format!("{} (pid {pid})", if *restart { "started again" } else { "started" }),
            None,
            Tone::Process,
        ),
        Card::Crash { point } => Line::new(format!("crashed at {point}"), Some("killed".into()), Tone::Failed),
        Card::Exited { code } => Line::new(
            match code {
                Some(code) => format!("exited with code {code}"),
                None => "exited".into(),
            },
            None,
            Tone::Process,
        ),
        Card::Note { line } => Line::new(note(line), None, Tone::Note),
    }
}

/// A statement on one line: every run of whitespace (newlines, indentation) becomes one space.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A note's first line, with how many lines follow (a psql table is one note).
fn note(text: &str) -> String {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default().trim_end().to_owned();
    match lines.count() {
        0 => first,
        more => format!("{first} (+{more} lines)"),
    }
}

/// Whether lines an actor said are a psql table (a rule of `-` and `+` under its header), whose
/// columns must stay aligned, rather than sentences, which wrap.
pub fn is_table(text: &str) -> bool {
    text.lines()
        .any(|line| line.len() > 2 && line.starts_with('-') && line.chars().all(|c| c == '-' || c == '+'))
}

/// `850 ms`, `1.2 s`, `20 s`.
pub fn duration(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..10_000 => format!("{} s", crate::float::one_decimal(ms as f64 / 1_000.0)),
        _ => format!("{} s", ms / 1_000),
    }
}

/// `text` cut to at most `max` characters, an ellipsis marking the cut.
pub fn fit(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_psql_table_is_told_from_sentences() {
        assert!(is_table(" id | amount\n----+--------\n  1 |   3000\n(1 row)"));
        assert!(is_table(" count\n-------\n     2"));
        assert!(!is_table(
            "COMMIT failed: SQLSTATE 40001: could not serialize access\nretry the whole transaction"
        ));
        assert!(!is_table("- not a rule -"));
    }

    use super::*;
    use crate::ErrorKind;
    use crate::timeline::Failure;

    #[test]
    fn a_statement_is_one_line_with_its_result_or_its_sqlstate() {
        let statement = |result: Option<&str>, error: Option<Failure>| Card::Statement {
            service: crate::Service::Postgres,
            text: "SELECT coalesce(sum(amount), 0)\n  FROM expenses\n WHERE team = $1".into(),
            params: vec![],
            sent: None,
            result: result.map(str::to_owned),
            rows: None,
            received: None,
            error,
        };
        assert_eq!(
            line(&statement(Some("SELECT 1"), None)),
            Line::new(
                "SELECT coalesce(sum(amount), 0) FROM expenses WHERE team = $1",
                Some("SELECT 1".into()),
                Tone::Step
            )
        );
        let failure = Failure {
            kind: ErrorKind::Database,
            code: Some("40001".into()),
            message: "could not serialize access".into(),
        };
        let failed = line(&statement(None, Some(failure)));
        assert_eq!((failed.outcome.as_deref(), failed.tone), (Some("40001"), Tone::Failed));
    }

    #[test]
    fn marks_and_waits_read_in_words() {
        assert_eq!(line(&Card::Commit).text, "COMMIT");
        assert_eq!(
            line(&Card::Waiting {
                by: vec!["alice".into()]
            })
            .text,
            "waits for alice"
        );
        let released = line(&Card::Released {
            waited_ms: 1_250,
            result: Some("UPDATE 1".into()),
            rows: None,
            error: None,
        });
        assert_eq!(
            (released.text.as_str(), released.outcome.as_deref()),
            ("waited 1.3 s", Some("UPDATE 1")),
            "rounded half away from zero"
        );
        assert_eq!(
            line(&Card::Note {
                line: " id | amount\n----+-------\n  1 |  3000".into()
            })
            .text,
            " id | amount (+2 lines)"
        );
    }

    #[test]
    fn long_text_is_cut_with_an_ellipsis() {
        assert_eq!(fit("SELECT 1", 20), "SELECT 1");
        assert_eq!(fit("abcdefghij", 5), "abcd…");
        assert_eq!(duration(999), "999 ms");
        assert_eq!(duration(20_000), "20 s");
    }
}
