//! A SQL session on MariaDB, as an actor of a run holds one: its own connection, at an isolation
//! level or in autocommit, InnoDB's snapshot switch on or off; each statement's rows as plain
//! [`Value`]s; an error as MariaDB gives it, number, SQLSTATE and text (`1213`/`40001` a
//! deadlock, `1020` a record changed since the snapshot read it, `1205` a lock wait timed out).
//! And, seen from racelab's own connection ([`waits_for`]), whom a step that does not return is
//! waiting for, as `pg_blocking_pids` tells it on PostgreSQL.
//!
//! A run plays on MariaDB through [`actor`] (its actors, on lanes like every other kind) and
//! [`place`] (its sandbox, made on first need, and its ledger), docs/mariadb.md.

pub mod actor;
pub mod place;
pub mod shelf;

pub use actor::{MariaActor, MariaPending};
pub use place::Place;
pub use shelf::Shelf;

use super::sql::Output;
use futures_util::TryStreamExt;
use shared::Value;
use sqlx::mysql::{MySqlConnectOptions, MySqlConnection, MySqlDatabaseError, MySqlPool, MySqlRow};
use sqlx::{Column, ConnectOptions, Either, Executor, Row};

/// An isolation level, as InnoDB names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    ReadUncommitted,
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl Level {
    /// As `SET SESSION TRANSACTION ISOLATION LEVEL` takes it.
    pub fn sql(self) -> &'static str {
        match self {
            Level::ReadUncommitted => "READ UNCOMMITTED",
            Level::ReadCommitted => "READ COMMITTED",
            Level::RepeatableRead => "REPEATABLE READ",
            Level::Serializable => "SERIALIZABLE",
        }
    }
}

/// How a session is set up when it connects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    /// The level its transactions run at; `None` leaves the server's (REPEATABLE READ).
    pub level: Option<Level>,
    /// `innodb_snapshot_isolation`: off is MariaDB before 11.6.2, on is 11.6.2 and later (at
    /// REPEATABLE READ, a write to a row changed since the snapshot is refused with `1020`).
    pub snapshot_isolation: bool,
}

impl Setting {
    /// The run header's word for a session so set up: its level, and at REPEATABLE READ the
    /// switch (`REPEATABLE READ, innodb_snapshot_isolation=ON`), the one setting whose default
    /// changed.
    pub fn detail(self) -> String {
        let level = self.level.map_or("REPEATABLE READ", Level::sql);
        match self.level {
            Some(Level::RepeatableRead) | None => {
                let switch = if self.snapshot_isolation { "ON" } else { "OFF" };
                format!("{level}, innodb_snapshot_isolation={switch}")
            }
            _ => level.to_owned(),
        }
    }

    /// The setting a header's word names ([`Setting::detail`]): what "Open as a spec" sets a
    /// session up with. `None` for a word that names no level.
    pub fn from_detail(detail: &str) -> Option<Setting> {
        let (level, switch) = detail.split_once(", ").unwrap_or((detail, ""));
        let level = [
            Level::ReadUncommitted,
            Level::ReadCommitted,
            Level::RepeatableRead,
            Level::Serializable,
        ]
        .into_iter()
        .find(|l| l.sql() == level.trim())?;
        Some(Setting {
            level: Some(level),
            snapshot_isolation: switch.trim() == "innodb_snapshot_isolation=ON",
        })
    }

    /// The statements that set a session up so, as one line of SQL.
    pub fn sql(self) -> String {
        let switch = if self.snapshot_isolation { "ON" } else { "OFF" };
        let level = self
            .level
            .map(|level| format!(" SET SESSION TRANSACTION ISOLATION LEVEL {};", level.sql()))
            .unwrap_or_default();
        format!("SET SESSION innodb_snapshot_isolation = {switch};{level}")
    }
}

/// A statement MariaDB refused, or a session it lost.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// `ERROR 1213 (40001): Deadlock found when trying to get lock; …`, as the mysql client
    /// prints it.
    #[error("ERROR {number} ({sqlstate}): {message}")]
    Server {
        number: u16,
        sqlstate: String,
        message: String,
    },
    #[error("the session was lost: {0}")]
    Lost(String),
}

