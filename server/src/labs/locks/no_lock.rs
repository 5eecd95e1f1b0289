//! No lock: fifty requests spend 10 each from a balance of 100, all released at once. Every one
//! reads a balance that covers it, so all fifty are accepted, and each writes back its own
//! `read − 10` over the others'. `accepted=50 balance=60..80 expected=-400 BROKEN` (the tutorial:
//! 60, 70, 80 over its runs). A correct system accepts 10 and ends at 0.

use super::{AMOUNT, CALLERS, WORK, caller_lanes, finish_spends, open_callers, spend, spend_round};
use crate::engine::{Budget, Run, RunError};
use crate::labs::ScenarioDef;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "locks/no-lock",
    title: "Fifty requests, no lock",
    hook: "Fifty requests spend 10 from 100 at once: how many believe they can afford it?",
    about: "Fifty requests, each on its own Redis connection, read the balance, wait 2 ms of work, and write back what they read less 10. All of them read a balance that covers them, so all fifty are accepted, and the balance drops by only a few spends: each write erased the ones before it.",
    variants: &[(
        "no-lock",
        "no lock",
        "Read, work, write: nothing in between stops another request",
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
    let round = spend_round(run, &callers, |who| spend(who, AMOUNT, WORK)).await?;
    finish_spends(
        run,
        round.before,
        CALLERS,
        round.accepted,
        round.balance,
        "Every request read a balance that covered it before any of them wrote: each write erased the ones before it.",
        &[
            ("accepted", "50 (three of five runs shown)"),
            ("balance", "80, 70, 60"),
            (
                "racelab",
                "releases all fifty in one instant, so all read 100 and the last write leaves 90",
            ),
        ],
    )
    .await
}
