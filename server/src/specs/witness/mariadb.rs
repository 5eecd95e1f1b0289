//! The witness on MariaDB: what a spec's transactions wrote and read there, for the same proof.
//!
//! MariaDB gives racelab less to see than PostgreSQL, and the proof says so:
//! - **Writes.** A row trigger on each keyed table (put on by the run's own user once the setup
//!   is done) appends each row it writes, before and after, to a user variable of the writer's
//!   session ([`Sessions::variable`], named at random per play). A variable, not a table: a
//!   table write would take locks, and InnoDB weighs a transaction that wrote to a
//!   non-transactional table heavier when it picks a deadlock's victim; a variable changes
//!   nothing InnoDB decides. It survives a rollback, so a cancelled transaction's writes are
//!   seen too. Read after each step, in the session, with `@@in_transaction`: one query that
//!   names no table, so it takes no snapshot and no lock.
//! - **Transactions.** MariaDB names none a session can ask for cheaply; racelab tells them
//!   apart by `@@in_transaction` before and after each step, and how each ended by its last
//!   step (a `ROLLBACK`, or an error after which no transaction is open: 1213 and 1020 undo the
//!   transaction, 1205 only the statement, whose writes are then left out).
//! - **Reads.** MariaDB shows no snapshot. A read saw the rows committed before its own moment
//!   (READ COMMITTED, a locking read), or before an earlier moment of its transaction (the
//!   first consistent read at REPEATABLE READ), or every row written so far (READ
//!   UNCOMMITTED). racelab asks each candidate's rows again, in temporary tables that shadow
//!   the real ones, and keeps the candidate that gives the read's own answer; when none does,
//!   or two that do disagree on what it saw, the read is left out and the proof says so.
//!
//! A spec can see the triggers (its user holds `TRIGGER` on its own database): one that drops
//! them loses its proof (the triggers are counted again at the end), one that writes the
//! variable can make its own proof lie, and only its own.

use super::super::mariadb::{literal, quote};
use super::super::session::{Answer, SpecSession};
use super::super::table::ResultSet;
use super::{
    Asked, EVALUATION_BUDGET, Keyed, Known, OnMariadb, Seen, View, Witness, Written, asked_key, first_rows,
    keyed_table, object, object_at, single_query, to_ask, what_it_saw,
};
use rand::Rng;
use serde_json::{Map, Value};
use shared::proof::{End, History, Read, Version};
use std::collections::HashMap;
use std::time::Instant;

/// What every proof on MariaDB says it could not see, as its last line.
pub const CANNOT_SEE: &str = "(On MariaDB racelab sees no snapshot and no transaction id: each read is \
taken to have read from the view, among those InnoDB could have read from, whose rows give the read's own \
answer; a statement undone by an error is left out, and so are the rows an UPDATE or DELETE looked at \
and left as they were.)";

/// Whether a view shows a version another transaction (the second argument) wrote.
type Shows<'a> = Box<dyn Fn(&Version, usize) -> bool + Send + Sync + 'a>;

/// What racelab keeps of each session between steps, and the order steps completed in.
pub(super) struct Sessions {
    /// The user variable the triggers append to: `@racelab_witness_` and 16 random hex digits.
    pub variable: String,
    /// Whether each session had a transaction open after its last step.
    open: Vec<bool>,
    /// Each session's transactions so far: the current one's number.
    count: Vec<u64>,
    /// The moments (places in completion order) a read of each session's open transaction may
    /// have taken its snapshot at: its start, and each read so far.
    moments: Vec<Vec<usize>>,
    /// How many steps have completed.
    pub completed: usize,
}

/// What one step of a session did to its transaction, from `@@in_transaction` around it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Step {
    /// Its transaction, as the witness names it (`"1.2"`: session 1's second).
    pub began: String,
    /// Its place in the order steps completed.
    pub at: usize,
    /// A statement of its own (autocommit): no transaction was open before or after.
    pub alone: bool,
    /// The transaction ended with this step.
    pub ended: bool,
    /// It failed, and only the statement was undone: the transaction goes on.
    pub undone: bool,
    /// It began a transaction while one was open, which MariaDB commits first.
    pub committed_the_last: bool,
    /// The moments its reads may have read as of ([`Sessions::moments`]).
    pub moments: Vec<usize>,
}

