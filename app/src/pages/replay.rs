//! `/runs/{id}`: a stored run, replayed from its events. No database is touched: the timeline
//! (or a workload's progress and chart), ledger and verdict are drawn from the stream exactly as
//! when it ran live, with the same body as the live page. The page names the scenario and the
//! variant, says what the scenario shows, toggles the view, and links to the run's picture (SVG
//! for slides, PNG for chats). `/embed/runs/{id}` is the same run for an iframe (compact by
//! default, its height told to the host page). A run that does not exist says so.
//!
//! `/embed/recording?src=URL` plays a recording ([`shared::recording`]) the same way: the file
//! is fetched from wherever it is (a blog's static host), read with the app's own JSON reader,
//! and folded as a stored run is; nothing is asked of a racelab server. It says it is a
//! recording, where and when it was made; a file that cannot be played says why.

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
    /// For a recording: where it was fetched from, where and when it was made
    /// (`recorded on PostgreSQL 18.6, 6 Dec 2026`), and the variant's id.
    #[cfg_attr(feature = "embed", allow(dead_code))]
    recorded: Option<(String, String, String)>,
    /// A recording's question, asked before the run shows (`predict=1`).
    #[cfg(not(feature = "embed"))]
    predict: Option<shared::Prediction>,
    /// Where a recording's chapters stop the reader ([`shared::chapters`]).
    #[cfg(not(feature = "embed"))]
    pauses: shared::chapters::Pauses,
}

/// Where the run to replay comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// A run racelab stored, by its id.
    Stored(String),
    /// A recording file, by its URL (the player's and the full app's, not the embed app's).
    #[cfg_attr(feature = "embed", allow(dead_code))]
    Recording(String),
}

