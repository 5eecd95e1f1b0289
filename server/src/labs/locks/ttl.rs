//! Work that outlives the lease: five requests take `lock:wallet:42` for 100 ms and then work for
//! 300 ms.
//! - `no-watchdog`: each lease expires mid-work and the next request takes the lock; three read
//!   100 before anyone wrote. `accepted=5 balance=80 expected=50 BROKEN`, and all five releases
//!   are refused as stale (the tutorial: `refused stale releases=5 elapsed=740ms`).
//! - `watchdog`: a refresh every TTL/3 (33 ms, each under a 33 ms deadline of its own) keeps the
//!   lease while the work runs; the requests take turns. `accepted=5 balance=50 expected=50 OK`,
//!   no stale release, and about five times 300 ms (the tutorial: `elapsed=1.52s`).

use super::lock::{LockError, acquire, refresh, release};
use super::{
    AMOUNT, LOCK_KEY, caller_lanes, finish_spends, go_duration, log_prefix, open_callers, read_balance, spend_round,
};
use crate::engine::{Budget, Command, RedisActor, Run, RunError};
use crate::labs::{PredictDef, ScenarioDef};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

pub const TTL: Duration = Duration::from_millis(100);
pub const WORK: Duration = Duration::from_millis(300);
pub const CALLERS: usize = 5;
pub const DEADLINE: Duration = Duration::from_secs(10);

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "locks/ttl",
    title: "Work that outlives the lease",
    hook: "A 100 ms lease, 300 ms of work: the lock expires while its holder is still inside",
    about: "Five requests each take a 100 ms lease and then work for 300 ms. Without a watchdog the lease falls off mid-work, the next request takes the lock and reads a balance nobody has written yet, and every release finds another token. With a watchdog refreshing the lease every third of its TTL, they take turns, at the cost of waiting.",
    variants: &[
        (
            "no-watchdog",
            "no watchdog",
            "The lease expires mid-work; the next request walks in",
        ),
        (
            "watchdog",
            "watchdog",
            "A refresh every TTL/3 keeps the lease while the work runs",
        ),
    ],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| caller_lanes(CALLERS),
    budget: Some(|_| Budget::postgres(0).and_redis(CALLERS as u32)),
    play: |run, variant| Box::pin(play(run, variant == "watchdog")),
    summarize: None,
    predict: Some(&PREDICT),
};

/// Predict, then run. The answers are what each variant does with a lease shorter than the work
/// (the module doc); `tests/locks.rs` checks each against the run's check line and its leases.
static PREDICT: PredictDef = PredictDef {
    question: "Five requests each take a 100 ms lease on the wallet, then work for 300 ms before writing. What happens?",
    choices: &[
        ("take-turns", "They take turns: five debits of 10, balance 50"),
        (
            "debits-lost",
            "Leases lapse mid-work, holders overlap: the balance ends above 50",
        ),
        (
            "others-give-up",
            "The first keeps the lock; the other four give up: balance 90",
        ),
        (
            "writes-dropped",
            "Each one notices its lease ran out and drops its write",
        ),
    ],
    only_on: &[],
    answers: &[
        (
            "no-watchdog",
            "debits-lost",
            "Nothing renews a lease, so each one expires a third of the way into the work; the next request takes the lock and reads a balance the holder has not written yet, and their writes overwrite each other.",
        ),
        (
            "watchdog",
            "take-turns",
            "A refresh every third of the TTL keeps pushing the expiry forward while the work runs, so each request holds the lock until it releases it and the next one reads the balance it wrote.",
        ),
    ],
};

/// The spend with the watchdog's say: it does not write once the lease is known lost, like a
/// write under a cancelled context.
async fn spend_unless_lost(who: &RedisActor, lost: &AtomicBool) -> Result<bool, RunError> {
    let balance = read_balance(who).await?;
    if balance < AMOUNT {
        return Ok(false);
    }
    tokio::time::sleep(WORK).await;
    if lost.load(Ordering::SeqCst) {
        return Err(RunError::Other("context canceled".into()));
    }
    who.run(&Command::new("SET").key(super::BALANCE_KEY).arg(balance - AMOUNT))
        .await?;
    Ok(true)
}

/// Refreshes the lease every TTL/3 until a refresh fails; then marks it lost, says so, and waits
/// (the work it guards goes on to its end).
async fn watchdog(who: &RedisActor, lock: &super::lock::Lock, lost: &AtomicBool) {
    let every = TTL / 3;
    loop {
        tokio::time::sleep(every).await;
        if let Err(error) = refresh(who, lock, TTL, every).await {
            lost.store(true, Ordering::SeqCst);
            who.lane().say(format!("lock lost: {error}"));
            std::future::pending::<()>().await;
        }
    }
}

async fn play(run: &Run, with_watchdog: bool) -> Result<(), RunError> {
    let callers = open_callers(run, CALLERS).await?;
    let stale = AtomicI64::new(0);
    let round = spend_round(run, &callers, |who| {
        let stale = &stale;
        async move {
            let lock = acquire(who, LOCK_KEY, TTL, DEADLINE).await?;
            let lost = AtomicBool::new(false);
            let spent = if with_watchdog {
                tokio::select! {
                    spent = spend_unless_lost(who, &lost) => spent,
                    () = watchdog(who, &lock, &lost) => unreachable!("the watchdog only ever waits once it gives up"),
                }
            } else {
                spend_unless_lost(who, &lost).await
            };
            match release(who, &lock).await {
                Ok(()) => {}
                Err(LockError::NotHeld) => {
                    stale.fetch_add(1, Ordering::SeqCst);
                }
                Err(other) => return Err(other.into()),
            }
            spent
        }
    })
    .await?;
    run.say_plain(format!(
        "{}refused stale releases={} elapsed={}",
        log_prefix(),
        stale.load(Ordering::SeqCst),
        go_duration(round.elapsed)
    ));
    let how = if with_watchdog {
        "The watchdog kept each lease alive while its work ran, so the requests took turns."
    } else {
        "Each lease expired in the middle of its work; the next request took the lock and read a balance its holder had not written yet."
    };
    let tutorial: &[(&str, &str)] = if with_watchdog {
        &[
            ("check line", "accepted=5 balance=50 expected=50 OK"),
            ("log", "refused stale releases=0 elapsed=1.52s"),
        ]
    } else {
        &[
            ("check line", "accepted=5 balance=80 expected=50 BROKEN"),
            ("log", "refused stale releases=5 elapsed=740ms"),
        ]
    };
    finish_spends(run, round.before, CALLERS, round.accepted, round.balance, how, tutorial).await
}
