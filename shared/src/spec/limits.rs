//! How much of a spec racelab plays: one check, made by /write's editor as the reader types and
//! by the server before it plays, so the two never disagree and say so in the same words (a
//! spec the editor calls fine is never refused on save for a limit the editor did not know).

use super::{Pos, Spec, count_permutations};

/// The most a spec may be and do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Its text, in bytes.
    pub bytes: usize,
    pub sessions: usize,
    /// The steps its sessions define, together.
    pub steps: usize,
    /// Interleavings played when it has no permutation lines; `None`: every one, as the
    /// isolation tester plays them.
    pub interleavings: Option<u64>,
}

impl Limits {
    /// A page's (/write, a shared spec, a room): what one reader may ask of a shared server.
    pub const PAGE: Limits = Limits {
        bytes: 64 * 1024,
        sessions: 8,
        steps: 100,
        interleavings: Some(120),
    };

    /// The command line's, on the reader's own machine: a page's, but every interleaving.
    pub const COMMAND_LINE: Limits = Limits {
        interleavings: None,
        ..Limits::PAGE
    };

    /// How many steps permutation lines may name in all: each line may name a step many times,
    /// so up to this many per step the spec may define.
    pub const fn listed(&self) -> usize {
        self.steps * 20
    }
}

/// A spec past a limit, and where in its text it goes past.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OverLimit {
    #[error("the spec is {bytes} bytes; at most {limit} are played")]
    TooBig { bytes: usize, limit: usize },
    #[error("the spec has {count} sessions; at most {limit} are played")]
    TooManySessions { count: usize, limit: usize, at: Pos },
    #[error("the spec has {count} steps; at most {limit} are played")]
    TooManySteps { count: usize, limit: usize, at: Pos },
    #[error("the spec's permutation lines name {count} steps in all; at most {limit} are played")]
    TooManyListed { count: usize, limit: usize, at: Pos },
    #[error(
        "without permutation lines this spec has {} interleavings, and at most {limit} are played \
         at once: add permutation lines for the ones you want to see",
        count.map_or_else(|| "more than 18 billion billion".to_owned(), |c| c.to_string())
    )]
    TooManyInterleavings { count: Option<u64>, limit: u64, at: Pos },
}

impl OverLimit {
    /// Where the editor marks it: the first session, step or permutation past the limit; the
    /// text's start for its size.
    pub fn at(&self) -> Pos {
        match self {
            OverLimit::TooBig { .. } => Pos { line: 1, column: 1 },
            OverLimit::TooManySessions { at, .. }
            | OverLimit::TooManySteps { at, .. }
            | OverLimit::TooManyListed { at, .. }
            | OverLimit::TooManyInterleavings { at, .. } => *at,
        }
    }
}

/// Whether `text` is small enough to read at all (checked before it is parsed).
pub fn check_size(text: &str, limits: &Limits) -> Result<(), OverLimit> {
    match text.len() > limits.bytes {
        true => Err(OverLimit::TooBig {
            bytes: text.len(),
            limit: limits.bytes,
        }),
        false => Ok(()),
    }
}

