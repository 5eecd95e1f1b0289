//! `/room/{id}`: a training room. Participants follow the trainer's run live, step by step, with
//! no controls of their own; the trainer's page (`#trainer=<token>`, where "Teach this" leads)
//! has the join link, its QR code, how many follow, and the controls that drive the room
//! ([`trainer`]).
//!
//! A session is rounds: the trainer settles on a scenario and variant, which is the room's
//! question ([`question`]); participants pick what they expect; the run locks the picks, plays,
//! and reveals the answer; the next scenario or variant is the next round, and every page starts
//! it afresh.

mod lesson;
mod lesson_controls;
mod question;
mod trainer;

use crate::api::{RunSocket, fetch_json, fetched, origin};
use crate::components::error_view::{ErrorView, loading};
use crate::components::keys::on_step_keys;
use crate::components::run_view::RunView;
use crate::components::view_toggle::ViewToggle;
use leptos::prelude::*;
use question::RoomQuestion;
use shared::catalog::{LabStatus, RoomsReach};
use shared::run_state::RunState;
use shared::{EventKind, ScenarioInfo};
use trainer::{CloseRoom, TrainerControls};

/// What the room can play: the catalog's scenarios, then the readers' specs it has read.
#[derive(Clone, Copy)]
struct Scenarios {
    catalog: ReadSignal<Option<Result<Vec<LabStatus>, String>>>,
    /// Readers' specs the room plays ("Teach this" on a spec's page, or a round of one): the
    /// catalog has none of them, so each is read from its own address ([`Scenarios::read_spec`]).
    specs: RwSignal<Vec<ScenarioInfo>>,
    all: Signal<Vec<ScenarioInfo>>,
}

impl Scenarios {
    fn load() -> Scenarios {
        let catalog = fetched(fetch_json::<Vec<LabStatus>>("/api/labs"));
        let specs = RwSignal::new(Vec::<ScenarioInfo>::new());
        let all = Signal::derive(move || {
            let mut all: Vec<ScenarioInfo> = catalog.with(|labs| match labs {
                Some(Ok(labs)) => labs.iter().flat_map(|lab| lab.lab.scenarios.clone()).collect(),
                _ => Vec::new(),
            });
            specs.with(|specs| all.extend(specs.iter().cloned()));
            all
        });
        Scenarios { catalog, specs, all }
    }

    /// Scenario `id`, once known.
    fn find(self, id: &str) -> Option<ScenarioInfo> {
        self.all.with(|all| all.iter().find(|s| s.id == id).cloned())
    }

    /// Reads the saved spec `spec` (`spec/<id>`) into `specs`, unless it is there already: its
    /// title, its permutations as the variants, its question.
    fn read_spec(self, spec: String) {
        leptos::task::spawn_local(async move {
            let _ = self.read_spec_now(spec).await;
        });
    }

    /// [`Scenarios::read_spec`], done when it is listed; or why it cannot be (no spec has that
    /// id, or racelab did not answer).
    async fn read_spec_now(self, spec: String) -> Result<(), String> {
        if self.specs.with_untracked(|all| all.iter().any(|s| s.id == spec)) {
            return Ok(());
        }
        let id = spec.trim_start_matches("spec/");
        let saved = match crate::api::fetch_found::<crate::pages::write::Saved>(&format!("/api/specs/{id}")).await? {
            Some(saved) => saved,
            None => return Err(format!("No spec is saved at /s/{id}.")),
        };
        let info = saved.scenario.scenario;
        self.specs.update(|all| {
            if !all.iter().any(|s| s.id == info.id) {
                all.push(info);
            }
        });
        Ok(())
    }
}

