//! The outbox lab against the real PostgreSQL and the real Kafka-compatible broker, with the
//! relay, the notifier and the naive program as child processes that really die: each scenario's
//! transcript (exact where the tutorial's programs print the same lines every time), its ledger
//! against the scenario's constants, its verdict, and nothing left behind: no schema, session,
//! advisory lock, topic, consumer group or process.

mod common;

use common::{Finished, db_slots, engine, play};
use shared::{EventKind, Milestone, Value, VerdictKind};

/// Plays an outbox scenario and checks what every run must: it completes, and leaves nothing.
async fn outbox(scenario: &str, variant: &str) -> Finished {
    // Child processes and a broker client or three each: fewer runs beside it.
    let _slots = db_slots(2).await;
    let run = play(&engine().await, scenario, variant).await;
    common::completed_and_clean(run, (scenario, variant), common::inspector().await, true).await
}

/// The topic's messages after the run: `(partition, offset, key, type, event, copy)`.
fn messages(run: &Finished) -> Vec<Vec<Value>> {
    run.rows_after("messages")
}

/// The lines a lane printed, in order.
fn lines_of(run: &Finished, actor: &str) -> Vec<String> {
    run.events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Say { actor: Some(a), line } if a == actor => Some(line.clone()),
            _ => None,
        })
        .collect()
}

/// Whether `actor`'s process was killed at `point`.
fn crashed_at(run: &Finished, actor: &str, point: &str) -> bool {
    run.events
        .iter()
        .any(|e| matches!(&e.kind, EventKind::Crash { actor: a, point: p } if a == actor && p == point))
}

/// The figure `name` of the final ledger.
fn figure(run: &Finished, name: &str) -> i64 {
    run.rows_after("figures")
        .iter()
        .find(|r| r[0] == Value::from(name))
        .and_then(|r| r[1].as_int())
        .unwrap_or_else(|| panic!("no figure {name}"))
}

