//! One scenario's run, drawn: variant tabs, Run / Step / Next / Cancel, status, then the
//! timeline (or, for the load test, progress and chart), the verdict, the ledger diff and the
//! transcript. The scenario page, each compare column and the embed are all this panel.

use super::chart::{Progress, StrategyChart};
use super::compact_timeline::CompactTimeline;
use super::drain::{DrainChart, ProgressBars};
#[cfg(not(feature = "embed"))]
use super::embed_code::EmbedCode;
use super::ledger_diff::LedgerDiff;
use super::reference::ReferenceFigures;
use super::status::Status;
use super::timeline::TimelineView;
use super::transcript::Transcript;
use super::variant_picker::VariantPicker;
use super::verdict::VerdictBanner;
use crate::api::{Link, RunSocket};
use leptos::prelude::*;
use shared::series::Drain;
use shared::{Mode, Moment, ScenarioInfo, Service};

/// How much chrome a panel shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chrome {
    /// The scenario page: everything, plus embed code.
    Full,
    /// A compare column: one fixed variant, no tabs, no embed code.
    Column,
    /// An iframe: tabs and controls, no embed code.
    Embed,
}

#[component]
pub fn RunPanel(
    scenario: ScenarioInfo,
    /// Services the scenario's lab needs that are down: the panel says so and cannot run.
    down: Vec<Service>,
    variant: String,
    chrome: Chrome,
    #[prop(default = false)] autoplay: bool,
    #[prop(default = false)] step: bool,
    /// Start with the compact timeline (the embed's default) instead of the detailed one.
    #[prop(default = false)]
    compact: bool,
    /// For compare: each bump of this token starts the panel's run.
    #[prop(optional)]
    run_all: Option<RwSignal<u32>>,
) -> impl IntoView {
    let socket = RunSocket::new();
    let state = socket.state;
    let chosen = RwSignal::new(variant);
    let id = scenario.id.clone();
    let is_load_test = scenario.workload;
    let steppable = scenario.steppable;
    let blocked = !down.is_empty();
    let stepping = RwSignal::new(false);
    let compact = RwSignal::new(compact);

    let start = {
        let id = id.clone();
        move |mode: Mode| {
            stepping.set(mode == Mode::Step);
            socket.start(&id, &chosen.get_untracked(), mode);
        }
    };
    if autoplay && !blocked {
        start(if step && steppable { Mode::Step } else { Mode::Auto });
    }
    if let Some(token) = run_all {
        let start = start.clone();
        let seen = StoredValue::new(token.get_untracked());
        Effect::new(move |_| {
            let now = token.get();
            // A panel still playing finishes its run; only idle panels start again.
            if now != seen.get_value() && !state.with_untracked(|s| s.is_active()) {
                seen.set_value(now);
                start(Mode::Auto);
            }
        });
    }

    let active = Signal::derive(move || state.with(|s| s.is_active()));
    let connected = move || socket.link.get() == Link::Open;
    let run = {
        let start = start.clone();
        move |_| start(Mode::Auto)
    };
    let step_run = move |_| start(Mode::Step);
    let next = move |_| socket.next();
    let cancel = move |_| socket.cancel();

    let timeline = Signal::derive(move || state.with(|s| s.timeline()));
    let transcript = Signal::derive(move || state.with(|s| s.transcript()));
    let down_notice = blocked.then(|| {
        let names: Vec<&str> = down.iter().map(|s| s.label()).collect();
        view! {
            <p class="rl-down" role="alert">
                {format!("This lab needs {} and it is down right now, so it cannot run. The other labs still work.", names.join(" and "))}
            </p>
        }
    });
    let tabs = (chrome != Chrome::Column).then(|| {
        view! { <VariantPicker variants=scenario.variants.clone() chosen=chosen disabled=active /> }
    });
    #[cfg(not(feature = "embed"))]
    let embed_code = {
        let variant = Signal::derive(move || chosen.get());
        (chrome == Chrome::Full).then(|| view! { <EmbedCode scenario=id.clone() variant=variant /> })
    };
    // The embed app has no full page, so no embed code to offer.
    #[cfg(feature = "embed")]
    let embed_code = ();
    let compare_link = (chrome == Chrome::Full && scenario.variants.len() > 1 && !is_load_test).then(|| {
        view! { <a class="rl-compare-link" href=format!("/lab/{id}/compare")>"Compare all variants side by side"</a> }
    });

    view! {
        <div class="rl-run-panel" data-variant=move || chosen.get()>
            {down_notice}
            {tabs}
            <div class="rl-controls">
                <button class="rl-run" on:click=run disabled=move || blocked || active.get() || !connected()>"Run"</button>
                {(chrome != Chrome::Column && steppable).then(|| view! {
                    <button class="rl-step" on:click=step_run disabled=move || blocked || active.get() || !connected()>
                        "Step"
                    </button>
                })}
                {move || (stepping.get() && active.get()).then(|| {
                    view! { <button class="rl-next" on:click=next>"Next step"</button> }
                })}
                {move || active.get().then(|| view! { <button class="rl-cancel" on:click=cancel>"Cancel"</button> })}
                {compare_link}
                {(!is_load_test && chrome != Chrome::Column).then(|| view! { <ViewToggle compact=compact /> })}
            </div>
            <Status socket=socket />
            {move || state.with(|s| s.next_step.clone()).map(|(actor, step)| {
                view! { <p class="rl-next-step">"Next: " <strong>{actor}</strong> " — " <code>{step}</code></p> }
            })}
            {move || is_load_test.then(|| state.with(|s| s.progress().map(|(label, done, total)| {
                view! { <Progress label=label.to_owned() done=done total=total /> }
            })))}
            {move || is_load_test.then(|| state.with(|s| s.table_after("strategies").cloned().map(|figures| {
                let tutorial = s.ledger(Moment::Reference).and_then(|l| l.tables.first().cloned());
                view! { <StrategyChart figures=figures tutorial=tutorial /> }
            })))}
            {move || (!is_load_test).then(|| state.with(|s| {
                let drain = Drain::from_events(&s.events);
                (!drain.series.is_empty()).then(|| {
                    let chart = drain.drawable().then(|| view! { <DrainChart drain=drain.clone() /> });
                    view! { <ProgressBars drain=drain /> {chart} }
                })
            }))}
            {move || (!is_load_test).then(|| if compact.get() {
                view! { <CompactTimeline timeline=timeline /> }.into_any()
            } else {
                view! { <TimelineView timeline=timeline /> }.into_any()
            })}
            {move || state.with(|s| s.verdict().cloned()).map(|v| view! { <VerdictBanner verdict=v /> })}
            {move || (!is_load_test).then(|| state.with(|s| {
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
            {move || (!is_load_test).then(|| state.with(|s| {
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
            {embed_code}
        </div>
    }
}

/// Compact or detailed: two buttons, the current one pressed.
#[component]
fn ViewToggle(compact: RwSignal<bool>) -> impl IntoView {
    view! {
        <div class="rl-view-toggle" role="group" aria-label="Timeline view">
            <button
                class="rl-view-compact"
                aria-pressed=move || compact.get().to_string()
                on:click=move |_| compact.set(true)
            >
                "Compact"
            </button>
            <button
                class="rl-view-detailed"
                aria-pressed=move || (!compact.get()).to_string()
                on:click=move |_| compact.set(false)
            >
                "Detailed"
            </button>
        </div>
    }
}
