//! A batch job beside SERIALIZABLE approvers. SERIALIZABLE only protects transactions that run
//! at SERIALIZABLE: alice approves $3,000 at SERIALIZABLE while a batch job inserts $3,000 against
//! the same $5,000, in the write-skew order.
//!
//! - `batch-read-committed`: the batch job runs at READ COMMITTED; nothing is cancelled:
//!   2 expenses, $6,000.
//! - `batch-serializable`: the batch job runs at SERIALIZABLE too; its COMMIT fails with 40001, its
//!   retry sees alice's $3,000 and rejects: 1 expense, $3,000.
//! - `mariadb-batch-read-committed`: alice's SERIALIZABLE check locked what it read on InnoDB,
//!   so the batch job's insert waits for her commit, then lands without checking again: $6,000.
//! - `mariadb-batch-serializable`: both checks lock; the inserts deadlock and InnoDB refuses the
//!   batch job's at once (1213); its retry sees alice's $3,000: $3,000.

use super::write_skew::{overspend_verdict, race};
use super::{AMOUNT, BUDGET, TEAM, ledger_after, ledger_before, ledger_of, say_totals};
use crate::engine::mariadb::Setting;
use crate::engine::{Level, Run, RunError};
use crate::labs::{PredictDef, ScenarioDef};
use shared::Service;
use shared::event::ActorInfo;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "isolation/batch-job",
    title: "A batch job slips past SERIALIZABLE",
    hook: "Alice approves at SERIALIZABLE; a nightly job inserts at READ COMMITTED; the budget breaks anyway",
    about: "SERIALIZABLE only watches transactions that run at SERIALIZABLE. A batch job inserting at READ COMMITTED next to a SERIALIZABLE approver goes unnoticed on PostgreSQL; on MariaDB it waits for her lock, then inserts without checking again. Either way the budget breaks.",
    variants: &[
        (
            "batch-read-committed",
            "batch at READ COMMITTED",
            "Only Alice is watched by the referee: both commit",
        ),
        (
            "batch-serializable",
            "batch at SERIALIZABLE",
            "Every writer at SERIALIZABLE: the batch job's commit is cancelled",
        ),
        (
            "mariadb-batch-read-committed",
            "MariaDB, batch at READ COMMITTED",
            "Alice's check locks what she read: the batch job waits for her, then inserts anyway",
        ),
        (
            "mariadb-batch-serializable",
            "MariaDB, batch at SERIALIZABLE",
            "Both checks lock: the inserts deadlock and InnoDB refuses the batch job's",
        ),
    ],
    steppable: true,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |variant| {
        vec![
            ActorInfo {
                name: "alice".into(),
                detail: Level::Serializable.sql().into(),
            },
            ActorInfo {
                name: "batch".into(),
                detail: super::mariadb::setting_of(variant)
                    .map_or_else(|| batch_level(variant).sql().to_owned(), Setting::detail),
            },
        ]
    },
    budget: None,
    play: |run, variant| Box::pin(play(run, variant)),
    summarize: None,
    predict: Some(&PREDICT),
};

/// Predict, then run. The answers are what SERIALIZABLE sees of each batch job (the module doc);
/// `tests/isolation.rs` checks each against the run's own events and expenses.
static PREDICT: PredictDef = PredictDef {
    question: "Alice approves $3,000 at SERIALIZABLE while the batch job inserts $3,000 against the same $5,000 budget, at the same moment. What happens?",
    choices: &[
        ("both-commit", "Both commit: $6,000 approved against $5,000"),
        (
            "batch-40001",
            "The batch job's COMMIT fails with 40001; its retry sees Alice's $3,000",
        ),
        (
            "batch-waits",
            "The batch job waits for Alice, then sees her $3,000 and stops",
        ),
        (
            "batch-waits-inserts",
            "The batch job waits for Alice, then inserts anyway: $6,000 against $5,000",
        ),
        (
            "batch-1213",
            "The batch job's INSERT is refused at once with 1213 (a deadlock); its retry sees Alice's $3,000",
        ),
    ],
    only_on: &[("batch-40001", Service::Postgres), ("batch-1213", Service::Mariadb)],
    answers: &[
        (
            "batch-read-committed",
            "both-commit",
            "SERIALIZABLE only tracks the reads and writes of transactions at SERIALIZABLE, so the batch job's check and insert at READ COMMITTED leave nothing for Alice's commit to conflict with.",
        ),
        (
            "batch-serializable",
            "batch-40001",
            "With both at SERIALIZABLE each check missed the other's insert, so no one-at-a-time order explains the result and PostgreSQL cancels the later COMMIT, the batch job's, with 40001; its retry counts Alice's $3,000.",
        ),
        (
            "mariadb-batch-read-committed",
            "batch-waits-inserts",
            "On InnoDB Alice's SERIALIZABLE check is a locking read, so the batch job's insert into the range she read waits until she commits. But the batch job checked before it waited, at READ COMMITTED, and never checks again: once Alice's lock is gone its insert lands.",
        ),
        (
            "mariadb-batch-serializable",
            "batch-1213",
            "Both checks lock the range they read. Alice's insert waits for the batch job's lock, the batch job's insert then waits for Alice's, and InnoDB breaks the cycle at once by refusing the batch job's (1213); its retry counts Alice's $3,000.",
        ),
    ],
};

fn batch_level(variant: &str) -> Level {
    if variant == "batch-serializable" {
        Level::Serializable
    } else {
        Level::ReadCommitted
    }
}

async fn play(run: &Run, variant: &str) -> Result<(), RunError> {
    let (count, total) = if let Some(batch_at) = super::mariadb::setting_of(variant) {
        super::mariadb::batch_job(run, variant, batch_at).await?
    } else {
        run.say_plain(format!("--- batch job, alice at serializable, {variant} ---"));
        ledger_before(run).await?;
        let alice = run.actor("alice", Level::Serializable).await?;
        let batch = run.actor("batch", batch_level(variant)).await?;
        race(&alice, TEAM, &batch, TEAM).await?;
        let totals = say_totals(run).await?;
        ledger_after(run, ledger_of(&[(TEAM, BUDGET, 0)], &[(TEAM, AMOUNT, "alice")])).await?;
        totals
    };
    run.verdict(overspend_verdict(
        count,
        total,
        "with every writer at SERIALIZABLE, the batch job's retry saw Alice's $3,000",
    ));
    Ok(())
}
