//! The lock primitive, typed by hand in redis-cli: `SET lock:wallet:42 token-a NX PX 30000`
//! answers `OK`; the same with `token-b` answers `(nil)`; `PTTL` shows the lease running down
//! (the tutorial saw `(integer) 29884`); the release script with the wrong token answers
//! `(integer) 0` and leaves the lock alone; with the right one, `(integer) 1`.

use super::LOCK_KEY;
use super::lock::RELEASE;
use crate::engine::{Budget, Command, RedisActor, Run, RunError, reply_int};
use crate::labs::{ScenarioDef, actors_at};
use shared::{Check, Value, Verdict};

/// The lease the session takes, in ms.
pub const TTL_MS: i64 = 30_000;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "locks/redis-cli",
    title: "The lock by hand: SET NX PX and a release that checks the token",
    hook: "Two callers, one key: who gets the lock, and who may give it back?",
    about: "One command takes the lock: SET with NX (only if nobody holds it) and PX (a lease that expires by itself), holding a token only its owner knows. A second caller gets nil. Releasing is a Lua script that deletes the key only if it still holds the caller's token, so B cannot release A's lock.",
    variants: &[("redis-cli", "redis-cli", "The commands as typed in redis-cli")],
    steppable: true,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| actors_at(&["redis-cli"], "one connection, typed by hand"),
    budget: Some(|_| Budget::postgres(0).and_redis(1)),
    play: |run, _| Box::pin(play(run)),
    summarize: None,
    predict: None,
};

/// Types `command` at the prompt and prints the reply, as redis-cli shows them.
async fn typed(cli: &RedisActor, prompt: &str, command: Command) -> Result<redis::Value, RunError> {
    cli.lane().say_exactly(format!("{prompt} {}", command.text()));
    let reply = cli.run(&command).await?;
    for line in crate::engine::redis::reply_text(&reply, "").lines() {
        cli.lane().say_exactly(line);
    }
    Ok(reply)
}

fn release_with(token: &str) -> Command {
    Command::new("EVAL").arg(RELEASE).arg(1).key(LOCK_KEY).arg(token)
}

async fn play(run: &Run) -> Result<(), RunError> {
    let cli = run.redis("redis-cli").await?;
    let prompt = format!("{}>", run.redis_address());
    let set = |token: &str| {
        Command::new("SET")
            .key(LOCK_KEY)
            .arg(token)
            .arg("NX")
            .arg("PX")
            .arg(TTL_MS)
    };
    let before = run.redis_keys("redis", &[LOCK_KEY]).await?;
    let a = typed(&cli, &prompt, set("token-a")).await?;
    let b = typed(&cli, &prompt, set("token-b")).await?;
    let pttl = reply_int(&typed(&cli, &prompt, Command::new("PTTL").key(LOCK_KEY)).await?).unwrap_or(-2);
    let held = run.redis_keys("redis", &[LOCK_KEY]).await?;
    let wrong = reply_int(&typed(&cli, &prompt, release_with("token-b")).await?);
    let right = reply_int(&typed(&cli, &prompt, release_with("token-a")).await?);
    let after = run.redis_keys("redis", &[LOCK_KEY]).await?;
    let nothing = shared::Table {
        rows: Vec::new(),
        ..after.clone()
    };
    super::emit_one_table_ledgers(run, before, after, nothing);
    let held_by_a = held
        .rows
        .first()
        .is_some_and(|row| row.get(1) == Some(&Value::from("token-a")));
    let checks = vec![
        Check::new(
            "the first SET takes the lock",
            format!("{a:?}"),
            a == redis::Value::Okay,
        ),
        Check::new("the second SET gets nil", format!("{b:?}"), b == redis::Value::Nil),
        Check::new(
            format!("the lease runs down from {TTL_MS} ms"),
            format!("PTTL {pttl}"),
            0 < pttl && pttl <= TTL_MS,
        ),
        Check::new("the key holds A's token", format!("held by A: {held_by_a}"), held_by_a),
        Check::new("B's release leaves it alone", format!("{wrong:?}"), wrong == Some(0)),
        Check::new("A's release deletes it", format!("{right:?}"), right == Some(1)),
    ];
    run.verdict(Verdict::judge(
        checks,
        "One caller holds the lock; only its token can release it",
        "NX and PX in one command make a lease that cannot be left behind forever, and the release script compares the token and deletes the key with nothing in between.",
    ));
    Ok(())
}
