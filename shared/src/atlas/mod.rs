//! The anomaly atlas: the classic anomalies of Adya's and Berenson et al.'s classifications, each
//! a spec of ours on a two-row table (`test`: 1 = 10, 2 = 20, as Hermitage writes its tests),
//! played at each isolation level. What a cell says is judged here from what the run did (its
//! proof and its steps), never written down: the atlas holds no expected outcome.

pub mod reads;

use crate::proof::{Anomaly, Proof};
use crate::spec::PlayedStep;
use serde::{Deserialize, Serialize};

/// One row of the atlas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its address: `g2-item`.
    pub id: &'static str,
    /// Adya's class, or the name the literature gives it: `G2-item`, `OTV`, `P4`.
    pub class: &'static str,
    pub name: &'static str,
    /// How many anti-dependencies its cycle needs at most (see [`rank`]): a run shows this
    /// entry's anomaly when its proof finds one of this rank or lower.
    pub rank: u8,
    /// The spec, with `@level` where the isolation level goes.
    text: &'static str,
}

impl Entry {
    /// The spec at `level` (`REPEATABLE READ`): ready to play, save or fork.
    pub fn spec(&self, level: &str) -> String {
        self.text.replace("@level", level)
    }

    /// The spec on MariaDB, in `column`'s setting: each session sets its level and InnoDB's
    /// snapshot switch, then starts its transaction (MariaDB's `BEGIN` takes no level).
    pub fn spec_on_mariadb(&self, column: &Column) -> String {
        let switch = if column.snapshot_isolation { "ON" } else { "OFF" };
        // A step held back by a lock another session keeps until a later step gives up after
        // 2 s, not InnoDB's 50: the cell then says it waited.
        let begin = format!(
            "SET SESSION TRANSACTION ISOLATION LEVEL {}; SET SESSION innodb_snapshot_isolation = {switch}; \
             SET SESSION innodb_lock_wait_timeout = 2; START TRANSACTION;",
            column.level
        );
        format!(
            "# database: mariadb\n{}",
            self.text.replace("BEGIN ISOLATION LEVEL @level;", &begin)
        )
    }
}

/// A column of the atlas on MariaDB: its level, and InnoDB's snapshot switch (off before
/// MariaDB 11.6.2, on from it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// As the page and the command line head the column.
    pub label: &'static str,
    /// As `SET SESSION TRANSACTION ISOLATION LEVEL` takes it.
    pub level: &'static str,
    pub snapshot_isolation: bool,
}

/// MariaDB's columns, weakest first: every level InnoDB has (its READ UNCOMMITTED reads what
/// others have not committed), and REPEATABLE READ with the switch off and on.
pub const MARIADB_COLUMNS: [Column; 5] = [
    Column {
        label: "READ UNCOMMITTED",
        level: "READ UNCOMMITTED",
        snapshot_isolation: false,
    },
    Column {
        label: "READ COMMITTED",
        level: "READ COMMITTED",
        snapshot_isolation: false,
    },
    Column {
        label: "REPEATABLE READ",
        level: "REPEATABLE READ",
        snapshot_isolation: false,
    },
    Column {
        label: "REPEATABLE READ, snapshot isolation on",
        level: "REPEATABLE READ",
        snapshot_isolation: true,
    },
    Column {
        label: "SERIALIZABLE",
        level: "SERIALIZABLE",
        snapshot_isolation: false,
    },
];

/// The levels the atlas plays, weakest first, as `BEGIN ISOLATION LEVEL` takes them.
/// (PostgreSQL's READ UNCOMMITTED is READ COMMITTED.)
pub const LEVELS: [&str; 3] = ["READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"];

/// Every row, in the order of the classifications (writes, reads, cycles of more
/// anti-dependencies).
pub const ENTRIES: [Entry; 13] = [
    entry("g0", "G0", "dirty write", 0, include_str!("g0-dirty-write.spec")),
    entry("g1a", "G1a", "aborted read", 1, include_str!("g1a-aborted-read.spec")),
    entry(
        "g1b",
        "G1b",
        "intermediate read",
        1,
        include_str!("g1b-intermediate-read.spec"),
    ),
    entry(
        "g1c",
        "G1c",
        "circular information flow",
        1,
        include_str!("g1c-circular-information-flow.spec"),
    ),
    entry(
        "otv",
        "OTV",
        "observed transaction vanishes",
        1,
        include_str!("otv-observed-transaction-vanishes.spec"),
    ),
    entry(
        "pmp",
        "PMP",
        "predicate-many-preceders",
        2,
        include_str!("pmp-predicate-many-preceders.spec"),
    ),
    entry(
        "pmp-write",
        "PMP",
        "predicate-many-preceders, write predicate",
        2,
        include_str!("pmp-write-predicate.spec"),
    ),
    entry("p4", "P4", "lost update", 2, include_str!("p4-lost-update.spec")),
    entry(
        "g-single",
        "G-single",
        "read skew",
        2,
        include_str!("g-single-read-skew.spec"),
    ),
    entry(
        "g-single-write",
        "G-single",
        "read skew, write predicate",
        2,
        include_str!("g-single-write-predicate.spec"),
    ),
    entry(
        "g2-item",
        "G2-item",
        "write skew",
        3,
        include_str!("g2-item-write-skew.spec"),
    ),
    entry(
        "g2",
        "G2",
        "anti-dependency cycle on a predicate",
        4,
        include_str!("g2-anti-dependency-cycle.spec"),
    ),
    entry(
        "read-only",
        "G2",
        "read-only transaction anomaly",
        4,
        include_str!("read-only-anomaly.spec"),
    ),
];

