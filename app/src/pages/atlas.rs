//! `/atlas`: the anomaly atlas, as this server's PostgreSQL plays it. A row per anomaly, a
//! column per isolation level; each cell is what its run did (the server judged it from the run
//! alone) and opens that run, and the spec it played, which a reader can fork.

use crate::api::{fetch_json, fetched};
use crate::components::error_view::{ErrorView, loading};
use leptos::prelude::*;
use shared::atlas::{Cell, Observation, ObservedCell, ObservedRow};

#[component]
pub fn AtlasPage() -> impl IntoView {
    let observed = fetched(fetch_json::<Observation>("/api/atlas"));
    view! {
        <article class="rl-atlas">
            <h1>"The anomaly atlas"</h1>
            <p class="rl-explain">
                "Each classic anomaly, written as a race on a table of two rows, played just now at each isolation "
                "level on this server's PostgreSQL. A cell is what its run did: the anomaly appeared (its proof found "
                "the cycle), or PostgreSQL prevented it by refusing a step, by making one wait, or because no "
                "snapshot ever showed it. Open a cell to see its run and why; open its spec to change it."
            </p>
            {move || observed.get().map(|result| match result {
                Err(message) => view! { <ErrorView message=message /> }.into_any(),
                Ok(observation) => view! { <Matrix observation=observation /> }.into_any(),
            }).unwrap_or_else(|| loading("Playing the atlas on this server (39 runs)…"))}
        </article>
    }
}

#[component]
fn Matrix(observation: Observation) -> impl IntoView {
    let levels: Vec<String> = observation
        .rows
        .first()
        .map(|r| r.cells.iter().map(|c| c.level.clone()).collect())
        .unwrap_or_default();
    let notes: Vec<String> = observation
        .rows
        .iter()
        .flat_map(|row| {
            row.cells.iter().filter_map(move |c| {
                c.instead.map(|a| {
                    format!(
                        "{} at {}: the same run showed a {} ({}).",
                        row.name,
                        c.level,
                        a.name(),
                        a.class()
                    )
                })
            })
        })
        .collect();
    let rows = observation
        .rows
        .into_iter()
        .map(|row| view! { <Row row=row /> })
        .collect_view();
    view! {
        <p class="rl-atlas-observed">
            "Observed on " <strong>{observation.server}</strong> " at " {observation.observed_at} "."
        </p>
        <div class="rl-atlas-scroll">
            <table class="rl-atlas-matrix">
                <thead>
                    <tr>
                        <th scope="col">"Anomaly"</th>
                        {levels.into_iter().map(|l| view! { <th scope="col">{l}</th> }).collect_view()}
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
        <ul class="rl-atlas-legend">
            <li data-kind="allowed">"✗ allowed: the run's proof found the anomaly"</li>
            <li data-kind="refused">"✓ error: PostgreSQL refused a step, with this SQLSTATE"</li>
            <li data-kind="waited">"✓ waits: a step waited for another's lock, then saw its result"</li>
            <li data-kind="unseen">"✓ not seen: no reader's snapshot showed it"</li>
        </ul>
        {(!notes.is_empty()).then(|| view! {
            <ul class="rl-atlas-notes">
                {notes.into_iter().map(|n| view! { <li>"* " {n}</li> }).collect_view()}
            </ul>
        })}
    }
}

#[component]
fn Row(row: ObservedRow) -> impl IntoView {
    let cells = row
        .cells
        .into_iter()
        .map(|c| view! { <CellView cell=c /> })
        .collect_view();
    view! {
        <tr class="rl-atlas-row" data-entry=row.id>
            <th scope="row">
                <span class="rl-atlas-class">{row.class}</span>
                " "
                <span class="rl-atlas-name">{row.name}</span>
            </th>
            {cells}
        </tr>
    }
}

/// The symbol and words of a cell: never its colour alone.
fn label(cell: &Cell) -> (&'static str, &'static str, String) {
    match cell {
        Cell::Allowed { .. } => ("allowed", "✗", "allowed".to_owned()),
        Cell::Refused { code } => ("refused", "✓", format!("error {code}")),
        Cell::Waited => ("waited", "✓", "waits".to_owned()),
        Cell::Unseen => ("unseen", "✓", "not seen".to_owned()),
    }
}

#[component]
fn CellView(cell: ObservedCell) -> impl IntoView {
    let (kind, mark, words) = label(&cell.cell);
    let title = cell.cell.sentence();
    view! {
        <td class="rl-atlas-cell" data-kind=kind data-level=cell.level.clone() title=title>
            <a class="rl-atlas-run" href=format!("/runs/{}", cell.run_id)>
                <span aria-hidden="true">{mark} " "</span>
                {words}
                {cell.instead.is_some().then_some(" *")}
            </a>
            <a class="rl-atlas-spec" href=format!("/s/{}", cell.spec_id)>"spec"</a>
        </td>
    }
}
