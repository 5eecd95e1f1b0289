//! `/write` and `/s/{id}`: write your own race in PostgreSQL's isolation-tester format, see it
//! read as you type, save it (immutable, at `/s/<id>`), and run it here like any scenario: one
//! permutation at a time, stepped, or every permutation as a matrix.

use crate::api::{fetch_json, post_text};
use crate::components::error_view::{ErrorView, loading};
use crate::components::run_panel::{Chrome, RunPanel};
use crate::components::spec_editor::{Reading, SpecEditor, read};
use crate::route::{Autoplay, Opening};
use leptos::prelude::*;
use shared::catalog::ScenarioStatus;
use shared::json::{FromJson, Json, JsonError};

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
    let reading = Memo::new(move |_| text.with(|t| read(t)));
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
    let panel = move || saved.get().map(|s| saved_panel(s, just_saved.get_untracked()));
    view! {
        <article class="rl-write">
            <h1>"Write your own race"</h1>
            <p class="rl-explain">
                "Sessions, their steps, and the orders to play them in, in the format PostgreSQL tests its own concurrency with. "
                "racelab plays it on a real PostgreSQL, in a sandbox of its own, and shows who waited for whom, what failed, "
                "and whether your "<code>"# check:"</code>" lines held. "
                <a href="https://github.com/postgres/postgres/blob/master/src/test/isolation/README">"The format"</a>
                " · "<a href="/">"The labs"</a>
            </p>
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
