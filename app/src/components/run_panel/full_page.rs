//! What the full app's pages add to a run panel, and the embed app leaves out to stay small:
//! the question before a run, the matrix of a spec's every permutation, "Open as a spec", the
//! recording to download, the version picker, the room, the embed code, the compare page's hold
//! on its columns, and the address kept in step with the panel.

use super::super::embed_code::EmbedCode;
use super::super::teach::TeachThis;
use super::super::version_picker::{PlayedOn, VersionPicker, Versions, load_versions};
use super::{Chrome, Panel};
use leptos::prelude::*;
use shared::catalog::{counterpart, database_of, databases};
use shared::run_state::{Phase, RunState};
use shared::spec::matrix::EVERY;
use shared::{Mode, Outcome, ScenarioInfo, Service};

/// The compare page's hold on its columns, given by context: each bump of `run_all` starts
/// every idle column's run, and each column's completed transcript is told, with the version
/// it played on (`told`, where the page compares versions).
#[derive(Clone, Copy)]
pub struct Columns {
    pub run_all: RwSignal<u32>,
    pub told: Option<Callback<(String, String)>>,
}

/// A page that wants each run its panel ends (/write, to mark where a spec's run failed), given
/// by context: told the run's state once it has ended.
#[derive(Clone, Copy)]
pub struct RunEnded(pub Callback<RunState>);

/// The scenario's question before a run, where the page's address asks for it (`predict=1`),
/// and whether runs wait for the reader's pick. A reader's spec run at every permutation
/// answers no one question: it waits for no pick.
pub(super) fn question(
    panel: Panel,
    scenario: &ScenarioInfo,
    predict: bool,
    active: Signal<bool>,
) -> (Option<impl IntoView + use<>>, Signal<bool>) {
    let chosen = panel.chosen;
    let variants = scenario.variants.clone();
    let label = Signal::derive(move || {
        let id = chosen.get();
        variants.iter().find(|v| v.id == id).map_or(id, |v| v.label.clone())
    });
    let asked = scenario.predict.clone().filter(|_| predict);
    let (view, waiting) = super::super::predict::asked(asked, chosen, label, panel.state(), active);
    (
        view,
        Signal::derive(move || waiting.get() && chosen.with(|v| v != EVERY)),
    )
}

/// What the full app adds: beside the buttons, the notice under them, and what goes below the
/// run (the matrix, the embed code). Sets the panel's own effects going on the way: the
/// compare page's, and the address kept in step.
pub(super) fn parts(
    panel: Panel,
    scenario: &ScenarioInfo,
) -> (impl IntoView + use<>, impl IntoView + use<>, impl IntoView + use<>) {
    follow_columns(panel);
    tell_each_end(panel);
    if panel.chrome == Chrome::Full {
        keep_in_address(panel);
    }
    // The versions racelab plays on: asked once, for the picker and the embed code.
    let versions = (panel.chrome == Chrome::Full).then(load_versions);
    let beside = view! {
        {compare_links(panel, scenario, versions)}
        <PlayedOn state=panel.state() />
        {open_as_spec(panel)}
        {(panel.chrome == Chrome::Full && !panel.is_load_test)
            .then(|| view! { <super::super::download::DownloadRecording state=panel.state() /> })}
        {(panel.chrome == Chrome::Full).then(|| {
            view! { <TeachThis scenario=scenario.id.clone() variant=panel.chosen.into() version=panel.version.into() /> }
        })}
    };
    let below = view! {
        {matrix(panel)}
        {versions.map(|versions| {
            view! { <EmbedCode scenario=scenario.clone() variant=panel.chosen.into() version=panel.version.into() versions=versions /> }
        })}
    };
    (beside, no_step(panel), below)
}

/// The compare page's link (every variant side by side), the version picker, and a link to play
/// this variant on each version side by side: the full page's.
fn compare_links(panel: Panel, scenario: &ScenarioInfo, versions: Option<Versions>) -> impl IntoView + use<> {
    let full = panel.chrome == Chrome::Full;
    let id = panel.scenario.get_untracked();
    let is_load_test = panel.is_load_test;
    let comparable = full && scenario.variants.len() > 1 && !is_load_test;
    let compare_variants = comparable.then(|| {
        // The chosen database's variants: PostgreSQL's are the page's own, MariaDB's named.
        let mariadb: Vec<String> = scenario
            .variants
            .iter()
            .filter(|v| v.database() == Service::Mariadb)
            .map(|v| v.id.clone())
            .collect();
        let id = id.clone();
        let href = move || match database_of(&panel.chosen.get()) {
            Service::Mariadb => format!("/lab/{id}/compare?variants={}", mariadb.join(",")),
            _ => format!("/lab/{id}/compare"),
        };
        view! { <a class="rl-compare-link" href=href>"Compare all variants side by side"</a> }
    });
    let compare_databases = (comparable && databases(&scenario.variants).len() > 1).then(|| {
        let variants = StoredValue::new(scenario.variants.clone());
        let id = id.clone();
        move || {
            let chosen = panel.chosen.get();
            let (postgres, mariadb) = variants.with_value(|all| {
                (
                    counterpart(all, &chosen, Service::Postgres).to_owned(),
                    counterpart(all, &chosen, Service::Mariadb).to_owned(),
                )
            });
            let href = format!("/lab/{id}/compare?variants={postgres},{mariadb}");
            view! { <a class="rl-compare-databases" href=href>"Compare on PostgreSQL and MariaDB"</a> }
        }
    });
    let active = Signal::derive(move || panel.state().with(RunState::is_active));
    let version_picker = versions.map(|versions| {
        let compare_versions = move || {
            let versions = versions.get().flatten().filter(|v| v.len() > 1 && !is_load_test)?;
            let majors: Vec<String> = versions.iter().map(|(major, _)| major.to_string()).collect();
            let href = format!("/lab/{id}/compare?variant={}&versions={}", panel.chosen.get(), majors.join(","));
            Some(view! { <a class="rl-compare-versions" href=href>{format!("Compare on PostgreSQL {}", majors.join(" and "))}</a> })
        };
        // Versions are PostgreSQL's: a variant on MariaDB plays on the one MariaDB.
        let on_postgres = move || database_of(&panel.chosen.get()) == Service::Postgres;
        move || {
            on_postgres().then(|| {
                view! {
                    <VersionPicker chosen=panel.version versions=versions disabled=active />
                    {compare_versions.clone()}
                }
            })
        }
    });
    (compare_variants, compare_databases, version_picker)
}