impl Sessions {
    pub fn new(sessions: usize) -> Sessions {
        let random: u64 = rand::rng().random();
        Sessions {
            variable: format!("@racelab_witness_{random:016x}"),
            open: vec![false; sessions],
            count: vec![0; sessions],
            moments: vec![Vec::new(); sessions],
            completed: 0,
        }
    }

    /// What the session is asked after each step: the rows its triggers reported (then
    /// forgotten), and whether a transaction is open.
    pub fn probe(&self) -> String {
        format!("SELECT {v}, @@in_transaction; SET {v} = NULL", v = self.variable)
    }

    /// Takes note that `session`'s step `sql` completed, failed or not, leaving a transaction
    /// open or not (`open_after`); `reads`: it returned rows.
    pub fn step(&mut self, session: usize, sql: &str, (failed, reads): (bool, bool), open_after: bool) -> Option<Step> {
        let at = self.completed;
        self.completed += 1;
        let open_before = *self.open.get(session)?;
        self.open[session] = open_after;
        let begins = matches!(super::first_word(sql).as_str(), "begin" | "start");
        if !open_before || begins {
            self.count[session] += 1;
            self.moments[session] = vec![at];
        }
        let began = format!("{session}.{}", self.count[session]);
        let moments = &mut self.moments[session];
        if reads && !moments.contains(&at) {
            moments.push(at);
        }
        Some(Step {
            began,
            at,
            alone: !open_before && !open_after && !begins,
            ended: !open_after,
            undone: failed && open_after,
            committed_the_last: begins && open_before,
            moments: moments.clone(),
        })
    }
}

impl Witness {
    /// Starts watching a permutation on MariaDB whose setups are done: puts the triggers on the
    /// run's keyed tables (as the run's own user, on `control`) and reads the rows the setup
    /// left. `None` when there is nothing to witness or MariaDB refused.
    pub async fn on_mariadb(control: &mut SpecSession, sessions: usize) -> Option<Witness> {
        let listed = list(control).await?;
        if listed.is_empty() {
            return None;
        }
        let watching = Sessions::new(sessions);
        let answer = control.exec(&put_on(&listed, &watching.variable)).await;
        if let Some(failure) = &answer.failure {
            tracing::debug!("no witness on MariaDB: {}", failure.line());
            return None;
        }
        let initial = rows_now(&answer, &listed)?;
        let on_mariadb = OnMariadb {
            triggers: 3 * listed.len(),
            sessions: watching,
            completed_at: HashMap::new(),
        };
        let tables = listed.into_iter().map(|l| l.keyed).collect();
        Some(Witness::watching(String::new(), tables, initial, Some(on_mariadb)))
    }

    /// [`Witness::step_done`] on MariaDB: the session is asked what its triggers reported and
    /// whether a transaction is open ([`Sessions::probe`]).
    pub(super) async fn step_done_on_mariadb(
        &mut self,
        session: usize,
        step: usize,
        sql: &str,
        answer: &Answer,
        connection: &mut SpecSession,
    ) {
        let Some(on) = self.on_mariadb.as_mut() else { return };
        let probe = connection.exec(&on.sessions.probe()).await;
        let failed = answer.failure.is_some();
        let reads = answer.ends_with_rows && !failed;
        let done = probed(&probe).and_then(|(reports, open)| {
            let done = on.sessions.step(session, sql, (failed, reads), open)?;
            Some((reports, done))
        });
        // A session that cannot be asked, or a savepoint rolled back to (which undoes writes
        // racelab saw and cannot tell which): no proof from what is left.
        let savepoint = super::transaction_end(sql).is_none() && super::first_word(sql) == "rollback";
        let Some((reports, done)) = done.filter(|_| !savepoint) else {
            self.lost_count = true;
            return;
        };
        on.completed_at.insert((session, step), done.at);
        if !done.undone {
            let rows = reports.iter().filter_map(|r| written(session, step, &done.began, r));
            self.writes.extend(rows);
        }
        if done.committed_the_last {
            self.ends.push((session, step, true));
        }
        if done.ended {
            match &answer.failure {
                Some(failure) => self.failures.push((session, step, failure.code())),
                None => self
                    .ends
                    .push((session, step, super::transaction_end(sql) != Some(false))),
            }
        }
        if reads {
            self.reads.push(Seen {
                session,
                step,
                sql: sql.to_owned(),
                view: View::Moments {
                    moments: done.moments,
                    answer: answer.sets.clone(),
                },
                began: done.began,
                alone: done.alone,
            });
        }
    }

