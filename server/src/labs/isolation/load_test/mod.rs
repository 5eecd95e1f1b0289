//! Load test: 16 workers, each on its own connection, take 400 approvals (the tutorial's exact
//! amounts, $108,488 asked in all) from one queue against a $50,000 budget, once per strategy.
//!
//! Invariants (the verdict checks them): the naive check-then-insert strategies go over budget;
//! SERIALIZABLE + retry, the row lock and the conditional UPDATE never do; the locking fixes
//! never retry; the conditional fix leaves `teams.spent` equal to the sum of the expenses. An
//! approval that runs out of its 10 attempts is counted as `gave_up=`, never dropped. The race
//! makes the other figures vary from run to run; they are reported beside the tutorial's ranges.
//!
//! The same strategies play on MariaDB (variants `mariadb-…`, [`mariadb`]): the queue, the
//! workers and the figures are this module's; only the sessions and their SQL are MariaDB's.

mod mariadb;

use super::approve::approve_with_retry;
use super::{LOCK_TEAM, RESERVE, TEAM, check_and_insert, insert_expense};
use crate::engine::{Level, PgActor, Retried, Run, RunError};
use crate::labs::{ScenarioDef, actors_at};
use futures_util::future::try_join_all;
use shared::catalog::{MARIADB_PREFIX, Service, database_of};
use shared::{Check, EventKind, Ledger, Moment, Table, Value, Verdict, usd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "isolation/load-test",
    title: "Load test: 400 approvals, 16 workers",
    hook: "Sixteen managers approve 400 expenses worth $108,488 against a $50,000 budget",
    about: "Sixteen workers, each on its own connection, drain a queue of 400 approvals worth $108,488 against a $50,000 budget, once per strategy. The naive check-then-insert goes over budget; the three fixes never do, at different costs in retries and waiting.",
    variants: &[
        ("all", "all five", "Every strategy in turn, the tutorial's full table"),
        (
            "naive-rc",
            "check-then-insert, READ COMMITTED",
            "No protection: every worker checks, then inserts",
        ),
        (
            "naive-rr",
            "check-then-insert, REPEATABLE READ",
            "A snapshot per approval: no help against the other workers",
        ),
        (
            "serializable",
            "SERIALIZABLE + retry",
            "PostgreSQL cancels conflicting approvals; each retries up to 10 times",
        ),
        (
            "for-update",
            "row lock",
            "Each approval locks the team row first: one at a time",
        ),
        ("conditional", "conditional UPDATE", super::CONDITIONAL_FIX),
        (
            "mariadb-all",
            "MariaDB, all five",
            "Every strategy in turn on MariaDB (InnoDB), sixteen sessions there",
        ),
        (
            "mariadb-naive-rc",
            "MariaDB check-then-insert, READ COMMITTED",
            "No protection: every worker checks, then inserts",
        ),
        (
            "mariadb-naive-rr",
            "MariaDB check-then-insert, REPEATABLE READ",
            "A read view per approval: no help against the other workers",
        ),
        (
            "mariadb-serializable",
            "MariaDB SERIALIZABLE + retry",
            "Every check locks what it read: InnoDB breaks the deadlocks, each approval retries up to 10 times",
        ),
        (
            "mariadb-for-update",
            "MariaDB row lock",
            "Each approval locks the team row first: one at a time",
        ),
        (
            "mariadb-conditional",
            "MariaDB conditional UPDATE",
            super::CONDITIONAL_FIX,
        ),
    ],
    steppable: false,
    workload: true,
    sandbox: super::SANDBOX,
    actors: |variant| {
        let detail = Strategy::from_variant(variant).map_or_else(
            || "per strategy".to_owned(),
            |s| match database_of(variant) {
                Service::Mariadb => mariadb::setting(s).detail(),
                _ => s.level().sql().to_owned(),
            },
        );
        actors_at(&WORKER_NAMES, &detail)
    },
    budget: None,
    play: |run, variant| Box::pin(play(run, variant)),
    summarize: Some(load_test_summary),
    predict: None,
};

