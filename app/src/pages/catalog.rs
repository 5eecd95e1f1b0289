//! `/`: every lab and scenario, with a one-line hook and whether the services it needs are up.

use crate::api::{fetch_json, fetched};
use crate::components::error_view::{ErrorView, loading};
use leptos::prelude::*;
use shared::catalog::LabStatus;

#[component]
pub fn Catalog() -> impl IntoView {
    let labs = fetched(fetch_json::<Vec<LabStatus>>("/api/labs"));
    view! {
        <div class="rl-catalog">
            <h1>"Watch concurrency bugs happen"</h1>
            <p class="rl-explain">
                "Each scenario plays a few actors against a real PostgreSQL or Redis, step by step. Pick one, press Run, "
                "and see who waited for whom, which statement failed and why, and what the ledger ended up holding."
            </p>
            <p class="rl-write-link">
                <a href="/write">"Write your own race"</a>
                " in PostgreSQL's isolation-tester format, and watch it play on a real PostgreSQL."
            </p>
            <p class="rl-write-link">
                <a href="/atlas">"The anomaly atlas"</a>
                ": dirty writes to write skew, at each isolation level, as this server's PostgreSQL plays them."
            </p>
            <p class="rl-write-link">
                <a href="/lessons">"Prepare a lesson"</a>
                ": the races of a training session in one text file, each round's question answered by its run."
            </p>
            {move || labs.get().map(|result| match result {
                Err(message) => view! { <ErrorView message=message /> }.into_any(),
                Ok(labs) => labs.into_iter().map(|lab| view! { <LabCard lab=lab /> }).collect_view().into_any(),
            }).unwrap_or_else(|| loading("Loading the catalog…"))}
        </div>
    }
}

#[component]
fn LabCard(lab: LabStatus) -> impl IntoView {
    let services = lab
        .lab
        .services
        .iter()
        .map(|s| {
            let up = !lab.down.contains(s);
            view! {
                <span class="rl-service" data-service=format!("{s:?}").to_lowercase() data-up=up.to_string()>
                    {s.label()} {if up { " ✓ up" } else { " ✗ down" }}
                </span>
            }
        })
        .collect_view();
    let scenarios = lab
        .lab
        .scenarios
        .iter()
        .map(|s| {
            view! {
                <li>
                    <a class="rl-scenario-link" href=format!("/lab/{}", s.id)>{s.title.clone()}</a>
                    <p class="rl-hook">{s.hook.clone()}</p>
                </li>
            }
        })
        .collect_view();
    view! {
        <section class="rl-lab" data-lab=lab.lab.id.clone()>
            <h2>{lab.lab.title.clone()}</h2>
            <p class="rl-services">"Needs: " {services}</p>
            <ul class="rl-scenarios">{scenarios}</ul>
        </section>
    }
}