/// The milestones `actor`'s process reached, in order.
fn milestones_of(run: &common::Finished, actor: &str) -> Vec<Milestone> {
    run.events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Milestone { actor: a, milestone } if a == actor => Some(milestone.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn committing_first_and_dying_loses_the_event() {
    let run = outbox("outbox/dual-write", "commit-first").await;
    assert_eq!(run.transcript(), ["crash at after_commit"]);
    assert!(crashed_at(&run, "payments", "after_commit"));
    assert_eq!(run.rows_after("payments"), vec![row!["pay_001", 2500, "captured"]]);
    assert!(messages(&run).is_empty(), "no event left");
    assert_eq!(run.verdict().kind, VerdictKind::Reproduced);
}

#[tokio::test]
async fn publishing_first_and_dying_leaves_a_phantom_event() {
    let run = outbox("outbox/dual-write", "publish-first").await;
    assert_eq!(
        run.transcript(),
        [
            "crash at before_commit",
            "   id    |   status   ",
            "---------+------------",
            " pay_001 | captured",
            " pay_002 | authorized",
            "(2 rows)",
            "",
            r#"pay_002 {"type": "payment.captured", "payment_id": "pay_002", "data": {}}"#,
            "Processed a total of 1 messages",
        ]
    );
    assert!(crashed_at(&run, "payments", "before_commit"));
    assert_eq!(
        run.rows_after("payments"),
        vec![row!["pay_001", 2500, "captured"], row!["pay_002", 2500, "authorized"]],
        "the capture rolled back; pay_001 is the first run's, staged"
    );
    assert_eq!(
        messages(&run),
        vec![vec![
            Value::Int(0),
            Value::Int(0),
            Value::from("pay_002"),
            Value::from("payment.captured"),
            Value::Null,
            Value::from("no event id"),
        ]],
        "pay_002 lands on p0, with no event id"
    );
    assert_eq!(run.verdict().kind, VerdictKind::Reproduced);
}

#[tokio::test]
async fn the_change_and_its_event_commit_together() {
    let run = outbox("outbox/write-events", "three-events").await;
    assert_eq!(
        run.transcript(),
        [
            "pay_001: authorize recorded",
            "pay_001: capture recorded",
            "pay_002: authorize recorded",
            " id | aggregate_id |     event_type     | published_at ",
            "----+--------------+--------------------+--------------",
            "  1 | pay_001      | payment.authorized | ",
            "  2 | pay_001      | payment.captured   | ",
            "  3 | pay_002      | payment.authorized | ",
            "(3 rows)",
            "",
        ]
    );
    assert_eq!(
        run.rows_after("payments"),
        vec![row!["pay_001", 2500, "captured"], row!["pay_002", 4000, "authorized"]]
    );
    assert!(messages(&run).is_empty(), "nothing reached the broker");
    assert_eq!(run.verdict().kind, VerdictKind::Prevented);
}

#[tokio::test]
async fn a_refused_capture_rolls_back_its_event() {
    let run = outbox("outbox/write-events", "guard").await;
    let transcript = run.transcript();
    assert_eq!(transcript[3], "ValueError: pay_001 is not authorized");
    assert_eq!(run.rows_after("outbox").len(), 3, "no fourth event");
    assert_eq!(figure(&run, "outbox events"), 3);
    assert_eq!(run.verdict().kind, VerdictKind::Prevented);
}

#[tokio::test]
async fn a_cursor_relay_never_reads_the_late_commit() {
    let run = outbox("outbox/cursor-gap", "cursor").await;
    assert_eq!(
        run.transcript(),
        [
            "slow transaction took id 4, commits in 2s",
            "fast transaction committed id 5",
            "cursor relay reads ids [5], moves last_seen to 5",
            "slow transaction committed id 4",
            "next poll reads ids []: id 4 is never published",
        ]
    );
    let verdict = run.verdict();
    assert_eq!(verdict.kind, VerdictKind::Reproduced);
    let holds = |start: &str| {
        verdict
            .checks
            .iter()
            .find(|c| c.rule.starts_with(start))
            .map(|c| c.holds)
            .unwrap_or_else(|| panic!("no check {start}: {verdict:?}"))
    };
    assert!(!holds("the cursor reads id 4"));
    assert!(holds("polling published_at IS NULL reads id 4"));
    assert_eq!(run.rows_after("outbox").len(), 3, "the demo's two rows are cleaned up");
}

#[tokio::test]
async fn a_relay_killed_after_producing_publishes_the_batch_twice() {
    relay_killed_after_producing(outbox("outbox/relay-crash", "after-produce").await);
}

/// On PostgreSQL 18.6, the tutorial's version: the relay and its restart (child processes) reach
/// the run's server, and the run's header says which version it played on.
#[tokio::test]
async fn on_postgres_18_a_relay_killed_after_producing_publishes_the_batch_twice() {
    let _slots = db_slots(2).await;
    let (run, conn) = common::versions::played_on_18("outbox/relay-crash", "after-produce").await;
    relay_killed_after_producing(
        common::completed_and_clean(run, ("outbox/relay-crash", "after-produce"), conn, true).await,
    );
}

fn relay_killed_after_producing(run: Finished) {
    assert_eq!(
        run.transcript(),
        [
            "active",
            "crash at after_produce",
            " unpublished ",
            "-------------",
            "           3",
            "(1 row)",
            "",
            "active",
            "published 3: payment.authorized pay_001, payment.captured pay_001, payment.authorized pay_002",
            "payments:0:2",
            "payments:1:4",
            "payments:2:0",
        ]
    );
    assert!(crashed_at(&run, "relay", "after_produce"));
    let topic = messages(&run);
    let placed: Vec<(i64, i64, String, String)> = topic
        .iter()
        .map(|r| {
            (
                r[0].as_int().expect("partition"),
                r[1].as_int().expect("offset"),
                r[2].to_string(),
                r[5].to_string(),
            )
        })
        .collect();
    let auth1 = (1, 0, "pay_001".to_owned(), "first".to_owned());
    assert_eq!(
        placed,
        [
            (0, 0, "pay_002".into(), "first".into()),
            (0, 1, "pay_002".into(), "repeat".into()),
            auth1,
            (1, 1, "pay_001".into(), "first".into()),
            (1, 2, "pay_001".into(), "repeat".into()),
            (1, 3, "pay_001".into(), "repeat".into()),
        ]
    );
    // The repeats carry the same event ids as the first copies.
    assert_eq!(topic[2][4], topic[4][4]);
    assert_eq!(topic[3][4], topic[5][4]);
    assert!(run.rows_after("outbox").iter().all(|r| r[4] == Value::from("yes")));
    assert_eq!(run.verdict().kind, VerdictKind::Reproduced);
}

/// The notifier's six lines of the step-5 topic, as the tutorial's runs print them; which
/// partition comes first is the consumer's choice.
fn assert_partition_order(lines: &[String], expected: &[&str]) {
    assert_eq!(lines.len(), expected.len(), "{lines:?}");
    for partition in ["p0@", "p1@"] {
        let ours: Vec<&str> = lines
            .iter()
            .map(String::as_str)
            .filter(|l| l.starts_with(partition))
            .collect();
        let theirs: Vec<&str> = expected.iter().copied().filter(|l| l.starts_with(partition)).collect();
        assert_eq!(ours, theirs, "{partition} in order");
    }
}

#[tokio::test]
async fn without_an_inbox_the_repeated_capture_sends_a_second_receipt() {
    let run = outbox("outbox/consumer", "no-dedup").await;
    assert_partition_order(
        &lines_of(&run, "notifier"),
        &[
            "p1@0 payment.authorized pay_001: status updated",
            "p1@1 payment.captured pay_001: receipt sent",
            "p1@2 payment.authorized pay_001: status updated",
            "p1@3 payment.captured pay_001: receipt sent",
            "p0@0 payment.authorized pay_002: status updated",
            "p0@1 payment.authorized pay_002: status updated",
        ],
    );
    assert_eq!(
        lines_of(&run, "psql"),
        [
            " payment_id | receipts ",
            "------------+----------",
            " pay_001    |        2",
            "(1 row)",
            "",
        ]
    );
    assert_eq!(run.rows_after("receipts_sent"), vec![row!["pay_001", 2]]);
    assert!(run.rows_after("processed_events").is_empty(), "DEDUPE=0 claims nothing");
    assert_eq!(run.verdict().kind, VerdictKind::Reproduced);
}

#[tokio::test]
async fn the_inbox_skips_every_repeat() {
    let run = outbox("outbox/consumer", "dedup").await;
    assert_partition_order(
        &lines_of(&run, "notifier"),
        &[
            "p0@0 payment.authorized pay_002: status updated",
            "p0@1 payment.authorized pay_002: duplicate, skipped",
            "p1@0 payment.authorized pay_001: status updated",
            "p1@1 payment.captured pay_001: receipt sent",
            "p1@2 payment.authorized pay_001: duplicate, skipped",
            "p1@3 payment.captured pay_001: duplicate, skipped",
        ],
    );
    assert_eq!(run.rows_after("receipts_sent"), vec![row!["pay_001", 1]]);
    assert_eq!(run.rows_after("processed_events").len(), 3);
    assert_eq!(
        run.rows_after("payment_status"),
        vec![row!["pay_001", "captured"], row!["pay_002", "authorized"]],
        "the projection matches the payments"
    );
    assert_eq!(run.verdict().kind, VerdictKind::Prevented);
}

#[tokio::test]
async fn a_notifier_killed_before_its_offset_commit_gets_the_message_again_and_skips_it() {
    let run = outbox("outbox/consumer-crash", "static-member").await;
    let lines = lines_of(&run, "notifier");
    assert_eq!(
        lines,
        [
            "crash at before_offset_commit",
            "p0@2 payment.authorized pay_004: duplicate, skipped",
            "p0@3 payment.captured pay_004: receipt sent",
        ]
    );
    assert!(crashed_at(&run, "notifier", "before_offset_commit"));
    assert_eq!(figure(&run, "events processed once"), 5);
    assert_eq!(
        run.rows_after("receipts_sent"),
        vec![row!["pay_001", 1], row!["pay_004", 1]]
    );
    assert_eq!(run.verdict().kind, VerdictKind::Prevented);
}

#[tokio::test]
async fn waiting_for_a_dead_member_to_expire_ends_within_its_bound() {
    let started = std::time::Instant::now();
    let run = outbox("outbox/consumer-crash", "wait-for-expiry").await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(90),
        "bounded, never hanging"
    );
    let lines = lines_of(&run, "notifier");
    assert_eq!(lines[0], "crash at before_offset_commit");
    // The test broker never expires a member that died without leaving; Apache Kafka does
    // (set RACELAB_BROKER_EXPIRES_MEMBERS=1 when testing against it).
    let expires = std::env::var("RACELAB_BROKER_EXPIRES_MEMBERS").is_ok_and(|v| v == "1");
    let verdict = run.verdict();
    if expires {
        assert_eq!(
            lines[1..],
            [
                "p0@2 payment.authorized pay_004: duplicate, skipped",
                "p0@3 payment.captured pay_004: receipt sent"
            ]
        );
        assert_eq!(verdict.kind, VerdictKind::Prevented);
    } else {
        assert_eq!(lines.len(), 1, "the new notifier never got the partitions: {lines:?}");
        let said = run.events.iter().any(|e| {
            matches!(&e.kind, EventKind::Note { actor, text } if actor == "notifier" && text.contains("has not expired the member"))
        });
        assert!(said, "the page says why the new notifier waited");
        assert_eq!(verdict.kind, VerdictKind::Reproduced);
        assert_eq!(figure(&run, "events processed once"), 4, "p0@3 was never read");
    }
}

#[tokio::test]
async fn two_active_relays_publish_a_payments_capture_before_its_authorization() {
    let run = outbox("outbox/two-relays", "no-lock").await;
    assert_eq!(
        lines_of(&run, "notifier"),
        [
            "p2@0 payment.captured pay_005: receipt sent",
            "p2@1 payment.authorized pay_005: status updated",
        ]
    );
    assert_eq!(lines_of(&run, "relay B"), ["published 1: payment.captured pay_005"]);
    assert_eq!(lines_of(&run, "relay A"), ["published 1: payment.authorized pay_005"]);
    assert_eq!(run.rows_after("payments"), vec![row!["pay_005", 3000, "captured"]]);
    assert_eq!(run.rows_after("payment_status"), vec![row!["pay_005", "authorized"]]);
    assert_eq!(run.verdict().kind, VerdictKind::Reproduced);
}

#[tokio::test]
async fn the_advisory_lock_keeps_one_relay_active_and_the_order_intact() {
    let run = outbox("outbox/two-relays", "advisory-lock").await;
    assert_eq!(
        lines_of(&run, "notifier"),
        [
            "p2@0 payment.authorized pay_006: status updated",
            "p2@1 payment.captured pay_006: receipt sent",
        ]
    );
    assert_eq!(
        lines_of(&run, "relay A"),
        [
            "active",
            "published 1: payment.authorized pay_006",
            "published 1: payment.captured pay_006",
        ]
    );
    let standby = lines_of(&run, "relay B");
    assert!(!standby.is_empty(), "relay B tried");
    assert!(
        standby.iter().all(|l| l == "standby: another relay is active"),
        "relay B never became active: {standby:?}"
    );
    // What the choreography waited for, as data on the run's stream: one milestone per line.
    assert_eq!(
        milestones_of(&run, "relay A"),
        [
            Milestone::Active,
            Milestone::Published { count: 1 },
            Milestone::Published { count: 1 }
        ]
    );
    assert_eq!(milestones_of(&run, "relay B"), vec![Milestone::Standby; standby.len()]);
    assert_eq!(
        milestones_of(&run, "notifier"),
        [
            Milestone::Committed {
                partition: 2,
                offset: 0
            },
            Milestone::Committed {
                partition: 2,
                offset: 1
            }
        ]
    );
    assert_eq!(run.rows_after("payment_status"), vec![row!["pay_006", "captured"]]);
    assert_eq!(run.verdict().kind, VerdictKind::Prevented);
}

#[tokio::test]
async fn the_standby_takes_over_when_the_active_relay_is_killed() {
    let run = outbox("outbox/failover", "kill-active").await;
    assert!(crashed_at(&run, "relay A", "docker kill"));
    assert_eq!(
        lines_of(&run, "relay B"),
        [
            "standby: another relay is active",
            "active",
            "published 1: payment.authorized pay_007",
        ]
    );
    assert_eq!(
        lines_of(&run, "notifier"),
        ["p1@0 payment.authorized pay_007: status updated"]
    );
    assert_eq!(run.verdict().kind, VerdictKind::Prevented);
}

#[tokio::test]
async fn a_thousand_payments_under_random_crashes_still_add_up() {
    // Eight writers, two relays and a notifier: this run holds many connections.
    let _slots = db_slots(3).await;
    let run = outbox("outbox/chaos", "1000").await;
    let verify = lines_of(&run, "verify");
    assert_eq!(verify.len(), 7, "{verify:?}");
    assert_eq!(verify[0], "payments captured:          1000");
    assert_eq!(verify[1], "outbox events:              2000 (0 unpublished)");
    // Counted from the topic itself: the messages whose event came before.
    let duplicates = messages(&run).iter().filter(|m| m[5] == Value::from("repeat")).count() as i64;
    assert_eq!(
        verify[2],
        format!(
            "messages on the topic:      {} ({duplicates} duplicates)",
            2000 + duplicates
        )
    );
    assert_eq!(verify[3], "events processed once:      2000");
    assert_eq!(verify[4], "receipts sent:              1000 for 1000 payments");
    assert_eq!(verify[5], "projection shows captured:  1000");
    let stale: usize = verify[6]
        .strip_prefix("payments with an 'authorized' arriving after 'captured': ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", verify[6]));
    assert!(
        stale as i64 <= duplicates / 2,
        "{stale} stale for {duplicates} duplicates"
    );
    assert_eq!(lines_of(&run, "loadgen"), ["1000 payments authorized and captured"]);
    let verdict = run.verdict();
    assert!(
        verdict.checks.iter().all(|c| c.holds),
        "every invariant holds: {verdict:?}"
    );
    assert_eq!(verdict.kind, VerdictKind::Prevented);
    assert_eq!(
        run.rows_after("receipts_sent").len(),
        1000,
        "one receipt row per payment"
    );
}

