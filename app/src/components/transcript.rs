//! The plain transcript, collapsible: the very lines `racelab run` prints.

use leptos::prelude::*;

#[component]
pub fn Transcript(text: Signal<String>) -> impl IntoView {
    view! {
        <details class="rl-transcript">
            <summary>"Transcript (as the command line prints it)"</summary>
            <pre>{move || text.get()}</pre>
        </details>
    }
}
