//! `/lab/{lab}/{scenario}/compare`: every variant side by side, started together, so the reader
//! sees READ COMMITTED, REPEATABLE READ and SERIALIZABLE diverge on the same steps.

use super::load_scenario;
use crate::components::error_view::{ErrorView, loading};
use crate::components::run_panel::{Chrome, RunPanel};
use leptos::prelude::*;

#[component]
pub fn ComparePage(id: String) -> impl IntoView {
    let found = load_scenario(id);
    let run_all = RwSignal::new(0u32);
    view! {
        {move || found.get().map(|result| match result {
            Err(message) => view! { <ErrorView message=message /> }.into_any(),
            Ok(found) => {
                let columns = found
                    .scenario
                    .variants
                    .iter()
                    .map(|variant| {
                        view! {
                            <div class="rl-compare-col" data-variant=variant.id.clone()>
                                <h2>{variant.label.clone()}</h2>
                                <p class="rl-variant-about">{variant.description.clone()}</p>
                                <RunPanel
                                    scenario=found.scenario.clone()
                                    down=found.down.clone()
                                    variant=variant.id.clone()
                                    chrome=Chrome::Column
                                    autoplay=crate::route::Autoplay::OnLoad
                                    run_all=run_all
                                />
                            </div>
                        }
                    })
                    .collect_view();
                view! {
                    <article class="rl-scenario rl-scenario--compare" data-scenario=found.scenario.id.clone()>
                        <h1>{format!("{}: every variant", found.scenario.title)}</h1>
                        <p class="rl-explain">{found.scenario.about.clone()}</p>
                        <p class="rl-controls">
                            <button class="rl-run-all" on:click=move |_| run_all.update(|n| *n += 1)>"Run all again"</button>
                            " "
                            <a href=format!("/lab/{}", found.scenario.id)>"Back to the scenario"</a>
                        </p>
                        <div class="rl-compare">{columns}</div>
                    </article>
                }
                .into_any()
            }
        }).unwrap_or_else(|| loading("Loading…"))}
    }
}
