//! The anomaly atlas on the connected server: every entry of [`shared::atlas`] played at every
//! level, each cell judged from its own run's proof and steps (on MariaDB, from what its reads
//! returned: [`shared::atlas::reads`]). Nothing is remembered between
//! observations: the matrix is what this server did just now.

use super::{Choice, Limits, SpecError};
use crate::engine::Lane;
use crate::engine::lane::Stage;
use shared::atlas::reads::Facts;
use shared::atlas::{self, Cell, Entry};
use shared::proof::{Anomaly, Proof};
use shared::spec::Database;
use shared::{Event, EventKind};
use std::sync::{Arc, Mutex};

/// One cell: an entry at a level, and what its run did.
#[derive(Clone, Debug)]
pub struct Observed {
    pub entry: &'static Entry,
    pub level: &'static str,
    pub cell: Cell,
    /// An anomaly further from serial than the entry's that the same run showed.
    pub instead: Option<Anomaly>,
    pub proof: Option<Proof>,
    /// The same run judged from what its reads returned and the rows it left, as MariaDB's
    /// cells are: on PostgreSQL, checked against [`Observed::cell`].
    pub by_reads: Cell,
    /// The same run judged from its proof, as PostgreSQL's cells are: on MariaDB, whose proof
    /// sees less ([`super::witness`]), checked against [`Observed::by_reads`].
    pub by_proof: Cell,
}

/// The whole matrix, and where and when it was observed.
#[derive(Clone, Debug)]
pub struct Atlas {
    /// `PostgreSQL 15.19 …`, `MariaDB 10.11.19`, as the server says it.
    pub server: String,
    /// When the runs ended, in UTC (`2026-12-05 01:58:03 UTC`).
    pub observed_at: String,
    /// Its columns, weakest first.
    pub levels: Vec<&'static str>,
    /// Row by row, each row's levels weakest first.
    pub cells: Vec<Observed>,
}

/// Keeps every event of a run, to judge the run from them.
#[derive(Default)]
struct Kept(Mutex<Vec<EventKind>>);

impl Stage for Kept {
    fn emit(&self, kind: EventKind) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(kind);
    }

    fn gate<'a>(&'a self, _: &'a str, _: shared::Service, _: &'a str) -> crate::engine::BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

impl Kept {
    fn events(&self) -> Vec<Event> {
        let kinds = std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()));
        kinds
            .into_iter()
            .zip(0..)
            .map(|(kind, seq)| Event { seq, at_ms: 0, kind })
            .collect()
    }
}

/// Plays every entry at every level on the PostgreSQL at `url`, one after another (each in a
/// sandbox of its own, removed after it), and judges each cell from its proof.
pub async fn observe(url: &str, limits: &Limits) -> Result<Atlas, SpecError> {
    observe_on(url, limits, Database::Postgresql).await
}

/// The atlas on the MariaDB at `url`: every entry in each of [`atlas::MARIADB_COLUMNS`], each
/// cell judged from what its reads returned and the rows it left ([`Cell::judge_by_reads`]),
/// which needs no view of MariaDB's snapshots, as its proof does.
pub async fn observe_mariadb(url: &str, limits: &Limits) -> Result<Atlas, SpecError> {
    observe_on(url, limits, Database::Mariadb).await
}

/// Every cell of the atlas on `database` at `url`, one after another, each in a sandbox of its
/// own: judged as its database allows ([`Cell::of_run`]), and by its reads beside it.
async fn observe_on(url: &str, limits: &Limits, database: Database) -> Result<Atlas, SpecError> {
    let server = match database {
        Database::Postgresql => server_version(url).await,
        Database::Mariadb => {
            let found = crate::health::mariadb(url).await;
            if found.up { found.detail } else { "MariaDB".to_owned() }
        }
    };
    let mut cells = Vec::new();
    for (entry, level, text) in atlas::cells_on(database) {
        let spec = super::read(&text, limits)?;
        let kept = Arc::new(Kept::default());
        let lanes = |name: &str, quiet: bool| Lane::new(name, kept.clone(), quiet);
        match database {
            Database::Postgresql => {
                let run_id = crate::sandbox::new_run_id();
                super::play_on(url, &run_id, &spec, limits, Choice::One(0), &lanes).await?
            }
            Database::Mariadb => {
                let running = std::future::pending();
                super::play_on_mariadb(url, &spec, limits, Choice::One(0), &lanes, running).await?
            }
        };
        let events = kept.events();
        let (proof, steps) = atlas::played(&events);
        cells.push(Observed {
            entry,
            level,
            cell: Cell::of_run(entry, database, &events),
            instead: atlas::instead(entry, proof.as_ref()),
            by_reads: Cell::judge_by_reads(entry, &Facts::of(&events), &steps),
            by_proof: Cell::judge(entry, proof.as_ref(), &steps),
            proof,
        });
    }
    Ok(Atlas {
        server,
        observed_at: now_utc(),
        levels: atlas::columns_on(database),
        cells,
    })
}

/// The server's own version string ([`crate::health::version_at`]).
async fn server_version(url: &str) -> String {
    crate::health::version_at(url)
        .await
        .unwrap_or_else(|| "PostgreSQL (version unknown)".to_owned())
}

/// Now, as `2026-12-05 01:58:03 UTC`.
pub fn now_utc() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d, hour, minute, second) = shared::calendar::utc(seconds);
    format!("{y:04}-{m:02}-{d:02} {hour:02}:{minute:02}:{second:02} UTC")
}

/// The matrix as text: a row per entry, a column per level, then the notes (anomalies a run
/// showed that are not its row's).
pub fn render(atlas: &Atlas) -> String {
    let label = |e: &Entry| format!("{:<9}{}", e.class, e.name);
    let first = atlas::ENTRIES
        .iter()
        .map(|e| label(e).chars().count())
        .max()
        .unwrap_or(0)
        + 2;
    let mut out = format!(
        "The anomaly atlas, observed on {} at {}\n\n{:first$}",
        atlas.server, atlas.observed_at, ""
    );
    let width = atlas.levels.iter().map(|l| l.len() + 2).max().unwrap_or(18).max(18);
    for level in &atlas.levels {
        out.push_str(&format!("{level:<width$}"));
    }
    out = out.trim_end().to_owned();
    out.push('\n');
    let mut notes = Vec::new();
    for entry in &atlas::ENTRIES {
        let mut line = format!("{:first$}", label(entry));
        for level in &atlas.levels {
            let cell = atlas.cells.iter().find(|c| c.entry.id == entry.id && c.level == *level);
            let text = cell.map_or_else(|| "?".to_owned(), |c| c.cell.label());
            let marked = match cell.and_then(|c| c.instead) {
                Some(other) => {
                    notes.push(format!(
                        "* {} at {level}: the same run showed a {} ({}).",
                        entry.name,
                        other.name(),
                        other.class()
                    ));
                    format!("{text} *")
                }
                None => text,
            };
            line.push_str(&format!("{marked:<width$}"));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(
        "\nallowed: the run showed the anomaly (its proof found it; on MariaDB, what its reads returned) · \
         error: the database refused a step · waits: a step waited for a lock · not seen: no snapshot showed it\n",
    );
    for note in notes {
        out.push_str(&note);
        out.push('\n');
    }
    out
}
