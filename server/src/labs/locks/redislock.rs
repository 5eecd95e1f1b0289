//! The behaviour of the Go library the tutorial's Step 4 uses (bsm/redislock v0.10.0), ported as
//! the spec describes it, so its surprises happen here too:
//! - no retry unless a strategy is given; a strategy's backoff under 1 ns means "stop";
//! - without a deadline of the caller's, the TTL is the deadline;
//! - `ExponentialBackoff(16 ms, 128 ms)` waits 16, 16, 16, 32, 64, 128, 128… with no jitter, and
//!   keeps count, so each obtain needs a fresh one;
//! - a wait cut short by the deadline fails with *both* errors joined (`errors.Join(ErrNotObtained,
//!   ctx.Err())`), so a caller that compares with `==` misses it, and one that asks `errors.Is`
//!   does not.

use super::lock::{Lock, LockError, mark};
use crate::engine::{Command, RedisActor, StepError};
use rand::Rng;
use shared::LeaseChange;
use std::time::Duration;
use tokio::time::Instant;

/// What `Obtain` fails with.
#[derive(Debug)]
pub enum ObtainError {
    /// `ErrNotObtained` itself: busy, and the strategy said stop.
    NotObtained,
    /// `errors.Join(ErrNotObtained, context.DeadlineExceeded)`: the deadline cut a wait short.
    NotObtainedByDeadline,
    /// Redis failed.
    Redis(StepError),
}

impl std::fmt::Display for ObtainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ObtainError::NotObtained => f.write_str("redislock: not obtained"),
            // errors.Join writes its errors one per line.
            ObtainError::NotObtainedByDeadline => f.write_str("redislock: not obtained\ncontext deadline exceeded"),
            ObtainError::Redis(e) => write!(f, "{e}"),
        }
    }
}

impl ObtainError {
    /// `errors.Is(err, ErrNotObtained)`: the error, or a chain holding it.
    pub fn is_not_obtained(&self) -> bool {
        matches!(self, ObtainError::NotObtained | ObtainError::NotObtainedByDeadline)
    }

    /// `err == ErrNotObtained`: only the bare error, never a joined one.
    pub fn equals_not_obtained(&self) -> bool {
        matches!(self, ObtainError::NotObtained)
    }
}

/// How long to wait before the next try; zero means stop.
pub trait RetryStrategy: Send {
    fn next_backoff(&mut self) -> Duration;
}

/// `ExponentialBackoff(min, max)`: `2 << n` ms on the n-th call, clamped to `[min, max]`.
pub struct ExponentialBackoff {
    min: Duration,
    max: Duration,
    count: u32,
}

impl ExponentialBackoff {
    pub fn new(min: Duration, max: Duration) -> Self {
        ExponentialBackoff { min, max, count: 0 }
    }
}

impl RetryStrategy for ExponentialBackoff {
    fn next_backoff(&mut self) -> Duration {
        self.count += 1;
        if self.count >= 25 {
            return self.max;
        }
        Duration::from_millis(2u64 << self.count).clamp(self.min, self.max)
    }
}

/// The tutorial's jitter: `1 ms + uniform[0, d)` around the inner strategy's `d`; zero stays
/// zero (stop). The 1 ms floor keeps a random 0 from stopping the retries by accident.
pub struct FullJitter<S>(pub S);

impl<S: RetryStrategy> RetryStrategy for FullJitter<S> {
    fn next_backoff(&mut self) -> Duration {
        let d = self.0.next_backoff();
        if d.is_zero() {
            return d;
        }
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_millis(1) + Duration::from_nanos(rand::rng().random_range(0..nanos))
    }
}

/// redislock's token: 16 random bytes, base64url without padding (22 characters).
pub fn token() -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes: [u8; 16] = rand::rng().random();
    let mut text = String::with_capacity(22);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, b| (n << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
        let chars = chunk.len() + 1;
        for i in 0..chars {
            text.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    text
}

/// `Obtain(ctx, key, ttl, opts)`: one `SET NX PX` per try; between tries, the strategy's wait.
pub async fn obtain(
    who: &RedisActor,
    key: &str,
    ttl: Duration,
    deadline: Option<Duration>,
    retry: &mut dyn RetryStrategy,
) -> Result<Lock, ObtainError> {
    let started = Instant::now();
    let give_up = started + deadline.unwrap_or(ttl);
    let token = token();
    let set = Command::new("SET")
        .key(key)
        .arg(&token)
        .arg("NX")
        .arg("PX")
        .arg(ttl.as_millis());
    let mut tries = 0u32;
    loop {
        tries += 1;
        let reply = if tries == 1 {
            who.run(&set).await
        } else {
            who.run_again(&set).await
        };
        let reply = reply.map_err(ObtainError::Redis)?;
        if reply == redis::Value::Okay {
            super::lock::say_tries(who, tries, started);
            let lock = Lock {
                key: key.to_owned(),
                token,
                fence: 0,
            };
            mark(who, &lock, LeaseChange::Acquired, Some(ttl));
            return Ok(lock);
        }
        let backoff = retry.next_backoff();
        if backoff.is_zero() {
            return Err(ObtainError::NotObtained);
        }
        if Instant::now() + backoff >= give_up {
            tokio::time::sleep_until(give_up).await;
            return Err(ObtainError::NotObtainedByDeadline);
        }
        tokio::time::sleep(backoff).await;
    }
}

/// `Lock.Release`: deletes the key if it still holds the token (the same compare-and-delete as
/// the tutorial's own lock); whether it did. redislock's own answer to a lost lease is
/// `ErrLockNotHeld`; the program does not look at it.
pub async fn release(who: &RedisActor, lock: &Lock) -> Result<bool, StepError> {
    match super::lock::release(who, lock).await {
        Ok(()) => Ok(true),
        Err(LockError::Step(error)) => Err(error),
        Err(_) => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_goes_sixteen_three_times_then_doubles_to_128() {
        let mut backoff = ExponentialBackoff::new(Duration::from_millis(16), Duration::from_millis(128));
        let waits: Vec<u128> = (0..8).map(|_| backoff.next_backoff().as_millis()).collect();
        assert_eq!(waits, vec![16, 16, 16, 32, 64, 128, 128, 128]);
    }

    #[test]
    fn jitter_stays_within_one_ms_and_d_plus_one() {
        let mut jitter = FullJitter(ExponentialBackoff::new(
            Duration::from_millis(16),
            Duration::from_millis(128),
        ));
        for _ in 0..50 {
            let wait = jitter.next_backoff();
            assert!(
                wait >= Duration::from_millis(1) && wait < Duration::from_millis(129),
                "{wait:?}"
            );
        }
        struct Stop;
        impl RetryStrategy for Stop {
            fn next_backoff(&mut self) -> Duration {
                Duration::ZERO
            }
        }
        assert_eq!(FullJitter(Stop).next_backoff(), Duration::ZERO, "zero still means stop");
    }

    #[test]
    fn a_joined_error_is_not_obtained_but_not_equal_to_it() {
        let joined = ObtainError::NotObtainedByDeadline;
        assert!(joined.is_not_obtained());
        assert!(!joined.equals_not_obtained());
        assert!(ObtainError::NotObtained.equals_not_obtained());
        assert_eq!(joined.to_string(), "redislock: not obtained\ncontext deadline exceeded");
    }

    #[test]
    fn tokens_are_22_base64url_characters() {
        let t = token();
        assert_eq!(t.len(), 22);
        assert!(
            t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{t}"
        );
        assert_ne!(t, token());
    }
}
