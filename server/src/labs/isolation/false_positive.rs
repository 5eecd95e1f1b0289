//! A false positive of SERIALIZABLE: alice approves $3,000 for `design` while bob approves $3,000
//! for `ops`, another team with its own $5,000 budget, in the write-skew order. The approvals
//! share nothing, yet on a small table PostgreSQL tracks reads coarsely (whole pages), so:
//!
//! - `serializable`: bob's COMMIT fails with 40001 anyway; his retry approves. 2 expenses, one
//!   per team, but one needless retry.
//! - `read-committed`: both commit at once: nothing to protect here, nothing cancelled.
//!
//! - `mariadb-serializable`: InnoDB's SERIALIZABLE locks what each check read, the range of the
//!   team index, which on an empty table is one gap for every team: alice's insert waits for
//!   bob's lock, bob's closes the cycle and is refused at once (1213); his retry approves.
//! - `mariadb-read-committed`: as on PostgreSQL, nothing waits and both commit.
//!
//! The cost is a retry, never wrong data; under load these add to the real conflicts.

use super::write_skew::race;
use super::{AMOUNT, BUDGET, OTHER_TEAM, TEAM, add_other_team, ledger_after, ledger_before, ledger_of, level_of};
use crate::engine::{Run, RunError};
use crate::labs::{PredictDef, ScenarioDef, actors_at};
use shared::{Check, Service, Verdict, usd};

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "isolation/false-positive",
    title: "SERIALIZABLE cancels an approval that conflicted with nobody",
    hook: "Two managers of two different teams, and the database still cancels one of them",
    about: "SERIALIZABLE tracks what each transaction read, coarsely on small tables. Two approvals for two different teams share a page on PostgreSQL (a locked gap on MariaDB), so one of them is cancelled although they never conflicted: a retry, never wrong data.",
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
        (
            "mariadb-serializable",
            "MariaDB SERIALIZABLE",
            "Each check locks the gap both teams' new rows go into: the inserts deadlock",
        ),
        (
            "mariadb-read-committed",
            "MariaDB READ COMMITTED",
            "Nothing to protect between two teams: nothing waits, nothing is cancelled",
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
        (
            "bob-1213",
            "Bob's INSERT is refused at once with 1213 (a deadlock); his retry approves ops' $3,000",
        ),
    ],
    only_on: &[("bob-40001", Service::Postgres), ("bob-1213", Service::Mariadb)],
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
        (
            "mariadb-serializable",
            "bob-1213",
            "On InnoDB a SERIALIZABLE check is a locking read: it locks the range of the team index it read, and on an empty table that range is the one gap both teams' rows go into. Alice's insert waits for Bob's lock, Bob's insert then waits for Alice's, and InnoDB refuses his at once to break the cycle; his retry goes through.",
        ),
        (
            "mariadb-read-committed",
            "both-commit",
            "At READ COMMITTED InnoDB's reads take no locks and its inserts lock only their own new rows, so the two teams' approvals never meet.",
        ),
    ],
};

async fn play(run: &Run, variant: &str) -> Result<(), RunError> {
    if let Some(setting) = super::mariadb::setting_of(variant) {
        let rolled_back = super::mariadb::false_positive(run, variant, setting).await?;
        run.verdict(verdict(
            rolled_back,
            "bob's first INSERT was refused in a deadlock (1213)",
            "InnoDB's SERIALIZABLE locked the range of the index each check read; on a table this small both teams' new rows go into the same gap: a retry, never wrong data.",
        ));
        return Ok(());
    }
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
        run.say_plain(team_line(
            &row[0].to_string(),
            row[1].as_int().unwrap_or(0),
            row[2].as_int().unwrap_or(0),
        ));
    }
    ledger_after(run, expected()).await?;
    run.verdict(verdict(
        cancelled,
        "bob's first COMMIT was cancelled (40001)",
        "PostgreSQL tracked the reads by page, and on a small table both teams share a page: a retry, never wrong data.",
    ));
    Ok(())
}

/// `design: approved 1 expense(s) totalling $3,000 on a $5,000 budget`, on either database.
pub fn team_line(team: &str, count: i64, total: i64) -> String {
    format!(
        "{team}: approved {count} expense(s) totalling {} on a {} budget",
        usd(total),
        usd(BUDGET)
    )
}

/// What a correct system shows: one approval per team, each within its own budget.
pub fn expected() -> shared::Ledger {
    ledger_of(
        &[(TEAM, BUDGET, 0), (OTHER_TEAM, BUDGET, 0)],
        &[(TEAM, AMOUNT, "alice"), (OTHER_TEAM, AMOUNT, "bob")],
    )
}

/// Whether both approvals went through first time; if not, `how` bob's first attempt was
/// turned down and `why` the database did it.
fn verdict(turned_down: bool, how: &str, why: &str) -> Verdict {
    let check = Check::new(
        "approvals for different teams both commit first time",
        if turned_down { how } else { "both committed first time" },
        !turned_down,
    );
    if turned_down {
        Verdict::judge(
            vec![check],
            "Needless retry: Bob's approval for ops was cancelled because of Alice's for design",
            why,
        )
    } else {
        Verdict::judge(
            vec![check],
            "No conflict, no retry",
            "At READ COMMITTED nothing tracks the reads, and here nothing needed to.",
        )
    }
}
