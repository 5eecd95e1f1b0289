//! `/write` and `/s/{id}`: write your own race in PostgreSQL's isolation-tester format, see it
//! read as you type, save it (immutable, at `/s/<id>`), and run it here like any scenario: one
//! permutation at a time, stepped, or every permutation as a matrix.

use crate::api::{fetch_json, post_text};
use crate::components::error_view::{ErrorView, loading};
use crate::components::run_panel::{Chrome, RunEnded, RunPanel};
use crate::components::spec_editor::{Reading, SpecEditor, read};
use crate::route::{Autoplay, Opening};
use leptos::prelude::*;
use shared::Outcome;
use shared::catalog::ScenarioStatus;
use shared::json::{FromJson, Json, JsonError};
use shared::run_state::{Phase, RunState};
use shared::spec::Pos;

/// A saved spec, as `POST /api/specs` and `GET /api/specs/{id}` answer.
#[derive(Clone, Debug)]
pub struct Saved {
    pub id: String,
    pub text: String,
    pub scenario: ScenarioStatus,
}

impl FromJson for Saved {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(Saved {
            id: json.get("id")?,
            text: json.get("text")?,
            scenario: json.get("scenario")?,
        })
    }
}

/// `GET /api/runs/{id}/spec`'s answer.
#[derive(Clone)]
struct RunSpec(String);

impl FromJson for RunSpec {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(RunSpec(json.get("text")?))
    }
}

/// `/write`: the editor with the starter spec (the isolation lab's write skew), or a lab's run
/// opened as a spec: `?run=<id>`, or `?scenario=<lab/scenario>&variant=<v>`.
#[component]
pub fn WritePage() -> impl IntoView {
    let query = crate::api::location().1;
    let from = match (
        crate::route::query_param(&query, "run"),
        crate::route::query_param(&query, "scenario"),
    ) {
        (Some(run), _) => format!("/api/runs/{run}/spec"),
        (None, Some(scenario)) => {
            let variant = crate::route::query_param(&query, "variant").unwrap_or_default();
            format!("/api/scenarios/{scenario}/spec?variant={variant}")
        }
        (None, None) => return view! { <Writer text=shared::spec::STARTER.to_owned() saved=None /> }.into_any(),
    };
    let found = crate::api::fetched(async move { fetch_json::<RunSpec>(&from).await });
    view! {
        {move || found.get().map(|result| match result {
            Err(message) => view! { <ErrorView message=message /> }.into_any(),
            Ok(RunSpec(text)) => view! { <Writer text=text saved=None /> }.into_any(),
        }).unwrap_or_else(|| loading("Opening the run as a spec…"))}
    }
    .into_any()
}

/// `/s/{id}`: a saved spec, loaded into the editor, its run panel ready.
#[component]
pub fn SpecPage(id: String) -> impl IntoView {
    let found = crate::api::fetched(async move { fetch_json::<Saved>(&format!("/api/specs/{id}")).await });
    view! {
        {move || found.get().map(|result| match result {
            Err(message) => view! { <ErrorView message=message /> }.into_any(),
            Ok(saved) => view! { <Writer text=saved.text.clone() saved=Some(saved) /> }.into_any(),
        }).unwrap_or_else(|| loading("Loading the spec…"))}
    }
}

#[component]
fn Writer(text: String, saved: Option<Saved>) -> impl IntoView {
    let text = RwSignal::new(text);
    // Where a run of a text failed (a setup the database refused): marked in the editor like a
    // line the parser refused, until the text changes.
    let failed = RwSignal::new(None::<(String, Pos, String)>);
    let reading = Memo::new(move |_| {
        text.with(|t| {
            failed.with(|f| match f {
                Some((ran, at, why)) if ran == t => Reading::Problem {
                    at: *at,
                    message: why.clone(),
                },
                _ => read(t),
            })
        })
    });
    let saved = RwSignal::new(saved);
    let refused = RwSignal::new(None::<String>);
    let saving = RwSignal::new(false);
    // Saved by "Save and run" here (not opened from its link): its panel runs it, once the
    // reader has picked where it asks.
    let just_saved = RwSignal::new(false);
    // Edited since it was saved: the panel below plays the saved text, not this one.
    let edited = move || saved.with(|s| s.as_ref().is_some_and(|s| text.with(|t| *t != s.text)));
    let save = move |_| {
        let body = text.get_untracked();
        saving.set(true);
        leptos::task::spawn_local(async move {
            match post_text::<Saved>("/api/specs", &body).await {
                Ok(answer) => {
                    refused.set(None);
                    crate::api::go_quietly(&format!("/s/{}", answer.id));
                    saved.set(Some(answer));
                    just_saved.set(true);
                }
                Err(message) => refused.set(Some(message)),
            }
            saving.set(false);
        });
    };
    let cannot_save = move || {
        saving.get() || matches!(reading.get(), Reading::Problem { .. }) || (saved.with(Option::is_some) && !edited())
    };
    provide_context(RunEnded(Callback::new(move |run: RunState| {
        mark_where_it_failed(&run, saved, failed, just_saved);
    })));
    let panel = move || saved.get().map(|s| saved_panel(s, just_saved.get_untracked()));
    view! {
        <article class="rl-write">
            <h1>"Write your own race"</h1>
            <p class="rl-explain">
                "Sessions, their steps, and the orders to play them in, in the format PostgreSQL tests its own concurrency with. "
                "racelab plays it on a real PostgreSQL or MariaDB, in a sandbox of its own, and shows who waited for whom, what failed, "
                "and whether your "<code>"# check:"</code>" lines held. "
                <a href="https://github.com/postgres/postgres/blob/master/src/test/isolation/README">"The format"</a>
                " · "<a href="/">"The labs"</a>
            </p>
            <DatabasePicker text=text />
            <SpecEditor text=text reading=reading />
            <div class="rl-write-actions">
                <button class="rl-spec-save" on:click=save disabled=cannot_save>
                    {move || if saved.with(Option::is_some) && !edited() { "Saved" } else { "Save and run" }}
                </button>
                {move || edited().then(|| view! { <span class="rl-spec-edited">"Edited since saved: the run below plays the saved spec."</span> })}
                {move || refused.get().map(|m| view! { <p class="rl-spec-refused" role="alert">{m}</p> })}
            </div>
            {panel}
        </article>
    }
}