/// Concurrent workers, each with its own connection.
pub const WORKERS: usize = 16;
const WORKER_NAMES: [&str; WORKERS] = [
    "w00", "w01", "w02", "w03", "w04", "w05", "w06", "w07", "w08", "w09", "w10", "w11", "w12", "w13", "w14", "w15",
];
/// The team's budget for the load test.
pub const LOAD_BUDGET: i64 = 50_000;
/// How often (in approvals) progress is reported.
const PROGRESS_EVERY: u64 = 10;

/// The 400 amounts, in queue order: the tutorial's seeded draw of 50..=500 (sum $108,488). The
/// first 185 sum to $49,952, so an approver taking them strictly in order approves 185.
pub const AMOUNTS: [i64; 400] = [
    377, 107, 62, 429, 190, 175, 164, 121, 427, 102, 396, 429, 329, 94, 352, 266, 66, 65, 97, 161, 169, 308, 358, 63,
    337, 151, 416, 382, 409, 329, 264, 162, 279, 351, 192, 464, 495, 53, 438, 462, 131, 407, 266, 224, 192, 129, 160,
    440, 222, 102, 97, 244, 99, 233, 483, 226, 359, 185, 463, 72, 423, 285, 324, 113, 243, 90, 332, 200, 474, 371, 366,
    491, 235, 345, 148, 410, 85, 73, 388, 166, 445, 198, 90, 487, 169, 493, 101, 244, 192, 282, 375, 477, 236, 133,
    239, 231, 157, 393, 186, 409, 399, 381, 86, 361, 375, 137, 323, 423, 175, 133, 286, 244, 188, 377, 402, 335, 162,
    400, 216, 481, 443, 447, 78, 167, 470, 66, 462, 211, 255, 187, 83, 158, 340, 498, 417, 211, 158, 385, 305, 252,
    379, 284, 123, 185, 121, 176, 431, 337, 325, 184, 432, 349, 269, 348, 254, 235, 162, 120, 310, 302, 96, 436, 74,
    490, 106, 128, 371, 131, 455, 398, 266, 355, 82, 247, 245, 355, 289, 320, 178, 333, 490, 55, 398, 419, 108, 399,
    324, 434, 186, 443, 378, 224, 107, 200, 272, 130, 282, 51, 419, 498, 418, 184, 306, 440, 141, 309, 104, 495, 370,
    202, 480, 377, 309, 361, 151, 128, 241, 440, 132, 326, 448, 321, 50, 356, 215, 300, 59, 107, 235, 499, 475, 463,
    207, 172, 79, 173, 499, 340, 90, 93, 424, 298, 467, 85, 439, 322, 442, 114, 115, 387, 293, 331, 134, 185, 320, 496,
    360, 266, 158, 326, 436, 423, 403, 152, 415, 209, 254, 393, 382, 241, 274, 314, 281, 111, 176, 165, 82, 223, 60,
    351, 333, 167, 351, 162, 53, 86, 412, 373, 80, 167, 84, 66, 490, 219, 86, 313, 171, 192, 392, 298, 159, 326, 117,
    420, 342, 345, 292, 174, 451, 292, 463, 258, 147, 98, 99, 387, 270, 231, 266, 260, 289, 492, 423, 77, 394, 384,
    380, 100, 81, 256, 422, 223, 459, 491, 105, 177, 148, 147, 324, 279, 121, 266, 143, 192, 286, 177, 497, 88, 276,
    463, 491, 488, 331, 100, 75, 383, 326, 478, 57, 97, 435, 484, 171, 135, 258, 298, 296, 159, 492, 255, 80, 134, 244,
    51, 249, 185, 451, 451, 282, 196, 266, 406, 424, 451, 334, 388, 417, 299, 129, 147, 201, 161, 79, 346, 426, 327,
    81, 432, 210, 79,
];

