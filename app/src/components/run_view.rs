//! A run as it plays: the deck (controls, status, whose step is next), then the run itself
//! ([`RunBody`]: the timeline, or for a load test progress and chart; the verdict, the ledger
//! diff, the reference figures, the transcript) and the permalink. Drawn from one
//! [`RunState`], so a scenario's own panel, a room that follows its trainer's run and a replay
//! of a stored run show a run the same way.

use super::chart::{Progress, StrategyChart};
use super::drain::{DrainChart, ProgressBars};
use super::ledger_diff::LedgerDiff;
use super::reference::ReferenceFigures;
use super::status::Status;
use super::timeline::{CompactTimeline, TimelineView};
use super::transcript::Transcript;
use super::verdict::VerdictBanner;
use crate::api::RunSocket;
use leptos::prelude::*;
use shared::run_state::RunState;
use shared::series::Drain;
use shared::{EventKind, Moment};

#[component]
pub fn RunView(
    socket: RunSocket,
    /// A free-running workload: progress and a chart instead of a timeline and a ledger.
    is_load_test: Signal<bool>,
    /// The compact timeline instead of the detailed one.
    compact: RwSignal<bool>,
    /// The panel's controls (Run, Step, Next…), kept with the status in the deck.
    #[prop(optional)]
    children: Option<Children>,
) -> impl IntoView {
    let state = socket.state;
    let deck = NodeRef::<leptos::html::Div>::new();
    // In an embed, the host page scrolls, not the iframe: the embed leaves the host where it is.
    #[cfg(not(feature = "embed"))]
    follow_steps(state, deck);
    let stepping =
        move || state.with(|s| s.is_active() && s.events.iter().any(|e| matches!(e.kind, EventKind::Paused { .. })));
    view! {
        // The deck: the controls, where the run is, and whose step is next. While a run is
        // stepped it stays in view (sticky), and each step brings its new card into view.
        <div class="rl-deck" node_ref=deck data-stepping=move || stepping().to_string()>
            {children.map(|controls| controls())}
            <Status socket=socket />
            {move || state.with(|s| s.next_step.clone()).map(|next| {
                view! {
                    <p class="rl-next-step">
                        "Next: " <strong>{next.actor}</strong> " — " <code>{next.step}</code>
                    </p>
                }
            })}
        </div>
        <RunBody state=state is_load_test=is_load_test compact=compact />
        {move || state.with(|s| (!s.is_active()).then(|| s.run_id.clone()).flatten()).map(|run_id| view! {
            <p class="rl-permalink-line">
                <a class="rl-permalink" href=format!("/runs/{run_id}")>"Permalink to this run"</a>
            </p>
        })}
    }
}

