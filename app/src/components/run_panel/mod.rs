//! One scenario's run, with its controls: variant tabs, Run / Step / Next / Cancel, the view
//! toggle, then the run itself ([`RunView`]). The scenario page, each compare column and the
//! embed are all this panel; what only the full app's pages add to it is in [`full_page`].

#[cfg(not(feature = "embed"))]
mod full_page;

use super::run_view::RunView;
use super::variant_picker::VariantPicker;
use super::view_toggle::ViewToggle;
use crate::api::{Link, RunSocket};
use crate::route::{Autoplay, Opening};
use leptos::prelude::*;
use shared::run_state::RunState;
use shared::{Mode, ScenarioInfo, Service};

#[cfg(not(feature = "embed"))]
pub use full_page::{Columns, RunEnded};

/// How much chrome a panel shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chrome {
    /// The scenario page: everything, plus embed code.
    #[cfg_attr(feature = "embed", allow(dead_code))]
    Full,
    /// A compare column: one fixed variant, no tabs, no embed code.
    Column,
    /// An iframe: tabs and controls, no embed code.
    Embed,
}

/// What the panel's parts share: its socket, and what the reader chose. Handles into Leptos'
/// arena, so it is `Copy` and every closure of the panel can hold it.
#[derive(Clone, Copy)]
struct Panel {
    socket: RunSocket,
    /// The scenario's id (`isolation/write-skew`, `spec/…`). It never changes: a signal only
    /// because the app holds strings in signals already, and a `StoredValue` of one would cost
    /// the embed 200 bytes.
    scenario: RwSignal<String>,
    chosen: RwSignal<String>,
    /// The PostgreSQL version runs play on (a major version, `"18"`); empty: the server's first.
    version: RwSignal<String>,
    /// Whether runs here are stepped: the last one started was (and, on the full page, the
    /// address said so on arrival).
    stepping: RwSignal<bool>,
    compact: RwSignal<bool>,
    chrome: Chrome,
    steppable: bool,
    is_load_test: bool,
}

impl Panel {
    fn state(self) -> RwSignal<RunState> {
        self.socket.state
    }

    /// Starts a run of the variant and version chosen, stepped or not.
    fn start(self, mode: Mode) {
        self.stepping.set(mode == Mode::Step);
        let (variant, version) = (self.chosen.get_untracked(), self.version.get_untracked());
        let scenario = self.scenario.get_untracked();
        self.socket.start_on(&scenario, &variant, mode, &version);
    }
}

#[component]
pub fn RunPanel(
    scenario: ScenarioInfo,
    /// Services the scenario's lab needs that are down: the panel says so and cannot run.
    down: Vec<Service>,
    variant: String,
    chrome: Chrome,
    /// How it opens, as its page's address asks (nothing: idle, detailed, not stepped). A
    /// compare column's run-all token comes by context ([`Columns`]).
    #[prop(optional)]
    opening: Opening,
) -> impl IntoView {
    let Opening {
        autoplay,
        step,
        compact,
        predict,
        postgres,
    } = opening;
    let steppable = scenario.steppable;
    let panel = Panel {
        socket: RunSocket::new(),
        scenario: RwSignal::new(scenario.id.clone()),
        chosen: RwSignal::new(variant),
        // An embed plays on the version its address names (`postgres=18`), picked by its author.
        version: RwSignal::new(postgres),
        stepping: RwSignal::new(step && steppable),
        compact: RwSignal::new(compact),
        chrome,
        steppable,
        is_load_test: scenario.workload,
    };
    let blocked = !down.is_empty();
    let active = Signal::derive(move || panel.state().with(RunState::is_active));
    // Predict, then run; runs wait for the reader's pick. (The embed app leaves predictions out:
    // an embed with `predict=1` is served the full app.)
    #[cfg(not(feature = "embed"))]
    let (predicting, unpicked) = full_page::question(panel, &scenario, predict, active);
    #[cfg(not(feature = "embed"))]
    let unpicked = move || unpicked.get();
    #[cfg(feature = "embed")]
    let (predicting, unpicked) = {
        let _ = predict;
        ((), || false)
    };
    if !blocked {
        autostart(
            panel,
            autoplay,
            if step && steppable { Mode::Step } else { Mode::Auto },
            unpicked,
        );
    }
    #[cfg(not(feature = "embed"))]
    let (beside, notice, below) = full_page::parts(panel, &scenario);
    #[cfg(feature = "embed")]
    let (beside, notice, below) = ((), (), ());
    let tabs = (chrome != Chrome::Column).then(|| {
        view! { <VariantPicker variants=scenario.variants.clone() chosen=panel.chosen disabled=active /> }
    });

    view! {
        <div class="rl-run-panel" data-variant=move || panel.chosen.get()>
            {down_notice(&down)}
            {tabs}
            {predicting}
            <RunView socket=panel.socket is_load_test=Signal::stored(panel.is_load_test) compact=panel.compact>
                {controls(panel, blocked, active, unpicked, (beside, notice))}
            </RunView>
            {below}
        </div>
    }
}

