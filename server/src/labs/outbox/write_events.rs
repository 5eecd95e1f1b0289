//! The outbox write: each change to a payment and the event describing it in one transaction.
//! `authorize pay_001 2500`, `capture pay_001`, `authorize pay_002 4000` print `pay_001: authorize
//! recorded`, `pay_001: capture recorded`, `pay_002: authorize recorded`; the outbox then holds
//! three events, ids 1 to 3, none published, and nothing has reached the broker.
//!
//! `guard`: a second `capture pay_001` finds it no longer authorized and raises `ValueError:
//! pay_001 is not authorized`; the rollback takes its outbox row with it, so there is no extra
//! event.

use super::figures::Figures;
use super::invariants::Scope;
use super::writer::{authorize, capture};
use super::{Judging, judge, ledger};
use crate::engine::{Budget, Level, Run, RunError};
use crate::labs::{ScenarioDef, actors_at};
use shared::Check;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "outbox/write-events",
    title: "The outbox: the change and its event in one transaction",
    hook: "The event is a row beside the payment, committed with it or not at all",
    about: "Instead of publishing, the payment service inserts the event into an outbox table in the same transaction as the change it describes. An event exists if and only if its change committed, and nothing has left for the broker yet: a relay will do that. A capture that finds the payment not authorized raises, and the rollback takes its event with it.",
    variants: &[
        (
            "three-events",
            "three writes",
            "authorize pay_001, capture pay_001, authorize pay_002",
        ),
        (
            "guard",
            "capture twice",
            "The same three, then a second capture of pay_001: refused, rolled back, no event",
        ),
    ],
    steppable: true,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| {
        let mut lanes = actors_at(&["payments"], "payments.py, autocommit with explicit transactions");
        lanes.extend(actors_at(&["psql"], "a terminal on the payments database"));
        lanes
    },
    budget: Some(|_| Budget::postgres(2).and_broker(2)),
    play: |run, variant| Box::pin(play(run, variant == "guard")),
    summarize: None,
    predict: None,
};

async fn play(run: &Run, guard: bool) -> Result<(), RunError> {
    let payments = run.actor("payments", Level::Autocommit).await?;
    let psql = run.actor_in("psql", "payments", Level::Autocommit).await?;
    let before = ledger(run).await?;
    authorize(&payments, "pay_001", 2500).await?;
    capture(&payments, "pay_001").await?;
    authorize(&payments, "pay_002", 4000).await?;
    let mut extra = Vec::new();
    if guard {
        let again = capture(&payments, "pay_001").await?;
        extra.push(Check::new(
            "a second capture of pay_001 is refused",
            if again {
                "it was recorded"
            } else {
                "refused and rolled back"
            },
            !again,
        ));
    }
    psql.psql("SELECT id, aggregate_id, event_type, published_at FROM outbox ORDER BY id")
        .await?;
    psql.close().await;
    payments.close().await;
    // Three events, each beside its committed change, none published yet.
    let expected = Figures {
        captured: 1,
        events: 3,
        unpublished: 3,
        ..Figures::default()
    };
    judge(
        run,
        before,
        Judging {
            expected,
            scope: Scope::default(),
            extra,
            headlines: (
                "Every committed change has its event, and no event lacks its change",
                "The outbox and the payments disagree",
            ),
            how: "Each event was inserted in the transaction of the change it describes, so the two committed together; the refused capture rolled back with its event.",
            tutorial: None,
        },
    )
    .await?;
    Ok(())
}
