//! The page header: the name, home, and what racelab is in one line.

use leptos::prelude::*;

#[component]
pub fn Header() -> impl IntoView {
    view! {
        <header class="rl-header">
            <a class="rl-home" href="/">"racelab"</a>
            <span class="rl-tagline">"Concurrency bugs, happening for real on PostgreSQL, MariaDB and Redis"</span>
        </header>
    }
}