/// Where the spec plays: PostgreSQL, or MariaDB (its SQL then MariaDB's). Read from the text's
/// `# database:` line, and picked by writing it ([`shared::spec::with_database`]): the text
/// alone says where it plays, so its link and embed play there too.
#[component]
fn DatabasePicker(text: RwSignal<String>) -> impl IntoView {
    use shared::spec::Database;
    let on = Memo::new(move |_| text.with(|t| shared::spec::database_of(t)));
    let pick = |database: Database, label: &'static str| {
        view! {
            <button class="rl-database" data-database=label
                aria-pressed=move || (on.get() == database).to_string()
                on:click=move |_| text.update(|t| *t = shared::spec::with_database(t, database))>
                {label}
            </button>
        }
    };
    view! {
        <div class="rl-databases rl-spec-database" role="group" aria-label="Where it plays">
            {pick(Database::Postgresql, "PostgreSQL")}
            {pick(Database::Mariadb, "MariaDB")}
        </div>
    }
}

/// A run of the saved spec that failed where its text says (a setup the database refused) marks
/// that line in the editor, with the SQLSTATE. One "Save and run" just saved is not kept as a
/// link: the page goes back to the editor, the spec unsaved, to be fixed and saved again.
fn mark_where_it_failed(
    run: &RunState,
    saved: RwSignal<Option<Saved>>,
    failed: RwSignal<Option<(String, Pos, String)>>,
    just_saved: RwSignal<bool>,
) {
    if !matches!(run.phase, Phase::Finished(Outcome::Failed { .. })) {
        return;
    }
    let Some(ran) = saved.with_untracked(|s| s.as_ref().map(|s| s.text.clone())) else {
        return;
    };
    let Some((at, why)) = shared::spec::failed_at(&ran, &run.events) else {
        return;
    };
    failed.set(Some((ran, at, why)));
    if just_saved.get_untracked() {
        just_saved.set(false);
        // Not from inside the panel's own effect, which this takes away.
        leptos::task::spawn_local(async move {
            saved.set(None);
            crate::api::go_quietly("/write");
        });
    }
}

/// A saved spec: its link, its title and hook, and its run panel at the permutation its address
/// names (`?variant=p2`, `every`: a link keeps it). A spec asks its question, if it has one;
/// "Save and run" (`just_saved`) runs it, once picked.
fn saved_panel(s: Saved, just_saved: bool) -> impl IntoView {
    let origin = crate::api::origin();
    let query = crate::api::location().1;
    let first = s
        .scenario
        .scenario
        .variant_or_first(crate::route::query_param(&query, "variant").as_deref());
    let opening = Opening {
        compact: crate::api::narrow_screen(),
        autoplay: if just_saved { Autoplay::OnLoad } else { Autoplay::Off },
        predict: s.scenario.scenario.predict.is_some(),
        ..Opening::from_query(&query)
    };
    view! {
        <section class="rl-spec-saved" data-spec=s.id.clone()>
            <p class="rl-spec-link">
                "Saved at "
                <a href=format!("/s/{}", s.id)>{format!("{origin}/s/{}", s.id)}</a>
                ". A saved spec never changes: edit it and save again for a new link."
            </p>
            <h2>{s.scenario.scenario.title.clone()}</h2>
            <p class="rl-hook">{s.scenario.scenario.hook.clone()}</p>
            <RunPanel scenario=s.scenario.scenario.clone() down=s.scenario.down.clone() variant=first
                chrome=Chrome::Full opening=opening />
        </section>
    }
}