const fn entry(id: &'static str, class: &'static str, name: &'static str, rank: u8, text: &'static str) -> Entry {
    Entry {
        id,
        class,
        name,
        rank,
        text,
    }
}

/// The atlas's columns on `database`, weakest first, as its matrix heads them.
pub fn columns_on(database: crate::spec::Database) -> Vec<&'static str> {
    match database {
        crate::spec::Database::Postgresql => LEVELS.to_vec(),
        crate::spec::Database::Mariadb => MARIADB_COLUMNS.iter().map(|c| c.label).collect(),
    }
}

/// Every cell the atlas plays on `database`, row by row, each row's columns weakest first: its
/// entry, its column's heading, and the spec its run plays.
pub fn cells_on(database: crate::spec::Database) -> Vec<(&'static Entry, &'static str, String)> {
    ENTRIES
        .iter()
        .flat_map(|entry| -> Vec<(&'static Entry, &'static str, String)> {
            match database {
                crate::spec::Database::Postgresql => {
                    LEVELS.iter().map(|level| (entry, *level, entry.spec(level))).collect()
                }
                crate::spec::Database::Mariadb => MARIADB_COLUMNS
                    .iter()
                    .map(|column| (entry, column.label, entry.spec_on_mariadb(column)))
                    .collect(),
            }
        })
        .collect()
}

/// The entry at `id`.
pub fn find(id: &str) -> Option<&'static Entry> {
    ENTRIES.iter().find(|e| e.id == id)
}

/// How far from serial an anomaly is: 0 for cycles of writes alone (G0), 1 for reads of what
/// never committed or of cycles without anti-dependencies (G1), 2 for one anti-dependency
/// (G-single), 3 for several on items (G2-item), 4 for several through predicates (G2). A level
/// that forbids rank n forbids every lower rank too (Adya's hierarchy).
pub fn rank(anomaly: Anomaly) -> u8 {
    match anomaly {
        Anomaly::DirtyWrite => 0,
        Anomaly::AbortedRead
        | Anomaly::IntermediateRead
        | Anomaly::CircularInformationFlow
        | Anomaly::ObservedTransactionVanishes => 1,
        Anomaly::LostUpdate | Anomaly::ReadSkew | Anomaly::PredicateManyPreceders => 2,
        Anomaly::WriteSkew => 3,
        Anomaly::PredicateWriteSkew | Anomaly::ReadOnlyTransaction | Anomaly::AntiDependencyCycle => 4,
    }
}

/// What one run of an entry at one level did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Cell {
    /// The anomaly appeared: the run's proof found it (or one closer to serial).
    Allowed { anomaly: Anomaly },
    /// Prevented by an error: the database refused a step with this code (PostgreSQL's SQLSTATE,
    /// MariaDB's error number).
    Refused { code: String },
    /// Prevented by waiting: a step waited for another's lock and then saw its result.
    Waited,
    /// Prevented without waiting or refusing: the readers' snapshots never showed it.
    Unseen,
}

impl Cell {
    /// The entry's cell for a run: its proof (if racelab could derive one) and its steps.
    /// An anomaly further from serial than the entry's (a write skew in a G1c run) does not
    /// count as the entry's: see [`Cell::judged`]'s `instead`.
    pub fn judge(entry: &Entry, proof: Option<&Proof>, steps: &[PlayedStep]) -> Cell {
        if let Some(anomaly) = proof.and_then(|p| p.anomaly).filter(|&a| rank(a) <= entry.rank) {
            return Cell::Allowed { anomaly };
        }
        if let Some(code) = steps.iter().find_map(|s| s.error.clone()) {
            return Cell::Refused { code };
        }
        if steps.iter().any(|s| s.waited) {
            return Cell::Waited;
        }
        Cell::Unseen
    }

