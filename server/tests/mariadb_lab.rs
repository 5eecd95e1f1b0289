//! The isolation lab on MariaDB, against the real server at `MARIADB_URL` (MariaDB 10.11 on
//! this machine kind): every MariaDB variant of write skew, read skew, the deadlock, approve's three fixes, the lost
//! update, the row lock at REPEATABLE READ, the batch job and the false positive through the engine,
//! its exact transcript, final ledger, verdict, header and the answer it reveals; and its
//! sandbox there removed however the run ends (completed, cancelled mid-step).
//!
//! The transcripts are what MariaDB 10.11.19 did, observed by hand first with two `mariadb`
//! clients (docs/labs.md, "On MariaDB"):
//! - write skew, READ COMMITTED / REPEATABLE READ (switch off or on): both checks see $0, both
//!   insert, both commit: $6,000;
//! - write skew, SERIALIZABLE: each check's read locks the range it read; alice's insert waits
//!   for bob's lock, bob's insert closes the cycle and InnoDB rolls him back at once (1213);
//!   his retry sees alice's $3,000;
//! - read skew, READ COMMITTED: the report reads $1,000 then $1,250; REPEATABLE READ: $1,000
//!   twice (InnoDB's read view fixed at its first read);
//! - deadlock, opposite orders: alice waits for bob's lock on ops, bob's request for design
//!   closes the cycle and InnoDB refuses it at once (1213), rolling bob back; his retry approves
//!   after alice. Same order: bob waits for alice's lock on design, no deadlock;
//! - approve: SERIALIZABLE + retry ends as write skew's (bob rolled back, his retry rejects); the
//!   row lock makes bob wait, then reject; the conditional UPDATE waits, then changes 0 rows;
//! - lost update, READ COMMITTED / REPEATABLE READ switch off: bob's write erases alice's ($800);
//!   switch on: bob's write is refused (1020): $1,200; `spent = spent + x`: bob's UPDATE waits
//!   for alice's row lock, then adds ($2,000), as `mariadb_sessions.rs` saw it first;
//! - the row lock at REPEATABLE READ (and READ COMMITTED): bob's `FOR UPDATE` waits ~2 s for
//!   alice; after her commit his SUM reads $3,000 and he rejects (InnoDB makes the read view at
//!   the first plain read, after the wait);
//! - the batch job, alice at SERIALIZABLE: the batch job at READ COMMITTED checks $0, its insert
//!   waits 1.8 s for alice's commit, then lands ($6,000); at SERIALIZABLE too, alice's insert
//!   waits and the batch job's is refused at once (1213);
//! - the false positive, SERIALIZABLE, design and ops on an empty table: alice's insert waits
//!   for bob's lock and bob's ops insert is refused with 1213 (3 runs of 3), his retry's row
//!   taking id 3; READ COMMITTED: nothing waits, both commit.
#![allow(clippy::too_many_lines, reason = "a test reads top to bottom, as the race it plays")]

mod common;

use common::{Finished, db_slot, lines, play};
use shared::{EventKind, Mode, Outcome, ServerMsg, Value, VerdictKind};

const WRITE_SKEW_BOTH_COMMIT: &str = "\
[alice] check: approved $0 + $3,000 <= $5,000? True
[bob] check: approved $0 + $3,000 <= $5,000? True
[alice] insert $3,000
[bob] insert $3,000
[alice] commit
[bob] commit
approved 2 expense(s) totalling $6,000 on a $5,000 budget";

const WRITE_SKEW_DEADLOCK: &str = "\
--- write skew, mariadb-serializable ---
[alice] check: approved $0 + $3,000 <= $5,000? True
[bob] check: approved $0 + $3,000 <= $5,000? True
[alice] waiting for bob's lock
[bob] INSERT failed: ERROR 1213 (40001): Deadlock found when trying to get lock; try restarting transaction
[alice] insert $3,000
[alice] commit
[bob] retry the whole transaction
[bob] check: approved $3,000 + $3,000 <= $5,000? False
[bob] rejected: over budget
approved 1 expense(s) totalling $3,000 on a $5,000 budget";

const READ_SKEW: &str = "\
[carol] approved $1,000 (earlier this month)
[report] teams.spent          = $1,000
[carol] approved $250 and committed";

