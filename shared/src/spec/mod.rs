//! Races written by readers, in PostgreSQL's own isolation-tester spec format.
//!
//! PostgreSQL tests its concurrency with about 150 specs in this format
//! (`src/test/isolation/README` in its tree), so thousands of people already read and write it:
//!
//! ```text
//! setup    { CREATE TABLE doctors (name text PRIMARY KEY, on_call bool); }
//! teardown { DROP TABLE doctors; }
//!
//! session alice
//! setup { BEGIN ISOLATION LEVEL REPEATABLE READ; }
//! step a_count { SELECT count(*) FROM doctors WHERE on_call; }
//! step a_leave { UPDATE doctors SET on_call = false WHERE name = 'alice'; }
//! step a_commit { COMMIT; }
//!
//! session bob
//! …
//! permutation a_count b_count a_leave b_leave a_commit b_commit
//! ```
//!
//! racelab reads it exactly as PostgreSQL's tester does (the same tokens, the same SQL text
//! handed to the server, the same permutations in the same order), so a spec means the same
//! thing in both, and `racelab run FILE.spec` prints what the tester prints. On top, comment
//! lines the tester ignores may say what a correct system holds (`# check: SELECT …`).
//!
//! - [`parse`]: text to [`Spec`], with errors at their line and column (the browser parses as
//!   you type with this same code).
//! - [`print`]: [`Spec`] back to text that parses to the same spec.
//! - [`permutations`]: the interleavings a spec plays, and how many there are.
//! - [`matrix`]: what each permutation came to, for "run every permutation".

mod database;
mod failure;
pub mod limits;
pub mod matrix;
mod parse;
mod permutations;
mod print;
pub mod question;
mod saved;

pub use database::{Database, STARTER_MARIADB, database_of, with_database};
pub use failure::failed_at;
pub use limits::{Limits, OverLimit};
pub use matrix::PlayedStep;
pub use parse::{ParseError, parse};
pub use permutations::{all_permutations, count_permutations};
pub use print::{name as quote_name, print};
pub use saved::{is_saved_id, saved_id};

/// Where something is in the spec's text: 1-based line and column (columns count characters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
}

impl std::fmt::Display for Pos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// A whole spec, in the order its text gives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spec {
    /// The `setup { … }` blocks, run in order on the tester's own connection before each
    /// permutation.
    pub setup: Vec<String>,
    /// The `teardown { … }` block, run after each permutation.
    pub teardown: Option<String>,
    pub sessions: Vec<Session>,
    /// The `permutation` lines; none means every interleaving that keeps each session's order.
    pub permutations: Vec<Permutation>,
    /// `# check: <SQL>` comment lines: queries that a correct system answers with `true` (or a
    /// row of `true`s) after each permutation. The tester ignores them as comments.
    pub checks: Vec<Check>,
    /// What the author asks readers to predict (`# question:` lines; see [`question`]).
    pub question: Option<question::Question>,
    /// Where it plays: `# database: mariadb` says MariaDB (its SQL is then MariaDB's);
    /// PostgreSQL without one. A comment to the tester, as `# check:` is.
    pub database: Database,
}

/// One session: its own connection, its setup and teardown, and its steps in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Session {
    pub name: String,
    pub setup: Option<String>,
    pub steps: Vec<Step>,
    pub teardown: Option<String>,
    pub at: Pos,
}

/// One named step: SQL sent as one query (it may hold several statements).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Step {
    pub name: String,
    pub sql: String,
    pub at: Pos,
}

/// One `permutation` line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permutation {
    pub steps: Vec<PermutationStep>,
    pub at: Pos,
}

/// A step named in a permutation, with the tester's blocker annotations (`s1a(s2b)`, `(*)`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PermutationStep {
    pub name: String,
    pub blockers: Vec<Blocker>,
    pub at: Pos,
}

