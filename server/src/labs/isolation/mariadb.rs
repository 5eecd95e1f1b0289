//! The isolation lab on MariaDB (InnoDB): the same managers, budget and transcript lines, in
//! MariaDB's SQL, with MariaDB's answers. A variant named `mariadb-…` plays here
//! ([`shared::catalog::MARIADB_PREFIX`]); its level and InnoDB's snapshot switch come from its
//! name ([`setting_of`]).
//!
//! What MariaDB does differently, and each scenario's tests pin (docs/labs.md):
//! - **write skew**: READ COMMITTED and REPEATABLE READ, the switch on or off, all let both
//!   managers insert ($6,000): no row is written twice, so the switch has nothing to refuse.
//!   SERIALIZABLE makes each check a locking read: alice's insert waits for the lock bob's check
//!   took, bob's insert then closes the cycle, and InnoDB rolls bob back (`1213`, SQLSTATE
//!   40001) at once; his retry sees alice's $3,000. The same ending as PostgreSQL's, by locks
//!   instead of a serialization check at commit.
//! - **read skew**: as on PostgreSQL: READ COMMITTED gives each of the report's statements a
//!   fresh read view ($1,000 vs $1,250), REPEATABLE READ one for the whole report ($1,000 twice).
//! - **deadlock**: InnoDB looks for a cycle as each lock request starts to wait, so in opposite
//!   orders bob's request that closes the cycle is refused at once (`1213`) and his whole
//!   transaction rolled back, where PostgreSQL cancels alice, who waited first, after
//!   `deadlock_timeout`; his retry approves after alice. In the same order bob waits his turn.
//! - **approve**: SERIALIZABLE's fix ends as write skew's does (a deadlock, bob rolled back, his
//!   retry rejects); the row lock and the conditional UPDATE as on PostgreSQL (MariaDB's UPDATE
//!   has no RETURNING: the rows it changed say whether the money was reserved).
//! - **lost update**: READ COMMITTED, and REPEATABLE READ with the switch off (MariaDB before
//!   11.6.2), let bob's write erase alice's ($800), where PostgreSQL's REPEATABLE READ refuses
//!   it. With the switch on (11.6.2 and later) bob's write is refused with `1020` ("Record has
//!   changed since last read"): $1,200, until he retries.

use super::{AMOUNT, BUDGET, LEDGER, OTHER_TEAM, TEAM, fits_line, ledger_of, show_after, show_before, totals_line};
use crate::engine::mariadb::{Level, MariaActor, Setting};
use crate::engine::{Run, RunError, StepError};
use shared::Ledger;

/// The lab's tables and seed in MariaDB's SQL (the same as [`super::SCHEMA`]).
pub const SCHEMA: &str = include_str!("schema.mariadb.sql");

/// InnoDB's error when a REPEATABLE READ transaction writes a row changed since its snapshot
/// read it, with `innodb_snapshot_isolation` on.
pub const RECORD_CHANGED: u16 = 1020;
/// InnoDB's error for a deadlock it broke by rolling this transaction back (SQLSTATE 40001).
pub const DEADLOCK: u16 = 1213;

/// The level and snapshot switch a MariaDB variant plays at; `None` for a PostgreSQL variant.
pub fn setting_of(variant: &str) -> Option<Setting> {
    let (level, snapshot_isolation) = match variant {
        "mariadb-read-committed" => (Level::ReadCommitted, false),
        "mariadb-repeatable-read" => (Level::RepeatableRead, false),
        "mariadb-repeatable-read-snapshot" => (Level::RepeatableRead, true),
        "mariadb-serializable" | "mariadb-batch-serializable" => (Level::Serializable, false),
        // The batch job's session; alice approves at SERIALIZABLE beside it.
        "mariadb-batch-read-committed" => (Level::ReadCommitted, false),
        // The deadlock's approvals run at READ COMMITTED, as on PostgreSQL.
        "mariadb-opposite-order" | "mariadb-same-order" => (Level::ReadCommitted, false),
        // So do the row lock's, the conditional UPDATE's and the atomic addition's, as on
        // PostgreSQL.
        "mariadb-for-update" | "mariadb-conditional" | "mariadb-atomic" => (Level::ReadCommitted, false),
        _ => return None,
    };
    Some(Setting {
        level: Some(level),
        snapshot_isolation,
    })
}