const DEADLOCK_OPPOSITE: &str = "\
--- deadlock, mariadb-opposite-order ---
[alice] locked team design
[bob] locked team ops
[alice] waiting for bob's lock on ops
[bob] attempt 1 failed: ERROR 1213 (40001): Deadlock found when trying to get lock; try restarting transaction
[alice] locked team ops
[alice] insert $1,000 for design and ops
[alice] commit
[bob] locked team ops
[bob] locked team design
[bob] insert $1,000 for design and ops
[bob] commit
[bob] approved after 2 attempt(s)
approved 2 shared expense(s) of $1,000 per team";

const DEADLOCK_SAME: &str = "\
--- deadlock, mariadb-same-order ---
[alice] locked team design
[bob] waiting for alice's lock on design
[alice] locked team ops
[alice] insert $1,000 for design and ops
[alice] commit
[bob] locked team design
[bob] locked team ops
[bob] insert $1,000 for design and ops
[bob] commit
approved 2 shared expense(s) of $1,000 per team";

const APPROVE_RETRY: &str = "\
--- approve, mariadb-serializable ---
[alice] check: $0 + $3,000 <= $5,000, ok
[bob] check: $0 + $3,000 <= $5,000, ok
[alice] waiting for bob's lock
[bob] attempt 1 failed: ERROR 1213 (40001): Deadlock found when trying to get lock; try restarting transaction
[alice] insert $3,000
[alice] commit
[bob] check: $3,000 + $3,000 > $5,000, rejected
[bob] commit
[bob] approved=False after 2 attempt(s)
approved 1 expense(s) totalling $3,000 on a $5,000 budget";

const APPROVE_LOCK: &str = "\
--- approve, mariadb-for-update ---
[alice] locked team design
[alice] check: $0 + $3,000 <= $5,000, ok
[bob] SELECT ... FOR UPDATE is waiting for alice
[alice] insert $3,000
[alice] commit
[bob] locked team design
[bob] check: $3,000 + $3,000 > $5,000, rejected
[bob] commit
approved 1 expense(s) totalling $3,000 on a $5,000 budget";

const APPROVE_CONDITIONAL: &str = "\
--- approve, mariadb-conditional ---
[alice] UPDATE reserved $3,000, spent now $3,000
[alice] insert $3,000
[bob] UPDATE is waiting for alice's row lock
[alice] commit
[bob] UPDATE matched 0 rows: $3,000 does not fit, rejected
approved 1 expense(s) totalling $3,000 on a $5,000 budget";

const ADDED_ATOMICALLY: &str = "\
--- lost update, mariadb-atomic ---
[alice] add $1,200 -> spent = $1,200 (not committed yet)
[bob] waiting for alice's row lock
[alice] commit
[bob] add $800 -> spent = $2,000
[bob] commit
final spent = $2,000 (expected $2,000)";

const ROW_LOCK: &str = "\
[alice] locked team design
[alice] check: $0 + $3,000 <= $5,000, ok
[bob] SELECT ... FOR UPDATE is waiting for alice
[alice] insert $3,000
[alice] commit
[bob] locked team design
[bob] check: $3,000 + $3,000 > $5,000, rejected
[bob] commit
approved 1 expense(s) totalling $3,000 on a $5,000 budget";

const BATCH_WAITS_THEN_INSERTS: &str = "\
--- batch job, alice at serializable, mariadb-batch-read-committed ---
[alice] check: approved $0 + $3,000 <= $5,000? True
[batch] check: approved $0 + $3,000 <= $5,000? True
[alice] insert $3,000
[batch] waiting for alice's lock
[alice] commit
[batch] insert $3,000
[batch] commit
approved 2 expense(s) totalling $6,000 on a $5,000 budget";

const BATCH_DEADLOCK: &str = "\
--- batch job, alice at serializable, mariadb-batch-serializable ---
[alice] check: approved $0 + $3,000 <= $5,000? True
[batch] check: approved $0 + $3,000 <= $5,000? True
[alice] waiting for batch's lock
[batch] INSERT failed: ERROR 1213 (40001): Deadlock found when trying to get lock; try restarting transaction
[alice] insert $3,000
[alice] commit
[batch] retry the whole transaction
[batch] check: approved $3,000 + $3,000 <= $5,000? False
[batch] rejected: over budget
approved 1 expense(s) totalling $3,000 on a $5,000 budget";