#[tokio::test]
async fn the_lag_query_retention_and_the_partial_index() {
    let run = outbox("outbox/monitor", "ops").await;
    let transcript = run.transcript();
    assert_eq!(
        transcript[..7],
        [
            "UPDATE 500",
            " unpublished | oldest_unpublished_age ",
            "-------------+------------------------",
            "           0 | 00:00:00",
            "(1 row)",
            "",
            "DELETE 500",
        ]
    );
    let plan = &transcript[7..];
    assert!(plan[0].trim() == "QUERY PLAN", "{plan:?}");
    assert!(plan.iter().any(|l| l.contains("outbox_unpublished")), "{plan:?}");
    assert!(!plan.iter().any(|l| l.contains("Seq Scan")), "{plan:?}");
    assert_eq!(figure(&run, "outbox events"), 1500);
    assert_eq!(run.verdict().kind, VerdictKind::Prevented);
}

/// The messages keyed `payment`, in the order the topic holds them: their event types.
fn types_on_topic_for(run: &Finished, payment: &str) -> Vec<String> {
    let mut rows: Vec<(i64, i64, String)> = messages(run)
        .iter()
        .filter(|r| r[2] == Value::from(payment))
        .map(|r| {
            (
                r[0].as_int().expect("partition"),
                r[1].as_int().expect("offset"),
                r[3].to_string(),
            )
        })
        .collect();
    rows.sort();
    rows.into_iter().map(|(_, _, kind)| kind).collect()
}

