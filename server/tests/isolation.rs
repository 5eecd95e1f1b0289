//! Every isolation scenario variant against the real PostgreSQL: the exact transcript (the
//! tutorial's lines, from specs/isolation.md, for the eleven scripted variants) and the final
//! ledger, plus the verdict.

mod common;

use common::versions::{engine_with_18, inspector_18};
use common::{Finished, WRITE_SKEW_SERIALIZABLE, db_slot, engine, lines, play, play_on};
use shared::{Outcome, Value, VerdictKind};

/// Plays a variant on the machine's PostgreSQL and on PostgreSQL 18.6 (the tutorial's) and
/// checks, on each, transcript, final ledger and verdict; returns the run on the machine's.
async fn check(
    scenario: &str,
    variant: &str,
    transcript: &str,
    spent: i64,
    expenses: &[(i64, &str, i64, &str)],
    verdict: VerdictKind,
) -> Finished {
    let _slot = db_slot().await;
    let engine = engine_with_18().await;
    let home = engine.default_postgres();
    assert_ne!(
        home, 18,
        "the machine's PostgreSQL is another version than the tutorial's"
    );
    let (run, on_18) = tokio::join!(
        play_on(&engine, scenario, variant, home),
        play_on(&engine, scenario, variant, 18)
    );
    check_run(&on_18, scenario, variant, transcript, spent, expenses, verdict);
    common::versions::assert_played_on_18(&on_18);
    assert_eq!(
        common::wait_until_clean_on(inspector_18().await, &on_18.run_id, false).await,
        common::Leftovers::NONE,
        "{scenario} {variant}: leftovers on PostgreSQL 18"
    );
    check_run(&run, scenario, variant, transcript, spent, expenses, verdict);
    assert_eq!(
        common::wait_until_clean(&run.run_id).await,
        common::Leftovers::NONE,
        "{scenario} {variant}: leftovers"
    );
    run
}

/// One run's transcript, final ledger and verdict.
fn check_run(
    run: &Finished,
    scenario: &str,
    variant: &str,
    transcript: &str,
    spent: i64,
    expenses: &[(i64, &str, i64, &str)],
    verdict: VerdictKind,
) {
    assert_eq!(run.outcome, Outcome::Completed, "{scenario} {variant}");
    assert_eq!(run.transcript(), lines(transcript), "{scenario} {variant}: transcript");
    let design = run
        .rows_after("teams")
        .into_iter()
        .find(|r| r[0] == Value::from("design"))
        .expect("design row");
    assert_eq!(design, row!["design", 5000, spent], "{scenario} {variant}: teams");
    let want: Vec<Vec<Value>> = expenses
        .iter()
        .map(|(id, team, amount, who)| row![*id, *team, *amount, *who])
        .collect();
    assert_eq!(run.rows_after("expenses"), want, "{scenario} {variant}: expenses");
    assert_eq!(
        run.verdict().kind,
        verdict,
        "{scenario} {variant}: verdict {:?}",
        run.verdict()
    );
}

#[tokio::test]
async fn lost_update_at_read_committed_loses_alices_write() {
    check(
        "isolation/lost-update",
        "read-committed",
        "--- lost update, read-committed ---
[alice] read spent = $0
[bob] read spent = $0
[alice] set spent = $1,200
[alice] commit
[bob] set spent = $800
[bob] commit
final spent = $800 (expected $2,000)",
        800,
        &[],
        VerdictKind::Reproduced,
    )
    .await;
}

#[tokio::test]
async fn lost_update_at_repeatable_read_refuses_bobs_update() {
    check(
        "isolation/lost-update",
        "repeatable-read",
        "--- lost update, repeatable-read ---
[alice] read spent = $0
[bob] read spent = $0
[alice] set spent = $1,200
[alice] commit
[bob] UPDATE failed: SQLSTATE 40001: could not serialize access due to concurrent update
final spent = $1,200 (expected $2,000)",
        1200,
        &[],
        VerdictKind::Prevented,
    )
    .await;
}

