//! A run: the context a scenario plays in.
//!
//! It knows the run's sandbox (its schemas, key prefix, topics, advisory-lock space), hands out
//! lanes, speaks transcript lines, takes ledger snapshots from its monitor connection, and in
//! step mode holds each step until the reader asks for the next. Each actor kind adds its own
//! constructor to [`Run`] in its own module ([`Run::actor`] for PostgreSQL, [`Run::redis`],
//! [`Run::http_client`], [`Run::process`], [`Run::producer`]…), so this file knows none of them.

use super::BoxFuture;
use super::error::RunError;
use super::events::EventSink;
use super::lane::{Lane, Stage};
use super::sql::{Output, application_name, execute};
use crate::sandbox::postgres::quote_ident;
use crate::sandbox::{Sandbox, Services, broker_name};
use shared::{EventKind, Ledger, Table, Value, Verdict};
use sqlx::ConnectOptions;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

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
    /// How many messages a reader may leave unread before it counts as gone: its run is
    /// cancelled and cleaned, and it is told why. The longest run sends about 220.
    pub reader_backlog: usize,
    /// How many runs may wait in line; a start past it is refused with "busy, try again in N s".
    pub max_queue: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            statement_timeout: Duration::from_secs(30),
            lock_timeout: Duration::from_secs(20),
            idle_in_transaction_timeout: Duration::from_secs(600),
            block_timeout: Duration::from_secs(5),
            max_duration: Duration::from_secs(900),
            reader_backlog: 1_024,
            max_queue: 500,
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

/// How the run reaches its services and starts its child processes.
#[derive(Clone)]
pub struct Reach {
    /// Actor sessions: the run's database with the limits set (no schema, no name yet).
    pub options: PgConnectOptions,
    /// racelab's pool, Redis and the brokers.
    pub services: Services,
    /// The `racelab` binary child-process actors are started from.
    pub actor_binary: PathBuf,
    /// The database URL a child process connects with (its options are set the same way).
    pub database_url: String,
}

/// What the run's actors share: its identity, sandbox, event sink, monitor connection and limits.
pub struct RunCore {
    pub(super) id: String,
    pub(super) sandbox: Sandbox,
    pub(super) reach: Reach,
    sink: Arc<EventSink>,
    gate: Option<Gate>,
    /// The run's own autocommit session: it polls for blocked actors and takes snapshots.
    monitor: tokio::sync::Mutex<PgConnection>,
    /// Backend pid → actor name, so `pg_blocking_pids` answers in the reader's words (child
    /// processes report theirs too).
    actors_by_pid: Mutex<HashMap<i32, String>>,
    /// `127.0.0.1:<port>` → the lane of the run's server listening there, so a request names
    /// where it goes.
    servers_by_addr: Mutex<HashMap<String, String>>,
    /// Sessions connected ahead, while the sandbox was made (see `Scenario::sessions_ahead`),
    /// by the name of the actor that will take each.
    ahead: Mutex<HashMap<String, PgConnection>>,
    pub(super) limits: Limits,
}

/// A run's sessions connected before it plays: its monitor, and those of actors that will ask
/// for one by name.
pub(super) struct Sessions {
    monitor: PgConnection,
    ahead: HashMap<String, PgConnection>,
}

/// A scenario's handle on its run. Cheap to clone; every clone is the same run.
#[derive(Clone)]
pub struct Run {
    core: Arc<RunCore>,
}

impl Stage for RunCore {
    fn emit(&self, kind: EventKind) {
        self.sink.emit(kind);
    }

    /// Each `next` plays exactly one step: one sent before this pause was announced (a double
    /// click) is dropped, not saved for later.
    fn gate<'a>(&'a self, actor: &'a str, step: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Some(gate) = &self.gate {
                let mut permits = gate.permits.lock().await;
                while permits.try_recv().is_ok() {}
                self.sink.emit(EventKind::Paused {
                    actor: actor.to_owned(),
                    step: step.to_owned(),
                });
                // A closed channel means the reader is gone; the supervisor is cancelling the run.
                let _ = permits.recv().await;
            }
        })
    }
}

