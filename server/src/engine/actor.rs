//! A PostgreSQL actor: one reader-named session (alice, bob, w07) on its own connection.
//!
//! Why a dedicated connection and a task per actor: a pool would hand the same session to several
//! actors, which changes what PostgreSQL sees (locks and snapshots belong to sessions). And a step
//! that waits for a lock must be *started* without being awaited, so the choreography can go on
//! with other actors while it waits: the actor's task owns the connection and runs one statement
//! at a time from its mailbox, and the handle gets the answer on a oneshot channel.
//!
//! Like the tutorials' driver, an actor is never in autocommit: its first statement opens a
//! transaction at the actor's isolation level (`BEGIN ISOLATION LEVEL …`), which stays open until
//! [`PgActor::commit`] or [`PgActor::rollback`]. The level belongs to the session, not the step.

use super::BoxFuture;
use super::blocking::Pending;
use super::error::{DbError, StepError};
use super::run::RunCore;
use futures_util::TryStreamExt;
use shared::event::Rows;
use shared::{EventKind, Service, Value};
use sqlx::postgres::{PgArguments, PgConnection, PgRow};
use sqlx::query::Query;
use sqlx::{Column, Either, Executor, Postgres, Row, TypeInfo};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::{mpsc, oneshot};

/// A transaction isolation level, as PostgreSQL spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

impl Level {
    /// `READ COMMITTED`, `REPEATABLE READ`, `SERIALIZABLE`.
    pub fn sql(self) -> &'static str {
        match self {
            Level::ReadCommitted => "READ COMMITTED",
            Level::RepeatableRead => "REPEATABLE READ",
            Level::Serializable => "SERIALIZABLE",
        }
    }

    /// The tutorials' variant names: `read-committed`, `repeatable-read`, `serializable`.
    pub fn from_variant(variant: &str) -> Option<Level> {
        match variant {
            "read-committed" => Some(Level::ReadCommitted),
            "repeatable-read" => Some(Level::RepeatableRead),
            "serializable" => Some(Level::Serializable),
            _ => None,
        }
    }
}

/// What a statement returned: its command tag (`UPDATE 1`) and its rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    pub tag: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

impl Output {
    /// How many rows the statement returned or touched.
    pub fn row_count(&self) -> usize {
        self.rows.len()
    }

    /// The integer in the first column of the first row (`SELECT spent …`, `RETURNING spent`).
    pub fn int(&self) -> Result<i64, StepError> {
        self.rows
            .first()
            .and_then(|row| row.first())
            .and_then(Value::as_int)
            .ok_or_else(|| StepError::Shape(format!("expected an integer, got {:?}", self.rows)))
    }

    /// The integer in column `col` of the first row.
    pub fn int_at(&self, col: usize) -> Result<i64, StepError> {
        self.rows
            .first()
            .and_then(|row| row.get(col))
            .and_then(Value::as_int)
            .ok_or_else(|| StepError::Shape(format!("expected an integer in column {col}, got {:?}", self.rows)))
    }
}

/// One statement for the actor's task to run.
pub(super) struct Request {
    sql: String,
    params: Vec<Value>,
    reply: oneshot::Sender<Result<Output, sqlx::Error>>,
}

/// The handle a scenario holds for one actor. Dropping it ends the actor's task, which closes the
/// connection (rolling back whatever it left open) once its statement in flight, if any, returns;
/// [`PgActor::close`] waits for that. A cancelled run does not wait: the sandbox's cleanup
/// terminates the backend.
pub struct PgActor {
    pub(super) name: String,
    level: Level,
    pid: i32,
    /// Quiet actors (load-test workers) emit no per-step events: 16 workers × 400 approvals
    /// would drown the timeline. They still report errors through their results.
    quiet: bool,
    in_transaction: AtomicBool,
    /// A statement failed inside the open transaction: PostgreSQL will answer COMMIT with a
    /// rollback, and the events must say so.
    aborted: AtomicBool,
    mailbox: mpsc::Sender<Request>,
    task: tokio::task::JoinHandle<()>,
    pub(super) run: Arc<RunCore>,
}

