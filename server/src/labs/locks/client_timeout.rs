//! Client timeouts (from Step 3's prose): Redis stalls (`CLIENT PAUSE`), and a call with a 100 ms
//! deadline waits for it.
//! - `default`: the client does not cut its own read short for the caller's deadline; it waits
//!   out its own read timeout, 5 s (the tutorial measured 5 s with go-redis's defaults).
//! - `context-timeouts`: the deadline cuts the read short: the call fails after 100 ms.
//!
//! The stall happens on a `redis-server` the run starts for itself: pausing the shared one would
//! stall every other reader's run.

use super::BALANCE_KEY;
use crate::engine::{Budget, Command, Run, RunError, StepError};
use crate::labs::{PredictDef, ScenarioDef, actors_at};
use shared::{Check, Moment, Verdict};
use std::time::Duration;

/// The caller's own deadline, and the client's read timeout when it does not honour it.
pub const DEADLINE: Duration = Duration::from_millis(100);
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long Redis stalls: longer than the read timeout.
pub const PAUSE_MS: u64 = 6_000;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "locks/client-timeout",
    title: "A stalled Redis and a 100 ms deadline",
    hook: "The caller gave up after 100 ms; its client kept waiting for five seconds",
    about: "A watchdog's refresh only helps if a call to a stalled Redis fails within its deadline. Here Redis is paused (on a private server the run starts for itself) and a GET is sent with a 100 ms deadline. A client that ignores the caller's deadline waits out its own 5 s read timeout; one that honours it fails after 100 ms.",
    variants: &[
        (
            "default",
            "default client",
            "The deadline is the caller's; the client waits 5 s",
        ),
        (
            "context-timeouts",
            "deadline honoured",
            "The client cuts the read short at the deadline",
        ),
    ],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| actors_at(&["admin", "caller"], "a private redis-server"),
    budget: Some(|_| Budget::postgres(0).and_processes(1)),
    play: |run, variant| Box::pin(play(run, variant == "context-timeouts")),
    summarize: None,
    predict: Some(&PREDICT),
};

/// Predict, then run. Both endings are fixed by the constants (a 100 ms deadline, a 5 s read
/// timeout, a 6 s pause), not by timing; `tests/locks.rs` checks each against when and how the
/// caller's GET really ended.
static PREDICT: PredictDef = PredictDef {
    question: "Redis is paused for 6 s when the caller sends a GET with a 100 ms deadline. What does the caller get?",
    choices: &[
        ("fails-at-deadline", "A timeout after 100 ms, at its own deadline"),
        (
            "fails-after-5s",
            "A timeout after 5 s, when the client's read timeout runs out",
        ),
        ("answers-after-pause", "The balance, once Redis wakes up after 6 s"),
        (
            "answers-at-once",
            "The balance at once: a paused Redis still serves reads",
        ),
    ],
    only_on: &[],
    answers: &[
        (
            "default",
            "fails-after-5s",
            "The 100 ms deadline is only the caller's; this client keeps waiting on the socket until its own 5 s read timeout, which runs out a second before Redis wakes.",
        ),
        (
            "context-timeouts",
            "fails-at-deadline",
            "The client stops waiting for the reply as soon as the caller's deadline passes, so the GET fails after 100 ms while Redis is still paused.",
        ),
    ],
};

async fn play(run: &Run, honours_deadline: bool) -> Result<(), RunError> {
    let private = run.private_redis().await?;
    let admin = run.redis_on("admin", &private.client, None, false).await?;
    let caller = run
        .redis_on("caller", &private.client, Some(READ_TIMEOUT), false)
        .await?;
    caller.run(&Command::new("SET").key(BALANCE_KEY).arg(100)).await?;
    admin
        .run(&Command::new("CLIENT").arg("PAUSE").arg(PAUSE_MS).arg("ALL"))
        .await?;
    let get = Command::new("GET").key(BALANCE_KEY);
    let started = tokio::time::Instant::now();
    let failed = if honours_deadline {
        caller.run_within(&get, DEADLINE).await
    } else {
        caller.run(&get).await
    };
    let elapsed = started.elapsed();
    let timed_out = matches!(failed, Err(StepError::Timeout { .. }));
    let who = if honours_deadline {
        "deadline honoured"
    } else {
        "default client"
    };
    run.say_plain(format!(
        "{who}: a GET with a {}ms deadline {} after {}",
        DEADLINE.as_millis(),
        if timed_out { "failed" } else { "answered" },
        super::go_duration(elapsed)
    ));
    run.emit(shared::EventKind::Ledger {
        moment: Moment::Reference,
        ledger: super::tutorial_figures(&[
            ("default go-redis client", "failed after 5 s"),
            ("ContextTimeoutEnabled: true", "failed after 100 ms"),
        ]),
    });
    // Redis on its own: the stall ends when the private server does.
    drop((admin, caller, private));
    let on_time = elapsed < DEADLINE + Duration::from_millis(200);
    run.verdict(Verdict::judge(
        vec![
            Check::new(
                "the call fails while Redis is stalled",
                format!("timed out: {timed_out}"),
                timed_out,
            ),
            Check::new(
                format!("it fails within its {} ms deadline", DEADLINE.as_millis()),
                format!("after {}", super::go_duration(elapsed)),
                on_time,
            ),
        ],
        if on_time {
            "The deadline cut the read short: the caller knew in 100 ms".to_owned()
        } else {
            format!(
                "The caller's 100 ms deadline was ignored: it waited {}",
                super::go_duration(elapsed)
            )
        },
        "A watchdog that refreshes under a deadline only protects a lease if the client gives up at that deadline.",
    ));
    Ok(())
}
