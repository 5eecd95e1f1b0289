//! `/room/{id}`: a training room. Participants follow the trainer's run live, step by step, with
//! no controls of their own; the trainer's page (`#trainer=<token>`, where "Teach this" leads)
//! has the join link, its QR code, how many follow, and the controls that drive the room.
//!
//! A session is rounds: the trainer settles on a scenario and variant, which is the room's
//! question; participants pick what they expect; the run locks the picks, plays, and reveals the
//! answer; the next scenario or variant is the next round, and every page starts it afresh.

use crate::api::{RunSocket, delete_with_token, fetch_json, fetched, origin, replace_query};
use crate::components::error_view::{ErrorView, loading};
use crate::components::keys::on_step_keys;
use crate::components::predict::{Predict, pick_for, revealed};
use crate::components::run_view::RunView;
use crate::components::variant_picker::VariantPicker;
use crate::components::view_toggle::ViewToggle;
use leptos::prelude::*;
use shared::catalog::{LabStatus, RoomsReach};
use shared::run_state::RunState;
use shared::{EventKind, Mode, ScenarioInfo};

#[component]
pub fn RoomPage(
    id: String,
    /// The trainer token, on the trainer's page only.
    token: Option<String>,
    /// The scenario, variant and PostgreSQL version to start with ("Teach this", or the
    /// trainer's last choice).
    scenario: Option<String>,
    variant: Option<String>,
    postgres: Option<String>,
) -> impl IntoView {
    let socket = RunSocket::new();
    socket.follow(&id, token.as_deref());
    let catalog = fetched(fetch_json::<Vec<LabStatus>>("/api/labs"));
    // Readers' specs the room plays ("Teach this" on a spec's page, or a round of one): the
    // catalog has none of them, so each is read from its own address and listed after it.
    let specs = RwSignal::new(Vec::<ScenarioInfo>::new());
    let scenarios = Signal::derive(move || {
        let mut all: Vec<ScenarioInfo> = catalog.with(|labs| match labs {
            Some(Ok(labs)) => labs.iter().flat_map(|lab| lab.lab.scenarios.clone()).collect(),
            _ => Vec::new(),
        });
        specs.with(|specs| all.extend(specs.iter().cloned()));
        all
    });
    // The trainer's choice (a participant's page has none of its own).
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
    let asked = Memo::new(move |_| state.with(|s| s.asked.clone()));
    let trainer = token.is_some();
    // The scenario on screen: the run's, once one started; before that, the question's; on the
    // trainer's page before any question, the trainer's choice.
    let shown = Signal::derive(move || {
        playing
            .get()
            .or_else(|| asked.get().map(|(scenario, _)| scenario))
            .or_else(|| trainer.then(|| chosen.get()))
    });
    let info = Signal::derive(move || {
        let shown = shown.get()?;
        scenarios.with(|all| all.iter().find(|s| s.id == shown).cloned())
    });
    Effect::new(move |_| {
        if let Some(spec) = shown.get().filter(|s| s.starts_with("spec/")) {
            read_spec(spec, specs);
        }
    });
    // A memo: the run's every frame changes `info`'s inputs, and a body told "load test or not"
    // afresh would draw its whole timeline afresh each time.
    let is_load_test: Signal<bool> = Memo::new(move |_| info.with(|i| i.as_ref().is_some_and(|i| i.workload))).into();
    // Participants join on their phones, from the QR code: compact there, unless the address
    // names a view.
    let compact = RwSignal::new(crate::api::compact_view());
    let presenting = RwSignal::new(false);
    let closed = Signal::derive(move || state.with(|s| s.room_closed));
    let participants = move || state.with(|s| s.room.as_ref().map_or(0, |(_, n)| *n));
    let link = format!("{}/room/{id}", origin());
    if trainer {
        on_step_keys(socket);
    }

    let heading = view! {
        <header class="rl-room-head">
            <div>
                <h1>"Room " <span class="rl-room-code">{id.clone()}</span></h1>
                <p class="rl-room-participants" data-count=move || participants().to_string()>
                    {move || match (closed.get(), participants()) {
                        // Nobody follows a closed room, whoever was counted last.
                        (true, _) => "Nobody follows: the room is closed".to_owned(),
                        (false, 1) => "1 participant follows".to_owned(),
                        (false, n) => format!("{n} participants follow"),
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
                        <button class="rl-presenter-toggle" aria-pressed=move || presenting.get().to_string()
                            on:click=move |_| presenting.update(|p| *p = !*p)>
                            "Presenter mode"
                        </button>
                        <CloseRoom id=id.clone() token=token closed=closed />
                    </div>
                </div>
            })}
        </header>
    };
    let closed_notice = move || {
        closed.get().then(|| {
            let why = state.with(|s| s.refused.clone()).unwrap_or_default();
            view! {
                <p class="rl-room-ended" role="status">
                    <strong>"This room is closed."</strong>
                    " " {why} " Nothing here can be picked or run any more."
                </p>
            }
        })
    };
    let controls = if trainer {
        view! { <TrainerControls socket=socket scenarios=scenarios chosen=chosen variant=variant postgres=postgres closed=closed /> }
            .into_any()
    } else {
        view! {
            <p class="rl-room-follow">"Your trainer runs the scenario; this page follows every step."</p>
            <RoomQuestion socket=socket scenarios=scenarios closed=closed />
        }
        .into_any()
    };
    view! {
        <article class="rl-room" class:rl-presenter=move || presenting.get() data-room=id.clone()
            data-trainer=trainer.to_string() data-closed=move || closed.get().to_string()>
            {heading}
            {closed_notice}
            {move || catalog.get().and_then(|c| c.err()).map(|message| view! { <ErrorView message=message /> })}
            {move || catalog.with(Option::is_none).then(|| loading("Loading the scenarios…"))}
            {controls}
            // Where the room's run played (the trainer picks the version), and the timeline's view.
            <div class="rl-room-view">
                <crate::components::version_picker::PlayedOn state=state />
                {move || (!is_load_test.get()).then(|| view! { <ViewToggle compact=compact /> })}
            </div>
            <RunView socket=socket is_load_test=is_load_test compact=compact />
        </article>
    }
}

