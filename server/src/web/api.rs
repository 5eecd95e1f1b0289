//! `GET /api/labs`, `GET /api/scenarios/{lab}/{scenario}`, `GET /api/runs/{id}` (and its spec,
//! proof and recording), and readers' specs: `POST /api/specs` (save) and `GET /api/specs/{id}`.

use super::AppState;
use super::error::ApiError;
use crate::health;
use crate::labs;
use crate::store::StoredRun;
use axum::extract::rejection::{QueryRejection, StringRejection};
use axum::extract::{Path, Query, State};
use axum::routing::get;
use axum::{Json, Router};
use shared::catalog::{LabStatus, ScenarioStatus};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/labs", get(labs_with_status))
        .route("/api/servers", get(servers))
        .route("/api/mariadb", get(mariadb))
        .route("/api/scenarios/{lab}/{scenario}", get(scenario_with_status))
        .route("/api/{*rest}", get(no_such_api))
        .route("/api/runs/{id}", get(stored_run))
        .route(
            "/api/specs",
            axum::routing::post(save_spec).layer(axum::extract::DefaultBodyLimit::max(SPEC_BODY_LIMIT)),
        )
        .route("/api/specs/{id}", get(saved_spec))
        .route("/api/runs/{id}/spec", get(run_as_spec))
        .route("/api/runs/{id}/proof", get(run_proof))
        .route("/api/runs/{id}/recording", get(run_recording))
        .route("/api/scenarios/{lab}/{scenario}/spec", get(scenario_as_spec))
}

#[derive(serde::Deserialize)]
struct VariantQuery {
    variant: Option<String>,
}

/// A lab scenario's variant as a spec, for "Open as a spec" before the reader ran it: written
/// from its newest completed run, or from a run played for the purpose.
async fn scenario_as_spec(
    State(state): State<AppState>,
    Path((lab, scenario)): Path<(String, String)>,
    query: Result<Query<VariantQuery>, QueryRejection>,
) -> Result<Json<SpecText>, ApiError> {
    let Query(query) = query?;
    let id = format!("{lab}/{scenario}");
    let found = labs::find(&id).ok_or_else(|| ApiError::NotFound(format!("there is no scenario called {id:?}")))?;
    let info = crate::engine::Scenario::info(found);
    let variant = match query.variant {
        Some(v) if info.variant(&v).is_some() => v,
        Some(v) => return Err(ApiError::NotFound(format!("{id} has no variant {v:?}"))),
        None => info.variants.first().map(|v| v.id.clone()).unwrap_or_default(),
    };
    let run_id = match state.engine.store.latest(&id, &variant).await? {
        Some(run_id) => run_id,
        None => {
            let mut handle = state
                .engine
                .start(found, &variant, shared::Mode::Auto)
                .await
                .map_err(|e| ApiError::Unavailable(e.to_string()))?;
            loop {
                match handle.updates.recv().await {
                    Some(shared::ServerMsg::Done { run_id, outcome }) => {
                        if outcome != shared::Outcome::Completed {
                            return Err(ApiError::Unavailable(format!(
                                "the run to write it from did not complete: {outcome:?}"
                            )));
                        }
                        break run_id;
                    }
                    Some(_) => {}
                    None => return Err(ApiError::Unavailable("the run to write it from ended early".into())),
                }
            }
        }
    };
    run_as_spec(State(state), Path(run_id)).await
}

/// A finished run of plain-SQL sessions as a spec: what "Open as a spec" opens in the editor.
async fn run_as_spec(State(state): State<AppState>, Path(id): Path<String>) -> Result<Json<SpecText>, ApiError> {
    let run = stored(&state, &id).await?;
    spec_of_stored(&run).map(|text| Json(SpecText { text }))
}

