//! A false positive of SERIALIZABLE: alice approves $3,000 for `design` while bob approves $3,000
//! for `ops`, another team with its own $5,000 budget, in the write-skew order. The approvals
//! share nothing, yet on a small table PostgreSQL tracks reads coarsely (whole pages), so:
//!
//! - `serializable`: bob's COMMIT fails with 40001 anyway; his retry approves. 2 expenses, one
//!   per team, but one needless retry.
//! - `read-committed`: both commit at once: nothing to protect here, nothing cancelled.
//!
//! The cost is a retry, never wrong data; under load these add to the real conflicts.

use super::write_skew::race;
use super::{AMOUNT, BUDGET, OTHER_TEAM, TEAM, add_other_team, ledger_after, ledger_before, ledger_of, level_of};
use crate::engine::{Run, RunError};
use crate::labs::{PredictDef, ScenarioDef, actors_at};
use shared::{Check, Verdict, usd};

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "isolation/false-positive",
    title: "SERIALIZABLE cancels an approval that conflicted with nobody",
    hook: "Two managers of two different teams, and PostgreSQL still cancels one of them",
    about: "SERIALIZABLE tracks what each transaction read, coarsely on small tables. Two approvals for two different teams share a page, so one of them is cancelled although they never conflicted: a retry, never wrong data.",
    variants: &[
        (
            "serializable",
            "SERIALIZABLE",
            "Reads are tracked by page: another team's insert looks like a conflict",
        ),
        (
            "read-committed",
            "READ COMMITTED",
            "Nothing to protect between two teams: nothing is cancelled",
        ),
    ],
    steppable: true,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |variant| actors_at(&["alice", "bob"], level_of(variant).sql()),
    budget: None,
    play: |run, variant| Box::pin(play(run, variant)),
    summarize: None,
    predict: Some(&PREDICT),
};

/// Predict, then run. The answers are what each level does with two approvals that share
/// nothing (the module doc); `tests/isolation.rs` checks each against the run's own events and
/// expenses.
static PREDICT: PredictDef = PredictDef {
    question: "Alice approves $3,000 for design while Bob approves $3,000 for ops, each team with its own $5,000 budget, at the same moment. What happens?",
    choices: &[
        ("both-commit", "Both commit first time: the two teams share nothing"),
        (
            "bob-40001",
            "Bob's COMMIT fails with 40001; his retry approves ops' $3,000",
        ),
        ("bob-waits", "Bob waits for Alice to commit, then approves"),
        ("bob-rejected", "Bob is rejected: Alice's $3,000 counts against ops too"),
    ],
    answers: &[
        (
            "serializable",
            "bob-40001",
            "On a table this small PostgreSQL records each check's read coarsely, covering the whole expenses index rather than just design's or ops' entries, so each insert looks like a change to what the other read and Bob's COMMIT gets 40001; his retry then goes through.",
        ),
        (
            "read-committed",
            "both-commit",
            "At READ COMMITTED nobody tracks what the checks read, and the two inserts touch different teams' rows, so there is nothing to wait for and nothing to cancel.",
        ),
    ],
};

async fn play(run: &Run, variant: &str) -> Result<(), RunError> {
    run.say_plain(format!(
        "--- false positive, {variant}: alice approves for {TEAM}, bob for {OTHER_TEAM} ---"
    ));
    add_other_team(run).await?;
    ledger_before(run).await?;
    let alice = run.actor("alice", level_of(variant)).await?;
    let bob = run.actor("bob", level_of(variant)).await?;
    let cancelled = race(&alice, TEAM, &bob, OTHER_TEAM).await?;

    let per_team = run
        .check(
            "SELECT team_id, count(*), coalesce(sum(amount), 0) FROM expenses GROUP BY team_id ORDER BY team_id",
            &[],
        )
        .await?;
    for row in &per_team.rows {
        run.say_plain(format!(
            "{}: approved {} expense(s) totalling {} on a {} budget",
            row[0],
            row[1],
            usd(row[2].as_int().unwrap_or(0)),
            usd(BUDGET)
        ));
    }
    ledger_after(
        run,
        ledger_of(
            &[(TEAM, BUDGET, 0), (OTHER_TEAM, BUDGET, 0)],
            &[(TEAM, AMOUNT, "alice"), (OTHER_TEAM, AMOUNT, "bob")],
        ),
    )
    .await?;
    let check = Check::new(
        "approvals for different teams both commit first time",
        if cancelled {
            "bob's first COMMIT was cancelled (40001)"
        } else {
            "both committed first time"
        },
        !cancelled,
    );
    let verdict = if cancelled {
        Verdict::judge(
            vec![check],
            "Needless retry: Bob's approval for ops was cancelled because of Alice's for design",
            "PostgreSQL tracked the reads by page, and on a small table both teams share a page: a retry, never wrong data.",
        )
    } else {
        Verdict::judge(
            vec![check],
            "No conflict, no retry",
            "At READ COMMITTED nothing tracks the reads, and here nothing needed to.",
        )
    };
    run.verdict(verdict);
    Ok(())
}