/// One way to approve under load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    NaiveReadCommitted,
    NaiveRepeatableRead,
    Serializable,
    ForUpdate,
    Conditional,
}

impl Strategy {
    /// In the tutorial's order.
    pub const ALL: [Strategy; 5] = [
        Strategy::NaiveReadCommitted,
        Strategy::NaiveRepeatableRead,
        Strategy::Serializable,
        Strategy::ForUpdate,
        Strategy::Conditional,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::NaiveReadCommitted => "naive-rc",
            Strategy::NaiveRepeatableRead => "naive-rr",
            Strategy::Serializable => "serializable",
            Strategy::ForUpdate => "for-update",
            Strategy::Conditional => "conditional",
        }
    }

    /// The strategy of a variant on either database (`for-update`, `mariadb-for-update`);
    /// `None` for every strategy in turn.
    pub fn from_variant(variant: &str) -> Option<Strategy> {
        let name = variant.strip_prefix(MARIADB_PREFIX).unwrap_or(variant);
        Strategy::ALL.into_iter().find(|s| s.name() == name)
    }

    pub fn level(self) -> Level {
        match self {
            Strategy::NaiveRepeatableRead => Level::RepeatableRead,
            Strategy::Serializable => Level::Serializable,
            _ => Level::ReadCommitted,
        }
    }

    /// Whether the strategy is meant to keep the budget (the three fixes).
    pub fn is_fix(self) -> bool {
        !matches!(self, Strategy::NaiveReadCommitted | Strategy::NaiveRepeatableRead)
    }

    /// The tutorial's six-run ranges for this strategy, labelled as its environment's:
    /// `(over budget, approved, retries per 400, most attempts)`.
    pub fn tutorial_ranges(self) -> [&'static str; 4] {
        match self {
            Strategy::NaiveReadCommitted => ["$1,216 to $2,354", "189 to 192", "0", "1"],
            Strategy::NaiveRepeatableRead => ["$2,340 to $3,049", "192 to 196", "0", "1"],
            Strategy::Serializable => ["$0", "183 to 185", "101 to 123", "7 to 8"],
            Strategy::ForUpdate => ["$0", "185 every run", "0", "1"],
            Strategy::Conditional => ["$0", "183 to 187", "0", "1"],
        }
    }
}

/// What one strategy's run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Figures {
    pub strategy: Strategy,
    pub approved: i64,
    /// Attempts beyond the first, over all approvals.
    pub retries: i64,
    pub most_attempts: i64,
    pub gave_up: i64,
    /// Sum of the committed expenses.
    pub total: i64,
    /// `teams.spent` afterwards (only the conditional fix moves it).
    pub spent: i64,
    pub elapsed_ms: i64,
}

impl Figures {
    pub fn over_budget(&self) -> i64 {
        (self.total - LOAD_BUDGET).max(0)
    }

    /// The tutorial's summary line, with `gave_up=` added.
    pub fn line(&self) -> String {
        format!(
            "{:<13} approved={:<3} retries={:<4} most_attempts={:<2} total={} over_budget={} gave_up={}",
            self.strategy.name(),
            self.approved,
            self.retries,
            self.most_attempts,
            usd(self.total),
            usd(self.over_budget()),
            self.gave_up
        )
    }
}

/// The columns of the `strategies` table in the ledger.
pub const FIGURE_COLUMNS: [&str; 9] = [
    "strategy",
    "approved",
    "retries",
    "most_attempts",
    "total",
    "over_budget",
    "gave_up",
    "spent",
    "elapsed_ms",
];

impl Figures {
    fn row(&self) -> Vec<Value> {
        vec![
            self.strategy.name().into(),
            self.approved.into(),
            self.retries.into(),
            self.most_attempts.into(),
            self.total.into(),
            self.over_budget().into(),
            self.gave_up.into(),
            self.spent.into(),
            self.elapsed_ms.into(),
        ]
    }

