//! Operating the outbox: the lag alert, retention, and the index the relay's query stands on.
//! From the stage the chaos test leaves (2,000 events, all published):
//!
//! ```text
//! UPDATE 500
//!  unpublished | oldest_unpublished_age
//! -------------+------------------------
//!            0 | 00:00:00
//! (1 row)
//!
//! DELETE 500
//! ```
//!
//! The first 500 events are backdated to eight days ago (a test's shortcut, as the tutorial's);
//! the lag query finds nothing waiting; the retention delete removes the 500 published more than
//! seven days ago, in a capped batch. Then `EXPLAIN` of the relay's query, which must use the
//! partial index `outbox_unpublished` (a bitmap or plain index scan, costs vary), never a
//! sequential scan of the whole outbox.

use super::figures::Figures;
use super::invariants::Scope;
use super::relay::FETCH;
use super::{Judging, judge, ledger};
use crate::engine::{Budget, Level, Run, RunError};
use crate::labs::{ScenarioDef, actors_at};
use shared::{Check, Value};

/// Events in the stage, and how many are backdated.
pub const EVENTS: i64 = 2000;
pub const BACKDATED: i64 = 500;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "outbox/monitor",
    title: "Monitoring the outbox: lag, retention and the partial index",
    hook: "Alert on the oldest unpublished event's age, delete in capped batches, and keep the relay's query on its index",
    about: "Three jobs keep an outbox healthy. A lag query: alert on the age of the oldest unpublished event, not their count, since a thousand events a second old is a busy minute and one event ten minutes old is a stuck relay. Retention: delete published events older than a week in capped batches. And the partial index on unpublished rows, which keeps the relay's query small however big the table grows.",
    variants: &[(
        "ops",
        "ops.sql",
        "Backdate 500 events, run the lag and retention queries, explain the relay's query",
    )],
    steppable: true,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| actors_at(&["psql"], "a terminal on the payments database"),
    budget: Some(|_| Budget::postgres(1).and_broker(2)),
    play: |run, _| Box::pin(play(run)),
    summarize: None,
    predict: None,
};

async fn play(run: &Run) -> Result<(), RunError> {
    // The chaos test's thousand payments, captured and published (set, not drawn).
    run.setup(&format!(
        "INSERT INTO payments (id, amount_cents, currency, status)
             SELECT format('pay_%s', lpad(n::text, 5, '0')), 100 + n, 'USD', 'captured'
             FROM generate_series(0, {last}) AS n;
         INSERT INTO outbox (aggregate_id, event_type, payload, published_at)
             SELECT p.id, e.type, jsonb_build_object('amount_cents', p.amount_cents, 'currency', 'USD'), now()
             FROM payments p CROSS JOIN (VALUES (1, 'payment.authorized'), (2, 'payment.captured')) AS e(n, type)
             ORDER BY p.id, e.n;
         ANALYZE outbox",
        last = EVENTS / 2 - 1
    ))
    .await?;
    let psql = run.actor("psql", Level::Autocommit).await?;
    let before = ledger(run).await?;
    psql.psql(&format!(
        "UPDATE outbox SET published_at = now() - interval '8 days' WHERE id <= {BACKDATED}"
    ))
    .await?;
    psql.psql(
        "SELECT count(*) AS unpublished, coalesce(max(now() - created_at), interval '0') AS oldest_unpublished_age FROM outbox WHERE published_at IS NULL",
    )
    .await?;
    psql.psql(
        "DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE published_at < now() - interval '7 days' ORDER BY id LIMIT 10000)",
    )
    .await?;
    let plan = psql.psql(&format!("EXPLAIN {FETCH}")).await?;
    psql.close().await;
    let plan: Vec<String> = plan
        .rows
        .iter()
        .filter_map(|r| r.first().and_then(Value::as_text).map(str::to_owned))
        .collect();
    let indexed = plan.iter().any(|l| l.contains("outbox_unpublished"));
    let scanned = plan.iter().any(|l| l.contains("Seq Scan"));
    let expected = Figures {
        captured: EVENTS / 2,
        events: EVENTS - BACKDATED,
        ..Figures::default()
    };
    let uses_index = Check::new(
        "the relay's query reads the partial index outbox_unpublished, with no sequential scan",
        plan.iter()
            .find(|l| l.contains("Scan"))
            .map_or("no scan in the plan".to_owned(), |l| l.trim().to_owned()),
        indexed && !scanned,
    );
    judge(
        run,
        before,
        Judging {
            expected,
            // The staged events stand for the chaos test's, published long ago; none is this
            // scenario's to check.
            scope: Scope {
                notifier: false,
                payments: Some(&[]),
            },
            extra: vec![uses_index],
            headlines: (
                "Nothing waiting, a week kept, and the relay's query on its index",
                "The outbox is not being kept as it should",
            ),
            how: "Retention removed exactly the events published more than seven days ago, and the relay's query stays on the partial index of unpublished rows, whose size is the backlog's, not the table's.",
            tutorial: None,
        },
    )
    .await?;
    Ok(())
}