#[tokio::test]
async fn atomic_update_makes_bob_wait_and_counts_both() {
    let run = check(
        "isolation/lost-update",
        "atomic",
        "--- lost update, atomic ---
[alice] add $1,200 -> spent = $1,200 (not committed yet)
[bob] waiting for alice's row lock
[alice] commit
[bob] add $800 -> spent = $2,000
[bob] commit
final spent = $2,000 (expected $2,000)",
        2000,
        &[],
        VerdictKind::Prevented,
    )
    .await;
    // The wait was detected from pg_blocking_pids, and named the holder.
    let blocked = run.events.iter().find_map(|e| match &e.kind {
        shared::EventKind::Blocked { actor, by, .. } => Some((actor.clone(), by.clone())),
        _ => None,
    });
    assert_eq!(blocked, Some(("bob".to_owned(), vec!["alice".to_owned()])));
    assert!(
        run.events
            .iter()
            .any(|e| matches!(&e.kind, shared::EventKind::Unblocked { actor, .. } if actor == "bob"))
    );
}

#[tokio::test]
async fn read_skew_at_read_committed_disagrees() {
    check(
        "isolation/read-skew",
        "read-committed",
        "--- read skew, report at read-committed ---
[carol] approved $1,000 (earlier this month)
[report] teams.spent          = $1,000
[carol] approved $250 and committed
[report] sum(expenses.amount) = $1,250
report numbers DISAGREE: $1,000 vs $1,250",
        1250,
        &[(1, "design", 1000, "carol"), (2, "design", 250, "carol")],
        VerdictKind::Reproduced,
    )
    .await;
}

#[tokio::test]
async fn read_skew_at_repeatable_read_agrees() {
    check(
        "isolation/read-skew",
        "repeatable-read",
        "--- read skew, report at repeatable-read ---
[carol] approved $1,000 (earlier this month)
[report] teams.spent          = $1,000
[carol] approved $250 and committed
[report] sum(expenses.amount) = $1,000
report numbers agree: $1,000 vs $1,000",
        1250,
        &[(1, "design", 1000, "carol"), (2, "design", 250, "carol")],
        VerdictKind::Prevented,
    )
    .await;
}

const WRITE_SKEW_BOTH_COMMIT: &str = "[alice] check: approved $0 + $3,000 <= $5,000? True
[bob] check: approved $0 + $3,000 <= $5,000? True
[alice] insert $3,000
[bob] insert $3,000
[alice] commit
[bob] commit
approved 2 expense(s) totalling $6,000 on a $5,000 budget";

#[tokio::test]
async fn write_skew_at_read_committed_overspends() {
    check(
        "isolation/write-skew",
        "read-committed",
        &format!("--- write skew, read-committed ---\n{WRITE_SKEW_BOTH_COMMIT}"),
        0,
        &[(1, "design", 3000, "alice"), (2, "design", 3000, "bob")],
        VerdictKind::Reproduced,
    )
    .await;
}

#[tokio::test]
async fn write_skew_at_repeatable_read_overspends_without_error() {
    check(
        "isolation/write-skew",
        "repeatable-read",
        &format!("--- write skew, repeatable-read ---\n{WRITE_SKEW_BOTH_COMMIT}"),
        0,
        &[(1, "design", 3000, "alice"), (2, "design", 3000, "bob")],
        VerdictKind::Reproduced,
    )
    .await;
}

#[tokio::test]
async fn write_skew_at_serializable_cancels_bobs_commit() {
    let run = check(
        "isolation/write-skew",
        "serializable",
        WRITE_SKEW_SERIALIZABLE,
        0,
        &[(1, "design", 3000, "alice")],
        VerdictKind::Prevented,
    )
    .await;
    // The 40001 is an event with its SQLSTATE, on bob, at COMMIT.
    let error = run.events.iter().find_map(|e| match &e.kind {
        shared::EventKind::Error { actor, code, .. } => Some((actor.clone(), code.clone())),
        _ => None,
    });
    assert_eq!(error, Some(("bob".to_owned(), Some("40001".to_owned()))));
}

#[tokio::test]
async fn approve_serializable_retries_bob_after_a_40001_at_insert() {
    check(
        "isolation/approve",
        "serializable",
        "--- approve, serializable ---
[alice] check: $0 + $3,000 <= $5,000, ok
[bob] check: $0 + $3,000 <= $5,000, ok
[alice] insert $3,000
[alice] commit
[bob] attempt 1 failed: could not serialize access due to read/write dependencies among transactions
[bob] check: $3,000 + $3,000 > $5,000, rejected
[bob] commit
[bob] approved=False after 2 attempt(s)
approved 1 expense(s) totalling $3,000 on a $5,000 budget",
        0,
        &[(1, "design", 3000, "alice")],
        VerdictKind::Prevented,
    )
    .await;
}

