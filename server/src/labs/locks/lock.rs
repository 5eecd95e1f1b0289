//! The lock the tutorial builds, on a real Redis: a lease is one `SET key token NX PX ttl`, the
//! token is random and the caller's own, and release, refresh and the fenced acquire are Lua
//! scripts, so the check and the change happen with nothing in between.
//!
//! Every call goes through the caller's [`RedisActor`], so each command is a step on its lane.

use crate::engine::{Command, RedisActor, RunError, StepError, reply_int};
use rand::Rng;
use shared::{EventKind, LeaseChange};
use std::time::Duration;
use thiserror::Error;
use tokio::time::Instant;

/// Deletes the key only if it still holds the caller's token: 1 if it did, 0 if not.
pub const RELEASE: &str =
    r#"if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end"#;

/// Resets the TTL (ARGV[2] ms) only if the key still holds the caller's token.
pub const REFRESH: &str =
    r#"if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end"#;

/// Takes the lease and, only if it won it, the next fencing token, in one step: only winners get
/// tokens. A nil reply means busy.
pub const ACQUIRE_FENCED: &str = r#"if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return redis.call("incr", KEYS[2]) else return false end"#;

/// What the tutorial's lock package answers, word for word.
#[derive(Debug, Error)]
pub enum LockError {
    /// The release or refresh found another token, or none: the lease had expired.
    #[error("lock not held (expired or taken by someone else)")]
    NotHeld,
    /// A TTL under 1 ms would make a lock that never expires; nothing is sent to Redis.
    #[error("lock TTL must be at least 1ms")]
    BadTtl,
    /// The caller's deadline passed while the lock was busy.
    #[error("acquire {key}: context deadline exceeded")]
    Deadline { key: String },
    /// Redis itself refused or failed.
    #[error(transparent)]
    Step(#[from] StepError),
}

impl From<LockError> for RunError {
    fn from(error: LockError) -> Self {
        match error {
            LockError::Step(step) => RunError::Step(step),
            other => RunError::Other(other.to_string()),
        }
    }
}

/// A lease held by one caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lock {
    pub key: String,
    pub token: String,
    /// The fencing token, when the lease came from [`acquire_fenced`]; 0 otherwise.
    pub fence: i64,
}

/// A lock token: 26 random base32 characters, as the tutorial's (see [`crate::labs::rand_text`]).
pub fn token() -> String {
    crate::labs::rand_text()
}

/// How long a busy caller waits before trying again: 5 ms plus up to 10 ms of jitter, so
/// waiters do not retry in lockstep.
pub fn busy_wait() -> Duration {
    Duration::from_millis(5) + Duration::from_micros(rand::rng().random_range(0..10_000))
}

/// The TTL in whole milliseconds, refusing one under 1 ms before anything is sent.
fn ttl_ms(ttl: Duration) -> Result<u128, LockError> {
    if ttl < Duration::from_millis(1) {
        return Err(LockError::BadTtl);
    }
    Ok(ttl.as_millis())
}

/// Marks on the caller's lane what happened to its lease, so the timeline can draw who holds
/// the lock and when its TTL runs out. Even an unseen caller (one of fifty) reports its leases:
/// the crowd strip shows them all.
pub fn mark(who: &RedisActor, lock: &Lock, change: LeaseChange, ttl: Option<Duration>) {
    who.lane().emit_always(EventKind::Lease {
        actor: who.name().to_owned(),
        key: lock.key.clone(),
        change,
        ttl_ms: ttl.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        fence: (lock.fence != 0).then_some(lock.fence),
    });
}

/// Takes the lease on `key` for `ttl`, retrying while it is busy until `deadline`.
pub async fn acquire(who: &RedisActor, key: &str, ttl: Duration, deadline: Duration) -> Result<Lock, LockError> {
    let ms = ttl_ms(ttl)?;
    let token = token();
    let started = Instant::now();
    let give_up = started + deadline;
    let set = Command::new("SET").key(key).arg(&token).arg("NX").arg("PX").arg(ms);
    let mut tries = 0u32;
    loop {
        tries += 1;
        let reply = if tries == 1 {
            who.run(&set).await?
        } else {
            who.run_again(&set).await?
        };
        if reply == redis::Value::Okay {
            say_tries(who, tries, started);
            let lock = Lock {
                key: key.to_owned(),
                token,
                fence: 0,
            };
            mark(who, &lock, LeaseChange::Acquired, Some(ttl));
            return Ok(lock);
        }
        wait_or_give_up(who, key, give_up, tries, started).await?;
    }
}

