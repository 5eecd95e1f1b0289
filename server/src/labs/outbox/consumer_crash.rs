//! The notifier dies between its database commit and its offset commit, and the message comes
//! again. From the stage step 7 leaves (six messages consumed, offsets p0 = 2 and p1 = 4, three
//! events in the inbox), with a relay running: `authorize pay_004 1500`, `capture pay_004`. The
//! relay publishes both to p0 (offsets 2 and 3). The notifier handles p0@2, commits the claim and
//! the status, and dies: its log ends `crash at before_offset_commit`. The next notifier reads
//! p0@2 again and its inbox knows it:
//!
//! ```text
//! p0@2 payment.authorized pay_004: duplicate, skipped
//! p0@3 payment.captured pay_004: receipt sent
//! ```
//!
//! How the next notifier gets the partitions, by variant:
//! - `static-member` (the default everywhere): both notifiers are the group's static member
//!   `notifier-1` (`group.instance.id`, Kafka's answer to restarts), so the new process takes the
//!   dead one's partitions at once.
//! - `wait-for-expiry` (the tutorial's way): plain members. The broker must first give up on the
//!   dead one, which never said goodbye: Apache Kafka does after the session timeout (6 s here,
//!   Kafka's minimum; 45 s in the tutorial, where it took about 20 s). A broker that never
//!   expires such a member (racelab's test broker is one) leaves the new notifier waiting: the
//!   scenario gives up after 20 s and says so.

use super::figures::Figures;
use super::invariants::Scope;
use super::notifier::{self, Switches};
use super::relay::{self, Switches as RelaySwitches};
use super::writer::{authorize, capture};
use super::{GROUP, Judging, TOPIC, judge, ledger, stage_published_twice};
use crate::engine::{Budget, ChildActor, End, Level, News, Run, RunError};
use crate::labs::{ScenarioDef, actors_at, tutorial_figures};
use shared::{Check, EventKind};
use std::time::{Duration, Instant};

/// The static member's id both notifiers use in the `static-member` variant.
pub const INSTANCE: &str = "notifier-1";
/// How long the new notifier may wait for its partitions in `wait-for-expiry`.
pub const EXPIRY_BOUND: Duration = Duration::from_secs(20);

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "outbox/consumer-crash",
    title: "The notifier dies before committing its offset: the message comes again",
    hook: "The database commit happened, the offset commit did not: the inbox is what stops a second effect",
    about: "The notifier commits the offset only after its database transaction. Killed between the two, its effects are committed and its offset is not, so the message is delivered again to whoever takes the partition next, and the inbox turns it into 'duplicate, skipped'. A consumer killed without leaving stays in its group until the broker gives up on it; restarting with the same group.instance.id (a static member) takes over at once, and that is how racelab restarts it by default.",
    variants: &[
        (
            "static-member",
            "static member",
            "Both notifiers are static member notifier-1: the new one takes over at once",
        ),
        (
            "wait-for-expiry",
            "wait for expiry",
            "Plain members, as in the tutorial: the new one waits for the broker to expire the dead one",
        ),
    ],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| {
        let mut lanes = actors_at(&["payments"], "payments.py");
        lanes.extend(actors_at(&["relay"], "relay.py, its own process"));
        lanes.extend(actors_at(
            &["notifier"],
            "notifier.py, CRASH_AT=before_offset_commit, then a fresh one",
        ));
        lanes
    },
    budget: Some(|_| Budget::postgres(3).and_broker(6).and_processes(2)),
    play: |run, variant| Box::pin(play(run, variant == "static-member")),
    summarize: None,
    predict: None,
};

async fn play(run: &Run, static_member: bool) -> Result<(), RunError> {
    stage_step_seven(run).await?;
    let payments = run.actor("payments", Level::Autocommit).await?;
    let before = ledger(run).await?;
    let mut relay = relay::start(run, "relay", &RelaySwitches::default()).await?;
    let instance = static_member.then(|| INSTANCE.to_owned());
    let crashing = Switches {
        crash_before_offset_commit: Some(1.0),
        instance: instance.clone(),
        ..Switches::default()
    };
    let mut notifier = notifier::start(run, "notifier", &crashing).await?;
    authorize(&payments, "pay_004", 1500).await?;
    capture(&payments, "pay_004").await?;
    let end = notifier.wait_end(Duration::from_secs(30)).await?;
    if !matches!(end, End::Crashed { .. }) {
        return Err(RunError::Other(format!("the notifier should have crashed; it {end:?}")));
    }
    let fresh = Switches {
        instance,
        ..Switches::default()
    };
    notifier
        .restart_with(serde_json::to_value(&fresh).map_err(|e| RunError::Other(e.to_string()))?)
        .await?;
    let restarted = Instant::now();
    let took_over = takes_over(&mut notifier, static_member).await?;
    notifier.stop().await?;
    relay.stop().await?;
    payments.close().await;
    judge(run, before, judging(static_member, took_over, restarted.elapsed())).await?;
    Ok(())
}