/// The running total, read by the application.
pub const READ_SPENT: &str = "SELECT spent FROM teams WHERE id = 'design'";

/// Makes the run's tables there and shows the ledger before the actors start.
async fn set_up(run: &Run) -> Result<Ledger, RunError> {
    run.mariadb_prepare(SCHEMA).await?;
    Ok(show_before(run, run.mariadb_snapshot(&LEDGER).await?))
}

/// As [`set_up`], with the second team and its own budget.
async fn set_up_two_teams(run: &Run) -> Result<Ledger, RunError> {
    run.mariadb_prepare(SCHEMA).await?;
    run.mariadb_setup(&format!(
        "INSERT INTO teams (id, name, budget) VALUES ('{OTHER_TEAM}', 'Operations', {BUDGET})"
    ))
    .await?;
    Ok(show_before(run, run.mariadb_snapshot(&LEDGER).await?))
}

/// Shows the ledger after, beside `expected`, and returns it.
async fn finish(run: &Run, expected: Ledger) -> Result<Ledger, RunError> {
    Ok(show_after(run, run.mariadb_snapshot(&LEDGER).await?, expected))
}

/// Write skew on MariaDB: both check, both insert, alice commits, then bob ([`race`]).
pub async fn write_skew(run: &Run, variant: &str, setting: Setting) -> Result<(), RunError> {
    run.say_plain(format!("--- write skew, {variant} ---"));
    set_up(run).await?;
    let alice = run.mariadb_actor("alice", setting).await?;
    let bob = run.mariadb_actor("bob", setting).await?;
    race(Approver::new(&alice, TEAM, setting), Approver::new(&bob, TEAM, setting)).await?;
    let (count, total) = say_totals(run).await?;
    finish(run, ledger_of(&[(TEAM, BUDGET, 0)], &[(TEAM, AMOUNT, "alice")])).await?;
    let prevented = "InnoDB rolled Bob back in a deadlock (1213); his retry saw Alice's $3,000 and rejected";
    run.verdict(super::write_skew::overspend_verdict(count, total, prevented));
    Ok(())
}

/// The batch job on MariaDB: alice approves at SERIALIZABLE while the batch job, at
/// `batch_at`, inserts against the same budget in the write-skew order ([`race`]). Returns the
/// approvals' `(count, total)`.
pub async fn batch_job(run: &Run, variant: &str, batch_at: Setting) -> Result<(i64, i64), RunError> {
    run.say_plain(format!("--- batch job, alice at serializable, {variant} ---"));
    set_up(run).await?;
    let alice = run.mariadb_actor("alice", SERIALIZABLE).await?;
    let batch = run.mariadb_actor("batch", batch_at).await?;
    race(
        Approver::new(&alice, TEAM, SERIALIZABLE),
        Approver::new(&batch, TEAM, batch_at),
    )
    .await?;
    let totals = say_totals(run).await?;
    finish(run, ledger_of(&[(TEAM, BUDGET, 0)], &[(TEAM, AMOUNT, "alice")])).await?;
    Ok(totals)
}

/// The false positive on MariaDB: alice approves for design, bob for ops, each team with its
/// own budget, in the write-skew order ([`race`]). Returns whether bob was rolled back.
pub async fn false_positive(run: &Run, variant: &str, setting: Setting) -> Result<bool, RunError> {
    run.say_plain(format!(
        "--- false positive, {variant}: alice approves for {TEAM}, bob for {OTHER_TEAM} ---"
    ));
    set_up_two_teams(run).await?;
    let alice = run.mariadb_actor("alice", setting).await?;
    let bob = run.mariadb_actor("bob", setting).await?;
    let rolled_back = race(
        Approver::new(&alice, TEAM, setting),
        Approver::new(&bob, OTHER_TEAM, setting),
    )
    .await?;
    let per_team = run
        .mariadb_check(
            "SELECT team_id, COUNT(*), COALESCE(SUM(amount), 0) FROM expenses GROUP BY team_id ORDER BY team_id",
        )
        .await?;
    for row in &per_team.rows {
        let [team, count, total] = row.as_slice() else {
            return Err(RunError::Other(
                "the approvals per team came back in another shape".into(),
            ));
        };
        run.say_plain(super::false_positive::team_line(
            &team.to_string(),
            count.as_int().unwrap_or(0),
            total.as_int().unwrap_or(0),
        ));
    }
    finish(run, super::false_positive::expected()).await?;
    Ok(rolled_back)
}

