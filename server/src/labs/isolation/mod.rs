//! The isolation lab: two managers, one $5,000 budget, and what each isolation level lets happen.
//!
//! Scenarios (one file each), in the tutorial's order:
//! - [`lost_update`]: read-modify-write in the app erases a write; the atomic UPDATE does not.
//! - [`read_skew`]: a report reads two numbers from two moments.
//! - [`write_skew`]: both managers check the same total and both insert: $6,000 on $5,000.
//! - [`approve`]: the business rule and its three fixes (SERIALIZABLE + retry, row lock,
//!   conditional UPDATE).
//! - [`load_test`]: 16 workers, 400 approvals, every strategy.
//! - [`row_lock_at_repeatable_read`], [`batch_job`], [`false_positive`]: the three cases the
//!   tutorial describes without a script.
//! - [`deadlock`]: the second retryable error, 40P01, and the fix (one lock order).
//!
//! The helpers below are the lab's vocabulary: the SQL of the business rule (written once, used
//! by every scenario), the transcript wording, and the ledger every scenario shows.

pub mod approve;
pub mod batch_job;
pub mod deadlock;
pub mod false_positive;
pub mod load_test;
pub mod lost_update;
pub mod mariadb;
pub mod read_skew;
pub mod row_lock_at_repeatable_read;
pub mod write_skew;

use super::LabDef;
use crate::engine::{Level, PgActor, Run, RunError, TableQuery};
use shared::{EventKind, Ledger, Moment, Service, Table, Value, usd};

/// The lab as the catalog lists it.
pub static LAB: LabDef = LabDef {
    id: "isolation",
    title: "PostgreSQL isolation levels",
    services: &[Service::Postgres],
    scenarios: &[
        &lost_update::SCENARIO,
        &read_skew::SCENARIO,
        &write_skew::SCENARIO,
        &approve::SCENARIO,
        &load_test::SCENARIO,
        &row_lock_at_repeatable_read::SCENARIO,
        &batch_job::SCENARIO,
        &false_positive::SCENARIO,
        &deadlock::SCENARIO,
    ],
};

/// Tables and seed: one team, `design`, with a $5,000 budget.
pub const SCHEMA: &str = include_str!("schema.sql");

/// Every isolation scenario plays in one schema made from [`SCHEMA`].
pub const SANDBOX: crate::sandbox::Spec = crate::sandbox::Spec {
    schemas: &[("", SCHEMA)],
    redis: false,
    topics: &[],
};

/// The team every scenario approves expenses for.
pub const TEAM: &str = "design";
/// Its budget.
pub const BUDGET: i64 = 5_000;
/// What each manager approves in the two-manager scenarios.
pub const AMOUNT: i64 = 3_000;

/// The second team, for the scenarios where two teams are involved (false positive, deadlock).
pub const OTHER_TEAM: &str = "ops";

/// The running total, read by the application (the lost update's mistake, the report's first number).
pub const READ_SPENT: &str = "SELECT spent FROM teams WHERE id = $1";
/// The running total, added to by the database: atomic, and it waits for the row lock.
pub const ADD_TO_SPENT: &str = "UPDATE teams SET spent = spent + $2 WHERE id = $1 RETURNING spent";

/// The budget the rule checks against.
pub const SELECT_BUDGET: &str = "SELECT budget FROM teams WHERE id = $1";
/// What has been approved so far: the number the rule trusts.
pub const SELECT_APPROVED: &str = "SELECT coalesce(sum(amount), 0) FROM expenses WHERE team_id = $1";
/// Approving an expense.
pub const INSERT_EXPENSE: &str = "INSERT INTO expenses (team_id, amount, approved_by) VALUES ($1, $2, $3)";
/// The row-lock fix: every approval for a team takes the team's row lock first.
pub const LOCK_TEAM: &str = "SELECT 1 FROM teams WHERE id = $1 FOR UPDATE";
/// The conditional fix: reserve the money only if it fits, in one statement.
pub const RESERVE: &str = "UPDATE teams SET spent = spent + $2 WHERE id = $1 AND spent + $2 <= budget RETURNING spent";

/// How the serializable fix ends in the two-manager demos (write skew's serializable variant and
/// the approve demo's first fix): the verdict's reason.
pub const RETRY_SAW_ALICE: &str = "Bob's retry saw Alice's $3,000 and rejected";

/// The conditional fix, as its variant describes it (approve demo and load test).
pub const CONDITIONAL_FIX: &str = "One UPDATE reserves the money only if it fits";