#[component]
pub fn ReplayPage(
    source: Source,
    /// In an iframe: a one-line title instead of the heading, and the height told to the host.
    #[prop(default = false)]
    embed: bool,
    /// The compact timeline instead of the detailed one.
    #[prop(default = false)]
    compact: bool,
    /// A recording's "Run it live": the racelab server its author names (`live=`).
    #[prop(default = None)]
    #[cfg_attr(feature = "embed", allow(unused_variables))]
    live: Option<String>,
    /// A recording asks its scenario's question first (`predict=1`), and shows the race once
    /// the reader has picked.
    #[prop(default = false)]
    #[cfg_attr(feature = "embed", allow(unused_variables))]
    predict: bool,
    /// A recording shown from its first event, to step through with the scrubber (`mode=step`).
    #[prop(default = false)]
    #[cfg_attr(feature = "embed", allow(unused_variables))]
    step: bool,
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
        // A spec's every-permutation run, or its recording, keeps each permutation's outcome:
        // its matrix, drawn under the run.
        #[cfg(not(feature = "embed"))]
        matrix: RwSignal::new(None),
        compact,
    };
    let missing = match &source {
        Source::Stored(id) | Source::Recording(id) => id.clone(),
    };
    let loaded = load(source, replay);
    move || match loaded.get() {
        Loaded::Loading => loading("Loading the run…"),
        Loaded::Failed(message) => view! { <ErrorView message=message /> }.into_any(),
        #[cfg(not(feature = "player"))]
        Loaded::Missing => view! { <Missing id=missing.clone() /> }.into_any(),
        // The player asks for no stored run, so none is ever missing.
        #[cfg(feature = "player")]
        Loaded::Missing => ().into_any(),
        Loaded::Run(run) => {
            let question = Question {
                predict,
                from_start: step,
            };
            let (question, toggle, body) = replay.body(&run, embed, question);
            view! {
                <article class="rl-replay" data-run-id=run.id.clone()>
                    {heading(&run, embed, live.as_deref())}
                    {ended(replay.state)}
                    {question}
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

/// How a recording is shown: its question first (`predict=1`), from its first event
/// (`mode=step`).
#[derive(Clone, Copy)]
#[cfg_attr(feature = "embed", allow(dead_code))]
struct Question {
    predict: bool,
    from_start: bool,
}

/// The run from `source`, folded into `replay` once fetched and read; what the page has of it
/// meanwhile.
fn load(source: Source, replay: Replay) -> RwSignal<Loaded> {
    let loaded = RwSignal::new(Loaded::Loading);
    let state = replay.state;
    leptos::task::spawn_local(async move {
        loaded.set(match source {
            #[cfg(not(any(feature = "player", feature = "embed")))]
            Source::Stored(id) => {
                let loaded = stored(&id, state).await;
                // A spec's run at every permutation: its matrix, drawn under the run.
                if state.with_untracked(RunState::is_every_permutation) {
                    replay.matrix.set(Some(state.get_untracked()));
                }
                loaded
            }
            #[cfg(feature = "embed")]
            Source::Stored(id) => stored(&id, state).await,
            // The player plays recordings only: it asks no racelab for a stored run.
            #[cfg(feature = "player")]
            Source::Stored(_) => Loaded::Failed("This player plays recordings only.".to_owned()),
            #[cfg(not(feature = "embed"))]
            Source::Recording(src) => recorded(&src, state, replay.matrix).await,
            // The embed app is never asked for a recording (the server sends the player app).
            #[cfg(feature = "embed")]
            Source::Recording(_) => Loaded::Missing,
        });
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

    /// The full page's controls (the view toggle, and for a run racelab kept, the recording to
    /// download), the recording's question, then the run's body.
    #[cfg_attr(feature = "embed", allow(unused_variables))]
    fn body(
        self,
        run: &Header,
        embed: bool,
        asked: Question,
    ) -> (impl IntoView + use<>, impl IntoView + use<>, impl IntoView + use<>) {
        let (state, compact, is_load_test) = (self.state, self.compact, self.is_load_test());
        // A run racelab kept saves as a recording from its permalink too.
        #[cfg(not(any(feature = "embed", feature = "player")))]
        let download = run
            .recorded
            .is_none()
            .then(|| view! { <crate::components::download::DownloadRecording state=state /> });
        #[cfg(feature = "embed")]
        let download = ();
        // A spec's run at every permutation has no steps to draw or record: its matrix alone.
        #[cfg(not(feature = "embed"))]
        let has_steps = !state.with_untracked(RunState::is_every_permutation);
        #[cfg(feature = "embed")]
        let has_steps = true;
        #[cfg(not(feature = "player"))]
        let toggle = (!embed && !is_load_test.get_untracked() && has_steps).then(|| {
            view! {
                <div class="rl-controls">{download}<ViewToggle compact=compact /></div>
            }
        });
        // The player is always an embed, whose view its address names (`view=`).
        #[cfg(feature = "player")]
        let toggle = ();
        // A recording's question comes first; its race waits for the pick (the embed app asks
        // none, and keeps its bytes).
        #[cfg(not(feature = "embed"))]
        let (question, body) = {
            let (question, waiting) = question(run.predict.clone().filter(|_| asked.predict), &run.variant, state);
            let pauses = run.pauses.clone();
            let matrix = matrix_of(self.matrix, run.recorded.is_some());
            let body = move || {
                (!waiting.get()).then(|| {
                    view! {
                        <RunBody state=state is_load_test=is_load_test compact=compact from_start=asked.from_start
                            pauses=pauses.clone() />
                        {matrix}
                    }
                })
            };
            (question, body)
        };
        // The embed app plays no recording (every byte of it counts against its budget).
        #[cfg(feature = "embed")]
        let (question, body) = (
            (),
            view! { <RunBody state=state is_load_test=is_load_test compact=compact /> },
        );
        (question, toggle, body)
    }
}

/// A run racelab stored, folded into `state`.
#[cfg(not(feature = "player"))]
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
                recorded: None,
                #[cfg(not(feature = "embed"))]
                predict: None,
                #[cfg(not(feature = "embed"))]
                pauses: shared::chapters::Pauses::default(),
            })
        }
    }
}

