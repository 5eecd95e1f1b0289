//! One scenario's run, with its controls: variant tabs, Run / Step / Next / Cancel, the view
//! toggle, then the run itself ([`RunView`]). The scenario page, each compare column and the
//! embed are all this panel.

#[cfg(not(feature = "embed"))]
use super::embed_code::EmbedCode;
use super::run_view::RunView;
#[cfg(not(feature = "embed"))]
use super::teach::TeachThis;
use super::variant_picker::VariantPicker;
use super::view_toggle::ViewToggle;
use crate::api::{Link, RunSocket};
use crate::route::Autoplay;
use leptos::prelude::*;
use shared::{Mode, ScenarioInfo, Service};

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

#[component]
pub fn RunPanel(
    scenario: ScenarioInfo,
    /// Services the scenario's lab needs that are down: the panel says so and cannot run.
    down: Vec<Service>,
    variant: String,
    chrome: Chrome,
    #[prop(optional)] autoplay: Autoplay,
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
    /// The PostgreSQL version runs play on (a major version, `"18"`); empty: the server's first.
    /// The full page lets the reader pick it.
    #[prop(optional)]
    postgres: String,
    /// For compare across versions: told each completed run's transcript.
    #[prop(optional)]
    on_transcript: Option<Callback<String>>,
) -> impl IntoView {
    let socket = RunSocket::new();
    let state = socket.state;
    let chosen = RwSignal::new(variant);
    // An embed plays on the version its address names (`postgres=18`), picked by its author.
    let version = RwSignal::new(postgres);
    let id = scenario.id.clone();
    let is_load_test = scenario.workload;
    let steppable = scenario.steppable;
    let blocked = !down.is_empty();
    // Whether runs here are stepped: the last one started was (and, on the full page, the
    // address said so on arrival).
    let stepping = RwSignal::new(step && steppable);
    let compact = RwSignal::new(compact);
    let active = Signal::derive(move || state.with(|s| s.is_active()));
    // Predict, then run; runs wait for the reader's pick. (The embed app leaves predictions out:
    // an embed with `predict=1` is served the full app.)
    #[cfg(not(feature = "embed"))]
    let (predicting, unpicked) = {
        let variants = scenario.variants.clone();
        let label = Signal::derive(move || {
            let id = chosen.get();
            variants.iter().find(|v| v.id == id).map_or(id, |v| v.label.clone())
        });
        let (view, waiting) = super::predict::asked(
            scenario.predict.clone().filter(|_| predict),
            chosen,
            label,
            state,
            active,
        );
        // A reader's spec run at every permutation answers no one question: it waits for no pick.
        (view, move || waiting.get() && chosen.get() != "every")
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
            socket.start_on(&id, &chosen.get_untracked(), mode, &version.get_untracked());
        }
    };
    let mode = if step && steppable { Mode::Step } else { Mode::Auto };
    if !blocked && !untrack(unpicked) {
        match autoplay {
            Autoplay::Off => {}
            Autoplay::OnLoad => start(mode),
            Autoplay::WhenSeen => {
                let start = start.clone();
                crate::api::when_seen(move || start(mode));
            }
        }
    } else if !blocked && autoplay == Autoplay::OnLoad {
        // A run asked for at once that waits for the reader's pick ("Save and run" on /write):
        // it starts when they have picked, once.
        let start = start.clone();
        Effect::new(move |started: Option<bool>| {
            let now = started == Some(true) || !unpicked();
            if now && started == Some(false) {
                start(mode);
            }
            now
        });
    }
    // Compare's columns only: the embed app has no compare page.
    #[cfg(feature = "embed")]
    let _ = (run_all, on_transcript);
    #[cfg(not(feature = "embed"))]
    if let Some(told) = on_transcript {
        Effect::new(move |_| {
            let completed =
                state.with(|s| matches!(s.phase, shared::run_state::Phase::Finished(shared::Outcome::Completed)));
            if completed {
                told.run(state.with_untracked(|s| s.transcript()));
            }
        });
    }
    #[cfg(not(feature = "embed"))]
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
    // A reader's spec run at "every permutation": the matrix, each row opening its own run.
    #[cfg(not(feature = "embed"))]
    let matrix = {
        let start = start.clone();
        let open = Callback::new(move |index: u32| {
            chosen.set(format!("p{}", index + 1));
            start(Mode::Auto);
        });
        move || (chosen.get() == "every").then(|| view! { <super::matrix::Matrix state=state open=open /> })
    };
    #[cfg(feature = "embed")]
    let matrix = ();

    // The isolation lab's races are plain SQL sessions: each opens in the spec editor, the run
    // just played if there is one, else the variant chosen (written from a run of it).
    #[cfg(not(feature = "embed"))]
    let open_as_spec = {
        let sql_lab = id.starts_with("isolation/") && !is_load_test && chrome == Chrome::Full;
        let scenario = id.clone();
        move || {
            sql_lab.then(|| {
                let finished =
                    state.with(|s| matches!(s.phase, shared::run_state::Phase::Finished(shared::Outcome::Completed)));
                let href = match state.with(|s| s.run_id.clone()).filter(|_| finished) {
                    Some(run) => format!("/write?run={run}"),
                    None => format!("/write?scenario={scenario}&variant={}", chosen.get()),
                };
                view! { <a class="rl-open-spec" href=href>"Open as a spec"</a> }
            })
        }
    };
    #[cfg(feature = "embed")]
    let open_as_spec = ();
    // A finished run on its own page saves as a recording; a load test's thousand requests do not.
    #[cfg(not(feature = "embed"))]
    let download =
        (chrome == Chrome::Full && !is_load_test).then(|| view! { <super::download::DownloadRecording state=state /> });
    #[cfg(feature = "embed")]
    let download = ();
    // Where there is no Step, the full page says why, and what the reader can do instead.
    #[cfg(not(feature = "embed"))]
    let no_step = (chrome == Chrome::Full && !steppable).then(|| {
        let why = match is_load_test {
            true => "No Step here: a workload runs free, thousands of requests with no order to pause between.",
            false => {
                "No Step here: what happens depends on timing racelab does not hold (which waiter PostgreSQL's \
                 deadlock check picks, a process killed mid-flight, a timer running out), so the race plays \
                 at its own pace. Once it has, ◀ and ▶ above the timeline go through it a statement at a time."
            }
        };
        view! { <p class="rl-notice rl-no-step">{why}</p> }
    });
    #[cfg(feature = "embed")]
    let no_step = ();
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
    let (embed_code, teach, compare_link, version_picker, played_on) = {
        let variant = Signal::derive(move || chosen.get());
        let full = chrome == Chrome::Full;
        let comparable = full && scenario.variants.len() > 1 && !is_load_test;
        let played_on = view! { <super::version_picker::PlayedOn state=state /> };
        // The version runs play on, and a link to play this variant on each, side by side.
        let versions = full.then(super::version_picker::load_versions);
        let version_picker = versions.map(|versions| {
            let id = id.clone();
            let compare_versions = move || {
                let versions = versions.get().flatten().filter(|v| v.len() > 1 && !is_load_test)?;
                let majors: Vec<String> = versions.iter().map(|(major, _)| major.to_string()).collect();
                let href = format!("/lab/{id}/compare?variant={}&versions={}", chosen.get(), majors.join(","));
                Some(view! { <a class="rl-compare-versions" href=href>{format!("Compare on PostgreSQL {}", majors.join(" and "))}</a> })
            };
            view! {
                <super::version_picker::VersionPicker chosen=version versions=versions disabled=active />
                {compare_versions}
            }
        });
        (
            versions.map(|versions| {
                view! { <EmbedCode scenario=scenario.clone() variant=variant version=version.into() versions=versions /> }
            }),
            full.then(|| view! { <TeachThis scenario=id.clone() variant=variant version=version.into() /> }),
            comparable.then(|| {
                view! { <a class="rl-compare-link" href=format!("/lab/{id}/compare")>"Compare all variants side by side"</a> }
            }),
            version_picker,
            played_on,
        )
    };
    // The embed app has no full page, so no embed code, room, compare page or version to pick
    // (an embed's title says the version its author picked).
    #[cfg(feature = "embed")]
    let (embed_code, teach, compare_link, version_picker, played_on) = ((), (), (), (), ());

    // The full page keeps its state in its address (a reload or a shared link lands on the same
    // variant, view and pace) and takes the stepping keys.
    #[cfg(not(feature = "embed"))]
    if chrome == Chrome::Full {
        super::keys::on_step_keys(socket);
        Effect::new(move |_| {
            let view = if compact.get() { "compact" } else { "detailed" };
            let mode = if stepping.get() { "step" } else { "" };
            crate::api::replace_query(&[
                ("variant", &chosen.get()),
                ("view", view),
                ("mode", mode),
                ("postgres", &version.get()),
            ]);
        });
    }

    view! {
        <div class="rl-run-panel" data-variant=move || chosen.get()>
            {down_notice}
            {tabs}
            {predicting}
            <RunView socket=socket is_load_test=Signal::stored(is_load_test) compact=compact>
            <div class="rl-controls">
                <button class="rl-run" class:rl-secondary=move || stepping.get() && steppable
                    on:click=run disabled=move || blocked || active.get() || !connected() || unpicked()>"Run"</button>
                {(chrome != Chrome::Column && steppable).then(|| view! {
                    <button class="rl-step" class:rl-primary=move || stepping.get()
                        on:click=step_run disabled=move || blocked || active.get() || !connected() || unpicked()>
                        "Step"
                    </button>
                })}
                {move || (stepping.get() && active.get()).then(|| {
                    // Enabled only while the run waits for it: a click before then would be lost.
                    view! { <button class="rl-next" on:click=next disabled=move || state.with(|s| s.next_step.is_none())>"Next step"</button> }
                })}
                {move || active.get().then(|| view! { <button class="rl-cancel" on:click=cancel>"Cancel"</button> })}
                {compare_link}
                {version_picker}
                {played_on}
                {open_as_spec}
                {download}
                {teach}
                {(!is_load_test && chrome != Chrome::Column).then(|| view! { <ViewToggle compact=compact /> })}
                {no_step}
            </div>
            </RunView>
            {matrix}
            {embed_code}
        </div>
    }
}
