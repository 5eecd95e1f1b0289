//! Whether an atlas run showed its anomaly, read from what its reads returned and the rows it
//! left: the atlas's judge where no proof can be had (MariaDB, whose triggers cannot report
//! writes to racelab). Each entry's test is the one Hermitage reads off its own runs: a value
//! that only a dirty, intermediate or half-seen write could give, or a result that no
//! one-at-a-time order of the committed transactions gives. A run where a step failed shows
//! none of the anomalies that need every transaction committed.
//!
//! Checked against the proof's judge on PostgreSQL's runs (`tests/atlas.rs`): the two agree on
//! every cell.

use super::Entry;
use crate::proof::Anomaly;
use crate::{Event, EventKind, Moment};

/// A row of the atlas's table: `(id, value)`.
pub type Row = (i64, i64);

/// What an atlas run's events say, for its judge.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// Each read's rows, in the order the reads returned, with the session that read them.
    pub reads: Vec<(String, Vec<Row>)>,
    /// The table after the run (its ledger's), by id.
    pub after: Option<Vec<Row>>,
    /// Whether any step failed (a transaction refused, rolled back or timed out).
    pub failed: bool,
}

impl Facts {
    /// From a run's events: its results with rows, its errors, its ledger after.
    pub fn of(events: &[Event]) -> Facts {
        let mut facts = Facts::default();
        for event in events {
            match &event.kind {
                EventKind::Result {
                    actor,
                    rows: Some(rows),
                    ..
                } => facts
                    .reads
                    .push((actor.clone(), rows.rows.iter().filter_map(|r| row(r)).collect())),
                EventKind::Error { .. } => facts.failed = true,
                EventKind::Ledger {
                    moment: Moment::After,
                    ledger,
                } => {
                    facts.after = ledger
                        .table("test")
                        .map(|t| t.rows.iter().filter_map(|r| row(r)).collect());
                }
                _ => {}
            }
        }
        facts
    }

    /// `who`'s reads, in order.
    fn of_session<'a>(&'a self, who: &'a str) -> impl Iterator<Item = &'a Vec<Row>> + 'a {
        self.reads.iter().filter(move |(s, _)| s == who).map(|(_, rows)| rows)
    }

    /// Whether `who` read `row` at some point.
    fn saw(&self, who: &str, row: Row) -> bool {
        self.of_session(who).any(|rows| rows.contains(&row))
    }

    fn ends_as(&self, rows: &[Row]) -> bool {
        self.after.as_deref() == Some(rows)
    }
}

/// A row of two numbers (`id`, `value`), as text or numbers.
fn row(values: &[crate::Value]) -> Option<Row> {
    let int = |v: &crate::Value| v.as_int().or_else(|| v.as_text()?.trim().parse().ok());
    Some((int(values.first()?)?, int(values.get(1)?)?))
}

