//! Who waits for whom, at the moment shown: an arrow per wait with the lock PostgreSQL reported,
//! the cycle of a deadlock as it forms, and whom PostgreSQL cancelled to break it
//! (`shared::waits::html`'s markup).

use leptos::prelude::*;
use shared::waits::{WaitGraph, html, kind};

#[component]
pub fn WaitsPanel(graph: WaitGraph) -> impl IntoView {
    view! { <section class="rl-waits" data-kind=kind(&graph) aria-label="Who waits for whom" inner_html=html(&graph)></section> }
}