/// The row lock on MariaDB at `setting`'s level: both lock the team's row before checking
/// ([`approve_with_lock`]). Returns the approvals' `(count, total)`.
pub async fn row_lock(run: &Run, variant: &str, setting: Setting) -> Result<(i64, i64), RunError> {
    run.say_plain(format!("--- row lock, {variant} ---"));
    set_up(run).await?;
    let alice = run.mariadb_actor("alice", setting).await?;
    let bob = run.mariadb_actor("bob", setting).await?;
    approve_with_lock(&alice, &bob).await?;
    let totals = say_totals(run).await?;
    finish(run, ledger_of(&[(TEAM, BUDGET, 0)], &[(TEAM, AMOUNT, "alice")])).await?;
    Ok(totals)
}

/// Alice's session in the batch job: SERIALIZABLE, whatever the batch job's.
const SERIALIZABLE: Setting = Setting {
    level: Some(Level::Serializable),
    snapshot_isolation: false,
};

/// One manager in a race: who approves $3,000, for which team, and whether their check is a
/// locking read (SERIALIZABLE on InnoDB reads as `LOCK IN SHARE MODE` does).
pub struct Approver<'a> {
    who: &'a MariaActor,
    team: &'a str,
    locks_what_it_reads: bool,
}

impl<'a> Approver<'a> {
    pub fn new(who: &'a MariaActor, team: &'a str, setting: Setting) -> Self {
        Approver {
            who,
            team,
            locks_what_it_reads: setting.level == Some(Level::Serializable),
        }
    }
}

/// The write-skew choreography on MariaDB, for two approvers of $3,000 (for one team or one
/// each): both check, then insert, then commit, alice first; bob retries once if InnoDB rolls
/// him back. Where an insert waits is InnoDB's doing: a check at SERIALIZABLE locks the range of
/// the index it read, and on a small index that range is the gap every team's new row goes into,
/// so
/// - both checks locking: alice's insert waits for bob's lock, bob's closes the cycle and is
///   refused at once (`1213`); alice goes on and commits; bob's retry checks again;
/// - only alice's: bob's insert waits for her lock until she commits, then lands without
///   checking again;
/// - neither: nothing waits.
///
/// Returns whether bob was rolled back. (Only bob's check locking is no race of the lab.)
pub async fn race(alice: Approver<'_>, bob: Approver<'_>) -> Result<bool, RunError> {
    check_fits(alice.who, alice.team).await?;
    check_fits(bob.who, bob.team).await?;
    match (alice.locks_what_it_reads, bob.locks_what_it_reads) {
        (true, true) => {
            deadlocked_inserts(&alice, &bob).await?;
            return Ok(true);
        }
        (true, false) => {
            insert(alice.who, alice.team).await?;
            let (bob_waits, by) = bob
                .who
                .start(&insert_for(bob.who.name(), bob.team))
                .await?
                .expect_blocked()
                .await?;
            bob.who.say(format!("waiting for {}'s lock", by.join(", ")));
            alice.who.commit().await?;
            alice.who.say("commit");
            bob_waits.finish().await?;
            bob.who.say(format!("insert {}", shared::usd(AMOUNT)));
        }
        _ => {
            insert(alice.who, alice.team).await?;
            insert(bob.who, bob.team).await?;
            alice.who.commit().await?;
            alice.who.say("commit");
        }
    }
    bob.who.commit().await?;
    bob.who.say("commit");
    Ok(false)
}

/// Both checks locking: alice's insert waits for the lock bob's check holds; bob's insert
/// closes the cycle and InnoDB rolls him back at once. Alice's insert goes on; bob retries.
async fn deadlocked_inserts(alice: &Approver<'_>, bob: &Approver<'_>) -> Result<(), RunError> {
    let alice_insert = insert_for(alice.who.name(), alice.team);
    let (alice_waits, by) = alice.who.start(&alice_insert).await?.expect_blocked().await?;
    alice.who.say(format!("waiting for {}'s lock", by.join(", ")));
    closes_the_cycle(bob.who, &insert_for(bob.who.name(), bob.team), "INSERT failed").await?;
    alice_waits.finish().await?;
    alice.who.say(format!("insert {}", shared::usd(AMOUNT)));
    alice.who.commit().await?;
    alice.who.say("commit");
    bob.who.rollback().await?;
    bob.who.say("retry the whole transaction");
    if check_fits(bob.who, bob.team).await? {
        insert(bob.who, bob.team).await?;
    } else {
        bob.who.say("rejected: over budget");
    }
    bob.who.commit().await?;
    Ok(())
}

