//! Why it happened: the dependency graph of a run's transactions, derived from what they were
//! observed to read and write, and the cycle in it that no one-at-a-time order explains.
//!
//! The model is Adya's (*Generalized Isolation Level Definitions*, 2000), as Jepsen's Elle and
//! the `adya` crate use it. A run is a [`History`]: its transactions, every version of every row
//! they installed (in the order the server installed them), and every read with the versions it
//! saw and the ones it missed. [`derive`] turns that into edges between committed transactions:
//!
//! - **write-write** (`ww`): T1 installed a row's version, T2 the next one: T1 comes before T2;
//! - **write-read** (`wr`): T2 read a version T1 installed: T1 comes before T2;
//! - **read-write** (`rw`, an anti-dependency): T1 read a version and T2 installed the next one,
//!   or T2 installed a version T1's read should have matched and did not see: T1 comes before T2.
//!
//! A cycle in those edges is a contradiction: no order of one-at-a-time runs explains what the
//! transactions saw. Which kinds of edge close it names the anomaly ([`Anomaly`]): only `ww` is a
//! dirty write (G0), `ww`/`wr` circular information flow (G1c), one `rw` G-single (lost update,
//! read skew), more G2 (write skew). Where no committed cycle exists but one would have, had a
//! transaction PostgreSQL cancelled committed, the proof shows that cycle and what PostgreSQL did
//! instead ([`Prevented`]).
//!
//! Everything here is pure: the server observes, this module reasons, and its answer travels in
//! the event stream ([`crate::EventKind::Proof`]) so the CLI, the page and a replay show the same.

mod cycle;
pub mod html;
pub mod picture;
mod words;

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

pub use words::ordinal_name;

/// A row, by its table and its primary key's value, in the reader's words: `test 1`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Row {
    pub table: String,
    pub key: String,
}

impl Row {
    pub fn new(table: impl Into<String>, key: impl Into<String>) -> Row {
        Row {
            table: table.into(),
            key: key.into(),
        }
    }
}

impl std::fmt::Display for Row {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.table, self.key)
    }
}

/// How a transaction ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "end", rename_all = "snake_case")]
pub enum End {
    Committed,
    /// Rolled back, by the reader or by the server: `code` is the SQLSTATE (MariaDB: the error
    /// number) that cancelled it (`40001`, `1213`), if an error did.
    Aborted {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
    },
    /// Still open when the run ended (a session the spec never committed).
    Unfinished,
}

/// One transaction of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Txn {
    /// How a reader calls it: the session's name (`alice`), or `alice's 2nd transaction`.
    pub name: String,
    /// The session (the swimlane) it ran in.
    pub session: String,
    #[serde(flatten)]
    pub end: End,
    /// The step that ended it, when it did end. Had a rolled-back transaction committed there,
    /// every read after that step would have seen its writes: a proof never says they missed
    /// them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<u64>,
}

/// One version of a row, as a transaction installed it (or the setup, before any did).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Version {
    pub row: Row,
    /// The row's values as a reader tells them apart (`value=11`); `None`: the row was deleted.
    pub value: Option<String>,
    /// The transaction that installed it; `None`: the setup did.
    pub by: Option<usize>,
    /// The run's step that wrote it (an index the server chose: its event's sequence number).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
}

/// One read: the versions it saw, and the versions it did not see that it would have matched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Read {
    pub txn: usize,
    pub step: u64,
    /// Indexes into [`History::versions`]: what the read returned or counted.
    pub saw: Vec<usize>,
    /// Versions (other transactions' newer ones) its predicate matches that its snapshot hid.
    pub missed: Vec<usize>,
}

/// A step that waited for another transaction's lock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wait {
    pub waiter: usize,
    pub holder: usize,
}

/// What a run's transactions did, as observed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    pub txns: Vec<Txn>,
    /// Every version, in the order the server installed them (the setup's first).
    pub versions: Vec<Version>,
    pub reads: Vec<Read>,
    pub waits: Vec<Wait>,
    /// The server it played on, which names its errors (PostgreSQL's SQLSTATE, MariaDB's
    /// number) and is named where it cancelled a transaction.
    #[serde(default)]
    pub server: crate::Service,
}

/// The kind of a dependency edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dep {
    /// write-write: `to` overwrote `from`'s version.
    Ww,
    /// write-read: `to` read `from`'s version.
    Wr,
    /// read-write (anti-dependency): `to` overwrote, or added to, what `from` read.
    Rw,
}

