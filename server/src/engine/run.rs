//! A run: the context a scenario plays in.
//!
//! It opens actors (each on its own connection, named `racelab/<run>/<actor>` so anyone can watch
//! a run in `pg_stat_activity`), speaks transcript lines, takes ledger snapshots from its monitor
//! connection, and in step mode holds each step until the reader asks for the next.

use super::actor::{Level, PgActor, describe_columns, execute};
use super::error::RunError;
use super::events::EventSink;
use shared::{EventKind, Ledger, Table, Value, Verdict};
use sqlx::ConnectOptions;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// The `application_name` of `who`'s session in run `run_id` (`racelab/3fa9c0e1b2d4/bob`): how
/// anyone watching `pg_stat_activity` tells whose it is, and how cleanup finds a run's sessions.
pub fn application_name(run_id: &str, who: &str) -> String {
    format!("racelab/{run_id}/{who}")
}

/// Limits every run connection is held to. Defaults are generous enough for every tutorial step
/// (the longest lock wait is the load test's row lock, about a second) and short enough that a
/// forgotten session cannot hold locks for long.
#[derive(Clone, Debug)]
pub struct Limits {
    pub statement_timeout: Duration,
    pub lock_timeout: Duration,
    /// Long, because in step mode a reader may think for minutes between two steps.
    pub idle_in_transaction_timeout: Duration,
    /// How long a step that should block may take to be seen blocked.
    pub block_timeout: Duration,
    /// The longest a run may last, step mode included.
    pub max_duration: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            statement_timeout: Duration::from_secs(30),
            lock_timeout: Duration::from_secs(20),
            idle_in_transaction_timeout: Duration::from_secs(600),
            block_timeout: Duration::from_secs(5),
            max_duration: Duration::from_secs(900),
        }
    }
}

/// Holds each step in step mode until the reader sends `next`.
pub(super) struct Gate {
    permits: tokio::sync::Mutex<mpsc::UnboundedReceiver<()>>,
}

impl Gate {
    pub(super) fn new(permits: mpsc::UnboundedReceiver<()>) -> Self {
        Gate {
            permits: tokio::sync::Mutex::new(permits),
        }
    }
}

/// What the run's actors share: its identity, event sink, monitor connection and limits.
pub struct RunCore {
    pub(super) id: String,
    options: PgConnectOptions,
    sink: Arc<EventSink>,
    gate: Option<Gate>,
    /// The run's own autocommit session: it polls for blocked actors and takes snapshots.
    monitor: tokio::sync::Mutex<PgConnection>,
    /// Backend pid → actor name, so `pg_blocking_pids` answers in the reader's words.
    actors_by_pid: Mutex<HashMap<i32, String>>,
    pub(super) limits: Limits,
}

/// A scenario's handle on its run. Cheap to clone; every clone is the same run.
#[derive(Clone)]
pub struct Run {
    core: Arc<RunCore>,
}

impl RunCore {
    pub(super) fn emit(&self, kind: EventKind) {
        self.sink.emit(kind);
    }

    /// In step mode, announces whose step is next and waits for the reader's `next`.
    /// Each `next` plays exactly one step: one sent before this pause was announced (a double
    /// click) is dropped, not saved for later.
    pub(super) async fn gate(&self, actor: &str, step: &str) {
        if let Some(gate) = &self.gate {
            let mut permits = gate.permits.lock().await;
            while permits.try_recv().is_ok() {}
            self.emit(EventKind::Paused {
                actor: actor.to_owned(),
                step: step.to_owned(),
            });
            // A closed channel means the reader is gone; the supervisor is cancelling the run.
            let _ = permits.recv().await;
        }
    }

    /// The actors (by name) that `pid` is waiting for right now; empty if it is not waiting.
    pub(super) async fn blockers(&self, pid: i32) -> Result<Vec<String>, RunError> {
        let output = {
            let mut monitor = self.monitor.lock().await;
            execute(
                &mut monitor,
                "SELECT array_to_string(pg_blocking_pids($1::int), ',')",
                &[pid.into()],
            )
            .await?
        };
        let listed = output
            .rows
            .first()
            .and_then(|row| row.first())
            .and_then(Value::as_text)
            .unwrap_or_default()
            .to_owned();
        let pids: Vec<i32> = listed.split(',').filter_map(|p| p.parse().ok()).collect();
        let names = self.actors_by_pid.lock().unwrap_or_else(|p| p.into_inner());
        Ok(pids
            .into_iter()
            .map(|p| {
                names
                    .get(&p)
                    .cloned()
                    .unwrap_or_else(|| format!("pid {p} (outside this run)"))
            })
            .collect())
    }

