//! Read skew: carol approves $1,000, the report reads `teams.spent` ($1,000), carol approves $250
//! more, and the report sums the expenses. The two numbers should agree.
//!
//! - `read-committed`: every statement sees the latest commits: $1,000 vs $1,250, DISAGREE.
//! - `repeatable-read`: one snapshot for the whole report: $1,000 vs $1,000, agree.
//!
//! The database is consistent either way (spent $1,250, two expenses); only the report's view of
//! it differs.

use super::{BUDGET, TEAM, ledger_after, ledger_before, ledger_of};
use crate::engine::{Level, PgActor, Run, RunError};
use crate::labs::{PredictDef, ScenarioDef, actors_at};
use shared::event::ActorInfo;
use shared::{Check, Service, Verdict, usd};

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "isolation/read-skew",
    title: "Read skew",
    hook: "A month-end report reads two numbers that were never true at the same moment",
    about: "Carol approves expenses while a month-end report reads the running total and then the sum of the expense rows. At READ COMMITTED each statement sees the latest commits, so the two numbers can come from different moments.",
    variants: &[
        (
            "read-committed",
            "READ COMMITTED",
            "Each statement of the report sees the latest commits",
        ),
        (
            "repeatable-read",
            "REPEATABLE READ",
            "The whole report reads from one snapshot",
        ),
        (
            "mariadb-read-committed",
            "MariaDB READ COMMITTED",
            "Each statement of the report sees the latest commits",
        ),
        (
            "mariadb-repeatable-read",
            "MariaDB REPEATABLE READ",
            "The report's first read fixes InnoDB's snapshot for the rest",
        ),
    ],
    steppable: true,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |variant| {
        let mut actors = actors_at(&["carol"], Level::ReadCommitted.sql());
        actors.push(ActorInfo {
            name: "report".into(),
            detail: super::session_detail(variant),
        });
        actors
    },
    budget: None,
    play: |run, variant| Box::pin(play(run, variant)),
    summarize: None,
    predict: Some(&PREDICT),
};

/// Predict, then run. The answers are what each level shows the report (the module doc);
/// `tests/isolation.rs` checks each against the report's own reads.
static PREDICT: PredictDef = PredictDef {
    question: "Carol has approved $1,000 so far. The report reads the team's running total, Carol approves $250 more, then the report sums the expenses. What do its two numbers say?",
    choices: &[
        ("disagree", "They disagree: $1,000 spent but $1,250 in expenses"),
        ("both-1000", "Both say $1,000: Carol's $250 is left for the next report"),
        (
            "both-1250",
            "Both say $1,250: the report picks up Carol's $250 everywhere",
        ),
        (
            "carol-waits",
            "Carol waits until the report is done, so nothing changes mid-report",
        ),
        ("report-40001", "The report fails with 40001 and has to run again"),
    ],
    only_on: &[("report-40001", Service::Postgres)],
    answers: &[
        (
            "read-committed",
            "disagree",
            "Each statement of the report takes a fresh look at what is committed, so the total was read before Carol's $250 and the sum after it.",
        ),
        (
            "repeatable-read",
            "both-1000",
            "The report's first read fixed its snapshot, so the later sum still sees only the $1,000 committed before it, and Carol's commit neither waits for the report nor breaks it.",
        ),
        (
            "mariadb-read-committed",
            "disagree",
            "At READ COMMITTED InnoDB gives each statement a fresh read view, so the total was read before Carol's $250 and the sum after it.",
        ),
        (
            "mariadb-repeatable-read",
            "both-1000",
            "InnoDB fixes the report's read view at its first read, so the later sum sees only the $1,000 committed before it; plain reads take no lock, so Carol does not wait.",
        ),
    ],
};

async fn play(run: &Run, variant: &str) -> Result<(), RunError> {
    if let Some(setting) = super::mariadb::setting_of(variant) {
        let (spent, sum) = super::mariadb::read_skew(run, variant, setting).await?;
        run.verdict(verdict(spent, sum));
        return Ok(());
    }
    run.say_plain(format!("--- read skew, report at {variant} ---"));
    ledger_before(run).await?;
    let carol = run.actor("carol", Level::ReadCommitted).await?;
    let report = run.actor("report", super::level_of(variant)).await?;

    approve(&carol, 1_000).await?;
    carol.say(format!("approved {} (earlier this month)", usd(1_000)));
    let spent = report.query(super::READ_SPENT, &[TEAM.into()]).await?.int()?;
    report.say(format!("teams.spent          = {}", usd(spent)));
    approve(&carol, 250).await?;
    carol.say(format!("approved {} and committed", usd(250)));
    let sum = report.query(super::SELECT_APPROVED, &[TEAM.into()]).await?.int()?;
    report.say(format!("sum(expenses.amount) = {}", usd(sum)));
    report.commit().await?;

    run.say_plain(numbers_line(spent, sum));
    ledger_after(run, expected()).await?;
    run.verdict(verdict(spent, sum));
    Ok(())
}

/// `report numbers DISAGREE: $1,000 vs $1,250`, on either database.
pub fn numbers_line(spent: i64, sum: i64) -> String {
    format!(
        "report numbers {}: {} vs {}",
        if spent == sum { "agree" } else { "DISAGREE" },
        usd(spent),
        usd(sum)
    )
}

/// What the database holds after carol's two approvals, whatever the report read.
pub fn expected() -> shared::Ledger {
    ledger_of(
        &[(TEAM, BUDGET, 1_250)],
        &[(TEAM, 1_000, "carol"), (TEAM, 250, "carol")],
    )
}

/// Did the report's two numbers agree?
fn verdict(spent: i64, sum: i64) -> Verdict {
    let agree = spent == sum;
    let check = Check::new(
        "the report's two numbers agree",
        format!("{} vs {}", usd(spent), usd(sum)),
        agree,
    );
    let (headline, reason) = if agree {
        (
            format!("Consistent report: {} and {}", usd(spent), usd(sum)),
            "The report read both numbers from one snapshot; Carol's $250 will show up in the next run.",
        )
    } else {
        (
            format!("Report disagrees with itself: {} vs {}", usd(spent), usd(sum)),
            "Each statement saw the latest commits, so the report mixed two moments.",
        )
    };
    Verdict::judge(vec![check], headline, reason)
}

/// One approval as one transaction: the expense row and the running total move together.
async fn approve(carol: &PgActor, amount: i64) -> Result<(), RunError> {
    super::insert_expense(carol, TEAM, amount).await?;
    carol
        .query(
            "UPDATE teams SET spent = spent + $2 WHERE id = $1",
            &[TEAM.into(), amount.into()],
        )
        .await?;
    carol.commit().await?;
    Ok(())
}