    /// The entry's cell for a run judged from what its reads returned and the rows it left
    /// ([`reads::showed`]): where there is no proof (MariaDB). Then, as [`Cell::judge`], an
    /// error, a wait, or nothing seen.
    /// A step that waited and then timed out waiting ([`reads::ended_a_wait`]) counts as a wait.
    pub fn judge_by_reads(entry: &Entry, facts: &reads::Facts, steps: &[PlayedStep]) -> Cell {
        if let Some(anomaly) = reads::showed(entry, facts) {
            return Cell::Allowed { anomaly };
        }
        let steps: Vec<PlayedStep> = steps
            .iter()
            .map(|s| PlayedStep {
                error: s.error.clone().filter(|code| !(s.waited && reads::ended_a_wait(code))),
                ..s.clone()
            })
            .collect();
        Cell::judge(entry, None, &steps)
    }

    /// The cell of `entry`'s run on `database`, from its events: judged from its proof on
    /// PostgreSQL, from what its reads returned on MariaDB (which gives no proof).
    pub fn of_run(entry: &Entry, database: crate::spec::Database, events: &[crate::Event]) -> Cell {
        let (proof, steps) = played(events);
        match database {
            crate::spec::Database::Postgresql => Cell::judge(entry, proof.as_ref(), &steps),
            crate::spec::Database::Mariadb => Cell::judge_by_reads(entry, &reads::Facts::of(events), &steps),
        }
    }

    /// Whether the anomaly appeared.
    pub fn allowed(&self) -> bool {
        matches!(self, Cell::Allowed { .. })
    }

    /// The cell in a few words, for the matrix: `allowed`, `40001`, `waits`, `not seen`.
    pub fn label(&self) -> String {
        match self {
            Cell::Allowed { .. } => "allowed".to_owned(),
            Cell::Refused { code } => format!("error {code}"),
            Cell::Waited => "waits".to_owned(),
            Cell::Unseen => "not seen".to_owned(),
        }
    }

    /// The cell in a sentence, for its title.
    pub fn sentence(&self) -> String {
        match self {
            Cell::Allowed { anomaly } => format!("Allowed: the run showed a {} ({}).", anomaly.name(), anomaly.class()),
            Cell::Refused { code } => format!("Prevented by an error: the database refused a step ({code})."),
            Cell::Waited => "Prevented by waiting: a step waited for another's lock, then saw its result.".to_owned(),
            Cell::Unseen => "Prevented: no reader's snapshot showed what would have made it.".to_owned(),
        }
    }
}

/// A found anomaly further from serial than the entry's own, said beside its cell (`G1c` at
/// READ COMMITTED is prevented, and the same run is a write skew).
pub fn instead(entry: &Entry, proof: Option<&Proof>) -> Option<Anomaly> {
    proof.and_then(|p| p.anomaly).filter(|&a| rank(a) > entry.rank)
}

