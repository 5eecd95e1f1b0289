//! Chapters: steps of a recorded run an author marks, each with a caption, where the player
//! stops and asks the reader to predict what the step will do before showing it (asciinema's
//! markers, turned into questions).
//!
//! The author marks them on the finished run's page; the download asks for them
//! (`?chapter=12:Will bob's commit go through?`), and racelab keeps those that name a step of the
//! run ([`kept`]). The player pauses at each, in order ([`Pauses`]): the reader cannot step or
//! drag past a chapter until they have said they are ready to see it.

use crate::event::{Event, EventKind};
use serde::{Deserialize, Serialize};

/// How many chapters a recording keeps at most: a stop every few steps of the longest run.
pub const AT_MOST: usize = 20;
/// How long a caption may be, in characters: a question, not an essay.
pub const CAPTION_AT_MOST: usize = 280;

/// A step to pause at, before it plays.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chapter {
    /// The `seq` of the step's event.
    pub at: u64,
    /// What the author asks or says there, as plain text.
    pub caption: String,
}

/// Why the chapters asked for cannot be kept.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChapterError {
    #[error("a chapter is `SEQ:caption` (the step's number, a colon, its caption), not {0:?}")]
    Malformed(String),
    #[error("event {0} is not a step of this run: a chapter pauses before a step")]
    NotAStep(u64),
    #[error("the chapter at step {0} has no caption: say what the reader should predict there")]
    NoCaption(u64),
    #[error("the chapter at step {at} has a caption of {chars} characters; at most {CAPTION_AT_MOST}")]
    TooLong { at: u64, chars: usize },
    #[error("{0} chapters: a recording keeps at most {AT_MOST}")]
    TooMany(usize),
    #[error("two chapters at step {0}")]
    Twice(u64),
}

/// The chapters `asked` for (each `SEQ:caption`) on a run of `events`: each at one of its steps,
/// captioned, in the run's order; or the first reason one cannot be.
pub fn kept(asked: &[String], events: &[Event]) -> Result<Vec<Chapter>, ChapterError> {
    if asked.len() > AT_MOST {
        return Err(ChapterError::TooMany(asked.len()));
    }
    let mut chapters = Vec::with_capacity(asked.len());
    for one in asked {
        let (at, caption) = one
            .split_once(':')
            .and_then(|(at, caption)| Some((seq(at)?, caption.trim())))
            .ok_or_else(|| ChapterError::Malformed(one.chars().take(40).collect()))?;
        if step_index(events, at).is_none() {
            return Err(ChapterError::NotAStep(at));
        }
        let chars = caption.chars().count();
        if chars == 0 {
            return Err(ChapterError::NoCaption(at));
        }
        if chars > CAPTION_AT_MOST {
            return Err(ChapterError::TooLong { at, chars });
        }
        if chapters.iter().any(|c: &Chapter| c.at == at) {
            return Err(ChapterError::Twice(at));
        }
        chapters.push(Chapter {
            at,
            caption: caption.to_owned(),
        });
    }
    chapters.sort_by_key(|c| c.at);
    Ok(chapters)
}

/// The query a download asks for `marks` with (each a step's `seq` and its caption, as the author
/// typed it): `chapter=12%3AWill%20it%3F&chapter=…`, in the run's order; a mark with no caption
/// yet is left out. Empty for none.
pub fn query(marks: &[(u64, String)]) -> String {
    let mut marks: Vec<&(u64, String)> = marks.iter().filter(|(_, caption)| !caption.trim().is_empty()).collect();
    marks.sort_by_key(|(at, _)| *at);
    marks
        .iter()
        .map(|(at, caption)| format!("chapter={}", crate::embed::encode(&format!("{at}:{}", caption.trim()))))
        .collect::<Vec<_>>()
        .join("&")
}

/// Where in `events` the step with `seq` is; none if no step has it.
fn step_index(events: &[Event], seq: u64) -> Option<usize> {
    events
        .iter()
        .position(|e| e.seq == seq && matches!(e.kind, EventKind::Step { .. }))
}

/// A step's number as an author writes it: digits only (no sign, no spaces inside).
fn seq(text: &str) -> Option<u64> {
    let text = text.trim();
    text.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| text.parse().ok())
        .flatten()
}

/// Where a player stops: for each chapter whose step is in the run, the moment before its step
/// plays (how many events have happened by then) and its caption, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pauses(pub Vec<(usize, String)>);

impl Pauses {
    /// The pauses of `chapters` on the run of `events` (a chapter whose step is not among them,
    /// in a file edited by hand, is left out).
    pub fn of(chapters: &[Chapter], events: &[Event]) -> Pauses {
        let mut pauses: Vec<(usize, String)> = chapters
            .iter()
            .filter_map(|c| {
                let at = step_index(events, c.at)?;
                Some((at, c.caption.clone()))
            })
            .collect();
        pauses.sort_by_key(|(at, _)| *at);
        pauses.dedup_by_key(|(at, _)| *at);
        Pauses(pauses)
    }