/// A blocker annotation: the step is not reported complete until it is satisfied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Blocker {
    /// `(*)`: report the step as waiting once, even if it finished at once.
    Once,
    /// `(s2b)`: not complete while step `s2b` of another session is still running.
    Step(String),
    /// `(s2b notices 1)`: not complete until `s2b`'s session has sent that many more notices.
    Notices { step: String, count: u32 },
}

/// A `# check:` line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Check {
    pub sql: String,
    pub at: Pos,
}

/// What makes a well-formed spec unplayable, as the tester words it (it says these before it
/// connects, and plays nothing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Invalid {
    DuplicateStep {
        name: String,
        at: Pos,
    },
    UndefinedStep {
        name: String,
        at: Pos,
    },
    UndefinedBlocker {
        blocker: String,
        step: String,
        at: Pos,
    },
    BlocksOwnSession {
        step: String,
        at: Pos,
    },
    /// An answer for a permutation the spec does not have.
    NoSuchPermutation {
        permutation: usize,
        count: u64,
        at: Pos,
    },
}

impl Invalid {
    /// Where in the text the problem is.
    pub fn at(&self) -> Pos {
        match self {
            Invalid::DuplicateStep { at, .. }
            | Invalid::UndefinedStep { at, .. }
            | Invalid::UndefinedBlocker { at, .. }
            | Invalid::BlocksOwnSession { at, .. }
            | Invalid::NoSuchPermutation { at, .. } => *at,
        }
    }
}

impl std::fmt::Display for Invalid {
    /// The tester's own words (`undefined step "s3" specified in permutation`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Invalid::DuplicateStep { name, .. } => write!(f, "duplicate step name: {name}"),
            Invalid::UndefinedStep { name, .. } => write!(f, "undefined step \"{name}\" specified in permutation"),
            Invalid::UndefinedBlocker { blocker, step, .. } => write!(
                f,
                "undefined blocking step \"{blocker}\" referenced in permutation step \"{step}\""
            ),
            Invalid::BlocksOwnSession { step, .. } => {
                write!(f, "permutation step \"{step}\" cannot block on its own session")
            }
            Invalid::NoSuchPermutation { permutation, count, .. } => {
                write!(
                    f,
                    "the answer is for permutation {permutation}, and the spec has {count}"
                )
            }
        }
    }
}

impl std::error::Error for Invalid {}

impl Spec {
    /// The session that owns step `name`, and the step.
    pub fn step(&self, name: &str) -> Option<(usize, &Step)> {
        self.sessions
            .iter()
            .enumerate()
            .find_map(|(i, session)| session.steps.iter().find(|s| s.name == name).map(|s| (i, s)))
    }

    /// The tester's checks before it plays anything: step names are unique, permutations name
    /// only defined steps, and a blocker is another session's step in the same permutation.
    /// The first problem in the tester's order.
    pub fn validate(&self) -> Result<(), Invalid> {
        let mut names: Vec<&Step> = self.sessions.iter().flat_map(|s| s.steps.iter()).collect();
        // The tester sorts by name (strcmp: bytes) and reports the first repeat in that order.
        names.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        if let Some(pair) = names.windows(2).find(|pair| pair[0].name == pair[1].name) {
            let later = if pair[0].at.line > pair[1].at.line {
                pair[0]
            } else {
                pair[1]
            };
            return Err(Invalid::DuplicateStep {
                name: pair[1].name.clone(),
                at: later.at,
            });
        }
        for permutation in &self.permutations {
            for step in &permutation.steps {
                if self.step(&step.name).is_none() {
                    return Err(Invalid::UndefinedStep {
                        name: step.name.clone(),
                        at: step.at,
                    });
                }
            }
            for step in &permutation.steps {
                let own = self.step(&step.name).map(|(session, _)| session);
                for blocker in &step.blockers {
                    let target = match blocker {
                        Blocker::Once => continue,
                        Blocker::Step(name) | Blocker::Notices { step: name, .. } => name,
                    };
                    let in_permutation = permutation.steps.iter().any(|s| &s.name == target);
                    let Some((session, _)) = self.step(target).filter(|_| in_permutation) else {
                        return Err(Invalid::UndefinedBlocker {
                            blocker: target.clone(),
                            step: step.name.clone(),
                            at: step.at,
                        });
                    };
                    if Some(session) == own {
                        return Err(Invalid::BlocksOwnSession {
                            step: step.name.clone(),
                            at: step.at,
                        });
                    }
                }
            }
        }
        if let Some(question) = &self.question {
            let count = if self.permutations.is_empty() {
                count_permutations(self).unwrap_or(u64::MAX)
            } else {
                self.permutations.len() as u64
            };
            if let Some(answer) = question.answers.iter().find(|a| a.permutation as u64 > count) {
                return Err(Invalid::NoSuchPermutation {
                    permutation: answer.permutation,
                    count,
                    at: answer.at,
                });
            }
        }
        Ok(())
    }

