//! Making recordings ([`shared::recording`]): a run played to its end on the real services, its
//! events kept with the scenario and a stamp of where and when, in one file that plays with no
//! racelab behind it. `racelab record` writes one; [`shared::recording::read`] reads one back
//! (the player's reader) and says plainly why a file cannot be played.

use crate::engine::{Engine, IntoScenario, Scenario};
use crate::labs::ScenarioDef;
use crate::specs::scenario::{EVERY, SpecScenario};
use shared::protocol::StoredRun;
use shared::recording::{self, Recording, ServiceVersion, SpecRecording, Stamp};
use shared::{EventKind, Mode, Outcome, ScenarioInfo, ServerMsg, Service};
use std::sync::Arc;

/// What is recorded.
pub enum Source {
    /// A catalog scenario.
    Lab(&'static ScenarioDef),
    /// A spec, by its text, played within a page's limits (as /write plays it).
    Spec(String),
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The engine would not start the run: an unknown variant, a service down, no server of
    /// that version.
    #[error("{0}")]
    Refused(String),
    #[error("the spec cannot be played: {0}")]
    Spec(#[from] crate::specs::SpecError),
    /// A recording shows a finished run: one that failed or was cancelled is not kept.
    #[error("the run did not complete ({0}); nothing is recorded")]
    NotCompleted(String),
    #[error("the run ended before it said it was done")]
    CutShort,
}

/// The version racelab was built as, and the commit it was built from (`unknown` outside a
/// git checkout), for the stamp.
pub fn racelab_build() -> (String, String) {
    (
        env!("CARGO_PKG_VERSION").to_owned(),
        option_env!("RACELAB_COMMIT").unwrap_or("unknown").to_owned(),
    )
}

/// Plays `source`'s `variant` (its first by default) to its end on `engine`, on PostgreSQL
/// `postgres` (a major version) or the home server's, and keeps it. A lab run's proof is
/// worked out on `proof_on` (a PostgreSQL URL of the run's version), where given; a spec's run
/// carries its own, and its every-permutation matrix is played too.
pub async fn record(
    engine: &Arc<Engine>,
    source: Source,
    variant: Option<&str>,
    postgres: Option<u32>,
    proof_on: Option<&str>,
) -> Result<Recording, RecordError> {
    let (scenario, spec_text) = scenario_of(source)?;
    let info = scenario.info();
    let variant = variant
        .map(str::to_owned)
        .or_else(|| info.variants.first().map(|v| v.id.clone()))
        .unwrap_or_default();
    let run = play(engine, scenario.clone(), &variant, postgres).await?;
    let played = Played {
        scenario,
        spec_text,
        run,
        postgres,
        recorded_at: now_seconds(),
    };
    kept(engine, played, proof_on).await
}

/// A run racelab already finished and stored, as a recording: what "Download recording" on its
/// page saves. Stamped with the day it finished and the PostgreSQL its header names; a spec's
/// matrix is played now, on that version.
pub async fn of_stored(
    engine: &Arc<Engine>,
    source: Source,
    run: StoredRun,
    finished_at: u64,
    proof_on: Option<&str>,
) -> Result<Recording, RecordError> {
    match &run.outcome {
        Outcome::Completed => {}
        Outcome::Failed { message } => return Err(RecordError::NotCompleted(message.clone())),
        Outcome::Cancelled => return Err(RecordError::NotCompleted("cancelled".to_owned())),
    }
    let (scenario, spec_text) = scenario_of(source)?;
    let postgres = run.server().and_then(shared::versions::major_of);
    let played = Played {
        scenario,
        spec_text,
        run,
        postgres,
        recorded_at: finished_at,
    };
    kept(engine, played, proof_on).await
}

/// A finished run and what it was a run of, before it is kept.
struct Played {
    scenario: Arc<dyn Scenario>,
    /// A spec's text; `None` for a lab scenario.
    spec_text: Option<String>,
    run: StoredRun,
    /// The PostgreSQL major version it played on, where it names one.
    postgres: Option<u32>,
    recorded_at: u64,
}

fn scenario_of(source: Source) -> Result<(Arc<dyn Scenario>, Option<String>), RecordError> {
    Ok(match source {
        Source::Lab(found) => (found.into_scenario(), None),
        Source::Spec(text) => {
            let id = crate::store::spec_id(&text);
            (Arc::new(SpecScenario::new(&id, &text)?), Some(text))
        }
    })
}

fn now_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The recording of `played`: a spec's matrix played, a lab run's proof worked out on
/// `proof_on`, the stamp.
async fn kept(engine: &Arc<Engine>, played: Played, proof_on: Option<&str>) -> Result<Recording, RecordError> {
    let Played {
        scenario,
        spec_text,
        run,
        postgres,
        recorded_at,
    } = played;
    let info = scenario.info();
    let services = scenario.budget(&run.variant).services();
    let spec = match spec_text {
        Some(text) => {
            let every = play(engine, scenario, EVERY, postgres).await?;
            let matrix = every
                .events
                .into_iter()
                .filter(|e| matches!(e.kind, EventKind::Permutation { .. }))
                .collect();
            Some(SpecRecording { text, matrix })
        }
        None => None,
    };
    // A MariaDB run's proof plays on MariaDB, wherever `proof_on` points.
    let proof_on = match shared::catalog::database_of(&run.variant) {
        Service::Mariadb => proof_on.map(|_| engine.services().mariadb_url.as_str()),
        _ => proof_on,
    };
    let proof = match (&spec, proof_on) {
        (None, Some(url)) => proof_of_lab_run(url, &run).await,
        _ => None,
    };
    let stamp = stamp(engine, &info, &run, &services, recorded_at).await;
    Ok(Recording {
        format: recording::FORMAT.to_owned(),
        version: recording::VERSION,
        stamp,
        scenario: info,
        spec,
        run,
        proof,
        chapters: Vec::new(),
    })
}

/// One run of `variant`, from its start to its `done`, kept whole.
async fn play(
    engine: &Arc<Engine>,
    scenario: Arc<dyn Scenario>,
    variant: &str,
    postgres: Option<u32>,
) -> Result<StoredRun, RecordError> {
    let id = scenario.info().id;
    let mut handle = engine
        .start_on(scenario, variant, Mode::Auto, postgres)
        .await
        .map_err(|e| RecordError::Refused(e.to_string()))?;
    let mut events = Vec::new();
    while let Some(update) = handle.updates.recv().await {
        match update {
            ServerMsg::Event { event } => events.push(event),
            ServerMsg::Done { run_id, outcome } => {
                return match outcome {
                    Outcome::Completed => Ok(StoredRun {
                        id: run_id,
                        scenario: id,
                        variant: variant.to_owned(),
                        outcome,
                        events,
                    }),
                    Outcome::Failed { message } => Err(RecordError::NotCompleted(message)),
                    Outcome::Cancelled => Err(RecordError::NotCompleted("cancelled".to_owned())),
                };
            }
            _ => {}
        }
    }
    Err(RecordError::CutShort)
}

/// Why a lab run happened: its statements played again as a spec on `url` (as `racelab run
/// --why` does); none where the run is not one of SQL sessions, or has no keyed table.
async fn proof_of_lab_run(url: &str, run: &StoredRun) -> Option<shared::proof::Proof> {
    let text = crate::control::spec_of_lab_run(&run.scenario, &run.variant, &run.events).ok()?;
    match crate::specs::prove(url, &text).await {
        Ok(proof) => proof,
        Err(error) => {
            tracing::warn!(%error, "the recording has no proof");
            None
        }
    }
}

/// Where and when: each service the run talked to and its version (PostgreSQL's as the run's
/// header gave it, Redis's as it answers `INFO`, the broker's as the protocol it speaks),
/// racelab's build, the variant, the moment.
async fn stamp(engine: &Engine, info: &ScenarioInfo, run: &StoredRun, services: &[Service], recorded_at: u64) -> Stamp {
    let variant = run.variant.as_str();
    let mut versions = Vec::new();
    for &service in services {
        let version = match service {
            // The run's header names the SQL database it played on.
            Service::Postgres | Service::Mariadb => run.server().map(str::to_owned),
            Service::Redis => crate::health::redis_version(&engine.services().redis).await,
            Service::Kafka => crate::health::broker_version(&engine.services().brokers).await,
            // HTTP and processes are racelab's own.
            Service::Http | Service::Process => None,
        };
        versions.push(ServiceVersion { service, version });
    }
    let (racelab, commit) = racelab_build();
    Stamp {
        recorded_at: recording::utc_timestamp(recorded_at),
        racelab,
        commit,
        services: versions,
        variant: variant.to_owned(),
        variant_label: info
            .variant(variant)
            .map_or_else(|| variant.to_owned(), |v| v.label.clone()),
    }
}

/// The file name a recording is written to by default: `isolation-write-skew.serializable`,
/// or a spec file's stem and its permutation, then `.racelab.json`.
pub fn default_file_name(scenario_or_file: &str, variant: &str) -> String {
    let stem = std::path::Path::new(scenario_or_file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|_| scenario_or_file.ends_with(".spec"))
        .unwrap_or_else(|| scenario_or_file.replace('/', "-"));
    format!("{stem}.{variant}.racelab.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_named_after_what_it_recorded() {
        assert_eq!(
            default_file_name("isolation/write-skew", "serializable"),
            "isolation-write-skew.serializable.racelab.json"
        );
        assert_eq!(default_file_name("races/my-race.spec", "p1"), "my-race.p1.racelab.json");
    }
}
