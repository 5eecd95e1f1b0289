//! Any other path: say so, and offer the way home.

use leptos::prelude::*;

#[component]
pub fn NotFound(path: String) -> impl IntoView {
    view! {
        <div class="rl-not-found">
            <h1>"Nothing here"</h1>
            <p>{format!("racelab has no page at {path}. ")} <a href="/">"See every scenario"</a></p>
        </div>
    }
}
