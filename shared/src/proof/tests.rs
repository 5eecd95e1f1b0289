//! Hand-written histories, one per anomaly class, and the ones PostgreSQL makes safe.

use super::*;
use proptest::prelude::*;

/// A history written step by step: transactions by session name, versions and reads by index.
struct Story {
    history: History,
    step: u64,
}

impl Story {
    fn new(txns: &[(&str, End)]) -> Story {
        let txns = txns
            .iter()
            .map(|(name, end)| Txn {
                name: (*name).to_owned(),
                session: (*name).to_owned(),
                end: end.clone(),
                ended: None,
            })
            .collect();
        Story {
            history: History {
                txns,
                ..History::default()
            },
            step: 0,
        }
    }

    fn version(&mut self, by: Option<usize>, key: &str, value: Option<&str>) -> usize {
        self.step += 1;
        self.history.versions.push(Version {
            row: Row::new("test", key),
            value: value.map(|v| format!("value={v}")),
            by,
            step: by.map(|_| self.step),
        });
        self.history.versions.len() - 1
    }

    fn setup(&mut self, key: &str, value: &str) -> usize {
        self.version(None, key, Some(value))
    }

    fn write(&mut self, txn: usize, key: &str, value: &str) -> usize {
        self.version(Some(txn), key, Some(value))
    }

    fn read(&mut self, txn: usize, saw: &[usize], missed: &[usize]) {
        self.step += 1;
        self.history.reads.push(Read {
            txn,
            step: self.step,
            saw: saw.to_vec(),
            missed: missed.to_vec(),
        });
    }

    fn proof(&self) -> Proof {
        derive(&self.history)
    }
}

const C: End = End::Committed;

fn cancelled(code: &str) -> End {
    End::Aborted {
        code: Some(code.to_owned()),
    }
}

fn kinds(proof: &Proof, cycle: &[usize]) -> Vec<Dep> {
    cycle.iter().map(|&e| proof.edges[e].dep).collect()
}

#[test]
fn two_writers_overwriting_each_other_in_opposite_orders_is_a_dirty_write() {
    let mut s = Story::new(&[("alice", C), ("bob", C)]);
    s.write(0, "1", "11");
    s.write(1, "1", "12");
    s.write(1, "2", "22");
    s.write(0, "2", "21");
    let proof = s.proof();
    assert_eq!(proof.anomaly, Some(Anomaly::DirtyWrite));
    assert_eq!(kinds(&proof, &proof.cycle), [Dep::Ww, Dep::Ww]);
    assert_eq!(
        proof.lines.last().map(String::as_str),
        Some("No order of one-at-a-time runs explains this: dirty write (G0).")
    );
}

#[test]
fn reading_a_version_whose_writer_rolled_back_is_an_aborted_read() {
    let mut s = Story::new(&[("alice", cancelled("40001")), ("bob", C)]);
    let x0 = s.setup("1", "10");
    let x1 = s.write(0, "1", "11");
    s.read(1, &[x1], &[]);
    assert_eq!(s.proof().anomaly, Some(Anomaly::AbortedRead));
    // The same read of the committed version is no anomaly at all.
    s.history.reads[0].saw = vec![x0];
    assert_eq!(s.proof().anomaly, None);
}

#[test]
fn reading_a_version_its_writer_replaced_before_committing_is_an_intermediate_read() {
    let mut s = Story::new(&[("alice", C), ("bob", C)]);
    s.setup("1", "10");
    let x1 = s.write(0, "1", "11");
    s.write(0, "1", "12");
    s.read(1, &[x1], &[]);
    assert_eq!(s.proof().anomaly, Some(Anomaly::IntermediateRead));
    assert_eq!(Anomaly::IntermediateRead.class(), "G1b");
}

#[test]
fn each_reading_the_others_write_is_circular_information_flow() {
    let mut s = Story::new(&[("alice", C), ("bob", C)]);
    s.setup("1", "10");
    s.setup("2", "20");
    let x1 = s.write(0, "1", "11");
    let y1 = s.write(1, "2", "21");
    s.read(0, &[y1], &[]);
    s.read(1, &[x1], &[]);
    let proof = s.proof();
    assert_eq!(proof.anomaly, Some(Anomaly::CircularInformationFlow));
    assert_eq!(kinds(&proof, &proof.cycle), [Dep::Wr, Dep::Wr]);
}

#[test]
fn two_read_modify_writes_of_one_row_are_a_lost_update() {
    let mut s = Story::new(&[("alice", C), ("bob", C)]);
    let x0 = s.setup("1", "10");
    s.read(0, &[x0], &[]);
    s.read(1, &[x0], &[]);
    s.write(0, "1", "11");
    s.write(1, "1", "11");
    let proof = s.proof();
    assert_eq!(proof.anomaly, Some(Anomaly::LostUpdate));
    assert_eq!(proof.anomaly.map(Anomaly::class), Some("G-single"));
    assert_eq!(
        proof.lines,
        [
            "bob read test 1 = value=10, which alice then replaced with value=11, so bob comes before alice.",
            "However, bob wrote test 1 = value=11 over alice's value=11, so alice comes before bob.",
            "No order of one-at-a-time runs explains this: lost update (G-single).",
        ]
    );
}