impl SessionError {
    /// `error` as MariaDB gave it: its number, SQLSTATE and message; or the session lost.
    pub fn of(error: sqlx::Error) -> SessionError {
        match error
            .as_database_error()
            .and_then(|e| e.try_downcast_ref::<MySqlDatabaseError>())
        {
            Some(e) => SessionError::Server {
                number: e.number(),
                sqlstate: e.code().unwrap_or("HY000").to_owned(),
                message: e.message().to_owned(),
            },
            None => SessionError::Lost(error.to_string()),
        }
    }

    /// MariaDB's error number, if the server refused the statement.
    pub fn number(&self) -> Option<u16> {
        match self {
            SessionError::Server { number, .. } => Some(*number),
            SessionError::Lost(_) => None,
        }
    }
}

/// One actor's session.
pub struct MariaSession {
    conn: MySqlConnection,
    thread: u64,
}

impl MariaSession {
    /// Connects as `options` says (a run's sandbox gives them) and sets the session up.
    pub async fn open(options: MySqlConnectOptions, setting: Setting) -> Result<MariaSession, SessionError> {
        let mut conn = options.connect().await.map_err(SessionError::of)?;
        let thread = set_up(&mut conn, setting).await?;
        Ok(MariaSession { conn, thread })
    }

    /// The server's thread id for this session (`CONNECTION_ID()`), what [`waits_for`] names.
    pub fn thread(&self) -> u64 {
        self.thread
    }

    /// Runs one statement as the mysql client sends it (the text protocol): its rows, and for
    /// a write, the rows it changed.
    pub async fn run(&mut self, sql: &str) -> Result<Output, SessionError> {
        let mut stream = self.conn.fetch_many(sql);
        let mut columns = Vec::new();
        let mut rows = Vec::new();
        let mut affected = 0;
        while let Some(item) = stream.try_next().await.map_err(SessionError::of)? {
            match item {
                Either::Left(done) => affected += done.rows_affected(),
                Either::Right(row) => {
                    if columns.is_empty() {
                        columns = row.columns().iter().map(|c| c.name().to_owned()).collect();
                    }
                    rows.push(values(&row));
                }
            }
        }
        drop(stream);
        let verb = sql.split_whitespace().next().unwrap_or("").to_uppercase();
        if columns.is_empty() && verb == "SELECT" {
            // No row, so no header came with them: ask for it, as the mysql client shows an
            // empty table's columns (prepared, not run).
            let described = self.conn.describe(sql).await.map_err(SessionError::of)?;
            columns = described.columns().iter().map(|c| c.name().to_owned()).collect();
        }
        Ok(Output {
            tag: tag(&verb, rows.len() as u64, affected),
            columns,
            rows,
            affected,
        })
    }
}

/// Sets a new session up as `setting` says and asks its thread id, in one round trip (three
/// statements sent together, as the text protocol allows): a run opens a session per actor
/// while its reader waits.
async fn set_up(conn: &mut MySqlConnection, setting: Setting) -> Result<u64, SessionError> {
    let sql = format!("{} SELECT CONNECTION_ID()", setting.sql());
    let mut thread = None;
    let mut answers = conn.fetch_many(sql.as_str());
    while let Some(answer) = answers.try_next().await.map_err(SessionError::of)? {
        if let Either::Right(row) = answer {
            thread = row.try_get::<u64, _>(0).ok();
        }
    }
    thread.ok_or_else(|| SessionError::Lost("the session did not say its thread id".into()))
}

/// What a statement's card says it did: `SELECT 2`, `UPDATE 1` (rows returned or changed), or
/// `OK` for the rest (`START TRANSACTION`, `COMMIT`), as the mysql client's "Query OK".
fn tag(verb: &str, returned: u64, affected: u64) -> String {
    match verb {
        "SELECT" | "SHOW" | "WITH" => format!("{verb} {returned}"),
        "INSERT" | "UPDATE" | "DELETE" | "REPLACE" => format!("{verb} {affected}"),
        _ => "OK".to_owned(),
    }
}

