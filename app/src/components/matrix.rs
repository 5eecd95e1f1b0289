//! "Every permutation": one row per permutation, its steps in order with waits and failures
//! marked, its outcome; the permutations with the same outcome grouped and counted above
//! (`shared::spec::matrix::html`'s markup, which the player writes too). Each row opens that
//! permutation's own run where there is a server to play it.

use leptos::prelude::*;
use shared::run_state::RunState;
use shared::spec::matrix::html;

#[component]
pub fn Matrix(
    state: RwSignal<RunState>,
    /// Plays the permutation at this index; without it, rows have no "Open".
    #[prop(optional)]
    open: Option<Callback<u32>>,
) -> impl IntoView {
    let markup = move || state.with(|s| html(&s.events, open.is_some()));
    // One handler for every row's "Open", since the rows are text with none of their own.
    let clicked = move |event: leptos::ev::MouseEvent| {
        let index = crate::api::target_of_class(event.target(), "rl-matrix-open")
            .and_then(|button| button.get_attribute("data-index"))
            .and_then(|index| index.parse().ok());
        if let (Some(open), Some(index)) = (open, index) {
            open.run(index);
        }
    };
    view! { <section class="rl-matrix" aria-label="Every permutation" inner_html=markup on:click=clicked></section> }
}
