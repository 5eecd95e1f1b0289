//! Child-process actors, the parent's side: a relay, a consumer or an API server that runs as
//! its own `racelab actor <kind>` process, so that its death is real.
//!
//! Why a process and not a task: when the outbox tutorial's relay dies after producing, what the
//! lesson rests on is what the *services* do about it. PostgreSQL rolls back the open transaction
//! and frees the session advisory lock because the connection really dropped; the broker keeps
//! the consumer as a group member because it never said goodbye. A task that is cancelled runs
//! destructors (sqlx rolls back politely, rdkafka leaves the group), which is not a crash.
//!
//! The child speaks JSON lines on its stdout ([`ChildMsg`]): the events of its lane (put back on
//! the run's one stream, numbered by the parent), the pid of each PostgreSQL session it opens
//! (so blocked detection names it), a request to wait at the step gate, and "I am at crash point
//! X". At a crash point the engine kills it with SIGKILL — no cleanup, no group leave, no offset
//! commit — and emits [`EventKind::Crash`]. The scenario can also kill it itself
//! ([`ChildActor::kill`], like `docker kill`) and start it again ([`ChildActor::restart`]: a new
//! pid, so a new session and a new producer). A child whose stdin closes (its parent died) exits
//! at once, so a crashed racelab leaves no actor running.

use super::error::RunError;
use super::lane::{Lane, Stage};
use super::run::{Run, RunCore};
use serde::{Deserialize, Serialize};
use shared::{EventKind, Service};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{mpsc, oneshot};

/// One line a child writes on its stdout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case")]
pub enum ChildMsg {
    /// One event of the child's lane.
    Event { event: EventKind },
    /// The child opened a PostgreSQL session with backend pid `pid`.
    Session { pid: i32 },
    /// Step mode: the child waits for a line on its stdin before `step` on `service`.
    Gate { service: Service, step: String },
    /// The child reached crash point `point` and waits there to be killed.
    CrashPoint { point: String },
    /// The child serves HTTP on loopback port `port` (a shop API that can crash).
    Listening { port: u16 },
}

/// What the parent passes a child in its environment.
pub mod env {
    /// The run id.
    pub const RUN: &str = "RACELAB_RUN";
    /// The lane's name (`relay`, `notifier`).
    pub const LANE: &str = "RACELAB_LANE";
    /// The database URL, without the run's session options.
    pub const DATABASE_URL: &str = "RACELAB_DATABASE_URL";
    /// The run's sandbox as JSON (schemas, prefix, topics).
    pub const SANDBOX: &str = "RACELAB_SANDBOX";
    /// The session limits, as `name=value` pairs separated by spaces.
    pub const PG_OPTIONS: &str = "RACELAB_PG_OPTIONS";
    /// Where the services are: `REDIS_URL` and `KAFKA_BROKERS`, as for the server.
    pub const REDIS_URL: &str = "REDIS_URL";
    pub const KAFKA_BROKERS: &str = "KAFKA_BROKERS";
    /// The kind's own arguments, as JSON.
    pub const ARGS: &str = "RACELAB_ARGS";
}

/// How a child ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// Killed with SIGKILL at `point`.
    Crashed { point: String },
    /// Exited by itself with `code` (`None`: killed by a signal not ours).
    Exited { code: Option<i32> },
}

/// What the scenario hears from a child, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum News {
    Event(EventKind),
    /// It listens on this loopback port.
    Listening(u16),
    Ended(End),
}

/// What the handle can ask of the task that owns the child.
enum Order {
    /// SIGKILL: a crash at `point`.
    Kill { point: String, done: oneshot::Sender<()> },
    /// SIGTERM: the child leaves politely (closes its consumer, stops its server) and exits.
    Stop { done: oneshot::Sender<()> },
}

