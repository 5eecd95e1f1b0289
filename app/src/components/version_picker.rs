//! Which PostgreSQL a run plays on: the servers racelab plays on (`GET /api/servers`), one
//! choice per version. Shown only where there is a choice (two versions or more); an empty
//! choice is the server's first version. Then, once a run starts, where it played.

use crate::api::{fetch_json, fetched};
use leptos::prelude::*;
use shared::catalog::PostgresServer;
use shared::run_state::RunState;

/// The versions racelab plays on, `(15, "PostgreSQL 15.20")`: `None` while loading, then
/// `None` inside if the server did not answer.
pub type Versions = ReadSignal<Option<Option<Vec<(u32, String)>>>>;

/// The servers' versions, loaded once per panel.
pub fn load_versions() -> Versions {
    fetched(async {
        fetch_json::<Vec<PostgresServer>>("/api/servers")
            .await
            .ok()
            .map(|servers| shared::versions::versions(&servers))
    })
}

#[component]
pub fn VersionPicker(
    /// The major version picked (`"18"`), or empty for the server's first.
    chosen: RwSignal<String>,
    versions: Versions,
    disabled: Signal<bool>,
) -> impl IntoView {
    move || {
        let versions = versions.get().flatten().filter(|v| v.len() > 1)?;
        let options = versions
            .into_iter()
            .enumerate()
            .map(|(i, (major, label))| {
                let value = major.to_string();
                let selected = {
                    let value = value.clone();
                    move || chosen.with(|c| *c == value || (c.is_empty() && i == 0))
                };
                view! { <option value=value selected=selected>{label}</option> }
            })
            .collect_view();
        Some(view! {
            <label class="rl-version">
                "Plays on "
                <select aria-label="PostgreSQL version" disabled=move || disabled.get()
                    on:change=move |ev| chosen.set(event_target_value(&ev))>{options}</select>
            </label>
        })
    }
}

/// Where the run in `state` played: its header's server, without the distribution's suffix
/// ("played on PostgreSQL 18.6"); nothing until it starts.
#[component]
pub fn PlayedOn(state: RwSignal<RunState>) -> impl IntoView {
    move || {
        state.with(|s| {
            let (_, server) = s.header()?;
            let server = shared::versions::short(server);
            Some(view! { <span class="rl-played-on">{format!("played on {server}")}</span> })
        })
    }
}