/// A row's cells as plain values: an integer, a float, text, or bytes read as text.
fn values(row: &MySqlRow) -> Vec<Value> {
    (0..row.columns().len())
        .map(|i| {
            if let Ok(v) = row.try_get::<Option<i64>, _>(i) {
                v.map_or(Value::Null, Value::Int)
            } else if let Ok(v) = row.try_get::<Option<u64>, _>(i) {
                v.map_or(Value::Null, |v| {
                    i64::try_from(v).map_or_else(|_| Value::Text(v.to_string()), Value::Int)
                })
            } else if let Ok(v) = row.try_get::<Option<f64>, _>(i) {
                v.map_or(Value::Null, Value::Float)
            } else if let Ok(v) = row.try_get::<Option<String>, _>(i) {
                v.map_or(Value::Null, Value::Text)
            } else if let Ok(v) = row.try_get::<Option<Vec<u8>>, _>(i) {
                v.map_or(Value::Null, |b| Value::Text(String::from_utf8_lossy(&b).into_owned()))
            } else if let Ok(v) = row.try_get_unchecked::<Option<String>, _>(i) {
                // The text protocol sends every value as text: a DECIMAL (`SUM(amount)`), a
                // date. A whole number reads as one, as PostgreSQL's `sum` of integers does.
                v.map_or(Value::Null, |text| text.parse().map_or(Value::Text(text), Value::Int))
            } else {
                Value::Null
            }
        })
        .collect()
}

/// Whom the session on `thread` waits for, asked on racelab's own connection (it needs
/// `PROCESS`): the threads holding the row locks it asked for (InnoDB's lock waits); empty when
/// it waits for nothing. A wait for a table's metadata lock shows with no holder named: MariaDB
/// names the holder only with its `METADATA_LOCK_INFO` plugin installed. InnoDB refreshes the
/// lock tables this reads at most every 100 ms, and a refresh waits for a pause that long in
/// their reading: ask no more often (read every 20 ms, they never changed in a test's 3 s).
pub async fn waits_for(admin: &MySqlPool, thread: u64) -> Result<Wait, sqlx::Error> {
    let holders: Vec<u64> = sqlx::query_scalar(
        "SELECT DISTINCT b.trx_mysql_thread_id FROM information_schema.INNODB_LOCK_WAITS w \
         JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id \
         JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id \
         WHERE r.trx_mysql_thread_id = ? ORDER BY 1",
    )
    .bind(thread)
    .fetch_all(admin)
    .await?;
    if !holders.is_empty() {
        return Ok(Wait::RowLock { holders });
    }
    let state: Option<String> = sqlx::query_scalar("SELECT STATE FROM information_schema.PROCESSLIST WHERE ID = ?")
        .bind(thread)
        .fetch_optional(admin)
        .await?
        .flatten();
    Ok(match state {
        Some(state) if state.starts_with("Waiting for") && state.ends_with("metadata lock") => {
            Wait::MetadataLock { state }
        }
        _ => Wait::Nothing,
    })
}

/// What a session waits for, at one moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wait {
    Nothing,
    /// Row locks, held by these threads.
    RowLock {
        holders: Vec<u64>,
    },
    /// A table's metadata lock (`Waiting for table metadata lock`), its holder unnamed.
    MetadataLock {
        state: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_is_named_in_the_header_and_read_back_from_it() {
        for level in [Level::ReadCommitted, Level::RepeatableRead, Level::Serializable] {
            for snapshot_isolation in [false, true] {
                let setting = Setting {
                    level: Some(level),
                    snapshot_isolation,
                };
                let back = Setting::from_detail(&setting.detail()).expect("a level");
                assert_eq!(back.level, setting.level);
                // The switch is named, and read back, at REPEATABLE READ only.
                if level == Level::RepeatableRead {
                    assert_eq!(back, setting);
                }
            }
        }
        assert_eq!(Setting::from_detail("per strategy"), None);
        let on = Setting {
            level: Some(Level::RepeatableRead),
            snapshot_isolation: true,
        };
        assert_eq!(
            on.sql(),
            "SET SESSION innodb_snapshot_isolation = ON; SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ;"
        );
    }

    #[test]
    fn a_statement_says_what_it_returned_or_changed() {
        assert_eq!(tag("SELECT", 2, 0), "SELECT 2");
        assert_eq!(tag("UPDATE", 0, 1), "UPDATE 1");
        assert_eq!(tag("START", 0, 0), "OK");
        assert_eq!(tag("COMMIT", 0, 0), "OK");
    }

    #[test]
    fn an_error_reads_as_the_mysql_client_prints_it() {
        let error = SessionError::Server {
            number: 1213,
            sqlstate: "40001".to_owned(),
            message: "Deadlock found when trying to get lock; try restarting transaction".to_owned(),
        };
        assert_eq!(
            error.to_string(),
            "ERROR 1213 (40001): Deadlock found when trying to get lock; try restarting transaction"
        );
        assert_eq!(error.number(), Some(1213));
        assert_eq!(SessionError::Lost("reset".to_owned()).number(), None);
    }
}
