//! `/runs/{id}`: a stored run, replayed from its events. No database is touched: the timeline,
//! ledger and verdict are drawn from the stream exactly as when it ran live. `/embed/runs/{id}`
//! is the same run for an iframe (compact by default, its height told to the host page).

use crate::api::{fetch_json, fetched, report_height_to_parent};
use crate::components::compact_timeline::CompactTimeline;
use crate::components::error_view::{ErrorView, loading};
use crate::components::ledger_diff::LedgerDiff;
use crate::components::reference::ReferenceFigures;
use crate::components::timeline::TimelineView;
use crate::components::transcript::Transcript;
use crate::components::verdict::VerdictBanner;
use leptos::prelude::*;
use shared::protocol::StoredRun;
use shared::run_state::Phase;
use shared::run_state::RunState;
use shared::{Moment, Outcome};

#[component]
pub fn ReplayPage(
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
    let stored = fetched(async move { fetch_json::<StoredRun>(&format!("/api/runs/{id}")).await });
    view! {
        {move || stored.get().map(|result| match result {
            Err(message) => view! { <ErrorView message=message /> }.into_any(),
            Ok(run) => {
                let state = RunState::replay(run.id.clone(), run.events.clone());
                let timeline = Signal::derive({
                    let state = state.clone();
                    move || state.timeline()
                });
                let transcript = Signal::derive({
                    let state = state.clone();
                    move || state.transcript()
                });
                let ledger = match (state.ledger(Moment::Before), state.ledger(Moment::After)) {
                    (Some(before), Some(after)) => Some(view! {
                        <LedgerDiff
                            before=before.clone()
                            after=after.clone()
                            expected=state.ledger(Moment::Expected).cloned()
                            fold_unchanged=compact
                        />
                    }),
                    _ => None,
                };
                let reference = state
                    .ledger(Moment::Reference)
                    .and_then(|l| l.tables.first().cloned())
                    .map(|table| view! { <ReferenceFigures table=table /> });
                let live = format!("/lab/{}?variant={}", run.scenario, run.variant);
                let heading = if embed {
                    let title = state.header().map_or(run.scenario.clone(), |(title, _)| title.to_owned());
                    view! {
                        <p class="rl-embed-title">
                            <a href=format!("/runs/{}", run.id) target="_blank" rel="noopener">{title}</a>
                            <span class="rl-embed-by">{format!(" · {} · a run on racelab", run.variant)}</span>
                        </p>
                    }
                    .into_any()
                } else {
                    view! {
                        <h1>{format!("Run {} — {} ({})", run.id, run.scenario, run.variant)}</h1>
                        <p class="rl-explain">
                            "A replay of a finished run, from its stored events. "
                            <a href=live>"Run it again live"</a>
                        </p>
                    }
                    .into_any()
                };
                // A run that did not complete says so first: the timeline shows where, this says why.
                let ended = match &state.phase {
                    Phase::Finished(Outcome::Failed { message }) => Some(("failed", format!("This run failed: {message}"))),
                    Phase::Finished(Outcome::Cancelled) => Some(("cancelled", "This run was cancelled before its end.".to_owned())),
                    _ => None,
                }
                .map(|(state, text)| view! { <p class="rl-status" data-state=state role="status"><span>{text}</span></p> });
                let drawn = if compact {
                    view! { <CompactTimeline timeline=timeline /> }.into_any()
                } else {
                    view! { <TimelineView timeline=timeline /> }.into_any()
                };
                view! {
                    <article class="rl-replay" data-run-id=run.id.clone()>
                        {heading}
                        {ended}
                        {drawn}
                        {state.verdict().cloned().map(|v| view! { <VerdictBanner verdict=v /> })}
                        {ledger}
                        {reference}
                        <Transcript text=transcript />
                    </article>
                }
                .into_any()
            }
        }).unwrap_or_else(|| loading("Loading the run…"))}
    }
}
