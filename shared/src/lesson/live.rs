//! A lesson as a room plays it: what every page is shown (the round, its question, after the
//! run its answer and explanation, the leaderboard), and the session's results as a trainer takes
//! them home (CSV).
//!
//! Pure: the room keeps the answers; these functions turn them into standings, a page's view and
//! a file. A participant is known by their handle only, the one thing results hold about them.

use serde::{Deserialize, Serialize};

/// What a page in a room that runs a lesson is shown, whenever it changes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Live {
    /// The lesson's id (its link is `/lessons/<id>`) and title.
    pub lesson: String,
    pub title: String,
    /// How many rounds the lesson has.
    pub rounds: usize,
    /// The round the room is on; none before the trainer opens the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<LiveRound>,
    /// Everyone seated, best first; to a participant while it is hidden, only their own line.
    pub leaderboard: Vec<Standing>,
    /// Whether participants see the whole leaderboard.
    pub shown: bool,
}

/// The round a room is on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveRound {
    /// 1-based, as the trainer's page numbers rounds.
    pub number: usize,
    pub title: String,
    /// What it plays: a catalog scenario (`isolation/write-skew`) or a spec (`spec/<id>`), at a
    /// variant, on a PostgreSQL major version (none: the server's first).
    pub scenario: String,
    pub variant: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgres: Option<u32>,
    pub question: String,
    /// `(id, label)`, in the order the page lists them.
    pub choices: Vec<(String, String)>,
    /// The choice the run answered with, once it revealed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The trainer's explanation, once the run revealed the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<String>,
    /// Who picked what, as of when this was sent: every handle's between replicas; to a
    /// participant's page, its own pick only (so a page reloaded after picking shows it, and
    /// after the reveal its result is the one scored); none to the trainer's, which has the tally.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub picked: Vec<(String, String)>,
}

/// One participant's line on the leaderboard.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Standing {
    pub handle: String,
    /// Rounds answered right, and answered at all.
    pub right: usize,
    pub answered: usize,
    /// Time taken over the right answers, in milliseconds: ties go to the quicker.
    pub millis: u64,
}

/// One participant's answer to one round, as it is scored and kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// The round's number (1-based).
    pub round: usize,
    pub handle: String,
    pub choice: String,
    pub right: bool,
    /// From the round's question opening to this participant's last pick.
    pub millis: u64,
}

/// The leaderboard: every handle in `seated` (those who answered nothing too), most right
/// answers first, then the quicker, then by handle so the order never flickers.
pub fn standings<'a>(answers: &[Answer], seated: impl IntoIterator<Item = &'a str>) -> Vec<Standing> {
    let mut lines: Vec<Standing> = Vec::new();
    let mut line = |handle: &str| -> usize {
        match lines.iter().position(|s| s.handle == handle) {
            Some(at) => at,
            None => {
                lines.push(Standing {
                    handle: handle.to_owned(),
                    ..Standing::default()
                });
                lines.len() - 1
            }
        }
    };
    let mut at: Vec<(usize, &Answer)> = answers.iter().map(|a| (line(&a.handle), a)).collect();
    for handle in seated {
        line(handle);
    }
    for (index, answer) in at.drain(..) {
        let standing = &mut lines[index];
        standing.answered += 1;
        if answer.right {
            standing.right += 1;
            standing.millis += answer.millis;
        }
    }
    lines.sort_by(|a, b| {
        b.right
            .cmp(&a.right)
            .then(a.millis.cmp(&b.millis))
            .then_with(|| a.handle.cmp(&b.handle))
    });
    lines
}

impl Live {
    /// What the page of `handle` is shown: everything, unless the leaderboard is hidden from
    /// participants; then their own line only (none for a page without a handle). The trainer's
    /// page sees everything always.
    pub fn for_page(&self, handle: Option<&str>, trainer: bool) -> Live {
        let mut live = self.clone();
        if !self.shown && !trainer {
            live.leaderboard.retain(|s| Some(s.handle.as_str()) == handle);
        }
        if let Some(round) = live.round.as_mut() {
            round.picked.retain(|(who, _)| !trainer && Some(who.as_str()) == handle);
        }
        live
    }

    /// The pick of `handle` for the open round, as the room last said.
    pub fn pick_of(&self, handle: &str) -> Option<&str> {
        let round = self.round.as_ref()?;
        round
            .picked
            .iter()
            .find(|(who, _)| who == handle)
            .map(|(_, choice)| choice.as_str())
    }
}

/// The session's results as CSV, one line per answer: `handle,round,answer,right,seconds`
/// (seconds with millisecond precision), rounds in order, then handles. Fields that could be
/// read as a formula by a spreadsheet are quoted and prefixed, as OWASP advises.
pub fn csv(answers: &[Answer]) -> String {
    let mut sorted: Vec<&Answer> = answers.iter().collect();
    sorted.sort_by(|a, b| a.round.cmp(&b.round).then_with(|| a.handle.cmp(&b.handle)));
    let mut out = String::from("handle,round,answer,right,seconds\n");
    for a in sorted {
        out.push_str(&format!(
            "{},{},{},{},{}.{:03}\n",
            field(&a.handle),
            a.round,
            field(&a.choice),
            if a.right { "right" } else { "wrong" },
            a.millis / 1000,
            a.millis % 1000
        ));
    }
    out
}

