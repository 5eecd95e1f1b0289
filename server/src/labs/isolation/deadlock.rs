//! Deadlock: alice and bob each approve a $1,000 expense shared by `design` and `ops`, and each
//! locks both teams' rows first. A correct system approves both, and never makes either wait
//! forever.
//!
//! - `opposite-order`: alice locks design then ops, bob ops then design. Each waits for the
//!   other; after `deadlock_timeout` (1 s) PostgreSQL cancels alice with 40P01 "deadlock
//!   detected". Bob goes on; alice's retry loop runs her whole transaction again and commits on
//!   attempt 2. Both approved, one cancelled attempt.
//! - `same-order`: both lock design first, then ops. Bob waits for alice, then goes on: no
//!   deadlock, no retry.

use super::{
    BUDGET, LOCK_TEAM, OTHER_TEAM, TEAM, add_other_team, insert_expense, ledger_after, ledger_before, ledger_of,
};
use crate::engine::{Level, PgActor, Retried, RetryPolicy, Run, RunError, Signal, retry};
use crate::labs::{ScenarioDef, actors_at};
use shared::{Check, Verdict, usd};

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "isolation/deadlock",
    title: "Deadlock: two approvals lock two teams in opposite orders",
    hook: "Alice and Bob each wait for the other's lock, until PostgreSQL cancels one of them",
    about: "Each approval locks two teams' rows, Alice in one order and Bob in the other. Each ends up holding what the other waits for, until PostgreSQL's deadlock check cancels one with 40P01 and her retry goes through.",
    variants: &[
        (
            "opposite-order",
            "opposite order",
            "Alice locks design then ops, Bob ops then design: 40P01, and a retry",
        ),
        (
            "same-order",
            "same order",
            "Both lock design first: Bob waits his turn, no deadlock",
        ),
    ],
    steppable: false,
    workload: false,
    schema: super::SCHEMA,
    actors: |_| actors_at(&["alice", "bob"], Level::ReadCommitted.sql()),
    play: |run, variant| Box::pin(play(run, variant)),
};

/// Each team's share of one approval.
const SHARE: i64 = 1_000;

async fn play(run: &Run, variant: &str) -> Result<(), RunError> {
    run.say_plain(format!("--- deadlock, {variant} ---"));
    add_other_team(run).await?;
    ledger_before(run).await?;
    let alice = run.actor("alice", Level::ReadCommitted).await?;
    let bob = run.actor("bob", Level::ReadCommitted).await?;
    let alice_attempts = if variant == "same-order" {
        same_order(&alice, &bob).await?
    } else {
        opposite_order(&alice, &bob).await?
    };
    // Both approved, in the order they committed (bob first when alice had to retry).
    let order = if variant == "same-order" {
        ["alice", "bob"]
    } else {
        ["bob", "alice"]
    };
    let expected = ledger_of(
        &[(TEAM, BUDGET, 0), (OTHER_TEAM, BUDGET, 0)],
        &[
            (TEAM, SHARE, order[0]),
            (OTHER_TEAM, SHARE, order[0]),
            (TEAM, SHARE, order[1]),
            (OTHER_TEAM, SHARE, order[1]),
        ],
    );
    let after = ledger_after(run, expected).await?;
    let approvals = after.table("expenses").map_or(0, |t| t.rows.len()) / 2;
    run.say_plain(format!(
        "approved {approvals} shared expense(s) of {} per team",
        usd(SHARE)
    ));
    let checks = vec![
        Check::new(
            "both approvals commit",
            format!("{approvals} of 2 approved"),
            approvals == 2,
        ),
        Check::new(
            "no approval is cancelled by a deadlock",
            format!("alice needed {alice_attempts} attempt(s)"),
            alice_attempts == 1,
        ),
    ];
    let verdict = if alice_attempts > 1 {
        Verdict::judge(
            checks,
            "Deadlock: PostgreSQL cancelled Alice's approval (40P01); her retry approved it",
            "Each held one team's lock and waited for the other's; PostgreSQL broke the cycle by cancelling one.",
        )
    } else {
        Verdict::judge(
            checks,
            "No deadlock: Bob waited his turn",
            "Taking locks in one agreed order means nobody can hold what the other waits for.",
        )
    };
    run.verdict(verdict);
    Ok(())
}

/// Locks one team's row and says so.
async fn lock(who: &PgActor, team: &str) -> Result<(), RunError> {
    who.query(LOCK_TEAM, &[team.into()]).await?;
    who.say(format!("locked team {team}"));
    Ok(())
}

