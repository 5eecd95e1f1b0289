//! Child-process actors, the child's side: what runs inside `racelab actor <kind>`.
//!
//! The child rebuilds its part of the run from its environment (see [`super::process::env`]):
//! the run id, its lane's name, the sandbox, the session limits, its kind's arguments. Its lane
//! writes every event as a [`ChildMsg`] line on stdout for the parent to put on the run's
//! stream; its PostgreSQL sessions are named `racelab/<run>/<lane>` like every other actor's and
//! report their pid, so the parent's monitor sees them blocked. At a crash point it tells the
//! parent and waits to be killed. On SIGTERM it drops its work, so what it holds lets go
//! politely (a consumer leaves its group), and exits 0. If its stdin closes (the parent is gone),
//! it exits at once. A child that serves HTTP says on which port ([`ChildContext::listening`]).
//!
//! A kind is a [`ChildKind`]: a name and an async function of a [`ChildContext`]. Labs register
//! theirs (the relay, the notifier, the shop API) in `labs::CHILD_KINDS`; the engine brings one
//! of its own, [`SQL_SCRIPT`], a list of statements with crash points between them.

use super::BoxFuture;
use super::error::RunError;
use super::lane::{Lane, Stage};
use super::postgres::{Level, PgActor};
use super::process::{ChildMsg, env};
use crate::sandbox::Sandbox;
use crate::sandbox::application_name;
use serde::Deserialize;
use shared::{EventKind, Service};
use sqlx::ConnectOptions;
use sqlx::postgres::PgConnectOptions;
use std::io::Write;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;

/// A kind of child-process actor.
pub struct ChildKind {
    /// `sql-script`, `relay`, `notifier`, `shop-api`.
    pub name: &'static str,
    pub run: for<'a> fn(&'a ChildContext) -> BoxFuture<'a, Result<(), RunError>>,
}

/// The child's stage: stdout for its events, stdin for the step gate's answers.
struct Pipes {
    stdout: Mutex<std::io::Stdout>,
    /// Lines from stdin, one per `next` the parent let through.
    go: tokio::sync::Mutex<mpsc::UnboundedReceiver<()>>,
}

impl Pipes {
    fn send(&self, msg: &ChildMsg) {
        let Ok(line) = serde_json::to_string(msg) else { return };
        let mut out = self.stdout.lock().unwrap_or_else(|p| p.into_inner());
        // A broken pipe means the parent is gone; the stdin watcher ends the process.
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    }
}

impl Stage for Pipes {
    fn emit(&self, kind: EventKind) {
        self.send(&ChildMsg::Event { event: kind });
    }

    fn gate<'a>(&'a self, _actor: &'a str, service: Service, step: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let mut go = self.go.lock().await;
            self.send(&ChildMsg::Gate {
                service,
                step: step.to_owned(),
            });
            let _ = go.recv().await;
        })
    }
}

/// Everything a child kind needs.
pub struct ChildContext {
    pub run_id: String,
    pub lane: Lane,
    pub sandbox: Sandbox,
    /// The kind's own arguments.
    pub args: serde_json::Value,
    /// `REDIS_URL` and `KAFKA_BROKERS`, as the parent had them.
    pub redis_url: String,
    pub brokers: String,
    options: PgConnectOptions,
    pipes: Arc<Pipes>,
}

/// Why a child could not start.
#[derive(Debug, thiserror::Error)]
#[error("racelab actor: {0}")]
pub struct ChildSetupError(String);

