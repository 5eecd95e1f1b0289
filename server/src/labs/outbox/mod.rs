//! The transactional-outbox lab: a payment service, a relay and a notifier, on real PostgreSQL
//! (two databases: `payments` and the notifier's own) and a real Kafka-compatible broker (topic
//! `payments`, three partitions, keys placed by librdkafka's default partitioner).
//!
//! Scenarios (one file each), in the tutorial's order:
//! - [`dual_write`]: the payment committed and the event published as two writes; a process
//!   that dies between them loses the event or publishes a phantom.
//! - [`write_events`]: the outbox: the change and its event in one transaction.
//! - [`cursor_gap`]: a relay that remembers the last id it read skips a transaction that
//!   commits late.
//! - [`relay_crash`]: a relay killed after producing: the batch is published again.
//! - [`consumer`]: the notifier with and without its inbox: two receipts, or one.
//! - [`consumer_crash`]: a notifier killed between its database commit and its offset commit.
//! - [`two_relays`]: two relays at once reorder a payment's events; the advisory lock keeps one
//!   active and the other on standby.
//! - [`failover`]: the active relay is killed; the standby takes over.
//! - [`chaos`]: a thousand payments with relays and the notifier crashing at random.
//! - [`monitor`]: the lag query, retention, and the partial index under the relay's query.
//!
//! The parts: [`writer`] (the payment service), [`relay`] and [`notifier`] (child processes
//! that can really die: `racelab actor relay`, `racelab actor notifier`), [`message`] (the
//! messages, byte for byte), [`figures`] (the six lines the tutorial's `verify.py` prints, and
//! the invariants behind them). Below: the lab's sandbox, its ledger, and the verdict.

pub mod chaos;
pub mod consumer;
pub mod consumer_crash;
pub mod cursor_gap;
pub mod dual_write;
pub mod failover;
pub mod figures;
pub mod invariants;
pub mod message;
pub mod monitor;
pub mod notifier;
pub mod relay;
pub mod relay_crash;
pub mod two_relays;
pub mod write_events;
pub mod writer;

use super::LabDef;
use crate::engine::{Run, RunError, TableQuery};
use crate::sandbox::Spec;
use figures::Figures;
use shared::{Check, EventKind, Ledger, Milestone, Moment, Service, Table, Value, Verdict};

/// The lab as the catalog lists it.
pub static LAB: LabDef = LabDef {
    id: "outbox",
    title: "The transactional outbox: a payment, its event, a relay and a notifier",
    services: &[Service::Postgres, Service::Kafka],
    scenarios: &[
        &dual_write::SCENARIO,
        &write_events::SCENARIO,
        &cursor_gap::SCENARIO,
        &relay_crash::SCENARIO,
        &consumer::SCENARIO,
        &consumer_crash::SCENARIO,
        &two_relays::SCENARIO,
        &failover::SCENARIO,
        &chaos::SCENARIO,
        &monitor::SCENARIO,
    ],
};

/// The tutorial's topic, partitions, consumer group and relay lock key.
pub const TOPIC: &str = "payments";
pub const PARTITIONS: i32 = 3;
pub const GROUP: &str = "notifier";
pub const LOCK_KEY: i64 = 4200;

/// The payment service's database and the notifier's, and the topic.
pub const SANDBOX: Spec = Spec {
    schemas: &[
        ("payments", include_str!("payments.sql")),
        ("notifier", include_str!("notifier.sql")),
    ],
    redis: false,
    topics: &[(TOPIC, PARTITIONS)],
};

/// The payments database's tables, as the ledger shows them.
const PAYMENTS: [TableQuery; 2] = [
    TableQuery {
        name: "payments",
        schema: "payments",
        sql: "SELECT id, amount_cents, status FROM payments ORDER BY id",
        key_columns: 1,
    },
    TableQuery {
        name: "outbox",
        schema: "payments",
        sql: "SELECT id, aggregate_id, event_type, left(event_id::text, 8) AS event,
                     CASE WHEN published_at IS NULL THEN 'no' ELSE 'yes' END AS published
              FROM outbox ORDER BY id",
        key_columns: 1,
    },
];

