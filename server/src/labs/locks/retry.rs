//! Retries with and without jitter, through the behaviour of the tutorial's Go library
//! ([`super::redislock`]): fifty requests obtain `lock:wallet:42` (2 s lease, 5 s deadline) with
//! a fresh `ExponentialBackoff(16 ms, 128 ms)` each, then spend.
//! - `no-jitter`: everyone who failed together retries together; each round lets about one
//!   through, so some give up after 5 s (the tutorial: 0 to 5 gave up, 2.91 s to 5 s).
//! - `jitter`: a random spread on each wait: nobody gives up, and all fifty finish in a fraction
//!   of a second (the tutorial: 130 to 180 ms).
//!
//! The balance is right either way (`accepted=10 balance=0 expected=0 OK`): the difference is
//! availability. And the deadline's joined error is never `==` to `ErrNotObtained`: `matched 0`.

use super::redislock::{ExponentialBackoff, FullJitter, RetryStrategy, obtain, release};
use super::{
    AMOUNT, CALLERS, LOCK_KEY, WORK, caller_lanes, finish_spends, go_duration, log_prefix, open_callers, spend,
    spend_round,
};
use crate::engine::{Budget, Run, RunError};
use crate::labs::ScenarioDef;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

pub const TTL: Duration = Duration::from_secs(2);
pub const DEADLINE: Duration = Duration::from_secs(5);
pub const MIN_BACKOFF: Duration = Duration::from_millis(16);
pub const MAX_BACKOFF: Duration = Duration::from_millis(128);

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "locks/retry",
    title: "Retrying for a lock: in lockstep, or with jitter",
    hook: "Fifty callers back off 16, 16, 16, 32, 64, 128 ms: together, or spread out",
    about: "Fifty requests obtain the lock through the behaviour of the Go library the tutorial uses: exponential backoff from 16 to 128 ms, a fresh strategy per request, a 5 s deadline. Without jitter, the callers that failed together wake together and only about one gets through per round; some give up. With a random spread on each wait they all finish quickly. The balance is right either way: locks decide availability here. And a caller that tests the deadline's error with == never recognises it.",
    variants: &[
        ("no-jitter", "no jitter", "Exponential backoff, the same for everyone"),
        ("jitter", "full jitter", "1 ms plus a random share of each backoff"),
    ],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| caller_lanes(CALLERS),
    budget: Some(|_| Budget::postgres(0).and_redis(CALLERS as u32)),
    play: |run, variant| Box::pin(play(run, variant == "jitter")),
    summarize: None,
    predict: None,
};

async fn play(run: &Run, jitter: bool) -> Result<(), RunError> {
    let callers = open_callers(run, CALLERS).await?;
    let (gave_up, equals_matched) = (AtomicI64::new(0), AtomicI64::new(0));
    let round = spend_round(run, &callers, |who| {
        let (gave_up, equals_matched) = (&gave_up, &equals_matched);
        async move {
            // A new strategy per obtain: the exponential one counts its calls.
            let backoff = ExponentialBackoff::new(MIN_BACKOFF, MAX_BACKOFF);
            let mut retry: Box<dyn RetryStrategy> = if jitter {
                Box::new(FullJitter(backoff))
            } else {
                Box::new(backoff)
            };
            let lock = match obtain(who, LOCK_KEY, TTL, Some(DEADLINE), retry.as_mut()).await {
                Ok(lock) => lock,
                Err(error) if error.is_not_obtained() => {
                    gave_up.fetch_add(1, Ordering::SeqCst);
                    if error.equals_not_obtained() {
                        equals_matched.fetch_add(1, Ordering::SeqCst);
                    }
                    who.lane()
                        .note(format!("gave up: {}", error.to_string().replace('\n', "; ")));
                    return Ok(false);
                }
                Err(error) => return Err(RunError::Other(error.to_string())),
            };
            let spent = spend(who, AMOUNT, WORK).await;
            let _ = release(who, &lock).await;
            spent
        }
    })
    .await?;
    run.say_plain(format!(
        "{}gave up={} (err == ErrNotObtained matched {}) elapsed={}",
        log_prefix(),
        gave_up.load(Ordering::SeqCst),
        equals_matched.load(Ordering::SeqCst),
        go_duration(round.elapsed)
    ));
    let (how, tutorial): (&str, &[(&str, &str)]) = if jitter {
        (
            "Random waits spread the callers out, so each retry found the lock free more often.",
            &[("gave up", "0 on every run"), ("elapsed", "130 ms to 180 ms")],
        )
    } else {
        (
            "Callers that failed together retried together; each round let about one through.",
            &[("gave up", "0 to 5 of 50"), ("elapsed", "2.91 s (none gave up) to 5 s")],
        )
    };
    finish_spends(run, round.before, CALLERS, round.accepted, round.balance, how, tutorial).await
}
