//! "Open as a spec": a finished run of plain-SQL sessions written back as a spec, the statements
//! each session sent, in the order they were sent, on the lab's own tables. The reader can then
//! change an isolation level, move a step, add a permutation, and play it. A run on MariaDB
//! becomes a spec on MariaDB (`# database: mariadb`), each session set up as the run's header
//! says it was (its level and InnoDB's snapshot switch: set when its session opened, not sent as
//! a step).

use crate::engine::mariadb::Setting;
use shared::spec::Database;
use shared::{Event, EventKind, Service, Value};
use std::fmt::Write as _;

/// Why a run cannot be written as a spec.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotASpec {
    #[error("this run's {0} is not an SQL session: only runs of plain SQL sessions can be opened as a spec")]
    NotSql(String),
    #[error("this run has {0} SQL session(s); a spec of a race needs two or more")]
    TooFew(usize),
    #[error("a statement holds a '}}', which ends an SQL block in the tester's format")]
    Brace,
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
    let database = database_of(events)?;
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
        if *service != database.service() {
            return Err(NotASpec::NotSql(actor.clone()));
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
    if database == Database::Mariadb {
        out.push_str("# database: mariadb\n");
    }
    out.push_str("# The statements each session of a racelab run sent, in the order it sent them.\n");
    out.push_str("# Change a level, move a step, add a permutation; then state what a correct system holds:\n");
    out.push_str("# check: SELECT true\n\n");
    let _ = writeln!(out, "setup\n{{\n{setup}\n}}");
    let _ = writeln!(out, "teardown {{ {} }}", teardown(database, setup));
    let settings = session_settings(events);
    for (name, steps) in &sessions {
        let _ = write!(out, "\nsession {}\n", shared::spec::quote_name(name));
        if database == Database::Mariadb
            && let Some(setting) = settings.iter().find(|(actor, _)| actor == name).map(|(_, s)| s)
        {
            let _ = writeln!(out, "setup {{ {} }}", setting.sql());
        }
        for (step, sql) in steps {
            let _ = writeln!(out, "step {step} {{ {} }}", sql.trim());
        }
    }
    let _ = writeln!(out, "\npermutation {}", order.join(" "));
    Ok(out)
}

/// The database a run's SQL steps went to (PostgreSQL when it sent none: the count says so).
fn database_of(events: &[Event]) -> Result<Database, NotASpec> {
    let first = events.iter().find_map(|e| match &e.kind {
        EventKind::Step { actor, service, .. } => Some((actor, *service)),
        _ => None,
    });
    match first {
        None | Some((_, Service::Postgres)) => Ok(Database::Postgresql),
        Some((_, Service::Mariadb)) => Ok(Database::Mariadb),
        Some((actor, _)) => Err(NotASpec::NotSql(actor.clone())),
    }
}

/// Each session's setting on MariaDB, as the run's header names it.
fn session_settings(events: &[Event]) -> Vec<(String, Setting)> {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::RunStarted { actors, .. } => Some(actors),
            _ => None,
        })
        .map(|actors| {
            actors
                .iter()
                .filter_map(|a| Some((a.name.clone(), Setting::from_detail(&a.detail)?)))
                .collect()
        })
        .unwrap_or_default()
}

/// What removes the tables `setup` made, after each permutation: on PostgreSQL every table of
/// the spec's schema; on MariaDB (no `DO` blocks) those its `CREATE TABLE`s name, their foreign
/// keys aside while they go.
fn teardown(database: Database, setup: &str) -> String {
    match database {
        Database::Postgresql => {
            "DO $$ DECLARE t text; BEGIN FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = current_schema() \
             LOOP EXECUTE format('DROP TABLE %I CASCADE', t); END LOOP; END $$;"
                .to_owned()
        }
        Database::Mariadb => {
            let tables: Vec<&str> = setup
                .split(|c: char| c.is_whitespace() || c == '(')
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .windows(3)
                .filter(|w| w[0].eq_ignore_ascii_case("CREATE") && w[1].eq_ignore_ascii_case("TABLE"))
                .map(|w| w[2])
                .collect();
            if tables.is_empty() {
                return String::new();
            }
            format!(
                "SET FOREIGN_KEY_CHECKS = 0; DROP TABLE IF EXISTS {}; SET FOREIGN_KEY_CHECKS = 1;",
                tables.join(", ")
            )
        }
    }
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
    fn a_run_on_mariadb_becomes_a_spec_on_mariadb_with_each_sessions_setting() {
        let on_mariadb = |seq: u64, actor: &str, text: &str| Event {
            seq,
            at_ms: seq,
            kind: EventKind::Step {
                actor: actor.into(),
                service: Service::Mariadb,
                text: text.into(),
                params: vec![],
                detail: None,
            },
        };
        let header = Event {
            seq: 0,
            at_ms: 0,
            kind: EventKind::RunStarted {
                run_id: "r".into(),
                scenario: "isolation/batch-job".into(),
                variant: "mariadb-batch-read-committed".into(),
                title: "t".into(),
                actors: vec![
                    shared::event::ActorInfo {
                        name: "alice".into(),
                        detail: "SERIALIZABLE".into(),
                    },
                    shared::event::ActorInfo {
                        name: "batch".into(),
                        detail: "REPEATABLE READ, innodb_snapshot_isolation=ON".into(),
                    },
                ],
                server: "MariaDB 10.11.19".into(),
            },
        };
        let events = vec![
            header,
            on_mariadb(1, "alice", "START TRANSACTION"),
            on_mariadb(2, "batch", "START TRANSACTION"),
            on_mariadb(3, "alice", "COMMIT"),
        ];
        let setup =
            "CREATE TABLE teams (id varchar(32) PRIMARY KEY);\nCREATE TABLE expenses (id int, team_id varchar(32));";
        let text = spec_of_run("Batch job", setup, &events).expect("a spec");
        let spec = shared::spec::parse(&text).expect("it parses");
        assert_eq!(spec.database, Database::Mariadb);
        assert_eq!(
            spec.sessions[0].setup.as_deref().map(str::trim),
            Some("SET SESSION innodb_snapshot_isolation = OFF; SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE;")
        );
        assert_eq!(
            spec.sessions[1].setup.as_deref().map(str::trim),
            Some(
                "SET SESSION innodb_snapshot_isolation = ON; SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ;"
            )
        );
        assert_eq!(
            spec.teardown.as_deref().map(str::trim),
            Some("SET FOREIGN_KEY_CHECKS = 0; DROP TABLE IF EXISTS teams, expenses; SET FOREIGN_KEY_CHECKS = 1;")
        );
        // PostgreSQL's and MariaDB's steps in one run are not one spec.
        let mut mixed = events.clone();
        mixed.push(step(4, "carol", "SELECT 1", vec![]));
        assert_eq!(spec_of_run("t", setup, &mixed), Err(NotASpec::NotSql("carol".into())));
    }

    #[test]
    fn ten_parameters_inline_in_their_places() {
        let params: Vec<Value> = (1..=10).map(Value::Int).collect();
        assert_eq!(inline("SELECT $1, $10", &params), "SELECT 1, 10");
    }
}
