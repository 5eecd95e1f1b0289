//! The wait-for graph from real runs: the isolation lab's deadlock shows its two-edge cycle, on
//! the row locks PostgreSQL reports, before PostgreSQL breaks it; in the same order there is a
//! wait and no cycle. And a spec's waits say what they wait on.

mod common;

use shared::EventKind;
use shared::waits::graph;

#[tokio::test]
async fn the_deadlock_is_a_two_edge_cycle_before_postgresql_breaks_it() {
    let engine = common::engine().await;
    let run = common::play(&engine, "isolation/deadlock", "opposite-order").await;
    let cancelled_at = run
        .events
        .iter()
        .position(|e| matches!(&e.kind, EventKind::Error { code: Some(c), .. } if c == "40P01"))
        .expect("PostgreSQL cancels one of them with 40P01");
    // A moment before the cancel at which both wait for each other.
    let before = (1..cancelled_at)
        .map(|n| graph(&run.events[..n]))
        .find(|g| !g.cycle.is_empty())
        .expect("the cycle formed before PostgreSQL broke it");
    assert_eq!((before.cycle.len(), before.edges.len()), (2, 2), "{before:?}");
    let mut cycle = before.cycle.clone();
    cycle.sort();
    assert_eq!(cycle, ["alice", "bob"]);
    assert!(
        before
            .edges
            .iter()
            .all(|e| e.on.as_deref().is_some_and(|on| on.contains("row"))),
        "{before:?}"
    );
    assert!(before.broken.is_none());
    let after = graph(&run.events[..=cancelled_at]);
    let broken = after.broken.expect("the cycle broken");
    assert_eq!(
        broken.cancelled, "alice",
        "the scenario's own account: alice is cancelled"
    );
    assert_eq!(broken.code, "40P01");
    // The picture of the run says it too.
    let picture = racelab::web::picture::draw(&shared::protocol::StoredRun {
        id: run.run_id.clone(),
        scenario: "isolation/deadlock".into(),
        variant: "opposite-order".into(),
        outcome: run.outcome.clone(),
        events: run.events.clone(),
    });
    assert!(picture.contains("by cancelling alice with 40P01</text>"), "{picture}");

    let same = common::play(&engine, "isolation/deadlock", "same-order").await;
    let waited = (1..=same.events.len()).map(|n| graph(&same.events[..n]));
    assert!(waited.clone().any(|g| g.edges.len() == 1), "bob waits his turn");
    assert!(waited.clone().all(|g| g.cycle.is_empty() && g.broken.is_none()));
}