/// Starts the panel's first run as its address asks: at once, when the panel is first seen, or
/// not. A run asked for at once that waits for the reader's pick ("Save and run" on /write)
/// starts when they have picked, once.
fn autostart(panel: Panel, autoplay: Autoplay, mode: Mode, unpicked: impl Fn() -> bool + 'static) {
    if !untrack(&unpicked) {
        match autoplay {
            Autoplay::Off => {}
            Autoplay::OnLoad => panel.start(mode),
            Autoplay::WhenSeen => crate::api::when_seen(move || panel.start(mode)),
        }
    } else if autoplay == Autoplay::OnLoad {
        Effect::new(move |started: Option<bool>| {
            let now = started == Some(true) || !unpicked();
            if now && started == Some(false) {
                panel.start(mode);
            }
            now
        });
    }
}

/// What a lab whose services are down says instead of running.
fn down_notice(down: &[Service]) -> Option<impl IntoView + use<>> {
    (!down.is_empty()).then(|| {
        let names: Vec<&str> = down.iter().map(|s| s.label()).collect();
        view! {
            <p class="rl-down" role="alert">
                {format!("This lab needs {} and it is down right now, so it cannot run. The other labs still work.", names.join(" and "))}
            </p>
        }
    })
}

/// Run, Step, Next step and Cancel, what the full page offers beside them, the view toggle, and
/// the full page's notice under them.
fn controls(
    panel: Panel,
    blocked: bool,
    active: Signal<bool>,
    unpicked: impl Fn() -> bool + Copy + Send + Sync + 'static,
    (beside, notice): (impl IntoView, impl IntoView),
) -> impl IntoView {
    let socket = panel.socket;
    let stepping = panel.stepping;
    let steppable = panel.steppable;
    let cannot_start = move || blocked || active.get() || socket.link.get() != Link::Open || unpicked();
    view! {
        <div class="rl-controls">
            <button class="rl-run" class:rl-secondary=move || stepping.get() && steppable
                on:click=move |_| panel.start(Mode::Auto) disabled=cannot_start>"Run"</button>
            {(panel.chrome != Chrome::Column && steppable).then(|| view! {
                <button class="rl-step" class:rl-primary=move || stepping.get()
                    on:click=move |_| panel.start(Mode::Step) disabled=cannot_start>
                    "Step"
                </button>
            })}
            {move || (stepping.get() && active.get()).then(|| {
                // Enabled only while the run waits for it: a click before then would be lost.
                view! {
                    <button class="rl-next" on:click=move |_| socket.next()
                        disabled=move || socket.state.with(|s| s.next_step.is_none())>"Next step"</button>
                }
            })}
            {move || active.get().then(|| view! { <button class="rl-cancel" on:click=move |_| socket.cancel()>"Cancel"</button> })}
            {beside}
            {(!panel.is_load_test && panel.chrome != Chrome::Column).then(|| view! { <ViewToggle compact=panel.compact /> })}
            {notice}
        </div>
    }
}
