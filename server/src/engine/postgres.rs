//! A PostgreSQL actor: one reader-named session (alice, bob, w07, relay) on its own connection.
//!
//! Why a dedicated connection and a task per actor: a pool would hand the same session to several
//! actors, which changes what PostgreSQL sees (locks, snapshots and session advisory locks belong
//! to sessions). And a step that waits for a lock must be *started* without being awaited, so the
//! choreography can go on with other actors while it waits: the actor's task owns the connection
//! and runs one statement at a time from its mailbox, and the handle gets the answer on a oneshot
//! channel.
//!
//! An actor at an isolation level is never in autocommit, like the tutorials' drivers: its first
//! statement opens a transaction (`BEGIN ISOLATION LEVEL …`), which stays open until
//! [`PgActor::commit`] or [`PgActor::rollback`]. The level belongs to the session, not the step.
//! An actor in [`Level::Autocommit`] commits every statement by itself (the outbox's cursor, the
//! idempotency claim, the fenced UPDATE), and opens a transaction only when asked
//! ([`PgActor::begin`]).

mod pending;

pub use pending::{POLL_EVERY, Pending, Settled};

use super::error::RunError;
use super::error::{DbError, StepError};
use super::lane::Lane;
use super::run::{Run, RunCore};
use super::sql::{Output, execute};
use shared::event::ErrorKind;
use shared::{EventKind, Service, Value};
use sqlx::postgres::PgConnection;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::{mpsc, oneshot};

/// How an actor's session runs its statements: in a transaction at an isolation level (as
/// PostgreSQL spells it), or in autocommit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    ReadCommitted,
    RepeatableRead,
    Serializable,
    /// Every statement commits by itself; [`PgActor::begin`] opens an explicit transaction
    /// (at READ COMMITTED, PostgreSQL's default).
    Autocommit,
}

