//! A spec played on MariaDB: the same format, player and output as on PostgreSQL, in MariaDB's
//! SQL, with MariaDB's answers.
//!
//! - The run's sandbox is a database and user of its own ([`crate::sandbox::mariadb`]), bounded
//!   there: the reader's SQL there is as hostile as on PostgreSQL.
//! - Each session is a connection of the run's user, sent each block over MariaDB's text
//!   protocol as the `mariadb` client sends it; its rows are printed in the tester's layout,
//!   each value as the server sent it, and an error as the `mariadb` client prints it
//!   (`ERROR 1213 (40001): Deadlock found …`).
//! - Who waits for whom is seen from racelab's own connection, in InnoDB's lock waits
//!   ([`crate::engine::mariadb::waits_for`]), asked no more often than InnoDB refreshes them.
//! - A step past the step limit is cancelled with `KILL QUERY`, as the tester cancels one.
//!
//! What PostgreSQL's runs have and these have not, said where it shows: notices and
//! notifications (MariaDB sends none). The witness behind "Why did it happen?" sees less here,
//! and its proof says what ([`super::witness`]'s MariaDB side).

use super::session::{Answer, Failure, Keep, RECEIVED_AT_MOST, printed_size};
use super::table::ResultSet;
use crate::sandbox::mariadb::MariaSandbox;
use futures_util::TryStreamExt;
use sqlx::mysql::{MySqlConnection, MySqlPool, MySqlRow};
use sqlx::{Column, Either, Executor, Row};
use std::sync::Arc;
use std::time::Duration;

/// How often who waits is asked of InnoDB at most: it refreshes its lock tables at most every
/// 100 ms, and not while they are read more often than that (docs/mariadb.md).
pub const ASK_WAITS_EVERY: Duration = Duration::from_millis(150);

/// A spec run's sandbox on MariaDB, removed when the play ends however it ends: closed by the
/// play, or, dropped mid-play (a run cancelled, its reader gone), on a task of its own.
pub struct Sandbox(Option<MariaSandbox>);

impl Sandbox {
    pub fn new(sandbox: MariaSandbox) -> Sandbox {
        Sandbox(Some(sandbox))
    }

    /// Removes it now.
    pub async fn close(mut self) {
        if let Some(sandbox) = self.0.take() {
            sandbox.close().await;
        }
    }
}

impl std::ops::Deref for Sandbox {
    type Target = MariaSandbox;

    fn deref(&self) -> &MariaSandbox {
        // Only `close` and `drop` take it, and neither leaves the guard to be used again.
        self.0
            .as_ref()
            .unwrap_or_else(|| unreachable!("a spec's sandbox used after it was closed"))
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let (Some(sandbox), Ok(runtime)) = (self.0.take(), tokio::runtime::Handle::try_current()) {
            runtime.spawn(sandbox.close());
        }
    }
}

/// One session's connection on MariaDB, shared by the tasks that send it queries (one at a
/// time: a step's, then the player's next).
#[derive(Clone)]
pub struct MariaLink {
    conn: Arc<tokio::sync::Mutex<MySqlConnection>>,
    thread: u64,
    /// racelab's own connections, which may cancel the session's query.
    admin: MySqlPool,
}

