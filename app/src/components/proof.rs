//! "Why it happened": the proof racelab derived from what a run's transactions read and wrote
//! (`shared::proof`), in plain words and drawn: the steps its edges join, in their lanes, with
//! an arrow per edge. The three kinds of edge differ in their line (ww solid, wr dashed, rw
//! dotted) and carry their name, not colour alone; the cycle's edges are drawn heavier.
//! Full app only: the embed reads proofs as empty and shows none.

use leptos::prelude::*;
use shared::proof::picture::{self, Arrow};
use shared::proof::{Dep, Proof};
use shared::run_state::RunState;
use shared::{Event, EventKind};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A run's steps as `(lane, SQL)`, in the order they started: what a proof's step numbers index.
pub type Steps = Vec<(String, String)>;

/// The run's proof, its lanes and its steps, if it has one.
pub fn of_run(state: &RunState) -> Option<(Proof, Vec<String>, Steps)> {
    let proof = state.events.iter().rev().find_map(|e| match &e.kind {
        EventKind::Proof { proof } if !proof.txns.is_empty() => Some((**proof).clone()),
        _ => None,
    })?;
    let lanes = state.timeline().lanes.into_iter().map(|l| l.name).collect();
    Some((proof, lanes, steps(&state.events)))
}

fn steps(events: &[Event]) -> Steps {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Step { actor, text, .. } => Some((actor.clone(), text.clone())),
            _ => None,
        })
        .collect()
}

/// A finished lab run of SQL sessions that has no proof of its own: its id, lanes and steps.
/// (A spec's run carries its proof; a lab's is asked for, since playing it again costs a run.)
pub fn askable(state: &RunState) -> Option<(String, Vec<String>, Steps)> {
    if state.is_active() || state.events.iter().any(|e| matches!(e.kind, EventKind::Proof { .. })) {
        return None;
    }
    let lab_sql = state.events.iter().any(|e| {
        matches!(&e.kind, EventKind::RunStarted { scenario, .. } if scenario.starts_with("isolation/") && scenario != "isolation/load-test")
    });
    let run_id = state.run_id.clone().filter(|_| lab_sql)?;
    let lanes = state.timeline().lanes.into_iter().map(|l| l.name).collect();
    Some((run_id, lanes, steps(&state.events)))
}

/// The server's answer to "Why did it happen?", once asked: the proof, or why there is none.
pub type Asked = RwSignal<Option<Result<Proof, String>>>;

/// "Why did it happen?" for a lab run: asks the server (`GET /api/runs/<id>/proof`), which plays
/// the run's statements again as a spec with its witness, then draws the proof. The answer goes
/// to `answer`, which outlives this button (the scrubber draws it afresh at every moment).
#[component]
pub fn AskWhy(run_id: String, lanes: Vec<String>, steps: Steps, answer: Asked) -> impl IntoView {
    let asking = RwSignal::new(false);
    let path = format!("/api/runs/{run_id}/proof");
    let ask = move |_| {
        asking.set(true);
        let path = path.clone();
        leptos::task::spawn_local(async move {
            answer.set(Some(crate::api::fetch_json::<Proof>(&path).await));
            asking.set(false);
        });
    };
    move || {
        match answer.get() {
        Some(Ok(proof)) => {
            view! { <ProofPanel proof=proof lanes=lanes.clone() steps=steps.clone() /> }.into_any()
        }
        Some(Err(message)) => view! { <p class="rl-proof-ask rl-proof-none">{message}</p> }.into_any(),
        None => view! {
            <p class="rl-proof-ask">
                <button class="rl-why" on:click=ask.clone() disabled=move || asking.get()>
                    {move || if asking.get() { "Playing it again to see what each read saw…" } else { "Why did it happen?" }}
                </button>
                " The dependency cycle between the transactions, if there is one, in plain words."
            </p>
        }
        .into_any(),
    }
    }
}

/// Each panel's arrowheads need ids of their own (a comparison shows two runs).
static PANELS: AtomicUsize = AtomicUsize::new(0);