impl PgActor {
    /// Starts the task that owns `conn` and returns the handle.
    pub(super) fn spawn(
        run: Arc<RunCore>,
        conn: PgConnection,
        name: &str,
        level: Level,
        pid: i32,
        quiet: bool,
    ) -> Self {
        let (mailbox, requests) = mpsc::channel(1);
        let task = tokio::spawn(serve(conn, requests));
        PgActor {
            name: name.to_owned(),
            level,
            pid,
            quiet,
            in_transaction: AtomicBool::new(false),
            aborted: AtomicBool::new(false),
            mailbox,
            task,
            run,
        }
    }

    /// Closes the actor's connection and waits until it is closed, so a run that opens new
    /// actors next (the load test's next strategy) never holds more connections than admitted.
    pub async fn close(self) {
        let PgActor { mailbox, task, .. } = self;
        drop(mailbox);
        let _ = task.await;
    }

    /// The reader's name for this actor.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The session's isolation level.
    pub fn level(&self) -> Level {
        self.level
    }

    /// The backend process id, as `pg_stat_activity` and `pg_blocking_pids` know it.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Speaks a transcript line as this actor (`[alice] commit`); quiet actors say nothing.
    pub fn say(&self, message: impl AsRef<str>) {
        let line = format!("[{}] {}", self.name, message.as_ref());
        self.emit(EventKind::Say {
            actor: Some(self.name.clone()),
            line,
        });
    }

    /// Runs one statement and waits for its result. Use [`PgActor::start`] for a statement that
    /// may wait for a lock.
    pub async fn query(&self, sql: &str, params: &[Value]) -> Result<Output, StepError> {
        self.start(sql, params).await?.finish().await
    }

    /// Starts one statement without waiting for it: the caller decides whether it should block
    /// ([`Pending::expect_blocked`]) or just [`Pending::finish`].
    pub async fn start(&self, sql: &str, params: &[Value]) -> Result<Pending<'_>, StepError> {
        self.gate(sql).await;
        if !self.in_transaction.swap(true, Ordering::SeqCst) {
            let begin = format!("BEGIN ISOLATION LEVEL {}", self.level.sql());
            self.emit_step(&begin, &[]);
            self.send(&begin, &[]).await?.finish().await?;
        }
        self.emit_step(sql, params);
        self.send(sql, params).await
    }

    /// Commits the open transaction. A failed COMMIT (a 40001 at commit time) ends the
    /// transaction too: PostgreSQL rolled it back, and the events say so.
    pub async fn commit(&self) -> Result<(), StepError> {
        self.end_transaction("COMMIT").await
    }

    /// Rolls back the open transaction; does nothing when none is open (like the tutorials'
    /// driver after a failed COMMIT).
    pub async fn rollback(&self) -> Result<(), StepError> {
        if !self.in_transaction.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.end_transaction("ROLLBACK").await
    }

    async fn end_transaction(&self, sql: &str) -> Result<(), StepError> {
        self.gate(sql).await;
        self.emit_step(sql, &[]);
        let answer = self.send(sql, &[]).await?.answer().await?;
        self.in_transaction.store(false, Ordering::SeqCst);
        let aborted = self.aborted.swap(false, Ordering::SeqCst);
        let actor = self.name.clone();
        match answer {
            Ok(_) if sql == "COMMIT" && !aborted => {
                self.emit(EventKind::Commit { actor });
                Ok(())
            }
            Ok(_) => {
                self.emit(EventKind::Rollback { actor });
                Ok(())
            }
            Err(error) => {
                let error = self.settle_answer(Err(error));
                self.emit(EventKind::Rollback { actor });
                error.map(|_| ())
            }
        }
    }

    /// In step mode, waits for the reader's `next` (quiet workers never pause).
    async fn gate(&self, step: &str) {
        if !self.quiet {
            self.run.gate(&self.name, step).await;
        }
    }

    /// Hands a statement to the actor's task.
    async fn send(&self, sql: &str, params: &[Value]) -> Result<Pending<'_>, StepError> {
        let (reply, answer) = oneshot::channel();
        let request = Request {
            sql: sql.to_owned(),
            params: params.to_vec(),
            reply,
        };
        self.mailbox
            .send(request)
            .await
            .map_err(|_| self.lost("its task has stopped"))?;
        Ok(Pending::new(self, answer))
    }

    pub(super) fn lost(&self, reason: &str) -> StepError {
        StepError::Lost {
            actor: self.name.clone(),
            reason: reason.to_owned(),
        }
    }

    /// Turns the task's answer into a step result, emitting the result or error event.
    pub(super) fn settle_answer(&self, answer: Result<Output, sqlx::Error>) -> Result<Output, StepError> {
        match answer {
            Ok(output) => {
                self.emit_result(&output);
                Ok(output)
            }
            Err(sqlx::Error::Database(db)) => {
                if self.in_transaction.load(Ordering::SeqCst) {
                    self.aborted.store(true, Ordering::SeqCst);
                }
                let error = DbError {
                    sqlstate: db.code().map(|c| c.into_owned()).unwrap_or_default(),
                    message: db.message().to_owned(),
                };
                self.emit(EventKind::Error {
                    actor: self.name.clone(),
                    sqlstate: Some(error.sqlstate.clone()),
                    message: error.message.clone(),
                });
                Err(StepError::Db(error))
            }
            Err(other) => {
                let error = self.lost(&other.to_string());
                self.emit(EventKind::Error {
                    actor: self.name.clone(),
                    sqlstate: None,
                    message: error.to_string(),
                });
                Err(error)
            }
        }
    }

    fn emit_step(&self, sql: &str, params: &[Value]) {
        self.emit(EventKind::Step {
            actor: self.name.clone(),
            service: Service::Postgres,
            text: sql.to_owned(),
            params: params.to_vec(),
        });
    }

    fn emit_result(&self, output: &Output) {
        let rows = (!output.columns.is_empty()).then(|| Rows {
            columns: output.columns.clone(),
            rows: output.rows.clone(),
        });
        self.emit(EventKind::Result {
            actor: self.name.clone(),
            summary: output.tag.clone(),
            rows,
        });
    }

    pub(super) fn emit(&self, kind: EventKind) {
        if !self.quiet {
            self.run.emit(kind);
        }
    }
}

