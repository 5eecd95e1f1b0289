//! A MariaDB actor: one reader-named session (alice, bob) of a run, on its own connection and
//! task, as [`crate::engine::PgActor`] is on PostgreSQL, speaking through the same [`Lane`].
//!
//! An actor at a level is never in autocommit: its first statement opens a transaction (`START
//! TRANSACTION`, at the level its session was set to), which stays open until
//! [`MariaActor::commit`] or [`MariaActor::rollback`]. A step that waits for a lock is *seen*
//! waiting, from racelab's own connection ([`super::waits_for`]), never assumed.

use super::{MariaSession, SessionError, Setting, Wait, waits_for};
use crate::engine::error::{RunError, StepError};
use crate::engine::lane::Lane;
use crate::engine::run::Run;
use crate::engine::sql::Output;
use shared::event::ErrorKind;
use shared::{EventKind, Service};
use sqlx::MySqlPool;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// How often a started step is asked about: InnoDB refreshes the lock tables [`waits_for`]
/// reads at most every 100 ms, and not at all while they are read more often than that.
pub const POLL_EVERY: Duration = Duration::from_millis(150);

type Answer = Result<Output, SessionError>;

/// One statement for the actor's task, and where its answer goes.
struct Request {
    sql: String,
    reply: oneshot::Sender<Answer>,
}

/// The handle a scenario holds for one actor on MariaDB. Dropping it ends the actor's task and
/// closes its session (a MariaDB session is never kept for another run: the run's user goes
/// with its sandbox).
pub struct MariaActor {
    lane: Lane,
    thread: u64,
    in_transaction: AtomicBool,
    mailbox: mpsc::Sender<Request>,
    /// racelab's own connections, which see every thread's lock waits.
    admin: MySqlPool,
    run: Run,
}

impl Run {
    /// Opens an actor on MariaDB: a session of the run's user in the run's database, set up as
    /// `setting` says. The run's sandbox there is made first if this is its first need of it.
    pub async fn mariadb_actor(&self, name: &str, setting: Setting) -> Result<MariaActor, RunError> {
        self.open_mariadb_actor(name, setting, false).await
    }

    /// As [`Run::mariadb_actor`], for one of many workers whose steps, waits and words go
    /// unseen (a load test's): the run's progress and figures tell what they did.
    pub async fn mariadb_worker(&self, name: &str, setting: Setting) -> Result<MariaActor, RunError> {
        self.open_mariadb_actor(name, setting, true).await
    }

    async fn open_mariadb_actor(&self, name: &str, setting: Setting, quiet: bool) -> Result<MariaActor, RunError> {
        let place = &self.core().mariadb;
        let (options, admin) = place.reach(self).await?;
        let session = MariaSession::open(options, setting)
            .await
            .map_err(|e| RunError::Other(format!("{name} could not connect to MariaDB: {e}")))?;
        let thread = session.thread();
        place.name_thread(thread, name);
        let (mailbox, requests) = mpsc::channel(1);
        tokio::spawn(serve(session, requests));
        Ok(MariaActor {
            lane: self.lane(name, quiet),
            thread,
            in_transaction: AtomicBool::new(false),
            mailbox,
            admin,
            run: self.clone(),
        })
    }
}

impl MariaActor {
    /// The reader's name for this actor.
    pub fn name(&self) -> &str {
        self.lane.name()
    }

    /// Speaks a transcript line as this actor (`[alice] commit`).
    pub fn say(&self, message: impl AsRef<str>) {
        self.lane.say(message);
    }

    /// Runs one statement and waits for its result; [`MariaActor::start`] for one that may wait
    /// for a lock.
    pub async fn query(&self, sql: &str) -> Result<Output, StepError> {
        self.start(sql).await?.finish().await
    }

