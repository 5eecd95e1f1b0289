//! The locks lab: one wallet, a balance of 100, spends of 10, and what a Redis lock does and does
//! not protect.
//!
//! Scenarios (one file each), in the tutorial's order:
//! - [`double_tap`]: two requests, no lock, the same millisecond: both read 100, both write 90.
//! - [`no_lock`]: fifty of them: all fifty accepted, the balance barely moves.
//! - [`redis_cli`]: the lock primitive by hand: `SET NX PX`, a second caller's `(nil)`, and a
//!   release that checks the token.
//! - [`hand_lock`]: fifty callers behind the hand-rolled lock: ten accepted, balance 0.
//! - [`zero_ttl`]: a zero TTL would make a lock that never expires; the lock refuses it.
//! - [`delex`]: Redis 8.4's `DELEX key IFEQ token` release, and what older servers answer.
//! - [`ttl`]: work that outlives the lease, with and without a watchdog.
//! - [`client_timeout`]: a stalled Redis (a private server) and a 100 ms deadline, honoured or
//!   not.
//! - [`retry`]: fifty callers backing off in lockstep or with jitter, through the Go library's
//!   behaviour ([`redislock`]), including the joined error that `==` misses.
//! - [`fencing`]: a paused holder wakes after its lease passed on; PostgreSQL refuses its stale
//!   write only when the UPDATE checks the fencing token.
//! - [`load_test`]: fifty fenced spends behind a lease broken on purpose (1 ms), with and
//!   without the UPDATE also checking the version it read.
//!
//! The helpers below are the lab's vocabulary: the tutorial's keys and amounts, the spend (read,
//! decide, work, write), the callers released at once, the check line every program prints, the
//! verdict and the ledger.

pub mod client_timeout;
pub mod delex;
pub mod double_tap;
pub mod fencing;
pub mod hand_lock;
pub mod load_test;
pub mod lock;
pub mod no_lock;
pub mod redis_cli;
pub mod redislock;
pub mod retry;
pub mod ttl;
pub mod zero_ttl;

use super::LabDef;
use crate::engine::{Command, RedisActor, Run, RunError, StepError, reply_int};
use crate::sandbox::Spec;
use shared::event::ActorInfo;
use shared::{Check, EventKind, Ledger, Moment, Service, Table, Value, Verdict};
use std::time::Duration;

/// The lab as the catalog lists it.
pub static LAB: LabDef = LabDef {
    id: "locks",
    title: "Distributed locks in Redis, and fencing tokens in PostgreSQL",
    services: &[Service::Redis, Service::Postgres],
    scenarios: &[
        &double_tap::SCENARIO,
        &no_lock::SCENARIO,
        &redis_cli::SCENARIO,
        &hand_lock::SCENARIO,
        &zero_ttl::SCENARIO,
        &delex::SCENARIO,
        &ttl::SCENARIO,
        &client_timeout::SCENARIO,
        &retry::SCENARIO,
        &fencing::SCENARIO,
        &load_test::SCENARIO,
    ],
};

/// The wallet's row for the fencing scenarios: balance 100, no write fenced yet.
pub const SCHEMA: &str = include_str!("schema.sql");

/// Every locks scenario plays with Redis keys under the run's prefix and the wallet table.
pub const SANDBOX: Spec = Spec {
    schemas: &[("", SCHEMA)],
    redis: true,
    topics: &[],
};

/// Where the balance lives in Steps 1–4.
pub const BALANCE_KEY: &str = "wallet:42:balance";
/// The lock of Steps 2–4.
pub const LOCK_KEY: &str = "lock:wallet:42";
/// The lock and fencing counter of Steps 5–6: one hash tag, so one Redis Cluster slot.
pub const FENCED_LOCK_KEY: &str = "lock:{wallet:42}";
pub const FENCE_KEY: &str = "fence:{wallet:42}";

/// The wallet's starting balance, and what every request spends.
pub const INITIAL: i64 = 100;
pub const AMOUNT: i64 = 10;
/// How long a spend works between its read and its write.
pub const WORK: Duration = Duration::from_millis(2);
/// How many requests race in the load scenarios.
pub const CALLERS: usize = 50;
/// How many of them get a lane of their own on the timeline when there are many; the others run
/// the same code unseen, so fifty lanes do not drown the page. Up to [`ALL_SHOWN`] callers all
/// get a lane.
pub const SHOWN: usize = 3;
pub const ALL_SHOWN: usize = 5;

