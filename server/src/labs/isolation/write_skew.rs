//! Write skew: alice and bob each approve $3,000 against a $5,000 budget. Each checks the total
//! of approved expenses, sees room, and inserts a different row. A correct system approves at
//! most $5,000: one of them.
//!
//! - `read-committed`, `repeatable-read`: both checks see $0, both insert, both commit:
//!   2 expenses, $6,000. REPEATABLE READ does not help: nobody wrote a row the other wrote.
//! - `serializable`: bob's COMMIT fails with 40001 ("could not serialize access due to
//!   read/write dependencies among transactions"); his retry sees alice's $3,000 and rejects:
//!   1 expense, $3,000.

use super::{
    AMOUNT, BUDGET, TEAM, check_fits, insert_and_say, ledger_after, ledger_before, ledger_of, level_of, say_totals,
};
use crate::engine::{PgActor, Run, RunError};
use crate::labs::{PredictDef, ScenarioDef, actors_at};
use shared::{Check, Service, Verdict, usd};

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "isolation/write-skew",
    title: "Write skew: two managers overspend a budget",
    hook: "Two managers approve $3,000 each against a $5,000 budget, at the same moment",
    about: "Both managers check how much is already approved, both see room for $3,000, and each inserts a different row. No row is written twice, so only SERIALIZABLE notices that no one-at-a-time order explains the result.",
    variants: &[
        (
            "read-committed",
            "READ COMMITTED",
            "Both checks see $0 approved; both insert",
        ),
        (
            "repeatable-read",
            "REPEATABLE READ",
            "A snapshot per manager does not see the other manager either",
        ),
        (
            "serializable",
            "SERIALIZABLE",
            "PostgreSQL cancels Bob's commit; his retry sees Alice's $3,000",
        ),
        (
            "mariadb-read-committed",
            "MariaDB READ COMMITTED",
            "Both checks see $0 approved; both insert",
        ),
        (
            "mariadb-repeatable-read",
            "MariaDB REPEATABLE READ",
            "InnoDB's snapshot per manager does not see the other manager either",
        ),
        (
            "mariadb-repeatable-read-snapshot",
            "MariaDB REPEATABLE READ, snapshot isolation on",
            "MariaDB 11.6.2's default refuses writes to rows changed since the snapshot; no row is written twice here",
        ),
        (
            "mariadb-serializable",
            "MariaDB SERIALIZABLE",
            "Every check locks what it read: the two inserts deadlock and InnoDB rolls Bob back",
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

/// Predict, then run. The answers are what each level does with this race (the module doc);
/// `tests/isolation.rs` checks each against the run's own events.
static PREDICT: PredictDef = PredictDef {
    question: "Alice and Bob each check the budget and approve $3,000 at the same moment. What happens?",
    choices: &[
        ("both-commit", "Both commit: $6,000 approved against $5,000"),
        ("bob-waits", "Bob waits for Alice, then sees her $3,000 and stops"),
        (
            "bob-40001",
            "Bob's COMMIT fails with 40001; his retry sees Alice's $3,000",
        ),
        ("alice-fails", "Alice's COMMIT fails"),
        (
            "deadlock",
            "Their inserts deadlock: Bob is rolled back, and his retry sees Alice's $3,000",
        ),
    ],
    only_on: &[("bob-40001", Service::Postgres)],
    answers: &[
        (
            "read-committed",
            "both-commit",
            "Each check counts only committed rows and neither insert has committed yet, so both see $0 approved; nothing stops two inserts of different rows.",
        ),
        (
            "repeatable-read",
            "both-commit",
            "Each manager reads from a snapshot taken before the other's insert, and no row is written twice, so there is no conflict to detect.",
        ),
        (
            "serializable",
            "bob-40001",
            "No one-at-a-time order explains both checks seeing $0, so PostgreSQL cancels the second commit, Bob's, and his retry counts Alice's $3,000.",
        ),
        (
            "mariadb-read-committed",
            "both-commit",
            "Each check counts only committed rows, and InnoDB takes no lock for a plain read: nothing stops two inserts of different rows.",
        ),
        (
            "mariadb-repeatable-read",
            "both-commit",
            "Each manager reads InnoDB's snapshot, taken before the other's insert, and no row is written twice.",
        ),
        (
            "mariadb-repeatable-read-snapshot",
            "both-commit",
            "The snapshot switch refuses a write to a row changed since the snapshot; each manager inserts a new row, so there is nothing to refuse.",
        ),
        (
            "mariadb-serializable",
            "deadlock",
            "At SERIALIZABLE every read locks what it read: Alice's insert waits for Bob's lock, Bob's insert waits for Alice's, and InnoDB breaks the cycle by rolling Bob back (1213).",
        ),
    ],
};

async fn play(run: &Run, variant: &str) -> Result<(), RunError> {
    if let Some(setting) = super::mariadb::setting_of(variant) {
        return super::mariadb::write_skew(run, variant, setting).await;
    }
    run.say_plain(format!("--- write skew, {variant} ---"));
    ledger_before(run).await?;
    let alice = run.actor("alice", level_of(variant)).await?;
    let bob = run.actor("bob", level_of(variant)).await?;

    race(&alice, TEAM, &bob, TEAM).await?;

    let (count, total) = say_totals(run).await?;
    ledger_after(run, ledger_of(&[(TEAM, BUDGET, 0)], &[(TEAM, AMOUNT, "alice")])).await?;
    run.verdict(overspend_verdict(count, total, super::RETRY_SAW_ALICE));
    Ok(())
}

/// The write-skew choreography, for two approvers of $3,000 (each for its own team, or both for
/// the same): both check, both insert, alice commits, then bob. If bob's COMMIT is cancelled
/// (40001), he retries once by hand, as the tutorial does here; the approve scenario uses the
/// retry loop instead. Returns whether bob's first COMMIT was cancelled.
pub async fn race(alice: &PgActor, alice_team: &str, bob: &PgActor, bob_team: &str) -> Result<bool, RunError> {
    check_fits(alice, alice_team, AMOUNT).await?;
    check_fits(bob, bob_team, AMOUNT).await?;
    insert_and_say(alice, alice_team, AMOUNT).await?;
    insert_and_say(bob, bob_team, AMOUNT).await?;
    alice.commit().await?;
    alice.say("commit");
    match bob.commit().await {
        Ok(()) => {
            bob.say("commit");
            Ok(false)
        }
        Err(error) => {
            let Some(db) = error.retryable() else {
                return Err(error.into());
            };
            bob.say(format!("COMMIT failed: {db}"));
            bob.rollback().await?;
            bob.say("retry the whole transaction");
            if check_fits(bob, bob_team, AMOUNT).await? {
                insert_and_say(bob, bob_team, AMOUNT).await?;
            } else {
                bob.say("rejected: over budget");
            }
            bob.commit().await?;
            Ok(true)
        }
    }
}

/// The verdict of every "two managers, one budget" scenario: was more approved than the budget?
pub fn overspend_verdict(count: i64, total: i64, prevented_by: &str) -> Verdict {
    let check = Check::new(
        format!("total ≤ {}", usd(BUDGET)),
        format!("total = {} in {count} expense(s)", usd(total)),
        total <= BUDGET,
    );
    if total > BUDGET {
        Verdict::judge(
            vec![check],
            format!("Overspent: {} approved against a {} budget", usd(total), usd(BUDGET)),
            "Each manager checked the same total, saw room, and inserted a different row; neither saw the other.",
        )
    } else {
        Verdict::judge(
            vec![check],
            format!("Prevented: {prevented_by}"),
            format!("{} approved, within the {} budget.", usd(total), usd(BUDGET)),
        )
    }
}
