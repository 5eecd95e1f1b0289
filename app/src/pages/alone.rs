//! `/lessons/{id}/alone`: a lesson taken alone, from its link: each round's question, the
//! reader's pick, the run on the real database, the answer it gives (the scenario's `reveal`, or
//! the lesson's own question read off the run's events), the explanation, and the score so far.

use crate::api::{RunSocket, fetch_json, fetch_text, fetched};
use crate::components::error_view::{ErrorView, loading};
use crate::components::predict::Predict;
use crate::components::run_view::RunView;
use leptos::prelude::*;
use shared::catalog::LabStatus;
use shared::lesson::{Derived, Lesson, Race, Round};
use shared::protocol::StoredRun;
use shared::run_state::{Phase, RunState};
use shared::{Mode, Outcome, Prediction, ScenarioInfo, ServerMsg};

/// What a round plays and asks, once its scenario is known.
#[derive(Clone, Debug, PartialEq)]
struct Asked {
    scenario: String,
    variant: String,
    postgres: String,
    prediction: Prediction,
    /// How its answer is read off the run; `None`: the run's `reveal`.
    derived: Option<Derived>,
    /// A recording round's run, played again from its file: nothing runs on a database.
    recorded: Option<StoredRun>,
}

/// Round `round`'s race and question, with the catalog (and a spec's own page) to read a
/// scenario's question from; `Err` says why the round cannot be taken here.
async fn asked(round: &Round, catalog: &[ScenarioInfo]) -> Result<Asked, String> {
    let (scenario, variant, postgres, info, recorded) = match &round.race {
        Race::Scenario { id, variant, postgres } => {
            let info = catalog.iter().find(|s| s.id == *id).cloned();
            (id.clone(), variant.clone(), postgres.map(|v| v.to_string()), info, None)
        }
        Race::Spec { id, permutation } => {
            let saved = fetch_json::<super::write::Saved>(&format!("/api/specs/{id}")).await?;
            let variant = format!("p{}", permutation.unwrap_or(1));
            (format!("spec/{id}"), variant, None, Some(saved.scenario.scenario), None)
        }
        Race::Recording { src } => {
            let recording = recording(src).await?;
            let variant = recording.stamp.variant.clone();
            let run = recording.run_to_play();
            (
                recording.scenario.id.clone(),
                variant,
                None,
                Some(recording.scenario),
                Some(run),
            )
        }
    };
    let (prediction, derived) = match &round.question {
        Some(own) => (
            Prediction {
                question: own.text.clone(),
                choices: shared::lesson::as_choices(&own.choices),
            },
            Some(own.answer.clone()),
        ),
        None => (
            info.and_then(|i| i.question_at(&variant))
                .ok_or_else(|| format!("{scenario} at {variant} asks no question here."))?,
            None,
        ),
    };
    Ok(Asked {
        scenario,
        variant,
        postgres: postgres.unwrap_or_default(),
        prediction,
        derived,
        recorded,
    })
}

/// The text of the recording a round names: a run this racelab keeps, or a file elsewhere (whose
/// host must let other sites read it); or why it could not be fetched. (The trainer's page sends
/// a room the same text.)
pub(crate) async fn recording_text(src: &str) -> Result<String, String> {
    fetch_text(&shared::lesson::recording_address(src))
        .await
        .map_err(|why| format!("The recording at {src} could not be fetched: {why}."))
}

/// The recording a round names, read; or why it cannot be played.
async fn recording(src: &str) -> Result<shared::recording::Recording, String> {
    let text = recording_text(src).await?;
    shared::recording::read(&text).map_err(|why| format!("The recording at {src} cannot be played: {why}."))
}

/// Plays `run` again into `state`, each event at its moment (sped up to last at most
/// [`shared::recording::REPLAY_AT_MOST_MS`]), as a room plays a recording round; stops when
/// `still` says the reader has moved on.
async fn replay(state: RwSignal<RunState>, run: StoredRun, still: impl Fn() -> bool) {
    use shared::recording::{REPLAY_AT_MOST_MS, replay_at};
    state.set(RunState::default());
    state.update(|s| s.apply(ServerMsg::Started { run_id: run.id.clone() }));
    let span = run.events.last().map_or(0, |e| e.at_ms);
    let mut clock = 0;
    for event in run.events {
        let due = replay_at(event.at_ms, span, REPLAY_AT_MOST_MS);
        crate::api::sleep(due.saturating_sub(clock)).await;
        clock = due;
        if !still() {
            return;
        }
        state.update(|s| s.apply(ServerMsg::Event { event }));
    }
    state.update(|s| {
        s.apply(ServerMsg::Done {
            run_id: run.id,
            outcome: run.outcome,
        });
    });
}

