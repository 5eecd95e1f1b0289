//! `/runs/{id}`: a stored run, replayed from its events. No database is touched: the timeline
//! (or a workload's progress and chart), ledger and verdict are drawn from the stream exactly as
//! when it ran live, with the same body as the live page. The page names the scenario and the
//! variant, says what the scenario shows, toggles the view, and links to the run's picture (SVG
//! for slides, PNG for chats). `/embed/runs/{id}` is the same run for an iframe (compact by
//! default, its height told to the host page). A run that does not exist says so.
//!
//! A recording (`/embed/recording?src=URL`) is not played here: the player draws it, with no
//! framework, in every app that plays one (`crate::player`).

use crate::api::{fetch_found, report_height_to_parent};
use crate::components::error_view::{ErrorView, loading};
use crate::components::run_view::RunBody;
use crate::components::view_toggle::ViewToggle;
use leptos::prelude::*;
use shared::Outcome;
use shared::protocol::StoredRun;
use shared::run_state::{Phase, RunState};

/// What the page has of the run: still loading, none by that id, an error, or the run's
/// header (its state goes to its own signal, moved there once, never copied).
#[derive(Clone)]
enum Loaded {
    Loading,
    Missing,
    Failed(String),
    Run(Header),
}

/// What the heading says of a stored run.
#[derive(Clone)]
struct Header {
    id: String,
    #[cfg_attr(feature = "embed", allow(dead_code))]
    scenario: String,
    variant: String,
    title: String,
}

#[component]
pub fn ReplayPage(
    /// The stored run's id.
    id: String,
    /// In an iframe: a one-line title instead of the heading, and the height told to the host.
    #[prop(default = false)]
    embed: bool,
    /// The compact timeline instead of the detailed one.
    #[prop(default = false)]
    compact: bool,
) -> impl IntoView {
    if embed {
        request_animation_frame(report_height_to_parent);
    }
    let compact = RwSignal::new(compact);
    // The full page keeps its view in its address, as the scenario page does.
    #[cfg(not(feature = "embed"))]
    if !embed {
        Effect::new(move |_| {
            let view = if compact.get() { "compact" } else { "detailed" };
            crate::api::replace_query(&[("view", view)]);
        });
    }
    let replay = Replay {
        state: RwSignal::new(RunState::default()),
        // A spec's every-permutation run keeps each permutation's outcome: its matrix, drawn
        // under the run.
        #[cfg(not(feature = "embed"))]
        matrix: RwSignal::new(None),
        compact,
    };
    let loaded = load(id.clone(), replay);
    move || match loaded.get() {
        Loaded::Loading => loading("Loading the run…"),
        Loaded::Failed(message) => view! { <ErrorView message=message /> }.into_any(),
        Loaded::Missing => view! { <Missing id=id.clone() /> }.into_any(),
        Loaded::Run(run) => {
            let (toggle, body) = replay.body(embed);
            view! {
                <article class="rl-replay" data-run-id=run.id.clone()>
                    {heading(&run, embed)}
                    {ended(replay.state)}
                    {toggle}
                    {body}
                </article>
            }
            .into_any()
        }
    }
}

/// What the page draws the run with: its state, the matrix of a spec's permutations, the view.
#[derive(Clone, Copy)]
struct Replay {
    state: RwSignal<RunState>,
    #[cfg(not(feature = "embed"))]
    matrix: RwSignal<Option<RunState>>,
    compact: RwSignal<bool>,
}

/// The run stored as `id`, folded into `replay` once fetched; what the page has of it meanwhile.
fn load(id: String, replay: Replay) -> RwSignal<Loaded> {
    let loaded = RwSignal::new(Loaded::Loading);
    let state = replay.state;
    leptos::task::spawn_local(async move {
        let run = stored(&id, state).await;
        // A spec's run at every permutation: its matrix, drawn under the run.
        #[cfg(not(feature = "embed"))]
        if state.with_untracked(RunState::is_every_permutation) {
            replay.matrix.set(Some(state.get_untracked()));
        }
        loaded.set(run);
    });
    loaded
}

/// A run that did not complete says so first: the timeline shows where, this says why.
fn ended(state: RwSignal<RunState>) -> Option<impl IntoView> {
    state
        .with_untracked(|s| match &s.phase {
            Phase::Finished(Outcome::Failed { message }) => Some(("failed", format!("This run failed: {message}"))),
            Phase::Finished(Outcome::Cancelled) => {
                Some(("cancelled", "This run was cancelled before its end.".to_owned()))
            }
            _ => None,
        })
        .map(|(state, text)| view! { <p class="rl-status" data-state=state role="status"><span>{text}</span></p> })
}

impl Replay {
    fn is_load_test(self) -> Signal<bool> {
        let state = self.state;
        Signal::derive(move || state.with(|s| s.table_after("strategies").is_some()))
    }

