//! Run control: what the websocket and a room both do with a run and with a reader's orders.
//! An order (`next`, `cancel`, a start the engine refused) becomes the error frame a reader is
//! answered with, or acts on the run's handle; a run's updates are read one at a time. Both
//! edges use this one module, so a socket's own run and a room's run answer alike.

use crate::engine::{IntoScenario, RunHandle, Scenario, StartError};
use crate::labs;
use shared::{ErrorCode, Mode, ServerMsg};
use std::sync::Arc;

/// A frame refused, and why: what an `error` frame says.
#[derive(Debug)]
pub struct Refusal {
    pub code: ErrorCode,
    pub message: String,
}

impl From<Refusal> for ServerMsg {
    fn from(Refusal { code, message }: Refusal) -> ServerMsg {
        ServerMsg::Error { code, message }
    }
}

/// The scenario called `name`, or the refusal that lists the known ones.
pub fn scenario_named(name: &str) -> Result<&'static labs::ScenarioDef, Refusal> {
    labs::find(name).ok_or_else(|| {
        let known: Vec<&str> = labs::LABS
            .iter()
            .flat_map(|l| l.scenarios.iter().map(|s| s.id))
            .collect();
        Refusal {
            code: ErrorCode::UnknownScenario,
            message: format!("unknown scenario {name:?}; known: {}", known.join(", ")),
        }
    })
}

/// The scenario a reader names: one of the catalog's (`isolation/write-skew`), or a saved spec
/// (`spec/<id>`), read from the store.
pub async fn scenario_for(name: &str, store: &crate::store::Store) -> Result<Arc<dyn Scenario>, Refusal> {
    let Some(id) = name.strip_prefix("spec/") else {
        return scenario_named(name).map(IntoScenario::into_scenario);
    };
    let unknown = |message: String| Refusal {
        code: ErrorCode::UnknownScenario,
        message,
    };
    let text = match store.load_spec(id).await {
        Ok(Some(text)) => text,
        Ok(None) => return Err(unknown(format!("no saved spec has the id {id:?}"))),
        Err(error) => {
            return Err(Refusal {
                code: ErrorCode::ServiceDown,
                message: format!("racelab's database did not answer: {error}"),
            });
        }
    };
    crate::specs::scenario::SpecScenario::new(id, &text)
        .map(|scenario| Arc::new(scenario) as Arc<dyn Scenario>)
        .map_err(|error| unknown(format!("saved spec {id} cannot be played: {error}")))
}

/// `next` for `run`: lets one more step play, or says why it cannot.
pub fn step_run(run: Option<&RunHandle>) -> Option<ServerMsg> {
    match run {
        None => Some(error(ErrorCode::NoRun, "no run is going")),
        Some(handle) if handle.mode != Mode::Step => Some(error(
            ErrorCode::NotStepMode,
            "this run plays by itself; start it with mode \"step\" to step it",
        )),
        Some(handle) => {
            handle.next();
            None
        }
    }
}

/// `cancel` for `run`.
pub fn cancel_run(run: Option<&RunHandle>) -> Option<ServerMsg> {
    match run {
        None => Some(error(ErrorCode::NoRun, "no run is going")),
        Some(handle) => {
            handle.cancel();
            None
        }
    }
}

/// The PostgreSQL version a start asks for (`"18"`), or why it is not a major version (the
/// error frame's message, `unknown_variant`).
pub fn postgres_version(asked: Option<&str>) -> Result<Option<u32>, String> {
    match asked.map(str::trim) {
        None | Some("") => Ok(None),
        Some(text) => text
            .parse()
            .map(Some)
            .map_err(|_| format!("postgres must be a major version such as 18, not {text:?}")),
    }
}

/// [`postgres_version`] for a websocket `start`: a version that is not a number is refused with
/// `unknown_variant`, as an unknown version is.
pub fn postgres_of_start(asked: Option<&str>) -> Result<Option<u32>, Refusal> {
    postgres_version(asked).map_err(|message| Refusal {
        code: ErrorCode::UnknownVariant,
        message,
    })
}

/// The error frame for a start the engine refused.
pub fn start_refusal(refused: &StartError) -> ServerMsg {
    error(code_of_refusal(refused), &refused.to_string())
}

/// The error code a refused start is answered with.
fn code_of_refusal(refused: &StartError) -> ErrorCode {
    match refused {
        // A version is part of what to play: the message names the versions there are.
        StartError::UnknownVariant { .. } | StartError::NoSuchVersion(_) => ErrorCode::UnknownVariant,
        StartError::NotSteppable(_) => ErrorCode::NotSteppable,
        StartError::ServiceDown { .. } => ErrorCode::ServiceDown,
        StartError::ShuttingDown => ErrorCode::ShuttingDown,
        StartError::QueueFull { .. } => ErrorCode::QueueFull,
    }
}

/// An `error` frame.
pub fn error(code: ErrorCode, message: &str) -> ServerMsg {
    ServerMsg::Error {
        code,
        message: message.to_owned(),
    }
}

/// The next update of `run`; never resolves when there is none.
pub async fn next_update(run: Option<&mut RunHandle>) -> Option<ServerMsg> {
    match run {
        Some(handle) => handle.updates.recv().await,
        None => std::future::pending().await,
    }
}

/// A lab run of plain-SQL sessions (`scenario`'s `variant`, its `events`) as a spec's text: what
/// "Open as a spec" opens, and what a lab run's proof plays again ([`crate::specs::prove`]).
pub fn spec_of_lab_run(scenario: &str, variant: &str, events: &[shared::Event]) -> Result<String, String> {
    let found = crate::labs::find(scenario).ok_or_else(|| format!("{scenario} is not one of the labs' scenarios"))?;
    // A MariaDB variant's tables are made in MariaDB's SQL (only the isolation lab has them).
    let setup = match shared::catalog::database_of(variant) {
        shared::Service::Mariadb => crate::labs::isolation::mariadb::SCHEMA,
        _ => found.sandbox.schemas.first().map_or("", |(_, sql)| *sql),
    };
    let info = Scenario::info(found);
    let label = info.variant(variant).map_or(variant.to_owned(), |v| v.label.clone());
    let title = format!("{}, {label}", info.title);
    crate::specs::from_run::spec_of_run(&title, setup, events).map_err(|e| e.to_string())
}