#[component]
pub fn ProofPanel(proof: Proof, lanes: Vec<String>, steps: Steps) -> impl IntoView {
    let headline = match (proof.anomaly, &proof.prevented) {
        (Some(a), _) => format!(
            "{} ({}): no order of one-at-a-time runs explains it",
            a.name(),
            a.class()
        ),
        (None, Some(p)) => format!(
            "Prevented: a {} ({}) would have closed here",
            p.anomaly.name(),
            p.anomaly.class()
        ),
        (None, None) => "No cycle: one order of one-at-a-time runs explains it".to_owned(),
    };
    let kind = match (proof.anomaly, &proof.prevented) {
        (Some(_), _) => "cycle",
        (None, Some(_)) => "prevented",
        (None, None) => "serial",
    };
    let lines = proof
        .lines
        .iter()
        .map(|l| view! { <li>{l.clone()}</li> })
        .collect_view();
    let drawing = picture::draw(&proof, &lanes, &steps);
    let marker = format!("rl-proof-arrow-{}", PANELS.fetch_add(1, Ordering::Relaxed));
    let graph = (!drawing.arrows.is_empty()).then(|| view! { <ProofGraph picture=drawing marker=marker /> });
    view! {
        <section class="rl-proof" data-kind=kind aria-label="Why it happened">
            <h3>"Why it happened"</h3>
            <p class="rl-proof-headline">{headline}</p>
            <ol class="rl-proof-lines">{lines}</ol>
            {graph}
        </section>
    }
}

fn dash(dep: Dep) -> &'static str {
    match dep {
        Dep::Ww => "none",
        Dep::Wr => "7 4",
        Dep::Rw => "2 4",
    }
}

#[component]
fn ProofGraph(picture: picture::Picture, marker: String) -> impl IntoView {
    let heads = picture
        .lanes
        .iter()
        .map(|(name, x)| view! { <text class="rl-proof-lane" x=x.to_string() y="16" text-anchor="middle">{name.clone()}</text> })
        .collect_view();
    let guides = picture
        .lanes
        .iter()
        .map(|(_, x)| {
            view! {
                <line class="rl-proof-guide" x1=x.to_string() y1="22" x2=x.to_string() y2=picture.height.to_string()></line>
            }
        })
        .collect_view();
    let boxes = picture
        .boxes
        .iter()
        .map(|b| {
            view! {
                <g class="rl-proof-step" data-step=b.step.to_string()>
                    <rect x=b.x.to_string() y=b.y.to_string() width=b.width.to_string() height=b.height.to_string() rx="4"></rect>
                    <text x=(b.x + 6).to_string() y=(b.y + 17).to_string()>{b.label.clone()}</text>
                </g>
            }
        })
        .collect_view();
    let url = format!("url(#{marker})");
    let arrows = picture
        .arrows
        .iter()
        .map(|a: &Arrow| {
            let label = format!("{}{}", a.dep.label(), if a.predicate { " (predicate)" } else { "" });
            view! {
                <g
                    class="rl-proof-edge"
                    data-dep=a.dep.label()
                    data-cycle=a.in_cycle.to_string()
                    data-would-have=a.would_have.to_string()
                >
                    <line
                        x1=a.x1.to_string()
                        y1=a.y1.to_string()
                        x2=a.x2.to_string()
                        y2=a.y2.to_string()
                        stroke-dasharray=dash(a.dep)
                        marker-end=url.clone()
                    ></line>
                    <text x=a.label_x.to_string() y=(a.label_y.saturating_sub(5)).to_string() text-anchor=a.label_anchor>{label}</text>
                </g>
            }
        })
        .collect_view();
    let view_box = format!("0 0 {} {}", picture.width, picture.height);
    view! {
        <figure class="rl-proof-figure">
            <svg class="rl-proof-graph" viewBox=view_box width=picture.width.to_string() role="img"
                aria-label="The proof's edges between the steps of each lane">
                <defs>
                    <marker id=marker markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" refX="9" refY="5" orient="auto">
                        <path d="M0,0 L10,5 L0,10 z"></path>
                    </marker>
                </defs>
                {heads}{guides}{boxes}{arrows}
            </svg>
            <figcaption class="rl-proof-legend">
                "Arrows point from what must come first: ww (solid) a write over another's write, "
                "wr (dashed) a read of another's write, rw (dotted) a read that another's write replaced "
                "or that missed it. Heavier: the cycle. Faint: a transaction that never committed."
            </figcaption>
        </figure>
    }
}