/// The handle a scenario holds for one child-process actor.
pub struct ChildActor {
    lane: Lane,
    kind: String,
    args: serde_json::Value,
    run: Run,
    pid: u32,
    news: mpsc::UnboundedReceiver<News>,
    orders: mpsc::UnboundedSender<Order>,
    ended: bool,
    /// Its events go to the scenario only (see [`Run::muted_process`]).
    muted: bool,
    /// The backend pids of the PostgreSQL sessions the current process opened.
    sessions: Sessions,
}

/// Backend pids a child reported, shared with the task that reads its pipe.
type Sessions = Arc<std::sync::Mutex<Vec<i32>>>;

/// How long a child may take to stop after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// How long a restart waits for PostgreSQL to end the dead process's sessions.
const SESSIONS_GONE: Duration = Duration::from_secs(5);

impl Run {
    /// Starts `racelab actor <kind>` as lane `name`, with the kind's `args`.
    pub async fn process(&self, name: &str, kind: &str, args: serde_json::Value) -> Result<ChildActor, RunError> {
        self.core().close_spares();
        self.start_process(name, kind, args, false)
    }

    /// As [`Run::process`], for one of a crowd (the chaos test's relays and notifier): what the
    /// child says reaches the scenario ([`ChildActor::next`]), which counts it, but not the
    /// timeline, except its start, its crash and its exit, which are never hidden.
    pub async fn muted_process(&self, name: &str, kind: &str, args: serde_json::Value) -> Result<ChildActor, RunError> {
        self.core().close_spares();
        self.start_process(name, kind, args, true)
    }

    fn start_process(
        &self,
        name: &str,
        kind: &str,
        args: serde_json::Value,
        muted: bool,
    ) -> Result<ChildActor, RunError> {
        let lane = self.lane(name, false);
        let sessions = Sessions::default();
        let (pid, news, orders) = spawn(self.core(), &lane, kind, &args, false, muted, &sessions)?;
        Ok(ChildActor {
            sessions,
            lane,
            kind: kind.to_owned(),
            args,
            run: self.clone(),
            pid,
            news,
            orders,
            ended: false,
            muted,
        })
    }
}

impl ChildActor {
    /// The reader's name for this actor.
    pub fn name(&self) -> &str {
        self.lane.name()
    }

    /// Its lane, for the scenario's own remarks about it.
    pub fn lane(&self) -> &Lane {
        &self.lane
    }

    /// The current process's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The next thing the child did, or `None` once it has ended and everything was heard.
    pub async fn next(&mut self) -> Option<News> {
        let news = self.news.recv().await;
        if let Some(News::Ended(_)) = news {
            self.ended = true;
        }
        news
    }

    /// Waits (at most `timeout`) for an event of the child's that `wanted` accepts, and returns
    /// it. Fails if the child ends first.
    pub async fn wait_for(
        &mut self,
        timeout: Duration,
        mut wanted: impl FnMut(&EventKind) -> bool,
    ) -> Result<EventKind, RunError> {
        self.wait_news(
            timeout,
            "the awaited event",
            "nothing awaited happened within",
            |news| match news {
                News::Event(event) if wanted(&event) => Some(event),
                _ => None,
            },
        )
        .await
    }

    /// Waits (at most `timeout`) until the child says which loopback port it serves on.
    pub async fn wait_listening(&mut self, timeout: Duration) -> Result<u16, RunError> {
        self.wait_news(timeout, "it listened", "not listening after", |news| match news {
            News::Listening(port) => Some(port),
            _ => None,
        })
        .await
    }

    /// Waits (at most `timeout`) for the first news `take` keeps; fails if the child ends first
    /// (`before`: what it ended before) or the time runs out (`late`: said with the time).
    async fn wait_news<T>(
        &mut self,
        timeout: Duration,
        before: &str,
        late: &str,
        mut take: impl FnMut(News) -> Option<T>,
    ) -> Result<T, RunError> {
        let name = self.name().to_owned();
        let failed = |reason: String| RunError::Process {
            actor: name.clone(),
            reason,
        };
        let waited = tokio::time::timeout(timeout, async {
            while let Some(news) = self.next().await {
                if let News::Ended(end) = &news {
                    return Err(failed(format!("ended ({end:?}) before {before}")));
                }
                if let Some(kept) = take(news) {
                    return Ok(kept);
                }
            }
            Err(failed("its pipe closed".into()))
        })
        .await;
        waited.unwrap_or_else(|_| Err(failed(format!("{late} {} ms", timeout.as_millis()))))
    }

