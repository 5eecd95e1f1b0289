//! The timeline: one swimlane per actor, one row per thing that happened, cards in their actor's
//! lane, a bar through every row in which an actor waits for a lock, and a band through the lane
//! of whoever holds a lease (a Redis lock), with a mark where a lease ran out under its holder.
//!
//! The picture itself is computed by `shared::timeline` from the events; this file only draws it.

use super::step_card::StepCard;
use super::swimlane::SwimlaneHeads;
use leptos::prelude::*;
use shared::timeline::Timeline;

#[component]
pub fn TimelineView(timeline: Signal<Timeline>) -> impl IntoView {
    let lanes = move || timeline.with(|t| t.lanes.len()).max(1);
    view! {
        <section class="rl-timeline" style=move || format!("--lanes: {}", lanes()) aria-label="Timeline">
            <SwimlaneHeads lanes=Signal::derive(move || timeline.with(|t| t.lanes.clone())) />
            {move || {
                timeline.with(|t| {
                    let names: Vec<String> = t.lanes.iter().map(|l| l.name.clone()).collect();
                    t.rows
                        .iter()
                        .map(|row| {
                            let cells = names
                                .iter()
                                .enumerate()
                                .map(|(lane, name)| {
                                    let card = (lane == row.lane)
                                        .then(|| view! { <StepCard lane=name.clone() card=row.card.clone() /> });
                                    let bar = row.waiting.contains(&lane).then(|| {
                                        view! {
                                            <div class="rl-wait-bar" data-lane=name.clone() title=format!("{name} is waiting for a lock")></div>
                                        }
                                    });
                                    let lease = row.leases.iter().find(|l| l.lane == lane).cloned();
                                    let holds = lease.is_some();
                                    let label = lease.filter(|l| l.fresh).map(|l| {
                                        let fence = l.fence.map(|f| format!(", fence {f}")).unwrap_or_default();
                                        view! {
                                            <div class="rl-lease-label" data-key=l.key.clone()>
                                                {format!("holds {} · {} ms left{fence}", l.key, l.left_ms)}
                                            </div>
                                        }
                                    });
                                    let expired = row
                                        .expired
                                        .iter()
                                        .filter(|l| l.lane == lane)
                                        .map(|l| view! {
                                            <div class="rl-lease-expired" data-key=l.key.clone()>
                                                {format!("lease on {} expired", l.key)}
                                            </div>
                                        })
                                        .collect_view();
                                    view! {
                                        <div class="rl-cell" class:rl-cell--lease=holds data-lane=name.clone()>
                                            {expired}{label}{card}{bar}
                                        </div>
                                    }
                                })
                                .collect_view();
                            view! {
                                <div class="rl-row" data-seq=row.seq.to_string() title=format!("{} ms", row.at_ms)>
                                    {cells}
                                </div>
                            }
                        })
                        .collect_view()
                })
            }}
        </section>
    }
}
