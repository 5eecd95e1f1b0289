//! Two relays at once. A notifier runs throughout.
//! - `no-lock` (`SINGLE_ACTIVE=0`): relay A holds its batch (the tutorial's `HOLD_SECONDS`),
//!   which has locked `payment.authorized pay_005`; the capture commits; relay B starts, its
//!   `SKIP LOCKED` passes over the locked row and publishes `payment.captured pay_005` at once;
//!   A publishes the authorization after its hold. The topic says captured, then authorized:
//!
//!   ```text
//!   p2@0 payment.captured pay_005: receipt sent
//!   p2@1 payment.authorized pay_005: status updated
//!   ```
//!
//!   and the notifier's projection ends `authorized` while the payment is `captured`. The inbox
//!   cannot help: these are two different events.
//! - `advisory-lock` (the default): relay B finds the session advisory lock taken and prints
//!   `standby: another relay is active` every 2 s; A publishes `pay_006`'s authorization, then
//!   its capture, in order.
//!

use super::figures::Figures;
use super::invariants::Scope;
use super::notifier::{self, Switches as NotifierSwitches};
use super::relay::{self, Switches};
use super::writer::{authorize, capture};
use super::{Judging, judge, ledger, reached};
use crate::engine::{Budget, Level, PgActor, Run, RunError};
use crate::labs::{PredictDef, ScenarioDef, actors_at, tutorial_figures};
use shared::{Check, EventKind, Milestone, Value};
use std::time::Duration;

/// How long relay A holds a batch's rows before producing them.
pub const HOLD: Duration = Duration::from_secs(6);

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "outbox/two-relays",
    title: "Two relays at once: a payment's events out of order",
    hook: "SKIP LOCKED lets the second relay publish the capture while the first still holds the authorization",
    about: "Two relays share the outbox safely row by row: FOR UPDATE SKIP LOCKED gives each row to one of them. But not in order: while relay A holds a batch with a payment's authorization, relay B skips it and publishes the capture that committed after it. The notifier's projection ends 'authorized' for a captured payment, and its inbox cannot help, since these are two different events. A session advisory lock keeps one relay active and the other on standby, and order survives.",
    variants: &[
        (
            "no-lock",
            "two active relays",
            "SINGLE_ACTIVE=0: both relays publish, and pay_005's events swap places",
        ),
        (
            "advisory-lock",
            "one active, one standby",
            "The session advisory lock: relay B waits on standby, pay_006's events stay in order",
        ),
    ],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |variant| {
        let mut lanes = actors_at(&["payments"], "payments.py");
        if variant == "no-lock" {
            lanes.extend(actors_at(&["relay A"], "SINGLE_ACTIVE=0, HOLD_SECONDS=6"));
            lanes.extend(actors_at(&["relay B"], "SINGLE_ACTIVE=0"));
        } else {
            lanes.extend(actors_at(&["relay A"], "HOLD_SECONDS=6"));
            lanes.extend(actors_at(&["relay B"], "the standby"));
        }
        lanes.extend(actors_at(&["notifier"], "notifier.py"));
        lanes.extend(actors_at(&["psql"], "a terminal on both databases"));
        lanes
    },
    budget: Some(|_| Budget::postgres(5).and_broker(5).and_processes(3)),
    play: |run, variant| Box::pin(play(run, variant == "advisory-lock")),
    summarize: None,
    predict: Some(&PREDICT),
};

/// Predict, then run. The answers are what the barriers in [`play`] make each variant do: relay
/// A holds the authorization for [`HOLD`], far longer than relay B's 0.5 s poll, so the order
/// does not depend on luck; `tests/outbox.rs` checks each against the run's messages and lines.
static PREDICT: PredictDef = PredictDef {
    question: "Relay A has picked up a payment's authorization and holds it for 6 seconds; meanwhile the capture commits and relay B is running. What reaches the notifier?",
    choices: &[
        (
            "capture-first",
            "The capture arrives first; the notifier ends up saying authorized",
        ),
        (
            "b-waits",
            "Relay B waits for A's locked row; the events arrive in order",
        ),
        (
            "a-publishes-both",
            "Relay B stands by; relay A publishes both events in order",
        ),
        (
            "capture-twice",
            "Both relays publish the capture; the notifier gets it twice",
        ),
    ],
    only_on: &[],
    answers: &[
        (
            "no-lock",
            "capture-first",
            "SKIP LOCKED lets relay B pass over the authorization A has locked and publish the later capture at once, so the older event lands last and the notifier's blind upsert keeps it.",
        ),
        (
            "advisory-lock",
            "a-publishes-both",
            "Relay B cannot take the session advisory lock relay A holds, so it only retries on standby while A publishes the outbox in id order, authorization first.",
        ),
    ],
};

