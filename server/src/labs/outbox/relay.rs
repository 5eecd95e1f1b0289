//! The relay, `racelab actor relay`: it moves events from the outbox to the broker, as the
//! tutorial's `relay.py` does.
//!
//! With single-active on (the default), it first takes a session advisory lock (the tutorial's
//! key 4200, in the run's lock space) on its own connection, and while another relay holds it,
//! prints `standby: another relay is active` and tries again every 2 s; once it has the lock,
//! `active` (without single-active it takes no lock and says neither). Then, in a loop, one
//! transaction per batch:
//! 1. `SELECT … FROM outbox WHERE published_at IS NULL ORDER BY id LIMIT 100 FOR UPDATE SKIP
//!    LOCKED` (nothing to do: commit the empty transaction, sleep 0.5 s);
//! 2. with a hold (the tutorial's `HOLD_SECONDS`), sleep with the rows locked;
//! 3. produce every row (key: the payment, value: the event) on an idempotent producer, then
//!    wait for every delivery report: a failure rolls back and the process exits, rows unpublished;
//! 4. the crash point `after_produce` (with `CRASH_RATE`, it fires on that share of batches);
//! 5. `UPDATE outbox SET published_at = now()` for the batch, commit, and print
//!    `published 3: payment.authorized pay_001, payment.captured pay_001, …` (the first five).
//!
//! Marking rows only after the broker confirmed them is what makes delivery at-least-once: a
//! crash between 3 and 5 rolls the marks back, frees the lock, and the next relay publishes the
//! batch again, as a new producer whose idempotence cannot recognise it.
//!
//! Its idle polls are not drawn (they would be six cards a second); a batch it publishes is.

use super::{LOCK_KEY, TOPIC, message};
use crate::engine::{ChildContext, ChildKind, Lane, Level, PgActor, Producer, Run, RunError};
use serde::{Deserialize, Serialize};
use shared::event::Rows;
use shared::{Milestone, Service, Value};
use std::time::Duration;

/// The relay's settings: the tutorial's environment switches.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Switches {
    /// `SINGLE_ACTIVE=1`: take the advisory lock before working.
    pub single_active: bool,
    /// `HOLD_SECONDS`, in milliseconds: how long a fetched batch's rows stay locked before they
    /// are produced.
    pub hold_ms: u64,
    /// `CRASH_AT=after_produce` with `CRASH_RATE`: the share of batches after which it dies.
    pub crash_after_produce: Option<f64>,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            single_active: true,
            hold_ms: 0,
            crash_after_produce: None,
        }
    }
}

/// Rows per batch.
pub const BATCH_SIZE: i64 = 100;
/// How long an idle relay sleeps between polls, and a standby between tries for the lock.
pub const IDLE: Duration = Duration::from_millis(500);
pub const STANDBY_RETRY: Duration = Duration::from_secs(2);

/// The relay's batch query, exactly the tutorial's.
pub const FETCH: &str = "SELECT id, event_id, aggregate_id, event_type, payload, created_at FROM outbox WHERE published_at IS NULL ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED";

/// `racelab actor relay`.
pub static RELAY: ChildKind = ChildKind {
    name: "relay",
    run: |context| Box::pin(relay(context)),
};

/// Starts a relay as lane `name` with `switches`.
pub async fn start(run: &Run, name: &str, switches: &Switches) -> Result<crate::engine::ChildActor, RunError> {
    run.process(name, RELAY.name, to_args(switches)?).await
}

/// As [`start`], for the chaos test: counted by the scenario, not drawn.
pub async fn start_muted(run: &Run, name: &str, switches: &Switches) -> Result<crate::engine::ChildActor, RunError> {
    run.muted_process(name, RELAY.name, to_args(switches)?).await
}

fn to_args(switches: &Switches) -> Result<serde_json::Value, RunError> {
    serde_json::to_value(switches).map_err(|e| RunError::Other(format!("relay switches: {e}")))
}