#[tokio::test]
async fn approve_for_update_makes_bob_wait_for_the_row_lock() {
    check(
        "isolation/approve",
        "for-update",
        "--- approve, for-update ---
[alice] locked team design
[alice] check: $0 + $3,000 <= $5,000, ok
[bob] SELECT ... FOR UPDATE is waiting for alice
[alice] insert $3,000
[alice] commit
[bob] locked team design
[bob] check: $3,000 + $3,000 > $5,000, rejected
[bob] commit
approved 1 expense(s) totalling $3,000 on a $5,000 budget",
        0,
        &[(1, "design", 3000, "alice")],
        VerdictKind::Prevented,
    )
    .await;
}

#[tokio::test]
async fn approve_conditional_matches_zero_rows_for_bob() {
    check(
        "isolation/approve",
        "conditional",
        "--- approve, conditional ---
[alice] UPDATE reserved $3,000, spent now $3,000
[bob] UPDATE is waiting for alice's row lock
[alice] commit
[bob] UPDATE matched 0 rows: $3,000 does not fit, rejected
approved 1 expense(s) totalling $3,000 on a $5,000 budget",
        3000,
        &[(1, "design", 3000, "alice")],
        VerdictKind::Prevented,
    )
    .await;
}

#[tokio::test]
async fn row_lock_at_repeatable_read_still_overspends() {
    check(
        "isolation/row-lock-at-repeatable-read",
        "repeatable-read",
        "--- row lock, repeatable-read ---
[alice] locked team design
[alice] check: $0 + $3,000 <= $5,000, ok
[bob] SELECT ... FOR UPDATE is waiting for alice
[alice] insert $3,000
[alice] commit
[bob] locked team design
[bob] check: $0 + $3,000 <= $5,000, ok
[bob] insert $3,000
[bob] commit
approved 2 expense(s) totalling $6,000 on a $5,000 budget",
        0,
        &[(1, "design", 3000, "alice"), (2, "design", 3000, "bob")],
        VerdictKind::Reproduced,
    )
    .await;
}

#[tokio::test]
async fn row_lock_at_read_committed_prevents_it() {
    check(
        "isolation/row-lock-at-repeatable-read",
        "read-committed",
        "--- row lock, read-committed ---
[alice] locked team design
[alice] check: $0 + $3,000 <= $5,000, ok
[bob] SELECT ... FOR UPDATE is waiting for alice
[alice] insert $3,000
[alice] commit
[bob] locked team design
[bob] check: $3,000 + $3,000 > $5,000, rejected
[bob] commit
approved 1 expense(s) totalling $3,000 on a $5,000 budget",
        0,
        &[(1, "design", 3000, "alice")],
        VerdictKind::Prevented,
    )
    .await;
}

#[tokio::test]
async fn batch_job_at_read_committed_slips_past_serializable() {
    check(
        "isolation/batch-job",
        "batch-read-committed",
        "--- batch job, alice at serializable, batch-read-committed ---
[alice] check: approved $0 + $3,000 <= $5,000? True
[batch] check: approved $0 + $3,000 <= $5,000? True
[alice] insert $3,000
[batch] insert $3,000
[alice] commit
[batch] commit
approved 2 expense(s) totalling $6,000 on a $5,000 budget",
        0,
        &[(1, "design", 3000, "alice"), (2, "design", 3000, "batch")],
        VerdictKind::Reproduced,
    )
    .await;
}

#[tokio::test]
async fn batch_job_at_serializable_is_cancelled() {
    check(
        "isolation/batch-job",
        "batch-serializable",
        "--- batch job, alice at serializable, batch-serializable ---
[alice] check: approved $0 + $3,000 <= $5,000? True
[batch] check: approved $0 + $3,000 <= $5,000? True
[alice] insert $3,000
[batch] insert $3,000
[alice] commit
[batch] COMMIT failed: SQLSTATE 40001: could not serialize access due to read/write dependencies among transactions
[batch] retry the whole transaction
[batch] check: approved $3,000 + $3,000 <= $5,000? False
[batch] rejected: over budget
approved 1 expense(s) totalling $3,000 on a $5,000 budget",
        0,
        &[(1, "design", 3000, "alice")],
        VerdictKind::Prevented,
    )
    .await;
}