/// The atlas as its page shows it: each cell with the run it was judged from and the spec that
/// run played (`GET /api/atlas`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// `PostgreSQL 15.20 …`: the server the runs played on.
    pub server: String,
    /// When, in UTC.
    pub observed_at: String,
    pub rows: Vec<ObservedRow>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ObservedRow {
    pub id: String,
    pub class: String,
    pub name: String,
    /// Weakest level first, as [`LEVELS`].
    pub cells: Vec<ObservedCell>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ObservedCell {
    pub level: String,
    pub cell: Cell,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instead: Option<Anomaly>,
    /// The stored run (`/runs/<id>`) and the saved spec it played (`/s/<id>`, forkable).
    pub run_id: String,
    pub spec_id: String,
}

/// What a stored run's events say for the atlas: its proof, and its steps as played (who
/// waited, what failed), in the order they started.
pub fn played(events: &[crate::Event]) -> (Option<Proof>, Vec<PlayedStep>) {
    use crate::EventKind;
    let mut proof = None;
    let mut steps: Vec<PlayedStep> = Vec::new();
    let last_of =
        |steps: &mut Vec<PlayedStep>, actor: &str| -> Option<usize> { steps.iter().rposition(|s| s.session == actor) };
    for event in events {
        match &event.kind {
            EventKind::Step { actor, text, .. } => steps.push(PlayedStep {
                name: text.clone(),
                session: actor.clone(),
                waited: false,
                error: None,
            }),
            EventKind::Blocked { actor, .. } => {
                if let Some(i) = last_of(&mut steps, actor) {
                    steps[i].waited = true;
                }
            }
            EventKind::Error {
                actor, code, message, ..
            } => {
                if let Some(i) = last_of(&mut steps, actor) {
                    steps[i].error = Some(code.clone().unwrap_or_else(|| message.clone()));
                }
            }
            EventKind::Proof { proof: p } => proof = Some((**p).clone()),
            _ => {}
        }
    }
    (proof, steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::parse;

    #[test]
    fn the_cells_on_mariadb_are_every_entry_in_each_column_in_mariadbs_sql() {
        use crate::spec::Database;
        let cells = cells_on(Database::Mariadb);
        assert_eq!(cells.len(), ENTRIES.len() * MARIADB_COLUMNS.len());
        assert_eq!(columns_on(Database::Mariadb).len(), MARIADB_COLUMNS.len());
        for (entry, label, text) in &cells {
            let spec = parse(text).unwrap_or_else(|e| panic!("{} at {label}: {e:?}", entry.id));
            assert_eq!(spec.database, Database::Mariadb);
            assert!(!text.contains("BEGIN ISOLATION LEVEL"), "{}", entry.id);
        }
        let (first, label, text) = &cells[MARIADB_COLUMNS.len() - 1];
        assert_eq!((first.id, *label), ("g0", "SERIALIZABLE"));
        assert!(text.contains("SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE;"));
        assert_eq!(cells_on(Database::Postgresql).len(), ENTRIES.len() * LEVELS.len());
    }

    #[test]
    fn every_entry_is_a_spec_at_every_level_with_one_permutation() {
        for entry in &ENTRIES {
            for level in LEVELS {
                let text = entry.spec(level);
                assert!(!text.contains("@level"), "{}", entry.id);
                let spec = parse(&text).unwrap_or_else(|e| panic!("{}: {e:?}", entry.id));
                assert_eq!(spec.validate(), Ok(()), "{}", entry.id);
                assert_eq!(spec.permutations.len(), 1, "{}", entry.id);
                assert!(text.contains(&format!("BEGIN ISOLATION LEVEL {level};")));
            }
        }
        let mut ids: Vec<&str> = ENTRIES.iter().map(|e| e.id).collect();
        ids.dedup();
        assert_eq!(ids.len(), ENTRIES.len());
    }

    fn step(waited: bool, error: Option<&str>) -> PlayedStep {
        PlayedStep {
            name: "s".into(),
            session: "alice".into(),
            waited,
            error: error.map(str::to_owned),
        }
    }

    #[test]
    fn a_cell_is_what_the_run_did_the_anomaly_first_then_an_error_then_a_wait() {
        let write_skew = find("g2-item").expect("an entry");
        let proof = |anomaly| Proof {
            anomaly: Some(anomaly),
            ..Proof::default()
        };
        let found = proof(Anomaly::WriteSkew);
        assert_eq!(
            Cell::judge(write_skew, Some(&found), &[step(true, None)]),
            Cell::Allowed {
                anomaly: Anomaly::WriteSkew
            }
        );
        assert_eq!(
            Cell::judge(write_skew, None, &[step(true, None), step(false, Some("40001"))]),
            Cell::Refused { code: "40001".into() }
        );
        assert_eq!(Cell::judge(write_skew, None, &[step(true, None)]), Cell::Waited);
        assert_eq!(Cell::judge(write_skew, None, &[step(false, None)]), Cell::Unseen);
        // A write skew in a circular-information-flow run is not that run's anomaly.
        let g1c = find("g1c").expect("an entry");
        assert_eq!(Cell::judge(g1c, Some(&found), &[step(false, None)]), Cell::Unseen);
        assert_eq!(instead(g1c, Some(&found)), Some(Anomaly::WriteSkew));
        assert_eq!(instead(write_skew, Some(&found)), None);
    }

    #[test]
    fn a_stored_runs_events_say_who_waited_and_what_failed() {
        use crate::{Event, EventKind, Service};
        let event = |seq, kind| Event { seq, at_ms: 0, kind };
        let step = |actor: &str, text: &str| EventKind::Step {
            actor: actor.into(),
            service: Service::Postgres,
            text: text.into(),
            params: vec![],
            detail: None,
        };
        let events = [
            event(1, step("alice", "UPDATE a")),
            event(2, step("bob", "UPDATE b")),
            event(
                3,
                EventKind::Blocked {
                    actor: "bob".into(),
                    by: vec!["alice".into()],
                    on: None,
                },
            ),
            event(4, step("alice", "COMMIT")),
            event(
                5,
                EventKind::Error {
                    actor: "bob".into(),
                    kind: crate::ErrorKind::Database,
                    code: Some("40001".into()),
                    message: "could not serialize access".into(),
                },
            ),
        ];
        let (proof, steps) = played(&events);
        assert_eq!(proof, None);
        let summary: Vec<(&str, bool, Option<&str>)> = steps
            .iter()
            .map(|s| (s.session.as_str(), s.waited, s.error.as_deref()))
            .collect();
        assert_eq!(
            summary,
            [
                ("alice", false, None),
                ("bob", true, Some("40001")),
                ("alice", false, None)
            ]
        );
        let entry = find("p4").expect("an entry");
        assert_eq!(
            Cell::judge(entry, proof.as_ref(), &steps),
            Cell::Refused { code: "40001".into() }
        );
    }
}
