//! The swimlanes' heads: one per actor, with its session setting (`SERIALIZABLE`), above the
//! timeline's rows, which line up under them.

use leptos::prelude::*;
use shared::event::ActorInfo;

#[component]
pub fn SwimlaneHeads(lanes: Signal<Vec<ActorInfo>>) -> impl IntoView {
    view! {
        <div class="rl-lane-heads">
            {move || {
                lanes
                    .get()
                    .into_iter()
                    .map(|lane| {
                        view! {
                            <div class="rl-lane-head" data-lane=lane.name.clone()>
                                <span class="rl-lane-name">{lane.name.clone()}</span>
                                <span class="rl-lane-detail">{lane.detail}</span>
                            </div>
                        }
                    })
                    .collect_view()
            }}
        </div>
    }
}