    /// Steps that no permutation line names, in the tester's (name) order: it warns of them
    /// and plays on. Empty when the spec has no permutation lines.
    pub fn unused_steps(&self) -> Vec<&str> {
        if self.permutations.is_empty() {
            return Vec::new();
        }
        let mut unused: Vec<&str> = self
            .sessions
            .iter()
            .flat_map(|s| s.steps.iter())
            .map(|s| s.name.as_str())
            .filter(|name| {
                !self
                    .permutations
                    .iter()
                    .any(|p| p.steps.iter().any(|s| s.name == *name))
            })
            .collect();
        unused.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        unused
    }
}

/// What the editor says of a text as you type: where it goes wrong and why (the first
/// problem, in the words the server refuses it with: [`limits`] is the one check of both), or
/// a summary of what reads.
pub fn reading(text: &str) -> Result<String, (Pos, String)> {
    let over = |e: OverLimit| (e.at(), e.to_string());
    limits::check_size(text, &Limits::PAGE).map_err(over)?;
    let spec = parse(text).map_err(|e| (e.at, e.message))?;
    spec.validate().map_err(|invalid| (invalid.at(), invalid.to_string()))?;
    limits::check(&spec, &Limits::PAGE).map_err(over)?;
    let plural = |n: usize, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
    let permutations = if spec.permutations.is_empty() {
        let count = count_permutations(&spec).map_or_else(|| "too many".to_owned(), |n| n.to_string());
        format!("{count} permutations (every interleaving)")
    } else {
        plural(spec.permutations.len(), "permutation")
    };
    Ok(format!(
        "Reads as PostgreSQL's isolation tester reads it: {}, {permutations}, {}.",
        plural(spec.sessions.len(), "session"),
        plural(spec.checks.len(), "check"),
    ))
}

/// The spec the editor opens with: the isolation lab's write skew, two managers and one budget.
pub const STARTER: &str = include_str!("starter.spec");