/// The isolation lab's races are plain SQL sessions: each opens in the spec editor, the run
/// just played if there is one, else the variant chosen (written from a run of it); a run on
/// MariaDB as a spec on MariaDB.
fn open_as_spec(panel: Panel) -> impl IntoView + use<> {
    let scenario = panel.scenario.get_untracked();
    let sql_lab = scenario.starts_with("isolation/") && !panel.is_load_test && panel.chrome == Chrome::Full;
    let state = panel.state();
    move || {
        sql_lab.then(|| {
            let finished = state.with(|s| matches!(s.phase, Phase::Finished(Outcome::Completed)));
            let href = match state.with(|s| s.run_id.clone()).filter(|_| finished) {
                Some(run) => format!("/write?run={run}"),
                None => format!("/write?scenario={scenario}&variant={}", panel.chosen.get()),
            };
            view! { <a class="rl-open-spec" href=href>"Open as a spec"</a> }
        })
    }
}

/// Where there is no Step, the full page says why, and what the reader can do instead.
fn no_step(panel: Panel) -> Option<impl IntoView + use<>> {
    (panel.chrome == Chrome::Full && !panel.steppable).then(|| {
        let why = match panel.is_load_test {
            true => "No Step here: a workload runs free, thousands of requests with no order to pause between.",
            false => {
                "No Step here: what happens depends on timing racelab does not hold (which waiter PostgreSQL's \
                 deadlock check picks, a process killed mid-flight, a timer running out), so the race plays \
                 at its own pace. Once it has, ◀ and ▶ above the timeline go through it a statement at a time."
            }
        };
        view! { <p class="rl-notice rl-no-step">{why}</p> }
    })
}

/// A reader's spec run at "every permutation": the matrix, each row opening its own run.
fn matrix(panel: Panel) -> impl IntoView + use<> {
    let open = Callback::new(move |index: u32| {
        panel.chosen.set(format!("p{}", index + 1));
        panel.start(Mode::Auto);
    });
    let state = panel.state();
    move || {
        panel
            .chosen
            .with(|v| v == EVERY)
            .then(|| view! { <super::super::matrix::Matrix state=state open=open /> })
    }
}

/// A compare column follows its page (the [`Columns`] context): it starts again at each bump of
/// the page's token, unless still playing, and tells the page each transcript it completes.
fn follow_columns(panel: Panel) {
    let Some(columns) = use_context::<Columns>().filter(|_| panel.chrome == Chrome::Column) else {
        return;
    };
    let state = panel.state();
    if let Some(told) = columns.told {
        Effect::new(move |_| {
            let completed = state.with(|s| matches!(s.phase, Phase::Finished(Outcome::Completed)));
            if completed {
                told.run((
                    panel.version.get_untracked(),
                    state.with_untracked(RunState::transcript),
                ));
            }
        });
    }
    let token = columns.run_all;
    let seen = StoredValue::new(token.get_untracked());
    Effect::new(move |_| {
        let now = token.get();
        // A panel still playing finishes its run; only idle panels start again.
        if now != seen.get_value() && !state.with_untracked(RunState::is_active) {
            seen.set_value(now);
            panel.start(Mode::Auto);
        }
    });
}

/// Tells the page (the [`RunEnded`] context, where it gives one) each run that ends, once.
fn tell_each_end(panel: Panel) {
    let Some(RunEnded(told)) = use_context::<RunEnded>() else {
        return;
    };
    let state = panel.state();
    let ended = Memo::new(move |_| state.with(|s| matches!(s.phase, Phase::Finished(_)).then(|| s.run_id.clone())));
    Effect::new(move |_| {
        if ended.get().is_some() {
            told.run(state.get_untracked());
        }
    });
}

/// The full page keeps its state in its address (a reload or a shared link lands on the same
/// variant, view and pace) and takes the stepping keys.
fn keep_in_address(panel: Panel) {
    super::super::keys::on_step_keys(panel.socket);
    Effect::new(move |_| {
        let view = if panel.compact.get() { "compact" } else { "detailed" };
        let mode = if panel.stepping.get() { "step" } else { "" };
        crate::api::replace_query(&[
            ("variant", &panel.chosen.get()),
            ("view", view),
            ("mode", mode),
            ("postgres", &panel.version.get()),
        ]);
    });
}