impl MariaLink {
    /// Connects a session of the run's user with `options`.
    pub async fn connect(options: sqlx::mysql::MySqlConnectOptions, admin: MySqlPool) -> Result<MariaLink, String> {
        let mut conn = sqlx::ConnectOptions::connect(&options)
            .await
            .map_err(|e| e.to_string())?;
        let thread: u64 = sqlx::query_scalar("SELECT CONNECTION_ID()")
            .fetch_one(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        Ok(MariaLink {
            conn: Arc::new(tokio::sync::Mutex::new(conn)),
            thread,
            admin,
        })
    }

    /// The session's thread id (`CONNECTION_ID()`).
    pub fn thread(&self) -> u64 {
        self.thread
    }

    /// Cancels the statement the session runs now, if any (`KILL QUERY`).
    pub async fn cancel(&self) -> Result<(), String> {
        sqlx::query(&format!("KILL QUERY {}", self.thread))
            .execute(&self.admin)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Runs `sql` (one or several statements) and collects every result set, keeping at most
    /// `keep` of their rows as a PostgreSQL session does; a query sending more than
    /// [`RECEIVED_AT_MOST`] is cancelled.
    pub async fn run(&self, sql: &str, keep: Keep) -> Answer {
        let mut conn = self.conn.lock().await;
        let mut answer = Answer::default();
        let mut sets = Sets::new(keep);
        let mut cancelled = false;
        {
            let mut stream = conn.fetch_many(sql);
            loop {
                match stream.try_next().await {
                    Ok(Some(Either::Right(row))) => {
                        sets.row(&row);
                        if sets.received > RECEIVED_AT_MOST && !cancelled {
                            answer.cut_at = Some(sets.received);
                            cancelled = true;
                            let _ = self.cancel().await;
                        }
                    }
                    Ok(Some(Either::Left(_))) => sets.end_statement(),
                    Ok(None) => break,
                    Err(error) => {
                        answer.failure = Some(failure_of(error));
                        break;
                    }
                }
            }
        }
        if sets.done.is_empty() && sets.open.is_none() && answer.failure.is_none() {
            // No row, so no header came: a lone SELECT's columns, as its table would print.
            if let Some(columns) = columns_of_lone_select(&mut conn, sql).await {
                sets.done.push((
                    ResultSet {
                        columns,
                        ..ResultSet::default()
                    },
                    true,
                ));
            }
        }
        if sets.open.is_some() {
            sets.end_statement();
        }
        answer.ends_with_rows = sets.done.last().is_some_and(|(_, last)| *last);
        answer.sets = sets.done.into_iter().map(|(set, _)| set).collect();
        answer
    }
}

/// The result sets of one query as they arrive: rows kept within `keep`, the rest counted.
struct Sets {
    keep: Keep,
    /// The set being read and its columns' printed widths.
    open: Option<(ResultSet, Vec<usize>)>,
    /// Sets complete, each with whether it was its statement's (a statement ended with rows).
    done: Vec<(ResultSet, bool)>,
    /// What the complete sets print as.
    spent: usize,
    /// Every value's bytes received, and one for each value.
    received: usize,
}

impl Sets {
    fn new(keep: Keep) -> Sets {
        Sets {
            keep,
            open: None,
            done: Vec::new(),
            spent: 0,
            received: 0,
        }
    }

    fn row(&mut self, row: &MySqlRow) {
        let (set, widths) = self.open.get_or_insert_with(|| {
            let columns: Vec<String> = row.columns().iter().map(|c| c.name().to_owned()).collect();
            let widths = columns.iter().map(String::len).collect();
            (
                ResultSet {
                    columns,
                    ..ResultSet::default()
                },
                widths,
            )
        });
        let values = texts(row);
        self.received += values
            .iter()
            .map(|v| 1 + v.as_ref().map_or(0, String::len))
            .sum::<usize>();
        let wider: Vec<usize> = widths
            .iter()
            .enumerate()
            .map(|(j, w)| (*w).max(values.get(j).and_then(|v| v.as_ref()).map_or(0, String::len)))
            .collect();
        let fits = self.spent + printed_size(&wider, set.rows.len() + 1) <= self.keep.bytes;
        if set.rows.len() < self.keep.rows && fits {
            *widths = wider;
            set.rows.push(values);
        } else {
            set.rows_dropped += 1;
        }
    }

    /// A statement ended: its rows, if it sent any, are a set.
    fn end_statement(&mut self) {
        if let Some((set, widths)) = self.open.take() {
            self.spent += printed_size(&widths, set.rows.len());
            self.done.push((set, true));
        } else if let Some(last) = self.done.last_mut() {
            last.1 = false;
        }
    }
}

/// Each value of `row` as the server sent it (the text protocol sends every value as text), or
/// NULL; bytes that are not UTF-8 read with replacement characters.
fn texts(row: &MySqlRow) -> Vec<Option<String>> {
    (0..row.columns().len())
        .map(|i| match row.try_get_unchecked::<Option<String>, _>(i) {
            Ok(text) => text,
            Err(_) => row
                .try_get_unchecked::<Option<Vec<u8>>, _>(i)
                .ok()
                .flatten()
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
        })
        .collect()
}

/// The columns of `sql` if it is one SELECT (prepared, not run: MariaDB describes it), for a
/// result without rows.
async fn columns_of_lone_select(conn: &mut MySqlConnection, sql: &str) -> Option<Vec<String>> {
    let statement = sql.trim().trim_end_matches(';').trim();
    let lone = !statement.contains(';') && statement.to_uppercase().starts_with("SELECT");
    if !lone {
        return None;
    }
    let described = conn.describe(statement).await.ok()?;
    let columns: Vec<String> = described.columns().iter().map(|c| c.name().to_owned()).collect();
    (!columns.is_empty()).then_some(columns)
}

/// A statement's failure, as the player reports it.
pub fn failure_of(error: sqlx::Error) -> Failure {
    match crate::engine::mariadb::SessionError::of(error) {
        crate::engine::mariadb::SessionError::Server {
            number,
            sqlstate,
            message,
        } => Failure::Mariadb {
            number,
            sqlstate,
            message,
        },
        crate::engine::mariadb::SessionError::Lost(why) => Failure::Lost(why),
    }
}

/// `name` quoted for MariaDB (backticks, a backtick in it doubled).
pub fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// `text` as a MariaDB string literal (quotes and backslashes escaped).
pub fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

/// The ledger's queries on MariaDB: the run's tables (at most 20), one table's columns, and its
/// rows as JSON arrays (first 1,000, ordered as PostgreSQL's ledger orders them).
pub const LIST_TABLES: &str = "SELECT TABLE_NAME, TABLE_NAME FROM information_schema.TABLES \
     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE' ORDER BY 1 LIMIT 20";

pub fn list_columns(table: &str) -> String {
    format!(
        "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() \
         AND TABLE_NAME = {} ORDER BY ORDINAL_POSITION LIMIT 100",
        literal(table)
    )
}

pub fn read_rows(table: &str, columns: &[String]) -> String {
    let quoted: Vec<String> = columns.iter().map(|c| quote(c)).collect();
    format!(
        "SELECT JSON_ARRAY({}) AS r FROM {} ORDER BY 1 LIMIT 1000",
        quoted.join(", "),
        quote(table)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_text_are_quoted_as_mariadb_reads_them() {
        assert_eq!(quote("odd`name"), "`odd``name`");
        assert_eq!(literal(r"it's a \ back"), r"'it''s a \\ back'");
        assert_eq!(
            read_rows("t", &["id".into(), "a`b".into()]),
            "SELECT JSON_ARRAY(`id`, `a``b`) AS r FROM `t` ORDER BY 1 LIMIT 1000"
        );
    }

    #[test]
    fn an_error_prints_as_the_mariadb_client_prints_it() {
        let deadlock = Failure::Mariadb {
            number: 1213,
            sqlstate: "40001".into(),
            message: "Deadlock found when trying to get lock; try restarting transaction".into(),
        };
        assert_eq!(
            deadlock.line(),
            "ERROR 1213 (40001): Deadlock found when trying to get lock; try restarting transaction"
        );
        assert_eq!(deadlock.code().as_deref(), Some("1213"));
    }
}
