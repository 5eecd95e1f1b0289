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
use super::kept::{KEPT_NAME, RESET_WITHIN, reset, take_on};
use super::lane::{Lane, Stage};
use super::sql::{Output, execute};
use crate::sandbox::postgres::quote_ident;
use crate::sandbox::{Sandbox, Services, application_name, broker_name};
use shared::{EventKind, Ledger, Service, Table, Value, Verdict};
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

impl Limits {
    /// Sandboxes older than this are left from a crash: no run lives that long.
    pub fn sweep_age(&self) -> Duration {
        self.max_duration + Duration::from_secs(60)
    }
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
            max_queue: 2_000,
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
    /// Actor sessions: the run's database with the limits set (no schema, no name yet). The
    /// same for every run, so a session connected with them can be kept for any other.
    pub options: PgConnectOptions,
    /// What this run's sessions set beyond `options` (step mode's longer waits): with `SET` as
    /// they take the run ([`take_on`]), at startup for its servers' pools.
    pub settings: Vec<(&'static str, String)>,
    /// racelab's pool, Redis and the brokers.
    pub services: Services,
    /// The `racelab` binary child-process actors are started from.
    pub actor_binary: PathBuf,
    /// The database URL a child process connects with (its options are set the same way).
    pub database_url: String,
    /// MariaDB sandboxes made ahead of demand, where the run may take one (it plays by itself).
    pub mariadb_shelf: Option<Arc<super::mariadb::Shelf>>,
    /// The sessions the run's budget gives it on MariaDB: its sandbox's user may hold as many
    /// at once (never fewer than a sandbox's default).
    pub mariadb_sessions: u32,
}

/// What the run's actors share: its identity, sandbox, event sink, monitor connection and limits.
pub struct RunCore {
    pub(super) id: String,
    pub(super) sandbox: Sandbox,
    pub(super) reach: Reach,
    sink: Arc<EventSink>,
    gate: Option<Gate>,
    /// The run's own autocommit session: it polls for blocked actors and takes snapshots. `None`
    /// once handed back ([`Run::hand_back`]).
    monitor: tokio::sync::Mutex<Option<PgConnection>>,
    /// Backend pid → actor name, so `pg_blocking_pids` answers in the reader's words (child
    /// processes report theirs too).
    actors_by_pid: Mutex<HashMap<i32, String>>,
    /// `127.0.0.1:<port>` → the lane of the run's server listening there, so a request names
    /// where it goes.
    servers_by_addr: Mutex<HashMap<String, String>>,
    /// Sessions connected ahead, while the sandbox was made (see `Scenario::sessions_ahead`),
    /// by the name of the actor that will take each.
    ahead: Mutex<HashMap<String, PgConnection>>,
    /// Reset sessions nobody holds: given back by actors of this run. The next actor to connect
    /// takes one before it forks a new backend; a pool or child process closes them first.
    spare: Mutex<Vec<PgConnection>>,
    /// Sessions lent to actors and not back yet.
    lent: tokio::sync::watch::Sender<usize>,
    /// Whether sessions are kept between runs: if not, an actor's session is closed when it is
    /// done, as before there were kept sessions. Cleared when the run is abandoned.
    keeps: std::sync::atomic::AtomicBool,
    /// The most sessions the run may hold (its budget and monitor): a session given back past
    /// it is closed, not spared.
    most: usize,
    pub(super) limits: Limits,
    /// Its sandbox on MariaDB, made when the run first plays there.
    pub(super) mariadb: super::mariadb::Place,
}

/// A run's sessions readied before it plays (kept ones first): its monitor, and those of actors
/// that will ask for one by name.
pub(super) struct Sessions {
    monitor: PgConnection,
    ahead: HashMap<String, PgConnection>,
    /// See [`RunCore::keeps`] and [`RunCore::most`].
    keeps: bool,
    most: usize,
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
    fn gate<'a>(&'a self, actor: &'a str, service: Service, step: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Some(gate) = &self.gate {
                let mut permits = gate.permits.lock().await;
                while permits.try_recv().is_ok() {}
                self.sink.emit(EventKind::Paused {
                    actor: actor.to_owned(),
                    service,
                    step: step.to_owned(),
                });
                // A closed channel means the reader is gone; the supervisor is cancelling the run.
                let _ = permits.recv().await;
            }
        })
    }
}