impl RunCore {
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

    /// Remembers that lane `lane` serves HTTP at `addr` (`127.0.0.1:<port>`).
    pub(super) fn name_server(&self, addr: &str, lane: &str) {
        self.servers_by_addr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(addr.to_owned(), lane.to_owned());
    }

    /// The lane serving HTTP at `addr`, if it is one of the run's.
    pub(super) fn server_at(&self, addr: &str) -> Option<String> {
        self.servers_by_addr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(addr)
            .cloned()
    }

    /// Remembers whose session backend `pid` is.
    pub(super) fn name_session(&self, pid: i32, name: &str) {
        self.actors_by_pid
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(pid, name.to_owned());
    }

    /// The connection options of `who`'s session: named `racelab/<run>/<who>`, in logical
    /// database `schema` (the run's default schema when `None`), with the run's limits.
    pub(super) fn session_options(&self, who: &str, schema: Option<&str>) -> Result<PgConnectOptions, RunError> {
        session_options(&self.sandbox, &self.reach, who, schema)
    }

    /// Opens a connection for `who` (see [`RunCore::session_options`]), or hands over the one
    /// connected ahead for it. One connected ahead in the default schema is closed first if `who`
    /// wants another, so a run never holds more sessions than its budget says.
    pub(super) async fn connect(&self, who: &str, schema: Option<&str>) -> Result<PgConnection, RunError> {
        let ahead = self.ahead.lock().unwrap_or_else(|p| p.into_inner()).remove(who);
        match (ahead, schema) {
            (Some(conn), None) => return Ok(conn),
            (Some(conn), Some(_)) => {
                let _ = sqlx::Connection::close(conn).await;
            }
            (None, _) => {}
        }
        Ok(self.session_options(who, schema)?.connect().await?)
    }

    /// The schema of logical database `logical`.
    pub(super) fn schema(&self, logical: &str) -> Result<&str, RunError> {
        self.sandbox
            .schema(logical)
            .ok_or_else(|| RunError::Other(format!("this run has no database called {logical:?}")))
    }

    /// The run's event sink (child processes' events are put back on it).
    pub(super) fn sink(&self) -> &EventSink {
        &self.sink
    }
}

/// See [`RunCore::session_options`].
fn session_options(
    sandbox: &Sandbox,
    reach: &Reach,
    who: &str,
    schema: Option<&str>,
) -> Result<PgConnectOptions, RunError> {
    let schema = match schema {
        Some(logical) => sandbox
            .schema(logical)
            .ok_or_else(|| RunError::Other(format!("this run has no database called {logical:?}")))?,
        None => sandbox.default_schema().unwrap_or("public"),
    };
    Ok(reach
        .options
        .clone()
        .application_name(&application_name(&sandbox.run_id, who))
        .options([("search_path", quote_ident(schema).as_str())]))
}

impl Run {
    /// Connects the monitor session of the run whose sandbox is (or will be) `sandbox`, and the
    /// sessions of actors `ahead`, all at once: a session's name and search path need only the
    /// sandbox's names, so they may connect while the schema is still being made. An actor's
    /// session that fails to connect here is simply not ahead (its actor connects itself, and
    /// says why if that fails too). `reach.options` must already carry the limits.
    pub(super) async fn connect_sessions(
        sandbox: &Sandbox,
        reach: &Reach,
        ahead: &[String],
    ) -> Result<Sessions, RunError> {
        let connect = |who: &str| {
            let options = session_options(sandbox, reach, who, None);
            async move { Ok::<_, RunError>(options?.connect().await?) }
        };
        let (monitor, actors) = tokio::join!(
            connect("monitor"),
            futures_util::future::join_all(ahead.iter().map(|who| {
                let connecting = connect(who);
                async move { (who.clone(), connecting.await) }
            }))
        );
        Ok(Sessions {
            monitor: monitor?,
            ahead: actors
                .into_iter()
                .filter_map(|(who, conn)| conn.ok().map(|conn| (who, conn)))
                .collect(),
        })
    }

