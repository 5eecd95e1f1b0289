//! `/room/{id}`: a training room. Participants follow the trainer's run live, step by step, with
//! no controls of their own; the trainer's page (`#trainer=<token>`, where "Teach this" leads)
//! has the join link, its QR code, how many follow, and the controls that drive the room.

use crate::api::{RunSocket, delete_with_token, fetch_json, fetched, origin};
use crate::components::error_view::{ErrorView, loading};
use crate::components::predict::{Predict, pick_for, revealed};
use crate::components::run_view::RunView;
use crate::components::variant_picker::VariantPicker;
use leptos::prelude::*;
use shared::catalog::{LabStatus, RoomsReach};
use shared::{EventKind, Mode, ScenarioInfo};

#[component]
pub fn RoomPage(
    id: String,
    /// The trainer token, on the trainer's page only.
    token: Option<String>,
    /// The scenario and variant "Teach this" came from, to start with.
    scenario: Option<String>,
    variant: Option<String>,
) -> impl IntoView {
    let socket = RunSocket::new();
    socket.follow(&id, token.as_deref());
    let catalog = fetched(fetch_json::<Vec<LabStatus>>("/api/labs"));
    let scenarios = Signal::derive(move || {
        catalog.with(|labs| match labs {
            Some(Ok(labs)) => labs.iter().flat_map(|lab| lab.lab.scenarios.clone()).collect(),
            _ => Vec::<ScenarioInfo>::new(),
        })
    });
    // The scenario on screen: the run's, once one started; before that, the trainer's choice.
    let chosen = RwSignal::new(scenario.unwrap_or_else(|| "isolation/write-skew".to_owned()));
    let state = socket.state;
    let playing = Signal::derive(move || {
        state.with(|s| {
            s.events.iter().find_map(|e| match &e.kind {
                EventKind::RunStarted { scenario, .. } => Some(scenario.clone()),
                _ => None,
            })
        })
    });
    let shown = Signal::derive(move || playing.get().unwrap_or_else(|| chosen.get()));
    let info = Signal::derive(move || scenarios.with(|all| all.iter().find(|s| s.id == shown.get()).cloned()));
    let is_load_test = Signal::derive(move || info.with(|i| i.as_ref().is_some_and(|i| i.workload)));
    let compact = RwSignal::new(false);
    let participants = move || state.with(|s| s.room.as_ref().map_or(0, |(_, n)| *n));
    let trainer = token.is_some();
    let link = format!("{}/room/{id}", origin());

    let heading = view! {
        <header class="rl-room-head">
            <div>
                <h1>"Room " <span class="rl-room-code">{id.clone()}</span></h1>
                <p class="rl-room-participants" data-count=move || participants().to_string()>
                    {move || match participants() {
                        1 => "1 participant follows".to_owned(),
                        n => format!("{n} participants follow"),
                    }}
                </p>
                {move || info.get().map(|i| view! { <p class="rl-room-scenario-title">{i.title}</p> })}
            </div>
            {token.clone().map(|token| view! {
                <div class="rl-room-join">
                    <img class="rl-room-qr" src=format!("/api/rooms/{id}/qr.svg") alt="QR code of the join link" width="160" height="160" />
                    <div class="rl-room-join-text">
                        <p>"Participants join at " <a class="rl-room-link" href=link.clone()>{link.clone()}</a></p>
                        <Reach />
                        <CloseRoom id=id.clone() token=token />
                    </div>
                </div>
            })}
        </header>
    };
    let controls = match token {
        Some(_) => {
            view! { <TrainerControls socket=socket scenarios=scenarios chosen=chosen variant=variant /> }.into_any()
        }
        None => view! {
            <p class="rl-room-follow">"Your trainer runs the scenario; this page follows every step."</p>
            <RoomQuestion socket=socket scenarios=scenarios />
        }
        .into_any(),
    };
    view! {
        <article class="rl-room" data-room=id.clone() data-trainer=trainer.to_string()>
            {heading}
            {move || catalog.get().and_then(|c| c.err()).map(|message| view! { <ErrorView message=message /> })}
            {move || catalog.with(Option::is_none).then(|| loading("Loading the scenarios…"))}
            {controls}
            <RunView socket=socket is_load_test=is_load_test compact=compact />
        </article>
    }
}

/// Whether the room reaches participants on every racelab replica (through Redis) or only on
/// this one, for the trainer, who decides where to send people.
#[component]
fn Reach() -> impl IntoView {
    let reach = fetched(fetch_json::<RoomsReach>("/api/rooms"));
    move || {
        reach.get().and_then(Result::ok).map(|reach| {
            view! {
                <p class="rl-room-reach" data-across=reach.across_replicas.to_string()>{reach.detail}</p>
            }
        })
    }
}

/// A participant's prediction for the trainer's question: the choices of the scenario the room
/// is asked about, the pick sent to the room; after the run, the right answer and everyone's
/// counts.
#[component]
fn RoomQuestion(socket: RunSocket, scenarios: Signal<Vec<ScenarioInfo>>) -> impl IntoView {
    let state = socket.state;
    let asked = Memo::new(move |_| state.with(|s| s.asked.clone()));
    let picked = pick_for(move || asked.get());
    Effect::new(move |_| {
        if let Some(choice) = picked.get() {
            socket.predict(&choice);
        }
    });
    let revealed = revealed(state);
    let locked = Signal::derive(move || revealed.with(Option::is_some));
    move || {
        let (scenario, _) = asked.get()?;
        let prediction = scenarios.with(|all| all.iter().find(|s| s.id == scenario).and_then(|s| s.predict.clone()))?;
        let labels = prediction.choices.clone();
        Some(view! {
            <Predict prediction=prediction picked=picked revealed=revealed locked=locked />
            <Tally state=state labels=labels />
        })
    }
}