    /// The full page's controls (the view toggle, and the recording to download), then the
    /// run's body and a spec's matrix.
    fn body(self, embed: bool) -> (impl IntoView + use<>, impl IntoView + use<>) {
        let (state, compact, is_load_test) = (self.state, self.compact, self.is_load_test());
        // A run racelab kept saves as a recording from its permalink too.
        #[cfg(not(feature = "embed"))]
        let download = view! { <crate::components::download::DownloadRecording state=state /> };
        #[cfg(feature = "embed")]
        let download = ();
        // A spec's run at every permutation has no steps to draw or record: its matrix alone.
        #[cfg(not(feature = "embed"))]
        let has_steps = !state.with_untracked(RunState::is_every_permutation);
        #[cfg(feature = "embed")]
        let has_steps = true;
        let toggle = (!embed && !is_load_test.get_untracked() && has_steps).then(|| {
            view! {
                <div class="rl-controls">{download}<ViewToggle compact=compact /></div>
            }
        });
        let body = view! { <RunBody state=state is_load_test=is_load_test compact=compact /> };
        #[cfg(not(feature = "embed"))]
        let body = (body, matrix_of(self.matrix));
        (toggle, body)
    }
}

/// A run racelab stored, folded into `state`.
async fn stored(id: &str, state: RwSignal<RunState>) -> Loaded {
    match fetch_found::<StoredRun>(&format!("/api/runs/{id}")).await {
        Err(message) => Loaded::Failed(message),
        Ok(None) => Loaded::Missing,
        Ok(Some(run)) => {
            let replayed = RunState::replay(run.id.clone(), run.events);
            let title = replayed
                .header()
                .map_or(run.scenario.clone(), |(title, _)| title.to_owned());
            state.set(replayed);
            Loaded::Run(Header {
                id: run.id,
                scenario: run.scenario,
                variant: run.variant,
                title,
            })
        }
    }
}

/// A spec's every-permutation matrix, read from its stored run (no row opens a run: this page
/// plays none).
#[cfg(not(feature = "embed"))]
fn matrix_of(matrix: RwSignal<Option<RunState>>) -> impl IntoView + Copy {
    move || {
        matrix.get().map(|played| {
            view! {
                <h2 class="rl-matrix-heading">"Every permutation, as played"</h2>
                <crate::components::matrix::Matrix state=RwSignal::new(played) />
            }
        })
    }
}

/// The embed's one-line title, or the page's heading: the scenario and variant, what the
/// scenario shows, and the links that go with a run (live again, the pictures).
fn heading(run: &Header, embed: bool) -> AnyView {
    if embed {
        return view! {
            <p class="rl-embed-title">
                <a href=format!("/runs/{}", run.id) target="_blank" rel="noopener">{run.title.clone()}</a>
                <span class="rl-embed-by">{format!(" · {} · a run on racelab", run.variant)}</span>
            </p>
        }
        .into_any();
    }
    full_heading(run)
}

/// The full page's heading, with the scenario's own words from the catalog (the variant's label
/// and what the scenario is about) once they arrive.
#[cfg(not(feature = "embed"))]
fn full_heading(run: &Header) -> AnyView {
    let scenario = run.scenario.clone();
    let about = crate::api::fetched(async move {
        crate::api::fetch_json::<shared::catalog::ScenarioStatus>(&format!("/api/scenarios/{scenario}"))
            .await
            .ok()
    });
    let variant = run.variant.clone();
    let label = move || {
        about.with(|a| {
            a.as_ref()
                .and_then(|a| a.as_ref())
                .and_then(|a| a.scenario.variant(&variant).map(|v| v.label.clone()))
                .unwrap_or_else(|| variant.clone())
        })
    };
    let hook = move || about.with(|a| a.as_ref().and_then(|a| a.as_ref()).map(|a| a.scenario.hook.clone()));
    let live = format!(
        "{}?variant={}",
        shared::pages::scenario_page(&run.scenario),
        run.variant
    );
    view! {
        <h1>{run.title.clone()} <span class="rl-replay-variant">{move || format!(" ({})", label())}</span></h1>
        {move || hook().map(|hook| view! { <p class="rl-hook">{hook}</p> })}
        <p class="rl-explain rl-replay-about">
            {format!("A replay of run {}, from its stored events: nothing is run again. ", run.id)}
            <a href=live>"Run it again live"</a>
            " · the picture of this run: "
            <a class="rl-picture-link" data-kind="svg" href=format!("/runs/{}.svg", run.id)>"SVG"</a>
            " · "
            <a class="rl-picture-link" data-kind="png" href=format!("/runs/{}.png", run.id)>"PNG"</a>
        </p>
    }
    .into_any()
}

/// The embed app shows runs in iframes only, with their one-line title.
#[cfg(feature = "embed")]
fn full_heading(run: &Header) -> AnyView {
    view! { <h1>{run.title.clone()}</h1> }.into_any()
}

/// A run id nobody stored (or a typo): said plainly, with the way on.
#[component]
fn Missing(id: String) -> impl IntoView {
    view! {
        <div class="rl-not-found" data-run-id=id.clone()>
            <h1>"No such run"</h1>
            <p>
                {format!("racelab has no stored run with the id {id}. A permalink names a run that finished; check the link, or ")}
                <a href="/">"run a scenario yourself"</a>
                "."
            </p>
        </div>
    }
}