    /// Opens a connection for `who` in this run's sandbox, with the run's limits.
    async fn connect(&self, who: &str) -> Result<PgConnection, RunError> {
        Ok(self
            .options
            .clone()
            .application_name(&application_name(&self.id, who))
            .connect()
            .await?)
    }
}

impl Run {
    /// Connects the monitor and makes the run. `options` must already point at the run's
    /// database, with the sandbox's `search_path` and the limits set (see `Engine`).
    pub(super) async fn open(
        id: String,
        options: PgConnectOptions,
        sink: Arc<EventSink>,
        gate: Option<Gate>,
        limits: Limits,
    ) -> Result<Run, RunError> {
        let monitor = options
            .clone()
            .application_name(&application_name(&id, "monitor"))
            .connect()
            .await?;
        let core = RunCore {
            id,
            options,
            sink,
            gate,
            monitor: tokio::sync::Mutex::new(monitor),
            actors_by_pid: Mutex::new(HashMap::new()),
            limits,
        };
        Ok(Run { core: Arc::new(core) })
    }

    /// The run id (also in the schema name and every application_name).
    pub fn id(&self) -> &str {
        &self.core.id
    }

    /// Opens an actor: a dedicated session whose transactions run at `level`.
    pub async fn actor(&self, name: &str, level: Level) -> Result<PgActor, RunError> {
        self.open_actor(name, level, false).await
    }

    /// Opens a quiet actor (a load-test worker): no per-step events.
    pub async fn worker(&self, name: &str, level: Level) -> Result<PgActor, RunError> {
        self.open_actor(name, level, true).await
    }

    async fn open_actor(&self, name: &str, level: Level, quiet: bool) -> Result<PgActor, RunError> {
        let mut conn = self.core.connect(name).await?;
        let pid = execute(&mut conn, "SELECT pg_backend_pid()", &[]).await?.int()?;
        let pid = i32::try_from(pid).map_err(|_| RunError::Other(format!("odd backend pid {pid}")))?;
        self.core
            .actors_by_pid
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(pid, name.to_owned());
        Ok(PgActor::spawn(self.core.clone(), conn, name, level, pid, quiet))
    }

    /// Speaks a transcript line for `actor`: `[actor] message`.
    pub fn say(&self, actor: &str, message: impl AsRef<str>) {
        self.core.emit(EventKind::Say {
            actor: Some(actor.to_owned()),
            line: format!("[{actor}] {}", message.as_ref()),
        });
    }

    /// Speaks a transcript line that belongs to no actor (headers, final lines, summaries).
    pub fn say_plain(&self, line: impl Into<String>) {
        self.core.emit(EventKind::Say {
            actor: None,
            line: line.into(),
        });
    }

    /// Emits any event (ledgers, verdicts, progress).
    pub fn emit(&self, kind: EventKind) {
        self.core.emit(kind);
    }

    /// Emits the verdict.
    pub fn verdict(&self, verdict: Verdict) {
        self.emit(EventKind::Verdict { verdict });
    }

    /// Runs housekeeping SQL outside any actor (resetting between load-test strategies, adding
    /// a second team): on the monitor session, in autocommit, not shown on the timeline.
    pub async fn setup(&self, sql: &str) -> Result<(), RunError> {
        let mut monitor = self.core.monitor.lock().await;
        execute(&mut monitor, sql, &[]).await?;
        Ok(())
    }

    /// One query on the monitor session (a final check, like the tutorials' `check` connection).
    pub async fn check(&self, sql: &str, params: &[Value]) -> Result<super::Output, RunError> {
        let mut monitor = self.core.monitor.lock().await;
        Ok(execute(&mut monitor, sql, params).await?)
    }

    /// Takes a snapshot: each named query becomes one table, its first `key_columns` columns
    /// identifying a row.
    pub async fn snapshot(&self, tables: &[TableQuery]) -> Result<Ledger, RunError> {
        let mut ledger = Ledger::default();
        for query in tables {
            let output = self.check(query.sql, &[]).await?;
            let columns = if output.columns.is_empty() {
                let mut monitor = self.core.monitor.lock().await;
                describe_columns(&mut monitor, query.sql).await?
            } else {
                output.columns
            };
            ledger.tables.push(Table {
                name: query.name.to_owned(),
                columns,
                key_columns: query.key_columns,
                rows: output.rows,
            });
        }
        Ok(ledger)
    }
}

/// One table of a ledger snapshot, as a query on the run's sandbox.
pub struct TableQuery {
    pub name: &'static str,
    pub sql: &'static str,
    pub key_columns: usize,
}