const TWO_TEAMS_DEADLOCK: &str = "\
--- false positive, mariadb-serializable: alice approves for design, bob for ops ---
[alice] check: approved $0 + $3,000 <= $5,000? True
[bob] check: approved $0 + $3,000 <= $5,000? True
[alice] waiting for bob's lock
[bob] INSERT failed: ERROR 1213 (40001): Deadlock found when trying to get lock; try restarting transaction
[alice] insert $3,000
[alice] commit
[bob] retry the whole transaction
[bob] check: approved $0 + $3,000 <= $5,000? True
[bob] insert $3,000
design: approved 1 expense(s) totalling $3,000 on a $5,000 budget
ops: approved 1 expense(s) totalling $3,000 on a $5,000 budget";

const TWO_TEAMS_BOTH_COMMIT: &str = "\
--- false positive, mariadb-read-committed: alice approves for design, bob for ops ---
[alice] check: approved $0 + $3,000 <= $5,000? True
[bob] check: approved $0 + $3,000 <= $5,000? True
[alice] insert $3,000
[bob] insert $3,000
[alice] commit
[bob] commit
design: approved 1 expense(s) totalling $3,000 on a $5,000 budget
ops: approved 1 expense(s) totalling $3,000 on a $5,000 budget";

const LOST_UPDATE_ERASED: &str = "\
[alice] read spent = $0
[bob] read spent = $0
[alice] set spent = $1,200
[alice] commit
[bob] set spent = $800
[bob] commit
final spent = $800 (expected $2,000)";

const LOST_UPDATE_REFUSED: &str = "\
--- lost update, mariadb-repeatable-read-snapshot ---
[alice] read spent = $0
[bob] read spent = $0
[alice] set spent = $1,200
[alice] commit
[bob] UPDATE failed: ERROR 1020 (HY000): Record has changed since last read in table 'teams'; try restarting transaction
final spent = $1,200 (expected $2,000)";

/// An expense left: its id, team, amount and who approved it.
type Expense = (i64, &'static str, i64, &'static str);

/// How one MariaDB variant must end.
struct Case {
    scenario: &'static str,
    variant: &'static str,
    transcript: String,
    spent: i64,
    /// Each expense left, in id order.
    expenses: &'static [Expense],
    verdict: VerdictKind,
    /// The header's word for each session, in lane order: its level, and at REPEATABLE READ the
    /// switch.
    details: &'static [&'static str],
}