    /// The furthest moment a reader who has seen past `answered` chapters may go to: the next
    /// chapter's pause, else the end (`total`).
    pub fn furthest(&self, answered: usize, total: usize) -> usize {
        self.0.get(answered).map_or(total, |(at, _)| (*at).min(total))
    }

    /// The chapter waiting at moment `at` for a reader who has seen past `answered`: its number
    /// (from 1) and caption.
    pub fn waiting_at(&self, at: usize, answered: usize) -> Option<(usize, &str)> {
        self.0
            .get(answered)
            .filter(|(pause, _)| *pause == at)
            .map(|(_, caption)| (answered + 1, caption.as_str()))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> Vec<Event> {
        let step = |seq, actor: &str| Event {
            seq,
            at_ms: seq * 10,
            kind: EventKind::Step {
                actor: actor.into(),
                service: crate::catalog::Service::Postgres,
                text: "COMMIT".into(),
                params: Vec::new(),
                detail: None,
            },
        };
        let commit = |seq| Event {
            seq,
            at_ms: seq * 10,
            kind: EventKind::Commit { actor: "alice".into() },
        };
        vec![step(1, "alice"), commit(2), step(3, "bob"), commit(4), step(5, "bob")]
    }

    fn asked(of: &[&str]) -> Vec<String> {
        of.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn chapters_at_steps_are_kept_in_the_runs_order_with_their_captions_trimmed() {
        let kept = kept(&asked(&["5: And now?", "3:Will bob's commit go through?"]), &run());
        assert_eq!(
            kept,
            Ok(vec![
                Chapter {
                    at: 3,
                    caption: "Will bob's commit go through?".into()
                },
                Chapter {
                    at: 5,
                    caption: "And now?".into()
                },
            ])
        );
        assert_eq!(super::kept(&[], &run()), Ok(Vec::new()));
    }

    #[test]
    fn a_chapter_that_is_not_at_a_step_or_not_captioned_says_why() {
        let events = run();
        assert_eq!(kept(&asked(&["2:a commit"]), &events), Err(ChapterError::NotAStep(2)));
        assert_eq!(
            kept(&asked(&["9:past the end"]), &events),
            Err(ChapterError::NotAStep(9))
        );
        assert_eq!(kept(&asked(&["3:  "]), &events), Err(ChapterError::NoCaption(3)));
        assert!(matches!(
            kept(&asked(&["three:x"]), &events),
            Err(ChapterError::Malformed(_))
        ));
        for malformed in ["no colon", "+3:signed", ":none"] {
            assert!(
                matches!(kept(&asked(&[malformed]), &events), Err(ChapterError::Malformed(_))),
                "{malformed}"
            );
        }
        assert_eq!(kept(&asked(&["3:a", "3:b"]), &events), Err(ChapterError::Twice(3)));
        let long = format!("3:{}", "é".repeat(CAPTION_AT_MOST + 1));
        assert_eq!(
            kept(&[long], &events),
            Err(ChapterError::TooLong {
                at: 3,
                chars: CAPTION_AT_MOST + 1
            })
        );
        let at_most = format!("3:{}", "é".repeat(CAPTION_AT_MOST));
        assert!(kept(&[at_most], &events).is_ok(), "characters, not bytes");
        let many: Vec<String> = (0..=AT_MOST).map(|i| format!("{i}:x")).collect();
        assert_eq!(kept(&many, &events), Err(ChapterError::TooMany(AT_MOST + 1)));
    }

    #[test]
    fn marks_become_the_downloads_query_in_the_runs_order_uncaptioned_ones_left_out() {
        let marks = [
            (5, " Bob & alice? ".to_owned()),
            (3, "Will it?".to_owned()),
            (4, "  ".to_owned()),
        ];
        assert_eq!(
            query(&marks),
            "chapter=3%3AWill%20it%3F&chapter=5%3ABob%20%26%20alice%3F"
        );
        assert_eq!(query(&[]), "");
    }

    #[test]
    fn a_player_stops_before_each_chapters_step_until_the_reader_has_seen_past_it() {
        let events = run();
        let chapters = [
            Chapter {
                at: 5,
                caption: "second".into(),
            },
            Chapter {
                at: 3,
                caption: "first".into(),
            },
            // Edited by hand: not a step of this run.
            Chapter {
                at: 4,
                caption: "dropped".into(),
            },
        ];
        let pauses = Pauses::of(&chapters, &events);
        assert_eq!(pauses.0, [(2, "first".to_owned()), (4, "second".to_owned())]);
        let total = events.len();
        assert_eq!(pauses.furthest(0, total), 2, "before bob's first step");
        assert_eq!(pauses.waiting_at(2, 0), Some((1, "first")));
        assert_eq!(pauses.waiting_at(1, 0), None, "not there yet");
        assert_eq!(pauses.furthest(1, total), 4);
        assert_eq!(pauses.waiting_at(2, 1), None, "seen past it");
        assert_eq!(pauses.waiting_at(4, 1), Some((2, "second")));
        assert_eq!(pauses.furthest(2, total), total, "every chapter seen: to the end");
        assert_eq!(Pauses::of(&[], &events).furthest(0, total), total);
    }
}