/// How many of `callers` get a lane.
pub fn shown(callers: usize) -> usize {
    if callers <= ALL_SHOWN { callers } else { SHOWN }
}

/// How many spends a correct system accepts: as many as the balance covers.
pub const fn correct_accepts(callers: usize) -> i64 {
    let covered = INITIAL / AMOUNT;
    if (callers as i64) < covered {
        callers as i64
    } else {
        covered
    }
}

/// The name of caller `i` (0-based): `req01`, `req02`…
pub fn caller(i: usize) -> String {
    format!("req{:02}", i + 1)
}

/// The header's lanes for `callers` racing requests.
pub fn caller_lanes(callers: usize) -> Vec<ActorInfo> {
    let seen = shown(callers);
    (0..seen)
        .map(|i| ActorInfo {
            name: caller(i),
            detail: if callers > seen {
                format!("Redis; {} more run unseen", callers - seen)
            } else {
                "Redis".into()
            },
        })
        .collect()
}

/// Opens `n` callers, each on a Redis connection of its own; the first [`SHOWN`] have lanes.
pub async fn open_callers(run: &Run, n: usize) -> Result<Vec<RedisActor>, RunError> {
    let mut callers = Vec::with_capacity(n);
    for i in 0..n {
        let name = caller(i);
        callers.push(if i < shown(n) {
            run.redis(&name).await?
        } else {
            run.redis_worker(&name).await?
        });
    }
    Ok(callers)
}

/// What a round of callers came to: how many were accepted, and the error lines.
pub struct Hammered {
    pub accepted: i64,
    pub errors: Vec<String>,
}

