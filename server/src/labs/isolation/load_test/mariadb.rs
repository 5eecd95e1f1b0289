//! The load test on MariaDB: the same queue, workers and figures ([`super::drain`]), each worker
//! a session of the run's user in its sandbox there, approving in MariaDB's SQL.
//!
//! What differs, and why (docs/labs.md, "On MariaDB"):
//! - SERIALIZABLE on InnoDB makes every check a locking read: sixteen checks hold the same range
//!   of the team index, every insert into it waits for the others, and InnoDB breaks each cycle
//!   at once by refusing one insert (`1213`, SQLSTATE 40001). The refused approval is rolled
//!   back and retried whole, as on PostgreSQL, with the same policy (10 attempts, full jitter).
//! - The row lock and the conditional UPDATE queue on the team's row as on PostgreSQL: never a
//!   retry.
//! - REPEATABLE READ plays with InnoDB's snapshot switch off, this server's default before
//!   MariaDB 11.6.2: each approval inserts a new row, so the switch has nothing to refuse.

use super::{Approval, Figures, Overall, Strategy, WORKER_NAMES, drain};
use crate::engine::mariadb::{Level, MariaActor, Setting};
use crate::engine::{RetryPolicy, Run, RunError, StepError};
use crate::labs::isolation::TEAM;
use crate::labs::isolation::mariadb::{insert_amount, lock_sql, reserve_sql, select_approved, select_budget};
use futures_util::future::try_join_all;
use std::time::Instant;

/// InnoDB's deadlock: the one error an approval retries.
const DEADLOCK: u16 = crate::labs::isolation::mariadb::DEADLOCK;

/// A worker's session for `strategy`: its level, the snapshot switch off.
pub fn setting(strategy: Strategy) -> Setting {
    let level = match strategy.level() {
        crate::engine::Level::RepeatableRead => Level::RepeatableRead,
        crate::engine::Level::Serializable => Level::Serializable,
        _ => Level::ReadCommitted,
    };
    Setting {
        level: Some(level),
        snapshot_isolation: false,
    }
}

/// Runs one strategy on MariaDB: 16 workers drain the queue of 400 amounts.
pub(super) async fn run_strategy(run: &Run, strategy: Strategy, overall: Overall) -> Result<Figures, RunError> {
    let started = Instant::now();
    let workers = try_join_all(
        WORKER_NAMES
            .iter()
            .map(|name| run.mariadb_worker(name, setting(strategy))),
    )
    .await?;
    let results = drain(run, strategy, overall, &workers, |worker, amount| {
        approve(strategy, worker, amount)
    })
    .await?;
    // Each worker's session closes as its handle goes.
    drop(workers);
    let elapsed = started.elapsed();
    let totals = run
        .mariadb_check(&format!(
            "SELECT COALESCE(SUM(amount), 0), (SELECT spent FROM teams WHERE id = '{TEAM}') FROM expenses WHERE team_id = '{TEAM}'"
        ))
        .await?;
    Ok(Figures::of(
        strategy,
        &results,
        (totals.int_at(0)?, totals.int_at(1)?),
        elapsed,
    ))
}

/// One approval of `amount` by `worker`, the strategy's way.
async fn approve(strategy: Strategy, worker: &MariaActor, amount: i64) -> Result<Approval, RunError> {
    match strategy {
        Strategy::NaiveReadCommitted | Strategy::NaiveRepeatableRead => {
            let approved = check_and_insert(worker, amount).await?;
            worker.commit().await?;
            Ok(Approval::once(approved))
        }
        Strategy::Serializable => with_retry(worker, amount).await,
        Strategy::ForUpdate => {
            worker.query(&lock_sql(TEAM)).await?;
            let approved = check_and_insert(worker, amount).await?;
            worker.commit().await?;
            Ok(Approval::once(approved))
        }
        Strategy::Conditional => {
            let reserved = worker.query(&reserve_sql(amount)).await?;
            if reserved.affected == 0 {
                worker.rollback().await?;
                return Ok(Approval::once(false));
            }
            worker.query(&insert_amount(worker.name(), TEAM, amount)).await?;
            worker.commit().await?;
            Ok(Approval::once(true))
        }
    }
}

/// The business rule: read the budget and what is approved, insert if `amount` fits.
async fn check_and_insert(worker: &MariaActor, amount: i64) -> Result<bool, StepError> {
    let budget = worker.query(&select_budget(TEAM)).await?.int()?;
    let approved = worker.query(&select_approved(TEAM)).await?.int()?;
    let fits = approved + amount <= budget;
    if fits {
        worker.query(&insert_amount(worker.name(), TEAM, amount)).await?;
    }
    Ok(fits)
}

/// SERIALIZABLE with the whole transaction retried when InnoDB refuses one of its statements
/// in a deadlock (it has rolled the transaction back already), as PostgreSQL's retry does
/// (`engine::retry`, the same policy): up to 10 attempts, each after a random wait up to
/// min(100 ms, 2 ms · 2^attempt); an approval out of attempts is counted as given up.
async fn with_retry(worker: &MariaActor, amount: i64) -> Result<Approval, RunError> {
    let policy = RetryPolicy::default();
    let mut attempt = 1;
    loop {
        let tried = async {
            let approved = check_and_insert(worker, amount).await?;
            worker.commit().await?;
            Ok::<bool, StepError>(approved)
        };
        match tried.await {
            Ok(approved) => {
                return Ok(Approval {
                    approved,
                    attempts: attempt.into(),
                    gave_up: false,
                });
            }
            Err(error) if error.mariadb_number() == Some(DEADLOCK) => {
                worker.rollback().await?;
                if attempt >= policy.max_attempts {
                    return Ok(Approval {
                        approved: false,
                        attempts: attempt.into(),
                        gave_up: true,
                    });
                }
                policy.pause(attempt).await;
                attempt += 1;
            }
            Err(error) => return Err(error.into()),
        }
    }
}
