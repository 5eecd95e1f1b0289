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
use crate::labs::{PredictDef, ScenarioDef, actors_at};
use shared::{Check, Service, Verdict, usd};

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
        (
            "mariadb-opposite-order",
            "MariaDB, opposite order",
            "InnoDB sees the cycle at once and rolls Bob back (1213); his retry goes through",
        ),
        (
            "mariadb-same-order",
            "MariaDB, same order",
            "Both lock design first: Bob waits his turn, no deadlock",
        ),
    ],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |variant| actors_at(&["alice", "bob"], &super::session_detail(variant)),
    budget: None,
    play: |run, variant| Box::pin(play(run, variant)),
    summarize: None,
    predict: Some(&PREDICT),
};

/// Predict, then run. The answers are what each lock order leads to (the module doc);
/// `tests/isolation.rs` checks each against the run's own errors, waits and expenses.
static PREDICT: PredictDef = PredictDef {
    question: "Alice and Bob each lock the design and ops rows before approving a shared $1,000 expense. What happens?",
    choices: &[
        ("stuck", "Each waits for the other's lock, and both hang for good"),
        (
            "one-40p01",
            "One is cancelled with 40P01; the retry approves it after the other",
        ),
        ("bob-waits", "Bob waits for Alice's lock, then both approve first time"),
        ("both-cancelled", "Both are cancelled and neither expense is approved"),
        (
            "one-1213",
            "One is rolled back at once with 1213; the retry approves it after the other",
        ),
    ],
    only_on: &[("one-40p01", Service::Postgres), ("one-1213", Service::Mariadb)],
    answers: &[
        (
            "opposite-order",
            "one-40p01",
            "Each holds the row the other is waiting for, so after deadlock_timeout PostgreSQL breaks the cycle by cancelling Alice, who waited first, with 40P01, and her retry runs once Bob has committed.",
        ),
        (
            "same-order",
            "bob-waits",
            "Both ask for design first, so whoever gets it second simply queues behind the holder and no cycle of waits can form.",
        ),
        (
            "mariadb-opposite-order",
            "one-1213",
            "InnoDB checks for a cycle as each lock request waits, so Bob's request that closes it is refused at once with 1213 and his whole transaction rolled back; his retry runs once Alice has committed.",
        ),
        (
            "mariadb-same-order",
            "bob-waits",
            "Both ask for design first, so Bob simply queues behind Alice's lock and no cycle of waits can form.",
        ),
    ],
};

/// Each team's share of one approval.
pub const SHARE: i64 = 1_000;