/// The run's answer to `asked`, once it has one.
fn answer_of(state: &RunState, asked: &Asked) -> Option<String> {
    match &asked.derived {
        None => state.revealed().map(|(choice, _)| choice.to_owned()),
        Some(derived) => match &state.phase {
            Phase::Finished(Outcome::Completed) => derived.of(&state.events),
            _ => None,
        },
    }
}

/// `compact`: the timeline's view to open with; `embed`: in an iframe (`/embed/lessons/{id}`),
/// with an embed's title line instead of the page's heading, telling the host page its height.
#[component]
pub fn LessonAlonePage(id: String, compact: bool, #[prop(optional)] embed: bool) -> impl IntoView {
    if embed {
        request_animation_frame(crate::api::report_height_to_parent);
    }
    let path = format!("/api/lessons/{id}");
    let kept = fetched(async move { fetch_json::<super::lessons::Kept>(&path).await });
    let catalog = fetched(fetch_json::<Vec<LabStatus>>("/api/labs"));
    move || match (kept.get(), catalog.get()) {
        (Some(Err(message)), _) | (_, Some(Err(message))) => view! { <ErrorView message=message /> }.into_any(),
        (Some(Ok(kept)), Some(Ok(labs))) => match shared::lesson::parse(&kept.text) {
            Ok(lesson) => {
                let scenarios: Vec<ScenarioInfo> = labs.into_iter().flat_map(|l| l.lab.scenarios).collect();
                view! { <Taking id=kept.id.clone() lesson=lesson scenarios=scenarios compact=compact embed=embed /> }
                    .into_any()
            }
            Err(e) => view! { <ErrorView message=e.to_string() /> }.into_any(),
        },
        _ => loading("Loading the lesson…").into_any(),
    }
}

#[component]
fn Taking(id: String, lesson: Lesson, scenarios: Vec<ScenarioInfo>, compact: bool, embed: bool) -> impl IntoView {
    let socket = RunSocket::new();
    let count = lesson.rounds.len();
    let at = RwSignal::new(0usize);
    // Each round's result: `Some(true)` right, `Some(false)` wrong, `None` not taken.
    let results = RwSignal::new(vec![None::<bool>; count]);
    let rounds = StoredValue::new(lesson.rounds.clone());
    let scenarios = StoredValue::new(scenarios);
    let current = LocalResource::new(move || {
        let round = rounds.with_value(|r| r.get(at.get()).cloned());
        async move {
            let round = round?;
            let catalog = scenarios.get_value();
            Some(asked(&round, &catalog).await)
        }
    });
    let picked = RwSignal::new(None::<String>);
    let compact = RwSignal::new(compact);
    let score = move || results.with(|r| r.iter().filter(|r| **r == Some(true)).count());
    view! {
        <article class="rl-lesson-alone">
            {heading(&id, &lesson.title, embed)}
            <p class="rl-lesson-alone-score" data-right=move || score().to_string() role="status">
                {move || format!("Score: {} of {count}", score())}
            </p>
            {move || {
                let n = at.get();
                if n >= count {
                    return view! { <p class="rl-lesson-alone-end">{format!("Done: {} of {count} right.", score())}</p> }.into_any();
                }
                let round = rounds.with_value(|r| r[n].clone());
                match current.get().flatten() {
                    None => loading("Reading the round…").into_any(),
                    Some(Err(why)) => view! {
                        <section class="rl-lesson-round-now" data-number=(n + 1).to_string()>
                            <h2 class="rl-lesson-round-title">{round.title.clone()}</h2>
                            <p class="rl-notice">{why}</p>
                            <button class="rl-lesson-next" on:click=move |_| { picked.set(None); at.update(|a| *a += 1) }>"Next round"</button>
                        </section>
                    }.into_any(),
                    Some(Ok(asked)) => view! {
                        <AloneRound socket=socket asked=asked round=round number=n + 1 count=count picked=picked
                            results=results at=at compact=compact />
                    }.into_any(),
                }
            }}
        </article>
    }
    .into_any()
}