/// What the step-7 notifier left: its inbox, receipt, projection and offsets. Set without being
/// drawn, on top of [`stage_published_twice`], so the run shows only the crash and what follows.
async fn stage_step_seven(run: &Run) -> Result<(), RunError> {
    stage_published_twice(run).await?;
    let payments_schema = crate::sandbox::postgres::quote_ident(run.schema("payments")?);
    run.setup(&format!(
        "SET search_path TO {notifier};
         INSERT INTO processed_events (event_id) SELECT event_id FROM {payments_schema}.outbox;
         INSERT INTO receipts_sent (payment_id, event_id)
             SELECT aggregate_id, event_id FROM {payments_schema}.outbox WHERE event_type = 'payment.captured';
         INSERT INTO payment_status VALUES ('pay_001', 'captured'), ('pay_002', 'authorized');
         SET search_path TO {default}",
        notifier = crate::sandbox::postgres::quote_ident(run.schema("notifier")?),
        // Back to the run's own (RESET would give a kept session's, see `engine::kept`).
        default = crate::sandbox::postgres::quote_ident(run.sandbox().default_schema().unwrap_or("public")),
    ))
    .await?;
    run.set_group_offsets(GROUP, TOPIC, &[(0, 2), (1, 4), (2, 0)]).await
}

/// Whether the restarted notifier got the dead one's partitions: it printed its two `p0@` lines.
/// A static member must; a plain one may wait forever on a broker that never expires the dead
/// member, and then its lane says so and the verdict, not an error, tells the reader.
async fn takes_over(notifier: &mut ChildActor, static_member: bool) -> Result<bool, RunError> {
    let bound = if static_member {
        Duration::from_secs(30)
    } else {
        EXPIRY_BOUND
    };
    // Its two lines, or (waiting for a dead member's expiry) the bound running out: only a
    // timeout means the broker kept the dead member; anything else is an error.
    let mut lines = 0;
    let waiting = tokio::time::timeout(bound, async {
        while lines < 2 {
            match notifier.next().await {
                Some(News::Event(EventKind::Say { line, .. })) if line.starts_with("p0@") => lines += 1,
                Some(News::Ended(end)) => {
                    return Err(RunError::Process {
                        actor: "notifier".into(),
                        reason: format!("ended ({end:?}) before it read p0@2 again"),
                    });
                }
                Some(_) => {}
                None => {
                    return Err(RunError::Process {
                        actor: "notifier".into(),
                        reason: "its pipe closed".into(),
                    });
                }
            }
        }
        Ok(())
    })
    .await;
    match waiting {
        Ok(done) => done?,
        Err(_) if !static_member && lines == 0 => {}
        Err(_) => {
            return Err(RunError::Other(format!(
                "the new notifier printed {lines} of its 2 lines within {} s",
                bound.as_secs()
            )));
        }
    }
    let took_over = lines == 2;
    if !took_over {
        notifier.lane().note(format!(
            "no partitions after {} s: this broker has not expired the member that died without leaving, and may never do so; Apache Kafka hands them over after the session timeout",
            EXPIRY_BOUND.as_secs()
        ));
    }
    Ok(took_over)
}

/// How the run is judged, whether or not the new notifier `took_over` (`waited` after its
/// restart): the figures cannot tell a redelivery skipped from one never made, so the takeover
/// is a check of its own.
fn judging(static_member: bool, took_over: bool, waited: Duration) -> Judging<'static> {
    // Five events processed once, one receipt per captured payment, the projection agreeing.
    let expected = Figures {
        captured: 2,
        events: 5,
        unpublished: 0,
        messages: 8,
        processed: 5,
        receipts: 2,
        receipt_payments: 2,
        projection_captured: 2,
    };
    let took = Check::new(
        if static_member {
            "the new notifier takes the partitions over".to_owned()
        } else {
            format!(
                "the broker hands the dead member's partitions on within {} s",
                EXPIRY_BOUND.as_secs()
            )
        },
        if took_over {
            format!("it read p0@2 again after {} ms", waited.as_millis())
        } else {
            "it never got them".to_owned()
        },
        took_over,
    );
    Judging {
        expected,
        scope: Scope::WITH_NOTIFIER,
        extra: vec![took],
        headlines: (
            "Redelivered, recognised, skipped: one receipt",
            if took_over {
                "The redelivered message had an effect"
            } else {
                "The new notifier is still waiting for the dead member's partitions"
            },
        ),
        how: if took_over {
            "The crash came after the database commit and before the offset commit, so p0@2 was delivered again; its event id was already in the inbox, and the redelivery did nothing."
        } else {
            "The dead notifier never left its group, and this broker does not expire a member that stops heartbeating, so its partitions were never handed on. With Apache Kafka (docker compose) they are, after the session timeout; restarting as the same static member avoids the wait everywhere."
        },
        tutorial: Some(tutorial_figures(&[
            (
                "the new notifier's wait",
                "about 20 s: a plain member, waiting for Kafka to expire the dead one (session timeout 45 s, counted from the crash)",
            ),
            (
                "its lines",
                "p0@2 payment.authorized pay_004: duplicate, skipped; p0@3 payment.captured pay_004: receipt sent",
            ),
        ])),
    }
}
