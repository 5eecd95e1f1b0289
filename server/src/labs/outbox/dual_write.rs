//! The dual write: the payment committed in PostgreSQL and its event published to the broker as
//! two separate writes, by a process that dies between them (the tutorial's `naive.py`, here
//! `racelab actor naive`, killed with SIGKILL at its crash point).
//! - `commit-first` (`pay_001`): the capture commits, then `crash at after_commit`: the payment
//!   is captured and no event ever leaves. 1 captured payment, 0 messages.
//! - `publish-first` (`pay_002`): the capture's transaction is open, the event is published and
//!   acknowledged, then `crash at before_commit`: PostgreSQL rolls the capture back when the
//!   connection drops. The payment stays authorized and the topic says it was captured: 0
//!   captured, 1 message (with no event id).
//!
//! Neither raises an error anyone could catch: a killed process runs no handler.

use super::figures::Figures;
use super::invariants::Scope;
use super::{Judging, TOPIC, judge, ledger, message};
use crate::engine::{ChildContext, ChildKind, End, Level, Producer, Run, RunError};
use crate::labs::{PredictDef, ScenarioDef, actors_at};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The lane of the broker's console consumer, which the tutorial runs to show the phantom.
const CONSOLE: &str = "kafka-console-consumer";

/// The amount the naive program authorizes.
pub const AMOUNT_CENTS: i64 = 2500;

/// `naive.py <order> <payment_id>` with `CRASH_AT` set to the order's crash point.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Args {
    pub publish_first: bool,
    pub payment_id: String,
    pub crash: bool,
}

impl Args {
    fn crash_point(&self) -> &'static str {
        if self.publish_first {
            "before_commit"
        } else {
            "after_commit"
        }
    }
}

/// `racelab actor naive`.
pub static NAIVE: ChildKind = ChildKind {
    name: "naive",
    run: |context| Box::pin(naive(context)),
};

async fn naive(context: &ChildContext) -> Result<(), RunError> {
    let args: Args =
        serde_json::from_value(context.args.clone()).map_err(|e| RunError::Other(format!("naive arguments: {e}")))?;
    let lane = &context.lane;
    let producer = Producer::new(lane.clone(), &context.brokers, &context.sandbox, false)?;
    // Not autocommit, as psycopg's default: every statement opens a transaction.
    let session = context.session(Some("payments"), Level::ReadCommitted).await?;
    session
        .query(
            "INSERT INTO payments (id, amount_cents, currency, status) VALUES ($1, $2, 'USD', 'authorized')",
            &[args.payment_id.clone().into(), AMOUNT_CENTS.into()],
        )
        .await?;
    session.commit().await?;
    let capture = "UPDATE payments SET status = 'captured', updated_at = now() WHERE id = $1";
    session.query(capture, &[args.payment_id.clone().into()]).await?;
    if !args.publish_first {
        session.commit().await?;
        crash_here(context, &args).await;
    }
    producer
        .send(TOPIC, &args.payment_id, &message::naive(&args.payment_id))
        .await?;
    if args.publish_first {
        crash_here(context, &args).await;
        session.commit().await?;
    }
    lane.say_exactly(format!("{} captured", args.payment_id));
    Ok(())
}

/// The tutorial's `crash_point`: prints `crash at <point>`, then dies (if told to crash).
async fn crash_here(context: &ChildContext, args: &Args) {
    if args.crash {
        context.lane.say_exactly(format!("crash at {}", args.crash_point()));
        context.crash_point(args.crash_point()).await;
    }
}

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "outbox/dual-write",
    title: "The dual write: a crash between the commit and the publish",
    hook: "Commit first and the event is lost; publish first and the event is a phantom",
    about: "The payment service writes the capture to PostgreSQL and publishes payment.captured to the broker, two writes that cannot be made atomic. The process is killed between them, as a deploy or an out-of-memory kill would. Committed first, the payment is captured and nobody is ever told. Published first, the broker has acknowledged an event whose transaction PostgreSQL then rolls back because the connection dropped: consumers hear of a capture that never happened. Neither raises an error: a killed process runs no handler.",
    variants: &[
        (
            "commit-first",
            "commit, then publish",
            "Killed after the commit: a captured payment whose event never leaves",
        ),
        (
            "publish-first",
            "publish, then commit",
            "Killed before the commit: an event for a capture PostgreSQL rolled back",
        ),
    ],
    // Its own process runs the steps, and a reader pausing it would outwait the run's bounds.
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |variant| {
        let mut lanes = actors_at(
            &["payments"],
            if variant == "publish-first" {
                "naive.py publish-first pay_002, its own process"
            } else {
                "naive.py commit-first pay_001, its own process"
            },
        );
        if variant == "publish-first" {
            lanes.extend(actors_at(&["psql"], "a terminal on the payments database"));
            lanes.extend(actors_at(&[CONSOLE], "reads the topic from the beginning"));
        }
        lanes
    },
    budget: Some(|_| crate::engine::Budget::postgres(2).and_broker(3).and_processes(1)),
    play: |run, variant| Box::pin(play(run, variant == "publish-first")),
    summarize: None,
    predict: Some(&PREDICT),
};

