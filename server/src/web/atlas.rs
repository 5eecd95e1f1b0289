//! `GET /api/atlas`: the anomaly atlas as this server's PostgreSQL plays it, each cell a stored
//! run (`/runs/<id>`) of a saved spec (`/s/<id>`, forkable).
//!
//! The 39 runs go through the engine like any reader's (admission, sandboxes, the run store),
//! all queued at once. An observation is kept for [`FRESH_FOR`], so a page opened by many
//! readers costs one observation, and the page says when it was made; after that the next
//! request observes again. `?postgres=18` observes it on that version's servers (each version
//! kept apart): the page shows a column per version. `?database=mariadb` observes it on MariaDB,
//! its five columns (READ UNCOMMITTED to SERIALIZABLE, REPEATABLE READ with InnoDB's snapshot
//! switch off and on), each cell judged from what its reads returned (MariaDB gives no proof).

use super::AppState;
use super::error::ApiError;
use axum::Json;
use axum::extract::Query;
use axum::extract::State;
use shared::atlas::{self, Cell, Entry, Observation, ObservedCell, ObservedRow};
use shared::spec::Database;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// MariaDB's cells played at once: each waits at most 2 s for a lock, as Hermitage's clients
/// did, so a wait must be seen well within that. Three at once, each with its witness's
/// questions after it, once let a wait go unseen on two busy cores.
const MARIADB_AT_ONCE: usize = 2;

/// How long an observation is shown before the atlas is played again.
pub const FRESH_FOR: Duration = Duration::from_secs(600);

/// The last observation on each server (`postgres-15`, `mariadb`), and when it was made (one at
/// a time: a second request waits for the first's, then reads it).
#[derive(Default)]
pub struct Kept(Mutex<HashMap<String, (Instant, Observation)>>);

/// Where the atlas is observed: MariaDB, or PostgreSQL of a major version.
#[derive(Clone, Copy)]
enum On {
    Postgres(u32),
    Mariadb,
}

impl On {
    fn database(self) -> Database {
        match self {
            On::Postgres(_) => Database::Postgresql,
            On::Mariadb => Database::Mariadb,
        }
    }

    /// The version a run must play on, where there is a choice.
    fn major(self) -> Option<u32> {
        match self {
            On::Postgres(major) => Some(major),
            On::Mariadb => None,
        }
    }
}

/// `?postgres=18` picks the version to observe on (the server's first by default). The query is
/// read as pairs, so no query string is refused before the handler can say why in JSON.
pub async fn handler(
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Observation>, ApiError> {
    let Query(query) = query?;
    let asked = |key: &str| query.iter().find(|(name, _)| name == key).map(|(_, v)| v.as_str());
    let on = match asked("database") {
        Some("mariadb") => On::Mariadb,
        Some("postgresql") | None => {
            let version = crate::control::postgres_version(asked("postgres")).map_err(ApiError::BadRequest)?;
            On::Postgres(version.unwrap_or_else(|| state.engine.default_postgres()))
        }
        Some(other) => {
            return Err(ApiError::BadRequest(format!(
                "no database {other:?}: the atlas plays on postgresql or mariadb"
            )));
        }
    };
    let key = match on {
        On::Postgres(major) => format!("postgres-{major}"),
        On::Mariadb => "mariadb".to_owned(),
    };
    let mut kept = state.atlas.0.lock().await;
    if let Some((at, observation)) = kept.get(&key)
        && at.elapsed() < FRESH_FOR
    {
        return Ok(Json(observation.clone()));
    }
    let observation = observe(&state, on).await?;
    kept.insert(key, (Instant::now(), observation.clone()));
    Ok(Json(observation))
}

/// One cell's run (`entry` at `level`, playing `text`): saved, queued, played, and read back
/// from the store; judged as its database allows ([`Cell::of_run`]).
async fn cell(
    state: &AppState,
    (entry, level, text): (&'static Entry, &'static str, String),
    on: On,
) -> Result<(ObservedCell, String), ApiError> {
    let spec_id = state.engine.store.save_spec(&text).await?;
    let scenario = crate::specs::scenario::SpecScenario::new(&spec_id, &text)
        .map_err(|e| ApiError::Internal(format!("the atlas's {} spec: {e}", entry.id)))?;
    let mut handle = state
        .engine
        .start_on(
            Arc::new(scenario) as Arc<dyn crate::engine::Scenario>,
            "p1",
            shared::Mode::Auto,
            on.major(),
        )
        .await
        .map_err(|e| match e {
            crate::engine::StartError::NoSuchVersion(e) => ApiError::NotFound(e.to_string()),
            e => ApiError::Unavailable(e.to_string()),
        })?;
    let run_id = loop {
        match handle.updates.recv().await {
            Some(shared::ServerMsg::Done { run_id, .. }) => break run_id,
            Some(_) => {}
            None => {
                return Err(ApiError::Unavailable(format!(
                    "the atlas's run of {} ended early",
                    entry.id
                )));
            }
        }
    };
    let run = state
        .engine
        .store
        .load(&run_id)
        .await?
        .ok_or_else(|| ApiError::Unavailable(format!("the atlas's run of {} was not stored", entry.id)))?;
    if run.outcome != shared::Outcome::Completed {
        return Err(ApiError::Unavailable(format!(
            "the atlas's run of {} at {level} did not complete: {:?}",
            entry.name, run.outcome
        )));
    }
    let server = run.server().unwrap_or_default().to_owned();
    let (proof, _) = atlas::played(&run.events);
    let observed = ObservedCell {
        level: level.to_owned(),
        cell: Cell::of_run(entry, on.database(), &run.events),
        instead: atlas::instead(entry, proof.as_ref()),
        run_id,
        spec_id,
    };
    Ok((observed, server))
}

async fn observe(state: &AppState, on: On) -> Result<Observation, ApiError> {
    let levels = atlas::columns_on(on.database());
    let runs: Vec<_> = atlas::cells_on(on.database())
        .into_iter()
        .map(|planned| cell(state, planned, on))
        .collect();
    let cells: Vec<_> = match on {
        On::Postgres(_) => futures_util::future::join_all(runs).await,
        // A few at a time: InnoDB shows a lock wait only in lock tables it refreshes at most
        // every 100 ms, and with 65 runs at once on this machine's two cores a wait went unseen
        // past the 2 s a session waits (a lost update read as refused, not as waiting).
        On::Mariadb => {
            use futures_util::StreamExt;
            futures_util::stream::iter(runs)
                .buffered(MARIADB_AT_ONCE)
                .collect()
                .await
        }
    };
    let mut server = String::new();
    let mut rows: Vec<ObservedRow> = Vec::new();
    let mut cells = cells.into_iter();
    for entry in &atlas::ENTRIES {
        let mut row = ObservedRow {
            id: entry.id.to_owned(),
            class: entry.class.to_owned(),
            name: entry.name.to_owned(),
            cells: Vec::new(),
        };
        for _ in &levels {
            let Some(result) = cells.next() else { break };
            let (cell, on) = result?;
            server = on;
            row.cells.push(cell);
        }
        rows.push(row);
    }
    Ok(Observation {
        server,
        observed_at: crate::specs::atlas::now_utc(),
        rows,
    })
}