    /// Reads figures back from a `strategies` table row (the CLI's `--runs` table uses this).
    pub fn from_row(row: &[Value]) -> Option<Figures> {
        let int = |i: usize| row.get(i).and_then(Value::as_int);
        Some(Figures {
            strategy: Strategy::from_variant(row.first()?.as_text()?)?,
            approved: int(1)?,
            retries: int(2)?,
            most_attempts: int(3)?,
            total: int(4)?,
            gave_up: int(6)?,
            spent: int(7)?,
            elapsed_ms: int(8)?,
        })
    }
}

async fn play(run: &Run, variant: &str) -> Result<(), RunError> {
    let strategies: Vec<Strategy> = match Strategy::from_variant(variant) {
        Some(one) => vec![one],
        None => Strategy::ALL.to_vec(),
    };
    let database = database_of(variant);
    run.say_plain(format!(
        "--- {WORKERS} workers, {} approvals, {} budget ---",
        AMOUNTS.len(),
        usd(LOAD_BUDGET)
    ));
    if database == Service::Mariadb {
        run.mariadb_prepare(super::mariadb::SCHEMA).await?;
    }
    reset(run, database).await?;
    run.emit(EventKind::Ledger {
        moment: Moment::Before,
        ledger: snapshot(run, database).await?,
    });

    let mut all = Vec::new();
    let jobs = AMOUNTS.len() as u64;
    let overall = Overall {
        done_before: 0,
        total: jobs * strategies.len() as u64,
    };
    for (i, strategy) in strategies.iter().copied().enumerate() {
        reset(run, database).await?;
        let overall = Overall {
            done_before: i as u64 * jobs,
            ..overall
        };
        let figures = match database {
            Service::Mariadb => mariadb::run_strategy(run, strategy, overall).await?,
            _ => run_strategy(run, strategy, overall).await?,
        };
        run.say_plain(figures.line());
        all.push(figures);
    }

    let mut after = snapshot(run, database).await?;
    after.tables.push(Table {
        name: "strategies".into(),
        columns: FIGURE_COLUMNS.iter().map(|c| (*c).to_owned()).collect(),
        key_columns: 1,
        rows: all.iter().map(Figures::row).collect(),
    });
    after
        .tables
        .push(over_budget_table(all.iter().map(|f| (f.strategy, f.over_budget()))));
    run.emit(EventKind::Ledger {
        moment: Moment::After,
        ledger: after,
    });
    run.emit(EventKind::Ledger {
        moment: Moment::Expected,
        ledger: expected_ledger(&all),
    });
    run.emit(EventKind::Ledger {
        moment: Moment::Reference,
        ledger: tutorial_ranges(&all),
    });
    run.verdict(verdict(&all));
    Ok(())
}

/// The team's row, as the ledger shows it, on the database the run plays on.
async fn snapshot(run: &Run, database: Service) -> Result<Ledger, RunError> {
    match database {
        Service::Mariadb => run.mariadb_snapshot(&super::LEDGER[..1]).await,
        _ => run.snapshot(&super::LEDGER[..1]).await,
    }
}

/// What correctness demands of every strategy that ran: nothing over budget. (How many it
/// approves, retries or waits is not a matter of correctness, so the expected ledger says
/// nothing about it.)
fn expected_ledger(all: &[Figures]) -> Ledger {
    Ledger {
        tables: vec![over_budget_table(all.iter().map(|f| (f.strategy, 0)))],
    }
}

/// The `budget` table: each strategy's amount over budget.
fn over_budget_table(rows: impl Iterator<Item = (Strategy, i64)>) -> Table {
    Table {
        name: "budget".into(),
        columns: vec!["strategy".into(), "over_budget".into()],
        key_columns: 1,
        rows: rows
            .map(|(strategy, over)| vec![Value::from(strategy.name()), Value::Int(over)])
            .collect(),
    }
}

