//! The whole-transaction retry for SERIALIZABLE (and deadlocks).
//!
//! Why the whole transaction: a 40001 can arrive at any statement, COMMIT included, and the data
//! the business rule read is exactly what changed. So the retried body re-reads, re-decides and
//! commits; only 40001 and 40P01 are retried; each attempt waits a random time up to
//! min(100 ms, 2 ms · 2^attempt) (full jitter, so retrying actors spread out); and an approval
//! that runs out of attempts is *reported* as given up, never silently dropped.

use super::error::{DbError, RunError, StepError};
use super::postgres::PgActor;
use rand::Rng;
use std::time::Duration;

/// How many attempts, and how long to wait between them.
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub base: Duration,
    pub cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 10,
            base: Duration::from_millis(2),
            cap: Duration::from_millis(100),
        }
    }
}

impl RetryPolicy {
    /// The longest wait after failed attempt `attempt` (1-based): min(cap, base · 2^attempt).
    pub fn max_wait(&self, attempt: u32) -> Duration {
        self.base.saturating_mul(2u32.saturating_pow(attempt)).min(self.cap)
    }

    /// The wait after failed attempt `attempt`: a random time up to [`RetryPolicy::max_wait`]
    /// (full jitter, so retrying actors spread out).
    pub async fn pause(&self, attempt: u32) {
        let wait = rand::rng().random_range(Duration::ZERO..=self.max_wait(attempt));
        tokio::time::sleep(wait).await;
    }
}

/// What a retried transaction ended with.
#[derive(Debug)]
pub enum Retried<T> {
    /// The body succeeded on attempt `attempts`.
    Done { value: T, attempts: u32 },
    /// Every attempt failed with a retryable error; `last` is the final one.
    GaveUp { attempts: u32, last: DbError },
}

/// Runs `body` (which must include its COMMIT) until it succeeds, fails with a non-retryable
/// error, or uses up the policy's attempts. After each retryable failure it rolls the actor back
/// and calls `on_failure(attempt, error)` so the scenario can say so.
pub async fn retry<T, Fut>(
    actor: &PgActor,
    policy: RetryPolicy,
    mut on_failure: impl FnMut(u32, &DbError),
    mut body: impl FnMut(u32) -> Fut,
) -> Result<Retried<T>, RunError>
where
    Fut: Future<Output = Result<T, RunError>>,
{
    let mut attempt = 1;
    loop {
        match body(attempt).await {
            Ok(value) => {
                return Ok(Retried::Done {
                    value,
                    attempts: attempt,
                });
            }
            Err(RunError::Step(StepError::Db(error))) if error.is_retryable() => {
                actor.rollback().await?;
                on_failure(attempt, &error);
                if attempt >= policy.max_attempts {
                    return Ok(Retried::GaveUp {
                        attempts: attempt,
                        last: error,
                    });
                }
                policy.pause(attempt).await;
                attempt += 1;
            }
            Err(other) => {
                // The original error is the one worth reporting; a failed cleanup only gets logged.
                if let Err(cleanup) = actor.rollback().await {
                    tracing::warn!(actor = actor.name(), %cleanup, "rollback after a failed attempt failed");
                }
                return Err(other);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RetryPolicy;
    use std::time::Duration;

    #[test]
    fn waits_double_from_4ms_and_stop_at_100ms() {
        let policy = RetryPolicy::default();
        let waits: Vec<u128> = (1..=10).map(|a| policy.max_wait(a).as_millis()).collect();
        assert_eq!(waits, vec![4, 8, 16, 32, 64, 100, 100, 100, 100, 100]);
        assert_eq!(policy.max_wait(40), Duration::from_millis(100));
    }
}