    /// Waits (at most `timeout`) for the child to end: at a crash point, or by itself.
    pub async fn wait_end(&mut self, timeout: Duration) -> Result<End, RunError> {
        let name = self.name().to_owned();
        let waited = tokio::time::timeout(timeout, async {
            while let Some(news) = self.next().await {
                if let News::Ended(end) = news {
                    return Some(end);
                }
            }
            None
        })
        .await;
        match waited {
            Ok(Some(end)) => Ok(end),
            Ok(None) => Err(RunError::Process {
                actor: name,
                reason: "its pipe closed without an end".into(),
            }),
            Err(_) => Err(RunError::Process {
                actor: name,
                reason: format!("still running after {} ms", timeout.as_millis()),
            }),
        }
    }

    /// Kills the child with SIGKILL now (as `docker kill` would), naming the moment `point`;
    /// returns once it is dead and `Crash` was emitted.
    pub async fn kill(&mut self, point: &str) -> Result<(), RunError> {
        let (done, dead) = oneshot::channel();
        if self
            .orders
            .send(Order::Kill {
                point: point.to_owned(),
                done,
            })
            .is_ok()
        {
            let _ = dead.await;
        }
        Ok(())
    }

    /// Asks the child to stop (SIGTERM, as `docker stop` does) and returns once it has exited,
    /// which a kind that holds something (a consumer in a group, a server) does after letting go
    /// of it. A no-op on a child that already ended.
    pub async fn stop(&mut self) -> Result<(), RunError> {
        let (done, dead) = oneshot::channel();
        if !self.ended && self.orders.send(Order::Stop { done }).is_ok() {
            let _ = dead.await;
        }
        Ok(())
    }

    /// Starts the same kind again with other arguments (the tutorial's "restart the API with
    /// `-lease 10s`"), after the child ended, or killing it first.
    pub async fn restart_with(&mut self, args: serde_json::Value) -> Result<(), RunError> {
        self.args = args;
        self.restart().await
    }

    /// Starts the same kind again with the same arguments, after the child ended (or killing it
    /// first): a new pid, shown as a restart.
    pub async fn restart(&mut self) -> Result<(), RunError> {
        if !self.ended {
            self.kill("restart").await?;
            while let Some(news) = self.news.recv().await {
                if let News::Ended(_) = news {
                    break;
                }
            }
        }
        self.wait_sessions_gone().await;
        let (pid, news, orders) = spawn(
            self.run.core(),
            &self.lane,
            &self.kind,
            &self.args,
            true,
            self.muted,
            &self.sessions,
        )?;
        self.pid = pid;
        self.news = news;
        self.orders = orders;
        self.ended = false;
        Ok(())
    }
}