async fn relay(context: &ChildContext) -> Result<(), RunError> {
    let switches: Switches =
        serde_json::from_value(context.args.clone()).map_err(|e| RunError::Other(format!("relay switches: {e}")))?;
    let lane = &context.lane;
    let producer = Producer::new(lane.clone(), &context.brokers, &context.sandbox, true)?;
    let session = context.quiet_session(Some("payments"), Level::Autocommit).await?;
    if switches.single_active {
        let lock = format!("SELECT pg_try_advisory_lock({}, {LOCK_KEY})", context.lock_space());
        loop {
            let got = session.query(&lock, &[]).await?;
            let free = got.rows.first().and_then(|r| r.first()) == Some(&Value::Bool(true));
            show(lane, &lock, &got.tag, Some(rows_of(&got.columns, &got.rows)));
            if free {
                break;
            }
            lane.say_exactly("standby: another relay is active");
            lane.reached(Milestone::Standby);
            tokio::time::sleep(STANDBY_RETRY).await;
        }
        // Said only when the lock is taken, as the tutorial's relay does: without the lock
        // there is nothing to become active of, and it says nothing before its first batch.
        lane.say_exactly("active");
        lane.reached(Milestone::Active);
    }
    loop {
        if publish_batch(context, &session, &producer, &switches).await? == 0 {
            tokio::time::sleep(IDLE).await;
        }
    }
}

/// One batch in one transaction; how many rows it published.
async fn publish_batch(
    context: &ChildContext,
    session: &PgActor,
    producer: &Producer,
    switches: &Switches,
) -> Result<usize, RunError> {
    let lane = &context.lane;
    session.begin().await?;
    let batch = session.query(FETCH, &[]).await?;
    if batch.rows.is_empty() {
        session.commit().await?;
        return Ok(0);
    }
    show(lane, "BEGIN", "BEGIN", None);
    show(lane, FETCH, &batch.tag, Some(rows_of(&batch.columns, &batch.rows)));
    if switches.hold_ms > 0 {
        lane.note(format!(
            "holding the batch's row locks for {} s (HOLD_SECONDS)",
            switches.hold_ms as f64 / 1000.0
        ));
        tokio::time::sleep(Duration::from_millis(switches.hold_ms)).await;
    }
    let rows: Vec<Row> = batch.rows.iter().filter_map(|r| Row::of(r)).collect();
    let messages: Vec<(String, String)> = rows.iter().map(|r| (r.aggregate_id.clone(), r.message())).collect();
    producer.send_all(TOPIC, &messages).await?;
    if let Some(rate) = switches.crash_after_produce
        && rand::random::<f64>() < rate
    {
        lane.say_exactly("crash at after_produce");
        context.crash_point("after_produce").await;
    }
    let ids: Vec<String> = rows.iter().map(|r| r.id.to_string()).collect();
    let mark = format!(
        "UPDATE outbox SET published_at = now() WHERE id = ANY(ARRAY[{}]::bigint[])",
        ids.join(",")
    );
    let marked = session.query(&mark, &[]).await?;
    show(lane, &mark, &marked.tag, None);
    session.commit().await?;
    lane.step(Service::Postgres, "COMMIT", &[], None);
    lane.emit(shared::EventKind::Commit {
        actor: lane.name().to_owned(),
    });
    let first: Vec<String> = rows
        .iter()
        .take(5)
        .map(|r| format!("{} {}", r.event_type, r.aggregate_id))
        .collect();
    lane.say_exactly(format!("published {}: {}", rows.len(), first.join(", ")));
    lane.reached(Milestone::Published {
        count: rows.len() as u64,
    });
    Ok(rows.len())
}

/// One fetched outbox row.
pub struct Row {
    pub id: i64,
    pub event_id: String,
    pub aggregate_id: String,
    pub event_type: String,
    pub payload: String,
    pub created_at: String,
}

impl Row {
    /// A row of [`FETCH`]'s result.
    pub fn of(row: &[Value]) -> Option<Row> {
        let text = |i: usize| row.get(i).map(Value::to_string);
        Some(Row {
            id: row.first()?.as_int()?,
            event_id: text(1)?,
            aggregate_id: text(2)?,
            event_type: text(3)?,
            payload: text(4)?,
            created_at: text(5)?,
        })
    }

    /// The message the relay produces for it.
    pub fn message(&self) -> String {
        message::event(
            &self.event_id,
            &self.event_type,
            &self.aggregate_id,
            &self.created_at,
            &self.payload,
        )
    }
}

fn rows_of(columns: &[String], rows: &[Vec<Value>]) -> Rows {
    Rows {
        columns: columns.to_vec(),
        rows: rows.to_vec(),
    }
}

/// Draws a statement the quiet session ran, with its result, on the relay's lane.
fn show(lane: &Lane, sql: &str, tag: &str, rows: Option<Rows>) {
    lane.step(Service::Postgres, sql, &[], None);
    lane.result(tag, rows, None);
}