/// Takes the lease on `key` and the next fencing token from `fence_key`, retrying while busy.
pub async fn acquire_fenced(
    who: &RedisActor,
    key: &str,
    fence_key: &str,
    ttl: Duration,
    deadline: Duration,
) -> Result<Lock, LockError> {
    let ms = ttl_ms(ttl)?;
    let token = token();
    let started = Instant::now();
    let give_up = started + deadline;
    let script = Command::new("EVAL")
        .script("acquire-fenced script", ACQUIRE_FENCED)
        .arg(2)
        .key(key)
        .key(fence_key)
        .arg(&token)
        .arg(ms);
    let mut tries = 0u32;
    loop {
        tries += 1;
        let reply = if tries == 1 {
            who.run(&script).await?
        } else {
            who.run_again(&script).await?
        };
        if let Some(fence) = reply_int(&reply) {
            say_tries(who, tries, started);
            let lock = Lock {
                key: key.to_owned(),
                token,
                fence,
            };
            mark(who, &lock, LeaseChange::Acquired, Some(ttl));
            return Ok(lock);
        }
        wait_or_give_up(who, key, give_up, tries, started).await?;
    }
}

/// After the first try, a caller's retries are summed up in one note instead of a card each.
pub fn say_tries(who: &RedisActor, tries: u32, started: Instant) {
    if tries > 1 {
        who.lane().note(format!(
            "took the lock on try {tries}, after {} ms of retries",
            started.elapsed().as_millis()
        ));
    }
}

async fn wait_or_give_up(
    who: &RedisActor,
    key: &str,
    give_up: Instant,
    tries: u32,
    started: Instant,
) -> Result<(), LockError> {
    let wait = busy_wait();
    if Instant::now() + wait >= give_up {
        tokio::time::sleep_until(give_up).await;
        who.lane().note(format!(
            "gave up after {tries} tries in {} ms",
            started.elapsed().as_millis()
        ));
        return Err(LockError::Deadline { key: key.to_owned() });
    }
    tokio::time::sleep(wait).await;
    Ok(())
}

/// Gives the lease back, only if it is still this caller's.
pub async fn release(who: &RedisActor, lock: &Lock) -> Result<(), LockError> {
    let script = Command::new("EVAL")
        .script("release script", RELEASE)
        .arg(1)
        .key(&lock.key)
        .arg(&lock.token);
    match reply_int(&who.run(&script).await?) {
        Some(1) => {
            mark(who, lock, LeaseChange::Released, None);
            Ok(())
        }
        _ => {
            mark(who, lock, LeaseChange::Lost, None);
            Err(LockError::NotHeld)
        }
    }
}

/// Extends the lease to `ttl` from now, only if it is still this caller's; `within` bounds the
/// wait for Redis's answer (the watchdog refreshes under a deadline of its own).
pub async fn refresh(who: &RedisActor, lock: &Lock, ttl: Duration, within: Duration) -> Result<(), LockError> {
    let ms = ttl_ms(ttl)?;
    let script = Command::new("EVAL")
        .script("refresh script", REFRESH)
        .arg(1)
        .key(&lock.key)
        .arg(&lock.token)
        .arg(ms);
    match reply_int(&who.run_within(&script, within).await?) {
        Some(1) => {
            mark(who, lock, LeaseChange::Refreshed, Some(ttl));
            Ok(())
        }
        _ => {
            mark(who, lock, LeaseChange::Lost, None);
            Err(LockError::NotHeld)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_26_base32_characters_and_differ() {
        let (a, b) = (token(), token());
        assert_eq!(a.len(), 26);
        assert!(
            a.bytes().all(|c| c.is_ascii_uppercase() || (b'2'..=b'7').contains(&c)),
            "{a}"
        );
        assert_ne!(a, b);
    }

    #[test]
    fn busy_waits_are_five_to_fifteen_ms() {
        for _ in 0..200 {
            let wait = busy_wait();
            assert!(
                wait >= Duration::from_millis(5) && wait < Duration::from_millis(15),
                "{wait:?}"
            );
        }
    }

    #[test]
    fn a_ttl_under_one_ms_is_refused_with_the_tutorials_words() {
        assert!(matches!(ttl_ms(Duration::ZERO), Err(LockError::BadTtl)));
        assert!(matches!(ttl_ms(Duration::from_micros(999)), Err(LockError::BadTtl)));
        assert_eq!(ttl_ms(Duration::from_millis(1)).ok(), Some(1));
        assert_eq!(LockError::BadTtl.to_string(), "lock TTL must be at least 1ms");
        assert_eq!(
            LockError::Deadline {
                key: "lock:wallet:42".into()
            }
            .to_string(),
            "acquire lock:wallet:42: context deadline exceeded"
        );
    }
}