#[component]
pub fn RoomPage(
    id: String,
    /// The trainer token, on the trainer's page only.
    token: Option<String>,
    /// Where the results of the lesson the room runs are read, on its trainer's page (a room
    /// opened for a lesson: its trainer drives rounds, not scenarios).
    results: Option<String>,
    /// The scenario, variant and PostgreSQL version to start with ("Teach this", or the
    /// trainer's last choice).
    scenario: Option<String>,
    variant: Option<String>,
    postgres: Option<String>,
) -> impl IntoView {
    let socket = RunSocket::new();
    // A participant who took a handle here before takes it back (a reload, a lost connection).
    let handle = RwSignal::new(None::<String>);
    match lesson::stored_seat(&id).filter(|_| token.is_none()) {
        Some((kept, seat)) => {
            handle.set(Some(kept.clone()));
            socket.follow_as(crate::api::Following {
                room: id.clone(),
                token: None,
                seat: Some((kept, seat)),
            });
        }
        None => socket.follow(&id, token.as_deref()),
    }
    let scenarios = Scenarios::load();
    // The trainer's choice (a participant's page has none of its own).
    let chosen = RwSignal::new(scenario.unwrap_or_else(|| "isolation/write-skew".to_owned()));
    let trainer = token.is_some();
    let teaching_lesson = trainer && results.is_some();
    let info = shown(socket.state, scenarios, (trainer && !teaching_lesson).then_some(chosen));
    // A memo: the run's every frame changes `info`'s inputs, and a body told "load test or not"
    // afresh would draw its whole timeline afresh each time.
    let is_load_test: Signal<bool> = Memo::new(move |_| info.with(|i| i.as_ref().is_some_and(|i| i.workload))).into();
    // Participants join on their phones, from the QR code: compact there, unless the address
    // names a view.
    let compact = RwSignal::new(crate::api::compact_view());
    let presenting = RwSignal::new(false);
    let state = socket.state;
    let closed = Signal::derive(move || state.with(|s| s.room_closed));
    // A lesson's trainer has one "next" key for steps, runs and rounds (lesson_controls).
    if trainer && !teaching_lesson {
        on_step_keys(socket);
    }
    let live = lesson::live(state);
    let controls = match token.clone() {
        Some(token) if teaching_lesson => view! {
            <lesson_controls::LessonControls socket=socket live=live scenarios=scenarios results=results
                room=id.clone() token=token closed=closed />
            <lesson::RoundPanel socket=socket live=live handle=None closed=closed />
            {move || {
                let labels = live.with(|l| lesson_choices(l.as_ref()));
                view! { <question::Tally state=state labels=labels /> }
            }}
            <lesson::Leaderboard live=live handle=None />
        }
        .into_any(),
        Some(_) => view! { <TrainerControls socket=socket scenarios=scenarios chosen=chosen variant=variant postgres=postgres closed=closed /> }
            .into_any(),
        None => {
            let room = id.clone();
            // Whether the room runs a lesson, apart from what the lesson shows: its every change
            // must not draw the participant's panel afresh (their pick would go with it).
            let in_lesson = Memo::new(move |_| live.with(Option::is_some));
            (move || match in_lesson.get() {
                true => view! {
                    <lesson::Seat socket=socket room=room.clone() handle=handle />
                    <lesson::RoundPanel socket=socket live=live handle=Some(handle) closed=closed />
                    <lesson::Leaderboard live=live handle=Some(handle) />
                }
                .into_any(),
                false => view! {
                    <p class="rl-room-follow">"Your trainer runs the scenario; this page follows every step."</p>
                    <RoomQuestion socket=socket scenarios=scenarios.all closed=closed />
                }
                .into_any(),
            })
            .into_any()
        }
    };
    let catalog = scenarios.catalog;
    view! {
        <article class="rl-room" class:rl-presenter=move || presenting.get() data-room=id.clone()
            data-trainer=trainer.to_string() data-closed=move || closed.get().to_string()>
            {heading(&id, token, state, info, presenting, closed)}
            {closed_notice(state, closed)}
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

/// The open round's choices, as the tally names them.
fn lesson_choices(live: Option<&shared::lesson::live::Live>) -> Vec<shared::Choice> {
    live.and_then(|l| l.round.as_ref())
        .map(|r| shared::lesson::as_choices(&r.choices))
        .unwrap_or_default()
}

/// The scenario on screen: the run's, once one started; before that, the question's; on the
/// trainer's page before any question, the trainer's `chosen`. A reader's spec among them is
/// read, so it shows by its title with its permutations.
fn shown(
    state: RwSignal<RunState>,
    scenarios: Scenarios,
    chosen: Option<RwSignal<String>>,
) -> Signal<Option<ScenarioInfo>> {
    let playing = Signal::derive(move || {
        state.with(|s| {
            s.events.iter().find_map(|e| match &e.kind {
                EventKind::RunStarted { scenario, .. } => Some(scenario.clone()),
                _ => None,
            })
        })
    });
    let asked = Memo::new(move |_| state.with(|s| s.asked.clone()));
    let shown = Signal::derive(move || {
        playing
            .get()
            .or_else(|| asked.get().map(|(scenario, _)| scenario))
            .or_else(|| chosen.map(|chosen| chosen.get()))
    });
    Effect::new(move |_| {
        if let Some(spec) = shown.get().filter(|s| s.starts_with("spec/")) {
            scenarios.read_spec(spec);
        }
    });
    Signal::derive(move || scenarios.find(&shown.get()?))
}

/// The room's code, how many follow, what plays; on the trainer's page, the join link, its QR
/// code, where it reaches, presenter mode and closing the room.
fn heading(
    id: &str,
    token: Option<String>,
    state: RwSignal<RunState>,
    info: Signal<Option<ScenarioInfo>>,
    presenting: RwSignal<bool>,
    closed: Signal<bool>,
) -> impl IntoView + use<> {
    let participants = move || state.with(|s| s.room.as_ref().map_or(0, |(_, n)| *n));
    let link = format!("{}/room/{id}", origin());
    let id = id.to_owned();
    view! {
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
            {token.map(|token| view! {
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
    }
}

/// A closed room says so, and why, above everything else.
fn closed_notice(state: RwSignal<RunState>, closed: Signal<bool>) -> impl IntoView {
    move || {
        closed.get().then(|| {
            let why = state.with(|s| s.refused.clone()).unwrap_or_default();
            view! {
                <p class="rl-room-ended" role="status">
                    <strong>"This room is closed."</strong>
                    " " {why} " Nothing here can be picked or run any more."
                </p>
            }
        })
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
