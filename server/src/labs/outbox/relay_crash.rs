//! The relay dies after producing, before it marks the batch published, and a new relay
//! publishes it again. From the step-3 stage (three events, unpublished):
//!
//! ```text
//! active
//! crash at after_produce
//! ```
//!
//! The crashed relay's transaction rolls back and its advisory lock goes with its connection:
//! `unpublished` is still 3. The relay started again prints `active` and `published 3:
//! payment.authorized pay_001, payment.captured pay_001, payment.authorized pay_002`, and the
//! partitions end at `payments:0:2`, `payments:1:4`, `payments:2:0`: six messages for three
//! events, each event twice with the same event id. The producer is idempotent, but a restarted
//! relay is a new producer, and the broker only recognises repeats within one producer's session.

use super::figures::Figures;
use super::invariants::Scope;
use super::relay::{self, Switches};
use super::{Judging, PARTITIONS, TOPIC, judge, ledger, stage_three_events};
use crate::engine::{Budget, End, Level, Run, RunError};
use crate::labs::{ScenarioDef, actors_at, tutorial_figures};
use shared::{EventKind, Milestone, Value};
use std::time::Duration;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "outbox/relay-crash",
    title: "The relay dies after producing: the batch is published twice",
    hook: "Killed between the broker's acknowledgement and its own commit, the relay leaves three events to publish again",
    about: "The relay marks a batch published only after the broker confirmed every message, in the same transaction that locked the rows. Killed in between, its transaction rolls back and the rows are unpublished again; the next relay sends them again. The producer is idempotent, but the restarted relay is a new producer, and the broker only recognises repeats within one producer's session. This is what at-least-once means: the work moves to the consumer.",
    variants: &[(
        "after-produce",
        "crash after produce",
        "CRASH_AT=after_produce, then a normal restart",
    )],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| {
        let mut lanes = actors_at(&["relay"], "relay.py, its own process");
        lanes.extend(actors_at(&["psql"], "a terminal on the payments database"));
        lanes.extend(actors_at(&[OFFSETS], "the topic's end offsets"));
        lanes
    },
    budget: Some(|_| Budget::postgres(2).and_broker(3).and_processes(1)),
    play: |run, _| Box::pin(play(run)),
    summarize: None,
    predict: None,
};

/// The lane of the broker's offsets tool, which the tutorial runs after the restart.
const OFFSETS: &str = "kafka-get-offsets";

async fn play(run: &Run) -> Result<(), RunError> {
    stage_three_events(run).await?;
    let psql = run.actor_in("psql", "payments", Level::Autocommit).await?;
    let before = ledger(run).await?;
    let crashing = Switches {
        crash_after_produce: Some(1.0),
        ..Switches::default()
    };
    let mut relay = relay::start(run, "relay", &crashing).await?;
    let end = relay.wait_end(Duration::from_secs(30)).await?;
    if !matches!(end, End::Crashed { .. }) {
        return Err(RunError::Other(format!(
            "the relay should have crashed after producing; it {end:?}"
        )));
    }
    psql.psql("SELECT count(*) AS unpublished FROM outbox WHERE published_at IS NULL")
        .await?;
    relay
        .restart_with(serde_json::to_value(Switches::default()).map_err(|e| RunError::Other(e.to_string()))?)
        .await?;
    relay
        .wait_for(Duration::from_secs(30), |e| {
            matches!(
                e,
                EventKind::Milestone {
                    milestone: Milestone::Published { .. },
                    ..
                }
            )
        })
        .await?;
    relay.stop().await?;
    psql.close().await;
    let topic = run.topic_table("messages", TOPIC).await?;
    let offsets = run.lane(OFFSETS, false);
    for partition in 0..PARTITIONS {
        let end = topic
            .rows
            .iter()
            .filter(|r| r.first().and_then(Value::as_int) == Some(partition.into()))
            .count();
        offsets.say_exactly(format!("{TOPIC}:{partition}:{end}"));
    }
    // A correct system would deliver each event once; at-least-once delivers some twice.
    let expected = Figures {
        captured: 1,
        events: 3,
        unpublished: 0,
        messages: 3,
        ..Figures::default()
    };
    judge(
        run,
        before,
        Judging {
            expected,
            scope: Scope::default(),
            extra: Vec::new(),
            headlines: ("Every event published once", "Every event of the crashed batch is on the topic twice"),
            how: "The crash came after the broker acknowledged the batch and before the relay's commit, so the marks rolled back and the next relay, a new producer the broker could not match with the old one, sent the batch again.",
            tutorial: Some(tutorial_figures(&[
                ("the restarted relay", "its log showed `published 3: …` about 10 s later (ours: as soon as it starts)"),
                ("end offsets", "payments:0:2, payments:1:4, payments:2:0: six messages for three events"),
            ])),
        },
    )
    .await?;
    Ok(())
}
