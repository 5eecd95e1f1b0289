//! `/lab/{lab}/{scenario}`: the explanation, then the run panel with everything.

use super::load_scenario;
use crate::components::error_view::{ErrorView, loading};
use crate::components::run_panel::{Chrome, RunPanel};
use crate::route::{Opening, query_param};
use leptos::prelude::*;

#[component]
pub fn ScenarioPage(id: String) -> impl IntoView {
    let found = load_scenario(id.clone());
    let query = crate::api::location().1;
    let wanted = query_param(&query, "variant");
    let opening = Opening {
        compact: crate::api::compact_view(),
        ..Opening::from_query(&query)
    };
    view! {
        {move || found.get().map(|result| match result {
            Err(message) => view! { <ErrorView message=message /> }.into_any(),
            Ok(found) => {
                let variant = found.variant_or_first(wanted.as_deref());
                let scenario_id = found.scenario.id.clone();
                // The isolation lab's races are plain SQL: each can be rewritten as a spec (its
                // PostgreSQL variants: a spec does not play on MariaDB yet).
                let write = scenario_id.starts_with("isolation/").then(|| view! {
                    <p class="rl-write-link">
                        "Run it on PostgreSQL, then open it as a spec to change it, or "
                        <a href="/write">"write your own race"</a>"."
                    </p>
                });
                view! {
                    <article class="rl-scenario" data-scenario=scenario_id>
                        <h1>{found.scenario.title.clone()}</h1>
                        <p class="rl-hook">{found.scenario.hook.clone()}</p>
                        <p class="rl-explain">{found.scenario.about.clone()}</p>
                        {write}
                        <RunPanel scenario=found.scenario down=found.down variant=variant chrome=Chrome::Full
                            opening=opening.clone() />
                    </article>
                }
                .into_any()
            }
        }).unwrap_or_else(|| loading("Loading…"))}
    }
}