/// What a dual-write run did to the payment it wrote, from its ledgers alone: the payment that
/// is new since the ledger before, its final status, and whether the topic announced a capture.
fn what_the_crash_left(run: &Finished) -> &'static str {
    let before = run.ledger(shared::Moment::Before);
    let existed: Vec<&Value> = before
        .table("payments")
        .expect("payments before")
        .rows
        .iter()
        .map(|r| &r[0])
        .collect();
    let after = run.rows_after("payments");
    let written: Vec<&Vec<Value>> = after.iter().filter(|r| !existed.contains(&&r[0])).collect();
    let [payment] = written.as_slice() else {
        return "none of the choices";
    };
    let captured = payment[2] == Value::from("captured");
    let announced = types_on_topic_for(run, &payment[0].to_string())
        .iter()
        .any(|t| t == "payment.captured");
    match (captured, announced) {
        (true, false) => "lost-event",
        (false, true) => "phantom-event",
        (false, false) => "neither",
        (true, true) => "both",
    }
}

#[tokio::test]
async fn dual_write_reveals_what_each_variant_really_did() {
    for variant in ["commit-first", "publish-first"] {
        let run = outbox("outbox/dual-write", variant).await;
        assert_eq!(
            common::revealed(&run, "outbox/dual-write", variant),
            what_the_crash_left(&run),
            "{variant}: the answer is what the run did"
        );
    }
}

