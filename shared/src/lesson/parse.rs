//! A lesson file read line by line, every mistake named at its line; and written back.
//!
//! The file is Markdown a person can read as it is: front matter between `---` lines (the
//! title, what it is about, the leaderboard), then a `## heading` a round, each followed by
//! `key: value` lines. A line indented under `notes:`, `explain:`, `question:` or `about:` goes
//! on with it. Blank lines are for the eye.

use super::{Derived, Leaderboard, Lesson, LessonError, Question, Race, Round};

/// Reads a lesson, or says where it is wrong and how.
pub fn parse(text: &str) -> Result<Lesson, LessonError> {
    let mut reader = Reader::default();
    let mut lines = text.lines().zip(1u32..).peekable();
    // Front matter: the first line that is not blank opens it.
    while let Some((line, _)) = lines.peek() {
        if !line.trim().is_empty() {
            break;
        }
        lines.next();
    }
    match lines.next() {
        Some(("---", _)) => {}
        Some((_, n)) => {
            return Err(err(
                n,
                "a lesson starts with its front matter: a line `---`, then `title: …`",
            ));
        }
        None => return Err(err(1, "the lesson is empty")),
    }
    let mut closed = false;
    for (line, n) in lines.by_ref() {
        if line.trim_end() == "---" {
            closed = true;
            reader.last_line = n;
            break;
        }
        reader.front(line, n)?;
    }
    if !closed {
        return Err(err(
            reader.last_line,
            "the front matter is never closed: end it with a line `---`",
        ));
    }
    for (line, n) in lines {
        reader.body(line, n)?;
    }
    reader.finish()
}

fn err(line: u32, message: impl Into<String>) -> LessonError {
    LessonError {
        line,
        message: message.into(),
    }
}

/// What a round's lines said so far, each with the line that said it.
#[derive(Default)]
struct Said {
    scenario: Option<(String, u32)>,
    variant: Option<(String, u32)>,
    postgres: Option<(u32, u32)>,
    spec: Option<(String, u32)>,
    permutation: Option<(usize, u32)>,
    recording: Option<(String, u32)>,
    question: Option<(String, u32)>,
    choices: Vec<(String, String, u32)>,
    answer: Option<(Derived, u32)>,
    notes: Vec<String>,
    explain: Option<String>,
}

/// The key a line under it goes on with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    About,
    Notes,
    Explain,
    Question,
}

#[derive(Default)]
struct Reader {
    lesson: Lesson,
    title_at: Option<u32>,
    leaderboard_at: Option<u32>,
    round: Option<(Round, Said)>,
    open: Option<Open>,
    last_line: u32,
}

impl Reader {
    fn front(&mut self, line: &str, n: u32) -> Result<(), LessonError> {
        self.last_line = n;
        if self.goes_on(line) {
            return Ok(());
        }
        self.open = None;
        let Some((key, value)) = key_value(line, n)? else {
            return Ok(());
        };
        let once = |at: &mut Option<u32>| match at.replace(n) {
            Some(first) => Err(err(n, format!("{key} is said twice (first on line {first})"))),
            None => Ok(()),
        };
        match key {
            "title" => {
                once(&mut self.title_at)?;
                self.lesson.title = value.to_owned();
            }
            "about" => {
                self.lesson.about = Some(value.to_owned());
                self.open = Some(Open::About);
            }
            "leaderboard" => {
                once(&mut self.leaderboard_at)?;
                self.lesson.leaderboard = match value {
                    "shown" => Leaderboard::Shown,
                    "hidden" => Leaderboard::Hidden,
                    other => return Err(err(n, format!("the leaderboard is shown or hidden, not {other:?}"))),
                };
            }
            other => {
                return Err(err(
                    n,
                    format!("the front matter says title, about or leaderboard, not {other:?}"),
                ));
            }
        }
        Ok(())
    }

    /// Whether `line` is indented text that goes on with the key above it (then taken).
    fn goes_on(&mut self, line: &str) -> bool {
        if !line.starts_with([' ', '\t']) || line.trim().is_empty() {
            return false;
        }
        let more = line.trim();
        let said = self.round.as_mut().map(|(_, said)| said);
        let text: Option<&mut String> = match (self.open, said) {
            (Some(Open::About), _) => self.lesson.about.as_mut(),
            (Some(Open::Notes), Some(said)) => said.notes.last_mut(),
            (Some(Open::Explain), Some(said)) => said.explain.as_mut(),
            (Some(Open::Question), Some(said)) => said.question.as_mut().map(|(q, _)| q),
            _ => None,
        };
        match text {
            Some(text) => {
                text.push(' ');
                text.push_str(more);
                true
            }
            None => false,
        }
    }