/// `who`'s statement `sql` that closes a cycle of lock waits: InnoDB refuses it at once
/// (`1213`) and rolls `who`'s whole transaction back, which `who` says after `said`
/// (`INSERT failed: ERROR 1213 (40001): …`). Any other ending fails the run: the race would
/// not be the one its transcript tells.
async fn closes_the_cycle(who: &MariaActor, sql: &str, said: &str) -> Result<(), RunError> {
    match who.query(sql).await {
        Err(error) if error.mariadb_number() == Some(DEADLOCK) => {
            who.say(format!("{said}: {error}"));
            Ok(())
        }
        Err(error) => Err(error.into()),
        Ok(_) => Err(RunError::Other(format!(
            "{}'s {sql} was expected to deadlock",
            who.name()
        ))),
    }
}

/// The closing line of the write-skew and approve races, from the run's own session: `(count,
/// total)` of the design team's expenses.
async fn say_totals(run: &Run) -> Result<(i64, i64), RunError> {
    let totals = run
        .mariadb_check("SELECT COALESCE(SUM(amount), 0), COUNT(*) FROM expenses WHERE team_id = 'design'")
        .await?;
    let (total, count) = (totals.int_at(0)?, totals.int_at(1)?);
    run.say_plain(totals_line(count, total));
    Ok((count, total))
}

/// The budget's amount, read by the rule.
pub fn select_budget(team: &str) -> String {
    format!("SELECT budget FROM teams WHERE id = '{team}'")
}

/// What has been approved so far: the number the rule trusts.
pub fn select_approved(team: &str) -> String {
    format!("SELECT COALESCE(SUM(amount), 0) FROM expenses WHERE team_id = '{team}'")
}

/// The rule's check, said as on PostgreSQL: `check: approved $0 + $3,000 <= $5,000? True`.
async fn check_fits(who: &MariaActor, team: &str) -> Result<bool, RunError> {
    let budget = who.query(&select_budget(team)).await?.int()?;
    let approved = who.query(&select_approved(team)).await?.int()?;
    who.say(fits_line(approved, AMOUNT, budget));
    Ok(approved + AMOUNT <= budget)
}

/// `who`'s approval of $3,000 for `team`.
pub fn insert_for(who: &str, team: &str) -> String {
    insert_amount(who, team, AMOUNT)
}

/// `who`'s approval of `amount` for `team`.
pub fn insert_amount(who: &str, team: &str, amount: i64) -> String {
    format!("INSERT INTO expenses (team_id, amount, approved_by) VALUES ('{team}', {amount}, '{who}')")
}

/// The conditional fix's one statement: reserves `amount` of the design team's budget only if
/// it fits; the rows it changed (MariaDB's UPDATE returns none) say whether it did.
pub fn reserve_sql(amount: i64) -> String {
    format!("UPDATE teams SET spent = spent + {amount} WHERE id = '{TEAM}' AND spent + {amount} <= budget")
}

async fn insert(who: &MariaActor, team: &str) -> Result<(), RunError> {
    who.query(&insert_for(who.name(), team)).await?;
    who.say(format!("insert {}", shared::usd(AMOUNT)));
    Ok(())
}

