//! Failover: the active relay is killed (SIGKILL, as `docker kill`), and the standby takes over.
//! Relay A is active and relay B on standby; A is killed; `authorize pay_007 2000`. PostgreSQL
//! ends A's session when its connection drops, and with it the session advisory lock; B's next
//! try, at most 2 s later, takes it: `active`, then `published 1: payment.authorized pay_007`,
//! and the notifier prints `p1@0 payment.authorized pay_007: status updated`.

use super::figures::Figures;
use super::invariants::Scope;
use super::notifier::{self, Switches as NotifierSwitches};
use super::relay::{self, STANDBY_RETRY, Switches};
use super::writer::authorize;
use super::{Judging, judge, ledger, reached};
use crate::engine::{Budget, Level, Run, RunError};
use crate::labs::{ScenarioDef, actors_at, tutorial_figures};
use shared::{Check, Milestone};
use std::time::Instant;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "outbox/failover",
    title: "Failover: the active relay is killed, the standby takes over",
    hook: "The advisory lock dies with the connection, and the standby's next try gets it",
    about: "The relay's lock is a session advisory lock, held by its connection rather than by any transaction. Kill the process and PostgreSQL ends the session, releasing the lock; the standby, trying every 2 seconds, becomes active and publishes what arrives next. Nothing had to notice the death except the database.",
    variants: &[(
        "kill-active",
        "kill the active relay",
        "docker kill relayA, then a new payment",
    )],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| {
        let mut lanes = actors_at(&["payments"], "payments.py");
        lanes.extend(actors_at(&["relay A"], "the active relay, killed"));
        lanes.extend(actors_at(&["relay B"], "the standby"));
        lanes.extend(actors_at(&["notifier"], "notifier.py"));
        lanes
    },
    budget: Some(|_| Budget::postgres(4).and_broker(5).and_processes(3)),
    play: |run, _| Box::pin(play(run)),
    summarize: None,
    predict: None,
};

async fn play(run: &Run) -> Result<(), RunError> {
    let payments = run.actor("payments", Level::Autocommit).await?;
    let before = ledger(run).await?;
    let quiet_notifier = NotifierSwitches {
        show_sql: false,
        ..NotifierSwitches::default()
    };
    let mut notifier = notifier::start(run, "notifier", &quiet_notifier).await?;
    let mut relay_a = relay::start(run, "relay A", &Switches::default()).await?;
    reached(&mut relay_a, |m| *m == Milestone::Active).await?;
    let mut relay_b = relay::start(run, "relay B", &Switches::default()).await?;
    reached(&mut relay_b, |m| *m == Milestone::Standby).await?;
    relay_a.kill("docker kill").await?;
    let killed = Instant::now();
    authorize(&payments, "pay_007", 2000).await?;
    // Counted in tries, not seconds: on a loaded machine a 2 s sleep may wake late, and that
    // is not the lock's doing. A lock that outlived its connection shows as another standby.
    let tries_refused = std::sync::atomic::AtomicU32::new(0);
    reached(&mut relay_b, |m| {
        if *m == Milestone::Standby {
            tries_refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        *m == Milestone::Active
    })
    .await?;
    let takeover = killed.elapsed();
    let tries_refused = tries_refused.into_inner();
    reached(&mut relay_b, |m| matches!(m, Milestone::Published { .. })).await?;
    reached(&mut notifier, |m| {
        matches!(m, Milestone::Committed { partition: 1, .. })
    })
    .await?;
    relay_b.stop().await?;
    notifier.stop().await?;
    payments.close().await;
    let in_time = Check::new(
        format!(
            "the standby is active at its first try after the kill (it tries every {} s)",
            STANDBY_RETRY.as_secs()
        ),
        match tries_refused {
            0 => format!("first try, {} ms after the kill", takeover.as_millis()),
            n => format!(
                "{n} more tries refused, active {} ms after the kill",
                takeover.as_millis()
            ),
        },
        tries_refused == 0,
    );
    let expected = Figures {
        events: 1,
        messages: 1,
        processed: 1,
        ..Figures::default()
    };
    judge(
        run,
        before,
        Judging {
            expected,
            scope: Scope::WITH_NOTIFIER,
            extra: vec![in_time],
            headlines: ("The standby took over and published", "The standby did not take over at its first try"),
            how: "PostgreSQL released the killed relay's session advisory lock when its connection dropped; the standby's next pg_try_advisory_lock got it.",
            tutorial: Some(tutorial_figures(&[
                ("relay B", "`active` within one 2-second retry, then published pay_007"),
                ("the notifier", "p1@4 payment.authorized pay_007 (after the earlier steps' messages; ours is a fresh topic: p1@0)"),
            ])),
        },
    )
    .await?;
    Ok(())
}