    fn body(&mut self, line: &str, n: u32) -> Result<(), LessonError> {
        self.last_line = n;
        if self.goes_on(line) {
            return Ok(());
        }
        self.open = None;
        if let Some(title) = line.strip_prefix("## ") {
            self.close_round()?;
            let title = title.trim();
            if title.is_empty() {
                return Err(err(n, "a round's heading names it: `## Two managers overspend`"));
            }
            let round = Round {
                title: title.to_owned(),
                line: n,
                ..Round::default()
            };
            self.round = Some((round, Said::default()));
            return Ok(());
        }
        let Some((key, value)) = key_value(line, n)? else {
            return Ok(());
        };
        let Some((_, said)) = self.round.as_mut() else {
            return Err(err(n, "write each round under a `## heading` of its own"));
        };
        let open = said_line(said, key, value, n)?;
        self.open = open;
        Ok(())
    }

    fn close_round(&mut self) -> Result<(), LessonError> {
        if let Some((round, said)) = self.round.take() {
            self.lesson.rounds.push(round_of(round, said)?);
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Lesson, LessonError> {
        self.close_round()?;
        if self.lesson.title.is_empty() {
            return Err(err(1, "the front matter names the lesson: `title: …`"));
        }
        if self.lesson.rounds.is_empty() {
            return Err(err(self.last_line, "a lesson has at least one round (`## heading`)"));
        }
        Ok(self.lesson)
    }
}

/// A `key: value` line, or `choice ID: label`; `None` for a blank line.
fn key_value(line: &str, n: u32) -> Result<Option<(&str, &str)>, LessonError> {
    let line = line.trim();
    if line.is_empty() {
        return Ok(None);
    }
    let Some((key, value)) = line.split_once(':') else {
        return Err(err(n, format!("expected `key: value`, found {line:?}")));
    };
    let (key, value) = (key.trim(), value.trim());
    if value.is_empty() {
        return Err(err(n, format!("{key} says nothing")));
    }
    Ok(Some((key, value)))
}

/// Takes note of one line of a round; says which key a line under it would go on with.
fn said_line(said: &mut Said, key: &str, value: &str, n: u32) -> Result<Option<Open>, LessonError> {
    fn once<T>(slot: &mut Option<(T, u32)>, value: T, key: &str, n: u32) -> Result<(), LessonError> {
        match slot {
            Some((_, first)) => Err(err(
                n,
                format!("{key} is said twice in this round (first on line {first})"),
            )),
            None => {
                *slot = Some((value, n));
                Ok(())
            }
        }
    }
    let number = |what: &str| -> Result<u32, LessonError> {
        value
            .parse()
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| err(n, format!("{what} is a whole number, not {value:?}")))
    };
    match key {
        "scenario" => once(&mut said.scenario, value.to_owned(), key, n)?,
        "variant" => once(&mut said.variant, value.to_owned(), key, n)?,
        "postgres" => once(&mut said.postgres, number("postgres (a major version)")?, key, n)?,
        "spec" => once(&mut said.spec, value.trim_start_matches("/s/").to_owned(), key, n)?,
        "permutation" => once(&mut said.permutation, number("permutation")? as usize, key, n)?,
        "recording" => once(&mut said.recording, value.to_owned(), key, n)?,
        "question" => {
            once(&mut said.question, value.to_owned(), key, n)?;
            return Ok(Some(Open::Question));
        }
        "answer" => once(&mut said.answer, Derived::parse(value).map_err(|m| err(n, m))?, key, n)?,
        "notes" => {
            said.notes.push(value.to_owned());
            return Ok(Some(Open::Notes));
        }
        "explain" => {
            if said.explain.replace(value.to_owned()).is_some() {
                return Err(err(n, "explain is said twice in this round"));
            }
            return Ok(Some(Open::Explain));
        }
        _ => {
            let Some(id) = key.strip_prefix("choice ").map(str::trim) else {
                return Err(err(
                    n,
                    format!(
                        "a round says scenario, variant, postgres, spec, permutation, recording, question, \
                         choice ID, answer, notes or explain, not {key:?}"
                    ),
                ));
            };
            if id.is_empty() || !id.chars().all(|c| c.is_alphanumeric() || c == '-' || c == '_') {
                return Err(err(n, format!("a choice's id is a word (`alice`, `6000`), not {id:?}")));
            }
            if let Some((_, _, first)) = said.choices.iter().find(|(c, _, _)| c == id) {
                return Err(err(n, format!("choice {id} is said twice (first on line {first})")));
            }
            said.choices.push((id.to_owned(), value.to_owned(), n));
        }
    }
    Ok(None)
}

/// A round from what its lines said: exactly one race, and a question whole or not at all.
fn round_of(mut round: Round, said: Said) -> Result<Round, LessonError> {
    let at = round.line;
    let races = [said.scenario.is_some(), said.spec.is_some(), said.recording.is_some()];
    if races.iter().filter(|&&r| r).count() != 1 {
        return Err(err(
            at,
            format!(
                "\"{}\" plays one race: a scenario:, a spec: or a recording:",
                round.title
            ),
        ));
    }
    let misplaced = |what: Option<u32>, belongs: &str, key: &str| match what {
        Some(line) => Err(err(line, format!("{key} goes with a {belongs}"))),
        None => Ok(()),
    };
    round.race = if let Some((id, _)) = said.scenario {
        misplaced(said.permutation.map(|(_, l)| l), "spec", "permutation")?;
        let (variant, _) = said.variant.ok_or_else(|| {
            err(
                at,
                format!("\"{}\" names its scenario's variant: `variant: …`", round.title),
            )
        })?;
        Race::Scenario {
            id,
            variant,
            postgres: said.postgres.map(|(v, _)| v),
        }
    } else {
        misplaced(said.variant.map(|(_, l)| l), "scenario", "variant")?;
        misplaced(said.postgres.map(|(_, l)| l), "scenario", "postgres")?;
        match (said.spec, said.recording) {
            (Some((id, _)), _) => Race::Spec {
                id,
                permutation: said.permutation.map(|(p, _)| p),
            },
            (None, Some((src, line))) => {
                misplaced(said.permutation.map(|(_, l)| l), "spec", "permutation")?;
                // A kept lesson is read from racelab's pages: a file name alone would name
                // nothing there.
                if super::kept_run(&src).is_none() && !src.starts_with("https://") && !src.starts_with("http://") {
                    return Err(err(
                        line,
                        "a recording is named by its whole address (https://…/race.racelab.json) or as a run this racelab keeps (/runs/<id>)",
                    ));
                }
                Race::Recording { src }
            }
            (None, None) => unreachable!("one race, counted above"),
        }
    };
    round.question = match (said.question, said.answer) {
        (Some((text, line)), Some((answer, _))) => {
            if said.choices.len() < 2 {
                return Err(err(line, "a question offers at least two choices (`choice ID: label`)"));
            }
            Some(Question {
                text,
                choices: said.choices.into_iter().map(|(id, label, _)| (id, label)).collect(),
                answer,
            })
        }
        (Some((_, line)), None) => {
            return Err(err(
                line,
                "a question says how its answer is read off the run: `answer: …`",
            ));
        }
        (None, Some((_, line))) => return Err(err(line, "an answer goes with a question: `question: …`")),
        (None, None) => match said.choices.first() {
            Some((_, _, line)) => return Err(err(*line, "a choice goes with a question: `question: …`")),
            None => None,
        },
    };
    round.notes = said.notes;
    round.explain = said.explain;
    Ok(round)
}

/// The lesson as a file, in the order [`parse`] documents: what it reads back is `lesson`
/// (but for the rounds' line numbers).
pub fn print(lesson: &Lesson) -> String {
    let mut out = format!("---\ntitle: {}\n", lesson.title);
    if let Some(about) = &lesson.about {
        out.push_str(&format!("about: {about}\n"));
    }
    if lesson.leaderboard == Leaderboard::Hidden {
        out.push_str("leaderboard: hidden\n");
    }
    out.push_str("---\n");
    for round in &lesson.rounds {
        out.push_str(&format!("\n## {}\n", round.title));
        match &round.race {
            Race::Scenario { id, variant, postgres } => {
                out.push_str(&format!("scenario: {id}\nvariant: {variant}\n"));
                if let Some(major) = postgres {
                    out.push_str(&format!("postgres: {major}\n"));
                }
            }
            Race::Spec { id, permutation } => {
                out.push_str(&format!("spec: {id}\n"));
                if let Some(p) = permutation {
                    out.push_str(&format!("permutation: {p}\n"));
                }
            }
            Race::Recording { src } => out.push_str(&format!("recording: {src}\n")),
        }
        if let Some(q) = &round.question {
            out.push_str(&format!("question: {}\n", q.text));
            for (id, label) in &q.choices {
                out.push_str(&format!("choice {id}: {label}\n"));
            }
            out.push_str(&format!("answer: {}\n", q.answer));
        }
        for note in &round.notes {
            out.push_str(&format!("notes: {note}\n"));
        }
        if let Some(explain) = &round.explain {
            out.push_str(&format!("explain: {explain}\n"));
        }
    }
    out
}