impl ChildContext {
    /// Reads the context from the environment the parent set, and starts watching stdin.
    pub fn from_env() -> Result<ChildContext, ChildSetupError> {
        let var = |name: &str| std::env::var(name).map_err(|_| ChildSetupError(format!("{name} is not set")));
        let run_id = var(env::RUN)?;
        let lane_name = var(env::LANE)?;
        let sandbox: Sandbox = serde_json::from_str(&var(env::SANDBOX)?)
            .map_err(|e| ChildSetupError(format!("{} is not a sandbox: {e}", env::SANDBOX)))?;
        let args = serde_json::from_str(&var(env::ARGS)?)
            .map_err(|e| ChildSetupError(format!("{} is not JSON: {e}", env::ARGS)))?;
        let url = var(env::DATABASE_URL)?;
        let mut options =
            PgConnectOptions::from_str(&url).map_err(|e| ChildSetupError(format!("bad database URL: {e}")))?;
        for pair in var(env::PG_OPTIONS).unwrap_or_default().split_whitespace() {
            if let Some((name, value)) = pair.split_once('=') {
                options = options.options([(name, value)]);
            }
        }
        let (go_tx, go_rx) = mpsc::unbounded_channel();
        tokio::spawn(watch_stdin(go_tx));
        let pipes = Arc::new(Pipes {
            stdout: Mutex::new(std::io::stdout()),
            go: tokio::sync::Mutex::new(go_rx),
        });
        Ok(ChildContext {
            lane: Lane::new(&lane_name, pipes.clone(), false),
            run_id,
            sandbox,
            args,
            redis_url: std::env::var(env::REDIS_URL).unwrap_or_default(),
            brokers: std::env::var(env::KAFKA_BROKERS).unwrap_or_default(),
            options,
            pipes,
        })
    }

    /// Opens this child's PostgreSQL session at `level`, in logical database `schema` (the run's
    /// default when `None`), named like every actor's and reported to the parent.
    pub async fn session(&self, schema: Option<&str>, level: Level) -> Result<PgActor, RunError> {
        self.open_session(schema, level, self.lane.clone()).await
    }

    /// As [`ChildContext::session`], on a quiet lane: its statements are not drawn one by one
    /// (a relay polling an empty outbox twice a second), and the kind shows what matters itself.
    pub async fn quiet_session(&self, schema: Option<&str>, level: Level) -> Result<PgActor, RunError> {
        let quiet = Lane::new(self.lane.name(), self.pipes.clone(), true);
        self.open_session(schema, level, quiet).await
    }

    async fn open_session(&self, schema: Option<&str>, level: Level, lane: Lane) -> Result<PgActor, RunError> {
        let schema = match schema {
            Some(logical) => self
                .sandbox
                .schema(logical)
                .ok_or_else(|| RunError::Other(format!("no database called {logical:?}")))?,
            None => self.sandbox.default_schema().unwrap_or("public"),
        };
        let conn = self
            .options
            .clone()
            .application_name(&application_name(&self.run_id, self.lane.name()))
            .options([("search_path", crate::sandbox::postgres::quote_ident(schema).as_str())])
            .connect()
            .await?;
        let actor = PgActor::on_connection(lane, conn, level, None).await?;
        self.pipes.send(&ChildMsg::Session { pid: actor.pid() });
        Ok(actor)
    }

    /// The run's advisory-lock space (see [`crate::sandbox::lock_space`]).
    pub fn lock_space(&self) -> i32 {
        self.sandbox.lock_space()
    }

    /// A pool of at most `size` sessions in logical database `schema`, for a server this child
    /// runs (the shop API): named like every session of the run.
    pub async fn pool(&self, schema: &str, size: u32) -> Result<sqlx::PgPool, RunError> {
        let schema = self
            .sandbox
            .schema(schema)
            .ok_or_else(|| RunError::Other(format!("no database called {schema:?}")))?;
        let options = self
            .options
            .clone()
            .application_name(&application_name(&self.run_id, self.lane.name()))
            .options([("search_path", crate::sandbox::postgres::quote_ident(schema).as_str())]);
        Ok(sqlx::postgres::PgPoolOptions::new()
            .max_connections(size)
            .acquire_timeout(std::time::Duration::from_secs(10))
            .connect_with(options)
            .await?)
    }

    /// Reaches crash point `point`: tells the parent, which kills this process with SIGKILL.
    /// Never returns: the process waits here for its death.
    pub async fn crash_point(&self, point: &str) {
        self.crasher().reach(point).await;
    }

    /// A handle for reaching crash points from tasks this child spawns (a request handler).
    pub fn crasher(&self) -> Crasher {
        Crasher(self.pipes.clone())
    }

    /// Tells the parent this child serves HTTP on loopback port `port`.
    pub fn listening(&self, port: u16) {
        self.pipes.send(&ChildMsg::Listening { port });
    }
}

/// Reaches a crash point from anywhere in the child (see [`ChildContext::crasher`]).
#[derive(Clone)]
pub struct Crasher(Arc<Pipes>);