/// The run itself, live or replayed: progress and a chart for a workload, progress bars and the
/// drain for a pipeline, else the timeline; then the verdict, the ledger diff, the tutorial's
/// figures and the transcript. A replay draws a stored run with the same body as a live one.
#[component]
pub fn RunBody(
    state: RwSignal<RunState>,
    /// A free-running workload: progress and a chart instead of a timeline and a ledger.
    is_load_test: Signal<bool>,
    /// The compact timeline instead of the detailed one.
    compact: RwSignal<bool>,
) -> impl IntoView {
    // What is drawn: the run as it is, or (full app) the moment the reader travelled back to.
    let (shown, scrubber) = moment(state);
    let timeline = Signal::derive(move || shown.with(|s| s.timeline()));
    let (drawn, transcript) = steps_drawn(state, Signal::derive(move || shown.with(|s| s.transcript())));
    view! {
        {scrubber}
        {move || is_load_test.get().then(|| shown.with(|s| s.progress().map(|(label, done, total)| {
            view! { <Progress label=label.to_owned() done=done total=total /> }
        })))}
        {move || is_load_test.get().then(|| shown.with(|s| s.table_after("strategies").cloned().map(|figures| {
            let tutorial = s.ledger(Moment::Reference).and_then(|l| l.tables.first().cloned());
            view! { <StrategyChart figures=figures tutorial=tutorial /> }
        })))}
        {move || (!is_load_test.get()).then(|| shown.with(|s| {
            let drain = Drain::from_events(&s.events);
            (!drain.series.is_empty()).then(|| {
                let chart = drain.drawable().then(|| view! { <DrainChart drain=drain.clone() /> });
                view! { <ProgressBars drain=drain /> {chart} }
            })
        }))}
        {waits(shown)}
        {move || (!is_load_test.get() && drawn()).then(|| if compact.get() {
            view! { <CompactTimeline timeline=timeline /> }.into_any()
        } else {
            #[cfg(not(feature = "embed"))]
            let detailed = detailed(timeline, state, shown);
            #[cfg(feature = "embed")]
            let detailed = view! { <TimelineView timeline=timeline /> }.into_any();
            detailed
        })}
        {move || shown.with(|s| s.verdict().cloned()).map(|v| view! { <VerdictBanner verdict=v /> })}
        {proof(state, shown)}
        {move || (!is_load_test.get()).then(|| shown.with(|s| {
            match (s.ledger(Moment::Before), s.ledger(Moment::After)) {
                (Some(before), Some(after)) => Some(view! {
                    <LedgerDiff
                        before=before.clone()
                        after=after.clone()
                        expected=s.ledger(Moment::Expected).cloned()
                        fold_unchanged=compact.get()
                    />
                }),
                _ => None,
            }
        }))}
        {move || (!is_load_test.get()).then(|| shown.with(|s| {
            s.ledger(Moment::Reference)
                .and_then(|l| l.tables.first().cloned())
                .map(|table| view! { <ReferenceFigures table=table /> })
        }))}
        {transcript}
    }
}

/// Whether the run's timeline is drawn, and its transcript: neither for a spec played at every
/// permutation, whose lanes stay quiet and which prints nothing (its matrix, under the run, says
/// what each order did).
#[cfg(not(feature = "embed"))]
fn steps_drawn(
    state: RwSignal<RunState>,
    transcript: Signal<String>,
) -> (impl Fn() -> bool + Copy + Send + Sync + 'static, impl IntoView) {
    let drawn = Memo::new(move |_| !state.with(RunState::is_every_permutation));
    let drawn = move || drawn.get();
    (drawn, move || drawn().then(|| view! { <Transcript text=transcript /> }))
}

/// The embed app plays no spec at every permutation (a spec's embed is the full app's): it
/// draws both, always.
#[cfg(feature = "embed")]
fn steps_drawn(
    _state: RwSignal<RunState>,
    transcript: Signal<String>,
) -> (impl Fn() -> bool + Copy + Send + Sync + 'static, impl IntoView) {
    (|| true, view! { <Transcript text=transcript /> })
}

/// The run as the body draws it: a moment of it in the full app (see [`moment`]); the run itself
/// in the embed, whose budget has no room for time travel (a `Signal` there costs 1 KB).
#[cfg(not(feature = "embed"))]
type Shown = Signal<RunState>;
#[cfg(feature = "embed")]
type Shown = RwSignal<RunState>;

/// The run as drawn, and the scrubber that chooses the moment: once a run has finished, the
/// reader can drag it, or use the arrow keys, to any event, and every part of the body shows
/// that moment. Full app only.
#[cfg(not(feature = "embed"))]
fn moment(state: RwSignal<RunState>) -> (Shown, impl IntoView) {
    use super::scrubber::Scrubber;
    let at: RwSignal<Option<usize>> = RwSignal::new(None);
    // A new run (or a replay loaded) starts at its end.
    Effect::new(move |_| {
        state.with(|s| (s.run_id.clone(), s.is_active()));
        at.set(None);
    });
    let shown = Signal::derive(move || match at.get() {
        Some(n) if state.with(|s| !s.is_active() && n < s.events.len()) => {
            state.with(|s| RunState::replay(s.run_id.clone().unwrap_or_default(), s.events[..n].to_vec()))
        }
        _ => state.get(),
    });
    (shown, view! { <Scrubber state=state at=at /> })
}

#[cfg(feature = "embed")]
fn moment(state: RwSignal<RunState>) -> (Shown, ()) {
    (state, ())
}

