//! "Why it happened": the proof racelab derived from what a run's transactions read and wrote
//! (`shared::proof`), in plain words and drawn (`shared::proof::html`), and the button that asks
//! the server for a lab run's. Full app and player only: the embed reads proofs as empty and
//! shows none.

use leptos::prelude::*;
use shared::proof::{Proof, html};
use shared::run_state::RunState;
use shared::{Event, EventKind};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A run's steps as `(lane, SQL)`, in the order they started: what a proof's step numbers index.
pub type Steps = Vec<(String, String)>;

/// The run's proof, if it has one (its latest, with transactions).
pub fn proof_of(state: &RunState) -> Option<&Proof> {
    state.events.iter().rev().find_map(|e| match &e.kind {
        EventKind::Proof { proof } if !proof.txns.is_empty() => Some(&**proof),
        _ => None,
    })
}

/// The run's proof, its lanes and its steps, if it has one.
pub fn of_run(state: &RunState) -> Option<(Proof, Vec<String>, Steps)> {
    let proof = proof_of(state)?.clone();
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

/// The proof in plain words and drawn: `shared::proof::html`'s markup, written once.
#[component]
pub fn ProofPanel(proof: Proof, lanes: Vec<String>, steps: Steps) -> impl IntoView {
    let marker = format!("rl-proof-arrow-{}", PANELS.fetch_add(1, Ordering::Relaxed));
    let markup = html::panel(&proof, &lanes, &steps, &marker);
    view! { <section class="rl-proof" data-kind=html::kind(&proof) aria-label="Why it happened" inner_html=markup></section> }
}