impl Dep {
    /// Its short name, as the literature and the timeline's legend write it.
    pub fn label(self) -> &'static str {
        match self {
            Dep::Ww => "ww",
            Dep::Wr => "wr",
            Dep::Rw => "rw",
        }
    }

    /// What an arrow of this kind is called where it is drawn: its short name, and
    /// ` (predicate)` when the read it starts or ends at was a predicate's (`rw (predicate)`).
    pub fn drawn_name(self, predicate: bool) -> String {
        let on = if predicate { " (predicate)" } else { "" };
        format!("{}{on}", self.label())
    }
}

/// One edge: `from` comes before `to`, because of `row`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edge {
    pub from: usize,
    pub to: usize,
    pub dep: Dep,
    pub row: Row,
    /// An anti-dependency through a predicate: `to` added a row `from`'s read would have matched.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub predicate: bool,
    /// The steps at each end, for the arrow between lanes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_step: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_step: Option<u64>,
    /// The edge in plain words: "bob read test 1 = 11, which alice wrote, so alice comes before bob".
    pub because: String,
}

/// The anomaly a history shows, in Adya's classes (with Berenson et al.'s names where they are
/// what readers know it by).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Anomaly {
    DirtyWrite,
    AbortedRead,
    IntermediateRead,
    CircularInformationFlow,
    LostUpdate,
    ReadSkew,
    PredicateManyPreceders,
    WriteSkew,
    PredicateWriteSkew,
    ReadOnlyTransaction,
    AntiDependencyCycle,
    /// A reader sees one transaction's writes, then part of a later one's that overwrote them
    /// (Hermitage's OTV): named by the atlas from what the reads returned, where no proof can
    /// be had (MariaDB); the proof's cycles never name it.
    ObservedTransactionVanishes,
}

impl Anomaly {
    /// Its name in the event stream (serde's): `write_skew`.
    pub fn id(self) -> &'static str {
        match self {
            Anomaly::DirtyWrite => "dirty_write",
            Anomaly::AbortedRead => "aborted_read",
            Anomaly::IntermediateRead => "intermediate_read",
            Anomaly::CircularInformationFlow => "circular_information_flow",
            Anomaly::LostUpdate => "lost_update",
            Anomaly::ReadSkew => "read_skew",
            Anomaly::PredicateManyPreceders => "predicate_many_preceders",
            Anomaly::WriteSkew => "write_skew",
            Anomaly::PredicateWriteSkew => "predicate_write_skew",
            Anomaly::ReadOnlyTransaction => "read_only_transaction",
            Anomaly::AntiDependencyCycle => "anti_dependency_cycle",
            Anomaly::ObservedTransactionVanishes => "observed_transaction_vanishes",
        }
    }

    /// Adya's class: `G0`, `G1a`, `G-single`, `G2-item`, `G2`.
    pub fn class(self) -> &'static str {
        match self {
            Anomaly::DirtyWrite => "G0",
            Anomaly::AbortedRead => "G1a",
            Anomaly::IntermediateRead => "G1b",
            Anomaly::CircularInformationFlow => "G1c",
            Anomaly::LostUpdate | Anomaly::ReadSkew | Anomaly::PredicateManyPreceders => "G-single",
            Anomaly::WriteSkew => "G2-item",
            Anomaly::PredicateWriteSkew | Anomaly::ReadOnlyTransaction | Anomaly::AntiDependencyCycle => "G2",
            Anomaly::ObservedTransactionVanishes => "OTV",
        }
    }

    /// Its name in a sentence: `write skew`.
    pub fn name(self) -> &'static str {
        match self {
            Anomaly::DirtyWrite => "dirty write",
            Anomaly::AbortedRead => "aborted read",
            Anomaly::IntermediateRead => "intermediate read",
            Anomaly::CircularInformationFlow => "circular information flow",
            Anomaly::LostUpdate => "lost update",
            Anomaly::ReadSkew => "read skew",
            Anomaly::PredicateManyPreceders => "predicate-many-preceders",
            Anomaly::WriteSkew => "write skew",
            Anomaly::PredicateWriteSkew => "write skew on a predicate",
            Anomaly::ReadOnlyTransaction => "read-only transaction anomaly",
            Anomaly::AntiDependencyCycle => "anti-dependency cycle",
            Anomaly::ObservedTransactionVanishes => "observed transaction vanishes",
        }
    }
}

