//! One scenario's run, with its controls: variant tabs, Run / Step / Next / Cancel, the view
//! toggle, then the run itself ([`RunView`]). The scenario page, each compare column and the
//! embed are all this panel.

#[cfg(not(feature = "embed"))]
use super::embed_code::EmbedCode;
use super::run_view::RunView;
#[cfg(not(feature = "embed"))]
use super::teach::TeachThis;
use super::variant_picker::VariantPicker;
use crate::api::{Link, RunSocket};
use leptos::prelude::*;
use shared::{Mode, ScenarioInfo, Service};

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
    /// Predict, then run (`predict=1`): the reader picks what they expect before Run, if the
    /// scenario asks.
    #[prop(default = false)]
    predict: bool,
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
    let active = Signal::derive(move || state.with(|s| s.is_active()));
    // Predict, then run; runs wait for the reader's pick. (The embed app leaves predictions out:
    // an embed with `predict=1` is served the full app.)
    #[cfg(not(feature = "embed"))]
    let (predicting, unpicked) = {
        let (view, waiting) =
            super::predict::asked(scenario.predict.clone().filter(|_| predict), chosen, state, active);
        (view, move || waiting.get())
    };
    #[cfg(feature = "embed")]
    let (predicting, unpicked) = {
        let _ = predict;
        ((), || false)
    };

    let start = {
        let id = id.clone();
        move |mode: Mode| {
            stepping.set(mode == Mode::Step);
            socket.start(&id, &chosen.get_untracked(), mode);
        }
    };
    if autoplay && !blocked && !untrack(unpicked) {
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

    let connected = move || socket.link.get() == Link::Open;
    let run = {
        let start = start.clone();
        move |_| start(Mode::Auto)
    };
    let step_run = move |_| start(Mode::Step);
    let next = move |_| socket.next();
    let cancel = move |_| socket.cancel();

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
    let (embed_code, teach) = {
        let variant = Signal::derive(move || chosen.get());
        (
            (chrome == Chrome::Full).then(|| view! { <EmbedCode scenario=id.clone() variant=variant /> }),
            (chrome == Chrome::Full).then(|| view! { <TeachThis scenario=id.clone() variant=variant /> }),
        )
    };
    // The embed app has no full page, so no embed code or room to offer.
    #[cfg(feature = "embed")]
    let (embed_code, teach) = ((), ());
    let compare_link = (chrome == Chrome::Full && scenario.variants.len() > 1 && !is_load_test).then(|| {
        view! { <a class="rl-compare-link" href=format!("/lab/{id}/compare")>"Compare all variants side by side"</a> }
    });

    view! {
        <div class="rl-run-panel" data-variant=move || chosen.get()>
            {down_notice}
            {tabs}
            {predicting}
            <div class="rl-controls">
                <button class="rl-run" on:click=run disabled=move || blocked || active.get() || !connected() || unpicked()>"Run"</button>
                {(chrome != Chrome::Column && steppable).then(|| view! {
                    <button class="rl-step" on:click=step_run disabled=move || blocked || active.get() || !connected() || unpicked()>
                        "Step"
                    </button>
                })}
                {move || (stepping.get() && active.get()).then(|| {
                    // Enabled only while the run waits for it: a click before then would be lost.
                    view! { <button class="rl-next" on:click=next disabled=move || state.with(|s| s.next_step.is_none())>"Next step"</button> }
                })}
                {move || active.get().then(|| view! { <button class="rl-cancel" on:click=cancel>"Cancel"</button> })}
                {compare_link}
                {teach}
                {(!is_load_test && chrome != Chrome::Column).then(|| view! { <ViewToggle compact=compact /> })}
            </div>
            <RunView socket=socket is_load_test=Signal::stored(is_load_test) compact=compact />
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
