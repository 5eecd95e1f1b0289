//! Time travel through a finished run: a slider over its events (drag it, or focus it and use
//! the arrow keys), and a statement back and forward (as a live run is stepped: each press
//! plays one statement with what it led to, [`shared::stepping`]). The moment chosen is what
//! every part of the run's body draws; at the last event, the run as it ended. (A recording's
//! scrubber, with its chapters, is the player's: `crate::player::page`.)

use leptos::prelude::*;
use shared::EventKind;
use shared::run_state::RunState;
use shared::stepping::{moment, next_statement, previous_statement};

#[component]
pub fn Scrubber(state: RwSignal<RunState>, at: RwSignal<Option<usize>>) -> impl IntoView {
    let total = move || state.with(|s| s.events.len());
    let position = move || at.get().unwrap_or_else(total).min(total());
    let go = move |n: usize| at.set(if n >= total() { None } else { Some(n) });
    let caption = move || {
        let n = position();
        state.with(|s| moment(&s.events, n))
    };
    let forward = move || go(state.with(|s| next_statement(&s.events, position())));
    // A run with no step to travel through (a spec played at every permutation, whose lanes
    // stay quiet: its matrix says what each order did) has none.
    let visible = move || {
        state.with(|s| {
            !s.is_active() && s.events.len() > 1 && s.events.iter().any(|e| matches!(e.kind, EventKind::Step { .. }))
        })
    };
    let at_start = move || position() == 0;
    let at_end = move || position() >= total();
    view! {
        <Show when=visible>
            <div class="rl-scrubber" role="group" aria-label="Travel through the run">
                <button
                    class="rl-scrub-back"
                    aria-label="One statement back"
                    disabled=at_start
                    on:click=move |_| go(state.with(|s| previous_statement(&s.events, position())))
                >"◀"</button>
                <input
                    class="rl-scrub"
                    type="range"
                    min="0"
                    max=move || total().to_string()
                    prop:value=move || position().to_string()
                    aria-label="Moment of the run"
                    aria-valuetext=caption
                    on:input=move |e| go(event_target_value(&e).parse().unwrap_or_else(|_| total()))
                />
                <button
                    class="rl-scrub-forward"
                    aria-label="One statement forward"
                    disabled=at_end
                    on:click=move |_| forward()
                >"▶"</button>
                <span class="rl-scrub-moment" data-at=move || position().to_string() aria-live="polite">
                    {move || if at.get().is_none() { format!("the end ({})", caption()) } else { caption() }}
                </span>
            </div>
        </Show>
    }
}