/// The actor's task: runs its mailbox's statements one at a time on its own connection, and
/// closes the connection when the handle is dropped.
async fn serve(mut conn: PgConnection, mut requests: mpsc::Receiver<Request>) {
    while let Some(request) = requests.recv().await {
        let answer = execute(&mut conn, &request.sql, &request.params).await;
        // The handle may be gone (a cancelled run); the answer then has nobody to go to.
        let _ = request.reply.send(answer);
    }
    let _ = sqlx::Connection::close(conn).await;
}

/// Runs one statement. Without parameters it goes over the simple query protocol (as psql and
/// the tutorials' BEGIN/COMMIT do); with parameters, as a prepared statement with bound values.
///
/// Boxed, with `Send` checked here where the lifetimes are concrete: sqlx's executor traits are
/// generic over lifetimes, and left unboxed they defeat the compiler's proof that the callers'
/// futures are `Send` (rust-lang/rust#102211).
pub(crate) fn execute<'a>(
    conn: &'a mut PgConnection,
    sql: &'a str,
    params: &'a [Value],
) -> BoxFuture<'a, Result<Output, sqlx::Error>> {
    Box::pin(async move {
        if params.is_empty() {
            collect(conn, sql, sql).await
        } else {
            collect(conn, sql, bind_all(sqlx::query(sql), params)).await
        }
    })
}

/// The column names `sql` would return, without running it: a snapshot of an empty table still
/// shows its header. Boxed like [`execute`].
pub(crate) fn describe_columns<'a>(
    conn: &'a mut PgConnection,
    sql: &'a str,
) -> BoxFuture<'a, Result<Vec<String>, sqlx::Error>> {
    Box::pin(async move {
        let described = conn.describe(sql).await?;
        Ok(described.columns().iter().map(|c| c.name().to_owned()).collect())
    })
}