#[tokio::test]
async fn serializable_cancels_an_approval_for_another_team() {
    // Bob's cancelled first attempt used identity value 2, so his surviving row is 3.
    check(
        "isolation/false-positive",
        "serializable",
        "--- false positive, serializable: alice approves for design, bob for ops ---
[alice] check: approved $0 + $3,000 <= $5,000? True
[bob] check: approved $0 + $3,000 <= $5,000? True
[alice] insert $3,000
[bob] insert $3,000
[alice] commit
[bob] COMMIT failed: SQLSTATE 40001: could not serialize access due to read/write dependencies among transactions
[bob] retry the whole transaction
[bob] check: approved $0 + $3,000 <= $5,000? True
[bob] insert $3,000
design: approved 1 expense(s) totalling $3,000 on a $5,000 budget
ops: approved 1 expense(s) totalling $3,000 on a $5,000 budget",
        0,
        &[(1, "design", 3000, "alice"), (3, "ops", 3000, "bob")],
        VerdictKind::Reproduced,
    )
    .await;
}

#[tokio::test]
async fn read_committed_approvals_for_two_teams_both_commit() {
    check(
        "isolation/false-positive",
        "read-committed",
        "--- false positive, read-committed: alice approves for design, bob for ops ---
[alice] check: approved $0 + $3,000 <= $5,000? True
[bob] check: approved $0 + $3,000 <= $5,000? True
[alice] insert $3,000
[bob] insert $3,000
[alice] commit
[bob] commit
design: approved 1 expense(s) totalling $3,000 on a $5,000 budget
ops: approved 1 expense(s) totalling $3,000 on a $5,000 budget",
        0,
        &[(1, "design", 3000, "alice"), (2, "ops", 3000, "bob")],
        VerdictKind::Prevented,
    )
    .await;
}

#[tokio::test]
async fn load_test_keeps_its_invariants() {
    let _slot = db_slot().await;
    let run = play(&engine().await, "isolation/load-test", "all").await;
    common::load_test::keeps_its_invariants(&run);
}

#[tokio::test]
async fn opposite_lock_orders_deadlock_and_alice_retries() {
    let run = check(
        "isolation/deadlock",
        "opposite-order",
        "--- deadlock, opposite-order ---
[alice] locked team design
[bob] locked team ops
[alice] waiting for bob's lock on ops
[bob] waiting for alice's lock on design
[alice] attempt 1 failed: deadlock detected
[bob] locked team design
[bob] insert $1,000 for design and ops
[bob] commit
[alice] locked team design
[alice] locked team ops
[alice] insert $1,000 for design and ops
[alice] commit
[alice] approved after 2 attempt(s)
approved 2 shared expense(s) of $1,000 per team",
        0,
        &[
            (1, "design", 1000, "bob"),
            (2, "ops", 1000, "bob"),
            (3, "design", 1000, "alice"),
            (4, "ops", 1000, "alice"),
        ],
        VerdictKind::Reproduced,
    )
    .await;
    let error = run.events.iter().find_map(|e| match &e.kind {
        shared::EventKind::Error { actor, code, .. } => Some((actor.clone(), code.clone())),
        _ => None,
    });
    assert_eq!(error, Some(("alice".to_owned(), Some("40P01".to_owned()))));
}

#[tokio::test]
async fn one_lock_order_makes_bob_wait_instead() {
    let run = check(
        "isolation/deadlock",
        "same-order",
        "--- deadlock, same-order ---
[alice] locked team design
[bob] waiting for alice's lock on design
[alice] locked team ops
[alice] insert $1,000 for design and ops
[alice] commit
[bob] locked team design
[bob] locked team ops
[bob] insert $1,000 for design and ops
[bob] commit
approved 2 shared expense(s) of $1,000 per team",
        0,
        &[
            (1, "design", 1000, "alice"),
            (2, "ops", 1000, "alice"),
            (3, "design", 1000, "bob"),
            (4, "ops", 1000, "bob"),
        ],
        VerdictKind::Prevented,
    )
    .await;
    let verdict = run.verdict();
    let no_deadlock = verdict
        .checks
        .iter()
        .find(|c| c.rule == "no approval is cancelled by a deadlock")
        .expect("the check");
    assert_eq!(
        no_deadlock.actual, "attempts: alice 1, bob 1",
        "counted by both retry loops"
    );
}