#[test]
fn seeing_one_row_before_a_change_and_another_after_it_is_read_skew() {
    let mut s = Story::new(&[("alice", C), ("bob", C)]);
    let x0 = s.setup("1", "10");
    s.setup("2", "20");
    s.read(0, &[x0], &[]);
    s.write(1, "1", "11");
    let y1 = s.write(1, "2", "21");
    s.read(0, &[y1], &[]);
    let proof = s.proof();
    assert_eq!(proof.anomaly, Some(Anomaly::ReadSkew));
    assert_eq!(kinds(&proof, &proof.cycle), [Dep::Rw, Dep::Wr]);
    assert_eq!(
        proof.lines[0],
        "alice read test 1 = value=10, which bob then replaced with value=11, so alice comes before bob."
    );
    assert_eq!(
        proof.lines[1],
        "However, alice read test 2 = value=21, which bob wrote, so bob comes before alice."
    );
}

#[test]
fn missing_a_row_a_predicate_matches_is_predicate_many_preceders() {
    let mut s = Story::new(&[("alice", C), ("bob", C)]);
    s.setup("1", "10");
    // bob inserts a row alice's predicate matches and updates one alice then reads.
    let z = s.version(Some(1), "3", Some("30"));
    let x1 = s.write(1, "1", "11");
    s.read(0, &[], &[z]);
    s.read(0, &[x1], &[]);
    let proof = s.proof();
    assert_eq!(proof.anomaly, Some(Anomaly::PredicateManyPreceders));
    assert_eq!(
        proof.lines[0],
        "alice's read did not see bob's insert of test 3 = value=30, so alice comes before bob."
    );
}

/// Alice and bob each read both rows, then each changes a different one; bob ends as `bob`.
fn write_skew(bob: End) -> Story {
    let mut s = Story::new(&[("alice", C), ("bob", bob)]);
    let x0 = s.setup("1", "10");
    let y0 = s.setup("2", "20");
    s.read(0, &[x0, y0], &[]);
    s.read(1, &[x0, y0], &[]);
    s.write(0, "1", "11");
    s.write(1, "2", "21");
    s
}

#[test]
fn two_checks_each_missing_the_others_write_is_write_skew() {
    let proof = write_skew(C).proof();
    assert_eq!(proof.anomaly, Some(Anomaly::WriteSkew));
    assert_eq!(proof.anomaly.map(Anomaly::class), Some("G2-item"));
    assert_eq!(kinds(&proof, &proof.cycle), [Dep::Rw, Dep::Rw]);
}

#[test]
fn two_checks_missing_each_others_insert_is_write_skew_on_a_predicate() {
    let mut s = Story::new(&[("alice", C), ("bob", C)]);
    let e1 = s.setup("1", "3000");
    let a = s.version(Some(0), "2", Some("1500"));
    let b = s.version(Some(1), "3", Some("1500"));
    s.read(0, &[e1], &[b]);
    s.read(1, &[e1], &[a]);
    let proof = s.proof();
    assert_eq!(proof.anomaly, Some(Anomaly::PredicateWriteSkew));
    assert_eq!(proof.anomaly.map(Anomaly::class), Some("G2"));
    assert!(proof.cycle.iter().all(|&e| proof.edges[e].predicate));
}

#[test]
fn a_read_only_report_closing_a_cycle_is_the_read_only_transaction_anomaly() {
    // Fekete, O'Neil and O'Neil (2004): a report sees a deposit but not the withdrawal that
    // was computed before it.
    let mut s = Story::new(&[("withdraw", C), ("deposit", C), ("report", C)]);
    let x0 = s.setup("savings", "0");
    let y0 = s.setup("checking", "0");
    s.read(0, &[x0, y0], &[]);
    let x1 = s.write(1, "savings", "20");
    s.read(2, &[x1, y0], &[]);
    s.write(0, "checking", "-11");
    let proof = s.proof();
    assert_eq!(proof.anomaly, Some(Anomaly::ReadOnlyTransaction));
    assert_eq!(proof.cycle.len(), 3);
}

#[test]
fn a_cancelled_commit_leaves_no_cycle_and_the_proof_names_what_it_would_have_closed() {
    let proof = write_skew(cancelled("40001")).proof();
    assert_eq!(proof.anomaly, None);
    assert!(proof.cycle.is_empty());
    let prevented = proof
        .prevented
        .as_ref()
        .expect("the cycle bob's commit would have closed");
    assert_eq!((prevented.anomaly, prevented.cancelled), (Anomaly::WriteSkew, 1));
    assert!(prevented.cycle.iter().all(|&e| e >= proof.would_have));
    assert_eq!(
        proof.lines.last().map(String::as_str),
        Some("PostgreSQL cancelled bob instead (SQLSTATE 40001).")
    );
}

