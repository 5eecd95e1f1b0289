//! The notifier, `racelab actor notifier`: the consumer that sends receipts, as the tutorial's
//! `notifier.py` does.
//!
//! It reads `payments` in group `notifier` from the earliest offset and commits offsets by hand.
//! Each message is handled in one transaction of its own database: with the inbox on (`DEDUPE=1`,
//! the default), it first claims the event id in `processed_events` (`ON CONFLICT DO NOTHING`);
//! a claim that inserts nothing means the event was seen before: `duplicate, skipped`, no
//! effect. Otherwise it upserts the payment's status and, for a capture, records a receipt. Only
//! after that transaction commits does it commit the offset, and only then print
//! `p1@0 payment.authorized pay_001: status updated`. A crash between the two (the crash point
//! `before_offset_commit`) leaves the effects committed and the offset not: the message comes
//! again, and only the inbox keeps it from acting twice.
//!
//! SIGTERM closes the consumer politely (it leaves the group); SIGKILL does not, and the broker
//! keeps the dead member until its session expires. A static member (`group.instance.id`) is
//! Kafka's answer to restarts: the next process with the same id takes the partitions over at
//! once.

use super::{GROUP, TOPIC, message};
use crate::engine::{ChildActor, ChildContext, ChildKind, Consumer, Level, PgActor, Run, RunError};
use serde::{Deserialize, Serialize};
use shared::Milestone;
use std::time::Duration;

/// The notifier's settings: the tutorial's environment switches, and how it joins its group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Switches {
    /// `DEDUPE=1`: claim each event id in the inbox first.
    pub dedupe: bool,
    /// `CRASH_AT=before_offset_commit` with `CRASH_RATE`: the share of handled messages after
    /// which it dies.
    pub crash_before_offset_commit: Option<f64>,
    /// A static member's `group.instance.id`; `None`: a dynamic member.
    pub instance: Option<String>,
    /// Draw each statement of its transactions (the consumer scenarios), or only what it reads,
    /// commits and prints (where it is a bystander).
    pub show_sql: bool,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            dedupe: true,
            crash_before_offset_commit: None,
            instance: None,
            show_sql: true,
        }
    }
}

/// How long one poll waits for a message, as the tutorial's `poll(1.0)`.
pub const POLL: Duration = Duration::from_secs(1);

/// `racelab actor notifier`.
pub static NOTIFIER: ChildKind = ChildKind {
    name: "notifier",
    run: |context| Box::pin(notifier(context)),
};

/// Starts a notifier as lane `name` with `switches`.
pub async fn start(run: &Run, name: &str, switches: &Switches) -> Result<ChildActor, RunError> {
    run.process(name, NOTIFIER.name, to_args(switches)?).await
}

/// As [`start`], for the chaos test: counted by the scenario, not drawn.
pub async fn start_muted(run: &Run, name: &str, switches: &Switches) -> Result<ChildActor, RunError> {
    run.muted_process(name, NOTIFIER.name, to_args(switches)?).await
}

fn to_args(switches: &Switches) -> Result<serde_json::Value, RunError> {
    serde_json::to_value(switches).map_err(|e| RunError::Other(format!("notifier switches: {e}")))
}

/// What handling one event came to, in the words the notifier prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Skipped,
    StatusUpdated,
    ReceiptSent,
}

impl Outcome {
    pub fn words(self) -> &'static str {
        match self {
            Outcome::Skipped => "duplicate, skipped",
            Outcome::StatusUpdated => "status updated",
            Outcome::ReceiptSent => "receipt sent",
        }
    }
}

/// The line the notifier prints once a message's offset is committed.
pub fn line(partition: i32, offset: i64, event_type: &str, payment_id: &str, outcome: Outcome) -> String {
    format!("p{partition}@{offset} {event_type} {payment_id}: {}", outcome.words())
}

async fn notifier(context: &ChildContext) -> Result<(), RunError> {
    let switches: Switches =
        serde_json::from_value(context.args.clone()).map_err(|e| RunError::Other(format!("notifier switches: {e}")))?;
    let lane = &context.lane;
    let session = if switches.show_sql {
        context.session(Some("notifier"), Level::Autocommit).await?
    } else {
        context.quiet_session(Some("notifier"), Level::Autocommit).await?
    };
    let consumer = Consumer::new(
        lane.clone(),
        &context.brokers,
        &context.sandbox,
        GROUP,
        switches.instance.as_deref(),
    )?;
    consumer.subscribe(&[TOPIC])?;
    loop {
        let Some(received) = consumer.poll(POLL).await? else {
            continue;
        };
        let event = received
            .value
            .as_deref()
            .and_then(message::read)
            .ok_or_else(|| RunError::Other(format!("p{}@{}: not an event", received.partition, received.offset)))?;
        let outcome = handle(&session, &event, switches.dedupe).await?;
        if let Some(rate) = switches.crash_before_offset_commit
            && rand::random::<f64>() < rate
        {
            lane.say_exactly("crash at before_offset_commit");
            context.crash_point("before_offset_commit").await;
        }
        consumer.commit(&received).await?;
        lane.say_exactly(line(
            received.partition,
            received.offset,
            &event.event_type,
            &event.payment_id,
            outcome,
        ));
        // After the line: a choreography that stops the notifier once it hears this has the
        // line in its transcript already.
        lane.reached(Milestone::Committed {
            partition: received.partition,
            offset: received.offset,
        });
    }
}

/// Handles one event in one transaction: the inbox claim (with `dedupe`), then the effects.
async fn handle(session: &PgActor, event: &message::Read, dedupe: bool) -> Result<Outcome, RunError> {
    let event_id = event
        .event_id
        .clone()
        .ok_or_else(|| RunError::Other(format!("a {} message without an event id", event.event_type)))?;
    session.begin().await?;
    if dedupe {
        let claimed = session
            .query(
                "INSERT INTO processed_events (event_id) VALUES ($1::uuid) ON CONFLICT DO NOTHING",
                &[event_id.clone().into()],
            )
            .await?;
        if claimed.affected == 0 {
            session.commit().await?;
            return Ok(Outcome::Skipped);
        }
    }
    let status = event.event_type.strip_prefix("payment.").unwrap_or(&event.event_type);
    session
        .query(
            "INSERT INTO payment_status (payment_id, status) VALUES ($1, $2)
             ON CONFLICT (payment_id) DO UPDATE SET status = EXCLUDED.status",
            &[event.payment_id.clone().into(), status.into()],
        )
        .await?;
    let outcome = if event.event_type == "payment.captured" {
        session
            .query(
                "INSERT INTO receipts_sent (payment_id, event_id) VALUES ($1, $2::uuid)",
                &[event.payment_id.clone().into(), event_id.into()],
            )
            .await?;
        Outcome::ReceiptSent
    } else {
        Outcome::StatusUpdated
    };
    session.commit().await?;
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_as_the_tutorials_notifier_prints_them() {
        assert_eq!(
            line(1, 0, "payment.authorized", "pay_001", Outcome::StatusUpdated),
            "p1@0 payment.authorized pay_001: status updated"
        );
        assert_eq!(
            line(0, 1, "payment.authorized", "pay_002", Outcome::Skipped),
            "p0@1 payment.authorized pay_002: duplicate, skipped"
        );
    }
}