/// Reads the saved spec `spec` (`spec/<id>`) into `specs`, unless it is there already: its title,
/// its permutations as the variants, its question.
fn read_spec(spec: String, specs: RwSignal<Vec<ScenarioInfo>>) {
    if specs.with_untracked(|all| all.iter().any(|s| s.id == spec)) {
        return;
    }
    leptos::task::spawn_local(async move {
        let path = format!("/api/specs/{}", spec.trim_start_matches("spec/"));
        if let Ok(saved) = fetch_json::<crate::pages::write::Saved>(&path).await {
            let info = saved.scenario.scenario;
            specs.update(|all| {
                if !all.iter().any(|s| s.id == info.id) {
                    all.push(info);
                }
            });
        }
    });
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

/// "Write skew at SERIALIZABLE": the scenario and variant a question is about.
fn subject(scenarios: &[ScenarioInfo], scenario: &str, variant: &str) -> String {
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
fn RoomQuestion(socket: RunSocket, scenarios: Signal<Vec<ScenarioInfo>>, closed: Signal<bool>) -> impl IntoView {
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
            let prediction = all.iter().find(|s| s.id == scenario).and_then(|s| s.predict.clone());
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
fn Tally(state: RwSignal<RunState>, labels: Vec<shared::Choice>) -> impl IntoView {
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

/// Closes the room for good, after the trainer confirms (its run ends first; every page
/// following it is told, and its choices and controls go dead).
#[component]
fn CloseRoom(id: String, token: String, closed: Signal<bool>) -> impl IntoView {
    let asking = RwSignal::new(false);
    let failed = RwSignal::new(None::<String>);
    let close = move |_| {
        let (id, token) = (id.clone(), token.clone());
        asking.set(false);
        leptos::task::spawn_local(async move {
            if let Err(message) = delete_with_token(&format!("/api/rooms/{id}"), &token).await {
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
fn TrainerControls(
    socket: RunSocket,
    scenarios: Signal<Vec<ScenarioInfo>>,
    chosen: RwSignal<String>,
    variant: Option<String>,
    postgres: Option<String>,
    closed: Signal<bool>,
) -> impl IntoView {
    let state = socket.state;
    let active = Signal::derive(move || state.with(|s| s.is_active()));
    let frozen = Signal::derive(move || active.get() || closed.get());
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
    // The version the room's runs play on, where racelab plays on more than one: the page's
    // that opened the room, until the trainer picks another.
    let version = RwSignal::new(postgres.unwrap_or_default());
    // The choice stays in the address, so a reload (or a second screen) lands on it.
    Effect::new(move |_| {
        let (scenario, variant) = (chosen.get(), chosen_variant.get());
        if !variant.is_empty() {
            replace_query(&[
                ("scenario", &scenario),
                ("variant", &variant),
                ("postgres", &version.get()),
            ]);
        }
    });
    let versions = crate::components::version_picker::load_versions();
    let start = move |mode: Mode| {
        socket.start_on(
            &chosen.get_untracked(),
            &chosen_variant.get_untracked(),
            mode,
            &version.get_untracked(),
        )
    };
    let steppable = move || current.with(|c| c.as_ref().is_some_and(|c| c.steppable));
    // Each scenario and variant the trainer settles on is the room's next round, with its
    // question if the scenario asks one: sent once the room has said what it asks now, and only
    // if that differs (a reload starts no new round).
    let knows_room = Memo::new(move |_| state.with(|s| s.room.is_some()));
    Effect::new(move |_| {
        let (scenario, variant) = (chosen.get(), chosen_variant.get());
        if !knows_room.get() || closed.get() {
            return;
        }
        let (valid, asks) = current.with(|c| {
            c.as_ref()
                .map_or((false, false), |c| (c.variant(&variant).is_some(), c.predict.is_some()))
        });
        let already = state.with_untracked(|s| match &s.asked {
            Some(asked) => *asked == (scenario.clone(), variant.clone()),
            None => !asks,
        });
        if valid && !already && !active.get_untracked() {
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
    let question = move || {
        state.with(|s| s.asked.clone()).map(|(scenario, variant)| {
            let about = scenarios.with(|all| subject(all, &scenario, &variant));
            view! { <p class="rl-room-question">"The room predicts: " <strong>{about}</strong></p> }
        })
    };
    view! {
        <div class="rl-room-controls">
            <label class="rl-room-pick">
                "Scenario "
                <select
                    class="rl-room-scenario"
                    disabled=move || frozen.get()
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
                <VariantPicker variants=info.variants chosen=chosen_variant disabled=frozen />
            })}
            <crate::components::version_picker::VersionPicker chosen=version versions=versions disabled=frozen />
            {question}
            <div class="rl-controls">
                <button class="rl-run" on:click=move |_| start(Mode::Auto) disabled=move || frozen.get()>"Run"</button>
                <button class="rl-step" on:click=move |_| start(Mode::Step) disabled=move || frozen.get() || !steppable()>
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
