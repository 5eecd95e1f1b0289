//! `/lab/{lab}/{scenario}/compare`: every variant side by side, started together, so the reader
//! sees READ COMMITTED, REPEATABLE READ and SERIALIZABLE diverge on the same steps.
//!
//! With `?versions=15,18` (and `variant=`), one variant on each PostgreSQL version instead, and
//! a line under them that says whether the versions' transcripts agree, and where they part.
//! With `?variants=serializable,mariadb-serializable`, only those variants, in that order: the
//! same race on PostgreSQL and on MariaDB side by side.

use super::{Found, load_scenario};
use crate::components::error_view::{ErrorView, loading};
use crate::components::run_panel::{Chrome, Columns, RunPanel};
use crate::route::{Autoplay, Opening, query_param};
use leptos::prelude::*;

#[component]
pub fn ComparePage(id: String) -> impl IntoView {
    let found = load_scenario(id);
    let run_all = RwSignal::new(0u32);
    let query = crate::api::location().1;
    let versions: Vec<String> = query_param(&query, "versions")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .map(str::to_owned)
        .collect();
    let wanted = query_param(&query, "variant");
    let only: Vec<String> = query_param(&query, "variants")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .collect();
    view! {
        {move || found.get().map(|result| match result {
            Err(message) => view! { <ErrorView message=message /> }.into_any(),
            Ok(found) if versions.len() > 1 => {
                let variant = found.variant_or_first(wanted.as_deref());
                across_versions(&found, &variant, &versions, run_all).into_any()
            }
            Ok(found) => every_variant(&found, &only, run_all).into_any(),
        }).unwrap_or_else(|| loading("Loading…"))}
    }
}

/// How each column opens: playing at once.
fn column() -> Opening {
    Opening {
        autoplay: Autoplay::OnLoad,
        ..Opening::default()
    }
}

/// One column per variant: every one on the scenario's first database, or those `only` names
/// (in its order) where it names any the scenario has.
fn every_variant(found: &Found, only: &[String], run_all: RwSignal<u32>) -> impl IntoView + use<> {
    provide_context(Columns { run_all, told: None });
    let picked: Vec<&shared::VariantInfo> = only.iter().filter_map(|id| found.scenario.variant(id)).collect();
    // Every variant of one database: the first's (PostgreSQL's), unless `only` names others.
    let first = found.scenario.variants.first().map(shared::VariantInfo::database);
    let (shown, heading) = match picked.len() {
        0 => (
            found
                .scenario
                .variants
                .iter()
                .filter(|v| Some(v.database()) == first)
                .collect(),
            "every variant".to_owned(),
        ),
        _ => {
            let labels: Vec<&str> = picked.iter().map(|v| v.label.as_str()).collect();
            (picked, labels.join(" beside "))
        }
    };
    let columns = shown
        .into_iter()
        .map(|variant| {
            view! {
                <div class="rl-compare-col" data-variant=variant.id.clone()>
                    <h2>{variant.label.clone()}</h2>
                    <p class="rl-variant-about">{variant.description.clone()}</p>
                    <RunPanel
                        scenario=found.scenario.clone()
                        down=found.down.clone()
                        variant=variant.id.clone()
                        chrome=Chrome::Column
                        opening=column()
                    />
                </div>
            }
        })
        .collect_view();
    view! {
        <article class="rl-scenario rl-scenario--compare" data-scenario=found.scenario.id.clone()>
            <h1>{format!("{}: {heading}", found.scenario.title)}</h1>
            <p class="rl-explain">{found.scenario.about.clone()}</p>
            {controls(&found.scenario.id, run_all)}
            <div class="rl-compare">{columns}</div>
        </article>
    }
}

/// One column per PostgreSQL version, each playing `variant`, and whether their transcripts
/// agree once both are done.
fn across_versions(found: &Found, variant: &str, versions: &[String], run_all: RwSignal<u32>) -> impl IntoView + use<> {
    let label = found
        .scenario
        .variant(variant)
        .map_or_else(|| variant.to_owned(), |v| v.label.clone());
    // Each column's latest completed transcript, in the columns' order.
    let transcripts = RwSignal::new(vec![None::<String>; versions.len()]);
    let majors = versions.to_vec();
    let told = Callback::new(move |(major, text): (String, String)| {
        if let Some(i) = majors.iter().position(|m| *m == major) {
            transcripts.update(|t| t[i] = Some(text));
        }
    });
    provide_context(Columns {
        run_all,
        told: Some(told),
    });
    let columns = versions
        .iter()
        .map(|major| {
            view! {
                <div class="rl-compare-col" data-postgres=major.clone()>
                    <h2>{format!("PostgreSQL {major}")}</h2>
                    <p class="rl-variant-about">{label.clone()}</p>
                    <RunPanel
                        scenario=found.scenario.clone()
                        down=found.down.clone()
                        variant=variant.to_owned()
                        chrome=Chrome::Column
                        opening=Opening { postgres: major.clone(), ..column() }
                    />
                </div>
            }
        })
        .collect_view();
    let names = versions.to_vec();
    let agreement = move || {
        let done = transcripts.get();
        let [Some(first), rest @ ..] = done.as_slice() else {
            return None;
        };
        let mut parted = Vec::new();
        for (i, other) in rest.iter().enumerate() {
            let other = other.as_ref()?;
            if let Some((line, a, b)) = shared::versions::first_difference(first, other) {
                parted.push(format!(
                    "PostgreSQL {} and {} part at line {line}: “{a}” / “{b}”.",
                    names[0],
                    names[i + 1]
                ));
            }
        }
        let (class, text) = if parted.is_empty() {
            (
                "rl-versions-agree",
                "The transcripts are the same on every version.".to_owned(),
            )
        } else {
            ("rl-versions-differ", parted.join(" "))
        };
        Some(view! { <p class=class role="status">{text}</p> })
    };
    view! {
        <article class="rl-scenario rl-scenario--compare" data-scenario=found.scenario.id.clone()>
            <h1>{format!("{}: {label}, on each PostgreSQL version", found.scenario.title)}</h1>
            <p class="rl-explain">{found.scenario.about.clone()}</p>
            {controls(&found.scenario.id, run_all)}
            {agreement}
            <div class="rl-compare">{columns}</div>
        </article>
    }
}

fn controls(id: &str, run_all: RwSignal<u32>) -> impl IntoView + use<> {
    view! {
        <p class="rl-controls">
            <button class="rl-run-all" on:click=move |_| run_all.update(|n| *n += 1)>"Run all again"</button>
            " "
            <a href=format!("/lab/{id}")>"Back to the scenario"</a>
        </p>
    }
}
