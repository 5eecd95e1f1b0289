//! The room's question: what a participant predicts for the round the trainer settled on, and
//! how many picked each choice.

use crate::api::RunSocket;
use crate::components::predict::{Predict, pick_for, revealed};
use leptos::prelude::*;
use shared::ScenarioInfo;
use shared::run_state::RunState;

/// "Write skew at SERIALIZABLE": the scenario and variant a question is about.
pub(super) fn subject(scenarios: &[ScenarioInfo], scenario: &str, variant: &str) -> String {
    match scenarios.iter().find(|s| s.id == scenario) {
        Some(info) => {
            let variant = info.variant(variant).map_or(variant, |v| v.label.as_str());
            format!("{} at {variant}", info.title)
        }
        None => format!("{scenario} at {variant}"),
    }
}

/// A participant's prediction for the trainer's question: the choices of the scenario the room
/// is asked about, the pick sent to the room; after the run, the right answer and everyone's
/// counts. Picks close when the run starts, and a new question starts with none.
#[component]
pub(super) fn RoomQuestion(
    socket: RunSocket,
    scenarios: Signal<Vec<ScenarioInfo>>,
    closed: Signal<bool>,
) -> impl IntoView {
    let state = socket.state;
    let asked = Memo::new(move |_| state.with(|s| s.asked.clone()));
    let picked = pick_for(move || asked.get());
    Effect::new(move |_| {
        if let Some(choice) = picked.get() {
            socket.predict(&choice);
        }
    });
    let revealed = revealed(state);
    let locked =
        Signal::derive(move || closed.get() || state.with(RunState::is_active) || revealed.with(Option::is_some));
    move || {
        let (scenario, variant) = asked.get()?;
        let (prediction, about) = scenarios.with(|all| {
            let prediction = all
                .iter()
                .find(|s| s.id == scenario)
                .and_then(|s| s.question_at(&variant));
            (prediction, subject(all, &scenario, &variant))
        });
        let prediction = prediction?;
        let labels = prediction.choices.clone();
        Some(view! {
            <Predict prediction=prediction subject=Signal::stored(about) picked=picked revealed=revealed locked=locked
                hint="Pick what you expect; your trainer runs it, and the picks close when it starts." />
            <Tally state=state labels=labels />
        })
    }
}

/// How many picked each choice: live on the trainer's page, on everyone's after the reveal,
/// with the choice that happened marked.
#[component]
pub(super) fn Tally(state: RwSignal<RunState>, labels: Vec<shared::Choice>) -> impl IntoView {
    move || {
        let right = state.with(|s| s.revealed().map(|(choice, _)| choice.to_owned()));
        state.with(|s| s.tally.clone()).map(|(counts, revealed)| {
            let total: usize = counts.iter().map(|(_, n)| n).sum();
            let rows = counts
                .into_iter()
                .map(|(choice, n)| {
                    let label = labels
                        .iter()
                        .find(|c| c.id == choice)
                        .map_or(choice.clone(), |c| c.label.clone());
                    let is_right = revealed && right.as_deref() == Some(choice.as_str());
                    view! {
                        <li data-choice=choice data-count=n.to_string() data-right=is_right.to_string()
                            class:rl-tally-right=is_right>
                            <strong>{n}</strong> " " {label}
                            {is_right.then(|| view! { <span class="rl-tally-mark">" ✓ this happened"</span> })}
                        </li>
                    }
                })
                .collect_view();
            view! {
                <div class="rl-tally" data-revealed=revealed.to_string()>
                    <p class="rl-tally-title">{format!("Predictions: {total}")}</p>
                    <ul>{rows}</ul>
                </div>
            }
        })
    }
}