/// Lost update on MariaDB: each reads `spent`, adds in the application and writes the sum
/// back; alice commits first. Returns whether bob's write committed.
pub async fn lost_update(
    run: &Run,
    variant: &str,
    setting: Setting,
    adds: (i64, i64),
) -> Result<(Ledger, bool), RunError> {
    run.say_plain(format!("--- lost update, {variant} ---"));
    set_up(run).await?;
    let alice = run.mariadb_actor("alice", setting).await?;
    let bob = run.mariadb_actor("bob", setting).await?;
    if variant == "mariadb-atomic" {
        add_atomically(&alice, &bob, adds).await?;
        let expected = ledger_of(&[(TEAM, BUDGET, adds.0 + adds.1)], &[]);
        return Ok((finish(run, expected).await?, true));
    }
    let alice_read = read_spent(&alice).await?;
    let bob_read = read_spent(&bob).await?;
    write_spent(&alice, alice_read + adds.0).await?;
    alice.commit().await?;
    alice.say("commit");
    let bob_committed = match write_spent(&bob, bob_read + adds.1).await {
        Ok(()) => {
            bob.commit().await?;
            bob.say("commit");
            true
        }
        Err(error) if error.mariadb_number() == Some(RECORD_CHANGED) => {
            bob.say(format!("UPDATE failed: {error}"));
            bob.rollback().await?;
            false
        }
        Err(error) => return Err(error.into()),
    };
    let expected = ledger_of(&[(TEAM, BUDGET, adds.0 + adds.1)], &[]);
    Ok((finish(run, expected).await?, bob_committed))
}

/// The lost update's fix: each lets the database add (`spent = spent + x`); bob's UPDATE waits
/// for the row lock alice's holds until she commits, then adds to her total. (MariaDB's UPDATE
/// returns no row: each reads the total it left, in its own transaction.)
async fn add_atomically(
    alice: &MariaActor,
    bob: &MariaActor,
    (alice_adds, bob_adds): (i64, i64),
) -> Result<(), RunError> {
    let add = |amount: i64| format!("UPDATE teams SET spent = spent + {amount} WHERE id = '{TEAM}'");
    alice.query(&add(alice_adds)).await?;
    let spent = alice.query(READ_SPENT).await?.int()?;
    alice.say(format!(
        "add {} -> spent = {} (not committed yet)",
        shared::usd(alice_adds),
        shared::usd(spent)
    ));
    let (bob_waits, by) = bob.start(&add(bob_adds)).await?.expect_blocked().await?;
    bob.say(format!("waiting for {}'s row lock", by.join(", ")));
    alice.say("commit");
    alice.commit().await?;
    bob_waits.finish().await?;
    let spent = bob.query(READ_SPENT).await?.int()?;
    bob.say(format!(
        "add {} -> spent = {}",
        shared::usd(bob_adds),
        shared::usd(spent)
    ));
    bob.commit().await?;
    bob.say("commit");
    Ok(())
}

/// Read skew on MariaDB: carol approves $1,000; the report reads the total; carol approves $250
/// more; the report sums the expenses. Returns the report's two numbers.
pub async fn read_skew(run: &Run, variant: &str, setting: Setting) -> Result<(i64, i64), RunError> {
    run.say_plain(format!("--- read skew, report at {variant} ---"));
    set_up(run).await?;
    let at_read_committed = Setting {
        level: Some(Level::ReadCommitted),
        snapshot_isolation: setting.snapshot_isolation,
    };
    let carol = run.mariadb_actor("carol", at_read_committed).await?;
    let report = run.mariadb_actor("report", setting).await?;
    carol_approves(&carol, 1_000).await?;
    carol.say(format!("approved {} (earlier this month)", shared::usd(1_000)));
    let spent = report.query(READ_SPENT).await?.int()?;
    report.say(format!("teams.spent          = {}", shared::usd(spent)));
    carol_approves(&carol, 250).await?;
    carol.say(format!("approved {} and committed", shared::usd(250)));
    let sum = report.query(&select_approved(TEAM)).await?.int()?;
    report.say(format!("sum(expenses.amount) = {}", shared::usd(sum)));
    report.commit().await?;
    run.say_plain(super::read_skew::numbers_line(spent, sum));
    finish(run, super::read_skew::expected()).await?;
    Ok((spent, sum))
}

/// One approval as one transaction: the expense row and the running total move together.
async fn carol_approves(carol: &MariaActor, amount: i64) -> Result<(), RunError> {
    carol
        .query(&format!(
            "INSERT INTO expenses (team_id, amount, approved_by) VALUES ('{TEAM}', {amount}, 'carol')"
        ))
        .await?;
    carol
        .query(&format!(
            "UPDATE teams SET spent = spent + {amount} WHERE id = '{TEAM}'"
        ))
        .await?;
    carol.commit().await?;
    Ok(())
}