    /// Starts one statement without waiting for it (opening the transaction first if none is
    /// open): the caller decides whether it should block.
    pub async fn start(&self, sql: &str) -> Result<MariaPending<'_>, StepError> {
        self.lane.gate(Service::Mariadb, sql).await;
        if !self.in_transaction.swap(true, Ordering::SeqCst) {
            self.lane.step(Service::Mariadb, "START TRANSACTION", &[], None);
            self.send("START TRANSACTION").await?.finish().await?;
        }
        self.lane.step(Service::Mariadb, sql, &[], None);
        self.send(sql).await
    }

    /// Commits the open transaction.
    pub async fn commit(&self) -> Result<(), StepError> {
        self.end_transaction("COMMIT").await
    }

    /// Rolls back the open transaction (after an error, as an application does before it
    /// retries: after a deadlock InnoDB has already rolled it back, and this says so).
    pub async fn rollback(&self) -> Result<(), StepError> {
        if !self.in_transaction.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.end_transaction("ROLLBACK").await
    }

    async fn end_transaction(&self, sql: &str) -> Result<(), StepError> {
        self.lane.gate(Service::Mariadb, sql).await;
        self.lane.step(Service::Mariadb, sql, &[], None);
        let answer = self.send(sql).await?.finish().await;
        self.in_transaction.store(false, Ordering::SeqCst);
        let actor = self.name().to_owned();
        match answer {
            Ok(_) if sql == "COMMIT" => self.lane.emit(EventKind::Commit { actor }),
            _ => self.lane.emit(EventKind::Rollback { actor }),
        }
        answer.map(|_| ())
    }

    async fn send(&self, sql: &str) -> Result<MariaPending<'_>, StepError> {
        let (reply, answer) = oneshot::channel();
        let request = Request {
            sql: sql.to_owned(),
            reply,
        };
        self.mailbox
            .send(request)
            .await
            .map_err(|_| self.lost("its task has stopped"))?;
        Ok(MariaPending {
            actor: self,
            answer,
            blocked_since: None,
        })
    }

    fn lost(&self, reason: &str) -> StepError {
        StepError::Lost {
            service: Service::Mariadb,
            actor: self.name().to_owned(),
            reason: reason.to_owned(),
        }
    }

    /// Turns the task's answer into a step result, emitting its result or error event: an
    /// error's code is MariaDB's number, its message as the mysql client prints it.
    fn settle(&self, answer: Answer) -> Result<Output, StepError> {
        match answer {
            Ok(output) => {
                self.lane.result(output.tag.clone(), output.shown_rows(), None);
                Ok(output)
            }
            Err(SessionError::Server {
                number,
                sqlstate,
                message,
            }) => {
                let error = StepError::Mariadb {
                    number,
                    sqlstate,
                    message,
                };
                self.lane
                    .error(ErrorKind::Database, Some(number.to_string()), error.to_string());
                Err(error)
            }
            Err(SessionError::Lost(reason)) => {
                let error = self.lost(&reason);
                self.lane.error(ErrorKind::Connection, None, error.to_string());
                Err(error)
            }
        }
    }

    /// Whom the actor waits for now, in the reader's words, and on what.
    async fn blockers(&self) -> Result<(Vec<String>, Option<String>), RunError> {
        let place = &self.run.core().mariadb;
        Ok(match waits_for(&self.admin, self.thread).await? {
            Wait::Nothing => (Vec::new(), None),
            Wait::RowLock { holders } => (
                holders.into_iter().map(|t| place.name_of(t)).collect(),
                Some("a row lock (InnoDB)".to_owned()),
            ),
            // MariaDB names a metadata lock's holder only with a plugin racelab does not ask for.
            Wait::MetadataLock { state } => (vec!["another session".to_owned()], Some(state)),
        })
    }
}

/// A started step on MariaDB, not yet finished.
pub struct MariaPending<'a> {
    actor: &'a MariaActor,
    answer: oneshot::Receiver<Answer>,
    blocked_since: Option<Instant>,
}

impl<'a> MariaPending<'a> {
    /// For a step the choreography needs to wait: returns once it is seen waiting, with whom it
    /// waits for. Fails the run if it finishes instead, or neither within the run's block
    /// timeout.
    pub async fn expect_blocked(mut self) -> Result<(MariaPending<'a>, Vec<String>), RunError> {
        let actor = self.actor;
        let timeout = actor.run.limits().block_timeout;
        let deadline = Instant::now() + timeout;
        loop {
            tokio::select! {
                biased;
                answer = &mut self.answer => {
                    let answer = answer.map_err(|_| actor.lost("its task stopped mid-step"))?;
                    actor.settle(answer)?;
                    return Err(RunError::NeverBlocked(actor.name().to_owned()));
                }
                _ = tokio::time::sleep(POLL_EVERY) => {}
            }
            let (by, on) = actor.blockers().await?;
            if !by.is_empty() {
                self.blocked_since = Some(Instant::now());
                actor.lane.emit(EventKind::Blocked {
                    actor: actor.name().to_owned(),
                    by: by.clone(),
                    on,
                });
                return Ok((self, by));
            }
            if Instant::now() >= deadline {
                return Err(RunError::BlockTimeout {
                    actor: actor.name().to_owned(),
                    timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                });
            }
        }
    }

    /// Waits for the step's result and reports it (after an `Unblocked` event if it waited).
    pub async fn finish(self) -> Result<Output, StepError> {
        let actor = self.actor;
        let answer = self.answer.await.map_err(|_| actor.lost("its task stopped mid-step"))?;
        if let Some(since) = self.blocked_since {
            actor.lane.emit(EventKind::Unblocked {
                actor: actor.name().to_owned(),
                waited_ms: u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX),
            });
        }
        actor.settle(answer)
    }
}

/// The actor's task: runs its mailbox's statements one at a time on its own session; the
/// session closes when the handle is dropped.
async fn serve(mut session: MariaSession, mut requests: mpsc::Receiver<Request>) {
    while let Some(request) = requests.recv().await {
        let answer = session.run(&request.sql).await;
        // The handle may be gone (a cancelled run): the answer has nobody to go to.
        let _ = request.reply.send(answer);
    }
}