/// What reached the notifier in a two-relays run, from the payment's messages on the topic and
/// the relays' own lines.
fn what_the_relays_published(run: &Finished) -> &'static str {
    let payments = run.rows_after("payments");
    let [payment] = payments.as_slice() else {
        return "none of the choices";
    };
    let types = types_on_topic_for(run, &payment[0].to_string());
    let captures = types.iter().filter(|t| *t == "payment.captured").count();
    let b_published = lines_of(run, "relay B").iter().any(|l| l.starts_with("published"));
    match (types.as_slice(), captures, b_published) {
        (_, 2.., _) => "capture-twice",
        ([first, second], 1, _) if first == "payment.captured" && second == "payment.authorized" => "capture-first",
        ([first, second], 1, true) if first == "payment.authorized" && second == "payment.captured" => "b-waits",
        ([first, second], 1, false) if first == "payment.authorized" && second == "payment.captured" => {
            "a-publishes-both"
        }
        _ => "none of the choices",
    }
}

#[tokio::test]
async fn two_relays_reveals_what_each_variant_really_did() {
    for variant in ["no-lock", "advisory-lock"] {
        let run = outbox("outbox/two-relays", variant).await;
        assert_eq!(
            common::revealed(&run, "outbox/two-relays", variant),
            what_the_relays_published(&run),
            "{variant}: the answer is what the run did"
        );
    }
}

