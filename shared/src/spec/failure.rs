//! Where a run of a spec failed, in its text: the editor marks the line a failing setup (or a
//! step that overran) came from, as it marks a line the parser refused.

use super::Pos;
use crate::event::{Event, EventKind};

/// The place in `text` of the statement whose failure ended a run of it, and why, with its
/// SQLSTATE: the last error of the run's `events`, and the SQL its lane last sent (found in
/// `text` as written; where the same SQL is written twice, the first). `None` when the run
/// holds no error, or its SQL is not in `text` (another text's run).
pub fn failed_at(text: &str, events: &[Event]) -> Option<(Pos, String)> {
    let (at, actor, code, message) = events.iter().enumerate().rev().find_map(|(i, e)| match &e.kind {
        EventKind::Error {
            actor, code, message, ..
        } => Some((i, actor, code, message)),
        _ => None,
    })?;
    let sql = events[..at].iter().rev().find_map(|e| match &e.kind {
        EventKind::Step { actor: by, text, .. } if by == actor => Some(text.trim()),
        _ => None,
    })?;
    let offset = text.find(sql).filter(|_| !sql.is_empty())?;
    let why = match code {
        Some(code) => format!("this failed when it ran (SQLSTATE {code}): {message}"),
        None => format!("this failed when it ran: {message}"),
    };
    Some((position(text, offset), why))
}

/// The line and column (1-based, columns counted in characters) of byte `offset` of `text`.
fn position(text: &str, offset: usize) -> Pos {
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Pos {
        line: u32::try_from(line).unwrap_or(u32::MAX),
        column: u32::try_from(column).unwrap_or(u32::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorKind, Service};

    const SPEC: &str = "# A setup that cannot run\nsetup\n{\n  CREATE TABLE t (k int);\n  SELECT * FROM nope;\n}\nsession s\nstep a { SELECT 1; }\n";

    fn event(seq: u64, kind: EventKind) -> Event {
        Event { seq, at_ms: 0, kind }
    }

    fn step(actor: &str, text: &str) -> EventKind {
        EventKind::Step {
            actor: actor.into(),
            service: Service::Postgres,
            text: text.into(),
            params: vec![],
            detail: None,
        }
    }

    fn error(actor: &str, code: Option<&str>) -> EventKind {
        EventKind::Error {
            actor: actor.into(),
            kind: ErrorKind::Database,
            code: code.map(str::to_owned),
            message: "ERROR:  relation \"nope\" does not exist".into(),
        }
    }

    #[test]
    fn a_failed_setup_is_found_where_its_sql_begins_with_its_sqlstate() {
        let setup = "CREATE TABLE t (k int);\n  SELECT * FROM nope;";
        let events = [
            event(0, step("s", "SELECT 1;")),
            event(1, step("tester", setup)),
            event(2, error("tester", Some("42P01"))),
        ];
        let (at, why) = failed_at(SPEC, &events).expect("found");
        assert_eq!((at.line, at.column), (4, 3));
        assert_eq!(
            why,
            "this failed when it ran (SQLSTATE 42P01): ERROR:  relation \"nope\" does not exist"
        );
    }

    #[test]
    fn a_failure_without_sqlstate_or_sql_in_the_text_or_an_error_is_told_so_or_not_at_all() {
        let lost = [event(0, step("s", "SELECT 1;")), event(1, error("s", None))];
        let (at, why) = failed_at(SPEC, &lost).expect("found");
        assert_eq!((at.line, at.column), (8, 10));
        assert!(why.starts_with("this failed when it ran: ERROR"), "{why}");
        let elsewhere = [event(0, step("s", "SELECT 2;")), event(1, error("s", Some("57014")))];
        assert_eq!(failed_at(SPEC, &elsewhere), None, "another text's SQL");
        assert_eq!(failed_at(SPEC, &[event(0, step("s", "SELECT 1;"))]), None, "no error");
        let other_lane = [event(0, step("s", "SELECT 1;")), event(1, error("t", Some("42P01")))];
        assert_eq!(failed_at(SPEC, &other_lane), None, "the error's own lane sent nothing");
    }
}