    /// Whether the triggers it put on are all still there (a spec may drop them).
    pub(super) async fn triggers_kept(&self, control: &mut SpecSession) -> bool {
        let Some(on) = &self.on_mariadb else { return true };
        let answer = control.exec(COUNT_TRIGGERS).await;
        let count = first_rows(&answer)
            .into_iter()
            .next()
            .and_then(|row| row.into_iter().next().flatten())
            .and_then(|n| n.parse::<usize>().ok());
        count == Some(on.triggers)
    }

    /// [`Witness::ask_again`] on MariaDB: `table` shadowed by a temporary table of its name,
    /// holding one version at a time.
    pub(super) async fn ask_again_on_mariadb(
        &self,
        control: &mut SpecSession,
        query: &str,
        (history, rows): (&History, &[Map<String, Value>]),
        started: Instant,
        asked: &mut Asked,
    ) -> Option<Vec<bool>> {
        let mut matter = vec![false; history.versions.len()];
        let bounded_query = bounded(query);
        for table in &self.tables {
            let versions = to_ask(query, &table.name, (history, rows), asked, &mut matter);
            if versions.is_empty() {
                continue;
            }
            let answered = async {
                if control.exec(&shadow(&table.name)).await.failure.is_some() {
                    return false;
                }
                let base = control.exec(&bounded_query).await;
                if base.failure.is_some() {
                    return false;
                }
                for &i in &versions {
                    let Some(one) = insert(&table.name, &[&rows[i]]) else {
                        continue;
                    };
                    let answer = control
                        .exec(&format!("{one}; {bounded_query}; DELETE FROM {}", quote(&table.name)))
                        .await;
                    if answer.failure.is_some() || started.elapsed() > EVALUATION_BUDGET {
                        return false;
                    }
                    matter[i] = !same_rows(&answer.sets, &base.sets);
                    asked.insert(asked_key(query, &table.name, &rows[i]), matter[i]);
                }
                true
            }
            .await;
            control.exec(&unshadow(&table.name)).await;
            if !answered {
                return None;
            }
        }
        Some(matter)
    }

    /// What `seen`, a read of transaction `reader`, saw on MariaDB, among the versions that
    /// `matter` to it: of every moment its snapshot may have been taken at (and, at READ
    /// UNCOMMITTED, every write so far), the views whose rows give the read's own answer asked
    /// again; `None` when none does, or those that do disagree on what it saw.
    pub(super) async fn read_on_mariadb(
        &self,
        control: &mut SpecSession,
        (seen, reader, matter): (&Seen, usize, &[bool]),
        known: &Known<'_>,
        started: Instant,
    ) -> Option<Read> {
        let (on, View::Moments { moments, answer }) = (self.on_mariadb.as_ref()?, &seen.view) else {
            return None;
        };
        let (history, rows, by_row, txns) = (known.history, known.rows, known.by_row, known.txns);
        let query = single_query(&seen.sql)?;
        let own = *moments.last()?;
        let at = |t: usize, step: Option<u64>| {
            let session = txns.get(t)?.session;
            on.completed_at.get(&(session, usize::try_from(step?).ok()?)).copied()
        };
        let committed_at = |t: usize| {
            let txn = &history.txns[t];
            (txn.end == End::Committed).then(|| at(t, txn.ended)).flatten()
        };
        let rolled_back_at = |t: usize| {
            let txn = &history.txns[t];
            matches!(txn.end, End::Aborted { .. })
                .then(|| at(t, txn.ended))
                .flatten()
        };
        // Each candidate: whether it shows a version another transaction wrote.
        let mut candidates: Vec<Shows<'_>> = moments
            .iter()
            .map(|&m| Box::new(move |_: &Version, by: usize| committed_at(by).is_some_and(|c| c < m)) as Box<_>)
            .collect();
        candidates.push(Box::new(move |v: &Version, by: usize| {
            at(by, v.step).is_some_and(|w| w < own) && rolled_back_at(by).is_none_or(|r| r > own)
        }));
        let mut shown: Vec<Read> = Vec::new();
        let mut tried: Vec<Vec<usize>> = Vec::new();
        for others in &candidates {
            let view = newest_visible(seen.step, reader, by_row, history, others.as_ref());
            if tried.contains(&view) {
                continue;
            }
            tried.push(view.clone());
            if started.elapsed() > EVALUATION_BUDGET {
                return None;
            }
            if !self.gives(control, query, &view, (history, rows), answer).await? {
                continue;
            }
            let read = what_it_saw(seen.step, (reader, matter), by_row, history, others.as_ref());
            if !shown.contains(&read) {
                shown.push(read);
            }
        }
        match shown.len() {
            1 => shown.pop(),
            _ => None,
        }
    }

