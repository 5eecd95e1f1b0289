//! The approve rule and its three fixes. Alice and bob each approve $3,000 against $5,000; in
//! every variant exactly one is approved: 1 expense, $3,000.
//!
//! - `serializable` (fix 1, SERIALIZABLE + whole-transaction retry): bob's first attempt fails
//!   with 40001 at his INSERT; attempt 2 reads alice's $3,000 and rejects:
//!   `approved=False after 2 attempt(s)`.
//! - `for-update` (fix 2, READ COMMITTED + row lock): bob's `SELECT … FOR UPDATE` waits for
//!   alice, then reads $3,000 and rejects.
//! - `conditional` (fix 3, one conditional UPDATE): bob's UPDATE waits for alice's row lock, then
//!   re-checks its WHERE on her committed row and matches 0 rows. `spent` ends at $3,000.

use super::write_skew::overspend_verdict;
use super::{
    AMOUNT, BUDGET, LOCK_TEAM, RESERVE, TEAM, check_and_insert, ledger_after, ledger_before, ledger_of, say_totals,
};
use crate::engine::{Level, PgActor, Retried, RetryPolicy, Run, RunError, Signal, retry};
use crate::labs::{PredictDef, ScenarioDef, actors_at};
use shared::Service;
use shared::usd;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "isolation/approve",
    title: "Three ways to approve safely",
    hook: "The same two $3,000 approvals, with each of the three fixes",
    about: "The same race, fixed three ways: SERIALIZABLE with a loop that retries the whole transaction, a row lock on the team taken before checking, and one conditional UPDATE that reserves the money only if it fits. Each approves exactly one $3,000 expense.",
    variants: &[
        (
            "serializable",
            "SERIALIZABLE + retry",
            "PostgreSQL cancels Bob's attempt; the retry loop runs his whole transaction again",
        ),
        (
            "for-update",
            "row lock",
            "Both lock the team row first; Bob waits, then sees Alice's $3,000",
        ),
        ("conditional", "conditional UPDATE", super::CONDITIONAL_FIX),
        (
            "mariadb-serializable",
            "MariaDB SERIALIZABLE + retry",
            "Every check locks what it read: the inserts deadlock, InnoDB rolls Bob back and his retry rejects",
        ),
        (
            "mariadb-for-update",
            "MariaDB row lock",
            "Both lock the team row first; Bob waits, then sees Alice's $3,000",
        ),
        (
            "mariadb-conditional",
            "MariaDB conditional UPDATE",
            super::CONDITIONAL_FIX,
        ),
    ],
    steppable: true,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |variant| actors_at(&["alice", "bob"], &super::session_detail(variant)),
    budget: None,
    play: |run, variant| Box::pin(play(run, variant)),
    summarize: None,
    predict: Some(&PREDICT),
};

/// Predict, then run. The answers are how each fix stops Bob (the module doc); `tests/isolation.rs`
/// checks each against the run's own errors, waits and expenses.
static PREDICT: PredictDef = PredictDef {
    question: "With the fix in place, Alice and Bob each approve $3,000 against the $5,000 budget at the same moment. How does Bob's approval end?",
    choices: &[
        ("both-approved", "Both are approved anyway: $6,000 against $5,000"),
        (
            "bob-40001",
            "Bob fails with 40001; his retry sees Alice's $3,000 and rejects",
        ),
        (
            "bob-waits",
            "Bob waits for Alice's row lock, then sees her $3,000 and is rejected",
        ),
        (
            "alice-cancelled",
            "Alice is cancelled and Bob's $3,000 is approved instead",
        ),
        (
            "bob-1213",
            "Bob's insert deadlocks with Alice's and is rolled back (1213); his retry sees her $3,000 and rejects",
        ),
    ],
    only_on: &[("bob-40001", Service::Postgres), ("bob-1213", Service::Mariadb)],
    answers: &[
        (
            "serializable",
            "bob-40001",
            "Bob summed the expenses before Alice's insert committed and then writes where she summed too, so no one-at-a-time order fits and PostgreSQL refuses his INSERT with 40001; his retry loop starts over and counts her $3,000.",
        ),
        (
            "for-update",
            "bob-waits",
            "Alice holds the team's row lock from before her check until her commit, so Bob's SELECT FOR UPDATE queues behind it and his check, at READ COMMITTED, then counts her $3,000.",
        ),
        (
            "conditional",
            "bob-waits",
            "Bob's UPDATE has to wait for the row Alice's UPDATE changed, and once she commits PostgreSQL re-tests his condition on her $3,000, which no longer leaves room, so it changes nothing.",
        ),
        (
            "mariadb-serializable",
            "bob-1213",
            "At SERIALIZABLE InnoDB locks what each check read, so Alice's insert waits for Bob's lock and Bob's insert for Alice's: InnoDB rolls Bob back at once (1213), and his retry counts her $3,000.",
        ),
        (
            "mariadb-for-update",
            "bob-waits",
            "Alice holds the team's row lock from before her check until her commit, so Bob's SELECT FOR UPDATE queues behind it and his check, at READ COMMITTED, then counts her $3,000.",
        ),
        (
            "mariadb-conditional",
            "bob-waits",
            "Bob's UPDATE waits for the row Alice's changed; once she commits InnoDB reads the row again for his condition, which no longer fits, so it changes nothing.",
        ),
    ],
};