/// The anomaly `entry`'s run showed, by `facts`; `None` when it showed none.
pub fn showed(entry: &Entry, facts: &Facts) -> Option<Anomaly> {
    let committed = !facts.failed;
    let (shown, anomaly) = match entry.id {
        // The rows end half alice's, half bob's.
        "g0" => (
            committed && (facts.ends_as(&[(1, 11), (2, 22)]) || facts.ends_as(&[(1, 12), (2, 21)])),
            Anomaly::DirtyWrite,
        ),
        // Bob read 101, which alice took back.
        "g1a" => (facts.saw("bob", (1, 101)), Anomaly::AbortedRead),
        // Bob read 101, which alice replaced before she committed.
        "g1b" => (facts.saw("bob", (1, 101)), Anomaly::IntermediateRead),
        // Each read the other's uncommitted write.
        "g1c" => (
            facts.saw("alice", (2, 22)) && facts.saw("bob", (1, 11)),
            Anomaly::CircularInformationFlow,
        ),
        "otv" => (half_of_bob(facts), Anomaly::ObservedTransactionVanishes),
        // The second search found the row the first did not.
        "pmp" => {
            let finds: Vec<&Vec<Row>> = facts.of_session("alice").collect();
            let phantom = matches!(finds.as_slice(), [first, .., last] if first.is_empty() && last.contains(&(3, 30)));
            (phantom, Anomaly::PredicateManyPreceders)
        }
        // Bob deleted "the rows worth 20", and one is left: no serial order leaves it.
        "pmp-write" => (
            committed && facts.ends_as(&[(1, 20), (2, 30)]),
            Anomaly::PredicateManyPreceders,
        ),
        // Both read 10 and both writes of 11 committed: one increment is lost.
        "p4" => (
            committed && facts.saw("alice", (1, 10)) && facts.saw("bob", (1, 10)) && facts.ends_as(&[(1, 11), (2, 20)]),
            Anomaly::LostUpdate,
        ),
        // Alice saw row 1 before bob's move and row 2 after it, and the move was whole (a
        // statement of bob's that timed out would leave half of it, which alice may see).
        "g-single" => (
            facts.saw("alice", (1, 10)) && facts.saw("alice", (2, 18)) && facts.ends_as(&[(1, 12), (2, 18)]),
            Anomaly::ReadSkew,
        ),
        // Alice read row 1 before bob's move, yet her delete of the rows worth 20 found none:
        // it saw row 2 after the move.
        "g-single-write" => (
            committed && facts.saw("alice", (1, 10)) && facts.ends_as(&[(1, 12), (2, 18)]),
            Anomaly::ReadSkew,
        ),
        // Both saw both rows unchanged, and both changes committed.
        "g2-item" => (
            committed && facts.saw("alice", (1, 10)) && facts.saw("bob", (2, 20)) && facts.ends_as(&[(1, 11), (2, 21)]),
            Anomaly::WriteSkew,
        ),
        // Both found no multiple of 3, and both added one.
        "g2" => (
            committed
                && facts.of_session("alice").next().is_some_and(Vec::is_empty)
                && facts.of_session("bob").next().is_some_and(Vec::is_empty)
                && facts.ends_as(&[(1, 10), (2, 20), (3, 30), (4, 42)]),
            Anomaly::AntiDependencyCycle,
        ),
        // The report saw the deposit, and the withdrawal decided without it took the fee.
        "read-only" => (
            committed
                && facts.saw("carol", (2, 20))
                && facts.saw("carol", (1, 0))
                && facts.ends_as(&[(1, -11), (2, 20)]),
            Anomaly::ReadOnlyTransaction,
        ),
        _ => (false, Anomaly::AntiDependencyCycle),
    };
    shown.then_some(anomaly)
}

/// Carol saw bob's write to row 2 (18), then row 1 without his write to it (11, alice's), and
/// bob's writes both took effect.
fn half_of_bob(facts: &Facts) -> bool {
    let reads: Vec<&Vec<Row>> = facts.of_session("carol").collect();
    let seen = reads
        .iter()
        .enumerate()
        .any(|(i, rows)| rows.contains(&(2, 18)) && reads[i + 1..].iter().any(|later| later.contains(&(1, 11))));
    seen && facts.ends_as(&[(1, 12), (2, 18)])
}