async fn play(run: &Run, single_active: bool) -> Result<(), RunError> {
    let payment = if single_active { "pay_006" } else { "pay_005" };
    let payments = run.actor("payments", Level::Autocommit).await?;
    let psql = run.actor("psql", Level::Autocommit).await?;
    let before = ledger(run).await?;
    let quiet_notifier = NotifierSwitches {
        show_sql: false,
        ..NotifierSwitches::default()
    };
    let mut notifier = notifier::start(run, "notifier", &quiet_notifier).await?;
    let holding = Switches {
        single_active,
        hold_ms: HOLD.as_millis() as u64,
        ..Switches::default()
    };
    let mut relay_a = relay::start(run, "relay A", &holding).await?;
    if single_active {
        reached(&mut relay_a, |m| *m == Milestone::Active).await?;
    }
    let second = Switches {
        single_active,
        ..Switches::default()
    };
    let mut relay_b = if single_active {
        let mut b = relay::start(run, "relay B", &second).await?;
        reached(&mut b, |m| *m == Milestone::Standby).await?;
        Some(b)
    } else {
        None
    };
    authorize(&payments, payment, 3000).await?;
    // Relay A has fetched the authorization and holds its row lock.
    relay_a
        .wait_for(Duration::from_secs(30), |e| matches!(e, EventKind::Note { .. }))
        .await?;
    if relay_b.is_none() {
        // Started while A holds the authorization (the tutorial starts it just after the
        // capture; either way its SKIP LOCKED passes over A's row and finds the capture).
        relay_b = Some(relay::start(run, "relay B", &second).await?);
    }
    capture(&payments, payment).await?;
    if let (false, Some(b)) = (single_active, relay_b.as_mut()) {
        reached(b, |m| matches!(m, Milestone::Published { .. })).await?;
    }
    let published = if single_active { 2 } else { 1 };
    for _ in 0..published {
        reached(&mut relay_a, |m| matches!(m, Milestone::Published { .. })).await?;
    }
    for _ in 0..2 {
        reached(&mut notifier, |m| {
            matches!(m, Milestone::Committed { partition: 2, .. })
        })
        .await?;
    }
    // The standby first: stopped after A, B could take the lock A's end frees and go active
    // before its own stop (seen once under a loaded CI).
    for mut relay in [relay_b, Some(relay_a)].into_iter().flatten() {
        relay.stop().await?;
    }
    notifier.stop().await?;
    let (paid, seen) = statuses(run, &psql, payment).await?;
    psql.close().await;
    payments.close().await;
    judge(run, before, judging(single_active, agree(payment, paid, seen))).await?;
    Ok(())
}

/// `payment`'s status as the payments database has it, then as the notifier's projection shows
/// it: psql on both databases, as the tutorial checks them.
async fn statuses(run: &Run, psql: &PgActor, payment: &str) -> Result<(Option<String>, Option<String>), RunError> {
    let paid = psql
        .psql(&format!(
            "SELECT id, status FROM {}.payments WHERE id = '{payment}'",
            crate::sandbox::postgres::quote_ident(run.schema("payments")?)
        ))
        .await?;
    let seen = psql
        .psql(&format!(
            "SELECT payment_id, status FROM {}.payment_status WHERE payment_id = '{payment}'",
            crate::sandbox::postgres::quote_ident(run.schema("notifier")?)
        ))
        .await?;
    let status = |rows: &[Vec<Value>]| rows.first().and_then(|r| r.get(1)).map(ToString::to_string);
    Ok((status(&paid.rows), status(&seen.rows)))
}

/// The check the figures cannot make: the projection agrees with the payment (`paid`, `seen`).
/// Two swapped events still count as two events processed once.
fn agree(payment: &str, paid: Option<String>, seen: Option<String>) -> Check {
    Check::new(
        format!(
            "the projection shows {payment} as the payments database does ({})",
            paid.clone().unwrap_or_default()
        ),
        seen.clone().unwrap_or_else(|| "no row".into()),
        paid.is_some() && paid == seen,
    )
}

/// How the run is judged, with the projection's check (`agree`) beside the figures.
fn judging(single_active: bool, agree: Check) -> Judging<'static> {
    let expected = Figures {
        captured: 1,
        events: 2,
        messages: 2,
        processed: 2,
        receipts: 1,
        receipt_payments: 1,
        projection_captured: 1,
        ..Figures::default()
    };
    Judging {
        expected,
        scope: Scope::WITH_NOTIFIER,
        extra: vec![agree],
        headlines: (
            "One relay active: the authorization, then the capture",
            "The capture was published before the authorization: the projection is wrong",
        ),
        how: if single_active {
            "Relay B never got the advisory lock while A held it, so one relay published the outbox in id order."
        } else {
            "Relay B skipped the row A had locked and published the later event first; the broker kept the order it was given, and the notifier's blind upsert let the older event win."
        },
        tutorial: Some(tutorial_figures(&[
            ("relay A's hold", "HOLD_SECONDS=6, as here"),
            (
                "the notifier",
                if single_active {
                    "p2@2 authorized, p2@3 captured (after the two-relays run's p2@0 and p2@1; ours is a fresh topic)"
                } else {
                    "p2@0 captured: receipt sent, p2@1 authorized: status updated"
                },
            ),
            (
                "relay B",
                if single_active {
                    "`standby: another relay is active` every 2 s"
                } else {
                    "published the capture at once"
                },
            ),
        ])),
    }
}
