//! The hand-rolled lock: the same fifty requests, each taking `lock:wallet:42` (`SET NX PX
//! 2000`, retrying every 5–15 ms for up to 5 s) before it spends, and releasing it with the
//! token-checked script. The burst becomes a queue: ten are accepted, the rest find the balance
//! spent. `accepted=10 balance=0 expected=0 OK`, and no lock key is left.

use super::lock::{acquire, release};
use super::{AMOUNT, CALLERS, LOCK_KEY, WORK, caller_lanes, finish_spends, open_callers, spend, spend_round};
use crate::engine::{Budget, Run, RunError};
use crate::labs::ScenarioDef;
use std::time::Duration;

/// The lease, and how long a request waits for it.
pub const TTL: Duration = Duration::from_secs(2);
pub const DEADLINE: Duration = Duration::from_secs(5);

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "locks/hand-lock",
    title: "Fifty requests behind a hand-rolled lock",
    hook: "SET NX PX and a token-checked release turn the burst into a queue",
    about: "Each request takes the lock with one SET NX PX (a two-second lease and a random token), retries every 5 to 15 ms while it is taken, spends, and releases it with a script that deletes the key only if it still holds its own token. One request at a time reads and writes the balance: ten are accepted, forty find it spent.",
    variants: &[(
        "lock",
        "SET NX PX + token",
        "Acquire, spend, release with the token check",
    )],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| caller_lanes(CALLERS),
    budget: Some(|_| Budget::postgres(0).and_redis(CALLERS as u32)),
    play: |run, _| Box::pin(play(run)),
    summarize: None,
    predict: None,
};

async fn play(run: &Run) -> Result<(), RunError> {
    let callers = open_callers(run, CALLERS).await?;
    let round = spend_round(run, &callers, |who| async move {
        let lock = acquire(who, LOCK_KEY, TTL, DEADLINE).await?;
        let spent = spend(who, AMOUNT, WORK).await;
        if let Err(error) = release(who, &lock).await {
            who.lane().say(format!("release: {error}"));
        }
        spent
    })
    .await?;
    finish_spends(
        run,
        round.before,
        CALLERS,
        round.accepted,
        round.balance,
        "Only the lock's holder read and wrote the balance; the next request waited, read what it left, and paid from that.",
        &[("check line", "accepted=10 balance=0 expected=0 OK, on all five runs")],
    )
    .await
}
