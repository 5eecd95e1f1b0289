//! Who waits for whom, at the moment shown: an arrow per wait with the lock PostgreSQL reported,
//! the cycle of a deadlock as it forms, and whom PostgreSQL cancelled to break it.

use leptos::prelude::*;
use shared::waits::WaitGraph;

#[component]
pub fn WaitsPanel(graph: WaitGraph) -> impl IntoView {
    let edges = graph
        .edges
        .iter()
        .map(|e| {
            let on = e.on.clone().map(|on| format!(" · on {on}")).unwrap_or_default();
            view! {
                <li class="rl-wait-edge" data-waiter=e.waiter.clone() data-holder=e.holder.clone()>
                    <strong>{e.waiter.clone()}</strong> " waits for " <strong>{e.holder.clone()}</strong>
                    <span class="rl-wait-on">{on}</span>
                </li>
            }
        })
        .collect_view();
    let nobody = graph
        .edges
        .is_empty()
        .then(|| view! { <li class="rl-wait-none">"Nobody waits at this moment."</li> });
    let cycle = (!graph.cycle.is_empty()).then(|| {
        let mut around = graph.cycle.clone();
        around.push(graph.cycle[0].clone());
        view! {
            <p class="rl-wait-cycle" role="status">
                "Deadlock forming: " {around.join(" → ")}
                ". Each waits for the next; PostgreSQL's deadlock check will cancel one."
            </p>
        }
    });
    let broken = graph.broken.map(|b| {
        view! {
            <p class="rl-wait-broken" data-cancelled=b.cancelled.clone()>
                {format!(
                    "PostgreSQL broke the deadlock ({}) by cancelling {} with {}.",
                    b.cycle.join(" ⇄ "),
                    b.cancelled,
                    b.code
                )}
            </p>
        }
    });
    let kind = if graph.cycle.is_empty() { "waits" } else { "deadlock" };
    view! {
        <section class="rl-waits" data-kind=kind aria-label="Who waits for whom">
            <h3>"Who waits for whom"</h3>
            <ul class="rl-wait-edges">{edges}{nobody}</ul>
            {cycle}
            {broken}
        </section>
    }
}
