//! A run as it plays: status, whose step is next, the timeline (or, for a load test, progress and
//! chart), the verdict, the ledger diff, the reference figures, the transcript and the
//! permalink. Drawn from one socket's [`RunState`](shared::run_state::RunState), so a scenario's
//! own panel and a room that follows its trainer's run show a run the same way.

use super::chart::{Progress, StrategyChart};
use super::compact_timeline::CompactTimeline;
use super::drain::{DrainChart, ProgressBars};
use super::ledger_diff::LedgerDiff;
use super::reference::ReferenceFigures;
use super::status::Status;
use super::timeline::TimelineView;
use super::transcript::Transcript;
use super::verdict::VerdictBanner;
use crate::api::RunSocket;
use leptos::prelude::*;
use shared::Moment;
use shared::series::Drain;

#[component]
pub fn RunView(
    socket: RunSocket,
    /// A free-running workload: progress and a chart instead of a timeline and a ledger.
    is_load_test: Signal<bool>,
    /// The compact timeline instead of the detailed one.
    compact: RwSignal<bool>,
) -> impl IntoView {
    let state = socket.state;
    let timeline = Signal::derive(move || state.with(|s| s.timeline()));
    let transcript = Signal::derive(move || state.with(|s| s.transcript()));
    view! {
        <Status socket=socket />
        {move || state.with(|s| s.next_step.clone()).map(|(actor, step)| {
            view! { <p class="rl-next-step">"Next: " <strong>{actor}</strong> " — " <code>{step}</code></p> }
        })}
        {move || is_load_test.get().then(|| state.with(|s| s.progress().map(|(label, done, total)| {
            view! { <Progress label=label.to_owned() done=done total=total /> }
        })))}
        {move || is_load_test.get().then(|| state.with(|s| s.table_after("strategies").cloned().map(|figures| {
            let tutorial = s.ledger(Moment::Reference).and_then(|l| l.tables.first().cloned());
            view! { <StrategyChart figures=figures tutorial=tutorial /> }
        })))}
        {move || (!is_load_test.get()).then(|| state.with(|s| {
            let drain = Drain::from_events(&s.events);
            (!drain.series.is_empty()).then(|| {
                let chart = drain.drawable().then(|| view! { <DrainChart drain=drain.clone() /> });
                view! { <ProgressBars drain=drain /> {chart} }
            })
        }))}
        {move || (!is_load_test.get()).then(|| if compact.get() {
            view! { <CompactTimeline timeline=timeline /> }.into_any()
        } else {
            view! { <TimelineView timeline=timeline /> }.into_any()
        })}
        {move || state.with(|s| s.verdict().cloned()).map(|v| view! { <VerdictBanner verdict=v /> })}
        {move || (!is_load_test.get()).then(|| state.with(|s| {
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
        {move || (!is_load_test.get()).then(|| state.with(|s| {
            s.ledger(Moment::Reference)
                .and_then(|l| l.tables.first().cloned())
                .map(|table| view! { <ReferenceFigures table=table /> })
        }))}
        <Transcript text=transcript />
        {move || state.with(|s| (!s.is_active()).then(|| s.run_id.clone()).flatten()).map(|run_id| view! {
            <p class="rl-permalink-line">
                <a class="rl-permalink" href=format!("/runs/{run_id}")>"Permalink to this run"</a>
            </p>
        })}
    }
}