/// The tutorial's six-run ranges for the strategies that ran, as the reference ledger: what its
/// author measured (PostgreSQL 18.6 in Docker), shown beside ours, never asserted.
fn tutorial_ranges(all: &[Figures]) -> Ledger {
    let columns = ["strategy", "over_budget", "approved", "retries", "most_attempts"];
    Ledger {
        tables: vec![Table {
            name: "tutorial, six runs".into(),
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            key_columns: 1,
            rows: all
                .iter()
                .map(|f| {
                    let mut row = vec![Value::from(f.strategy.name())];
                    row.extend(f.strategy.tutorial_ranges().iter().map(|r| Value::from(*r)));
                    row
                })
                .collect(),
        }],
    }
}

/// Every strategy starts from the same state: no expenses (ids from 1), $50,000, nothing spent.
async fn reset(run: &Run, database: Service) -> Result<(), RunError> {
    let team = format!("UPDATE teams SET budget = {LOAD_BUDGET}, spent = 0 WHERE id = '{TEAM}'");
    match database {
        // InnoDB's TRUNCATE restarts the numbering too.
        Service::Mariadb => {
            run.mariadb_setup("TRUNCATE TABLE expenses").await?;
            run.mariadb_setup(&team).await
        }
        _ => run.setup(&format!("TRUNCATE expenses RESTART IDENTITY; {team}")).await,
    }
}

/// Where one strategy's approvals sit in the whole run's progress (every strategy's 400).
#[derive(Clone, Copy)]
struct Overall {
    done_before: u64,
    total: u64,
}

/// Runs one strategy on PostgreSQL: 16 workers drain the queue of 400 amounts.
async fn run_strategy(run: &Run, strategy: Strategy, overall: Overall) -> Result<Figures, RunError> {
    let started = Instant::now();
    let workers = try_join_all(WORKER_NAMES.iter().map(|name| run.worker(name, strategy.level()))).await?;
    let results = drain(run, strategy, overall, &workers, |worker, amount| {
        approve(strategy, worker, amount)
    })
    .await?;
    for worker in workers {
        worker.close().await;
    }
    let elapsed = started.elapsed();
    let totals = run
        .check(
            "SELECT coalesce(sum(amount), 0), (SELECT spent FROM teams WHERE id = $1) FROM expenses WHERE team_id = $1",
            &[TEAM.into()],
        )
        .await?;
    Ok(Figures::of(
        strategy,
        &results,
        (totals.int_at(0)?, totals.int_at(1)?),
        elapsed,
    ))
}

/// The queue: each of `workers` takes the next amount, approves it `approve`'s way, and takes
/// the next, until all 400 are done; the run's progress is told every few approvals. Returns
/// every approval's outcome.
async fn drain<'w, W, F, Fut>(
    run: &Run,
    strategy: Strategy,
    overall: Overall,
    workers: &'w [W],
    approve: F,
) -> Result<Vec<Approval>, RunError>
where
    F: Fn(&'w W, i64) -> Fut,
    Fut: Future<Output = Result<Approval, RunError>>,
{
    let next_job = AtomicUsize::new(0);
    let done = AtomicU64::new(0);
    let results: Mutex<Vec<Approval>> = Mutex::new(Vec::with_capacity(AMOUNTS.len()));
    let total_jobs = AMOUNTS.len() as u64;
    try_join_all(workers.iter().map(|worker| async {
        while let Some(&amount) = AMOUNTS.get(next_job.fetch_add(1, Ordering::SeqCst)) {
            let approval = approve(worker, amount).await?;
            results.lock().unwrap_or_else(|p| p.into_inner()).push(approval);
            let finished = done.fetch_add(1, Ordering::SeqCst) + 1;
            if finished.is_multiple_of(PROGRESS_EVERY) || finished == total_jobs {
                run.emit(EventKind::Progress {
                    label: strategy.name().into(),
                    done: overall.done_before + finished,
                    total: overall.total,
                });
            }
        }
        Ok::<(), RunError>(())
    }))
    .await?;
    Ok(results.into_inner().unwrap_or_else(|p| p.into_inner()))
}

impl Figures {
    /// One strategy's figures: from its approvals' outcomes, the `(total, spent)` it left, and
    /// how long it took.
    fn of(strategy: Strategy, results: &[Approval], (total, spent): (i64, i64), elapsed: std::time::Duration) -> Self {
        Figures {
            strategy,
            approved: results.iter().filter(|a| a.approved).count() as i64,
            retries: results.iter().map(|a| a.attempts - 1).sum(),
            most_attempts: results.iter().map(|a| a.attempts).max().unwrap_or(0),
            gave_up: results.iter().filter(|a| a.gave_up).count() as i64,
            total,
            spent,
            elapsed_ms: i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX),
        }
    }
}