/// What the server did instead of letting a cycle close.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prevented {
    /// The anomaly the cycle would have been.
    pub anomaly: Anomaly,
    /// The cycle, had every cancelled transaction committed (edges as in [`Proof::edges`]).
    pub cycle: Vec<usize>,
    /// The transaction the server cancelled, and its SQLSTATE (MariaDB: its error number).
    pub cancelled: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// The answer: every edge, the cycle if there is one, and the lines that say it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proof {
    pub txns: Vec<Txn>,
    /// Edges between committed transactions, then (for [`Proof::prevented`]) those a cancelled
    /// transaction would have added; [`Proof::would_have`] says which is which.
    pub edges: Vec<Edge>,
    /// Indexes into `edges` of the first edge that involves a cancelled transaction.
    pub would_have: usize,
    /// The cycle among committed transactions, edge by edge (empty: there is none).
    pub cycle: Vec<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anomaly: Option<Anomaly>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prevented: Option<Prevented>,
    /// Without a cycle: an order of one-at-a-time runs that explains every read (transactions).
    pub order: Vec<usize>,
    /// The proof in plain words, a line each.
    pub lines: Vec<String>,
}

impl Proof {
    /// The edges a drawing marks as the cycle: the committed one, and the one a cancelled
    /// transaction's commit would have closed.
    pub fn drawn_cycle(&self) -> Vec<usize> {
        let prevented = self.prevented.iter().flat_map(|p| p.cycle.iter());
        self.cycle.iter().chain(prevented).copied().collect()
    }
}

/// Derives the proof of a history: pure, and total on any history whose indexes are in range
/// (edges that name a transaction or version out of range are left out, never a panic).
pub fn derive(history: &History) -> Proof {
    let committed = |t: usize| matches!(history.txns.get(t).map(|t| &t.end), Some(End::Committed));
    let everyone = |t: usize| t < history.txns.len();
    let real = edges(history, &committed);
    let would_have = real.len();
    let mut all = real.clone();
    for edge in edges(history, &everyone) {
        if !committed(edge.from) || !committed(edge.to) {
            all.push(edge);
        }
    }
    let mut proof = Proof {
        txns: history.txns.clone(),
        would_have,
        ..Proof::default()
    };
    let read_only = |t: usize| !history.versions.iter().any(|v| v.by == Some(t));
    if let Some((cycle, anomaly)) = cycle::worst(&all[..would_have], &read_only) {
        proof.cycle = cycle;
        proof.anomaly = Some(anomaly);
    } else if let Some(anomaly) = dirty_read(history) {
        proof.anomaly = Some(anomaly);
    } else {
        proof.order = cycle::order(history.txns.len(), &all[..would_have], &committed);
        if let Some((cycle, anomaly)) = cycle::worst(&all, &read_only) {
            let cancelled = cycle
                .iter()
                .flat_map(|&e| [all[e].from, all[e].to])
                .find(|&t| !committed(t));
            if let Some(cancelled) = cancelled {
                let code = match &history.txns[cancelled].end {
                    End::Aborted { code } => code.clone(),
                    _ => None,
                };
                proof.prevented = Some(Prevented {
                    anomaly,
                    cycle,
                    cancelled,
                    code,
                });
            }
        }
    }
    proof.edges = all;
    proof.lines = words::lines(history, &proof);
    proof
}

/// G1a and G1b: a committed transaction read a version that was never committed, or one its
/// writer later replaced. Not cycles: a read no serial order could produce.
fn dirty_read(history: &History) -> Option<Anomaly> {
    let committed = |t: usize| matches!(history.txns.get(t).map(|t| &t.end), Some(End::Committed));
    let mut found = None;
    for read in history.reads.iter().filter(|r| committed(r.txn)) {
        for &v in &read.saw {
            let Some(version) = history.versions.get(v) else {
                continue;
            };
            let Some(writer) = version.by.filter(|&w| w != read.txn) else {
                continue;
            };
            if !committed(writer) {
                return Some(Anomaly::AbortedRead);
            }
            let replaced_by_writer = history.versions[v + 1..]
                .iter()
                .any(|later| later.row == version.row && later.by == Some(writer));
            if replaced_by_writer {
                found = Some(Anomaly::IntermediateRead);
            }
        }
    }
    found
}

/// The edges among the transactions `counted` admits, each once.
fn edges(history: &History, counted: &dyn Fn(usize) -> bool) -> Vec<Edge> {
    let mut edges = Edges {
        history,
        counted,
        out: Vec::new(),
        seen: BTreeSet::new(),
    };
    edges.write_write();
    for read in history.reads.iter().filter(|r| counted(r.txn)) {
        edges.items(read);
        edges.predicates(read);
    }
    edges.out
}