    /// Makes the run, with its sessions (see [`Run::connect_sessions`]).
    pub(super) fn open(
        sandbox: Sandbox,
        reach: Reach,
        sink: Arc<EventSink>,
        gate: Option<Gate>,
        limits: Limits,
        Sessions { monitor, ahead }: Sessions,
    ) -> Run {
        let core = RunCore {
            id: sandbox.run_id.clone(),
            sandbox,
            reach,
            sink,
            gate,
            monitor: tokio::sync::Mutex::new(monitor),
            actors_by_pid: Mutex::new(HashMap::new()),
            servers_by_addr: Mutex::new(HashMap::new()),
            ahead: Mutex::new(ahead),
            limits,
        };
        Run { core: Arc::new(core) }
    }

    pub(super) fn core(&self) -> &Arc<RunCore> {
        &self.core
    }

    /// The run id (in every namespace's name and every application_name).
    pub fn id(&self) -> &str {
        &self.core.id
    }

    /// The run's sandbox: its schemas, key prefix, topics.
    pub fn sandbox(&self) -> &Sandbox {
        &self.core.sandbox
    }

    /// A lane named `name` on this run's stream, for an actor kind or a server's handlers.
    pub fn lane(&self, name: &str, quiet: bool) -> Lane {
        Lane::new(name, self.core.clone(), quiet)
    }

    /// The schema of logical database `logical` (`payments`, `notifier`).
    pub fn schema(&self, logical: &str) -> Result<&str, RunError> {
        self.core.schema(logical)
    }

    /// The run's advisory-lock space: take the tutorial's lock 4200 as
    /// `pg_try_advisory_lock(<space>, 4200)`, and two runs never contend for it.
    pub fn lock_space(&self) -> i32 {
        self.core.sandbox.lock_space()
    }

    /// The run's topic for the tutorial's topic `logical`.
    pub fn topic(&self, logical: &str) -> Result<&str, RunError> {
        self.core
            .sandbox
            .topic(logical)
            .ok_or_else(|| RunError::Other(format!("this run has no topic called {logical:?}")))
    }

    /// Where the run's Redis is (`127.0.0.1:6379`), as redis-cli's prompt shows it.
    pub fn redis_address(&self) -> String {
        crate::health::host_port(&self.core.reach.services.redis_url, 6379)
    }

    /// The run's consumer-group id for the tutorial's group `logical` (`notifier`): removed with
    /// the sandbox.
    pub fn group(&self, logical: &str) -> String {
        broker_name(&self.core.id, logical)
    }

    /// Speaks a transcript line for `actor`: `[actor] message`.
    pub fn say(&self, actor: &str, message: impl AsRef<str>) {
        self.lane(actor, false).say(message);
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
    pub async fn check(&self, sql: &str, params: &[Value]) -> Result<Output, RunError> {
        let mut monitor = self.core.monitor.lock().await;
        Ok(execute(&mut monitor, sql, params).await?)
    }

    /// Takes a snapshot: each query becomes one table, its first `key_columns` columns
    /// identifying a row; a query with a `schema` reads that logical database.
    pub async fn snapshot(&self, tables: &[TableQuery]) -> Result<Ledger, RunError> {
        let mut ledger = Ledger::default();
        let mut monitor = self.core.monitor.lock().await;
        for query in tables {
            if !query.schema.is_empty() {
                let schema = quote_ident(self.core.schema(query.schema)?);
                execute(&mut monitor, &format!("SET search_path TO {schema}"), &[]).await?;
            }
            let output = execute(&mut monitor, query.sql, &[]).await;
            if !query.schema.is_empty() {
                execute(&mut monitor, "RESET search_path", &[]).await?;
            }
            let output = output?;
            ledger.tables.push(Table {
                name: query.name.to_owned(),
                columns: output.columns,
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
    /// The logical database it reads (`notifier`); empty for the run's default schema.
    pub schema: &'static str,
    pub sql: &'static str,
    pub key_columns: usize,
}
