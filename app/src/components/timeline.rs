//! The timeline: one swimlane per actor, one row per thing that happened, cards in their actor's
//! lane, a bar through every row in which an actor waits for a lock, and a band through the lane
//! of whoever holds a lease (a Redis lock), with a mark where a lease ran out under its holder.
//! The compact one draws each card in a line that opens to it, what an actor says as a caption
//! across the lanes.
//!
//! The picture is computed by `shared::timeline` from the events and written as text by
//! `shared::timeline_html`; each change patches the drawn one in place ([`crate::morph`]), so a
//! line the reader opened stays open while the run plays on, and only a new row fades in.

use leptos::prelude::*;
use shared::timeline::Timeline;
use shared::timeline_html::{compact, detailed};

/// The detailed timeline.
#[component]
pub fn TimelineView(timeline: Signal<Timeline>) -> impl IntoView {
    drawn(timeline, detailed)
}

/// The compact timeline: the embed's default, and a toggle on the full page.
#[component]
pub fn CompactTimeline(timeline: Signal<Timeline>) -> impl IntoView {
    drawn(timeline, compact)
}

/// A host that makes no box of its own, patched with `write`'s markup whenever the timeline
/// changes.
fn drawn(timeline: Signal<Timeline>, write: fn(&Timeline) -> String) -> impl IntoView {
    let host = NodeRef::<leptos::html::Div>::new();
    Effect::new(move |_| {
        let markup = timeline.with(write);
        if let Some(host) = host.get() {
            crate::morph::patch(&host, &markup);
        }
    });
    view! { <div class="rl-timeline-host" node_ref=host></div> }
}
