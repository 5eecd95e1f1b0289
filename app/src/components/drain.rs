//! A run that drains a pipeline (the outbox's chaos test): a progress bar per count while it
//! runs, and once there is a curve, a chart of each count over time with a mark wherever a
//! process was killed, so a reader sees the crashes and the backlog they left catch up.

use leptos::prelude::*;
use shared::series::{Drain, html};

/// One bar per count: `1,734 of 2,000 events published`.
#[component]
pub fn ProgressBars(drain: Drain) -> impl IntoView {
    drain
        .latest()
        .into_iter()
        .map(|(label, done, total)| {
            view! {
                <div class="rl-progress" data-progress=label.to_owned()>
                    <progress max=total.to_string() value=done.to_string()></progress>
                    <span class="rl-progress-label">{format!("{done} of {total} {label}")}</span>
                </div>
            }
        })
        .collect_view()
}

/// Each count's curve over time, and the crash marks (`shared::series::html`'s markup).
#[component]
pub fn DrainChart(drain: Drain) -> impl IntoView {
    view! { <figure class="rl-drain" inner_html=html(&drain)></figure> }
}