/// What lock backend `$1` waits on, in a reader's words, from `pg_locks` (one SQL expression):
/// a row another transaction changed or locked (PostgreSQL makes it wait for that transaction),
/// a row it queues for behind another waiter, a table, an advisory lock; NULL when it waits on
/// nothing. Tables by their own name: a run's schema is not the reader's business.
///
/// A spec's player asks it on the run's control connection, where a spec may have put operators
/// of its own first in the search path: every operator, function and type is named with its
/// schema (`CASE x WHEN` would look `=` up by the search path, so each arm says which).
pub const WAITS_ON: &str = "(SELECT CASE \
    WHEN l.locktype OPERATOR(pg_catalog.=) 'transactionid' \
      THEN 'a row lock (until its holder''s transaction ends)' \
    WHEN l.locktype OPERATOR(pg_catalog.=) 'tuple' THEN pg_catalog.concat('a row of ', c.relname) \
    WHEN l.locktype OPERATOR(pg_catalog.=) 'relation' \
      THEN pg_catalog.concat('table ', c.relname, ' (', l.mode, ')') \
    WHEN l.locktype OPERATOR(pg_catalog.=) 'advisory' THEN 'an advisory lock' \
    ELSE l.locktype END \
    FROM pg_catalog.pg_locks l LEFT JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) l.relation \
    WHERE l.pid OPERATOR(pg_catalog.=) $1::pg_catalog.int4 AND NOT l.granted LIMIT 1)";