/// The notifier's tables.
const NOTIFIER: [TableQuery; 3] = [
    TableQuery {
        name: "processed_events",
        schema: "notifier",
        sql: "SELECT left(event_id::text, 8) AS event FROM processed_events ORDER BY processed_at, event_id",
        key_columns: 1,
    },
    TableQuery {
        name: "receipts_sent",
        schema: "notifier",
        sql: "SELECT payment_id, count(*) AS receipts FROM receipts_sent GROUP BY payment_id ORDER BY payment_id",
        key_columns: 1,
    },
    TableQuery {
        name: "payment_status",
        schema: "notifier",
        sql: "SELECT payment_id, status FROM payment_status ORDER BY payment_id",
        key_columns: 1,
    },
];

/// The ledger now: the payments database, the topic's messages (each marked as the first copy
/// of its event or a repeat), the notifier's database, and the tutorial's six figures.
pub async fn ledger(run: &Run) -> Result<Ledger, RunError> {
    let mut ledger = run.snapshot(&PAYMENTS).await?;
    let topic = run.topic_table("messages", TOPIC).await?;
    ledger.tables.push(messages(&topic));
    ledger.tables.extend(run.snapshot(&NOTIFIER).await?.tables);
    let figures = Figures::of(run, &topic).await?;
    ledger.tables.push(figures.table());
    Ok(ledger)
}

/// The topic's messages as the ledger shows them: where, the key, the event's type and id, and
/// whether it is the first copy of its event on the topic or a repeat (the naive program's
/// message has no event id).
pub fn messages(topic: &Table) -> Table {
    let mut seen = std::collections::HashSet::new();
    let rows = topic
        .rows
        .iter()
        .map(|row| {
            let value = row.get(3).and_then(Value::as_text).unwrap_or_default();
            let read = message::read(value);
            let full = read.as_ref().and_then(|m| m.event_id.clone());
            let copy = match &full {
                Some(id) if !seen.insert(id.clone()) => "repeat",
                Some(_) => "first",
                None => "no event id",
            };
            let event = full.map(|id| id.chars().take(8).collect::<String>());
            vec![
                row.first().cloned().unwrap_or(Value::Null),
                row.get(1).cloned().unwrap_or(Value::Null),
                row.get(2).cloned().unwrap_or(Value::Null),
                read.map_or(Value::Null, |m| Value::Text(m.event_type)),
                event.map_or(Value::Null, Value::Text),
                Value::from(copy),
            ]
        })
        .collect();
    Table {
        name: "messages".into(),
        columns: ["partition", "offset", "key", "type", "event", "copy"]
            .iter()
            .map(|c| (*c).to_owned())
            .collect(),
        key_columns: 2,
        rows,
    }
}

/// Emits the ledger before, after, what a correct system holds (`expected`, the six figures),
/// and the tutorial's figures where its run printed some; then the verdict from `checks`.
pub fn finish(run: &Run, before: Ledger, after: Ledger, expected: &Figures, judged: Judged, tutorial: Option<Ledger>) {
    run.emit(EventKind::Ledger {
        moment: Moment::Before,
        ledger: before,
    });
    run.emit(EventKind::Ledger {
        moment: Moment::After,
        ledger: after,
    });
    run.emit(EventKind::Ledger {
        moment: Moment::Expected,
        ledger: Ledger {
            tables: vec![expected.table()],
        },
    });
    if let Some(reference) = tutorial {
        run.emit(EventKind::Ledger {
            moment: Moment::Reference,
            ledger: reference,
        });
    }
    run.verdict(Verdict::judge(judged.checks, judged.headline, judged.how));
}

/// A verdict's parts: the checks, the headline, and why it came out so.
pub struct Judged {
    pub checks: Vec<Check>,
    pub headline: String,
    pub how: &'static str,
}

