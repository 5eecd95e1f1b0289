//! The row lock, taken at the wrong level: the `for-update` fix run at REPEATABLE READ. Alice and
//! bob each approve $3,000 against $5,000, both taking the team's row lock first.
//!
//! - `repeatable-read`: bob waits for the lock as before, but his snapshot was taken by the
//!   `SELECT … FOR UPDATE` itself, before the wait: after alice commits he still reads $0
//!   approved, inserts, and commits without any error. 2 expenses, $6,000.
//! - `read-committed`: the fix as meant: bob's next statement sees alice's $3,000 and he rejects.
//!   1 expense, $3,000.
//! - `mariadb-repeatable-read`, `mariadb-read-committed`: on InnoDB the fix works at both levels.
//!   A REPEATABLE READ transaction's read view is made by its first plain read, not by a locking
//!   one: bob's `SELECT … FOR UPDATE` waits before he has any snapshot, and his check after the
//!   wait sees alice's $3,000. 1 expense, $3,000.

use super::approve::for_update;
use super::write_skew::overspend_verdict;
use super::{AMOUNT, BUDGET, TEAM, ledger_after, ledger_before, ledger_of, level_of, say_totals};
use crate::engine::{Run, RunError};
use crate::labs::{PredictDef, ScenarioDef, actors_at};
use shared::Service;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "isolation/row-lock-at-repeatable-read",
    title: "The row lock at the wrong isolation level",
    hook: "Both managers wait their turn for the lock, and still overspend",
    about: "On PostgreSQL the row-lock fix only works at READ COMMITTED. At REPEATABLE READ, Bob's snapshot is taken by the locking SELECT itself, before he waits, so after Alice commits he still reads $0 approved. MariaDB takes the snapshot at the first plain read instead, after the wait, and the fix holds at both levels.",
    variants: &[
        (
            "repeatable-read",
            "REPEATABLE READ",
            "Bob waits for the lock, then reads from a snapshot taken before the wait",
        ),
        (
            "read-committed",
            "READ COMMITTED",
            "Bob waits for the lock, then reads what Alice committed",
        ),
        (
            "mariadb-repeatable-read",
            "MariaDB REPEATABLE READ",
            "InnoDB takes Bob's snapshot at his first plain read, after the wait: he sees Alice's $3,000",
        ),
        (
            "mariadb-read-committed",
            "MariaDB READ COMMITTED",
            "Bob waits for the lock, then reads what Alice committed",
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

/// Predict, then run. The answers are what Bob's check reads after his wait at each level (the
/// module doc); `tests/isolation.rs` checks each against the run's own waits and expenses.
static PREDICT: PredictDef = PredictDef {
    question: "Alice and Bob each lock the team's row before checking the budget, and Bob waits until Alice has committed her $3,000. What does Bob do next?",
    choices: &[
        ("bob-rejects", "Bob sees Alice's $3,000 and rejects: $3,000 approved"),
        (
            "bob-overspends",
            "Bob still sees $0 and approves: $6,000 against $5,000",
        ),
        ("bob-40001", "Bob's lock fails with 40001 once Alice commits"),
        ("no-wait", "Bob never waits: both lock and check at once"),
    ],
    only_on: &[("bob-40001", Service::Postgres)],
    answers: &[
        (
            "repeatable-read",
            "bob-overspends",
            "Bob's snapshot was taken by his locking SELECT before it started waiting, and Alice only locked the team row without changing it, so he gets the lock without an error and his check still reads $0.",
        ),
        (
            "read-committed",
            "bob-rejects",
            "Once the lock is his, Bob's check is a new statement and READ COMMITTED gives every statement a fresh look, so he sees Alice's committed $3,000.",
        ),
        (
            "mariadb-repeatable-read",
            "bob-rejects",
            "InnoDB makes a REPEATABLE READ snapshot at the transaction's first plain read, and a locking SELECT is not one: Bob had no snapshot yet when his lock started waiting, so his check after Alice's commit is his first plain read and sees her $3,000.",
        ),
        (
            "mariadb-read-committed",
            "bob-rejects",
            "Once the lock is his, Bob's check is a new statement and READ COMMITTED gives every statement a fresh look, so he sees Alice's committed $3,000.",
        ),
    ],
};

async fn play(run: &Run, variant: &str) -> Result<(), RunError> {
    let (count, total) = if let Some(setting) = super::mariadb::setting_of(variant) {
        super::mariadb::row_lock(run, variant, setting).await?
    } else {
        run.say_plain(format!("--- row lock, {variant} ---"));
        ledger_before(run).await?;
        let alice = run.actor("alice", level_of(variant)).await?;
        let bob = run.actor("bob", level_of(variant)).await?;
        for_update(&alice, &bob).await?;
        let totals = say_totals(run).await?;
        ledger_after(run, ledger_of(&[(TEAM, BUDGET, 0)], &[(TEAM, AMOUNT, "alice")])).await?;
        totals
    };
    run.verdict(overspend_verdict(
        count,
        total,
        "Bob waited for the row lock, then saw Alice's $3,000 and rejected",
    ));
    Ok(())
}