/// The recording at `src`, folded into `state` (a spec's matrix into `matrix`); or why it
/// cannot be played.
#[cfg(not(feature = "embed"))]
async fn recorded(src: &str, state: RwSignal<RunState>, matrix: RwSignal<Option<RunState>>) -> Loaded {
    // `#id`: the recording is in this page (the one-file player), not at an address.
    let text = match src.strip_prefix('#') {
        Some(id) => crate::api::inline_text(id).ok_or_else(|| format!("this page holds no element {id}")),
        None => crate::api::fetch_text(src).await,
    };
    let text = match text {
        Ok(text) => text,
        Err(why) => return Loaded::Failed(format!("The recording at {src} could not be fetched: {why}.")),
    };
    match shared::recording::read(&text) {
        Err(why) => Loaded::Failed(format!("The recording at {src} cannot be played: {why}.")),
        Ok(recording) => {
            let events = recording.events_to_play();
            let pauses = shared::chapters::Pauses::of(&recording.chapters, &events);
            state.set(RunState::replay(recording.run.id.clone(), events));
            if let Some(spec) = &recording.spec {
                matrix.set(Some(RunState::replay(recording.run.id.clone(), spec.matrix.clone())));
            }
            Loaded::Run(Header {
                id: recording.run.id,
                scenario: recording.run.scenario,
                variant: recording.stamp.variant_label.clone(),
                title: recording.scenario.title,
                recorded: Some((src.to_owned(), recording.stamp.line(), recording.stamp.variant.clone())),
                predict: recording.scenario.predict,
                pauses,
            })
        }
    }
}

/// A recording's question, before its race shows: the choices, the reader's pick, and once
/// picked, the race and (from the run's own `reveal`) what happened and why. The answer is in
/// the file from the start, so it is held back until the pick. Without a question: nothing, and
/// nothing waits.
#[cfg(not(feature = "embed"))]
fn question(
    prediction: Option<shared::Prediction>,
    variant: &str,
    state: RwSignal<RunState>,
) -> (Option<AnyView>, Signal<bool>) {
    let Some(prediction) = prediction else {
        return (None, Signal::stored(false));
    };
    let picked = RwSignal::new(None::<String>);
    let answer = crate::components::predict::revealed(state);
    let revealed = Signal::derive(move || picked.with(Option::is_some).then(|| answer.get()).flatten());
    let view = view! {
        <crate::components::predict::Predict prediction=prediction subject=Signal::stored(variant.to_owned())
            picked=picked revealed=revealed locked=Signal::derive(move || picked.with(Option::is_some))
            hint="Pick what you expect; then the race, as it happened, shows." />
    };
    (
        Some(view.into_any()),
        Signal::derive(move || picked.with(Option::is_none)),
    )
}

/// A spec's every-permutation matrix, read from its recording or its stored run (no row opens
/// a run: this page plays none).
#[cfg(not(feature = "embed"))]
fn matrix_of(matrix: RwSignal<Option<RunState>>, recorded: bool) -> impl IntoView + Copy {
    let heading = if recorded {
        "Every permutation, as recorded"
    } else {
        "Every permutation, as played"
    };
    move || {
        matrix.get().map(|played| {
            view! {
                <h2 class="rl-matrix-heading">{heading}</h2>
                <crate::components::matrix::Matrix state=RwSignal::new(played) />
            }
        })
    }
}

/// The embed's one-line title, or the page's heading: the scenario and variant, what the
/// scenario shows, and the links that go with a run (live again, the pictures). A recording's
/// says it is one, where and when it was made, instead of linking to a run racelab has, and
/// offers to run it live on the racelab its author names (`live`), if any.
#[cfg_attr(feature = "embed", allow(unused_variables))]
fn heading(run: &Header, embed: bool, live: Option<&str>) -> AnyView {
    #[cfg(not(feature = "embed"))]
    if let Some((src, stamp, variant)) = &run.recorded {
        let live = live
            .and_then(|server| shared::recording::live_address(server, &run.scenario, variant))
            .map(|href| {
                view! {
                    " · "
                    <a class="rl-run-live" href=href target="_blank" rel="noopener">"Run it live"</a>
                }
            });
        return view! {
            <p class="rl-embed-title rl-recording" data-src=src.clone()>
                <span class="rl-recording-title">{run.title.clone()}</span>
                <span class="rl-embed-by">{format!(" · {} · ", run.variant)}</span>
                <span class="rl-recorded">{stamp.clone()}</span>
                {live}
            </p>
        }
        .into_any();
    }
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
#[cfg(not(any(feature = "embed", feature = "player")))]
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

/// The embed and player apps show runs in iframes only, with their one-line title.
#[cfg(any(feature = "embed", feature = "player"))]
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