fn cases() -> Vec<Case> {
    let both = |v: &str| format!("--- write skew, {v} ---\n{WRITE_SKEW_BOTH_COMMIT}");
    let erased = |v: &str| format!("--- lost update, {v} ---\n{LOST_UPDATE_ERASED}");
    let report = |v: &str, sum: &str, numbers: &str| {
        format!(
            "--- read skew, report at {v} ---\n{READ_SKEW}\n[report] sum(expenses.amount) = {sum}\nreport numbers {numbers}"
        )
    };
    let (ws, lu, rs) = ("isolation/write-skew", "isolation/lost-update", "isolation/read-skew");
    let case = |scenario, variant, transcript, spent, expenses, verdict, details| Case {
        scenario,
        variant,
        transcript,
        spent,
        expenses,
        verdict,
        details,
    };
    let rc = "mariadb-read-committed";
    let (rr, snap) = ("mariadb-repeatable-read", "mariadb-repeatable-read-snapshot");
    const RC: &[&str] = &["READ COMMITTED", "READ COMMITTED"];
    const OFF: &[&str] = &[
        "REPEATABLE READ, innodb_snapshot_isolation=OFF",
        "REPEATABLE READ, innodb_snapshot_isolation=OFF",
    ];
    const ON: &[&str] = &[
        "REPEATABLE READ, innodb_snapshot_isolation=ON",
        "REPEATABLE READ, innodb_snapshot_isolation=ON",
    ];
    const BOTH: &[Expense] = &[(1, "design", 3000, "alice"), (2, "design", 3000, "bob")];
    const CAROL: &[Expense] = &[(1, "design", 1000, "carol"), (2, "design", 250, "carol")];
    const SHARED: &[Expense] = &[
        (1, "design", 1000, "alice"),
        (2, "ops", 1000, "alice"),
        (3, "design", 1000, "bob"),
        (4, "ops", 1000, "bob"),
    ];
    let dl = "isolation/deadlock";
    let ap = "isolation/approve";
    let (rl, bj, fp) = (
        "isolation/row-lock-at-repeatable-read",
        "isolation/batch-job",
        "isolation/false-positive",
    );
    const ALICE: &[Expense] = &[(1, "design", 3000, "alice")];
    let (reproduced, prevented) = (VerdictKind::Reproduced, VerdictKind::Prevented);
    vec![
        case(ws, rc, both(rc), 0, BOTH, reproduced, RC),
        case(ws, rr, both(rr), 0, BOTH, reproduced, OFF),
        case(ws, snap, both(snap), 0, BOTH, reproduced, ON),
        case(
            ws,
            "mariadb-serializable",
            WRITE_SKEW_DEADLOCK.to_owned(),
            0,
            ALICE,
            prevented,
            &["SERIALIZABLE", "SERIALIZABLE"],
        ),
        case(lu, rc, erased(rc), 800, &[], reproduced, RC),
        case(lu, rr, erased(rr), 800, &[], reproduced, OFF),
        case(lu, snap, LOST_UPDATE_REFUSED.to_owned(), 1_200, &[], prevented, ON),
        case(
            lu,
            "mariadb-atomic",
            ADDED_ATOMICALLY.to_owned(),
            2_000,
            &[],
            prevented,
            RC,
        ),
        // Carol approves at READ COMMITTED whatever the report's level.
        case(
            rs,
            rc,
            report(rc, "$1,250", "DISAGREE: $1,000 vs $1,250"),
            1_250,
            CAROL,
            reproduced,
            RC,
        ),
        case(
            rs,
            rr,
            report(rr, "$1,000", "agree: $1,000 vs $1,000"),
            1_250,
            CAROL,
            prevented,
            &["READ COMMITTED", "REPEATABLE READ, innodb_snapshot_isolation=OFF"],
        ),
        case(
            dl,
            "mariadb-opposite-order",
            DEADLOCK_OPPOSITE.to_owned(),
            0,
            SHARED,
            reproduced,
            RC,
        ),
        case(
            dl,
            "mariadb-same-order",
            DEADLOCK_SAME.to_owned(),
            0,
            SHARED,
            prevented,
            RC,
        ),
        case(
            ap,
            "mariadb-serializable",
            APPROVE_RETRY.to_owned(),
            0,
            ALICE,
            prevented,
            &["SERIALIZABLE", "SERIALIZABLE"],
        ),
        case(
            ap,
            "mariadb-for-update",
            APPROVE_LOCK.to_owned(),
            0,
            ALICE,
            prevented,
            RC,
        ),
        case(
            rl,
            rr,
            format!("--- row lock, {rr} ---\n{ROW_LOCK}"),
            0,
            ALICE,
            prevented,
            OFF,
        ),
        case(
            rl,
            rc,
            format!("--- row lock, {rc} ---\n{ROW_LOCK}"),
            0,
            ALICE,
            prevented,
            RC,
        ),
        case(
            bj,
            "mariadb-batch-read-committed",
            BATCH_WAITS_THEN_INSERTS.to_owned(),
            0,
            &[(1, "design", 3000, "alice"), (2, "design", 3000, "batch")],
            reproduced,
            &["SERIALIZABLE", "READ COMMITTED"],
        ),
        case(
            bj,
            "mariadb-batch-serializable",
            BATCH_DEADLOCK.to_owned(),
            0,
            ALICE,
            prevented,
            &["SERIALIZABLE", "SERIALIZABLE"],
        ),
        // Bob's refused insert took id 2 (InnoDB hands out the number before the lock wait).
        case(
            fp,
            "mariadb-serializable",
            TWO_TEAMS_DEADLOCK.to_owned(),
            0,
            &[(1, "design", 3000, "alice"), (3, "ops", 3000, "bob")],
            reproduced,
            &["SERIALIZABLE", "SERIALIZABLE"],
        ),
        case(
            fp,
            rc,
            TWO_TEAMS_BOTH_COMMIT.to_owned(),
            0,
            &[(1, "design", 3000, "alice"), (2, "ops", 3000, "bob")],
            prevented,
            RC,
        ),
        // Only the conditional fix keeps the running total: one approval's worth.
        case(
            ap,
            "mariadb-conditional",
            APPROVE_CONDITIONAL.to_owned(),
            3_000,
            ALICE,
            prevented,
            RC,
        ),
    ]
}