impl RunCore {
    /// The actors (by name) that `pid` is waiting for right now (empty if it is not waiting),
    /// and what lock it waits on, in words ([`WAITS_ON`]).
    pub(super) async fn blockers(&self, pid: i32) -> Result<(Vec<String>, Option<String>), RunError> {
        let output = {
            let mut monitor = self.monitor().await?;
            execute(
                &mut monitor,
                &format!(
                    "SELECT pg_catalog.array_to_string(pg_catalog.pg_blocking_pids($1::pg_catalog.int4), ','), {WAITS_ON}"
                ),
                &[pid.into()],
            )
            .await?
        };
        let row = output.rows.first();
        let on = row
            .and_then(|row| row.get(1))
            .and_then(Value::as_text)
            .map(str::to_owned);
        let listed = row
            .and_then(|row| row.first())
            .and_then(Value::as_text)
            .unwrap_or_default()
            .to_owned();
        let pids: Vec<i32> = listed.split(',').filter_map(|p| p.parse().ok()).collect();
        let names = self.actors_by_pid.lock().unwrap_or_else(|p| p.into_inner());
        let by = pids
            .into_iter()
            .map(|p| {
                names
                    .get(&p)
                    .cloned()
                    .unwrap_or_else(|| format!("pid {p} (outside this run)"))
            })
            .collect();
        Ok((by, on))
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

    /// A session for `who` in logical database `schema` (the run's default when `None`): the
    /// one connected ahead for it, else a spare one, else a new one, named and placed by
    /// [`take_on`]. The caller lends it ([`RunCore::lend`]) or drops it.
    pub(super) async fn connect(&self, who: &str, schema: Option<&str>) -> Result<PgConnection, RunError> {
        let ahead = match (self.ahead.lock().unwrap_or_else(|p| p.into_inner()).remove(who), schema) {
            (Some(conn), None) => return Ok(conn),
            (held, _) => held,
        };
        let schema = match schema {
            Some(logical) => self.schema(logical)?,
            None => self.sandbox.default_schema().unwrap_or("public"),
        };
        let held = ahead.or_else(|| self.spare.lock().unwrap_or_else(|p| p.into_inner()).pop());
        session_for(&self.reach, held, &application_name(&self.id, who), schema).await
    }

    /// Counts a session as lent to an actor, until [`RunCore::take_back`].
    pub(super) fn lend(&self) {
        self.lent.send_modify(|n| *n += 1);
    }

    /// An actor is done with its session: reset, it is spare for the run's next actor and kept
    /// for the next run after that; one that cannot be reset, or one more than the run may hold
    /// (another actor connected while this one was being reset), is closed.
    pub(super) async fn take_back(&self, conn: PgConnection) {
        let held = 1
            + self.ahead.lock().unwrap_or_else(|p| p.into_inner()).len()
            + self.spare.lock().unwrap_or_else(|p| p.into_inner()).len()
            + *self.lent.borrow();
        if self.keeps.load(std::sync::atomic::Ordering::SeqCst) && held <= self.most {
            if let Some(conn) = reset(conn).await {
                self.spare.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
            }
        } else {
            let _ = sqlx::Connection::close(conn).await;
        }
        self.lent.send_modify(|n| *n = n.saturating_sub(1));
    }

    /// Closes the spare sessions: the run is about to open sessions of another kind (a server's
    /// pool, a child process), which its budget counts as new.
    pub(super) fn close_spares(&self) {
        self.spare.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// The monitor session, while the run has it.
    async fn monitor(&self) -> Result<tokio::sync::MappedMutexGuard<'_, PgConnection>, RunError> {
        tokio::sync::MutexGuard::try_map(self.monitor.lock().await, Option::as_mut)
            .map_err(|_| RunError::Other("the run is over: its monitor session was handed back".into()))
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
        .options([("search_path", quote_ident(schema).as_str())])
        .options(reach.settings.iter().map(|(setting, value)| (*setting, value.as_str()))))
}

/// `held` (kept, spare or connected ahead) or else a new session, named `name` and placed in
/// `schema` with the run's settings. A held session that fails to take them (its backend went
/// with a PostgreSQL restart) is dropped for a new one.
async fn session_for(
    reach: &Reach,
    held: Option<PgConnection>,
    name: &str,
    schema: &str,
) -> Result<PgConnection, RunError> {
    if let Some(mut conn) = held
        && take_on(&mut conn, name, schema, &reach.settings).await.is_ok()
    {
        return Ok(conn);
    }
    // Connected under no run's name, so that once reset it can be kept for any run.
    let mut conn = reach.options.clone().application_name(KEPT_NAME).connect().await?;
    take_on(&mut conn, name, schema, &reach.settings).await?;
    Ok(conn)
}

impl Run {
    /// Readies the monitor session of the run whose sandbox is (or will be) `sandbox`, and the
    /// sessions of actors `ahead`, all at once, from `kept` sessions first: a session's name and
    /// search path need only the sandbox's names, so they may connect while the schema is still
    /// being made. An actor's session that fails here is simply not ahead (its actor connects
    /// itself, and says why if that fails too). Kept sessions left over are closed (the run's
    /// pools and child processes connect their own). `keeps` and `most`: see
    /// [`RunCore::keeps`] and [`RunCore::most`].
    pub(super) async fn connect_sessions(
        sandbox: &Sandbox,
        reach: &Reach,
        ahead: &[String],
        kept: Vec<PgConnection>,
        (keeps, most): (bool, usize),
    ) -> Result<Sessions, RunError> {
        let schema = sandbox.default_schema().unwrap_or("public");
        let mut kept = kept.into_iter();
        let mut session = |who: &str| {
            let held = kept.next();
            let name = application_name(&sandbox.run_id, who);
            async move { session_for(reach, held, &name, schema).await }
        };
        let monitor = session("monitor");
        let actors: Vec<_> = ahead
            .iter()
            .map(|who| {
                let readying = session(who);
                async move { (who.clone(), readying.await) }
            })
            .collect();
        let left_over: Vec<_> = kept.collect();
        let (monitor, actors, _) = tokio::join!(
            monitor,
            futures_util::future::join_all(actors),
            futures_util::future::join_all(left_over.into_iter().map(sqlx::Connection::close))
        );
        Ok(Sessions {
            monitor: monitor?,
            ahead: actors
                .into_iter()
                .filter_map(|(who, conn)| conn.ok().map(|conn| (who, conn)))
                .collect(),
            keeps,
            most,
        })
    }

    /// The run will not complete (cancelled, failed, too long): from now on its actors'
    /// sessions are closed when they are done, and its spares go now. Whatever is named for
    /// the run is then the sandbox cleanup's to end.
    pub(super) fn abandon(&self) {
        self.core.keeps.store(false, std::sync::atomic::Ordering::SeqCst);
        self.core.close_spares();
    }

    /// The run's sessions, reset, for the next run ([`super::kept`]): its monitor, those
    /// connected ahead and never taken, and those its actors gave back (waited for a moment:
    /// an actor's handle dropped as the scenario ended gives its session back on its own task).
    /// Only for a run that completed: a cancelled one may have statements in flight.
    pub(super) async fn hand_back(&self) -> Vec<PgConnection> {
        let core = &self.core;
        let mut lent = core.lent.subscribe();
        let back_within = RESET_WITHIN + Duration::from_millis(100);
        let _ = tokio::time::timeout(back_within, lent.wait_for(|n| *n == 0)).await;
        let monitor = core.monitor.lock().await.take();
        let ahead: Vec<_> = core
            .ahead
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .map(|(_, conn)| conn)
            .collect();
        let named = futures_util::future::join_all(monitor.into_iter().chain(ahead).map(reset)).await;
        let mut sessions = std::mem::take(&mut *core.spare.lock().unwrap_or_else(|p| p.into_inner()));
        sessions.extend(named.into_iter().flatten());
        sessions
    }