fn bind_all<'q>(mut query: Query<'q, Postgres, PgArguments>, params: &'q [Value]) -> Query<'q, Postgres, PgArguments> {
    for param in params {
        query = match param {
            Value::Null => query.bind(None::<i64>),
            Value::Bool(b) => query.bind(*b),
            Value::Int(i) => query.bind(*i),
            Value::Float(x) => query.bind(*x),
            Value::Text(s) => query.bind(s.as_str()),
        };
    }
    query
}

async fn collect<'q, E>(conn: &mut PgConnection, sql: &str, query: E) -> Result<Output, sqlx::Error>
where
    E: sqlx::Execute<'q, Postgres> + 'q,
{
    let mut stream = conn.fetch_many(query);
    let mut columns = Vec::new();
    let mut rows = Vec::new();
    let mut affected = 0u64;
    while let Some(item) = stream.try_next().await? {
        match item {
            Either::Left(done) => affected += done.rows_affected(),
            Either::Right(row) => {
                if columns.is_empty() {
                    columns = row.columns().iter().map(|c| c.name().to_owned()).collect();
                }
                rows.push(decode_row(&row));
            }
        }
    }
    Ok(Output {
        tag: command_tag(sql, affected),
        columns,
        rows,
    })
}

/// The command tag PostgreSQL's psql would show: `SELECT 1`, `INSERT 0 1`, `UPDATE 0`, `COMMIT`.
pub fn command_tag(sql: &str, affected: u64) -> String {
    let verb = sql.split_whitespace().next().unwrap_or_default().to_ascii_uppercase();
    match verb.as_str() {
        "INSERT" => format!("INSERT 0 {affected}"),
        "SELECT" | "UPDATE" | "DELETE" | "WITH" | "MERGE" => format!("{verb} {affected}"),
        _ => verb,
    }
}

/// Decodes a row by its column types. Scenario queries only return integers, text and booleans;
/// any other type is shown by its type name rather than guessed at.
fn decode_row(row: &PgRow) -> Vec<Value> {
    (0..row.columns().len())
        .map(|i| {
            let type_name = row.columns()[i].type_info().name().to_owned();
            let value = match type_name.as_str() {
                "INT2" => row
                    .try_get::<Option<i16>, _>(i)
                    .map(|v| v.map(|v| Value::Int(v.into()))),
                "INT4" => row
                    .try_get::<Option<i32>, _>(i)
                    .map(|v| v.map(|v| Value::Int(v.into()))),
                "INT8" => row.try_get::<Option<i64>, _>(i).map(|v| v.map(Value::Int)),
                "BOOL" => row.try_get::<Option<bool>, _>(i).map(|v| v.map(Value::Bool)),
                "FLOAT4" => row
                    .try_get::<Option<f32>, _>(i)
                    .map(|v| v.map(|v| Value::Float(v.into()))),
                "FLOAT8" => row.try_get::<Option<f64>, _>(i).map(|v| v.map(Value::Float)),
                "TEXT" | "VARCHAR" | "NAME" | "BPCHAR" => {
                    row.try_get::<Option<String>, _>(i).map(|v| v.map(Value::Text))
                }
                _ => Ok(Some(Value::Text(format!("<{type_name}>")))),
            };
            match value {
                Ok(Some(v)) => v,
                Ok(None) => Value::Null,
                Err(e) => Value::Text(format!("<undecodable {type_name}: {e}>")),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_tags_follow_psql() {
        assert_eq!(command_tag("SELECT spent FROM teams", 1), "SELECT 1");
        assert_eq!(command_tag("insert into expenses values (1)", 1), "INSERT 0 1");
        assert_eq!(command_tag("UPDATE teams SET spent = 0", 0), "UPDATE 0");
        assert_eq!(command_tag("COMMIT", 0), "COMMIT");
        assert_eq!(command_tag("BEGIN ISOLATION LEVEL SERIALIZABLE", 0), "BEGIN");
    }

    #[test]
    fn levels_come_from_the_tutorials_variant_names() {
        assert_eq!(Level::from_variant("repeatable-read"), Some(Level::RepeatableRead));
        assert_eq!(Level::from_variant("atomic"), None);
        assert_eq!(Level::Serializable.sql(), "SERIALIZABLE");
    }
}