    /// Whether the rows of `view` (versions, newest of each row) give `answer` to `query`,
    /// asked in temporary tables that shadow every witnessed table. `None`: it could not be
    /// asked.
    async fn gives(
        &self,
        control: &mut SpecSession,
        query: &str,
        view: &[usize],
        (history, rows): (&History, &[Map<String, Value>]),
        answer: &[ResultSet],
    ) -> Option<bool> {
        let mut sql: Vec<String> = Vec::new();
        for table in &self.tables {
            sql.push(shadow(&table.name));
            let of_table: Vec<&Map<String, Value>> = view
                .iter()
                .filter(|&&i| history.versions[i].row.table == table.name && history.versions[i].value.is_some())
                .map(|&i| &rows[i])
                .collect();
            sql.extend(insert(&table.name, &of_table));
        }
        sql.push(bounded(query));
        let asked = control.exec(&sql.join(";\n")).await;
        let unshadowed: Vec<String> = self.tables.iter().map(|t| unshadow(&t.name)).collect();
        control.exec(&unshadowed.join(";\n")).await;
        match asked.failure {
            Some(_) => None,
            None => Some(same_rows(&asked.sets, answer)),
        }
    }
}

/// Of each row, the newest version `reader`'s read at `step` may see: its own earlier writes,
/// the setup's, and another transaction's where `others` shows it.
fn newest_visible(
    step: usize,
    reader: usize,
    by_row: &[Vec<usize>],
    history: &History,
    others: &dyn Fn(&Version, usize) -> bool,
) -> Vec<usize> {
    by_row
        .iter()
        .filter_map(|of_row| Some(of_row[super::newest_shown(of_row, step, reader, history, others)?]))
        .collect()
}

/// What [`Sessions::probe`] answered: the reports, and whether a transaction is open.
pub(super) fn probed(answer: &Answer) -> Option<(Vec<String>, bool)> {
    if answer.failure.is_some() {
        return None;
    }
    let row = first_rows(answer).into_iter().next()?;
    let open = row.get(1)?.as_deref()? == "1";
    let reports = match row.first()?.as_deref() {
        None | Some("") => Vec::new(),
        Some(text) => match serde_json::from_str(&format!("[{text}]")).ok()? {
            Value::Array(reports) => reports.into_iter().map(|r| r.to_string()).collect(),
            _ => return None,
        },
    };
    Some((reports, open))
}