/// The page's heading, with a link to the lesson; an embed's title line, opening the lesson
/// taken alone on racelab in a new tab.
fn heading(id: &str, title: &str, embed: bool) -> impl IntoView + use<> {
    const WHAT: &str = "Predict each round, run it on a real database, and see what happened.";
    if embed {
        return view! {
            <p class="rl-embed-title">
                <a href=format!("/lessons/{id}/alone") target="_blank" rel="noopener">{title.to_owned()}</a>
                <span class="rl-embed-by">" · a racelab lesson"</span>
            </p>
            <p class="rl-explain">{WHAT}</p>
        }
        .into_any();
    }
    view! {
        <h1>{title.to_owned()}</h1>
        <p class="rl-explain">
            "Take it alone. " {WHAT} " "
            <a href=format!("/lessons/{id}")>"The lesson"</a>
        </p>
    }
    .into_any()
}

#[component]
fn AloneRound(
    socket: RunSocket,
    asked: Asked,
    round: Round,
    number: usize,
    count: usize,
    picked: RwSignal<Option<String>>,
    results: RwSignal<Vec<Option<bool>>>,
    at: RwSignal<usize>,
    compact: RwSignal<bool>,
) -> impl IntoView {
    let state = socket.state;
    let asked_for_answer = asked.clone();
    let answer = Memo::new(move |_| state.with(|s| answer_of(s, &asked_for_answer)));
    // The run's answer scores the round, once.
    Effect::new(move |_| {
        if let Some(answer) = answer.get() {
            let right = picked.get_untracked().as_deref() == Some(answer.as_str());
            results.update(|r| r[number - 1] = Some(right));
        }
    });
    let explain = round.explain.clone().unwrap_or_default();
    let revealed = Signal::derive(move || answer.get().map(|a| (a, explain.clone())));
    let active = Signal::derive(move || state.with(RunState::is_active));
    let locked = Signal::derive(move || active.get() || answer.with(Option::is_some));
    let recorded = asked.recorded.is_some();
    let run = {
        let asked = asked.clone();
        move |_| match asked.recorded.clone() {
            Some(run) => {
                let here = move || at.try_get_untracked() == Some(number - 1);
                leptos::task::spawn_local(replay(state, run, here));
            }
            None => socket.start_on(&asked.scenario, &asked.variant, Mode::Auto, &asked.postgres),
        }
    };
    let hint = match recorded {
        true => "Pick what you expect, then play it: it was recorded on a real database.",
        false => "Pick what you expect, then run it.",
    };
    view! {
        <section class="rl-lesson-round-now" data-number=number.to_string()
            data-answered=move || answer.with(Option::is_some).to_string()
            data-run-id=move || state.with(|s| s.run_id.clone())>
            <p class="rl-lesson-place">{format!("Round {number} of {count}")}</p>
            <h2 class="rl-lesson-round-title">{round.title.clone()}</h2>
            <Predict prediction=asked.prediction.clone() subject=Signal::stored(round.title.clone()) picked=picked
                revealed=revealed locked=locked hint=hint />
            {move || answer.get().map(|a| {
                let (class, said) = match picked.get() {
                    Some(p) if p == a => ("rl-lesson-result rl-lesson-result--right", "Right: one point."),
                    _ => ("rl-lesson-result rl-lesson-result--wrong", "Not this time."),
                };
                view! { <p class=class role="status">{said}</p> }
            })}
            <div class="rl-controls">
                <button class="rl-run" on:click=run
                    disabled=move || active.get() || picked.with(Option::is_none) || answer.with(Option::is_some)>
                    {if recorded { "Play the recording" } else { "Run" }}
                </button>
                {move || answer.with(Option::is_some).then(|| view! {
                    <button class="rl-lesson-next" on:click=move |_| {
                        picked.set(None);
                        state.set(RunState::default());
                        at.update(|a| *a += 1);
                    }>{if number == count { "See your score" } else { "Next round" }}</button>
                })}
            </div>
            <RunView socket=socket is_load_test=Signal::stored(false) compact=compact />
        </section>
    }
}