/// The detailed timeline; in the full app with the proof's edges drawn over it, between the
/// cards of the steps they join.
#[cfg(not(feature = "embed"))]
fn detailed(timeline: Signal<shared::timeline::Timeline>, state: RwSignal<RunState>, shown: Shown) -> AnyView {
    use super::proof_arrows::ProofArrows;
    let wrap = NodeRef::<leptos::html::Div>::new();
    let edges = Signal::derive(move || {
        state.with(|s| {
            let Some(proof) = super::proof::proof_of(s) else {
                return Vec::new();
            };
            shown.with(|shown| crate::arrows::edges(proof, &shown.events))
        })
    });
    view! {
        <div class="rl-timeline-wrap" node_ref=wrap>
            <TimelineView timeline=timeline />
            <ProofArrows wrap=wrap edges=edges />
        </div>
    }
    .into_any()
}

/// Who waits for whom at the moment shown (full app only).
#[cfg(not(feature = "embed"))]
fn waits(shown: Shown) -> impl IntoView {
    use super::waits::WaitsPanel;
    move || {
        let graph = shown.with(|s| shared::waits::graph(&s.events));
        graph.anyone_waited.then(|| view! { <WaitsPanel graph=graph /> })
    }
}

#[cfg(feature = "embed")]
fn waits(_shown: Shown) {}

/// Why it happened, once the run's proof arrived (full app only: the embed shows none). At a
/// moment travelled back to, only the edges between steps played by then are drawn.
#[cfg(not(feature = "embed"))]
fn proof(state: RwSignal<RunState>, shown: Shown) -> impl IntoView {
    use super::proof::{ProofPanel, of_run};
    let asked = asked_why(state);
    move || {
        let played = shown.with(|s| {
            s.events
                .iter()
                .filter(|e| matches!(e.kind, EventKind::Step { .. }))
                .count()
        });
        if let Some((proof, lanes, mut steps)) = state.with(of_run) {
            steps.truncate(played);
            return Some(view! { <ProofPanel proof=proof lanes=lanes steps=steps /> }.into_any());
        }
        ask_why(state, asked)
    }
}

#[cfg(feature = "embed")]
fn proof(_state: RwSignal<RunState>, _shown: Shown) {}

/// Why, once the reader asked: kept by the run's body, not by the button that asked, which is
/// drawn afresh at each moment the reader travels to; forgotten when another run starts.
#[cfg(not(feature = "embed"))]
fn asked_why(state: RwSignal<RunState>) -> super::proof::Asked {
    let asked = RwSignal::new(None);
    let run_id = Memo::new(move |_| state.with(|s| s.run_id.clone()));
    Effect::new(move |_| {
        run_id.track();
        asked.set(None);
    });
    asked
}

/// "Why did it happen?", for a run whose proof racelab can work out when asked.
#[cfg(not(feature = "embed"))]
fn ask_why(state: RwSignal<RunState>, asked: super::proof::Asked) -> Option<AnyView> {
    use super::proof::{AskWhy, askable};
    state.with(askable).map(|(run_id, lanes, steps)| {
        view! { <AskWhy run_id=run_id lanes=lanes steps=steps answer=asked /> }.into_any()
    })
}

/// In a stepped run, brings the newest card into view after each step the reader asks for, and
/// the verdict once the run ends: the reader never has to hunt below the fold for what the step
/// did. (Not at the first pause, which no reader asked for: an embed that starts stepping by
/// itself leaves its host page where it is.)
#[cfg(not(feature = "embed"))]
fn follow_steps(state: RwSignal<RunState>, deck: NodeRef<leptos::html::Div>) {
    Effect::new(move |seen: Option<usize>| {
        let (stepped, shown, settled) = state.with(|s| {
            let stepped = s.events.iter().any(|e| matches!(e.kind, EventKind::Paused { .. }))
                && s.events.iter().any(|e| matches!(e.kind, EventKind::Step { .. }));
            (stepped, s.events.len(), s.next_step.is_some() || !s.is_active())
        });
        if stepped && settled && seen.is_some_and(|seen| seen != shown) {
            // The deck may be gone by the next frame (its page drawn afresh): then nothing to do.
            request_animation_frame(move || {
                if let Some(Some(deck)) = deck.try_get_untracked() {
                    crate::api::scroll_to_newest(&deck);
                }
            });
        }
        shown
    });
}