impl Crasher {
    /// Tells the parent, which kills this process with SIGKILL; never returns.
    pub async fn reach(&self, point: &str) {
        self.0.send(&ChildMsg::CrashPoint {
            point: point.to_owned(),
        });
        std::future::pending::<()>().await;
    }
}

/// Turns stdin's lines into gate permits, and ends the process when stdin closes: the parent is
/// gone, and an actor must never outlive its run.
async fn watch_stdin(go: mpsc::UnboundedSender<()>) {
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(_)) = lines.next_line().await {
        let _ = go.send(());
    }
    std::process::exit(3);
}

/// Runs `kind` in this process (the `racelab actor` subcommand), and exits. An error becomes an
/// error event on the lane and a non-zero exit. The exit is explicit: the stdin watcher is a
/// blocking read that would otherwise keep the runtime, and the process, alive.
pub async fn main(kinds: &[&ChildKind], kind: &str) -> std::process::ExitCode {
    let code = run_kind(kinds, kind).await;
    let _ = std::io::stdout().flush();
    std::process::exit(code)
}

async fn run_kind(kinds: &[&ChildKind], kind: &str) -> i32 {
    let context = match ChildContext::from_env() {
        Ok(context) => context,
        Err(error) => {
            eprintln!("{error}");
            return 2;
        }
    };
    let Some(found) = kinds.iter().find(|k| k.name == kind) else {
        let known: Vec<&str> = kinds.iter().map(|k| k.name).collect();
        eprintln!("racelab actor: unknown kind {kind:?}; known: {}", known.join(", "));
        return 2;
    };
    // SIGTERM (the parent's `stop`, or `docker stop`) ends the kind's work by dropping it, so
    // what it holds lets go the polite way: a consumer leaves its group, a server closes.
    let Ok(mut terminated) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else {
        eprintln!("racelab actor: cannot watch for SIGTERM");
        return 2;
    };
    let ended = tokio::select! {
        ended = (found.run)(&context) => ended,
        _ = terminated.recv() => return 0,
    };
    match ended {
        Ok(()) => 0,
        Err(error) => {
            context
                .lane
                .error(shared::event::ErrorKind::Connection, None, error.to_string());
            eprintln!("racelab actor {kind}: {error}");
            1
        }
    }
}

/// The arguments of [`SQL_SCRIPT`].
#[derive(Debug, Deserialize)]
struct Script {
    /// Statements in order. `BEGIN` and `COMMIT` open and end a transaction; `crash:<point>`
    /// is a crash point; `say:<line>` a transcript line; `sleep:<ms>` waits with the session
    /// idle (in its transaction, if one is open). `{lock_space}` is replaced by the run's
    /// advisory-lock space.
    steps: Vec<String>,
    /// Which logical database the session uses (the run's default when absent).
    #[serde(default)]
    schema: Option<String>,
}

/// A child kind that plays a list of statements on one autocommit session: the smallest real
/// process that can hold a transaction, an advisory lock and a crash point (and what trainers'
/// own scenarios will use).
pub static SQL_SCRIPT: ChildKind = ChildKind {
    name: "sql-script",
    run: |context| Box::pin(sql_script(context)),
};

async fn sql_script(context: &ChildContext) -> Result<(), RunError> {
    let script: Script = serde_json::from_value(context.args.clone())
        .map_err(|e| RunError::Other(format!("sql-script arguments: {e}")))?;
    let session = context.session(script.schema.as_deref(), Level::Autocommit).await?;
    for step in &script.steps {
        let step = step.replace("{lock_space}", &context.lock_space().to_string());
        if let Some(point) = step.strip_prefix("crash:") {
            context.crash_point(point).await;
        } else if let Some(line) = step.strip_prefix("say:") {
            context.lane.say(line);
        } else if let Some(ms) = step.strip_prefix("sleep:") {
            let ms = ms
                .parse()
                .map_err(|_| RunError::Other(format!("sql-script: {step:?} is not a number of milliseconds")))?;
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        } else if step.eq_ignore_ascii_case("BEGIN") {
            session.begin().await?;
        } else if step.eq_ignore_ascii_case("COMMIT") {
            session.commit().await?;
        } else {
            session.query(&step, &[]).await?;
        }
    }
    session.close().await;
    Ok(())
}
