//! The proof's edges drawn on the detailed timeline as the run plays (full app): measured from
//! the page after each change and each resize, drawn by [`crate::arrows`], which the player
//! draws with too.

use crate::arrows::{SeqEdge, over};
use leptos::prelude::*;

#[component]
pub fn ProofArrows(wrap: NodeRef<leptos::html::Div>, edges: Signal<Vec<SeqEdge>>) -> impl IntoView {
    let markup = RwSignal::new(String::new());
    let redraw = move || {
        // By the next frame the timeline may have been drawn afresh and these arrows with it
        // (a room's run redraws it): then there is nothing left to measure, nor to draw on.
        request_animation_frame(move || {
            let (Some(Some(wrap)), Some(edges)) = (wrap.try_get_untracked(), edges.try_get_untracked()) else {
                return;
            };
            markup.try_set(over(&wrap, &edges));
        });
    };
    Effect::new(move |_| {
        edges.track();
        redraw();
    });
    let resized = window_event_listener(leptos::ev::resize, move |_| redraw());
    on_cleanup(move || resized.remove());
    // The layer itself makes no box: the arrows are placed against the timeline's wrap.
    view! { <div class="rl-proof-arrows-layer" inner_html=markup></div> }
}