impl ChildActor {
    /// Waits (at most [`SESSIONS_GONE`]) until PostgreSQL has ended every session of the dead
    /// process: its backend notices the closed connection, rolls back and frees its locks, and
    /// only then does the tutorial's restarted process start (a restart loop is never faster
    /// than that). Gives up quietly: the new process then simply finds what is still held.
    async fn wait_sessions_gone(&self) {
        let pids: Vec<String> = std::mem::take(&mut *self.sessions.lock().unwrap_or_else(|p| p.into_inner()))
            .iter()
            .map(ToString::to_string)
            .collect();
        if pids.is_empty() {
            return;
        }
        let sql = format!(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY('{{{}}}'::int[])",
            pids.join(",")
        );
        let deadline = tokio::time::Instant::now() + SESSIONS_GONE;
        while tokio::time::Instant::now() < deadline {
            match self.run.check(&sql, &[]).await.and_then(|o| Ok(o.int()?)) {
                Ok(0) | Err(_) => return,
                Ok(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            }
        }
    }
}

type Spawned = (u32, mpsc::UnboundedReceiver<News>, mpsc::UnboundedSender<Order>);

/// Starts the child process and the task that owns it.
fn spawn(
    core: &Arc<RunCore>,
    lane: &Lane,
    kind: &str,
    args: &serde_json::Value,
    restart: bool,
    muted: bool,
    sessions: &Sessions,
) -> Result<Spawned, RunError> {
    let failed = |reason: String| RunError::Process {
        actor: lane.name().to_owned(),
        reason,
    };
    let sandbox = serde_json::to_string(&core.sandbox).map_err(|e| failed(e.to_string()))?;
    let limits = &core.limits;
    let pg_options = format!(
        "statement_timeout={}ms lock_timeout={}ms idle_in_transaction_session_timeout={}ms",
        limits.statement_timeout.as_millis(),
        limits.lock_timeout.as_millis(),
        limits.idle_in_transaction_timeout.as_millis()
    );
    let mut command = Command::new(&core.reach.actor_binary);
    command
        .arg("actor")
        .arg(kind)
        .env(env::RUN, &core.id)
        .env(env::LANE, lane.name())
        .env(env::DATABASE_URL, &core.reach.database_url)
        .env(env::SANDBOX, sandbox)
        .env(env::PG_OPTIONS, pg_options)
        .env(env::REDIS_URL, &core.reach.services.redis_url)
        .env(env::KAFKA_BROKERS, &core.reach.services.brokers)
        .env(env::ARGS, args.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        // If the run is dropped without a word (an aborted scenario), its children die with it.
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|e| failed(format!("cannot start {}: {e}", core.reach.actor_binary.display())))?;
    let pid = child.id().unwrap_or_default();
    let stdout = child.stdout.take().ok_or_else(|| failed("no stdout pipe".into()))?;
    let stdin = child.stdin.take().ok_or_else(|| failed("no stdin pipe".into()))?;
    lane.emit_always(EventKind::ProcessStarted {
        actor: lane.name().to_owned(),
        pid,
        restart,
    });
    let (news_tx, news) = mpsc::unbounded_channel();
    let (orders, orders_rx) = mpsc::unbounded_channel();
    tokio::spawn(own(
        core.clone(),
        lane.clone(),
        child,
        Pipes { stdin, stdout },
        news_tx,
        orders_rx,
        Listening {
            muted,
            sessions: sessions.clone(),
        },
    ));
    Ok((pid, news, orders))
}

/// How the task that owns a child passes on what it hears: muted or not, and where the session
/// pids go.
struct Listening {
    muted: bool,
    sessions: Sessions,
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until_or_never(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// A child's two pipes.
struct Pipes {
    stdin: ChildStdin,
    stdout: tokio::process::ChildStdout,
}

/// Sends SIGTERM to `child`, if it still runs.
fn terminate(child: &Child) {
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: kill(2) with a pid this task owns and has not reaped yet; no memory involved.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
}

/// The task that owns one child: forwards its lines, answers its gate requests, kills it at its
/// crash point or when told to, and reports how it ended.
async fn own(
    core: Arc<RunCore>,
    lane: Lane,
    mut child: Child,
    pipes: Pipes,
    news: mpsc::UnboundedSender<News>,
    mut orders: mpsc::UnboundedReceiver<Order>,
    listening: Listening,
) {
    let Pipes { mut stdin, stdout } = pipes;
    let mut lines = BufReader::new(stdout).lines();
    let mut killed_at: Option<String> = None;
    let mut told_dead: Vec<oneshot::Sender<()>> = Vec::new();
    // Once told to stop: when the grace runs out.
    let mut stop_by: Option<tokio::time::Instant> = None;
    loop {
        tokio::select! {
            line = lines.next_line() => {
                let Ok(Some(line)) = line else { break };
                match heed(&line, (&core, &lane), &mut stdin, &news, &listening).await {
                    Heard::GoOn => {}
                    Heard::Deaf => break,
                    Heard::AtCrashPoint(point) => {
                        let _ = child.start_kill();
                        killed_at = Some(point);
                        break;
                    }
                }
            }
            () = sleep_until_or_never(stop_by) => {
                lane.note(format!("did not stop within {} s of SIGTERM: killed", STOP_GRACE.as_secs()));
                let _ = child.start_kill();
                break;
            }
            order = orders.recv(), if killed_at.is_none() => match order {
                Some(Order::Kill { point, done }) => {
                    let _ = child.start_kill();
                    killed_at = Some(point);
                    told_dead.push(done);
                    break;
                }
                Some(Order::Stop { done }) => {
                    terminate(&child);
                    told_dead.push(done);
                    stop_by.get_or_insert(tokio::time::Instant::now() + STOP_GRACE);
                    // Keep forwarding its last lines until it exits (stdout closes).
                }
                None => {
                    // The scenario let go of its handle: nobody can stop this child any more.
                    let _ = child.start_kill();
                    break;
                }
            },
        }
    }
    let status = child.wait().await;
    let end = announce_end(&lane, killed_at, status);
    let _ = news.send(News::Ended(end));
    for done in told_dead {
        let _ = done.send(());
    }
}

/// What one line of a child's asks of the task that owns it, once passed on.
enum Heard {
    /// Nothing more: read the next line.
    GoOn,
    /// The child no longer reads its stdin (the gate's `go` could not be written).
    Deaf,
    /// The child waits at this crash point to be killed.
    AtCrashPoint(String),
}

/// Passes on one `line` of a child's on `lane` of run `core`: its events to the run's stream
/// (unless muted) and to the scenario's `news`, its sessions' pids to blocked detection, and
/// its gate requests to the step gate, answered on its `stdin` once the gate opens.
async fn heed(
    line: &str,
    (core, lane): (&RunCore, &Lane),
    stdin: &mut ChildStdin,
    news: &mpsc::UnboundedSender<News>,
    listening: &Listening,
) -> Heard {
    let Listening { muted, sessions } = listening;
    match serde_json::from_str::<ChildMsg>(line) {
        Ok(ChildMsg::Event { event }) => {
            if !muted {
                core.sink().emit(event.clone());
            }
            let _ = news.send(News::Event(event));
        }
        Ok(ChildMsg::Session { pid }) => {
            core.name_session(pid, lane.name());
            sessions.lock().unwrap_or_else(|p| p.into_inner()).push(pid);
        }
        Ok(ChildMsg::Gate { service, step }) => {
            core.gate(lane.name(), service, &step).await;
            if stdin.write_all(b"go\n").await.is_err() || stdin.flush().await.is_err() {
                return Heard::Deaf;
            }
        }
        Ok(ChildMsg::CrashPoint { point }) => return Heard::AtCrashPoint(point),
        Ok(ChildMsg::Listening { port }) => {
            let _ = news.send(News::Listening(port));
        }
        // Anything else on stdout is not ours to interpret; keep it out of the stream.
        Err(_) => tracing::debug!(actor = lane.name(), %line, "a child printed a line that is not a message"),
    }
    Heard::GoOn
}

/// How the child ended, said on its lane: a crash where it was killed at a crash point, else
/// its exit (with its code, from `status`).
fn announce_end(lane: &Lane, killed_at: Option<String>, status: std::io::Result<std::process::ExitStatus>) -> End {
    match killed_at {
        Some(point) => {
            lane.emit_always(EventKind::Crash {
                actor: lane.name().to_owned(),
                point: point.clone(),
            });
            End::Crashed { point }
        }
        None => {
            let code = status.ok().and_then(|s| s.code());
            lane.emit_always(EventKind::ProcessExited {
                actor: lane.name().to_owned(),
                code,
            });
            End::Exited { code }
        }
    }
}