/// What the run did, read from its events alone, in the words of its scenario's choices.
fn what_happened(run: &Finished) -> &'static str {
    let failed_with = |who: &str, number: &str| {
        run.events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::Error { actor, code: Some(c), .. } if actor == who && c == number))
    };
    let alice_waited_for_bob = run.events.iter().any(
        |e| matches!(&e.kind, EventKind::Blocked { actor, by, .. } if actor == "alice" && by.iter().any(|b| b == "bob")),
    );
    let failures = run
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Error { .. }))
        .count();
    let spent = run.rows_after("teams")[0][2].as_int();
    let expenses = run.rows_after("expenses").len();
    // The report's numbers, as its own reads returned them.
    let reads: Vec<i64> = run
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Result {
                actor,
                rows: Some(rows),
                ..
            } if actor == "report" => rows.rows.first()?.first()?.as_int(),
            _ => None,
        })
        .collect();
    match reads.as_slice() {
        [1_000, 1_250] => return "disagree",
        [1_000, 1_000] => return "both-1000",
        [] => {}
        _ => return "none of the choices",
    }
    let bob_waited_for_alice = run.events.iter().any(
        |e| matches!(&e.kind, EventKind::Blocked { actor, by, .. } if actor == "bob" && by.iter().any(|b| b == "alice")),
    );
    let scenario = run
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::RunStarted { scenario, .. } => Some(scenario.as_str()),
            _ => None,
        })
        .unwrap_or_default();
    let batch_waited_for_alice = run.events.iter().any(
        |e| matches!(&e.kind, EventKind::Blocked { actor, by, .. } if actor == "batch" && by.iter().any(|b| b == "alice")),
    );
    let alice_waited_for_batch = run.events.iter().any(
        |e| matches!(&e.kind, EventKind::Blocked { actor, by, .. } if actor == "alice" && by.iter().any(|b| b == "batch")),
    );
    let anyone_waited = run.events.iter().any(|e| matches!(e.kind, EventKind::Blocked { .. }));
    match scenario {
        "isolation/approve" => {
            return match (failures, expenses) {
                (1, 1) if failed_with("bob", "1213") && alice_waited_for_bob => "bob-1213",
                (0, 1) if bob_waited_for_alice => "bob-waits",
                _ => "none of the choices",
            };
        }
        "isolation/row-lock-at-repeatable-read" => {
            return match (failures, expenses, bob_waited_for_alice) {
                (0, 1, true) => "bob-rejects",
                (0, 2, true) => "bob-overspends",
                (0, 1 | 2, false) => "no-wait",
                _ => "none of the choices",
            };
        }
        "isolation/batch-job" => {
            return match (failures, expenses) {
                (0, 2) if batch_waited_for_alice => "batch-waits-inserts",
                (0, 2) if !anyone_waited => "both-commit",
                (1, 1) if failed_with("batch", "1213") && alice_waited_for_batch => "batch-1213",
                _ => "none of the choices",
            };
        }
        "isolation/false-positive" => {
            return match (failures, expenses) {
                (0, 2) if !anyone_waited => "both-commit",
                (1, 2) if failed_with("bob", "1213") && alice_waited_for_bob => "bob-1213",
                (0, 2) if bob_waited_for_alice => "bob-waits",
                _ => "none of the choices",
            };
        }
        _ => {}
    }
    match (failures, spent, expenses) {
        (1, _, 4) if failed_with("bob", "1213") && alice_waited_for_bob => "one-1213",
        (0, _, 4) if bob_waited_for_alice => "bob-waits",
        (1, _, 1) if failed_with("bob", "1213") && alice_waited_for_bob => "deadlock",
        (0, Some(0), 2) => "both-commit",
        (0, Some(800), 0) => "bob-erases",
        (1, Some(1_200), 0) if failed_with("bob", "1020") => "bob-1020",
        (0, Some(2_000), 0) if bob_waited_for_alice => "bob-waits",
        _ => "none of the choices",
    }
}