/// How a scenario is judged: what a correct system's figures are, which per-payment rules apply,
/// its own checks, its two headlines (all held, something broke), why, and the tutorial's own
/// figures where its run printed some.
pub struct Judging<'a> {
    pub expected: Figures,
    pub scope: invariants::Scope<'a>,
    pub extra: Vec<Check>,
    pub headlines: (&'a str, &'a str),
    pub how: &'static str,
    pub tutorial: Option<Ledger>,
}

/// Reads the ledger after the run and emits everything: the ledgers, and a verdict from the
/// figures against `expected`, the per-payment invariants in scope, and the scenario's own checks.
pub async fn judge(run: &Run, before: Ledger, judging: Judging<'_>) -> Result<Ledger, RunError> {
    let after = ledger(run).await?;
    let actual = Figures::from_table(after.table(figures::TABLE));
    let topic = run.topic_table("messages", TOPIC).await?;
    let state = invariants::state(run, &topic).await?;
    let mut checks = judging.expected.checks(&actual);
    checks.extend(invariants::checks(&state, judging.scope));
    checks.extend(judging.extra);
    let headline = if checks.iter().all(|c| c.holds) {
        judging.headlines.0
    } else {
        judging.headlines.1
    };
    finish(
        run,
        before,
        after.clone(),
        &judging.expected,
        Judged {
            checks,
            headline: headline.to_owned(),
            how: judging.how,
        },
        judging.tutorial,
    );
    Ok(after)
}

/// The stage the tutorial's step 3 leaves, set without being drawn (a scenario that starts
/// from it shows only its own steps): pay_001 captured for 25.00, pay_002 authorized for 40.00,
/// and their three events in the outbox, unpublished, ids 1 to 3.
pub async fn stage_three_events(run: &Run) -> Result<(), RunError> {
    run.setup(
        "INSERT INTO payments (id, amount_cents, currency, status) VALUES
             ('pay_001', 2500, 'USD', 'captured'), ('pay_002', 4000, 'USD', 'authorized');
         INSERT INTO outbox (aggregate_id, event_type, payload) VALUES
             ('pay_001', 'payment.authorized', '{\"amount_cents\": 2500, \"currency\": \"USD\"}'),
             ('pay_001', 'payment.captured', '{\"amount_cents\": 2500, \"currency\": \"USD\"}'),
             ('pay_002', 'payment.authorized', '{\"amount_cents\": 4000, \"currency\": \"USD\"}')",
    )
    .await
}

/// The stage step 5 leaves: [`stage_three_events`], published, and each of the three events on
/// the topic twice (the batch, then the batch again after the relay's crash): six messages,
/// p0 = [pay_002 authorized × 2], p1 = [pay_001 authorized, captured, authorized, captured].
pub async fn stage_published_twice(run: &Run) -> Result<(), RunError> {
    stage_three_events(run).await?;
    let rows = run.check(relay::FETCH, &[]).await?;
    let messages: Vec<(String, String)> = rows
        .rows
        .iter()
        .filter_map(|r| relay::Row::of(r))
        .map(|r| (r.aggregate_id.clone(), r.message()))
        .collect();
    let producer = run.quiet_producer("stage", true)?;
    producer.send_all(TOPIC, &messages).await?;
    producer.send_all(TOPIC, &messages).await?;
    run.setup("UPDATE outbox SET published_at = now()").await
}

/// Waits (at most 30 s) until child `actor` reaches a milestone that `wanted` accepts. The
/// choreography waits for what a process did, never for its wording (which is the tutorial's).
pub async fn reached(
    actor: &mut crate::engine::ChildActor,
    mut wanted: impl FnMut(&Milestone) -> bool,
) -> Result<(), RunError> {
    actor
        .wait_for(
            std::time::Duration::from_secs(30),
            |e| matches!(e, EventKind::Milestone { milestone, .. } if wanted(milestone)),
        )
        .await
        .map(|_| ())
}
