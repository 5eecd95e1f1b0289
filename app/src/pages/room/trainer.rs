//! The trainer's side of a room: what plays next (a scenario of the catalog, or a reader's spec
//! by its link), Run, Step, Next step and Cancel, and closing the room.

use super::Scenarios;
use super::question::{Tally, subject};
use crate::api::{RunSocket, replace_query, with_token};
use crate::components::variant_picker::VariantPicker;
use leptos::prelude::*;
use shared::{EventKind, Mode, ScenarioInfo};

/// Closes the room for good, after the trainer confirms (its run ends first; every page
/// following it is told, and its choices and controls go dead).
#[component]
pub(super) fn CloseRoom(id: String, token: String, closed: Signal<bool>) -> impl IntoView {
    let asking = RwSignal::new(false);
    let failed = RwSignal::new(None::<String>);
    let close = move |_| {
        let (id, token) = (id.clone(), token.clone());
        asking.set(false);
        leptos::task::spawn_local(async move {
            if let Err(message) = with_token("DELETE", &format!("/api/rooms/{id}"), &token, None).await {
                failed.set(Some(message));
            }
        });
    };
    view! {
        {move || (!asking.get()).then(|| view! {
            <button class="rl-room-close" on:click=move |_| asking.set(true) disabled=move || closed.get()>
                "Close the room"
            </button>
        })}
        {move || asking.get().then(|| view! {
            <div class="rl-room-close-confirm" role="alertdialog" aria-label="Close the room?">
                <p>"Close the room for everyone? Participants' pages stop following it, and the code cannot be used again."</p>
                <button class="rl-room-close-yes" on:click=close.clone()>"Close it"</button>
                " "
                <button class="rl-room-close-no" on:click=move |_| asking.set(false)>"Keep it open"</button>
            </div>
        })}
        {move || failed.get().map(|message| view! { <p class="rl-notice rl-notice--refused" role="alert">{message}</p> })}
    }
}

/// The trainer's controls: which scenario and variant, Run, Step, Next step, Cancel. They drive
/// the room (the socket follows it with the token), so every participant's page plays along.
#[component]
pub(super) fn TrainerControls(
    socket: RunSocket,
    scenarios: Scenarios,
    chosen: RwSignal<String>,
    variant: Option<String>,
    postgres: Option<String>,
    closed: Signal<bool>,
) -> impl IntoView {
    let state = socket.state;
    let active = Signal::derive(move || state.with(|s| s.is_active()));
    let round = Round {
        scenario: chosen,
        variant: RwSignal::new(variant.unwrap_or_default()),
        // The version the room's runs play on, where racelab plays on more than one: the
        // page's that opened the room, until the trainer picks another.
        version: RwSignal::new(postgres.unwrap_or_default()),
        current: Signal::derive(move || scenarios.find(&chosen.get())),
    };
    round.keep_a_variant_it_has();
    round.keep_in_address();
    ask_each_round(socket, round, closed);
    let frozen = Signal::derive(move || active.get() || closed.get());
    let versions = crate::components::version_picker::load_versions();
    let labels = move || {
        round.current.with(|c| {
            c.as_ref()
                .and_then(|c| c.predict.clone())
                .map(|p| p.choices)
                .unwrap_or_default()
        })
    };
    let question = move || {
        state.with(|s| s.asked.clone()).map(|(scenario, variant)| {
            let about = scenarios.all.with(|all| subject(all, &scenario, &variant));
            view! { <p class="rl-room-question">"The room predicts: " <strong>{about}</strong></p> }
        })
    };
    view! {
        <div class="rl-room-controls">
            {scenario_picker(scenarios, chosen, frozen)}
            <SpecByLink scenarios=scenarios round=round frozen=frozen />
            {move || round.current.get().map(|info| view! {
                <VariantPicker variants=info.variants chosen=round.variant disabled=frozen />
            })}
            <crate::components::version_picker::VersionPicker chosen=round.version versions=versions disabled=frozen />
            {question}
            {run_buttons(socket, round, frozen)}
            {move || view! { <Tally state=state labels=labels() /> }}
        </div>
    }
}

/// What the trainer has settled on for the next run: the room's round.
#[derive(Clone, Copy)]
struct Round {
    scenario: RwSignal<String>,
    variant: RwSignal<String>,
    version: RwSignal<String>,
    /// The scenario, once the room knows it (a spec once read).
    current: Signal<Option<ScenarioInfo>>,
}

impl Round {
    /// A variant the scenario does not have becomes its first.
    fn keep_a_variant_it_has(self) {
        Effect::new(move |_| {
            if let Some(info) = self.current.get()
                && info.variant(&self.variant.get_untracked()).is_none()
                && let Some(first) = info.variants.first()
            {
                self.variant.set(first.id.clone());
            }
        });
    }

    /// The choice stays in the address, so a reload (or a second screen) lands on it.
    fn keep_in_address(self) {
        Effect::new(move |_| {
            let (scenario, variant) = (self.scenario.get(), self.variant.get());
            if !variant.is_empty() {
                replace_query(&[
                    ("scenario", &scenario),
                    ("variant", &variant),
                    ("postgres", &self.version.get()),
                ]);
            }
        });
    }

