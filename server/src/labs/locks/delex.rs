//! Redis 8.4's release: `DELEX key IFEQ token` deletes the key only if it holds the token, with
//! no script. Releasing the same lock twice: `first release:  <nil>`, then `second release: lock
//! not held (expired or taken by someone else)`. A server before 8.4 answers `ERR unknown
//! command`, the very failure the tutorial warns about; racelab shows that reply and releases
//! with the Lua script instead, which works on any Redis that allows scripting.

use super::LOCK_KEY;
use super::lock::{LockError, acquire, release};
use crate::engine::{Budget, Command, RedisActor, Run, RunError, StepError, reply_int};
use crate::labs::{ScenarioDef, actors_at};
use shared::{Check, Verdict};
use std::time::Duration;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "locks/delex",
    title: "DELEX: the release without a script (Redis 8.4+)",
    hook: "One command compares the token and deletes the lock, on servers that have it",
    about: "DELEX key IFEQ token deletes the lock only if it still holds the caller's token: the release script as one command. The second release finds nothing to delete. On a Redis before 8.4 the command does not exist, and the server says so: check your provider before switching, and keep the Lua release as the portable default.",
    variants: &[("delex", "DELEX IFEQ", "Release the same lock twice")],
    steppable: true,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| actors_at(&["holder"], "Redis"),
    budget: Some(|_| Budget::postgres(0).and_redis(2)),
    play: |run, _| Box::pin(play(run)),
    summarize: None,
    predict: None,
};

/// The release by DELEX: `Ok(())`, not held, or the server's own refusal.
async fn release_delex(holder: &RedisActor, token: &str) -> Result<Result<(), LockError>, RunError> {
    let delex = Command::new("DELEX").key(LOCK_KEY).arg("IFEQ").arg(token);
    match holder.run(&delex).await {
        Ok(reply) if reply_int(&reply) == Some(1) => Ok(Ok(())),
        Ok(_) => Ok(Err(LockError::NotHeld)),
        Err(refused @ StepError::Redis { .. }) => Ok(Err(LockError::Step(refused))),
        Err(other) => Err(other.into()),
    }
}

/// The server's version, from `INFO server`, asked off the timeline.
async fn server_version(run: &Run) -> Option<String> {
    let probe = run.redis_worker("probe").await.ok()?;
    let info = probe.run(&Command::new("INFO").arg("server")).await.ok()?;
    let redis::Value::BulkString(bytes) = info else {
        return None;
    };
    String::from_utf8_lossy(&bytes)
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .map(|v| v.trim().to_owned())
}

/// `<nil>` or the error, as Go prints an error value.
fn printed(result: &Result<(), LockError>) -> String {
    match result {
        Ok(()) => "<nil>".into(),
        Err(error) => error.to_string(),
    }
}

async fn play(run: &Run) -> Result<(), RunError> {
    let holder = run.redis("holder").await?;
    let before = run.redis_keys("redis", &[LOCK_KEY]).await?;
    let lock = acquire(&holder, LOCK_KEY, Duration::from_secs(30), Duration::from_secs(5)).await?;
    let first = release_delex(&holder, &lock.token).await?;
    holder
        .lane()
        .say_exactly(format!("first release:  {}", printed(&first)));
    let unknown = matches!(&first, Err(LockError::Step(StepError::Redis { .. })));
    let second = if unknown {
        let version = server_version(run).await.unwrap_or_else(|| "this server".into());
        holder.lane().note(format!(
            "Redis {version} has no DELEX (it came in 8.4): releasing with the Lua script instead"
        ));
        release(&holder, &lock).await
    } else {
        release_delex(&holder, &lock.token).await?
    };
    holder
        .lane()
        .say_exactly(format!("second release: {}", printed(&second)));
    let after = run.redis_keys("redis", &[LOCK_KEY]).await?;
    super::emit_one_table_ledgers(run, before.clone(), after.clone(), before);
    let checks = vec![
        Check::new("the server knows DELEX", printed(&first), !unknown),
        Check::new(
            "the lock is released",
            format!("keys left: {}", after.rows.len()),
            after.rows.is_empty(),
        ),
    ];
    let headline = if unknown {
        "This Redis has no DELEX: the release fails with ERR unknown command"
    } else {
        "DELEX released the lock once; the second release found it gone"
    };
    run.verdict(Verdict::judge(
        checks,
        headline,
        "DELEX IFEQ is Redis 8.4's compare-and-delete; before 8.4 (and on Valkey, which has DELIFEQ) the Lua release is the portable one.",
    ));
    Ok(())
}