/// What a write-skew run shows happened, read from its events alone: the choice a reader who
/// watched it would say was right.
fn what_happened(events: &[shared::Event]) -> &'static str {
    use shared::EventKind;
    let failed = |who: &str| {
        events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::Error { actor, .. } if actor == who))
    };
    let waited = events.iter().any(
        |e| matches!(&e.kind, EventKind::Blocked { actor, by, .. } if actor == "bob" && by.iter().any(|b| b == "alice")),
    );
    let commits = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Commit { .. }))
        .count();
    match (failed("alice"), failed("bob"), waited) {
        (true, _, _) => "alice-fails",
        (false, true, _) => "bob-40001",
        (false, false, true) => "bob-waits",
        (false, false, false) if commits == 2 => "both-commit",
        _ => "none of the choices",
    }
}

/// Predict, then run: every variant's revealed answer is what the run really did, it is one of
/// the choices the catalog offers, and it comes after the verdict, right before the end.
#[tokio::test]
async fn write_skew_reveals_what_each_level_really_did() {
    let _slot = db_slot().await;
    let engine = common::engine().await;
    let def = racelab::labs::find("isolation/write-skew").expect("the scenario");
    let info = racelab::engine::Scenario::info(def);
    let prediction = info.predict.expect("write skew asks for a prediction");
    for variant in ["read-committed", "repeatable-read", "serializable"] {
        let run = play(&engine, "isolation/write-skew", variant).await;
        let kinds: Vec<&shared::EventKind> = run.events.iter().map(|e| &e.kind).collect();
        let [.., verdict, reveal, done] = kinds.as_slice() else {
            panic!("{variant}: too few events");
        };
        assert!(
            matches!(verdict, shared::EventKind::Verdict { .. }),
            "{variant}: {verdict:?}"
        );
        assert!(matches!(done, shared::EventKind::Done { .. }), "{variant}: {done:?}");
        let shared::EventKind::Reveal { choice, why } = reveal else {
            panic!("{variant}: no reveal before the end, {reveal:?}");
        };
        assert_eq!(
            choice,
            what_happened(&run.events),
            "{variant}: the answer is what the run did"
        );
        assert!(
            prediction.choices.iter().any(|c| &c.id == choice),
            "{variant}: {choice} is offered"
        );
        assert!(why.len() > 40, "{variant}: a sentence says why: {why:?}");
    }
}

/// What a lost-update run shows happened, from its events and its final total alone.
fn what_the_total_did(run: &Finished) -> &'static str {
    use shared::EventKind;
    let bob_failed = run
        .events
        .iter()
        .any(|e| matches!(&e.kind, EventKind::Error { actor, .. } if actor == "bob"));
    let bob_waited = run
        .events
        .iter()
        .any(|e| matches!(&e.kind, EventKind::Blocked { actor, .. } if actor == "bob"));
    let spent = run.rows_after("teams")[0][2].as_int();
    match (bob_failed, bob_waited, spent) {
        // MariaDB's snapshot switch refuses it with its own number.
        (true, _, Some(1_200)) if failed_with(run, "bob", "1020") => "bob-1020",
        (true, _, Some(1_200)) => "bob-40001",
        (false, true, Some(2_000)) => "bob-waits",
        (false, false, Some(800)) => "bob-erases",
        (false, false, Some(2_000)) => "both-add",
        _ => "none of the choices",
    }
}

#[tokio::test]
async fn lost_update_reveals_what_each_variant_really_did() {
    let _slot = db_slot().await;
    let engine = common::engine().await;
    for variant in ["read-committed", "repeatable-read", "atomic"] {
        let run = play(&engine, "isolation/lost-update", variant).await;
        let revealed = run.events.iter().find_map(|e| match &e.kind {
            shared::EventKind::Reveal { choice, .. } => Some(choice.as_str()),
            _ => None,
        });
        assert_eq!(
            revealed,
            Some(what_the_total_did(&run)),
            "{variant}: the answer is what the run did"
        );
    }
}

/// Predict, then run: plays every variant `scenario` lists and returns each one's finished run
/// with the choice it revealed, after checking that the run completed, that the reveal comes
/// right after the verdict and right before the end, and that it is one of the choices the
/// catalog offers.
async fn reveals(scenario: &str) -> Vec<(&'static str, Finished, String)> {
    let _slot = db_slot().await;
    let engine = common::engine().await;
    let def = racelab::labs::find(scenario).expect("the scenario");
    let mut runs = Vec::new();
    for (variant, _, _) in def.variants {
        let run = play(&engine, scenario, variant).await;
        assert_eq!(run.outcome, Outcome::Completed, "{scenario} {variant}");
        let choice = common::revealed(&run, scenario, variant);
        runs.push((*variant, run, choice));
    }
    runs
}