    /// Makes the run, with its sessions (see [`Run::connect_sessions`]).
    pub(super) fn open(
        sandbox: Sandbox,
        reach: Reach,
        sink: Arc<EventSink>,
        gate: Option<Gate>,
        limits: Limits,
        Sessions {
            monitor,
            ahead,
            keeps,
            most,
        }: Sessions,
    ) -> Run {
        let core = RunCore {
            id: sandbox.run_id.clone(),
            sandbox,
            reach,
            sink,
            gate,
            monitor: tokio::sync::Mutex::new(Some(monitor)),
            actors_by_pid: Mutex::new(HashMap::new()),
            servers_by_addr: Mutex::new(HashMap::new()),
            ahead: Mutex::new(ahead),
            spare: Mutex::new(Vec::new()),
            lent: tokio::sync::watch::Sender::new(0),
            keeps: std::sync::atomic::AtomicBool::new(keeps),
            most,
            limits,
            mariadb: Default::default(),
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

    /// The database URL racelab was given (a reader's spec makes its own sandbox from it).
    pub fn database_url(&self) -> &str {
        &self.core.reach.database_url
    }

    /// Where MariaDB is (`MARIADB_URL`).
    pub fn mariadb_url(&self) -> &str {
        &self.core.reach.services.mariadb_url
    }

    /// The sessions the run may hold on MariaDB at once ([`Reach::mariadb_sessions`]).
    pub(super) fn mariadb_sessions(&self) -> u32 {
        self.core.reach.mariadb_sessions
    }

    /// MariaDB sandboxes made ahead, if the run may take one.
    pub(super) fn mariadb_shelf(&self) -> Option<Arc<super::mariadb::Shelf>> {
        self.core.reach.mariadb_shelf.clone()
    }

    /// The limits the run is held to.
    pub fn limits(&self) -> &Limits {
        &self.core.limits
    }

    /// Whether the run plays a step at a time (each step waits for the reader's `next`).
    pub fn is_stepped(&self) -> bool {
        self.core.gate.is_some()
    }

    /// Ends the run's sessions on MariaDB and removes its sandbox there, if it was made; a run
    /// that `completed` and took from the shelf gives it back, reset, instead.
    pub(super) async fn close_mariadb(&self, completed: bool) {
        self.core.mariadb.close(completed, self.mariadb_shelf()).await;
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
        let mut monitor = self.core.monitor().await?;
        execute(&mut monitor, sql, &[]).await?;
        Ok(())
    }

    /// One query on the monitor session (a final check, like the tutorials' `check` connection).
    pub async fn check(&self, sql: &str, params: &[Value]) -> Result<Output, RunError> {
        let mut monitor = self.core.monitor().await?;
        Ok(execute(&mut monitor, sql, params).await?)
    }

    /// Takes a snapshot: each query becomes one table, its first `key_columns` columns
    /// identifying a row; a query with a `schema` reads that logical database.
    pub async fn snapshot(&self, tables: &[TableQuery]) -> Result<Ledger, RunError> {
        let mut ledger = Ledger::default();
        let mut monitor = self.core.monitor().await?;
        // Set back explicitly: RESET would give a kept session's search path, not the run's.
        let default = quote_ident(self.core.sandbox.default_schema().unwrap_or("public"));
        for query in tables {
            if !query.schema.is_empty() {
                let schema = quote_ident(self.core.schema(query.schema)?);
                execute(&mut monitor, &format!("SET search_path TO {schema}"), &[]).await?;
            }
            let output = execute(&mut monitor, query.sql, &[]).await;
            if !query.schema.is_empty() {
                execute(&mut monitor, &format!("SET search_path TO {default}"), &[]).await?;
            }
            ledger.tables.push(query.table(output?));
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

impl TableQuery {
    /// What its query returned, as the ledger's table.
    pub fn table(&self, output: Output) -> Table {
        Table {
            name: self.name.to_owned(),
            columns: output.columns,
            key_columns: self.key_columns,
            rows: output.rows,
        }
    }
}