/// How many picked each choice: live on the trainer's page, on everyone's after the reveal.
#[component]
fn Tally(state: RwSignal<shared::run_state::RunState>, labels: Vec<shared::Choice>) -> impl IntoView {
    move || {
        state.with(|s| s.tally.clone()).map(|(counts, revealed)| {
            let total: usize = counts.iter().map(|(_, n)| n).sum();
            let rows = counts
                .into_iter()
                .map(|(choice, n)| {
                    let label = labels
                        .iter()
                        .find(|c| c.id == choice)
                        .map_or(choice.clone(), |c| c.label.clone());
                    view! { <li data-choice=choice data-count=n.to_string()><strong>{n}</strong> " " {label}</li> }
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

/// Closes the room for good (its run ends first; every page following it is told).
#[component]
fn CloseRoom(id: String, token: String) -> impl IntoView {
    let closed = RwSignal::new(None::<Result<(), String>>);
    let close = move |_| {
        let (id, token) = (id.clone(), token.clone());
        leptos::task::spawn_local(async move {
            closed.set(Some(delete_with_token(&format!("/api/rooms/{id}"), &token).await));
        });
    };
    view! {
        <button class="rl-room-close" on:click=close disabled=move || matches!(closed.get(), Some(Ok(())))>
            "Close the room"
        </button>
        {move || closed.get().map(|result| match result {
            Ok(()) => view! { <p class="rl-room-closed" role="status">"The room is closed."</p> }.into_any(),
            Err(message) => view! { <p class="rl-refused" role="alert">{message}</p> }.into_any(),
        })}
    }
}

/// The trainer's controls: which scenario and variant, Run, Step, Next step, Cancel. They drive
/// the room (the socket follows it with the token), so every participant's page plays along.
#[component]
fn TrainerControls(
    socket: RunSocket,
    scenarios: Signal<Vec<ScenarioInfo>>,
    chosen: RwSignal<String>,
    variant: Option<String>,
) -> impl IntoView {
    let state = socket.state;
    let active = Signal::derive(move || state.with(|s| s.is_active()));
    // Whether the room's run is stepped: it paused at least once. Read from the run, not kept
    // here, so a trainer who reloads the page mid-run can still step it.
    let stepping = Signal::derive(move || {
        state.with(|s| s.next_step.is_some() || s.events.iter().any(|e| matches!(e.kind, EventKind::Paused { .. })))
    });
    let chosen_variant = RwSignal::new(variant.unwrap_or_default());
    let current = Signal::derive(move || scenarios.with(|all| all.iter().find(|s| s.id == chosen.get()).cloned()));
    // A variant the scenario does not have becomes its first.
    Effect::new(move |_| {
        if let Some(info) = current.get()
            && info.variant(&chosen_variant.get_untracked()).is_none()
            && let Some(first) = info.variants.first()
        {
            chosen_variant.set(first.id.clone());
        }
    });
    let start = move |mode: Mode| socket.start(&chosen.get_untracked(), &chosen_variant.get_untracked(), mode);
    let steppable = move || current.with(|c| c.as_ref().is_some_and(|c| c.steppable));
    // Each scenario and variant the trainer settles on is the room's question, if it asks one.
    Effect::new(move |_| {
        let (scenario, variant) = (chosen.get(), chosen_variant.get());
        let asks = current.with(|c| {
            c.as_ref()
                .is_some_and(|c| c.predict.is_some() && c.variant(&variant).is_some())
        });
        if asks && !active.get_untracked() {
            socket.ask(&scenario, &variant);
        }
    });
    let labels = move || {
        current.with(|c| {
            c.as_ref()
                .and_then(|c| c.predict.clone())
                .map(|p| p.choices)
                .unwrap_or_default()
        })
    };
    view! {
        <div class="rl-room-controls">
            <label class="rl-room-pick">
                "Scenario "
                <select
                    class="rl-room-scenario"
                    disabled=move || active.get()
                    on:change=move |event| chosen.set(event_target_value(&event))
                    prop:value=move || chosen.get()
                >
                    {move || scenarios.get().into_iter().map(|s| {
                        let selected = s.id == chosen.get_untracked();
                        view! { <option value=s.id.clone() selected=selected>{s.title}</option> }
                    }).collect_view()}
                </select>
            </label>
            {move || current.get().map(|info| view! {
                <VariantPicker variants=info.variants chosen=chosen_variant disabled=active />
            })}
            <div class="rl-controls">
                <button class="rl-run" on:click=move |_| start(Mode::Auto) disabled=move || active.get()>"Run"</button>
                <button class="rl-step" on:click=move |_| start(Mode::Step) disabled=move || active.get() || !steppable()>
                    "Step"
                </button>
                {move || (stepping.get() && active.get()).then(|| {
                    view! {
                        <button class="rl-next" on:click=move |_| socket.next() disabled=move || state.with(|s| s.next_step.is_none())>
                            "Next step"
                        </button>
                    }
                })}
                {move || active.get().then(|| view! { <button class="rl-cancel" on:click=move |_| socket.cancel()>"Cancel"</button> })}
            </div>
            {move || view! { <Tally state=state labels=labels() /> }}
        </div>
    }
}