fn level_of(variant: &str) -> Level {
    if variant == "serializable" {
        Level::Serializable
    } else {
        Level::ReadCommitted
    }
}

async fn play(run: &Run, variant: &str) -> Result<(), RunError> {
    run.say_plain(format!("--- approve, {variant} ---"));
    if let Some(setting) = super::mariadb::setting_of(variant) {
        let fix = variant.trim_start_matches(shared::catalog::MARIADB_PREFIX);
        let (count, total) = super::mariadb::approve(run, fix, setting, expected(fix)).await?;
        run.verdict(overspend_verdict(count, total, how(variant)));
        return Ok(());
    }
    ledger_before(run).await?;
    let alice = run.actor("alice", level_of(variant)).await?;
    let bob = run.actor("bob", level_of(variant)).await?;
    match variant {
        "serializable" => serializable(&alice, &bob).await?,
        "for-update" => for_update(&alice, &bob).await?,
        _ => conditional(&alice, &bob).await?,
    }
    let (count, total) = say_totals(run).await?;
    ledger_after(run, expected(variant)).await?;
    run.verdict(overspend_verdict(count, total, how(variant)));
    Ok(())
}

/// How the fix of `variant` stopped Bob, for the verdict.
fn how(variant: &str) -> &'static str {
    match variant {
        "serializable" => super::RETRY_SAW_ALICE,
        "mariadb-serializable" => {
            "InnoDB rolled Bob back in a deadlock (1213); his retry saw Alice's $3,000 and rejected"
        }
        "for-update" | "mariadb-for-update" => {
            "Bob waited for the team's row lock, then saw Alice's $3,000 and rejected"
        }
        _ => "Bob's UPDATE waited for Alice's, then matched 0 rows",
    }
}

/// What a correct system holds after any fix: Alice's $3,000 approved, Bob's rejected. Only the
/// conditional fix keeps `teams.spent`, so only there does it move, by exactly one approval.
fn expected(variant: &str) -> shared::Ledger {
    let spent = if variant == "conditional" { AMOUNT } else { 0 };
    ledger_of(&[(TEAM, BUDGET, spent)], &[(TEAM, AMOUNT, "alice")])
}

/// Fix 1. Each manager runs the rule inside the retry loop, as two halves joined on one task
/// and handing each other the turn: alice checks, then bob checks, then alice inserts and
/// commits, then bob's INSERT is cancelled and his loop runs the whole transaction again.
async fn serializable(alice: &PgActor, bob: &PgActor) -> Result<(), RunError> {
    let (alice_checked, bob_checked, alice_done) = (Signal::new(), Signal::new(), Signal::new());
    let alice_half = async {
        let result = approve_with_retry(alice, AMOUNT, || async {
            alice_checked.set();
            bob_checked.wait().await;
            Ok(())
        })
        .await;
        alice_done.set();
        result
    };
    let bob_half = async {
        alice_checked.wait().await;
        approve_with_retry(bob, AMOUNT, || async {
            bob_checked.set();
            alice_done.wait().await;
            Ok(())
        })
        .await
    };
    let (alice_result, bob_result) = tokio::join!(alice_half, bob_half);
    alice_result?;
    match bob_result? {
        Retried::Done { value, attempts } => {
            bob.say(format!(
                "approved={} after {attempts} attempt(s)",
                super::python_bool(value)
            ));
        }
        Retried::GaveUp { attempts, last } => {
            bob.say(format!("gave up after {attempts} attempt(s): {}", last.message));
        }
    }
    Ok(())
}