/// The tests of this file one at a time: each counts every run sandbox on MariaDB.
static ALONE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn every_mariadb_variant_plays_its_transcript_and_ledger_and_leaves_nothing() {
    let _alone = ALONE.lock().await;
    let _slot = db_slot().await;
    let engine = common::engine().await;
    for Case {
        scenario,
        variant,
        transcript,
        spent,
        expenses,
        verdict,
        details,
    } in cases()
    {
        let run = play(&engine, scenario, variant).await;
        let case = format!("{scenario} {variant}");
        assert_eq!(run.outcome, Outcome::Completed, "{case}");
        assert_eq!(run.transcript(), lines(&transcript), "{case}: transcript");
        let Some(EventKind::RunStarted { server, actors, .. }) = run.events.first().map(|e| &e.kind) else {
            panic!("{case}: no header");
        };
        assert!(server.starts_with("MariaDB "), "{case}: played on {server}");
        let said: Vec<&str> = actors.iter().map(|a| a.detail.as_str()).collect();
        assert_eq!(said, details, "{case}: the header names each level and switch");
        assert_eq!(run.rows_after("teams")[0], row!["design", 5000, spent], "{case}: teams");
        let want: Vec<Vec<Value>> = expenses
            .iter()
            .map(|(id, team, amount, who)| row![*id, *team, *amount, *who])
            .collect();
        assert_eq!(run.rows_after("expenses"), want, "{case}: expenses");
        assert_eq!(run.verdict().kind, verdict, "{case}: {:?}", run.verdict());
        // Every statement went to MariaDB, none to PostgreSQL.
        assert!(
            run.events
                .iter()
                .all(|e| !matches!(&e.kind, EventKind::Step { service, .. } if *service != shared::Service::Mariadb)),
            "{case}: a step went elsewhere"
        );
        assert_eq!(
            common::revealed(&run, scenario, variant),
            what_happened(&run),
            "{case}: the answer is what the run did"
        );
    }
    assert_eq!(
        common::mariadb::sandboxes_on_mariadb().await,
        (0, 0),
        "every run's database and user are gone"
    );
}

/// The load test on MariaDB: sixteen sessions of the run's user (twice a sandbox's default),
/// every strategy's invariants as on PostgreSQL (`common::load_test`), every worker's session
/// and the sandbox gone after.
#[tokio::test]
async fn the_load_test_keeps_its_invariants_on_mariadb() {
    let _alone = ALONE.lock().await;
    let _slot = db_slot().await;
    let engine = common::engine().await;
    let run = play(&engine, "isolation/load-test", "mariadb-all").await;
    common::load_test::keeps_its_invariants(&run);
    let Some(EventKind::RunStarted { server, .. }) = run.events.first().map(|e| &e.kind) else {
        panic!("no header");
    };
    assert!(server.starts_with("MariaDB "), "played on {server}");
    // SERIALIZABLE's retries were InnoDB's deadlocks: the locks of sixteen checks on one range.
    let serializable = racelab::labs::isolation::load_test::figures_of(&run.ledger(shared::Moment::After))
        .into_iter()
        .find(|f| f.strategy == racelab::labs::isolation::load_test::Strategy::Serializable)
        .expect("serializable's figures");
    assert!(serializable.retries > 0, "{serializable:?}");
    drop(engine);
    assert_eq!(
        common::mariadb::sandboxes_on_mariadb().await,
        (0, 0),
        "the run's database and user are gone"
    );
}