    fn start(self, socket: RunSocket, mode: Mode) {
        socket.start_on(
            &self.scenario.get_untracked(),
            &self.variant.get_untracked(),
            mode,
            &self.version.get_untracked(),
        );
    }
}

/// Each scenario and variant the trainer settles on is the room's next round, with its question
/// if the scenario asks one: sent once the room has said what it asks now, and only if that
/// differs (a reload starts no new round).
fn ask_each_round(socket: RunSocket, round: Round, closed: Signal<bool>) {
    let state = socket.state;
    let knows_room = Memo::new(move |_| state.with(|s| s.room.is_some()));
    Effect::new(move |_| {
        let (scenario, variant) = (round.scenario.get(), round.variant.get());
        if !knows_room.get() || closed.get() {
            return;
        }
        let (valid, asks) = round.current.with(|c| {
            c.as_ref().map_or((false, false), |c| {
                (c.variant(&variant).is_some(), c.question_at(&variant).is_some())
            })
        });
        let already = state.with_untracked(|s| match &s.asked {
            Some(asked) => *asked == (scenario.clone(), variant.clone()),
            None => !asks,
        });
        if valid && !already && !state.with_untracked(|s| s.is_active()) {
            socket.ask(&scenario, &variant);
        }
    });
}

/// The scenarios the room can play, by title: the catalog's, then the specs read.
fn scenario_picker(scenarios: Scenarios, chosen: RwSignal<String>, frozen: Signal<bool>) -> impl IntoView {
    view! {
        <label class="rl-room-pick">
            "Scenario "
            <select
                class="rl-room-scenario"
                disabled=move || frozen.get()
                on:change=move |event| chosen.set(event_target_value(&event))
                prop:value=move || chosen.get()
            >
                {move || scenarios.all.get().into_iter().map(|s| {
                    let selected = s.id == chosen.get_untracked();
                    view! { <option value=s.id.clone() selected=selected>{s.title}</option> }
                }).collect_view()}
            </select>
        </label>
    }
}

/// A reader's spec as the next round: its link (`…/s/0123456789abcdef`, at the permutation it
/// names, `?variant=p2`) or its id, pasted. Read from its address, it joins the list by its
/// title and is chosen; one that is not there says so.
#[component]
fn SpecByLink(scenarios: Scenarios, round: Round, frozen: Signal<bool>) -> impl IntoView {
    let pasted = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<String>);
    let play = move |event: leptos::ev::SubmitEvent| {
        event.prevent_default();
        let text = pasted.get_untracked();
        let Some(id) = shared::spec::saved_id(&text) else {
            problem.set(Some(
                "That is not a spec's link: it looks like …/s/0123456789abcdef.".to_owned(),
            ));
            return;
        };
        problem.set(None);
        let spec = format!("spec/{id}");
        let variant = text
            .split_once('?')
            .and_then(|(_, query)| crate::route::query_param(query, "variant"));
        leptos::task::spawn_local(async move {
            match scenarios.read_spec_now(spec.clone()).await {
                Ok(()) => {
                    if let Some(variant) = variant {
                        round.variant.set(variant);
                    }
                    round.scenario.set(spec);
                    pasted.set(String::new());
                }
                Err(why) => problem.set(Some(why)),
            }
        });
    };
    view! {
        <form class="rl-room-spec" on:submit=play>
            <label>
                "or a spec's link "
                <input type="text" class="rl-room-spec-link" placeholder="https://…/s/0123456789abcdef"
                    prop:value=move || pasted.get() on:input=move |e| pasted.set(event_target_value(&e))
                    disabled=move || frozen.get() />
            </label>
            " "
            <button type="submit" class="rl-room-spec-play" disabled=move || frozen.get()>"Play it next"</button>
            {move || problem.get().map(|why| view! { <p class="rl-notice rl-notice--refused" role="alert">{why}</p> })}
        </form>
    }
}

/// Run, Step, Next step (while a stepped run waits), Cancel (while one plays).
fn run_buttons(socket: RunSocket, round: Round, frozen: Signal<bool>) -> impl IntoView {
    let state = socket.state;
    let active = Signal::derive(move || state.with(|s| s.is_active()));
    // Whether the room's run is stepped: it paused at least once. Read from the run, not kept
    // here, so a trainer who reloads the page mid-run can still step it.
    let stepping = Signal::derive(move || {
        state.with(|s| s.next_step.is_some() || s.events.iter().any(|e| matches!(e.kind, EventKind::Paused { .. })))
    });
    let steppable = move || round.current.with(|c| c.as_ref().is_some_and(|c| c.steppable));
    view! {
        <div class="rl-controls">
            <button class="rl-run" on:click=move |_| round.start(socket, Mode::Auto) disabled=move || frozen.get()>"Run"</button>
            <button class="rl-step" on:click=move |_| round.start(socket, Mode::Step) disabled=move || frozen.get() || !steppable()>
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
    }
}