#[test]
fn on_mariadb_the_proof_names_mariadb_and_its_error_number() {
    let mut story = write_skew(cancelled("1213"));
    story.history.server = crate::Service::Mariadb;
    let proof = story.proof();
    assert_eq!(
        proof.lines.last().map(String::as_str),
        Some("MariaDB cancelled bob instead (error 1213).")
    );
    // A transaction cancelled outside any cycle: why, in MariaDB's words.
    let mut s = Story::new(&[("alice", C), ("bob", cancelled("1020"))]);
    s.history.server = crate::Service::Mariadb;
    s.setup("1", "10");
    assert_eq!(
        s.proof().lines.last().map(String::as_str),
        Some("MariaDB cancelled bob as a row it wrote had changed since its snapshot (error 1020).")
    );
}

#[test]
fn a_history_in_one_order_is_explained_by_that_order() {
    let mut s = Story::new(&[("alice", C), ("bob", C)]);
    s.setup("1", "10");
    let x1 = s.write(0, "1", "11");
    s.read(1, &[x1], &[]);
    s.history.waits.push(Wait { waiter: 1, holder: 0 });
    let proof = s.proof();
    assert_eq!((proof.anomaly, proof.prevented.is_none()), (None, true));
    assert_eq!(proof.order, [0, 1]);
    assert_eq!(
        proof.lines,
        [
            "bob read test 1 = value=11, which alice wrote, so alice comes before bob.",
            "One order of one-at-a-time runs explains every read: alice, then bob.",
            "bob waited for alice to finish (a lock alice held).",
        ]
    );
}

#[test]
fn indexes_out_of_range_are_left_out_not_a_panic() {
    let mut s = Story::new(&[("alice", C)]);
    s.read(0, &[7], &[9]);
    s.history.versions.push(Version {
        row: Row::new("t", "1"),
        value: None,
        by: Some(5),
        step: None,
    });
    assert_eq!(s.proof().anomaly, None);
}

/// A history run one transaction at a time: each reads the newest committed versions (and its
/// own), and its predicate reads may miss versions only later transactions install.
fn serial_history() -> impl Strategy<Value = History> {
    let op = (any::<bool>(), 0..4usize);
    let txn = (proptest::collection::vec(op, 0..6), prop::bool::weighted(0.2));
    (
        proptest::collection::vec(txn, 1..7),
        proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
    )
        .prop_map(|(txns, misses)| {
            let mut history = History::default();
            for key in 0..2 {
                history.versions.push(Version {
                    row: Row::new("t", key.to_string()),
                    value: Some(format!("setup{key}")),
                    by: None,
                    step: None,
                });
            }
            let mut step = 0;
            for (t, (ops, aborts)) in txns.iter().enumerate() {
                history.txns.push(Txn {
                    name: format!("t{t}"),
                    session: format!("t{t}"),
                    end: if *aborts {
                        End::Aborted { code: None }
                    } else {
                        End::Committed
                    },
                    ended: Some(step + ops.len() as u64 + 1),
                });
                for (i, &(write, key)) in ops.iter().enumerate() {
                    step += 1;
                    let row = Row::new("t", key.to_string());
                    if write {
                        history.versions.push(Version {
                            row,
                            value: Some(format!("{t}.{i}")),
                            by: Some(t),
                            step: Some(step),
                        });
                        continue;
                    }
                    let visible = history.versions.iter().rposition(|v| {
                        v.row == row && v.by.is_none_or(|w| w == t || history.txns[w].end == End::Committed)
                    });
                    history.reads.push(Read {
                        txn: t,
                        step,
                        saw: visible.into_iter().collect(),
                        missed: Vec::new(),
                    });
                }
                step += 1;
            }
            // Predicate reads that missed versions installed after them, by later transactions.
            for pick in misses {
                if history.reads.is_empty() {
                    break;
                }
                let r = pick.index(history.reads.len());
                let reader = history.reads[r].txn;
                if let Some(later) = history.versions.iter().position(|v| v.by.is_some_and(|w| w > reader)) {
                    history.reads[r].missed.push(later);
                }
            }
            history
        })
}

proptest! {
    #[test]
    fn a_serial_history_never_yields_a_cycle(history in serial_history()) {
        let proof = derive(&history);
        prop_assert_eq!(proof.anomaly, None);
        prop_assert!(proof.cycle.is_empty());
        prop_assert!(proof.prevented.is_none());
        let committed: Vec<usize> =
            (0..history.txns.len()).filter(|&t| history.txns[t].end == End::Committed).collect();
        let mut sorted = proof.order.clone();
        sorted.sort_unstable();
        prop_assert_eq!(sorted, committed);
        let at = |t: usize| proof.order.iter().position(|&o| o == t);
        for edge in &proof.edges[..proof.would_have] {
            prop_assert!(at(edge.from) < at(edge.to), "{} before {}", edge.from, edge.to);
        }
    }
}

#[test]
fn an_anomalys_id_is_its_name_in_json() {
    for anomaly in [
        Anomaly::DirtyWrite,
        Anomaly::PredicateManyPreceders,
        Anomaly::PredicateWriteSkew,
        Anomaly::ReadOnlyTransaction,
    ] {
        let json = serde_json::to_value(anomaly).expect("serialise");
        assert_eq!(json.as_str(), Some(anomaly.id()));
    }
}