/// The run's keyed tables (at most 20) as [`keyed_table`] reads them: name, key, columns (all
/// but time stamps) and every column, which the triggers report.
const LIST: &str = "SELECT JSON_ARRAYAGG(JSON_OBJECT('name', t.TABLE_NAME, \
 'key', (SELECT JSON_ARRAYAGG(k.COLUMN_NAME ORDER BY k.ORDINAL_POSITION) FROM information_schema.KEY_COLUMN_USAGE k \
   WHERE k.TABLE_SCHEMA = t.TABLE_SCHEMA AND k.TABLE_NAME = t.TABLE_NAME AND k.CONSTRAINT_NAME = 'PRIMARY'), \
 'columns', (SELECT JSON_ARRAYAGG(c.COLUMN_NAME ORDER BY c.ORDINAL_POSITION) FROM information_schema.COLUMNS c \
   WHERE c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME \
   AND c.DATA_TYPE NOT IN ('timestamp', 'datetime', 'date', 'time')), \
 'all', (SELECT JSON_ARRAYAGG(c.COLUMN_NAME ORDER BY c.ORDINAL_POSITION) FROM information_schema.COLUMNS c \
   WHERE c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME))) \
 FROM (SELECT * FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE' \
   AND EXISTS (SELECT 1 FROM information_schema.TABLE_CONSTRAINTS p WHERE p.TABLE_SCHEMA = TABLES.TABLE_SCHEMA \
     AND p.TABLE_NAME = TABLES.TABLE_NAME AND p.CONSTRAINT_TYPE = 'PRIMARY KEY') ORDER BY TABLE_NAME LIMIT 20) t";

/// How many of racelab's triggers are on the run's tables: three a witnessed table, unless the
/// spec dropped some.
pub(super) const COUNT_TRIGGERS: &str = "SELECT COUNT(*) FROM information_schema.TRIGGERS \
 WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME LIKE 'racelab\\_witness\\_%'";

/// A keyed table, with every column the triggers report.
pub(super) struct Listed {
    pub keyed: Keyed,
    pub all: Vec<String>,
}

/// The keyed tables `control` lists in the run's database.
pub(super) async fn list(control: &mut SpecSession) -> Option<Vec<Listed>> {
    let answer = control.exec(LIST).await;
    if let Some(failure) = &answer.failure {
        tracing::debug!("no witness on MariaDB: {}", failure.line());
        return None;
    }
    let text = first_rows(&answer).into_iter().next()?.into_iter().next()??;
    let Value::Array(tables) = serde_json::from_str(&text).ok()? else {
        return None;
    };
    Some(
        tables
            .into_iter()
            .filter_map(|table| {
                let all: Vec<String> = serde_json::from_value(table.get("all")?.clone()).ok()?;
                let (keyed, _) = keyed_table(table)?;
                Some(Listed { keyed, all })
            })
            .collect(),
    )
}

/// The SQL that puts the witness on `tables` (their `i`th table's triggers named
/// `racelab_witness_{i}_…`) and then reads the rows the setup left, a set a table.
pub(super) fn put_on(tables: &[Listed], variable: &str) -> String {
    let mut sql = String::new();
    for (i, table) in tables.iter().enumerate() {
        let name = quote(&table.keyed.name);
        let row = |of: &str| {
            let pairs: Vec<String> = table
                .all
                .iter()
                .map(|c| format!("{}, {of}.{}", literal(c), quote(c)))
                .collect();
            format!("JSON_OBJECT({})", pairs.join(", "))
        };
        for (event, short, old, new) in [
            ("INSERT", "ins", "NULL".to_owned(), row("NEW")),
            ("UPDATE", "upd", row("OLD"), row("NEW")),
            ("DELETE", "del", row("OLD"), "NULL".to_owned()),
        ] {
            sql.push_str(&format!(
                "CREATE OR REPLACE TRIGGER `racelab_witness_{i}_{short}` AFTER {event} ON {name} FOR EACH ROW \
                 SET {variable} = CONCAT_WS(',', {variable}, JSON_OBJECT('table', {table}, \
                 'at', TIMESTAMPDIFF(MICROSECOND, '2000-01-01', SYSDATE(6)), 'old', {old}, 'new', {new}));\n",
                table = literal(&table.keyed.name),
            ));
        }
    }
    for table in tables {
        sql.push_str(&format!(
            "SELECT COALESCE(JSON_ARRAYAGG(r), '[]') FROM (SELECT {} AS r FROM {} LIMIT 1000) AS rows_now;\n",
            {
                let pairs: Vec<String> = table
                    .all
                    .iter()
                    .map(|c| format!("{}, {}", literal(c), quote(c)))
                    .collect();
                format!("JSON_OBJECT({})", pairs.join(", "))
            },
            quote(&table.keyed.name)
        ));
    }
    sql
}

