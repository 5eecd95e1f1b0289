//! The anomaly atlas on the connected server: every entry of [`shared::atlas`] played at every
//! level, each cell judged from its own run's proof and steps. Nothing is remembered between
//! observations: the matrix is what this server did just now.

use super::{Limits, SpecError};
use shared::atlas::{self, Cell, Entry};
use shared::proof::{Anomaly, Proof};
use std::sync::Arc;

/// One cell: an entry at a level, and what its run did.
#[derive(Clone, Debug)]
pub struct Observed {
    pub entry: &'static Entry,
    pub level: &'static str,
    pub cell: Cell,
    /// An anomaly further from serial than the entry's that the same run showed.
    pub instead: Option<Anomaly>,
    pub proof: Option<Proof>,
}

/// The whole matrix, and where and when it was observed.
#[derive(Clone, Debug)]
pub struct Atlas {
    /// `PostgreSQL 15.19 …`, as the server says it.
    pub server: String,
    /// When the runs ended, in UTC (`2026-12-05 01:58:03 UTC`).
    pub observed_at: String,
    /// Row by row, each row's levels weakest first.
    pub cells: Vec<Observed>,
}

/// Plays every entry at every level on the PostgreSQL at `url`, one after another (each in a
/// sandbox of its own, removed after it), and judges each cell.
pub async fn observe(url: &str, limits: &Limits) -> Result<Atlas, SpecError> {
    let server = server_version(url).await;
    let mut cells = Vec::new();
    for entry in &atlas::ENTRIES {
        for level in atlas::LEVELS {
            let spec = super::read(&entry.spec(level), limits)?;
            let run_id = crate::sandbox::new_run_id();
            let played = super::play_why(url, &run_id, &spec, limits, Arc::new(super::Silent)).await?;
            let Some(run) = played.into_iter().next() else { continue };
            cells.push(Observed {
                entry,
                level,
                cell: Cell::judge(entry, run.proof.as_ref(), &run.played),
                instead: atlas::instead(entry, run.proof.as_ref()),
                proof: run.proof,
            });
        }
    }
    Ok(Atlas {
        server,
        observed_at: now_utc(),
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
    for level in atlas::LEVELS {
        out.push_str(&format!("{level:<18}"));
    }
    out = out.trim_end().to_owned();
    out.push('\n');
    let mut notes = Vec::new();
    for entry in &atlas::ENTRIES {
        let mut line = format!("{:first$}", label(entry));
        for level in atlas::LEVELS {
            let cell = atlas.cells.iter().find(|c| c.entry.id == entry.id && c.level == level);
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
            line.push_str(&format!("{marked:<18}"));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(
        "\nallowed: the run's proof found the anomaly · error: PostgreSQL refused a step · \
         waits: a step waited for a lock · not seen: no snapshot showed it\n",
    );
    for note in notes {
        out.push_str(&note);
        out.push('\n');
    }
    out
}
