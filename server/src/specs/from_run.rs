//! "Open as a spec": a finished run of plain-SQL sessions written back as a spec, the statements
//! each session sent, in the order they were sent, on the lab's own tables. The reader can then
//! change an isolation level, move a step, add a permutation, and play it.

use shared::{Event, EventKind, Service, Value};
use std::fmt::Write as _;

/// Why a run cannot be written as a spec.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotASpec {
    #[error("this run's {0} is not a PostgreSQL session: only runs of plain SQL sessions can be opened as a spec")]
    NotSql(String),
    #[error("this run has {0} PostgreSQL session(s); a spec of a race needs two or more")]
    TooFew(usize),
    #[error("a statement holds a '}}', which ends an SQL block in the tester's format")]
    Brace,
    #[error(
        "this run played on MariaDB: opening it as a spec, and the proof of why it happened (its statements played again as a spec), are PostgreSQL's only for now"
    )]
    OnMariadb,
}

/// A parameter written into its statement as a literal.
fn literal(value: &Value) -> String {
    match value {
        Value::Null => "NULL".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(x) => shared::float::display(*x),
        Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
    }
}

/// `sql` with `$1`, `$2`, … replaced by their values, highest number first (so `$1` does not
/// eat the start of `$10`).
fn inline(sql: &str, params: &[Value]) -> String {
    let mut out = sql.to_owned();
    for (i, value) in params.iter().enumerate().rev() {
        out = out.replace(&format!("${}", i + 1), &literal(value));
    }
    out
}

/// A session's name as a step name's start: letters, digits and `_`.
fn stem(name: &str) -> String {
    let stem: String = name
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '_' })
        .collect();
    if stem.starts_with(|c: char| c.is_ascii_digit()) {
        format!("s{stem}")
    } else {
        stem
    }
}

/// The spec of a run titled `title` that set up its tables with `setup` and emitted `events`.
pub fn spec_of_run(title: &str, setup: &str, events: &[Event]) -> Result<String, NotASpec> {
    let mut sessions: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut order: Vec<String> = Vec::new();
    for event in events {
        let EventKind::Step {
            actor,
            service,
            text,
            params,
            ..
        } = &event.kind
        else {
            continue;
        };
        match service {
            Service::Postgres => {}
            Service::Mariadb => return Err(NotASpec::OnMariadb),
            _ => return Err(NotASpec::NotSql(actor.clone())),
        }
        let sql = inline(text, params);
        if sql.contains('}') {
            return Err(NotASpec::Brace);
        }
        let at = match sessions.iter().position(|(name, _)| name == actor) {
            Some(at) => at,
            None => {
                sessions.push((actor.clone(), Vec::new()));
                sessions.len() - 1
            }
        };
        let name = format!("{}{}", stem(actor), sessions[at].1.len() + 1);
        sessions[at].1.push((name.clone(), sql));
        order.push(name);
    }
    if sessions.len() < 2 {
        return Err(NotASpec::TooFew(sessions.len()));
    }
    let setup = setup.trim();
    if setup.contains('}') {
        return Err(NotASpec::Brace);
    }
    let mut out = String::new();
    let _ = writeln!(out, "# {title}");
    out.push_str("# The statements each session of a racelab run sent, in the order it sent them.\n");
    out.push_str("# Change a level, move a step, add a permutation; then state what a correct system holds:\n");
    out.push_str("# check: SELECT true\n\n");
    let _ = writeln!(out, "setup\n{{\n{setup}\n}}");
    out.push_str(
        "teardown { DO $$ DECLARE t text; BEGIN FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = current_schema() \
         LOOP EXECUTE format('DROP TABLE %I CASCADE', t); END LOOP; END $$; }\n",
    );
    for (name, steps) in &sessions {
        let _ = write!(out, "\nsession {}\n", shared::spec::quote_name(name));
        for (step, sql) in steps {
            let _ = writeln!(out, "step {step} {{ {} }}", sql.trim());
        }
    }
    let _ = writeln!(out, "\npermutation {}", order.join(" "));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(seq: u64, actor: &str, text: &str, params: Vec<Value>) -> Event {
        Event {
            seq,
            at_ms: seq,
            kind: EventKind::Step {
                actor: actor.into(),
                service: Service::Postgres,
                text: text.into(),
                params,
                detail: None,
            },
        }
    }

    #[test]
    fn a_run_becomes_the_spec_of_what_it_sent() {
        let events = vec![
            step(1, "alice", "BEGIN ISOLATION LEVEL REPEATABLE READ", vec![]),
            step(
                2,
                "alice",
                "SELECT sum(amount) FROM expenses WHERE team_id = $1",
                vec!["design".into()],
            ),
            step(3, "bob", "BEGIN ISOLATION LEVEL REPEATABLE READ", vec![]),
            step(
                4,
                "bob",
                "INSERT INTO expenses (team_id, amount, approved_by) VALUES ($1, $2, $3)",
                vec!["design".into(), Value::Int(3000), "bob's".into()],
            ),
            step(5, "alice", "COMMIT", vec![]),
        ];
        let text = spec_of_run(
            "Write skew, repeatable read",
            "CREATE TABLE expenses (amount int);",
            &events,
        )
        .expect("a spec");
        let spec = shared::spec::parse(&text).expect("it parses");
        assert_eq!(spec.validate(), Ok(()));
        assert_eq!(spec.sessions.len(), 2);
        assert_eq!(
            spec.sessions[1].steps[1].sql,
            "INSERT INTO expenses (team_id, amount, approved_by) VALUES ('design', 3000, 'bob''s')"
        );
        let order: Vec<&str> = spec.permutations[0].steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(order, ["alice1", "alice2", "bob1", "bob2", "alice3"]);
        assert_eq!(spec.setup, vec!["\nCREATE TABLE expenses (amount int);\n"]);
        assert_eq!(
            shared::spec::title(&text).as_deref(),
            Some("Write skew, repeatable read")
        );
    }

    #[test]
    fn only_runs_of_two_or_more_sql_sessions_are_specs() {
        let one = vec![step(1, "alice", "SELECT 1", vec![])];
        assert_eq!(spec_of_run("t", "", &one), Err(NotASpec::TooFew(1)));
        let mut redis = one.clone();
        redis.push(Event {
            seq: 2,
            at_ms: 2,
            kind: EventKind::Step {
                actor: "a".into(),
                service: Service::Redis,
                text: "SET k v".into(),
                params: vec![],
                detail: None,
            },
        });
        assert_eq!(spec_of_run("t", "", &redis), Err(NotASpec::NotSql("a".into())));
        let braces = vec![step(1, "a", "SELECT '}'", vec![]), step(2, "b", "SELECT 1", vec![])];
        assert_eq!(spec_of_run("t", "", &braces), Err(NotASpec::Brace));
    }

    #[test]
    fn ten_parameters_inline_in_their_places() {
        let params: Vec<Value> = (1..=10).map(Value::Int).collect();
        assert_eq!(inline("SELECT $1, $10", &params), "SELECT 1, 10");
    }
}
