//! `/lessons/{id}/alone`: a lesson taken alone, from its link: each round's question, the
//! reader's pick, the run on the real database, the answer it gives (the scenario's `reveal`, or
//! the lesson's own question read off the run's events), the explanation, and the score so far.

use crate::api::{RunSocket, fetch_json, fetched};
use crate::components::error_view::{ErrorView, loading};
use crate::components::predict::Predict;
use crate::components::run_view::RunView;
use leptos::prelude::*;
use shared::catalog::LabStatus;
use shared::lesson::{Derived, Lesson, Race, Round};
use shared::run_state::{Phase, RunState};
use shared::{Mode, Outcome, Prediction, ScenarioInfo};

/// What a round plays and asks, once its scenario is known.
#[derive(Clone, Debug, PartialEq)]
struct Asked {
    scenario: String,
    variant: String,
    postgres: String,
    prediction: Prediction,
    /// How its answer is read off the run; `None`: the run's `reveal`.
    derived: Option<Derived>,
}

/// Round `round`'s race and question, with the catalog (and a spec's own page) to read a
/// scenario's question from; `Err` says why the round cannot be taken here.
async fn asked(round: &Round, catalog: &[ScenarioInfo]) -> Result<Asked, String> {
    let (scenario, variant, postgres, info) = match &round.race {
        Race::Scenario { id, variant, postgres } => {
            let info = catalog.iter().find(|s| s.id == *id).cloned();
            (id.clone(), variant.clone(), postgres.map(|v| v.to_string()), info)
        }
        Race::Spec { id, permutation } => {
            let saved = fetch_json::<super::write::Saved>(&format!("/api/specs/{id}")).await?;
            let variant = format!("p{}", permutation.unwrap_or(1));
            (format!("spec/{id}"), variant, None, Some(saved.scenario.scenario))
        }
        Race::Recording { src } => {
            return Err(format!(
                "This round is a recording ({src}): open it in the player from the lesson's page."
            ));
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
    })
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

#[component]
pub fn LessonAlonePage(id: String) -> impl IntoView {
    let path = format!("/api/lessons/{id}");
    let kept = fetched(async move { fetch_json::<super::lessons::Kept>(&path).await });
    let catalog = fetched(fetch_json::<Vec<LabStatus>>("/api/labs"));
    move || match (kept.get(), catalog.get()) {
        (Some(Err(message)), _) | (_, Some(Err(message))) => view! { <ErrorView message=message /> }.into_any(),
        (Some(Ok(kept)), Some(Ok(labs))) => match shared::lesson::parse(&kept.text) {
            Ok(lesson) => {
                let scenarios: Vec<ScenarioInfo> = labs.into_iter().flat_map(|l| l.lab.scenarios).collect();
                view! { <Taking id=kept.id.clone() lesson=lesson scenarios=scenarios /> }.into_any()
            }
            Err(e) => view! { <ErrorView message=e.to_string() /> }.into_any(),
        },
        _ => loading("Loading the lesson…").into_any(),
    }
}

#[component]
fn Taking(id: String, lesson: Lesson, scenarios: Vec<ScenarioInfo>) -> impl IntoView {
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
    let compact = RwSignal::new(crate::api::compact_view());
    let score = move || results.with(|r| r.iter().filter(|r| **r == Some(true)).count());
    view! {
        <article class="rl-lesson-alone">
            <h1>{lesson.title.clone()}</h1>
            <p class="rl-explain">
                "Take it alone: predict each round, run it on a real database, and see what happened. "
                <a href=format!("/lessons/{id}")>"The lesson"</a>
            </p>
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
    let run = {
        let asked = asked.clone();
        move |_| socket.start_on(&asked.scenario, &asked.variant, Mode::Auto, &asked.postgres)
    };
    view! {
        <section class="rl-lesson-round-now" data-number=number.to_string()
            data-answered=move || answer.with(Option::is_some).to_string()>
            <p class="rl-lesson-place">{format!("Round {number} of {count}")}</p>
            <h2 class="rl-lesson-round-title">{round.title.clone()}</h2>
            <Predict prediction=asked.prediction.clone() subject=Signal::stored(round.title.clone()) picked=picked
                revealed=revealed locked=locked hint="Pick what you expect, then run it." />
            {move || answer.get().map(|a| {
                let (class, said) = match picked.get() {
                    Some(p) if p == a => ("rl-lesson-result rl-lesson-result--right", "Right: one point."),
                    _ => ("rl-lesson-result rl-lesson-result--wrong", "Not this time."),
                };
                view! { <p class=class role="status">{said}</p> }
            })}
            <div class="rl-controls">
                <button class="rl-run" on:click=run
                    disabled=move || active.get() || picked.with(Option::is_none) || answer.with(Option::is_some)>"Run"</button>
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