/// Whether `who` got an error with SQLSTATE `code` during the run.
fn failed_with(run: &Finished, who: &str, code: &str) -> bool {
    run.events
        .iter()
        .any(|e| matches!(&e.kind, shared::EventKind::Error { actor, code: Some(c), .. } if actor == who && c == code))
}

/// Whether `who` got any error during the run.
fn failed(run: &Finished, who: &str) -> bool {
    run.events
        .iter()
        .any(|e| matches!(&e.kind, shared::EventKind::Error { actor, .. } if actor == who))
}

/// Whether `who` was seen waiting for a lock `holder` held.
fn waited_for(run: &Finished, who: &str, holder: &str) -> bool {
    run.events.iter().any(|e| {
        matches!(&e.kind, shared::EventKind::Blocked { actor, by, .. } if actor == who && by.iter().any(|b| b == holder))
    })
}

/// The final expenses as `team approved_by` pairs, in id order.
fn approvals(run: &Finished) -> Vec<String> {
    run.rows_after("expenses")
        .iter()
        .map(|row| {
            let text = |i: usize| row[i].as_text().unwrap_or_default().to_owned();
            format!("{} {}", text(1), text(3))
        })
        .collect()
}

/// What a read-skew report showed, from the numbers its own queries returned (in order) and
/// from whether anyone waited or failed.
fn what_the_report_read(run: &Finished) -> &'static str {
    let reads: Vec<i64> = run
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            shared::EventKind::Result {
                actor,
                rows: Some(rows),
                ..
            } if actor == "report" => rows.rows.first()?.first()?.as_int(),
            _ => None,
        })
        .collect();
    if failed_with(run, "report", "40001") {
        return "report-40001";
    }
    if waited_for(run, "carol", "report") {
        return "carol-waits";
    }
    match reads.as_slice() {
        [1_000, 1_250] => "disagree",
        [1_000, 1_000] => "both-1000",
        [1_250, 1_250] => "both-1250",
        _ => "none of the choices",
    }
}

#[tokio::test]
async fn read_skew_reveals_what_each_variant_really_did() {
    for (variant, run, choice) in reveals("isolation/read-skew").await {
        assert_eq!(
            choice,
            what_the_report_read(&run),
            "{variant}: the answer is what the run did"
        );
    }
}

/// What two approvals that lock both teams came to, from the run alone: how many attempts a
/// deadlock (40P01) cancelled, whether bob was seen waiting for alice, and how many shared
/// expenses (one row per team) were approved.
fn what_the_lock_orders_did(run: &Finished) -> &'static str {
    let deadlocks = ["alice", "bob"]
        .iter()
        .filter(|who| failed_with(run, who, "40P01"))
        .count();
    let shared_approvals = approvals(run).len() / 2;
    // MariaDB's: one rolled back at once, with its own number.
    let rolled_back = ["alice", "bob"]
        .iter()
        .filter(|who| failed_with(run, who, "1213"))
        .count();
    if (rolled_back, shared_approvals) == (1, 2) {
        return "one-1213";
    }
    match (deadlocks, shared_approvals, waited_for(run, "bob", "alice")) {
        (1, 2, _) => "one-40p01",
        (0, 2, true) => "bob-waits",
        (2, 0, _) => "both-cancelled",
        _ => "none of the choices",
    }
}

#[tokio::test]
async fn deadlock_reveals_what_each_variant_really_did() {
    for (variant, run, choice) in reveals("isolation/deadlock").await {
        assert_eq!(
            choice,
            what_the_lock_orders_did(&run),
            "{variant}: the answer is what the run did"
        );
    }
}

/// How bob's approval ended under one of the fixes, from the run's errors, waits and the
/// expenses it left.
fn how_bobs_approval_ended(run: &Finished) -> &'static str {
    let approved = approvals(run);
    let approved: Vec<&str> = approved.iter().map(String::as_str).collect();
    let bob_40001 = failed_with(run, "bob", "40001");
    match (
        failed(run, "alice"),
        failed(run, "bob"),
        bob_40001,
        waited_for(run, "bob", "alice"),
        approved.as_slice(),
    ) {
        (true, false, _, _, ["design bob"]) => "alice-cancelled",
        // MariaDB's deadlock, with its own number (SQLSTATE 40001 too).
        (false, true, _, false, ["design alice"]) if failed_with(run, "bob", "1213") => "bob-1213",
        (false, true, true, false, ["design alice"]) => "bob-40001",
        (false, false, _, true, ["design alice"]) => "bob-waits",
        (false, false, _, _, ["design alice", "design bob"]) => "both-approved",
        _ => "none of the choices",
    }
}