/// The deadlock on MariaDB: alice and bob each lock both teams' rows (`opposite`: alice design
/// then ops, bob ops then design; else both design first), then approve a shared expense. Bob
/// retries once if InnoDB rolls him back. Returns the ledger after and each one's attempts.
pub async fn deadlock(
    run: &Run,
    setting: Setting,
    opposite: bool,
    expected: Ledger,
) -> Result<(Ledger, super::deadlock::Attempts), RunError> {
    set_up_two_teams(run).await?;
    let alice = run.mariadb_actor("alice", setting).await?;
    let bob = run.mariadb_actor("bob", setting).await?;
    lock(&alice, TEAM).await?;
    let bob_attempts = if opposite {
        lock(&bob, OTHER_TEAM).await?;
        let (alice_waits, by) = alice.start(&lock_sql(OTHER_TEAM)).await?.expect_blocked().await?;
        alice.say(format!("waiting for {}'s lock on {OTHER_TEAM}", by.join(", ")));
        closes_the_cycle(&bob, &lock_sql(TEAM), "attempt 1 failed").await?;
        bob.rollback().await?;
        alice_waits.finish().await?;
        alice.say(format!("locked team {OTHER_TEAM}"));
        approve_shared(&alice).await?;
        lock(&bob, OTHER_TEAM).await?;
        lock(&bob, TEAM).await?;
        approve_shared(&bob).await?;
        bob.say("approved after 2 attempt(s)");
        2
    } else {
        let (bob_waits, by) = bob.start(&lock_sql(TEAM)).await?.expect_blocked().await?;
        bob.say(format!("waiting for {}'s lock on {TEAM}", by.join(", ")));
        lock(&alice, OTHER_TEAM).await?;
        approve_shared(&alice).await?;
        bob_waits.finish().await?;
        bob.say(format!("locked team {TEAM}"));
        lock(&bob, OTHER_TEAM).await?;
        approve_shared(&bob).await?;
        1
    };
    Ok((finish(run, expected).await?, [("alice", 1), ("bob", bob_attempts)]))
}

/// The row-lock fix's statement: the team's row, locked until the transaction ends.
pub fn lock_sql(team: &str) -> String {
    format!("SELECT 1 FROM teams WHERE id = '{team}' FOR UPDATE")
}

async fn lock(who: &MariaActor, team: &str) -> Result<(), RunError> {
    who.query(&lock_sql(team)).await?;
    who.say(format!("locked team {team}"));
    Ok(())
}

/// The shared expense for both teams, committed.
async fn approve_shared(who: &MariaActor) -> Result<(), RunError> {
    let share = super::deadlock::SHARE;
    for team in [TEAM, OTHER_TEAM] {
        who.query(&format!(
            "INSERT INTO expenses (team_id, amount, approved_by) VALUES ('{team}', {share}, '{}')",
            who.name()
        ))
        .await?;
    }
    who.say(format!("insert {} for {TEAM} and {OTHER_TEAM}", shared::usd(share)));
    who.commit().await?;
    who.say("commit");
    Ok(())
}

/// The approve rule's `fix` on MariaDB (`serializable` with a retry, `for-update`,
/// `conditional`): alice and bob each approve $3,000. Returns the approvals' `(count, total)`.
pub async fn approve(run: &Run, fix: &str, setting: Setting, expected: Ledger) -> Result<(i64, i64), RunError> {
    set_up(run).await?;
    let alice = run.mariadb_actor("alice", setting).await?;
    let bob = run.mariadb_actor("bob", setting).await?;
    match fix {
        "serializable" => approve_with_retry(&alice, &bob).await?,
        "for-update" => approve_with_lock(&alice, &bob).await?,
        _ => approve_conditionally(&alice, &bob).await?,
    }
    let (count, total) = say_totals(run).await?;
    finish(run, expected).await?;
    Ok((count, total))
}

/// The rule's check as the approve demos say it; whether the amount fits.
async fn check(who: &MariaActor) -> Result<bool, RunError> {
    let budget = who.query(&select_budget(TEAM)).await?.int()?;
    let approved = who.query(&select_approved(TEAM)).await?.int()?;
    who.say(super::rule_line(approved, AMOUNT, budget));
    Ok(approved + AMOUNT <= budget)
}

