//! The notifier reads the six messages the relay's crash left (each of three events twice), with
//! and without its inbox.
//! - `no-dedup` (`DEDUPE=0`): every message acts. The receipt for pay_001 goes out twice:
//!
//!   ```text
//!   p1@0 payment.authorized pay_001: status updated
//!   p1@1 payment.captured pay_001: receipt sent
//!   p1@2 payment.authorized pay_001: status updated
//!   p1@3 payment.captured pay_001: receipt sent
//!   p0@0 payment.authorized pay_002: status updated
//!   p0@1 payment.authorized pay_002: status updated
//!   ```
//! - `dedup`: the event id is claimed in `processed_events` in the transaction that acts, so the
//!   three repeats are `duplicate, skipped`: one receipt, three events processed.
//!
//! Within a partition the order is the topic's; which partition comes first is up to the
//! consumer's fetches (the tutorial's two runs differ).

use super::figures::Figures;
use super::invariants::Scope;
use super::notifier::{self, Switches};
use super::{Judging, judge, ledger, reached, stage_published_twice};
use crate::engine::{Budget, Level, Run, RunError};
use crate::labs::{PredictDef, ScenarioDef, actors_at, tutorial_figures};
use shared::Milestone;

/// The messages on the stage's topic.
pub const MESSAGES: usize = 6;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "outbox/consumer",
    title: "The consumer and its inbox: one receipt, or two",
    hook: "Six messages for three events: without an inbox, the customer gets two receipts",
    about: "The relay delivers at least once, so the notifier sees every event of the crashed batch twice. Without an inbox it acts on each message: the capture's receipt goes out twice. With one, it claims each event id in processed_events in the same transaction as the effects, and a repeat finds the id taken and does nothing. The offset is committed only after that transaction.",
    variants: &[
        ("no-dedup", "no inbox", "DEDUPE=0: every message acts"),
        (
            "dedup",
            "inbox",
            "The event id claimed in processed_events first: repeats are skipped",
        ),
    ],
    // Its own process runs the steps, and a reader pausing it would outwait the run's bounds.
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |variant| {
        let mut lanes = actors_at(
            &["notifier"],
            if variant == "no-dedup" {
                "notifier.py, DEDUPE=0, its own process"
            } else {
                "notifier.py, its own process"
            },
        );
        lanes.extend(actors_at(&["psql"], "a terminal on the notifier's database"));
        lanes
    },
    budget: Some(|_| Budget::postgres(2).and_broker(4).and_processes(1)),
    play: |run, variant| Box::pin(play(run, variant == "dedup")),
    summarize: None,
    predict: Some(&PREDICT),
};

/// Predict, then run. The answers are the receipts each variant sends (the module doc): the
/// count does not depend on which partition the consumer reads first; `tests/outbox.rs` checks
/// each against the run's lines and the notifier's tables.
static PREDICT: PredictDef = PredictDef {
    question: "The notifier reads six messages that carry three events twice each, pay_001's capture among them. How many receipts does the customer get?",
    choices: &[
        ("two-receipts", "Two: each copy of the capture sends a receipt"),
        (
            "repeats-skipped",
            "One: the notifier reads every copy and skips the repeats",
        ),
        (
            "broker-dedupes",
            "One: the broker hands the notifier each event only once",
        ),
        (
            "notifier-fails",
            "One: the repeated capture hits a duplicate key and the notifier stops",
        ),
    ],
    only_on: &[],
    answers: &[
        (
            "no-dedup",
            "two-receipts",
            "With DEDUPE=0 nothing records which events were already handled, so the second copy of the capture looks new and inserts another receipt.",
        ),
        (
            "dedup",
            "repeats-skipped",
            "Each event id is claimed in processed_events inside the transaction that acts, so a repeat's claim inserts nothing and the notifier commits its offset without acting.",
        ),
    ],
};

async fn play(run: &Run, dedupe: bool) -> Result<(), RunError> {
    stage_published_twice(run).await?;
    let psql = run.actor_in("psql", "notifier", Level::Autocommit).await?;
    let before = ledger(run).await?;
    let switches = Switches {
        dedupe,
        ..Switches::default()
    };
    let mut notifier = notifier::start(run, "notifier", &switches).await?;
    wait_for_lines(&mut notifier, MESSAGES).await?;
    notifier.stop().await?;
    psql.psql("SELECT payment_id, count(*) AS receipts FROM receipts_sent GROUP BY payment_id")
        .await?;
    psql.close().await;
    // One receipt for the one capture, three events processed once each.
    let expected = Figures {
        captured: 1,
        events: 3,
        messages: MESSAGES as i64,
        processed: 3,
        receipts: 1,
        receipt_payments: 1,
        projection_captured: 1,
        ..Figures::default()
    };
    let how = if dedupe {
        "Each event id was claimed in the inbox in the transaction that acted on it; the three repeats found their ids taken and did nothing."
    } else {
        "Without an inbox, nothing told a repeat from a new event: the repeated capture sent a second receipt."
    };
    judge(
        run,
        before,
        Judging {
            expected,
            scope: Scope::WITH_NOTIFIER,
            extra: Vec::new(),
            headlines: (
                "Six messages, three events, one receipt",
                "The customer got two receipts for one capture",
            ),
            how,
            tutorial: Some(tutorial_figures(&[
                (
                    "first partition read",
                    "p1 without the inbox, p0 with it: the consumer's fetches decide",
                ),
                ("pay_001's receipts", "2 without the inbox, 1 with it"),
            ])),
        },
    )
    .await?;
    Ok(())
}

/// Waits until the notifier has printed `count` lines (one per message whose offset it
/// committed).
pub async fn wait_for_lines(notifier: &mut crate::engine::ChildActor, count: usize) -> Result<(), RunError> {
    for _ in 0..count {
        reached(notifier, |m| matches!(m, Milestone::Committed { .. })).await?;
    }
    Ok(())
}
