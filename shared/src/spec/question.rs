//! Predict, then run, for a reader's spec: a question its author asks in comment lines the tester
//! ignores, its choices, and the answer for each permutation.
//!
//! ```text
//! # question: What happens to bob's $3,000?
//! # choice overspent: both are spent: $6,000 on a $5,000 budget
//! # choice refused: bob sees alice's and spends nothing
//! # answer 1 overspent: both checked before either spent; each saw $0
//! # answer 2 refused: bob checked after alice committed
//! ```
//!
//! An answer names a permutation by its number (the first `permutation` line is 1), a choice by
//! its id, then why, in a sentence the page reveals after the run.

use super::Pos;

/// The author's question.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Question {
    pub text: String,
    /// `(id, label)`.
    pub choices: Vec<(String, String)>,
    pub answers: Vec<Answer>,
    pub at: Pos,
}

/// What happens in one permutation, and why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    /// 1-based, as the page numbers permutations.
    pub permutation: usize,
    pub choice: String,
    pub why: String,
    pub at: Pos,
}

/// One question line, as the lexer found it.
pub(super) enum Line {
    Question(String),
    Choice {
        id: String,
        label: String,
    },
    Answer {
        permutation: usize,
        choice: String,
        why: String,
    },
}

fn id_like(word: &str) -> bool {
    !word.is_empty() && word.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}

/// Reads a comment's body (after `#`) as a question line, if it is one: `Ok(None)` for any
/// other comment, `Err` for one that starts like a question line but is not well formed.
pub(super) fn line(body: &str) -> Result<Option<Line>, String> {
    if let Some(text) = body.strip_prefix("question:") {
        let text = text.trim();
        if text.is_empty() {
            return Err("a question needs its words: # question: <what will happen?>".into());
        }
        return Ok(Some(Line::Question(text.to_owned())));
    }
    if let Some(rest) = body.strip_prefix("choice ") {
        let Some((id, label)) = rest.split_once(':') else {
            return Err("a choice is # choice <id>: <what the reader may expect>".into());
        };
        let (id, label) = (id.trim(), label.trim());
        if !id_like(id) || label.is_empty() {
            return Err(
                "a choice is # choice <id>: <what the reader may expect>, its id letters, digits, - and _".into(),
            );
        }
        return Ok(Some(Line::Choice {
            id: id.to_owned(),
            label: label.to_owned(),
        }));
    }
    if let Some(rest) = body.strip_prefix("answer ") {
        let malformed = || "an answer is # answer <permutation number> <choice id>: <why>".to_owned();
        let (head, why) = rest.split_once(':').ok_or_else(malformed)?;
        let mut words = head.split_whitespace();
        let permutation = words.next().and_then(|n| n.parse::<usize>().ok()).filter(|n| *n > 0);
        let choice = words.next().filter(|c| id_like(c));
        let (Some(permutation), Some(choice), None) = (permutation, choice, words.next()) else {
            return Err(malformed());
        };
        if why.trim().is_empty() {
            return Err(malformed());
        }
        return Ok(Some(Line::Answer {
            permutation,
            choice: choice.to_owned(),
            why: why.trim().to_owned(),
        }));
    }
    Ok(None)
}