#[tokio::test]
async fn approve_reveals_what_each_variant_really_did() {
    for (variant, run, choice) in reveals("isolation/approve").await {
        assert_eq!(
            choice,
            how_bobs_approval_ended(&run),
            "{variant}: the answer is what the run did"
        );
    }
}

/// What two approvals for two different teams came to, from the run's errors, waits and the
/// expenses it left per team.
fn what_two_teams_did(run: &Finished) -> &'static str {
    let approved = approvals(run);
    let approved: Vec<&str> = approved.iter().map(String::as_str).collect();
    match approved.as_slice() {
        ["design alice", "ops bob"] => {}
        _ if !approved.contains(&"ops bob") => return "bob-rejected",
        _ => return "none of the choices",
    }
    // On MariaDB the error's code is InnoDB's number: 1213, a deadlock it broke.
    let refused_in_a_deadlock = failed_with(run, "bob", "1213") && waited_for(run, "alice", "bob");
    match (
        failed(run, "alice"),
        failed(run, "bob"),
        failed_with(run, "bob", "40001"),
        waited_for(run, "bob", "alice"),
    ) {
        (false, true, true, _) => "bob-40001",
        (false, true, false, false) if refused_in_a_deadlock => "bob-1213",
        (false, false, _, true) => "bob-waits",
        (false, false, _, false) => "both-commit",
        _ => "none of the choices",
    }
}

#[tokio::test]
async fn false_positive_reveals_what_each_variant_really_did() {
    for (variant, run, choice) in reveals("isolation/false-positive").await {
        assert_eq!(
            choice,
            what_two_teams_did(&run),
            "{variant}: the answer is what the run did"
        );
    }
}

/// What bob did once he had the team's row lock, from the run's errors, waits and expenses.
fn what_bob_did_after_the_lock(run: &Finished) -> &'static str {
    let approved = approvals(run);
    let approved: Vec<&str> = approved.iter().map(String::as_str).collect();
    if failed_with(run, "bob", "40001") {
        return "bob-40001";
    }
    if !waited_for(run, "bob", "alice") {
        return "no-wait";
    }
    match approved.as_slice() {
        ["design alice"] => "bob-rejects",
        ["design alice", "design bob"] => "bob-overspends",
        _ => "none of the choices",
    }
}

#[tokio::test]
async fn row_lock_at_repeatable_read_reveals_what_each_variant_really_did() {
    for (variant, run, choice) in reveals("isolation/row-lock-at-repeatable-read").await {
        assert_eq!(
            choice,
            what_bob_did_after_the_lock(&run),
            "{variant}: the answer is what the run did"
        );
    }
}

/// What a SERIALIZABLE approver and a batch job came to, from the run's errors, waits and
/// expenses.
fn what_the_batch_job_did(run: &Finished) -> &'static str {
    let approved = approvals(run);
    let approved: Vec<&str> = approved.iter().map(String::as_str).collect();
    match (
        failed_with(run, "alice", "40001"),
        failed_with(run, "batch", "40001"),
        waited_for(run, "batch", "alice"),
        approved.as_slice(),
    ) {
        (false, true, false, ["design alice"]) => "batch-40001",
        (false, false, true, ["design alice"]) => "batch-waits",
        (false, false, true, ["design alice", "design batch"]) => "batch-waits-inserts",
        (false, false, false, ["design alice"])
            if failed_with(run, "batch", "1213") && waited_for(run, "alice", "batch") =>
        {
            "batch-1213"
        }
        (false, false, false, ["design alice", "design batch"]) => "both-commit",
        _ => "none of the choices",
    }
}

#[tokio::test]
async fn batch_job_reveals_what_each_variant_really_did() {
    for (variant, run, choice) in reveals("isolation/batch-job").await {
        assert_eq!(
            choice,
            what_the_batch_job_did(&run),
            "{variant}: the answer is what the run did"
        );
    }
}
