//! One file per page; each loads what it needs and hands it to the components. The embed app
//! (`--features embed`) has only the pages an iframe shows.

#[cfg(not(feature = "embed"))]
pub mod alone;
#[cfg(not(feature = "embed"))]
pub mod atlas;
#[cfg(not(feature = "embed"))]
pub mod catalog;
#[cfg(not(feature = "embed"))]
pub mod compare;
pub mod embed;
#[cfg(not(feature = "embed"))]
pub mod lessons;
pub mod not_found;
pub mod replay;
#[cfg(not(feature = "embed"))]
pub mod results;
#[cfg(not(feature = "embed"))]
pub mod room;
#[cfg(not(feature = "embed"))]
pub mod scenario;
#[cfg(not(feature = "embed"))]
pub mod write;

use crate::api::{fetch_json, fetched};
use leptos::prelude::*;
use shared::catalog::ScenarioStatus;
use shared::{ScenarioInfo, Service};

/// A scenario from the catalog, with the services its lab needs that are down.
#[derive(Clone)]
pub struct Found {
    pub scenario: ScenarioInfo,
    pub down: Vec<Service>,
}

impl Found {
    /// The variant to show first: the one asked for, if the scenario has it, else its first.
    pub fn variant_or_first(&self, wanted: Option<&str>) -> String {
        self.scenario.variant_or_first(wanted)
    }
}

/// Loads scenario `id` (`lab/scenario`), with the services its lab needs that are down (`None`
/// while loading).
pub fn load_scenario(id: String) -> ReadSignal<Option<Result<Found, String>>> {
    fetched(async move {
        let status: ScenarioStatus = fetch_json(&format!("/api/scenarios/{id}")).await?;
        Ok(Found {
            scenario: status.scenario,
            down: status.down,
        })
    })
}