/// Puts the question lines together, in order: a choice or answer before any question, a
/// second question, an answer naming no choice, a second answer for one permutation: each an
/// error at its line.
pub(super) fn assemble(lines: Vec<(Line, Pos)>) -> Result<Option<Question>, (Pos, String)> {
    let mut question: Option<Question> = None;
    for (line, at) in lines {
        match line {
            Line::Question(text) => {
                if question.is_some() {
                    return Err((at, "a spec asks one question".into()));
                }
                question = Some(Question {
                    text,
                    at,
                    ..Question::default()
                });
            }
            Line::Choice { id, label } => {
                let q = question
                    .as_mut()
                    .ok_or((at, "a choice comes after its # question: line".to_owned()))?;
                if q.choices.iter().any(|(c, _)| *c == id) {
                    return Err((at, format!("the choice {id} is there twice")));
                }
                q.choices.push((id, label));
            }
            Line::Answer {
                permutation,
                choice,
                why,
            } => {
                let q = question
                    .as_mut()
                    .ok_or((at, "an answer comes after its # question: line".to_owned()))?;
                if !q.choices.iter().any(|(c, _)| *c == choice) {
                    return Err((
                        at,
                        format!("the answer names {choice}, which is not one of the choices"),
                    ));
                }
                if q.answers.iter().any(|a| a.permutation == permutation) {
                    return Err((at, format!("permutation {permutation} has two answers")));
                }
                q.answers.push(Answer {
                    permutation,
                    choice,
                    why,
                    at,
                });
            }
        }
    }
    if let Some(q) = &question
        && q.choices.len() < 2
    {
        return Err((
            q.at,
            "a question needs at least two choices: # choice <id>: <label>".into(),
        ));
    }
    Ok(question)
}

#[cfg(test)]
mod tests {
    use super::super::{parse, print};

    const ASKED: &str = "# question: What happens to bob's $3,000?\n\
        # choice overspent: both are spent\n\
        # choice refused: bob spends nothing\n\
        # answer 1 overspent: both checked before either spent\n\
        # answer 2 refused: bob checked after alice committed\n\
        session a step a1 { SELECT 1; }\nsession b step b1 { SELECT 2; }\npermutation a1 b1\npermutation b1 a1\n";

    #[test]
    fn a_question_its_choices_and_answers_are_read_and_printed_back() {
        let spec = parse(ASKED).expect("it parses");
        let q = spec.question.clone().expect("a question");
        assert_eq!(q.text, "What happens to bob's $3,000?");
        assert_eq!(q.choices[1], ("refused".to_owned(), "bob spends nothing".to_owned()));
        assert_eq!(
            (q.answers[0].permutation, q.answers[0].choice.as_str()),
            (1, "overspent")
        );
        assert_eq!(spec.validate(), Ok(()));
        let again = parse(&print(&spec)).expect("printed, it parses");
        assert_eq!(again.question.map(|q| (q.text, q.choices)), Some((q.text, q.choices)));
    }

    #[test]
    fn a_malformed_question_is_an_error_at_its_line() {
        let error =
            parse("# choice a: x\n# question: q?\n# choice b: y\n# choice c: z\nsession s step a { }").unwrap_err();
        assert_eq!(
            (error.at.line, error.message.as_str()),
            (1, "a choice comes after its # question: line")
        );
        // Without a question, lines like these are the author's own comments, as to the tester.
        let plain = parse("# answer is below\n# choice of level: RR\nsession s step a { }").expect("comments");
        assert_eq!(plain.question, None);
        let error =
            parse("# question: q?\n# choice a: x\n# choice b: y\n# answer 1 c: no\nsession s step a { }").unwrap_err();
        assert_eq!(error.at.line, 4);
        assert!(error.message.contains("not one of the choices"), "{error}");
        let error = parse("# question: q?\n# choice a: x\nsession s step a { }").unwrap_err();
        assert!(error.message.contains("at least two choices"), "{error}");
        let error = parse("# question: q?\n# choice a: x\n# choice b: y\n# answer one a: no\nsession s step a { }")
            .unwrap_err();
        assert!(error.message.starts_with("an answer is"), "{error}");
        // An answer for a permutation the spec does not have.
        let spec = parse("# question: q?\n# choice a: x\n# choice b: y\n# answer 3 a: no\nsession s step a { }")
            .expect("parses");
        let invalid = spec.validate().unwrap_err();
        assert_eq!(invalid.at().line, 4);
        assert_eq!(
            invalid.to_string(),
            "the answer is for permutation 3, and the spec has 1"
        );
    }
}
