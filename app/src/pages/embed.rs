//! `/embed/{lab}/{scenario}`: one scenario for an iframe, minimal chrome, sized to its content,
//! telling the host page its height whenever it changes.

use super::load_scenario;
use crate::api::report_height_to_parent;
use crate::components::error_view::{ErrorView, loading};
use crate::components::run_panel::{Chrome, RunPanel};
use crate::route::EmbedOptions;
use leptos::prelude::*;

#[component]
pub fn EmbedPage(id: String, options: EmbedOptions) -> impl IntoView {
    let found = load_scenario(id);
    request_animation_frame(report_height_to_parent);
    view! {
        {move || found.get().map(|result| match result {
            Err(message) => view! { <ErrorView message=message /> }.into_any(),
            Ok(found) => {
                let variant = found.variant_or_first(options.variant.as_deref());
                let scenario_id = found.scenario.id.clone();
                // The version its author picked, if any: the runs here play on it.
                let by = match options.opening.postgres.as_str() {
                    "" => " · racelab".to_owned(),
                    postgres => format!(" · racelab on PostgreSQL {postgres}"),
                };
                view! {
                    <article class="rl-scenario" data-scenario=scenario_id.clone()>
                        <p class="rl-embed-title">
                            <a href=shared::pages::scenario_page(&scenario_id) target="_blank" rel="noopener">
                                {found.scenario.title.clone()}
                            </a>
                            <span class="rl-embed-by">{by}</span>
                        </p>
                        <RunPanel
                            scenario=found.scenario
                            down=found.down
                            variant=variant
                            chrome=Chrome::Embed
                            opening=options.opening.clone()
                        />
                    </article>
                }
                .into_any()
            }
        }).unwrap_or_else(|| loading("Loading…"))}
    }
}