/// How many receipts a consumer run sent for the capture, and how, from the notifier's lines
/// and tables: every message handled or only some, repeats skipped or acted on, or a failure.
fn what_the_notifier_did(run: &Finished) -> &'static str {
    let failed = run.events.iter().any(
        |e| matches!(&e.kind, EventKind::Error { actor, .. } | EventKind::Crash { actor, .. } if actor == "notifier"),
    );
    let handled: Vec<String> = lines_of(run, "notifier")
        .into_iter()
        .filter(|l| l.starts_with('p') && l.contains('@'))
        .collect();
    let skipped = handled.iter().filter(|l| l.ends_with("duplicate, skipped")).count();
    let on_topic = messages(run).len();
    let receipts: i64 = run
        .rows_after("receipts_sent")
        .iter()
        .filter_map(|r| r[1].as_int())
        .sum();
    match (failed, handled.len() == on_topic, skipped, receipts) {
        (true, _, _, _) => "notifier-fails",
        (false, false, 0, 1) => "broker-dedupes",
        (false, true, 0, 2) => "two-receipts",
        (false, true, 1.., 1) => "repeats-skipped",
        _ => "none of the choices",
    }
}

#[tokio::test]
async fn consumer_reveals_what_each_variant_really_did() {
    for variant in ["no-dedup", "dedup"] {
        let run = outbox("outbox/consumer", variant).await;
        assert_eq!(
            common::revealed(&run, "outbox/consumer", variant),
            what_the_notifier_did(&run),
            "{variant}: the answer is what the run did"
        );
    }
}