/// The session level a variant named after a level asks for (`read-committed`, …); variants
/// named after something else run at READ COMMITTED, PostgreSQL's default.
pub fn level_of(variant: &str) -> Level {
    Level::from_variant(variant).unwrap_or(Level::ReadCommitted)
}

/// The run header's word for a session of `variant`: its level on PostgreSQL, or on MariaDB
/// its level and snapshot switch ([`Setting::detail`](crate::engine::mariadb::Setting::detail)).
pub fn session_detail(variant: &str) -> String {
    mariadb::setting_of(variant).map_or_else(
        || level_of(variant).sql().to_owned(),
        crate::engine::mariadb::Setting::detail,
    )
}

/// Adds the second team, with the same budget, before the actors start.
pub async fn add_other_team(run: &Run) -> Result<(), RunError> {
    run.setup(&format!(
        "INSERT INTO teams (id, name, budget) VALUES ('{OTHER_TEAM}', 'Operations', {BUDGET})"
    ))
    .await
}

/// The rule's two reads, as one actor's transaction sees them: `(budget, approved so far)`.
pub async fn read_rule(who: &PgActor, team: &str) -> Result<(i64, i64), RunError> {
    let budget = who.query(SELECT_BUDGET, &[team.into()]).await?.int()?;
    let approved = who.query(SELECT_APPROVED, &[team.into()]).await?.int()?;
    Ok((budget, approved))
}

/// Inserts one approved expense.
pub async fn insert_expense(who: &PgActor, team: &str, amount: i64) -> Result<(), RunError> {
    who.query(INSERT_EXPENSE, &[team.into(), amount.into(), who.name().into()])
        .await?;
    Ok(())
}

/// The business rule of the approve demos: read, decide, and insert if it fits. `pause` runs
/// between the decision and the insert (only if the amount fits): it is where the demos let the
/// other manager in. A future does nothing until awaited, so the caller just writes the
/// choreography as an `async` block. Says
/// `check: $A + $X <= $B, ok` (or `> $B, rejected`) and `insert $X`.
pub async fn check_and_insert(
    who: &PgActor,
    team: &str,
    amount: i64,
    pause: impl Future<Output = Result<(), RunError>>,
) -> Result<bool, RunError> {
    let (budget, approved) = read_rule(who, team).await?;
    who.say(rule_line(approved, amount, budget));
    if approved + amount > budget {
        return Ok(false);
    }
    pause.await?;
    insert_expense(who, team, amount).await?;
    who.say(format!("insert {}", usd(amount)));
    Ok(true)
}

/// The write-skew wording of the same check: `check: approved $0 + $3,000 <= $5,000? True`.
pub async fn check_fits(who: &PgActor, team: &str, amount: i64) -> Result<bool, RunError> {
    let (budget, approved) = read_rule(who, team).await?;
    let fits = approved + amount <= budget;
    who.say(fits_line(approved, amount, budget));
    Ok(fits)
}

/// The approve demos' check, on either database: `check: $0 + $3,000 <= $5,000, ok`, or
/// `check: $3,000 + $3,000 > $5,000, rejected`.
pub fn rule_line(approved: i64, amount: i64, budget: i64) -> String {
    let (sign, then) = if approved + amount > budget {
        (">", "rejected")
    } else {
        ("<=", "ok")
    };
    format!(
        "check: {} + {} {sign} {}, {then}",
        usd(approved),
        usd(amount),
        usd(budget)
    )
}

/// `check: approved $0 + $3,000 <= $5,000? True`, on either database.
pub fn fits_line(approved: i64, amount: i64, budget: i64) -> String {
    format!(
        "check: approved {} + {} <= {}? {}",
        usd(approved),
        usd(amount),
        usd(budget),
        python_bool(approved + amount <= budget)
    )
}

/// Inserts and says so: `insert $3,000`.
pub async fn insert_and_say(who: &PgActor, team: &str, amount: i64) -> Result<(), RunError> {
    insert_expense(who, team, amount).await?;
    who.say(format!("insert {}", usd(amount)));
    Ok(())
}

/// `True` / `False`, spelled as the tutorial's output spells booleans.
pub fn python_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// The ledger every isolation scenario shows.
pub const LEDGER: [TableQuery; 2] = [
    TableQuery {
        name: "teams",
        schema: "",
        sql: "SELECT id, budget, spent FROM teams ORDER BY id",
        key_columns: 1,
    },
    TableQuery {
        name: "expenses",
        schema: "",
        sql: "SELECT id, team_id, amount, approved_by FROM expenses ORDER BY id",
        key_columns: 1,
    },
];