/// One approval's outcome.
struct Approval {
    approved: bool,
    attempts: i64,
    gave_up: bool,
}

impl Approval {
    fn once(approved: bool) -> Self {
        Approval {
            approved,
            attempts: 1,
            gave_up: false,
        }
    }
}

/// One approval of `amount` by `worker`, the strategy's way.
async fn approve(strategy: Strategy, worker: &PgActor, amount: i64) -> Result<Approval, RunError> {
    match strategy {
        Strategy::NaiveReadCommitted | Strategy::NaiveRepeatableRead => {
            let approved = check_and_insert(worker, TEAM, amount, async { Ok(()) }).await?;
            worker.commit().await?;
            Ok(Approval::once(approved))
        }
        Strategy::Serializable => Ok(match approve_with_retry(worker, amount, || async { Ok(()) }).await? {
            Retried::Done { value, attempts } => Approval {
                approved: value,
                attempts: attempts.into(),
                gave_up: false,
            },
            Retried::GaveUp { attempts, .. } => Approval {
                approved: false,
                attempts: attempts.into(),
                gave_up: true,
            },
        }),
        Strategy::ForUpdate => {
            worker.query(LOCK_TEAM, &[TEAM.into()]).await?;
            let approved = check_and_insert(worker, TEAM, amount, async { Ok(()) }).await?;
            worker.commit().await?;
            Ok(Approval::once(approved))
        }
        Strategy::Conditional => {
            let reserved = worker.query(RESERVE, &[TEAM.into(), amount.into()]).await?;
            if reserved.row_count() == 0 {
                worker.rollback().await?;
                return Ok(Approval::once(false));
            }
            insert_expense(worker, TEAM, amount).await?;
            worker.commit().await?;
            Ok(Approval::once(true))
        }
    }
}

/// The load test's verdict. Rule for every strategy: nothing over budget. The naive strategies
/// are expected to break it (that is the bug, reproduced under load); the fixes must keep it, and
/// the locking fixes must also never retry.
pub fn verdict(all: &[Figures]) -> Verdict {
    let mut checks = Vec::new();
    for f in all {
        checks.push(Check::new(
            format!("{}: over budget = $0", f.strategy.name()),
            format!("over budget = {}", usd(f.over_budget())),
            f.over_budget() == 0,
        ));
        if matches!(f.strategy, Strategy::ForUpdate | Strategy::Conditional) {
            checks.push(Check::new(
                format!("{}: no retries", f.strategy.name()),
                format!("retries = {}", f.retries),
                f.retries == 0 && f.most_attempts <= 1,
            ));
        }
        if f.strategy == Strategy::Conditional {
            checks.push(Check::new(
                "conditional: teams.spent = sum of expenses",
                format!("spent = {}, expenses = {}", usd(f.spent), usd(f.total)),
                f.spent == f.total,
            ));
        }
    }
    let worst_naive = all
        .iter()
        .filter(|f| !f.strategy.is_fix())
        .map(Figures::over_budget)
        .max();
    let broken_fixes: Vec<String> = all
        .iter()
        .filter(|f| f.strategy.is_fix() && f.over_budget() > 0)
        .map(|f| format!("{} by {}", f.strategy.name(), usd(f.over_budget())))
        .collect();
    let fixes_held = broken_fixes.is_empty();
    let headline = match worst_naive {
        _ if !fixes_held => format!("A fix went over budget: {}", broken_fixes.join(", ")),
        Some(over) if over > 0 && all.iter().any(|f| f.strategy.is_fix()) => {
            format!("Naive approvals overspent by up to {}; the fixes never did", usd(over))
        }
        Some(over) if over > 0 => format!("Overspent by {} under load", usd(over)),
        Some(_) => "This run's race happened to stay within budget".to_owned(),
        None => "Never over budget, 400 approvals under load".to_owned(),
    };
    let reason = if fixes_held {
        "Check-then-insert lets concurrent approvals all see room; SERIALIZABLE, the row lock and the conditional UPDATE each make them take turns or retry."
    } else {
        "A strategy meant to keep the budget did not: this is a bug in racelab or the database."
    };
    Verdict::judge(checks, headline, reason)
}

