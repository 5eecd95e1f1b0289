//! Compact or detailed: the timeline's two views, as two buttons, the current one pressed. On
//! the scenario page, a replay and (as its own choice) an embed.

use leptos::prelude::*;

/// Compact or detailed: two buttons, the current one pressed.
#[component]
pub fn ViewToggle(compact: RwSignal<bool>) -> impl IntoView {
    view! {
        <div class="rl-view-toggle" role="group" aria-label="Timeline view">
            <button
                class="rl-view-compact"
                aria-pressed=move || compact.get().to_string()
                on:click=move |_| compact.set(true)
            >
                "Compact"
            </button>
            <button
                class="rl-view-detailed"
                aria-pressed=move || (!compact.get()).to_string()
                on:click=move |_| compact.set(false)
            >
                "Detailed"
            </button>
        </div>
    }
}
