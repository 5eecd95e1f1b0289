//! `GET /api/atlas`: the anomaly atlas as this server's PostgreSQL plays it, each cell a stored
//! run (`/runs/<id>`) of a saved spec (`/s/<id>`, forkable).
//!
//! The 39 runs go through the engine like any reader's (admission, sandboxes, the run store),
//! all queued at once. An observation is kept for [`FRESH_FOR`], so a page opened by many
//! readers costs one observation, and the page says when it was made; after that the next
//! request observes again. `?postgres=18` observes it on that version's servers (each version
//! kept apart): the page shows a column per version.

use super::AppState;
use super::error::ApiError;
use axum::Json;
use axum::extract::Query;
use axum::extract::State;
use shared::atlas::{self, Cell, Entry, Observation, ObservedCell, ObservedRow};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// How long an observation is shown before the atlas is played again.
pub const FRESH_FOR: Duration = Duration::from_secs(600);

/// The last observation on each version, and when it was made (one at a time: a second request
/// waits for the first's, then reads it).
#[derive(Default)]
pub struct Kept(Mutex<HashMap<u32, (Instant, Observation)>>);

/// `?postgres=18` picks the version to observe on (the server's first by default). The query is
/// read as pairs, so no query string is refused before the handler can say why in JSON.
pub async fn handler(
    State(state): State<AppState>,
    query: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Observation>, ApiError> {
    let Query(query) = query?;
    let postgres = query
        .iter()
        .find(|(name, _)| name == "postgres")
        .map(|(_, v)| v.as_str());
    let asked = crate::control::postgres_version(postgres).map_err(ApiError::BadRequest)?;
    let major = asked.unwrap_or_else(|| state.engine.default_postgres());
    let mut kept = state.atlas.0.lock().await;
    if let Some((at, observation)) = kept.get(&major)
        && at.elapsed() < FRESH_FOR
    {
        return Ok(Json(observation.clone()));
    }
    let observation = observe(&state, major).await?;
    kept.insert(major, (Instant::now(), observation.clone()));
    Ok(Json(observation))
}

/// One cell's run: saved, queued, played, and read back from the store.
async fn cell(
    state: &AppState,
    (entry, level): (&'static Entry, &'static str),
    major: u32,
) -> Result<(ObservedCell, String), ApiError> {
    let text = entry.spec(level);
    let spec_id = state.engine.store.save_spec(&text).await?;
    let scenario = crate::specs::scenario::SpecScenario::new(&spec_id, &text)
        .map_err(|e| ApiError::Internal(format!("the atlas's {} spec: {e}", entry.id)))?;
    let mut handle = state
        .engine
        .start_on(
            Arc::new(scenario) as Arc<dyn crate::engine::Scenario>,
            "p1",
            shared::Mode::Auto,
            Some(major),
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
    let (proof, steps) = atlas::played(&run.events);
    let observed = ObservedCell {
        level: level.to_owned(),
        cell: Cell::judge(entry, proof.as_ref(), &steps),
        instead: atlas::instead(entry, proof.as_ref()),
        run_id,
        spec_id,
    };
    Ok((observed, server))
}

async fn observe(state: &AppState, major: u32) -> Result<Observation, ApiError> {
    let runs = atlas::ENTRIES.iter().flat_map(|entry| {
        atlas::LEVELS
            .iter()
            .map(move |level| cell(state, (entry, level), major))
    });
    let cells = futures_util::future::join_all(runs).await;
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
        for _ in atlas::LEVELS {
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