/// One CSV field: quoted when it holds a comma, quote or line break; a leading `=`, `+`, `-`
/// or `@` (a spreadsheet formula) neutralised with a `'`.
fn field(text: &str) -> String {
    let text = match text.starts_with(['=', '+', '-', '@']) {
        true => format!("'{text}"),
        false => text.to_owned(),
    };
    if text.contains([',', '"', '\n', '\r']) || text.starts_with('\'') {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

/// Why a handle cannot be one: 1 to 24 letters, digits, spaces, `-`, `_` or `.`, not all
/// spaces. (No `/`: a handle never reads as a page's place in the room.)
pub fn handle_refusal(handle: &str) -> Option<String> {
    let trimmed = handle.trim();
    if trimmed.is_empty() {
        return Some("a handle needs at least one letter or digit".to_owned());
    }
    if trimmed.chars().count() > 24 {
        return Some(format!("{trimmed:?} is longer than a handle may be (24 characters)"));
    }
    if let Some(bad) = trimmed
        .chars()
        .find(|c| !(c.is_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.')))
    {
        return Some(format!(
            "a handle holds letters, digits, spaces, '-', '_' and '.', not {bad:?}"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(round: usize, handle: &str, right: bool, millis: u64) -> Answer {
        Answer {
            round,
            handle: handle.into(),
            choice: if right { "bob" } else { "alice" }.into(),
            right,
            millis,
        }
    }

    #[test]
    fn the_leaderboard_counts_right_answers_then_time_and_lists_everyone_seated() {
        let answers = [
            answer(1, "ana", true, 4_000),
            answer(1, "ben", true, 2_000),
            answer(1, "cy", false, 1_000),
            answer(2, "ana", true, 3_000),
            answer(2, "ben", false, 9_000),
            answer(2, "cy", true, 5_000),
        ];
        let board = standings(&answers, ["dee", "ana"]);
        let lines: Vec<(&str, usize, usize, u64)> = board
            .iter()
            .map(|s| (s.handle.as_str(), s.right, s.answered, s.millis))
            .collect();
        assert_eq!(
            lines,
            [
                ("ana", 2, 2, 7_000),
                ("ben", 1, 2, 2_000),
                ("cy", 1, 2, 5_000),
                ("dee", 0, 0, 0),
            ]
        );
    }

    #[test]
    fn a_hidden_leaderboard_shows_each_participant_their_own_line_only() {
        let live = Live {
            leaderboard: standings(&[answer(1, "ana", true, 1), answer(1, "ben", false, 1)], []),
            shown: false,
            ..Live::default()
        };
        let handles = |live: &Live| live.leaderboard.iter().map(|s| s.handle.clone()).collect::<Vec<_>>();
        assert_eq!(handles(&live.for_page(Some("ben"), false)), ["ben"]);
        assert!(live.for_page(None, false).leaderboard.is_empty());
        assert_eq!(handles(&live.for_page(None, true)), ["ana", "ben"]);
        let shown = Live { shown: true, ..live };
        assert_eq!(handles(&shown.for_page(Some("ben"), false)), ["ana", "ben"]);
    }

    #[test]
    fn each_participant_is_told_their_own_pick_and_nobody_else_s() {
        let live = Live {
            round: Some(LiveRound {
                picked: vec![("ana".into(), "bob".into()), ("ben".into(), "alice".into())],
                ..LiveRound::default()
            }),
            ..Live::default()
        };
        let ben = live.for_page(Some("ben"), false);
        assert_eq!(ben.pick_of("ben"), Some("alice"));
        assert_eq!(ben.pick_of("ana"), None);
        assert_eq!(ben.round.map(|r| r.picked.len()), Some(1));
        assert_eq!(live.for_page(Some("cy"), false).pick_of("cy"), None);
        assert!(live.for_page(None, false).round.is_some_and(|r| r.picked.is_empty()));
        assert!(live.for_page(None, true).round.is_some_and(|r| r.picked.is_empty()));
    }

    #[test]
    fn results_are_a_csv_a_spreadsheet_reads_safely() {
        let mut answers = vec![answer(2, "ana", true, 12_345), answer(1, "zoe", false, 800)];
        answers.push(Answer {
            round: 1,
            handle: "=cmd".into(),
            choice: "a, \"b\"".into(),
            right: true,
            millis: 5,
        });
        assert_eq!(
            csv(&answers),
            "handle,round,answer,right,seconds\n\
             \"'=cmd\",1,\"a, \"\"b\"\"\",right,0.005\n\
             zoe,1,alice,wrong,0.800\n\
             ana,2,bob,right,12.345\n"
        );
    }

    #[test]
    fn handles_are_short_names_without_slashes() {
        for good in ["ana", "Ben K.", "émile_2", "x"] {
            assert_eq!(handle_refusal(good), None, "{good}");
        }
        for bad in ["", "   ", "r1/3", "a<b>", &"x".repeat(25)] {
            assert!(handle_refusal(bad).is_some(), "{bad:?}");
        }
    }
}