impl Level {
    /// `READ COMMITTED`, `REPEATABLE READ`, `SERIALIZABLE`.
    pub fn sql(self) -> &'static str {
        match self {
            Level::ReadCommitted => "READ COMMITTED",
            Level::RepeatableRead => "REPEATABLE READ",
            Level::Serializable => "SERIALIZABLE",
            Level::Autocommit => "autocommit",
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

/// One statement for the actor's task to run.
pub(super) struct Request {
    sql: String,
    params: Vec<Value>,
    reply: oneshot::Sender<Result<Output, sqlx::Error>>,
}

/// The handle a scenario holds for one actor. Dropping it ends the actor's task, which, once its
/// statement in flight (if any) returns, resets the session (rolling back whatever it left open)
/// and gives it back to the run for its next actor or the next run (`engine::kept`), or closes
/// it in a child process; [`PgActor::close`] waits for that. A cancelled run does not wait: the
/// sandbox's cleanup terminates the backend.
pub struct PgActor {
    lane: Lane,
    level: Level,
    pid: i32,
    in_transaction: AtomicBool,
    /// A statement failed inside the open transaction: PostgreSQL will answer COMMIT with a
    /// rollback, and the events must say so.
    aborted: AtomicBool,
    mailbox: mpsc::Sender<Request>,
    task: tokio::task::JoinHandle<()>,
    /// The run whose monitor session sees this actor blocked; `None` in a child process, whose
    /// parent watches its sessions instead.
    monitor: Option<Arc<RunCore>>,
}

impl Run {
    /// Opens an actor: a dedicated session whose statements run at `level`.
    pub async fn actor(&self, name: &str, level: Level) -> Result<PgActor, RunError> {
        self.open_pg_actor(name, level, false).await
    }

    /// Opens a quiet actor (a load-test worker): no per-step events.
    pub async fn worker(&self, name: &str, level: Level) -> Result<PgActor, RunError> {
        self.open_pg_actor(name, level, true).await
    }

    /// Opens an actor in logical database `schema` (`notifier`) instead of the run's default.
    pub async fn actor_in(&self, name: &str, schema: &str, level: Level) -> Result<PgActor, RunError> {
        let conn = self.core().connect(name, Some(schema)).await?;
        let actor = PgActor::on_connection(self.lane(name, false), conn, level, Some(self.core().clone())).await?;
        self.core().name_session(actor.pid(), name);
        Ok(actor)
    }

    /// A connection pool for a server the run starts (the shop API, the card provider): up to
    /// `size` sessions, all named `racelab/<run>/<name>`, in logical database `schema` (the
    /// run's default when `None`). Count `size` in the scenario's budget.
    pub async fn pool(&self, name: &str, schema: Option<&str>, size: u32) -> Result<sqlx::PgPool, RunError> {
        let options = self.core().session_options(name, schema)?;
        self.core().close_spares();
        Ok(sqlx::postgres::PgPoolOptions::new()
            .max_connections(size)
            .acquire_timeout(std::time::Duration::from_secs(10))
            .connect_with(options)
            .await?)
    }

    async fn open_pg_actor(&self, name: &str, level: Level, quiet: bool) -> Result<PgActor, RunError> {
        let conn = self.core().connect(name, None).await?;
        let lane = self.lane(name, quiet);
        let actor = PgActor::on_connection(lane, conn, level, Some(self.core().clone())).await?;
        self.core().name_session(actor.pid(), name);
        Ok(actor)
    }
}

impl PgActor {
    /// Starts the task that owns `conn` (already named and configured) and returns the handle.
    pub async fn on_connection(
        lane: Lane,
        mut conn: PgConnection,
        level: Level,
        monitor: Option<Arc<RunCore>>,
    ) -> Result<Self, RunError> {
        let pid = execute(&mut conn, "SELECT pg_backend_pid()", &[]).await?.int()?;
        let pid = i32::try_from(pid).map_err(|_| RunError::Other(format!("odd backend pid {pid}")))?;
        let (mailbox, requests) = mpsc::channel(1);
        // A run's actor gives its session back to the run (`RunCore::take_back`) when done; a
        // child process's closes its own.
        let back = monitor.clone();
        if let Some(run) = &back {
            run.lend();
        }
        let task = tokio::spawn(serve(conn, requests, back));
        Ok(PgActor {
            lane,
            level,
            pid,
            in_transaction: AtomicBool::new(false),
            aborted: AtomicBool::new(false),
            mailbox,
            task,
            monitor,
        })
    }

    /// Ends the actor and waits until its session is back with the run (reset, spare for the
    /// next actor) or closed, so a run that opens new actors next (the load test's next
    /// strategy) never holds more connections than admitted.
    pub async fn close(self) {
        let PgActor { mailbox, task, .. } = self;
        drop(mailbox);
        let _ = task.await;
    }

    /// The reader's name for this actor.
    pub fn name(&self) -> &str {
        self.lane.name()
    }

    /// The actor's lane, for lines and events that are not statements.
    pub fn lane(&self) -> &Lane {
        &self.lane
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
        self.lane.say(message);
    }

    /// Runs one statement and waits for its result. Use [`PgActor::start`] for a statement that
    /// may wait for a lock.
    pub async fn query(&self, sql: &str, params: &[Value]) -> Result<Output, StepError> {
        self.start(sql, params).await?.finish().await
    }

    /// Runs one statement and prints its result as psql does (header, rule, rows, `(1 row)`, an
    /// empty line), or
    /// its command tag (`UPDATE 12`) when it returns no rows: the checks the tutorials run in a
    /// psql terminal, each printed line a transcript line of this lane.
    pub async fn psql(&self, sql: &str) -> Result<Output, StepError> {
        let output = self.query(sql, &[]).await?;
        if output.columns.is_empty() {
            self.lane.say_exactly(output.tag.clone());
        } else {
            for line in shared::psql::aligned(&output.columns, &output.rows) {
                self.lane.say_exactly(line);
            }
            // psql ends every table with an empty line.
            self.lane.say_exactly("");
        }
        Ok(output)
    }

    /// Starts one statement without waiting for it: the caller decides whether it should block
    /// ([`Pending::expect_blocked`]) or just [`Pending::finish`].
    pub async fn start(&self, sql: &str, params: &[Value]) -> Result<Pending<'_>, StepError> {
        self.lane.gate(Service::Postgres, sql).await;
        if self.level != Level::Autocommit && !self.in_transaction.swap(true, Ordering::SeqCst) {
            let begin = format!("BEGIN ISOLATION LEVEL {}", self.level.sql());
            self.emit_step(&begin, &[]);
            self.send(&begin, &[]).await?.finish().await?;
        }
        self.emit_step(sql, params);
        self.send(sql, params).await
    }

    /// Opens an explicit transaction on an autocommit actor (`BEGIN`), as psycopg's
    /// `conn.transaction()` does; it ends with [`PgActor::commit`] or [`PgActor::rollback`].
    /// On an actor at a level the transaction opens by itself, and this does nothing.
    pub async fn begin(&self) -> Result<(), StepError> {
        if self.level != Level::Autocommit || self.in_transaction.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.lane.gate(Service::Postgres, "BEGIN").await;
        self.emit_step("BEGIN", &[]);
        self.send("BEGIN", &[]).await?.finish().await?;
        self.in_transaction.store(true, Ordering::SeqCst);
        Ok(())
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
        self.lane.gate(Service::Postgres, sql).await;
        self.emit_step(sql, &[]);
        let answer = self.send(sql, &[]).await?.answer().await?;
        self.in_transaction.store(false, Ordering::SeqCst);
        let aborted = self.aborted.swap(false, Ordering::SeqCst);
        let actor = self.name().to_owned();
        match answer {
            Ok(_) if sql == "COMMIT" && !aborted => {
                self.lane.emit(EventKind::Commit { actor });
                Ok(())
            }
            Ok(_) => {
                self.lane.emit(EventKind::Rollback { actor });
                Ok(())
            }
            Err(error) => {
                let error = self.settle_answer(Err(error));
                self.lane.emit(EventKind::Rollback { actor });
                error.map(|_| ())
            }
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

    fn lost(&self, reason: &str) -> StepError {
        StepError::Lost {
            service: shared::Service::Postgres,
            actor: self.name().to_owned(),
            reason: reason.to_owned(),
        }
    }

    /// Turns the task's answer into a step result, emitting the result or error event.
    fn settle_answer(&self, answer: Result<Output, sqlx::Error>) -> Result<Output, StepError> {
        match answer {
            Ok(output) => {
                self.lane.result(output.tag.clone(), output.shown_rows(), None);
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
                self.lane
                    .error(ErrorKind::Database, Some(error.sqlstate.clone()), error.message.clone());
                Err(StepError::Db(error))
            }
            Err(other) => {
                let error = self.lost(&other.to_string());
                self.lane.error(ErrorKind::Connection, None, error.to_string());
                Err(error)
            }
        }
    }

    fn emit_step(&self, sql: &str, params: &[Value]) {
        self.lane.step(Service::Postgres, sql, params, None);
    }
}

/// The actor's task: runs its mailbox's statements one at a time on its own connection, and
/// when the handle is dropped gives the connection back to the run (`back`) or closes it.
async fn serve(mut conn: PgConnection, mut requests: mpsc::Receiver<Request>, back: Option<Arc<RunCore>>) {
    while let Some(request) = requests.recv().await {
        let answer = execute(&mut conn, &request.sql, &request.params).await;
        // The handle may be gone (a cancelled run); the answer then has nobody to go to.
        let _ = request.reply.send(answer);
    }
    match back {
        Some(run) => run.take_back(conn).await,
        None => {
            let _ = sqlx::Connection::close(conn).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_come_from_the_tutorials_variant_names() {
        assert_eq!(Level::from_variant("repeatable-read"), Some(Level::RepeatableRead));
        assert_eq!(Level::from_variant("atomic"), None);
        assert_eq!(Level::Serializable.sql(), "SERIALIZABLE");
        assert_eq!(Level::Autocommit.sql(), "autocommit");
    }
}