/// Predict, then run. The answers are where each order leaves the payment and the topic (the
/// module doc); `tests/outbox.rs` checks each against the run's final rows and messages.
static PREDICT: PredictDef = PredictDef {
    question: "The payment service is killed between its two writes: the capture in PostgreSQL and payment.captured on the topic. What do the database and the topic say afterwards?",
    choices: &[
        ("lost-event", "The payment is captured; the topic has no event for it"),
        (
            "phantom-event",
            "The topic says captured; the payment is still authorized",
        ),
        ("neither", "Neither: the capture is undone and nothing is published"),
        ("both", "Both: the payment is captured and its event is on the topic"),
    ],
    only_on: &[],
    answers: &[
        (
            "commit-first",
            "lost-event",
            "The capture had already committed when the process died, so the row stays captured, and the publish that was to follow never runs.",
        ),
        (
            "publish-first",
            "phantom-event",
            "The broker acknowledged the event while the capture's transaction was still open, and PostgreSQL rolled that transaction back when the dead process's connection dropped.",
        ),
    ],
};

async fn play(run: &Run, publish_first: bool) -> Result<(), RunError> {
    let payment_id = if publish_first { "pay_002" } else { "pay_001" };
    if publish_first {
        // What the tutorial's first run left: pay_001 captured, its event lost (set, not drawn).
        run.setup(&format!(
            "INSERT INTO payments (id, amount_cents, currency, status) VALUES ('pay_001', {AMOUNT_CENTS}, 'USD', 'captured')"
        ))
        .await?;
    }
    let before = ledger(run).await?;
    let args = Args {
        publish_first,
        payment_id: payment_id.into(),
        crash: true,
    };
    let args = serde_json::to_value(&args).map_err(|e| RunError::Other(e.to_string()))?;
    let mut naive = run.process("payments", NAIVE.name, args).await?;
    let end = naive.wait_end(Duration::from_secs(30)).await?;
    if !matches!(end, End::Crashed { .. }) {
        return Err(RunError::Other(format!("naive.py should have crashed; it {end:?}")));
    }
    if publish_first {
        // The tutorial's two checks: the payment in psql, the topic in the console consumer.
        let psql = run.actor_in("psql", "payments", Level::Autocommit).await?;
        psql.psql("SELECT id, status FROM payments ORDER BY id").await?;
        psql.close().await;
        let topic = run.topic_table("messages", TOPIC).await?;
        let console = run.lane(CONSOLE, false);
        for row in &topic.rows {
            let text = |i: usize| row.get(i).map(ToString::to_string).unwrap_or_default();
            console.say_exactly(format!("{} {}", text(2), text(3)));
        }
        console.say_exactly(format!("Processed a total of {} messages", topic.rows.len()));
    }
    // A correct system: the capture and its event together, or neither (pay_001, in the
    // publish-first stage, is the first run's and stays as it was left).
    let expected = Figures {
        captured: 1,
        messages: if publish_first { 0 } else { 1 },
        ..Figures::default()
    };
    let how = if publish_first {
        "The broker acknowledged the event before the capture committed; the process died, the connection dropped, and PostgreSQL rolled the capture back. The event stays on the topic: a phantom."
    } else {
        "The capture committed, and the process died before it published: the event is lost, and no receipt will ever go out."
    };
    let own = [payment_id];
    judge(
        run,
        before,
        Judging {
            expected,
            scope: Scope {
                notifier: false,
                payments: Some(&own),
            },
            extra: Vec::new(),
            headlines: (
                "The payment and its event agree",
                if publish_first {
                    "A phantom event: the topic says captured, the database says authorized"
                } else {
                    "A lost event: the payment is captured and nothing was published"
                },
            ),
            how,
            tutorial: None,
        },
    )
    .await?;
    Ok(())
}