/// SERIALIZABLE and a whole-transaction retry: both check; alice's insert waits for the lock
/// bob's check took; bob's closes the cycle and InnoDB rolls him back; alice commits; bob's
/// second attempt checks again and rejects.
async fn approve_with_retry(alice: &MariaActor, bob: &MariaActor) -> Result<(), RunError> {
    check(alice).await?;
    check(bob).await?;
    let (alice_waits, by) = alice
        .start(&insert_for(alice.name(), TEAM))
        .await?
        .expect_blocked()
        .await?;
    alice.say(format!("waiting for {}'s lock", by.join(", ")));
    closes_the_cycle(bob, &insert_for(bob.name(), TEAM), "attempt 1 failed").await?;
    bob.rollback().await?;
    alice_waits.finish().await?;
    alice.say(format!("insert {}", shared::usd(AMOUNT)));
    alice.commit().await?;
    alice.say("commit");
    let approved = check(bob).await?;
    if approved {
        insert(bob, TEAM).await?;
    }
    bob.commit().await?;
    bob.say("commit");
    bob.say(format!("approved={} after 2 attempt(s)", super::python_bool(approved)));
    Ok(())
}

/// The row lock: alice locks the team and checks; bob's lock waits; alice inserts and commits;
/// bob gets the lock, reads her $3,000 and rejects.
async fn approve_with_lock(alice: &MariaActor, bob: &MariaActor) -> Result<(), RunError> {
    lock(alice, TEAM).await?;
    check(alice).await?;
    let (bob_waits, by) = bob.start(&lock_sql(TEAM)).await?.expect_blocked().await?;
    bob.say(format!("SELECT ... FOR UPDATE is waiting for {}", by.join(", ")));
    insert(alice, TEAM).await?;
    alice.say("commit");
    alice.commit().await?;
    bob_waits.finish().await?;
    bob.say(format!("locked team {TEAM}"));
    if check(bob).await? {
        insert(bob, TEAM).await?;
    }
    bob.say("commit");
    bob.commit().await?;
    Ok(())
}

/// One conditional UPDATE reserves the money only if it fits; the rows it changed say whether
/// it did (MariaDB's UPDATE returns no rows). Bob's waits for alice's row lock, then finds her
/// $3,000 leaves no room.
async fn approve_conditionally(alice: &MariaActor, bob: &MariaActor) -> Result<(), RunError> {
    let reserve = reserve_sql(AMOUNT);
    alice.query(&reserve).await?;
    let spent = alice.query(READ_SPENT).await?.int()?;
    alice.say(format!(
        "UPDATE reserved {}, spent now {}",
        shared::usd(AMOUNT),
        shared::usd(spent)
    ));
    insert(alice, TEAM).await?;
    let (bob_waits, by) = bob.start(&reserve).await?.expect_blocked().await?;
    bob.say(format!("UPDATE is waiting for {}'s row lock", by.join(", ")));
    alice.say("commit");
    alice.commit().await?;
    let reserved = bob_waits.finish().await?;
    if reserved.affected == 0 {
        bob.say(format!(
            "UPDATE matched 0 rows: {} does not fit, rejected",
            shared::usd(AMOUNT)
        ));
        bob.rollback().await?;
    } else {
        insert(bob, TEAM).await?;
        bob.say("commit");
        bob.commit().await?;
    }
    Ok(())
}

async fn read_spent(who: &MariaActor) -> Result<i64, RunError> {
    let spent = who.query(READ_SPENT).await?.int()?;
    who.say(format!("read spent = {}", shared::usd(spent)));
    Ok(spent)
}

async fn write_spent(who: &MariaActor, spent: i64) -> Result<(), StepError> {
    who.query(&format!("UPDATE teams SET spent = {spent} WHERE id = '{TEAM}'"))
        .await?;
    who.say(format!("set spent = {}", shared::usd(spent)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variant_names_its_level_and_switch() {
        let on = setting_of("mariadb-repeatable-read-snapshot");
        assert_eq!(
            on.map(Setting::detail).as_deref(),
            Some("REPEATABLE READ, innodb_snapshot_isolation=ON")
        );
        assert_eq!(
            setting_of("mariadb-repeatable-read").map(Setting::detail).as_deref(),
            Some("REPEATABLE READ, innodb_snapshot_isolation=OFF")
        );
        assert_eq!(
            setting_of("mariadb-serializable").map(Setting::detail).as_deref(),
            Some("SERIALIZABLE")
        );
        assert_eq!(setting_of("repeatable-read"), None);
    }
}