/// Inserts the shared expense for both teams, commits, and says so.
async fn approve_shared(who: &PgActor) -> Result<(), RunError> {
    insert_expense(who, TEAM, SHARE).await?;
    insert_expense(who, OTHER_TEAM, SHARE).await?;
    who.say(format!("insert {} for {TEAM} and {OTHER_TEAM}", usd(SHARE)));
    who.commit().await?;
    who.say("commit");
    Ok(())
}

/// Bob's lock on `team` when it has to wait for alice: seen blocked, said, then finished once
/// `go_on` is set.
async fn wait_for_lock(bob: &PgActor, team: &str, go_on: &Signal, waiting: &Signal) -> Result<(), RunError> {
    let (pending, by) = bob.start(LOCK_TEAM, &[team.into()]).await?.expect_blocked().await?;
    bob.say(format!("waiting for {}'s lock on {team}", by.join(", ")));
    waiting.set();
    go_on.wait().await;
    pending.finish().await?;
    bob.say(format!("locked team {team}"));
    Ok(())
}

/// Opposite orders, as two halves handing each other the turn. Returns alice's attempts.
async fn opposite_order(alice: &PgActor, bob: &PgActor) -> Result<u32, RunError> {
    let [
        alice_has_design,
        bob_has_ops,
        alice_waiting,
        bob_waiting,
        alice_failed,
        bob_done,
    ] = std::array::from_fn(|_| Signal::new());
    let alice_half = async {
        let result = retry(
            alice,
            RetryPolicy::default(),
            |attempt, error| {
                alice.say(format!("attempt {attempt} failed: {}", error.message));
                alice_failed.set();
            },
            |attempt| {
                let (alice_has_design, bob_has_ops, alice_waiting, bob_waiting, bob_done) =
                    (&alice_has_design, &bob_has_ops, &alice_waiting, &bob_waiting, &bob_done);
                async move {
                    if attempt > 1 {
                        // Let bob finish first, so the retry reads as the tutorial's would.
                        bob_done.wait().await;
                    }
                    lock(alice, TEAM).await?;
                    if attempt == 1 {
                        alice_has_design.set();
                        bob_has_ops.wait().await;
                        let (pending, by) = alice
                            .start(LOCK_TEAM, &[OTHER_TEAM.into()])
                            .await?
                            .expect_blocked()
                            .await?;
                        alice.say(format!("waiting for {}'s lock on {OTHER_TEAM}", by.join(", ")));
                        // Alice waits first, so her deadlock check (after deadlock_timeout) runs
                        // first and she is the one cancelled.
                        alice_waiting.set();
                        bob_waiting.wait().await;
                        // PostgreSQL's deadlock check cancels alice here, after deadlock_timeout.
                        pending.finish().await?;
                        alice.say(format!("locked team {OTHER_TEAM}"));
                    } else {
                        lock(alice, OTHER_TEAM).await?;
                    }
                    approve_shared(alice).await
                }
            },
        )
        .await;
        alice_failed.set();
        result
    };
    let bob_half = async {
        alice_has_design.wait().await;
        lock(bob, OTHER_TEAM).await?;
        bob_has_ops.set();
        alice_waiting.wait().await;
        wait_for_lock(bob, TEAM, &alice_failed, &bob_waiting).await?;
        let result = approve_shared(bob).await;
        bob_done.set();
        result
    };
    let (alice_result, bob_result) = tokio::join!(alice_half, bob_half);
    bob_result?;
    match alice_result? {
        Retried::Done { attempts, .. } => {
            alice.say(format!("approved after {attempts} attempt(s)"));
            Ok(attempts)
        }
        Retried::GaveUp { attempts, last } => Err(RunError::Other(format!("alice gave up after {attempts}: {last}"))),
    }
}

/// Same order: bob waits for design until alice commits. Returns alice's attempts (always 1).
async fn same_order(alice: &PgActor, bob: &PgActor) -> Result<u32, RunError> {
    let (alice_done, bob_waiting) = (Signal::new(), Signal::new());
    lock(alice, TEAM).await?;
    let alice_half = async {
        bob_waiting.wait().await;
        lock(alice, OTHER_TEAM).await?;
        let result = approve_shared(alice).await;
        alice_done.set();
        result
    };
    let bob_half = async {
        wait_for_lock(bob, TEAM, &alice_done, &bob_waiting).await?;
        lock(bob, OTHER_TEAM).await?;
        approve_shared(bob).await
    };
    let (alice_result, bob_result) = tokio::join!(alice_half, bob_half);
    alice_result?;
    bob_result?;
    Ok(1)
}