/// Errors that end a wait rather than refuse a step: MariaDB's lock wait timeout (`1205`) and a
/// statement cancelled at the step limit (`1317`, racelab's `KILL QUERY`). A step that waited
/// and ended so was held back by a lock: its cell says it waited.
pub fn ended_a_wait(code: &str) -> bool {
    matches!(code, "1205" | "1317")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atlas::find;

    fn facts(reads: &[(&str, &[Row])], after: &[Row], failed: bool) -> Facts {
        Facts {
            reads: reads.iter().map(|(s, r)| ((*s).to_owned(), r.to_vec())).collect(),
            after: Some(after.to_vec()),
            failed,
        }
    }

    fn entry(id: &str) -> &'static Entry {
        find(id).unwrap_or_else(|| panic!("no entry {id}"))
    }

    #[test]
    fn a_lost_update_needs_both_reads_of_10_and_both_writes_committed() {
        let p4 = entry("p4");
        let both = [("alice", &[(1, 10)][..]), ("bob", &[(1, 10)][..])];
        assert_eq!(
            showed(p4, &facts(&both, &[(1, 11), (2, 20)], false)),
            Some(Anomaly::LostUpdate)
        );
        assert_eq!(
            showed(p4, &facts(&both, &[(1, 11), (2, 20)], true)),
            None,
            "bob refused"
        );
        let later = [("alice", &[(1, 10)][..]), ("bob", &[(1, 11)][..])];
        assert_eq!(showed(p4, &facts(&later, &[(1, 11), (2, 20)], false)), None);
    }

    #[test]
    fn reads_that_only_an_uncommitted_write_could_give_are_dirty() {
        let seen = [("bob", &[(1, 101), (2, 20)][..])];
        assert_eq!(
            showed(entry("g1a"), &facts(&seen, &[(1, 10), (2, 20)], false)),
            Some(Anomaly::AbortedRead)
        );
        assert_eq!(
            showed(entry("g1b"), &facts(&seen, &[(1, 11), (2, 20)], false)),
            Some(Anomaly::IntermediateRead)
        );
        let clean = [("bob", &[(1, 10), (2, 20)][..])];
        assert_eq!(showed(entry("g1a"), &facts(&clean, &[(1, 10), (2, 20)], false)), None);
        let mixed = facts(&[], &[(1, 12), (2, 21)], false);
        assert_eq!(showed(entry("g0"), &mixed), Some(Anomaly::DirtyWrite));
        assert_eq!(showed(entry("g0"), &facts(&[], &[(1, 12), (2, 22)], false)), None);
    }

    #[test]
    fn half_a_transaction_seen_is_otv_and_a_phantom_is_pmp() {
        let otv = [
            ("carol", &[(1, 11)][..]),
            ("carol", &[(2, 18)][..]),
            ("carol", &[(2, 18)][..]),
            ("carol", &[(1, 11)][..]),
        ];
        let done = [(1, 12), (2, 18)];
        assert_eq!(
            showed(entry("otv"), &facts(&otv, &done, false)),
            Some(Anomaly::ObservedTransactionVanishes)
        );
        let whole = [("carol", &[(2, 18)][..]), ("carol", &[(1, 12)][..])];
        assert_eq!(showed(entry("otv"), &facts(&whole, &done, false)), None);
        let phantom = [("alice", &[][..]), ("alice", &[(3, 30)][..])];
        let with_30 = [(1, 10), (2, 20), (3, 30)];
        assert_eq!(
            showed(entry("pmp"), &facts(&phantom, &with_30, false)),
            Some(Anomaly::PredicateManyPreceders)
        );
        let steady = [("alice", &[][..]), ("alice", &[][..])];
        assert_eq!(showed(entry("pmp"), &facts(&steady, &with_30, false)), None);
    }

    #[test]
    fn the_facts_come_from_the_runs_results_errors_and_ledger() {
        use crate::{Ledger, Table, Value};
        let event = |kind| Event { seq: 0, at_ms: 0, kind };
        let events = [
            event(EventKind::Result {
                actor: "bob".into(),
                summary: "1 row".into(),
                rows: Some(crate::event::Rows {
                    columns: vec!["id".into(), "value".into()],
                    rows: vec![vec![Value::Text("1".into()), Value::Text("101".into())]],
                }),
                detail: None,
            }),
            event(EventKind::Ledger {
                moment: Moment::After,
                ledger: Ledger {
                    tables: vec![Table {
                        name: "test".into(),
                        columns: vec!["id".into(), "value".into()],
                        key_columns: 1,
                        rows: vec![vec![Value::Int(1), Value::Int(10)]],
                    }],
                },
            }),
        ];
        let facts = Facts::of(&events);
        assert_eq!(facts.reads, vec![("bob".to_owned(), vec![(1, 101)])]);
        assert_eq!(facts.after, Some(vec![(1, 10)]));
        assert!(!facts.failed);
    }
}
