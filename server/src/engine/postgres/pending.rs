//! Started steps, and how the engine sees that one is blocked (part of [`super::PgActor`]: a
//! started statement borrows its actor).
//!
//! Like PostgreSQL's own isolation tester, the engine does not take a scenario's word that a step
//! waits: it starts the step, then asks the server from the run's monitor connection, every
//! 10 ms, whether the actor's backend is waiting on another's lock (`pg_blocking_pids`). Only then
//! does it report `Blocked { by }` and let the choreography go on. A step that finishes instead,
//! or neither finishes nor blocks in time, ends the run with a clear message.

use super::PgActor;
use crate::engine::error::{RunError, StepError};
use crate::engine::sql::Output;
use shared::EventKind;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How often the monitor asks whether a started step is waiting.
pub const POLL_EVERY: Duration = Duration::from_millis(10);

/// A step that has been started and not yet finished.
pub struct Pending<'a> {
    actor: &'a PgActor,
    answer: oneshot::Receiver<Result<Output, sqlx::Error>>,
    /// Set once the step was seen waiting, so that finishing it reports how long it waited.
    blocked_since: Option<Instant>,
}

/// What a started step turned out to do.
pub enum Settled<'a> {
    /// It finished without waiting.
    Finished(Result<Output, StepError>),
    /// It is waiting for the actors named in `by`.
    Blocked { pending: Pending<'a>, by: Vec<String> },
}

impl<'a> Pending<'a> {
    pub(super) fn new(actor: &'a PgActor, answer: oneshot::Receiver<Result<Output, sqlx::Error>>) -> Self {
        Pending {
            actor,
            answer,
            blocked_since: None,
        }
    }

    /// Waits until the step either finishes or is seen waiting for a lock, for at most `timeout`.
    pub async fn settle(mut self, timeout: Duration) -> Result<Settled<'a>, RunError> {
        let deadline = Instant::now() + timeout;
        loop {
            tokio::select! {
                biased;
                answer = &mut self.answer => {
                    let answer = answer.map_err(|_| self.actor.lost("its task stopped mid-step"))?;
                    return Ok(Settled::Finished(self.actor.settle_answer(answer)));
                }
                _ = tokio::time::sleep(POLL_EVERY) => {}
            }
            let Some(monitor) = &self.actor.monitor else {
                return Err(RunError::Other(format!(
                    "{}'s session is watched by its parent process, not here",
                    self.actor.name()
                )));
            };
            let (by, on) = monitor.blockers(self.actor.pid()).await?;
            if !by.is_empty() {
                self.blocked_since = Some(Instant::now());
                self.actor.lane.emit(EventKind::Blocked {
                    actor: self.actor.name().to_owned(),
                    by: by.clone(),
                    on,
                });
                return Ok(Settled::Blocked { pending: self, by });
            }
            if Instant::now() >= deadline {
                return Err(RunError::BlockTimeout {
                    actor: self.actor.name().to_owned(),
                    timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                });
            }
        }
    }

    /// For a step the choreography needs to wait: returns once it is seen blocked, with the names
    /// of the actors it waits for. Fails the run if the step finishes instead, or neither happens
    /// within the run's block timeout.
    pub async fn expect_blocked(self) -> Result<(Pending<'a>, Vec<String>), RunError> {
        let actor = self.actor.name().to_owned();
        let timeout = self
            .actor
            .monitor
            .as_ref()
            .map_or(crate::engine::run::Limits::default().block_timeout, |m| {
                m.limits.block_timeout
            });
        match self.settle(timeout).await? {
            Settled::Blocked { pending, by } => Ok((pending, by)),
            // A step that failed instead of waiting reports its own error (its SQLSTATE).
            Settled::Finished(Err(error)) => Err(error.into()),
            Settled::Finished(Ok(_)) => Err(RunError::NeverBlocked(actor)),
        }
    }

    /// Waits for the step's result and reports it (after an `Unblocked` event if it had waited).
    pub async fn finish(self) -> Result<Output, StepError> {
        let actor = self.actor;
        let blocked_since = self.blocked_since;
        let answer = self.answer().await?;
        if let Some(since) = blocked_since {
            let waited_ms = u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX);
            actor.lane.emit(EventKind::Unblocked {
                actor: actor.name().to_owned(),
                waited_ms,
            });
        }
        actor.settle_answer(answer)
    }

    /// The raw answer from the actor's task, without emitting anything.
    pub(super) async fn answer(self) -> Result<Result<Output, sqlx::Error>, StepError> {
        self.answer
            .await
            .map_err(|_| self.actor.lost("its task stopped mid-step"))
    }
}