/// Takes the ledger and emits it as the `Before` snapshot.
pub async fn ledger_before(run: &Run) -> Result<Ledger, RunError> {
    let ledger = run.snapshot(&LEDGER).await?;
    Ok(show_before(run, ledger))
}

/// Emits the ledger before the actors start, and returns it.
pub fn show_before(run: &Run, ledger: Ledger) -> Ledger {
    run.emit(EventKind::Ledger {
        moment: Moment::Before,
        ledger: ledger.clone(),
    });
    ledger
}

/// Takes the ledger after the actors finished, emits it with what a correct system would hold,
/// and returns it.
pub async fn ledger_after(run: &Run, expected: Ledger) -> Result<Ledger, RunError> {
    let ledger = run.snapshot(&LEDGER).await?;
    Ok(show_after(run, ledger, expected))
}

/// Emits the ledger after the actors finished with what a correct system would hold, and
/// returns it.
pub fn show_after(run: &Run, ledger: Ledger, expected: Ledger) -> Ledger {
    run.emit(EventKind::Ledger {
        moment: Moment::After,
        ledger: ledger.clone(),
    });
    run.emit(EventKind::Ledger {
        moment: Moment::Expected,
        ledger: expected,
    });
    ledger
}

/// The ledger a correct system holds: the teams (`(id, budget, spent)`) and expenses
/// (`(team, amount, approved_by)`, numbered from 1).
pub fn ledger_of(teams: &[(&str, i64, i64)], expenses: &[(&str, i64, &str)]) -> Ledger {
    Ledger {
        tables: vec![
            Table {
                name: "teams".into(),
                columns: vec!["id".into(), "budget".into(), "spent".into()],
                key_columns: 1,
                rows: teams
                    .iter()
                    .map(|(id, budget, spent)| vec![(*id).into(), (*budget).into(), (*spent).into()])
                    .collect(),
            },
            Table {
                name: "expenses".into(),
                columns: vec!["id".into(), "team_id".into(), "amount".into(), "approved_by".into()],
                key_columns: 1,
                rows: expenses
                    .iter()
                    .zip(1i64..)
                    .map(|((team, amount, who), id)| vec![id.into(), (*team).into(), (*amount).into(), (*who).into()])
                    .collect(),
            },
        ],
    }
}

/// `(count, total)` of a team's expenses in a ledger snapshot.
pub fn expense_totals(ledger: &Ledger, team: &str) -> (i64, i64) {
    let Some(expenses) = ledger.table("expenses") else {
        return (0, 0);
    };
    expenses
        .rows
        .iter()
        .filter(|row| row.get(1).and_then(Value::as_text) == Some(team))
        .filter_map(|row| row.get(2).and_then(Value::as_int))
        .fold((0, 0), |(count, total), amount| (count + 1, total + amount))
}

/// A team's `spent` in a ledger snapshot.
pub fn spent_of(ledger: &Ledger, team: &str) -> i64 {
    ledger
        .table("teams")
        .and_then(|t| {
            t.rows
                .iter()
                .find(|row| row.first().and_then(Value::as_text) == Some(team))
        })
        .and_then(|row| row.get(2).and_then(Value::as_int))
        .unwrap_or(0)
}

/// The closing line of the write-skew and approve scripts, from the final check's query.
pub async fn say_totals(run: &Run) -> Result<(i64, i64), RunError> {
    let totals = run
        .check(
            "SELECT coalesce(sum(amount), 0), count(*) FROM expenses WHERE team_id = $1",
            &[TEAM.into()],
        )
        .await?;
    let (total, count) = (totals.int_at(0)?, totals.int_at(1)?);
    run.say_plain(totals_line(count, total));
    Ok((count, total))
}

/// `approved 2 expense(s) totalling $6,000 on a $5,000 budget`, on either database.
pub fn totals_line(count: i64, total: i64) -> String {
    format!(
        "approved {count} expense(s) totalling {} on a {} budget",
        usd(total),
        usd(BUDGET)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_ledgers_number_expenses_from_one() {
        let ledger = ledger_of(&[(TEAM, BUDGET, 0)], &[(TEAM, 3000, "alice"), (TEAM, 3000, "bob")]);
        assert_eq!(expense_totals(&ledger, TEAM), (2, 6000));
        assert_eq!(spent_of(&ledger, TEAM), 0);
        let ids: Vec<Value> = ledger.tables[1].rows.iter().map(|r| r[0].clone()).collect();
        assert_eq!(ids, vec![Value::Int(1), Value::Int(2)]);
    }
}
