//! The load test's picture: a progress bar while the approvals run, then one group of bars per
//! strategy (over budget, approved, retries, most attempts, gave up) beside the tutorial's ranges
//! (the metrics are `shared::chart`'s, which a run's picture draws too).

use leptos::prelude::*;
use shared::Table;
use shared::chart::html;

#[component]
pub fn Progress(label: String, done: u64, total: u64) -> impl IntoView {
    view! {
        <div class="rl-progress">
            <progress max=total.to_string() value=done.to_string()></progress>
            <span class="rl-progress-label">{format!("{done} of {total} approvals (now: {label})")}</span>
        </div>
    }
}

/// One group of bars per strategy (`shared::chart::html`'s markup, written once the run ends).
#[component]
pub fn StrategyChart(figures: Table, tutorial: Option<Table>) -> impl IntoView {
    let markup = html(&figures, tutorial.as_ref());
    view! { <section class="rl-chart" aria-label="Results per strategy" inner_html=markup></section> }
}
