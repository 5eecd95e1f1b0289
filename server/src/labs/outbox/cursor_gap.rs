//! A relay that remembers the last id it read (`WHERE id > last_seen`) loses a transaction that
//! commits late. From the step-3 stage (ids 1 to 3):
//!
//! ```text
//! slow transaction took id 4, commits in 2s
//! fast transaction committed id 5
//! cursor relay reads ids [5], moves last_seen to 5
//! slow transaction committed id 4
//! next poll reads ids []: id 4 is never published
//! ```
//!
//! Identity values are handed out when a row is inserted, but rows become visible when their
//! transaction commits, and transactions do not commit in the order they started. The tutorial
//! sleeps to get this order; racelab plays it step by step, the slow transaction open while the
//! fast one commits and the cursor reads. Polling `published_at IS NULL` has no cursor to skip
//! past: it reads id 4 once it commits.

use super::figures::Figures;
use super::invariants::Scope;
use super::{Judging, judge, ledger, stage_three_events};
use crate::engine::{Budget, Level, Run, RunError};
use crate::labs::{ScenarioDef, actors_at};
use shared::{Check, Value};

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "outbox/cursor-gap",
    title: "A cursor relay skips a transaction that commits late",
    hook: "id 5 commits before id 4, the cursor moves past 4, and 4 is never published",
    about: "A relay that polls WHERE id > last_seen assumes ids become visible in order. They do not: a slow transaction takes id 4 and stays open while a fast one takes id 5 and commits. The cursor reads 5 and moves on; when 4 commits, it is behind the cursor forever. The outbox relay polls published_at IS NULL instead, which has no cursor to skip past.",
    variants: &[(
        "cursor",
        "WHERE id > last_seen",
        "A slow and a fast transaction, and a cursor",
    )],
    steppable: true,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| {
        let mut lanes = actors_at(&["slow"], "a transaction that stays open");
        lanes.extend(actors_at(&["cursor"], "cursor_gap.py's relay, autocommit"));
        lanes
    },
    budget: Some(|_| Budget::postgres(2).and_broker(2)),
    play: |run, _| Box::pin(play(run)),
    summarize: None,
    predict: None,
};

const INSERT: &str =
    "INSERT INTO outbox (aggregate_id, event_type, payload) VALUES ($1, 'payment.authorized', '{}') RETURNING id";
const READ: &str = "SELECT id FROM outbox WHERE id > $1 ORDER BY id";

async fn play(run: &Run) -> Result<(), RunError> {
    stage_three_events(run).await?;
    let slow = run.actor("slow", Level::ReadCommitted).await?;
    let cursor = run.actor("cursor", Level::Autocommit).await?;
    let before = ledger(run).await?;
    let last_seen = cursor
        .query("SELECT coalesce(max(id), 0) FROM outbox", &[])
        .await?
        .int()?;
    let slow_id = slow.query(INSERT, &["pay_slow".into()]).await?.int()?;
    slow.lane()
        .say_exactly(format!("slow transaction took id {slow_id}, commits in 2s"));
    let fast_id = cursor.query(INSERT, &["pay_fast".into()]).await?.int()?;
    cursor
        .lane()
        .say_exactly(format!("fast transaction committed id {fast_id}"));
    let read = ids(&cursor.query(READ, &[last_seen.into()]).await?.rows);
    let last_seen = read.last().copied().unwrap_or(last_seen);
    cursor.lane().say_exactly(format!(
        "cursor relay reads ids {}, moves last_seen to {last_seen}",
        list(&read)
    ));
    slow.commit().await?;
    slow.lane()
        .say_exactly(format!("slow transaction committed id {slow_id}"));
    let next = ids(&cursor.query(READ, &[last_seen.into()]).await?.rows);
    cursor.lane().say_exactly(format!(
        "next poll reads ids {}: id {} is never published",
        list(&next),
        fast_id - 1
    ));
    // What the outbox relay's own query sees now: every unpublished row, the late one included.
    let unpublished = run
        .check("SELECT id FROM outbox WHERE published_at IS NULL ORDER BY id", &[])
        .await?;
    let outbox_sees = ids(&unpublished.rows).contains(&slow_id);
    let cursor_saw = read.contains(&slow_id) || next.contains(&slow_id);
    cursor
        .query("DELETE FROM outbox WHERE aggregate_id IN ('pay_slow', 'pay_fast')", &[])
        .await?;
    slow.close().await;
    cursor.close().await;
    // The stage's three events stay, unpublished: no relay ran here.
    let expected = Figures {
        captured: 1,
        events: 3,
        unpublished: 3,
        ..Figures::default()
    };
    let checks = vec![
        Check::new(
            format!("the cursor reads id {slow_id} once it commits"),
            if cursor_saw { "it did" } else { "it never did" },
            cursor_saw,
        ),
        Check::new(
            format!("polling published_at IS NULL reads id {slow_id}"),
            if outbox_sees { "it does" } else { "it does not" },
            outbox_sees,
        ),
    ];
    judge(
        run,
        before,
        Judging {
            expected,
            scope: Scope::default(),
            extra: checks,
            headlines: ("Every committed event is read", "An event committed behind the cursor is never read"),
            how: "Ids were handed out in one order and committed in another: the cursor moved past id 4 while it was still invisible. The outbox relay's query, published_at IS NULL, would have read it.",
            tutorial: None,
        },
    )
    .await?;
    Ok(())
}

fn ids(rows: &[Vec<Value>]) -> Vec<i64> {
    rows.iter().filter_map(|r| r.first().and_then(Value::as_int)).collect()
}

/// `[5]`, `[]`, `[4, 5]`: a Python list as it prints.
fn list(ids: &[i64]) -> String {
    let items: Vec<String> = ids.iter().map(ToString::to_string).collect();
    format!("[{}]", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::list;

    #[test]
    fn lists_print_as_python_prints_them() {
        assert_eq!(list(&[5]), "[5]");
        assert_eq!(list(&[]), "[]");
        assert_eq!(list(&[4, 5]), "[4, 5]");
    }
}