/// Whether a parsed, valid `spec` is within `limits`: its sessions, its steps, the steps its
/// permutation lines name, and without lines, its interleavings.
pub fn check(spec: &Spec, limits: &Limits) -> Result<(), OverLimit> {
    if let Some(extra) = spec.sessions.get(limits.sessions) {
        return Err(OverLimit::TooManySessions {
            count: spec.sessions.len(),
            limit: limits.sessions,
            at: extra.at,
        });
    }
    let steps: Vec<Pos> = spec
        .sessions
        .iter()
        .flat_map(|s| s.steps.iter().map(|step| step.at))
        .collect();
    if let Some(extra) = steps.get(limits.steps) {
        return Err(OverLimit::TooManySteps {
            count: steps.len(),
            limit: limits.steps,
            at: *extra,
        });
    }
    let listed: Vec<Pos> = spec
        .permutations
        .iter()
        .flat_map(|p| p.steps.iter().map(|s| s.at))
        .collect();
    if let Some(extra) = listed.get(limits.listed()) {
        return Err(OverLimit::TooManyListed {
            count: listed.len(),
            limit: limits.listed(),
            at: *extra,
        });
    }
    if let (true, Some(limit)) = (spec.permutations.is_empty(), limits.interleavings) {
        let count = count_permutations(spec);
        if count.is_none_or(|c| c > limit) {
            let at = spec.sessions.first().map_or(Pos { line: 1, column: 1 }, |s| s.at);
            return Err(OverLimit::TooManyInterleavings { count, limit, at });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse;

    fn spec(text: &str) -> Spec {
        parse(text).unwrap_or_else(|e| panic!("{text}: {}", e.message))
    }

    #[test]
    fn the_size_is_checked_in_bytes() {
        let limits = Limits {
            bytes: 4,
            ..Limits::PAGE
        };
        assert_eq!(
            check_size("ééé", &limits),
            Err(OverLimit::TooBig { bytes: 6, limit: 4 })
        );
        assert_eq!(check_size("éé", &limits), Ok(()));
    }

    #[test]
    fn nine_sessions_are_refused_at_the_ninth() {
        let nine: String = (1..=9)
            .map(|i| format!("session s{i} step a{i} {{ SELECT 1; }}\n"))
            .collect();
        let refused = check(&spec(&nine), &Limits::PAGE);
        assert_eq!(
            refused,
            Err(OverLimit::TooManySessions {
                count: 9,
                limit: 8,
                // At the ninth session's name.
                at: Pos { line: 9, column: 9 }
            })
        );
        assert_eq!(
            refused.map_err(|e| e.to_string()),
            Err("the spec has 9 sessions; at most 8 are played".to_owned())
        );
    }

    #[test]
    fn the_hundred_and_first_step_is_marked() {
        let steps: String = (1..=101).map(|i| format!("step a{i} {{ }}\n")).collect();
        let text = format!("session s\n{steps}permutation a1");
        let refused = check(&spec(&text), &Limits::PAGE);
        assert_eq!(
            refused,
            Err(OverLimit::TooManySteps {
                count: 101,
                limit: 100,
                // At the 101st step's name.
                at: Pos { line: 102, column: 6 }
            })
        );
        let hundred: String = (1..=100).map(|i| format!("step a{i} {{ }}\n")).collect();
        assert_eq!(
            check(&spec(&format!("session s\n{hundred}permutation a1")), &Limits::PAGE),
            Ok(())
        );
    }

    #[test]
    fn permutation_lines_may_name_twenty_steps_for_each_defined() {
        let limits = Limits {
            steps: 1,
            ..Limits::PAGE
        };
        let line = |n: usize| vec!["a"; n].join(" ");
        let within = format!("session s step a {{ }}\npermutation {}", line(20));
        assert_eq!(check(&spec(&within), &limits), Ok(()));
        let past = format!("session s step a {{ }}\npermutation {}\npermutation a", line(20));
        assert!(matches!(
            check(&spec(&past), &limits),
            Err(OverLimit::TooManyListed {
                count: 21,
                limit: 20,
                at: Pos { line: 3, .. }
            })
        ));
    }

    #[test]
    fn every_interleaving_is_a_pages_only_up_to_its_limit() {
        let wide: String = (1..=4)
            .map(|i| format!("session s{i} step a{i} {{ }} step b{i} {{ }} step c{i} {{ }}\n"))
            .collect();
        let refused = check(&spec(&wide), &Limits::PAGE).map_err(|e| e.to_string());
        assert!(
            refused
                .as_ref()
                .is_err_and(|e| e.contains("this spec has 369600 interleavings, and at most 120")),
            "{refused:?}"
        );
        assert_eq!(check(&spec(&wide), &Limits::COMMAND_LINE), Ok(()));
        let lined = format!("{wide}permutation a1 a2");
        assert_eq!(check(&spec(&lined), &Limits::PAGE), Ok(()), "its lines are what plays");
    }
}