/// The rows each table holds, from [`put_on`]'s answer (one set a table, in order).
pub(super) fn rows_now(answer: &Answer, tables: &[Listed]) -> Option<Vec<(String, Map<String, Value>)>> {
    if answer.failure.is_some() || answer.sets.len() != tables.len() {
        return None;
    }
    let mut rows = Vec::new();
    for (set, table) in answer.sets.iter().zip(tables) {
        let text = set.rows.first()?.first()?.as_deref()?;
        let Value::Array(found) = serde_json::from_str(text).ok()? else {
            return None;
        };
        rows.extend(found.into_iter().filter_map(|row| match row {
            Value::Object(row) => Some((table.keyed.name.clone(), row)),
            _ => None,
        }));
    }
    Some(rows)
}

/// One row a trigger reported in `session`'s step `step` of its transaction `began`: its table,
/// the moment (microseconds), and the row before and after.
fn written(session: usize, step: usize, began: &str, text: &str) -> Option<Written> {
    let map = object(text)?;
    let row = |name: &str| object_at(&map, name);
    Some(Written {
        session,
        step,
        xid: 0,
        began: began.to_owned(),
        at: map.get("at")?.as_i64()?,
        table: map.get("table")?.as_str()?.to_owned(),
        old: row("old"),
        new: row("new"),
    })
}

/// A JSON value of a reported row as a MariaDB literal.
pub(super) fn value(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "NULL".to_owned(),
        Some(Value::Bool(b)) => u8::from(*b).to_string(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => literal(s),
        Some(other) => literal(&other.to_string()),
    }
}

/// `INSERT`s that fill the temporary `table` with `rows` (nothing when there are none).
pub(super) fn insert(table: &str, rows: &[&Map<String, Value>]) -> Option<String> {
    let first = rows.first()?;
    let columns: Vec<&String> = first.keys().collect();
    let values: Vec<String> = rows
        .iter()
        .map(|row| {
            let values: Vec<String> = columns.iter().map(|c| value(row.get(*c))).collect();
            format!("({})", values.join(", "))
        })
        .collect();
    let names: Vec<String> = columns.iter().map(|c| quote(c)).collect();
    Some(format!(
        "INSERT INTO {} ({}) VALUES {}",
        quote(table),
        names.join(", "),
        values.join(", ")
    ))
}

/// A temporary table that shadows the run's `table`, empty, with its columns.
pub(super) fn shadow(table: &str) -> String {
    let name = quote(table);
    format!("CREATE TEMPORARY TABLE {name} AS SELECT * FROM {name} LIMIT 0")
}

pub(super) fn unshadow(table: &str) -> String {
    format!("DROP TEMPORARY TABLE IF EXISTS {}", quote(table))
}

/// The reader's query, bounded as each of racelab's questions is.
pub(super) fn bounded(query: &str) -> String {
    format!("SET STATEMENT max_statement_time = 0.25 FOR {query}")
}