async fn stored(state: &AppState, id: &str) -> Result<StoredRun, ApiError> {
    state
        .engine
        .store
        .load(id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no finished run has the id {id:?}")))
}

/// Why a finished run happened: its own proof if it has one (a spec's run), else, for a lab
/// run of plain-SQL sessions, the proof of its statements played again as a spec, in the same
/// order, by [`crate::specs::prove`] (on demand: a lab run does not pay for it when nobody
/// asks). 404 when racelab cannot tell (no table with a primary key).
async fn run_proof(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<shared::proof::Proof>, ApiError> {
    let run = stored(&state, &id).await?;
    if let Some(proof) = run.events.iter().rev().find_map(|e| match &e.kind {
        shared::EventKind::Proof { proof } => Some((**proof).clone()),
        _ => None,
    }) {
        return Ok(Json(proof));
    }
    let text = spec_of_stored(&run)?;
    // Played again where the run played: MariaDB, or the PostgreSQL version its header names,
    // where racelab still has it.
    let url = match shared::spec::database_of(&text) {
        shared::spec::Database::Mariadb => state.config.mariadb_url.clone(),
        shared::spec::Database::Postgresql => url_of_run(&state, &run),
    };
    crate::specs::prove(&url, &text)
        .await
        .map_err(|e| ApiError::Unavailable(e.to_string()))?
        .map(Json)
        .ok_or_else(|| {
            ApiError::NotFound(
                "racelab cannot tell what this run's reads saw: none of its tables has a primary key".into(),
            )
        })
}

/// A finished run as a recording (`*.racelab.json`, docs/recordings.md), saved by the browser
/// under its own name: "Download recording" on the run's page. A lab run's proof is worked out
/// now as [`run_proof`] does; a spec's matrix is played now; the chapters its author marked
/// (`?chapter=SEQ:caption`, [`shared::chapters`]) go in, or a 400 says why one cannot. 404 for a
/// run that did not complete.
async fn run_recording(
    State(state): State<AppState>,
    Path(id): Path<String>,
    asked: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<impl axum::response::IntoResponse, ApiError> {
    let Query(asked) = asked?;
    use crate::recording::{self, Source};
    let run = stored(&state, &id).await?;
    // The chapters its author marked (`?chapter=12:caption`, each), checked before anything is
    // played again.
    let chapters: Vec<String> = asked
        .into_iter()
        .filter(|(name, _)| name == "chapter")
        .map(|(_, chapter)| chapter)
        .collect();
    let chapters = shared::chapters::kept(&chapters, &run.events).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let finished_at = state.engine.store.finished_at(&id).await?.unwrap_or_default();
    let source = match run.scenario.strip_prefix("spec/") {
        Some(spec) => Source::Spec(
            state
                .engine
                .store
                .load_spec(spec)
                .await?
                .ok_or_else(|| ApiError::NotFound(format!("the spec of run {id:?} is no longer kept")))?,
        ),
        None => Source::Lab(
            labs::find(&run.scenario)
                .ok_or_else(|| ApiError::NotFound(format!("there is no scenario called {:?}", run.scenario)))?,
        ),
    };
    let name = recording::default_file_name(&run.scenario, &run.variant);
    let proof_on = url_of_run(&state, &run);
    let mut made = recording::of_stored(&state.engine, source, run, finished_at, Some(&proof_on))
        .await
        .map_err(|e| match e {
            recording::RecordError::NotCompleted(_) => ApiError::NotFound(e.to_string()),
            _ => ApiError::Unavailable(e.to_string()),
        })?;
    made.chapters = chapters;
    let body = serde_json::to_string_pretty(&made).map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok((
        [
            (axum::http::header::CONTENT_TYPE, "application/json".to_owned()),
            (
                axum::http::header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        body,
    ))
}

/// The PostgreSQL a stored run played on (its header's version), where racelab still has it;
/// else racelab's own.
fn url_of_run(state: &AppState, run: &StoredRun) -> String {
    run.server()
        .and_then(shared::versions::major_of)
        .and_then(|major| state.engine.url_of(major))
        .unwrap_or_else(|| state.config.database_url.clone())
}

/// A stored lab run as a spec's text.
fn spec_of_stored(run: &StoredRun) -> Result<String, ApiError> {
    crate::control::spec_of_lab_run(&run.scenario, &run.variant, &run.events).map_err(ApiError::BadRequest)
}

#[derive(serde::Serialize)]
struct SpecText {
    text: String,
}

/// A spec's body may be a little over the spec limit (64 KiB): the refusal then says the limit.
const SPEC_BODY_LIMIT: usize = 96 * 1024;

/// A saved spec: its id, its text and the scenario it plays as (`spec/<id>`).
#[derive(serde::Serialize)]
struct SavedSpec {
    id: String,
    text: String,
    scenario: ScenarioStatus,
}

fn saved(id: String, text: String, scenario: &crate::specs::scenario::SpecScenario) -> SavedSpec {
    SavedSpec {
        id,
        text,
        scenario: ScenarioStatus {
            scenario: crate::engine::Scenario::info(scenario),
            down: Vec::new(),
            rooms: None,
        },
    }
}

/// Saves a spec (the request's body, as text) once it reads: immutable, named by its content,
/// so saving it again gives the same id. A spec that does not read is refused with where and
/// why, and nothing is saved.
async fn save_spec(
    State(state): State<AppState>,
    text: Result<String, StringRejection>,
) -> Result<(axum::http::StatusCode, Json<SavedSpec>), ApiError> {
    let text = text?;
    let id = crate::store::spec_id(&text);
    let scenario =
        crate::specs::scenario::SpecScenario::new(&id, &text).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let stored = state.engine.store.save_spec(&text).await?;
    Ok((axum::http::StatusCode::CREATED, Json(saved(stored, text, &scenario))))
}

async fn saved_spec(State(state): State<AppState>, Path(id): Path<String>) -> Result<Json<SavedSpec>, ApiError> {
    let text = state
        .engine
        .store
        .load_spec(&id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no saved spec has the id {id:?}")))?;
    let scenario =
        crate::specs::scenario::SpecScenario::new(&id, &text).map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(Json(saved(id, text, &scenario)))
}

/// The catalog, with the services each lab needs that are down right now.
async fn labs_with_status(State(state): State<AppState>) -> Json<Vec<LabStatus>> {
    let health = state.engine.health().await;
    let labs = labs::catalog()
        .into_iter()
        .map(|lab| {
            let down = lab.services.iter().copied().filter(|s| !health.is_up(*s)).collect();
            LabStatus { lab, down }
        })
        .collect();
    Json(labs)
}

/// The PostgreSQL servers runs play on, each with its version and whether it answers now: what
/// the version picker offers.
async fn servers(State(state): State<AppState>) -> Json<Vec<shared::catalog::PostgresServer>> {
    Json(state.engine.servers().await)
}

/// The MariaDB runs play on: whether it answers now, and its version (or why it does not): what
/// the database picker names.
async fn mariadb(State(state): State<AppState>) -> Json<crate::health::Dependency> {
    Json(state.engine.mariadb().await)
}

/// One scenario, with the services its lab needs that are down and where a room opened from its
/// page reaches (every replica, or this process only without Redis): what a scenario page or an
/// embed loads (a few hundred bytes, where the catalog is tens of KB).
async fn scenario_with_status(
    State(state): State<AppState>,
    Path((lab, scenario)): Path<(String, String)>,
) -> Result<Json<ScenarioStatus>, ApiError> {
    let id = format!("{lab}/{scenario}");
    if lab == "spec" {
        // A saved spec, as a scenario: what its page, its embed and a room load.
        let saved = saved_spec(State(state.clone()), Path(scenario)).await?;
        let health = state.engine.health().await;
        // Its own database's, where its `# database:` line says.
        let plays_on = shared::spec::database_of(&saved.0.text).service();
        let mut status = saved.0.scenario;
        status.down = [plays_on].into_iter().filter(|s| !health.is_up(*s)).collect();
        status.rooms = Some(health::rooms_reach(&health.redis));
        return Ok(Json(status));
    }
    let found = labs::find(&id).ok_or_else(|| ApiError::NotFound(format!("there is no scenario called {id:?}")))?;
    let needs = labs::LABS
        .iter()
        .find(|l| l.scenarios.iter().any(|s| s.id == id))
        .map(|l| l.services)
        .unwrap_or_default();
    let health = state.engine.health().await;
    Ok(Json(ScenarioStatus {
        scenario: crate::engine::Scenario::info(found),
        down: needs.iter().copied().filter(|s| !health.is_up(*s)).collect(),
        rooms: Some(health::rooms_reach(&health.redis)),
    }))
}

/// Any other `/api/` path: a JSON 404, never the app's page.
async fn no_such_api(Path(rest): Path<String>) -> ApiError {
    ApiError::NotFound(format!("there is no API at /api/{rest}"))
}

/// A finished run's stored events, for replay without touching a sandbox.
async fn stored_run(State(state): State<AppState>, Path(id): Path<String>) -> Result<Json<StoredRun>, ApiError> {
    state
        .engine
        .store
        .load(&id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("no finished run has the id {id:?}")))
}