/// The rule at SERIALIZABLE inside the retry loop, COMMIT included (that is often where the
/// failure arrives). `pause` runs between check and insert on every attempt, like the demo hook.
pub async fn approve_with_retry<P>(
    who: &PgActor,
    amount: i64,
    mut pause: impl FnMut() -> P,
) -> Result<Retried<bool>, RunError>
where
    P: Future<Output = Result<(), RunError>>,
{
    retry(
        who,
        RetryPolicy::default(),
        |attempt, error| who.say(format!("attempt {attempt} failed: {}", error.message)),
        |_| {
            let pause = pause();
            async move {
                let approved = check_and_insert(who, TEAM, amount, pause).await?;
                who.commit().await?;
                who.say("commit");
                Ok(approved)
            }
        },
    )
    .await
}

/// Fix 2. Alice takes the team's row lock and checks; bob's lock waits; alice inserts and
/// commits; bob gets the lock, reads her $3,000 and rejects.
pub async fn for_update(alice: &PgActor, bob: &PgActor) -> Result<(), RunError> {
    alice.query(LOCK_TEAM, &[TEAM.into()]).await?;
    alice.say(format!("locked team {TEAM}"));
    let mut bob_waits = None;
    check_and_insert(alice, TEAM, AMOUNT, async {
        let (pending, by) = bob.start(LOCK_TEAM, &[TEAM.into()]).await?.expect_blocked().await?;
        bob.say(format!("SELECT ... FOR UPDATE is waiting for {}", by.join(", ")));
        bob_waits = Some(pending);
        Ok(())
    })
    .await?;
    alice.say("commit");
    alice.commit().await?;
    if let Some(pending) = bob_waits {
        pending.finish().await?;
        bob.say(format!("locked team {TEAM}"));
        check_and_insert(bob, TEAM, AMOUNT, async { Ok(()) }).await?;
        bob.say("commit");
        bob.commit().await?;
    }
    Ok(())
}

/// Fix 3. Alice reserves the money and inserts; bob's conditional UPDATE waits for her row lock;
/// after her commit it re-checks `spent + 3000 <= budget` on the new row and matches nothing.
async fn conditional(alice: &PgActor, bob: &PgActor) -> Result<(), RunError> {
    let spent = alice.query(RESERVE, &[TEAM.into(), AMOUNT.into()]).await?.int()?;
    alice.say(format!("UPDATE reserved {}, spent now {}", usd(AMOUNT), usd(spent)));
    super::insert_expense(alice, TEAM, AMOUNT).await?;
    let (bob_waits, by) = bob
        .start(RESERVE, &[TEAM.into(), AMOUNT.into()])
        .await?
        .expect_blocked()
        .await?;
    bob.say(format!("UPDATE is waiting for {}'s row lock", by.join(", ")));
    alice.say("commit");
    alice.commit().await?;
    let reserved = bob_waits.finish().await?;
    if reserved.row_count() == 0 {
        bob.say(format!("UPDATE matched 0 rows: {} does not fit, rejected", usd(AMOUNT)));
        bob.rollback().await?;
    } else {
        super::insert_expense(bob, TEAM, AMOUNT).await?;
        bob.say("commit");
        bob.commit().await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labs::isolation::spent_of;

    #[test]
    fn the_expected_ledger_comes_from_the_constants() {
        assert_eq!(spent_of(&expected("conditional"), TEAM), AMOUNT);
        assert_eq!(spent_of(&expected("serializable"), TEAM), 0);
        assert_eq!(spent_of(&expected("for-update"), TEAM), 0);
        assert_eq!(
            super::super::expense_totals(&expected("conditional"), TEAM),
            (1, AMOUNT)
        );
    }
}