/// Runs `spend` for every caller at once (all are polled together on this task, so every first
/// command is in flight before any reply is read) and counts the accepted ones. An error is
/// printed as `error: <err>` and not counted, as the tutorial's Hammer does.
pub async fn hammer<'a, F, Fut>(run: &Run, callers: &'a [RedisActor], spend: F) -> Hammered
where
    F: Fn(&'a RedisActor) -> Fut,
    Fut: Future<Output = Result<bool, RunError>>,
{
    let outcomes = futures_util::future::join_all(callers.iter().map(spend)).await;
    let mut hammered = Hammered {
        accepted: 0,
        errors: Vec::new(),
    };
    for outcome in outcomes {
        match outcome {
            Ok(true) => hammered.accepted += 1,
            Ok(false) => {}
            Err(error) => {
                let line = format!("error: {error}");
                run.say_plain(&line);
                hammered.errors.push(line);
            }
        }
    }
    hammered
}

/// What a round of spends came to.
pub struct Round {
    /// The ledger after the balance was set, before any spend.
    pub before: Ledger,
    pub accepted: i64,
    /// The balance afterwards.
    pub balance: i64,
    /// From the first spend's start to the last one's end.
    pub elapsed: Duration,
}

/// A round of spends on the Redis balance, as every Step 1–4 program plays it: set the balance,
/// release every caller's `spend` at once, read the balance, and print the check line.
pub async fn spend_round<'a, F, Fut>(run: &Run, callers: &'a [RedisActor], spend: F) -> Result<Round, RunError>
where
    F: Fn(&'a RedisActor) -> Fut,
    Fut: Future<Output = Result<bool, RunError>>,
{
    let first = callers
        .first()
        .ok_or_else(|| RunError::Other("a round needs at least one caller".into()))?;
    reset_balance(first).await?;
    let before = before_spends(run).await?;
    let started = tokio::time::Instant::now();
    let round = hammer(run, callers, spend).await;
    let elapsed = started.elapsed();
    let balance = read_balance(first).await?;
    let (line, _) = check_line(round.accepted, balance);
    run.say_plain(line);
    Ok(Round {
        before,
        accepted: round.accepted,
        balance,
        elapsed,
    })
}

/// Sets the balance to its starting value (no TTL), as every program does first.
pub async fn reset_balance(who: &RedisActor) -> Result<(), RunError> {
    who.run(&Command::new("SET").key(BALANCE_KEY).arg(INITIAL)).await?;
    Ok(())
}

/// The balance as Redis holds it.
pub async fn read_balance(who: &RedisActor) -> Result<i64, RunError> {
    let reply = who.run(&Command::new("GET").key(BALANCE_KEY)).await?;
    reply_int(&reply).ok_or_else(|| RunError::Other(format!("{BALANCE_KEY} holds no balance")))
}

/// The tutorial's spend: read the balance; if it covers `amount`, work for `work`, then write
/// back the balance it read less `amount`. Accepted or not.
pub async fn spend(who: &RedisActor, amount: i64, work: Duration) -> Result<bool, RunError> {
    let balance = read_balance(who).await?;
    if balance < amount {
        return Ok(false);
    }
    tokio::time::sleep(work).await;
    who.run(&Command::new("SET").key(BALANCE_KEY).arg(balance - amount))
        .await
        .map_err(|e: StepError| RunError::from(e))?;
    Ok(true)
}

/// The line every program ends with: `accepted=50 balance=70 expected=-400 BROKEN`. `expected`
/// is what the accepted spends imply; the status is broken when the balance disagrees with it,
/// or is negative.
pub fn check_line(accepted: i64, balance: i64) -> (String, bool) {
    let expected = INITIAL - AMOUNT * accepted;
    let ok = balance == expected && balance >= 0;
    let status = if ok { "OK" } else { "BROKEN" };
    (
        format!("accepted={accepted} balance={balance} expected={expected} {status}"),
        ok,
    )
}

/// The verdict on a round of `callers` spends: the balance must agree with the accepted spends,
/// never go below 0, and no more spends may be accepted than the balance covers.
pub fn spend_verdict(callers: usize, accepted: i64, balance: i64, how: &str) -> Verdict {
    let expected = INITIAL - AMOUNT * accepted;
    let most = correct_accepts(callers);
    let checks = vec![
        Check::new(
            format!("balance = {INITIAL} − {AMOUNT} × accepted = {expected}"),
            format!("balance = {balance}"),
            balance == expected,
        ),
        Check::new("balance ≥ 0", format!("balance = {balance}"), balance >= 0),
        Check::new(
            format!("at most {most} spends accepted"),
            format!("{accepted} accepted"),
            accepted <= most,
        ),
    ];
    let (_, ok) = check_line(accepted, balance);
    let headline = if ok && accepted <= most {
        format!("{accepted} of {callers} spends of {AMOUNT} accepted from {INITIAL}, balance {balance}: correct")
    } else {
        format!("{accepted} of {callers} spends of {AMOUNT} accepted from {INITIAL}, balance {balance}: broken")
    };
    Verdict::judge(checks, headline, how)
}

/// A duration as Go prints one after `Round(10*time.Millisecond)`: `740ms`, `1.52s`, `5s`.
pub fn go_duration(elapsed: Duration) -> String {
    let ms = (elapsed.as_millis() + 5) / 10 * 10;
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let seconds = format!("{}.{:02}", ms / 1000, ms % 1000 / 10);
    format!("{}s", seconds.trim_end_matches('0').trim_end_matches('.'))
}

/// The prefix Go's `log` puts before a line: the local date and time, `2026/10/09 17:17:57 `.
pub fn log_prefix() -> String {
    sqlx::types::chrono::Local::now()
        .format("%Y/%m/%d %H:%M:%S ")
        .to_string()
}

/// The Redis side of the ledger: the balance and the lock key, with their TTLs.
pub async fn redis_ledger(run: &Run, keys: &[&str]) -> Result<Table, RunError> {
    run.redis_keys("redis", keys).await
}

/// The `spends` table after `callers` spends: how many were accepted and turned away.
pub fn spends_table(callers: usize, accepted: i64) -> Table {
    spends_of(accepted, TURNED_AWAY, callers as i64 - accepted)
}

/// Spends turned away by the lock (the load test's are rejected by the database instead).
const TURNED_AWAY: &str = "turned away";

/// The `spends` table: `accepted`, and `refused` under the label `refused_as`.
pub(super) fn spends_of(accepted: i64, refused_as: &str, refused: i64) -> Table {
    Table {
        name: "spends".into(),
        columns: vec!["outcome".into(), "count".into()],
        key_columns: 1,
        rows: vec![
            vec![Value::from("accepted"), Value::Int(accepted)],
            vec![Value::from(refused_as), Value::Int(refused)],
        ],
    }
}

/// What a correct system holds after `callers` spends from a Redis balance: the balance the
/// covered spends leave, no lock left, and exactly those spends accepted.
pub fn expected_after_spends(callers: usize) -> Ledger {
    let accepted = correct_accepts(callers);
    Ledger {
        tables: vec![
            Table {
                name: "redis".into(),
                columns: vec!["key".into(), "value".into(), "ttl_ms".into()],
                key_columns: 1,
                rows: vec![vec![
                    Value::from(BALANCE_KEY),
                    Value::Text((INITIAL - AMOUNT * accepted).to_string()),
                    Value::Int(-1),
                ]],
            },
            spends_table(callers, accepted),
        ],
    }
}

/// Emits the three ledgers of a scenario whose state is one table: before, after, and what a
/// correct system holds.
pub fn emit_one_table_ledgers(run: &Run, before: Table, after: Table, expected: Table) {
    for (moment, table) in [
        (Moment::Before, before),
        (Moment::After, after),
        (Moment::Expected, expected),
    ] {
        emit_ledger(run, moment, Ledger { tables: vec![table] });
    }
}

/// Emits a ledger at `moment`.
pub fn emit_ledger(run: &Run, moment: Moment, ledger: Ledger) {
    run.emit(EventKind::Ledger { moment, ledger });
}

/// Emits the before/after/expected ledgers of a round of spends (and the tutorial's figures, if
/// it printed any) and its verdict.
pub async fn finish_spends(
    run: &Run,
    before: Ledger,
    callers: usize,
    accepted: i64,
    balance: i64,
    how: &str,
    tutorial: &[(&str, &str)],
) -> Result<(), RunError> {
    let mut after = Ledger {
        tables: vec![redis_ledger(run, &[BALANCE_KEY, LOCK_KEY]).await?],
    };
    after.tables.push(spends_table(callers, accepted));
    emit_ledger(run, Moment::Before, before);
    emit_ledger(run, Moment::After, after);
    emit_ledger(run, Moment::Expected, expected_after_spends(callers));
    if !tutorial.is_empty() {
        emit_ledger(run, Moment::Reference, tutorial_figures(tutorial));
    }
    run.verdict(spend_verdict(callers, accepted, balance, how));
    Ok(())
}

pub use super::tutorial_figures;

/// The ledger before a round: the balance as it was set, and no spend decided yet.
pub async fn before_spends(run: &Run) -> Result<Ledger, RunError> {
    Ok(Ledger {
        tables: vec![
            redis_ledger(run, &[BALANCE_KEY, LOCK_KEY]).await?,
            spends_of(0, TURNED_AWAY, 0),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::VerdictKind;

    #[test]
    fn the_check_line_keeps_the_tutorials_format() {
        assert_eq!(
            check_line(50, 70),
            ("accepted=50 balance=70 expected=-400 BROKEN".into(), false)
        );
        assert_eq!(check_line(10, 0), ("accepted=10 balance=0 expected=0 OK".into(), true));
        assert_eq!(
            check_line(5, 80),
            ("accepted=5 balance=80 expected=50 BROKEN".into(), false)
        );
    }

    #[test]
    fn fifty_accepted_spends_are_broken_ten_are_correct() {
        assert_eq!(spend_verdict(50, 50, 70, "").kind, VerdictKind::Reproduced);
        assert_eq!(spend_verdict(50, 10, 0, "").kind, VerdictKind::Prevented);
        assert_eq!(
            spend_verdict(2, 2, 80, "").kind,
            VerdictKind::Prevented,
            "two of 10 fit"
        );
        assert_eq!(
            spend_verdict(2, 2, 90, "").kind,
            VerdictKind::Reproduced,
            "the double tap"
        );
    }

    #[test]
    fn durations_print_as_go_prints_them() {
        assert_eq!(go_duration(Duration::from_millis(742)), "740ms");
        assert_eq!(go_duration(Duration::from_millis(1_523)), "1.52s");
        assert_eq!(go_duration(Duration::from_millis(5_001)), "5s");
        assert_eq!(go_duration(Duration::from_millis(1_500)), "1.5s");
        assert_eq!(go_duration(Duration::from_millis(2_914)), "2.91s");
        assert_eq!(go_duration(Duration::from_millis(996)), "1s");
        assert_eq!(log_prefix().len(), 20);
    }

    #[test]
    fn a_correct_system_accepts_what_the_balance_covers() {
        assert_eq!(correct_accepts(50), 10);
        assert_eq!(correct_accepts(5), 5);
        let expected = expected_after_spends(50);
        assert_eq!(expected.tables[0].rows[0][1], Value::from("0"));
        assert_eq!(
            expected.tables[1].rows[0],
            vec![Value::from("accepted"), Value::Int(10)]
        );
        assert_eq!(caller(0), "req01");
        assert_eq!(caller_lanes(50).len(), SHOWN);
        assert_eq!(caller_lanes(5).len(), 5);
    }
}