/// The `--runs N` summary: the table of [`range_table`] from each run's final ledger.
fn load_test_summary(runs: &[Ledger]) -> String {
    let figures: Vec<Vec<Figures>> = runs.iter().map(figures_of).collect();
    range_table(&figures)
}

/// The `--runs N` table: each strategy's min–max over the runs, beside the tutorial's six-run
/// ranges (measured in its environment, not ours).
pub fn range_table(runs: &[Vec<Figures>]) -> String {
    let mut out = format!(
        "--- {} run(s): racelab min–max | tutorial, six runs, PostgreSQL 18.6 in Docker ---\n{:<13} {:<17} {:<9} {:<9} {:<7} {:<7} {:<8} | {:<17} {:<13} {:<10} {}\n",
        runs.len(),
        "strategy",
        "over_budget",
        "approved",
        "retries",
        "most",
        "gave_up",
        "ms",
        "over budget",
        "approved",
        "retries",
        "most"
    );
    for strategy in Strategy::ALL {
        let figures: Vec<&Figures> = runs.iter().flatten().filter(|f| f.strategy == strategy).collect();
        if figures.is_empty() {
            continue;
        }
        let span = |f: &dyn Fn(&Figures) -> i64, money: bool| {
            let (lo, hi) = figures
                .iter()
                .map(|x| f(x))
                .fold((i64::MAX, i64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
            let show = |v: i64| if money { usd(v) } else { v.to_string() };
            if lo == hi {
                show(lo)
            } else {
                format!("{}–{}", show(lo), show(hi))
            }
        };
        let [t_over, t_approved, t_retries, t_most] = strategy.tutorial_ranges();
        out.push_str(&format!(
            "{:<13} {:<17} {:<9} {:<9} {:<7} {:<7} {:<8} | {:<17} {:<13} {:<10} {}\n",
            strategy.name(),
            span(&Figures::over_budget, true),
            span(&|f| f.approved, false),
            span(&|f| f.retries, false),
            span(&|f| f.most_attempts, false),
            span(&|f| f.gave_up, false),
            span(&|f| f.elapsed_ms, false),
            t_over,
            t_approved,
            t_retries,
            t_most
        ));
    }
    out
}

/// The strategies table of a load-test run's `After` ledger, as figures.
pub fn figures_of(after: &Ledger) -> Vec<Figures> {
    after.table("strategies").map_or_else(Vec::new, |t| {
        t.rows.iter().filter_map(|r| Figures::from_row(r)).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::VerdictKind;

    fn figures(strategy: Strategy, total: i64, retries: i64) -> Figures {
        Figures {
            strategy,
            approved: 185,
            retries,
            most_attempts: 1 + retries.min(1),
            gave_up: 0,
            total,
            spent: 0,
            elapsed_ms: 5,
        }
    }

    #[test]
    fn amounts_are_the_tutorials() {
        assert_eq!(AMOUNTS.iter().sum::<i64>(), 108_488);
        assert_eq!(AMOUNTS[..185].iter().sum::<i64>(), 49_952);
        assert_eq!(AMOUNTS[185], 399);
        assert_eq!((AMOUNTS.iter().min(), AMOUNTS.iter().max()), (Some(&50), Some(&499)));
    }

    #[test]
    fn summary_line_keeps_the_tutorials_format() {
        let f = Figures {
            strategy: Strategy::NaiveReadCommitted,
            approved: 191,
            retries: 0,
            most_attempts: 1,
            gave_up: 0,
            total: 51_899,
            spent: 0,
            elapsed_ms: 1,
        };
        assert_eq!(
            f.line(),
            "naive-rc      approved=191 retries=0    most_attempts=1  total=$51,899 over_budget=$1,899 gave_up=0"
        );
    }

    #[test]
    fn verdict_reproduces_when_naive_overspends_and_fixes_hold() {
        let all = vec![
            figures(Strategy::NaiveReadCommitted, 51_000, 0),
            figures(Strategy::ForUpdate, 49_952, 0),
        ];
        let v = verdict(&all);
        assert_eq!(v.kind, VerdictKind::Reproduced);
        assert!(v.headline.contains("$1,000"), "{}", v.headline);
        assert!(
            v.checks
                .iter()
                .filter(|c| c.rule.starts_with("for-update"))
                .all(|c| c.holds)
        );
    }

    #[test]
    fn a_fix_that_overspends_breaks_the_verdict() {
        let v = verdict(&[figures(Strategy::Serializable, 50_100, 3)]);
        assert_eq!(v.kind, VerdictKind::Reproduced);
        assert_eq!(v.headline, "A fix went over budget: serializable by $100");
    }

    #[test]
    fn the_headline_names_a_fix_that_overspent_even_when_naive_did_too() {
        let v = verdict(&[
            figures(Strategy::NaiveReadCommitted, 52_000, 0),
            figures(Strategy::ForUpdate, 50_250, 0),
        ]);
        assert_eq!(v.headline, "A fix went over budget: for-update by $250");
    }

    #[test]
    fn the_expected_ledger_is_what_correctness_demands_not_the_tutorials_figures() {
        let all = vec![
            figures(Strategy::NaiveReadCommitted, 52_000, 0),
            figures(Strategy::Serializable, 49_952, 120),
        ];
        let expected = expected_ledger(&all);
        assert_eq!(expected.tables.len(), 1);
        let budget = &expected.tables[0];
        assert_eq!(budget.name, "budget");
        assert_eq!(
            budget.rows,
            vec![
                vec![Value::from("naive-rc"), Value::Int(0)],
                vec![Value::from("serializable"), Value::Int(0)],
            ]
        );
        let reference = tutorial_ranges(&all);
        assert_eq!(reference.tables[0].name, "tutorial, six runs");
    }

    #[test]
    fn figures_survive_the_ledger_round_trip() {
        let f = figures(Strategy::Conditional, 49_952, 0);
        assert_eq!(Figures::from_row(&f.row()), Some(f));
    }

    #[test]
    fn range_table_shows_min_to_max_beside_the_tutorial() {
        let runs = vec![
            vec![figures(Strategy::NaiveReadCommitted, 51_000, 0)],
            vec![figures(Strategy::NaiveReadCommitted, 52_500, 0)],
        ];
        let table = range_table(&runs);
        let row = table
            .lines()
            .find(|l| l.starts_with("naive-rc"))
            .expect("a naive-rc row");
        assert!(row.contains("$1,000–$2,500"), "{row}");
        assert!(row.contains("$1,216 to $2,354"), "{row}");
        assert!(!table.contains("serializable"));
    }
}
