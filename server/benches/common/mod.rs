//! What the lab benchmarks share: their configuration, playing one run through the engine to
//! its end, and the arithmetic of their tables.

use racelab::config::Config;
use racelab::engine::Engine;
use racelab::labs::ScenarioDef;
use shared::{Event, Mode, Outcome, ServerMsg};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, BoxError>;

/// How long one engine run may take before the benchmark gives up.
const RUN_DEADLINE: Duration = Duration::from_secs(300);

/// The environment's services, else the local defaults; child-process actors run from this
/// build's `racelab`.
pub fn config() -> Config {
    let mut config = Config::from_env().unwrap_or_else(|e| panic!("racelab's settings in the environment: {e}"));
    config.actor_binary = Some(env!("CARGO_BIN_EXE_racelab").into());
    config
}

/// The engine on `config`'s PostgreSQL.
pub async fn engine(config: &Config) -> Result<Arc<Engine>> {
    Ok(Arc::new(racelab::db::connect_engine(config).await.map_err(|e| {
        format!("racelab's engine needs PostgreSQL at DATABASE_URL: {e}")
    })?))
}

/// One engine run, as its client sees it.
pub struct EngineRun {
    pub wall: Duration,
    pub events: Vec<Event>,
}

/// Plays `def`/`variant` through the engine and waits for `Done`; fails unless it completed.
pub async fn engine_run(engine: &Arc<Engine>, def: &'static ScenarioDef, variant: &str) -> Result<EngineRun> {
    let started = Instant::now();
    let mut handle = engine.start(def, variant, Mode::Auto).await?;
    let deadline = tokio::time::Instant::now() + RUN_DEADLINE;
    let mut events = Vec::new();
    loop {
        let update = tokio::time::timeout_at(deadline, handle.updates.recv())
            .await
            .map_err(|_| format!("{} {variant}: no Done within {RUN_DEADLINE:?}", def.id))?;
        match update {
            None => return Err(format!("{} {variant}: the run closed without Done", def.id).into()),
            Some(ServerMsg::Event { event }) => events.push(event),
            Some(ServerMsg::Done { outcome, .. }) => {
                let wall = started.elapsed();
                return match outcome {
                    Outcome::Completed => Ok(EngineRun { wall, events }),
                    other => Err(format!("{} {variant} did not complete: {other:?}", def.id).into()),
                };
            }
            Some(_) => {}
        }
    }
}

pub fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub fn median(values: &[f64]) -> f64 {
    let mut values = values.to_vec();
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}