/// Whether two answers hold the same rows, in any order (a temporary table without the real
/// one's key may return them in another). A set without rows counts as none: a reader's lone
/// `SELECT` that found nothing still names its columns, the same query asked again does not.
pub(super) fn same_rows(a: &[ResultSet], b: &[ResultSet]) -> bool {
    let sorted = |sets: &[ResultSet]| -> Vec<ResultSet> {
        sets.iter()
            .filter(|s| !s.rows.is_empty() || s.rows_dropped > 0)
            .map(|s| {
                let mut sorted = s.clone();
                sorted.rows.sort();
                sorted
            })
            .collect()
    };
    sorted(a) == sorted(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_s_transactions_are_told_apart_by_whether_one_is_open() {
        let mut s = Sessions::new(2);
        // alice: BEGIN, a read, an update, COMMIT; bob: a statement alone between.
        let begin = s.step(0, "BEGIN", (false, false), true).expect("alice");
        let read = s.step(0, "SELECT * FROM t", (false, true), true).expect("alice");
        let alone = s.step(1, "UPDATE t SET v = 1", (false, false), false).expect("bob");
        let timed_out = s.step(0, "UPDATE t SET v = 2", (true, false), true).expect("alice");
        let commit = s.step(0, "COMMIT", (false, false), false).expect("alice");
        assert_eq!(begin.began, "0.1");
        assert_eq!(read.began, "0.1");
        assert_eq!(read.moments, [0, 1], "her start, and her read");
        assert_eq!((alone.began.as_str(), alone.alone, alone.ended), ("1.1", true, true));
        assert!(timed_out.undone && !timed_out.ended, "1205 undoes the statement only");
        assert!(commit.ended && !commit.alone);
        // Her next transaction, and a BEGIN inside an open one, which commits it and starts anew.
        assert_eq!(
            s.step(0, "BEGIN", (false, false), true).map(|s| s.began).as_deref(),
            Some("0.2")
        );
        let again = s.step(0, "begin", (false, false), true).expect("alice");
        assert_eq!((again.began.as_str(), again.committed_the_last), ("0.3", true));
        // A deadlock rolled the transaction back: it ended, and nothing is undone alone.
        let deadlock = s.step(0, "UPDATE t SET v = 3", (true, false), false).expect("alice");
        assert!(deadlock.ended && !deadlock.undone);
        assert_eq!(s.completed, 8);
        assert!(s.step(5, "SELECT 1", (false, true), false).is_none(), "no such session");
    }

    #[test]
    fn the_probe_reads_the_reports_and_whether_a_transaction_is_open() {
        let answer = |v: Option<&str>, open: &str| Answer {
            sets: vec![ResultSet {
                columns: vec!["v".into(), "@@in_transaction".into()],
                rows: vec![vec![v.map(str::to_owned), Some(open.to_owned())]],
                rows_dropped: 0,
            }],
            ..Answer::default()
        };
        let two = r#"{"table": "t", "at": 5, "old": null, "new": {"id": 1}},{"table": "t", "at": 6, "old": {"id": 1}, "new": null}"#;
        let (reports, open) = probed(&answer(Some(two), "1")).expect("read");
        assert_eq!(reports.len(), 2);
        assert!(open);
        let w = written(1, 4, "1.1", &reports[1]).expect("a row");
        assert_eq!(
            (w.session, w.step, w.began.as_str(), w.table.as_str(), w.at),
            (1, 4, "1.1", "t", 6)
        );
        assert!(w.old.is_some() && w.new.is_none(), "a deletion");
        assert_eq!(probed(&answer(None, "0")), Some((vec![], false)));
        assert_eq!(probed(&answer(Some("not json"), "0")), None);
    }

    #[test]
    fn rows_are_asked_again_as_literals_in_any_order() {
        let row: Map<String, Value> =
            serde_json::from_str(r#"{"id": 1, "who": "o'brien", "n": null, "ok": true}"#).expect("json");
        assert_eq!(
            insert("t", &[&row]).as_deref(),
            Some("INSERT INTO `t` (`id`, `n`, `ok`, `who`) VALUES (1, NULL, 1, 'o''brien')")
        );
        assert_eq!(insert("t", &[]), None);
        let set = |rows: &[&str]| ResultSet {
            columns: vec!["id".into()],
            rows: rows.iter().map(|r| vec![Some((*r).to_owned())]).collect(),
            rows_dropped: 0,
        };
        assert!(same_rows(&[set(&["1", "2"])], &[set(&["2", "1"])]));
        assert!(!same_rows(&[set(&["1", "2"])], &[set(&["1"])]));
        assert!(same_rows(&[set(&[])], &[]), "found nothing either way");
        assert!(!same_rows(&[set(&[])], &[set(&["1"])]));
        assert_eq!(
            shadow("t`x"),
            "CREATE TEMPORARY TABLE `t``x` AS SELECT * FROM `t``x` LIMIT 0"
        );
    }
}
