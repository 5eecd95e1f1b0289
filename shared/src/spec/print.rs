//! [`Spec`] back to text: what "Open as a spec" shows for a scenario, and how a parsed spec is
//! checked to mean what it was read as (printing it and parsing that again gives the same spec).

use super::parse::{name_continues, name_start};
use super::{Blocker, Spec};
use std::fmt::Write as _;

/// A name as the spec must spell it: bare when the tester reads it so, else double-quoted.
pub fn name(text: &str) -> String {
    let mut chars = text.chars();
    let bare = chars.next().is_some_and(name_start)
        && chars.all(name_continues)
        && !matches!(
            text,
            "notices" | "permutation" | "session" | "setup" | "step" | "teardown"
        );
    if bare {
        text.to_owned()
    } else {
        format!("\"{}\"", text.replace('"', "\"\""))
    }
}

/// An SQL block. The spaces around the SQL are not part of it when read back.
fn block(sql: &str) -> String {
    if sql.is_empty() {
        "{ }".to_owned()
    } else {
        format!("{{ {sql} }}")
    }
}

/// The spec as text, one part a line, sessions apart: `parse(&print(spec))` gives `spec` back
/// (but for where things are).
pub fn print(spec: &Spec) -> String {
    let mut out = String::new();
    if spec.database != super::Database::Postgresql {
        let _ = writeln!(out, "# database: {}", spec.database.name());
    }
    for check in &spec.checks {
        let _ = writeln!(out, "# check: {}", check.sql);
    }
    if let Some(question) = &spec.question {
        let _ = writeln!(out, "# question: {}", question.text);
        for (id, label) in &question.choices {
            let _ = writeln!(out, "# choice {id}: {label}");
        }
        for answer in &question.answers {
            let _ = writeln!(out, "# answer {} {}: {}", answer.permutation, answer.choice, answer.why);
        }
    }
    if !spec.checks.is_empty() || spec.question.is_some() || spec.database != super::Database::Postgresql {
        out.push('\n');
    }
    for setup in &spec.setup {
        let _ = writeln!(out, "setup {}", block(setup));
    }
    if let Some(teardown) = &spec.teardown {
        let _ = writeln!(out, "teardown {}", block(teardown));
    }
    for session in &spec.sessions {
        if !out.is_empty() {
            out.push('\n');
        }
        let _ = writeln!(out, "session {}", name(&session.name));
        if let Some(setup) = &session.setup {
            let _ = writeln!(out, "setup {}", block(setup));
        }
        for step in &session.steps {
            let _ = writeln!(out, "step {} {}", name(&step.name), block(&step.sql));
        }
        if let Some(teardown) = &session.teardown {
            let _ = writeln!(out, "teardown {}", block(teardown));
        }
    }
    if !spec.permutations.is_empty() {
        out.push('\n');
    }
    for permutation in &spec.permutations {
        out.push_str("permutation");
        for step in &permutation.steps {
            out.push(' ');
            out.push_str(&name(&step.name));
            if !step.blockers.is_empty() {
                let blockers: Vec<String> = step
                    .blockers
                    .iter()
                    .map(|b| match b {
                        Blocker::Once => "*".to_owned(),
                        Blocker::Step(s) => name(s),
                        Blocker::Notices { step, count } => format!("{} notices {count}", name(step)),
                    })
                    .collect();
                let _ = write!(out, "({})", blockers.join(", "));
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{Check, Permutation, PermutationStep, Pos, Session, Step, parse};
    use super::*;
    use proptest::prelude::*;

    /// The spec without positions, which printing does not keep.
    fn placeless(mut spec: Spec) -> Spec {
        for session in &mut spec.sessions {
            session.at = Pos::default();
            for step in &mut session.steps {
                step.at = Pos::default();
            }
        }
        for permutation in &mut spec.permutations {
            permutation.at = Pos::default();
            for step in &mut permutation.steps {
                step.at = Pos::default();
            }
        }
        for check in &mut spec.checks {
            check.at = Pos::default();
        }
        spec
    }

    #[test]
    fn names_are_quoted_only_when_they_must_be() {
        assert_eq!(name("s1"), "s1");
        assert_eq!(name("émile$2"), "émile$2");
        assert_eq!(name("step"), "\"step\"");
        assert_eq!(name("two words"), "\"two words\"");
        assert_eq!(name("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(name("1st"), "\"1st\"");
        assert_eq!(name(""), "\"\"");
    }

    #[test]
    fn a_spec_prints_as_a_reader_would_write_it() {
        let text = "setup { CREATE TABLE t (k int); }\nsession alice\nstep a1 { SELECT 1; }\nsession bob\nstep b1 { SELECT 2; }\npermutation a1(*) b1\n";
        let spec = parse(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            print(&spec),
            "setup { CREATE TABLE t (k int); }\n\nsession alice\nstep a1 { SELECT 1; }\n\nsession bob\nstep b1 { SELECT 2; }\n\npermutation a1(*) b1\n"
        );
    }

    fn any_name() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z_][a-z0-9_$]{0,6}",
            "[ -~é]{0,8}",
            Just("step".to_owned()),
            Just("notices".to_owned()),
        ]
    }

    /// SQL as a parse can give it: no `}`, no spaces or tabs at either end.
    fn any_sql() -> impl Strategy<Value = String> {
        "[ -|~\n\té]{0,30}".prop_map(|s| s.trim_matches([' ', '\t']).to_owned())
    }

    fn any_spec() -> impl Strategy<Value = Spec> {
        let step = (any_name(), any_sql()).prop_map(|(name, sql)| Step {
            name,
            sql,
            at: Pos::default(),
        });
        let session = (
            any_name(),
            proptest::option::of(any_sql()),
            proptest::collection::vec(step, 1..4),
            proptest::option::of(any_sql()),
        )
            .prop_map(|(name, setup, steps, teardown)| Session {
                name,
                setup,
                steps,
                teardown,
                at: Pos::default(),
            });
        let blocker = prop_oneof![
            Just(Blocker::Once),
            any_name().prop_map(Blocker::Step),
            (any_name(), 0u32..1000).prop_map(|(step, count)| Blocker::Notices { step, count }),
        ];
        let pstep =
            (any_name(), proptest::collection::vec(blocker, 0..3)).prop_map(|(name, blockers)| PermutationStep {
                name,
                blockers,
                at: Pos::default(),
            });
        let permutation = proptest::collection::vec(pstep, 1..5).prop_map(|steps| Permutation {
            steps,
            at: Pos::default(),
        });
        let check = "[a-z0-9 <>=()]{1,20}".prop_filter_map("a check is trimmed and not empty", |sql| {
            let sql = sql.trim().to_owned();
            (!sql.is_empty()).then_some(Check {
                sql,
                at: Pos::default(),
            })
        });
        (
            proptest::collection::vec(any_sql(), 0..3),
            proptest::option::of(any_sql()),
            proptest::collection::vec(session, 1..4),
            proptest::collection::vec(permutation, 0..3),
            proptest::collection::vec(check, 0..2),
            any::<bool>(),
        )
            .prop_map(|(setup, teardown, sessions, permutations, checks, on_mariadb)| Spec {
                setup,
                teardown,
                sessions,
                permutations,
                checks,
                question: None,
                database: if on_mariadb {
                    super::super::Database::Mariadb
                } else {
                    super::super::Database::Postgresql
                },
            })
    }

    proptest! {
        #[test]
        fn a_printed_spec_parses_back_to_the_same_spec(spec in any_spec()) {
            let text = print(&spec);
            let back = parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
            prop_assert_eq!(placeless(back), spec);
        }

        #[test]
        fn any_text_parses_or_says_where_it_went_wrong(text in "[ -~\n\t\ré{}]{0,200}") {
            if let Err(error) = parse(&text) {
                let lines = u32::try_from(text.split('\n').count()).unwrap_or(u32::MAX);
                prop_assert!(error.at.line >= 1 && error.at.line <= lines);
                prop_assert!(error.at.column >= 1);
                prop_assert!(!error.message.is_empty());
            }
        }

        #[test]
        fn spec_shaped_text_never_panics(parts in proptest::collection::vec(prop_oneof![
            Just("setup"), Just("teardown"), Just("session"), Just("step"), Just("permutation"),
            Just("notices"), Just("s1"), Just("\"q\"\"x\""), Just("{ SELECT 1; }"), Just("("), Just(")"),
            Just(","), Just("*"), Just("3"), Just("# check: SELECT true\n"), Just("{"), Just("\""),
        ], 0..40)) {
            let text = parts.join(" ");
            if let Ok(spec) = parse(&text) {
                // A spec that parses prints and parses again.
                let again = parse(&print(&spec)).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(placeless(again), placeless(spec.clone()));
                let _ = spec.validate();
            }
        }
    }
}