#[tokio::test]
async fn sandboxes_made_ahead_are_taken_by_the_next_runs_reset_after_them_and_go_with_the_engine() {
    let _alone = ALONE.lock().await;
    let _slot = db_slot().await;
    let mut config = common::config();
    config.warm_sandboxes = 2;
    let engine = std::sync::Arc::new(racelab::db::connect_engine(&config).await.expect("PostgreSQL"));
    let shelf_full = async || {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
        while engine.ready_on_mariadb().0 < 2 {
            assert!(tokio::time::Instant::now() < deadline, "the shelf fills");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    // The first run makes its own, and the shelf fills behind it; the next ones take from it,
    // and give theirs back reset: a deadlock's second team and four expenses are gone before
    // the next write skew, whose ids start at 1 again.
    let rounds = [
        ("isolation/write-skew", "mariadb-repeatable-read"),
        ("isolation/deadlock", "mariadb-same-order"),
        ("isolation/write-skew", "mariadb-repeatable-read"),
        ("isolation/write-skew", "mariadb-repeatable-read"),
    ];
    let transcript = lines(&format!(
        "--- write skew, mariadb-repeatable-read ---\n{WRITE_SKEW_BOTH_COMMIT}"
    ));
    for (round, (scenario, variant)) in rounds.into_iter().enumerate() {
        if round > 0 {
            shelf_full().await;
        }
        let run = play(&engine, scenario, variant).await;
        assert_eq!(run.outcome, Outcome::Completed, "round {round}");
        if scenario == "isolation/write-skew" {
            assert_eq!(
                run.transcript(),
                transcript,
                "round {round}: a ready sandbox starts clean"
            );
            let before = run
                .ledger(shared::Moment::Before)
                .table("teams")
                .map(|t| t.rows.clone())
                .unwrap_or_default();
            assert_eq!(
                before,
                vec![row!["design", 5000, 0]],
                "round {round}: one team, as the lab seeds it"
            );
            let ids: Vec<Value> = run.rows_after("expenses").iter().map(|r| r[0].clone()).collect();
            assert_eq!(
                ids,
                [Value::from(1), Value::from(2)],
                "round {round}: expense ids start at 1"
            );
        }
    }
    // A completed run's sandbox is reset on the shelf's own task, after its reader heard
    // `done`: the last one is back within moments.
    shelf_full().await;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while engine.ready_on_mariadb().2 < 4 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (_, taken, reused) = engine.ready_on_mariadb();
    assert_eq!(taken, 3, "every run after the first took a ready one");
    assert_eq!(reused, 4, "every completed run's sandbox was reset and put back");
    assert_eq!(
        common::mariadb::sandboxes_on_mariadb().await.0,
        2,
        "two wait on the shelf, none of a run"
    );
    engine
        .close(std::time::Duration::from_secs(5), std::time::Duration::from_secs(5))
        .await;
    assert_eq!(
        common::mariadb::sandboxes_on_mariadb().await,
        (0, 0),
        "the shelf goes with the engine"
    );
}

#[tokio::test]
async fn a_run_cancelled_while_alice_waits_leaves_nothing_on_mariadb() {
    let _alone = ALONE.lock().await;
    let _slot = db_slot().await;
    let engine = common::engine().await;
    let def = racelab::labs::find("isolation/write-skew").expect("the scenario");
    let mut handle = engine
        .start(def, "mariadb-serializable", Mode::Step)
        .await
        .expect("a known variant");
    // Step until alice's insert is seen waiting for bob, then the reader goes.
    let mut seen_waiting = false;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    while !seen_waiting {
        let update = tokio::time::timeout_at(deadline, handle.updates.recv())
            .await
            .expect("in time")
            .expect("open");
        match update {
            ServerMsg::Event { event } => match event.kind {
                EventKind::Paused { .. } => handle.next(),
                EventKind::Blocked { actor, .. } if actor == "alice" => seen_waiting = true,
                _ => {}
            },
            ServerMsg::Done { outcome, .. } => panic!("ended before alice waited: {outcome:?}"),
            _ => {}
        }
    }
    assert_ne!(
        common::mariadb::sandboxes_on_mariadb().await,
        (0, 0),
        "the run's sandbox is there while it plays"
    );
    handle.cancel();
    let finished = common::follow(handle).await;
    assert_eq!(finished.outcome, Outcome::Cancelled);
    assert_eq!(
        common::mariadb::sandboxes_on_mariadb().await,
        (0, 0),
        "its database and user are gone"
    );
}

#[tokio::test]
async fn a_mariadb_variant_is_refused_by_name_while_mariadb_is_down() {
    let _slot = db_slot().await;
    let mut config = common::config();
    config.mariadb_url = "mysql://root@127.0.0.1:9".to_owned();
    let engine = std::sync::Arc::new(racelab::db::connect_engine(&config).await.expect("PostgreSQL"));
    let def = racelab::labs::find("isolation/lost-update").expect("the scenario");
    let refused = engine
        .start(def, "mariadb-repeatable-read", Mode::Auto)
        .await
        .err()
        .expect("refused");
    assert!(refused.to_string().contains("MariaDB"), "{refused}");
    // Its PostgreSQL variants still play.
    let run = play(&engine, "isolation/lost-update", "read-committed").await;
    assert_eq!(run.outcome, Outcome::Completed);
}
