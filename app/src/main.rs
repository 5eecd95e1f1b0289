//! racelab's browser app (Leptos, client-side rendered, built into `dist/` by Trunk).
//!
//! For now this is only a shell: it proves the wasm bundle builds, loads and picks up the theme.
//! The playground itself (catalog, scenario page with timeline and ledger diff, compare, load
//! test, embed, run permalinks) is the UI issue's work; it will talk to the server over the
//! websocket at `/ws` with the message types of the `shared` crate.
//!
//! Everything the app draws sits inside one element with the class `racelab`: the stylesheets
//! in `style/` only match inside it, so an embed never restyles the page around it.

use leptos::prelude::*;

fn main() {
    leptos::mount::mount_to_body(App);
}

/// The whole page for now: the name, what racelab is, and what already works.
#[component]
fn App() -> impl IntoView {
    view! {
        <div class="racelab">
            <header class="rl-header">
                <h1>"racelab"</h1>
                <p class="rl-muted">
                    "Concurrency races replayed step by step on real PostgreSQL, Redis and Kafka."
                </p>
            </header>
            <main class="rl-main">
                <p>
                    "The playground UI is coming; the websocket API at " <code>"/ws"</code>
                    " and the catalog at " <a href="/api/labs">"/api/labs"</a> " are live."
                </p>
            </main>
        </div>
    }
}
