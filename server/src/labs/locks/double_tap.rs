//! Double tap: two requests for wallet 42 in the same millisecond, no lock. Both read 100, both
//! decide 10 is affordable, both write 90: two spends accepted, the balance down by one.
//! `accepted=2 balance=90 expected=80 BROKEN`.
//!
//! The two requests take their turns in a fixed order (both read, then both write), so the lost
//! update happens on every run, not only when the timing is unlucky.

use super::{AMOUNT, BALANCE_KEY, caller, check_line, finish_spends, read_balance, reset_balance};
use crate::engine::{Budget, Command, Run, RunError};
use crate::labs::{ScenarioDef, actors_at};

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "locks/double-tap",
    title: "Double tap: two requests, one balance, no lock",
    hook: "A retry and its original land on two servers at once: both spend, one debit sticks",
    about: "Two requests read the same balance of 100, both decide they can afford 10, and both write back 90. The user spent 20, the wallet recorded 10, and nothing in any log looks wrong.",
    variants: &[("no-lock", "no lock", "Both read, then both write")],
    steppable: true,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| actors_at(&["req01", "req02"], "Redis"),
    budget: Some(|_| Budget::postgres(0).and_redis(2)),
    play: |run, _| Box::pin(play(run)),
    summarize: None,
    predict: None,
};

async fn play(run: &Run) -> Result<(), RunError> {
    let first = run.redis(&caller(0)).await?;
    let second = run.redis(&caller(1)).await?;
    reset_balance(&first).await?;
    let before = super::before_spends(run).await?;
    let read_first = read_balance(&first).await?;
    first.lane().say(format!("read {read_first}: {AMOUNT} is affordable"));
    let read_second = read_balance(&second).await?;
    second.lane().say(format!("read {read_second}: {AMOUNT} is affordable"));
    for (who, read) in [(&first, read_first), (&second, read_second)] {
        who.run(&Command::new("SET").key(BALANCE_KEY).arg(read - AMOUNT))
            .await?;
        who.lane().say(format!("wrote {}", read - AMOUNT));
    }
    let balance = read_balance(&first).await?;
    let (line, _) = check_line(2, balance);
    run.say_plain(line);
    finish_spends(
        run,
        before,
        2,
        2,
        balance,
        "Each request wrote back the balance it had read, so the second write erased the first.",
        &[("the story", "both read 100, both wrote 90: spent 20, recorded 10")],
    )
    .await
}