/// A spec's title: its first comment line, when the text opens with comments (not a
/// `# check:` or `# database:` line).
pub fn title(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .take_while(|line| line.starts_with('#') || line.is_empty())
        .filter_map(|line| line.strip_prefix('#').map(str::trim))
        .find(|line| !line.is_empty() && !line.starts_with("check:") && !line.starts_with("database:"))
        .map(|line| line.chars().take(120).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_editor_reads_as_the_server_does() {
        assert_eq!(
            reading(STARTER).as_deref(),
            Ok("Reads as PostgreSQL's isolation tester reads it: 2 sessions, 2 permutations, 1 check.")
        );
        assert_eq!(
            reading("session s\nstep { SELECT 1; }"),
            Err((
                Pos { line: 2, column: 6 },
                "expected a step name after \"step\", found an SQL block".to_owned()
            ))
        );
        let (at, message) = reading("session s step a { SELECT 1; }\npermutation b").unwrap_err();
        assert_eq!(
            (at.line, message.as_str()),
            (2, "undefined step \"b\" specified in permutation")
        );
        let nine: String = (1..=9).map(|i| format!("session s{i} step a{i} {{ }}\n")).collect();
        assert_eq!(
            reading(&nine).unwrap_err(),
            (
                Pos { line: 9, column: 9 },
                "the spec has 9 sessions; at most 8 are played".to_owned()
            )
        );
        // The server's every limit, in its words: the steps, and without permutation lines,
        // the interleavings.
        let steps: String = (1..=101).map(|i| format!("step a{i} {{ }}\n")).collect();
        assert_eq!(
            reading(&format!("session s\n{steps}permutation a1")).unwrap_err().1,
            "the spec has 101 steps; at most 100 are played"
        );
        let wide: String = (1..=4)
            .map(|i| format!("session s{i} step a{i} {{ }} step b{i} {{ }} step c{i} {{ }}\n"))
            .collect();
        assert!(reading(&wide).unwrap_err().1.contains("369600 interleavings"));
        assert!(
            reading(&"#".repeat(Limits::PAGE.bytes + 1))
                .unwrap_err()
                .1
                .contains("at most 65536")
        );
        assert!(
            reading("session a step a1 { } session b step b1 { }")
                .unwrap()
                .contains("2 permutations (every interleaving)")
        );
    }

    #[test]
    fn the_starter_spec_reads_and_is_valid() {
        let starter = spec(STARTER);
        assert_eq!(starter.validate(), Ok(()));
        assert_eq!(starter.sessions.len(), 2);
        assert_eq!(starter.permutations.len(), 2);
        assert_eq!(starter.checks.len(), 1);
        assert_eq!(
            title(STARTER).as_deref(),
            Some("Two managers overspend a budget (write skew)")
        );
    }

    #[test]
    fn a_title_is_the_first_comment_line() {
        assert_eq!(
            title(
                "# check: SELECT true

# Two doctors
# more
session s"
            ),
            Some("Two doctors".into())
        );
        assert_eq!(
            title(
                "session s # not a title
"
            ),
            None
        );
    }

    fn spec(text: &str) -> Spec {
        match parse(text) {
            Ok(spec) => spec,
            Err(error) => panic!("{text:?} does not parse: {error}"),
        }
    }

    #[test]
    fn duplicate_step_names_are_refused_in_the_testers_words() {
        let s = spec("session a step x { SELECT 1; } session b step x { SELECT 2; }");
        let error = s.validate().unwrap_err();
        assert_eq!(error.to_string(), "duplicate step name: x");
    }

    #[test]
    fn a_permutation_names_only_defined_steps() {
        let s = spec("session a step x { SELECT 1; }\npermutation x y");
        let error = s.validate().unwrap_err();
        assert_eq!(error.to_string(), "undefined step \"y\" specified in permutation");
        assert_eq!(error.at(), Pos { line: 2, column: 15 });
    }

    #[test]
    fn a_blocker_is_a_step_of_another_session_in_the_same_permutation() {
        let s = spec(
            "session a step x { SELECT 1; } step x2 { SELECT 1; } session b step y { SELECT 2; }\npermutation x(x2) x2 y",
        );
        assert_eq!(
            s.validate().unwrap_err().to_string(),
            "permutation step \"x\" cannot block on its own session"
        );
        let s = spec("session a step x { SELECT 1; } session b step y { SELECT 2; }\npermutation x(y)");
        assert_eq!(
            s.validate().unwrap_err().to_string(),
            "undefined blocking step \"y\" referenced in permutation step \"x\""
        );
        let s =
            spec("session a step x { SELECT 1; } session b step y { SELECT 2; }\npermutation x(y, *) y(x notices 2)");
        assert_eq!(s.validate(), Ok(()));
    }

    #[test]
    fn unused_steps_are_listed_only_when_permutations_are_given() {
        let s = spec("session a step x { SELECT 1; } step w { SELECT 1; } session b step y { SELECT 2; }");
        assert!(s.unused_steps().is_empty());
        let s =
            spec("session a step x { SELECT 1; } step w { SELECT 1; } session b step y { SELECT 2; } permutation y x");
        assert_eq!(s.unused_steps(), vec!["w"]);
    }
}