/// The edges found so far, and what they are derived from: a read's edges need the rows'
/// version chains and the transactions' ends, so every kind of edge shares them.
struct Edges<'a> {
    history: &'a History,
    counted: &'a dyn Fn(usize) -> bool,
    out: Vec<Edge>,
    seen: BTreeSet<(usize, usize, Dep, Row)>,
}

impl Edges<'_> {
    /// Adds `edge` unless it loops or is already there.
    fn push(&mut self, edge: Edge) {
        if edge.from != edge.to && self.seen.insert((edge.from, edge.to, edge.dep, edge.row.clone())) {
            self.out.push(edge);
        }
    }

    fn counts(&self, v: &Version) -> bool {
        v.by.is_none_or(self.counted)
    }

    /// Whether `read` came after `writer` ended without committing: had it committed, the read
    /// would have seen its writes, so there is no anti-dependency to suppose.
    fn after_end(&self, read: &Read, writer: usize) -> bool {
        let txn = &self.history.txns[writer];
        txn.end != End::Committed && txn.ended.is_some_and(|end| read.step > end)
    }

    /// The versions of one row in install order, of counted writers only.
    fn chain(&self, row: &Row) -> Vec<usize> {
        let versions = &self.history.versions;
        (0..versions.len())
            .filter(|&i| versions[i].row == *row && self.counts(&versions[i]))
            .collect()
    }

    /// `ww`: each version of a row after the one before it.
    fn write_write(&mut self) {
        let history = self.history;
        let versions = &history.versions;
        let rows: BTreeSet<&Row> = versions.iter().map(|v| &v.row).collect();
        for row in rows {
            let chain = self.chain(row);
            for pair in chain.windows(2) {
                let (a, b) = (&versions[pair[0]], &versions[pair[1]]);
                if let (Some(from), Some(to)) = (a.by, b.by) {
                    self.push(Edge {
                        from,
                        to,
                        dep: Dep::Ww,
                        row: row.clone(),
                        predicate: false,
                        from_step: a.step,
                        to_step: b.step,
                        because: words::ww(history, a, b),
                    });
                }
            }
        }
    }

    /// What `read` saw: `wr` from the version's writer, and `rw` to whoever replaced it next.
    fn items(&mut self, read: &Read) {
        let history = self.history;
        let versions = &history.versions;
        for &v in &read.saw {
            let Some(version) = versions.get(v) else { continue };
            if let Some(writer) = version.by.filter(|&w| (self.counted)(w)) {
                self.push(Edge {
                    from: writer,
                    to: read.txn,
                    dep: Dep::Wr,
                    row: version.row.clone(),
                    predicate: false,
                    from_step: version.step,
                    to_step: Some(read.step),
                    because: words::wr(history, read, version),
                });
            }
            // The next version after the one read, by someone else than the reader and the
            // writer (whose later versions of the row are the same transaction's): it
            // overwrote what was read.
            let chain = self.chain(&version.row);
            let next = chain
                .iter()
                .skip_while(|&&i| i != v)
                .skip(1)
                .map(|&i| &versions[i])
                .find(|n| n.by != Some(read.txn) && n.by != version.by);
            if let Some(next) = next
                && let Some(writer) = next.by
                && !self.after_end(read, writer)
            {
                self.push(Edge {
                    from: read.txn,
                    to: writer,
                    dep: Dep::Rw,
                    row: version.row.clone(),
                    predicate: false,
                    from_step: Some(read.step),
                    to_step: next.step,
                    because: words::rw(history, read, Some(version), next),
                });
            }
        }
    }

    /// What `read`'s predicate missed: `rw` to the writer of each version it would have matched,
    /// unless the read saw that row (then [`Edges::items`] says it).
    fn predicates(&mut self, read: &Read) {
        let history = self.history;
        let versions = &history.versions;
        for &m in &read.missed {
            let Some(missed) = versions.get(m) else { continue };
            let Some(writer) = missed
                .by
                .filter(|&w| (self.counted)(w) && w != read.txn && !self.after_end(read, w))
            else {
                continue;
            };
            if read
                .saw
                .iter()
                .any(|&s| versions.get(s).is_some_and(|s| s.row == missed.row))
            {
                continue; // the read saw this row: the item edge above says it
            }
            self.push(Edge {
                from: read.txn,
                to: writer,
                dep: Dep::Rw,
                row: missed.row.clone(),
                predicate: true,
                from_step: Some(read.step),
                to_step: missed.step,
                because: words::rw(history, read, None, missed),
            });
        }
    }
}

#[cfg(test)]
mod tests;