async fn play(run: &Run, variant: &str) -> Result<(), RunError> {
    run.say_plain(format!("--- deadlock, {variant} ---"));
    if let Some(setting) = super::mariadb::setting_of(variant) {
        let opposite = variant.ends_with("opposite-order");
        let (after, attempts) = super::mariadb::deadlock(run, setting, opposite, expected(["alice", "bob"])).await?;
        judge(run, &after, &attempts, "InnoDB rolled back an approval at once (1213)");
        return Ok(());
    }
    add_other_team(run).await?;
    ledger_before(run).await?;
    let alice = run.actor("alice", Level::ReadCommitted).await?;
    let bob = run.actor("bob", Level::ReadCommitted).await?;
    let attempts = if variant == "same-order" {
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
    let after = ledger_after(run, expected(order)).await?;
    judge(run, &after, &attempts, "PostgreSQL cancelled an approval (40P01)");
    Ok(())
}

/// What a correct system holds: both shared approvals, in the order they committed.
pub fn expected(order: [&str; 2]) -> shared::Ledger {
    ledger_of(
        &[(TEAM, BUDGET, 0), (OTHER_TEAM, BUDGET, 0)],
        &[
            (TEAM, SHARE, order[0]),
            (OTHER_TEAM, SHARE, order[0]),
            (TEAM, SHARE, order[1]),
            (OTHER_TEAM, SHARE, order[1]),
        ],
    )
}

/// Says how many shared approvals the ledger `after` holds, and judges the run: `cancelled_by`
/// is who broke the cycle, in words.
fn judge(run: &Run, after: &shared::Ledger, attempts: &Attempts, cancelled_by: &str) {
    let approvals = after.table("expenses").map_or(0, |t| t.rows.len()) / 2;
    run.say_plain(format!(
        "approved {approvals} shared expense(s) of {} per team",
        usd(SHARE)
    ));
    run.verdict(verdict(approvals, attempts, cancelled_by));
}

/// How many attempts each manager's approval took, as their retry loops counted them.
pub type Attempts = [(&'static str, u32); 2];

/// The verdict, from what happened: how many shared approvals committed, and how many attempts
/// each manager's retry loop needed (more than one means a deadlock cancelled an attempt).
fn verdict(approvals: usize, attempts: &Attempts, cancelled_by: &str) -> Verdict {
    let cancelled: Vec<String> = attempts
        .iter()
        .filter(|(_, n)| *n > 1)
        .map(|(who, n)| format!("{who} needed {n} attempts"))
        .collect();
    let tally = attempts
        .iter()
        .map(|(who, n)| format!("{who} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let checks = vec![
        Check::new(
            "both approvals commit",
            format!("{approvals} of 2 approved"),
            approvals == 2,
        ),
        Check::new(
            "no approval is cancelled by a deadlock",
            format!("attempts: {tally}"),
            cancelled.is_empty(),
        ),
    ];
    if cancelled.is_empty() {
        Verdict::judge(
            checks,
            "No deadlock: Bob waited his turn",
            "Taking locks in one agreed order means nobody can hold what the other waits for.",
        )
    } else {
        Verdict::judge(
            checks,
            format!(
                "Deadlock: {cancelled_by}; the retry approved it ({})",
                cancelled.join(", ")
            ),
            "Each held one team's lock and waited for the other's; the database broke the cycle by cancelling one.",
        )
    }
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

/// Opposite orders, as two halves handing each other the turn. Returns each one's attempts
/// (bob's half is not retried: a deadlock cancelling him would fail the run, which the test
/// would see).
async fn opposite_order(alice: &PgActor, bob: &PgActor) -> Result<Attempts, RunError> {
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
                say_failed(alice, attempt, error);
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
            Ok([("alice", attempts), ("bob", 1)])
        }
        Retried::GaveUp { attempts, last } => Err(RunError::Other(format!("alice gave up after {attempts}: {last}"))),
    }
}

/// `attempt 1 failed: deadlock detected`.
fn say_failed(who: &PgActor, attempt: u32, error: &crate::engine::DbError) {
    who.say(format!("attempt {attempt} failed: {}", error.message));
}

/// The attempts a retry loop took, or the run's error if it gave up.
fn attempts_of(who: &str, retried: Retried<()>) -> Result<u32, RunError> {
    match retried {
        Retried::Done { attempts, .. } => Ok(attempts),
        Retried::GaveUp { attempts, last } => Err(RunError::Other(format!("{who} gave up after {attempts}: {last}"))),
    }
}

/// Same order: bob waits for design until alice commits. Both approvals run in retry loops, so a
/// deadlock here would be retried and counted, not assumed away. Returns each one's attempts.
async fn same_order(alice: &PgActor, bob: &PgActor) -> Result<Attempts, RunError> {
    let (alice_locked, alice_done, bob_waiting) = (Signal::new(), Signal::new(), Signal::new());
    let alice_half = async {
        let result = retry(
            alice,
            RetryPolicy::default(),
            |n, e| say_failed(alice, n, e),
            |attempt| {
                let (alice_locked, bob_waiting) = (&alice_locked, &bob_waiting);
                async move {
                    lock(alice, TEAM).await?;
                    alice_locked.set();
                    if attempt == 1 {
                        bob_waiting.wait().await;
                    }
                    lock(alice, OTHER_TEAM).await?;
                    approve_shared(alice).await
                }
            },
        )
        .await;
        alice_done.set();
        result
    };
    let bob_half = async {
        alice_locked.wait().await;
        retry(
            bob,
            RetryPolicy::default(),
            |n, e| say_failed(bob, n, e),
            |attempt| {
                let (alice_done, bob_waiting) = (&alice_done, &bob_waiting);
                async move {
                    if attempt == 1 {
                        wait_for_lock(bob, TEAM, alice_done, bob_waiting).await?;
                    } else {
                        lock(bob, TEAM).await?;
                    }
                    lock(bob, OTHER_TEAM).await?;
                    approve_shared(bob).await
                }
            },
        )
        .await
    };
    let (alice_result, bob_result) = tokio::join!(alice_half, bob_half);
    Ok([
        ("alice", attempts_of("alice", alice_result?)?),
        ("bob", attempts_of("bob", bob_result?)?),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::VerdictKind;

    #[test]
    fn a_cancelled_attempt_of_either_manager_breaks_the_no_deadlock_check() {
        let by = "InnoDB rolled back an approval at once (1213)";
        assert_eq!(verdict(2, &[("alice", 1), ("bob", 1)], by).kind, VerdictKind::Prevented);
        let bob_retried = verdict(2, &[("alice", 1), ("bob", 2)], by);
        assert_eq!(bob_retried.kind, VerdictKind::Reproduced);
        assert_eq!(bob_retried.checks[1].actual, "attempts: alice 1, bob 2");
        assert!(
            bob_retried.headline.contains("bob needed 2 attempts") && bob_retried.headline.contains(by),
            "{}",
            bob_retried.headline
        );
        assert_eq!(
            verdict(1, &[("alice", 1), ("bob", 1)], by).kind,
            VerdictKind::Reproduced
        );
    }
}
