//! A zero TTL means no expiry: `SET key token NX` without PX makes a lock that stays until
//! someone deletes it (`PTTL` answers `(integer) -1`). The tutorial's lock refuses a TTL under
//! 1 ms before sending anything: `lock TTL must be at least 1ms`.

use super::LOCK_KEY;
use super::lock::{LockError, acquire};
use crate::engine::{Budget, Command, Run, RunError, reply_int};
use crate::labs::{ScenarioDef, actors_at};
use shared::{Check, Verdict};
use std::time::Duration;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "locks/zero-ttl",
    title: "A zero TTL makes a lock that never expires",
    hook: "An unset TTL in a config file, and the lock outlives every process",
    about: "The guarded lock refuses a TTL under 1 ms and sends nothing to Redis. Beside it, the same SET without PX, as a client sends it when its TTL is zero: the key has no expiry (PTTL -1), and if its holder crashes, it stays until someone deletes it by hand.",
    variants: &[("zero-ttl", "TTL 0", "The guard, and what happens without it")],
    steppable: true,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| actors_at(&["guarded", "unguarded"], "Redis"),
    budget: Some(|_| Budget::postgres(0).and_redis(2)),
    play: |run, _| Box::pin(play(run)),
    summarize: None,
    predict: None,
};

async fn play(run: &Run) -> Result<(), RunError> {
    let guarded = run.redis("guarded").await?;
    let unguarded = run.redis("unguarded").await?;
    let before = run.redis_keys("redis", &[LOCK_KEY]).await?;
    let refused = match acquire(&guarded, LOCK_KEY, Duration::ZERO, Duration::from_secs(1)).await {
        Err(LockError::BadTtl) => true,
        Ok(_) => false,
        Err(other) => return Err(other.into()),
    };
    guarded
        .lane()
        .say(format!("acquire with a TTL of 0: {}", LockError::BadTtl));
    let nothing_written = reply_int(&unguarded.run(&Command::new("EXISTS").key(LOCK_KEY)).await?) == Some(0);
    unguarded
        .run(&Command::new("SET").key(LOCK_KEY).arg("token-a").arg("NX"))
        .await?;
    let pttl = reply_int(&unguarded.run(&Command::new("PTTL").key(LOCK_KEY)).await?).unwrap_or(-2);
    unguarded
        .lane()
        .say(format!("SET without PX: PTTL {pttl}, the lock never expires"));
    let after = run.redis_keys("redis", &[LOCK_KEY]).await?;
    super::emit_one_table_ledgers(run, before.clone(), after, before);
    let checks = vec![
        Check::new("a TTL of 0 is refused", format!("refused: {refused}"), refused),
        Check::new(
            "the refused acquire wrote nothing",
            format!("key existed afterwards: {}", !nothing_written),
            nothing_written,
        ),
        Check::new("a lock without PX expires", format!("PTTL {pttl}"), pttl >= 0),
    ];
    run.verdict(Verdict::judge(
        checks,
        "Without the guard, the lock has no expiry (PTTL -1)",
        "SET NX without PX never expires: a holder that dies leaves the lock forever. The guard refuses the TTL before anything reaches Redis.",
    ));
    Ok(())
}
