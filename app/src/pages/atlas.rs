//! `/atlas`: the anomaly atlas, as this server's PostgreSQL plays it. A row per anomaly, a
//! column per isolation level (and, where racelab plays on several PostgreSQL versions, one per
//! version under each level, a level whose versions disagree marked ≠); each cell is what its run did (the server judged it from the run
//! alone) and opens that run, and the spec it played, which a reader can fork.

use crate::api::{fetch_json, fetched};
use crate::components::error_view::{ErrorView, loading};
use leptos::prelude::*;
use shared::atlas::{Cell, Observation, ObservedCell, ObservedRow};
use shared::catalog::PostgresServer;
use shared::versions::short;

#[component]
pub fn AtlasPage() -> impl IntoView {
    let observed = fetched(observe_every_version());
    view! {
        <article class="rl-atlas">
            <h1>"The anomaly atlas"</h1>
            <p class="rl-explain">
                "Each classic anomaly, written as a race on a table of two rows, played just now at each isolation "
                "level on this server's PostgreSQL (on each of its versions, side by side). A cell is what its run "
                "did: the anomaly appeared (its proof found the cycle), or PostgreSQL prevented it by refusing a "
                "step, by making one wait, or because no snapshot ever showed it. Open a cell to see its run and "
                "why; open its spec to change it."
            </p>
            {move || observed.get().map(|result| match result {
                Err(message) => view! { <ErrorView message=message /> }.into_any(),
                Ok(observations) => view! { <Matrix observations=observations /> }.into_any(),
            }).unwrap_or_else(|| loading("Playing the atlas on this server (39 runs a version)…"))}
        </article>
    }
}

/// The atlas on every version racelab plays on (one after another: each is 39 runs), the
/// server's first version first.
async fn observe_every_version() -> Result<Vec<Observation>, String> {
    let servers = fetch_json::<Vec<PostgresServer>>("/api/servers")
        .await
        .unwrap_or_default();
    let versions = shared::versions::versions(&servers);
    if versions.len() < 2 {
        return Ok(vec![fetch_json::<Observation>("/api/atlas").await?]);
    }
    let mut observations = Vec::new();
    for (major, _) in versions {
        observations.push(fetch_json::<Observation>(&format!("/api/atlas?postgres={major}")).await?);
    }
    Ok(observations)
}

#[component]
fn Matrix(observations: Vec<Observation>) -> impl IntoView {
    let Some(first) = observations.first() else {
        return view! { <ErrorView message="the atlas came back empty".to_owned() /> }.into_any();
    };
    let levels: Vec<String> = first
        .rows
        .first()
        .map(|r| r.cells.iter().map(|c| c.level.clone()).collect())
        .unwrap_or_default();
    let servers: Vec<String> = observations.iter().map(|o| short(&o.server).to_owned()).collect();
    let observed_at = first.observed_at.clone();
    let versions = observations.len();
    let notes: Vec<String> = observations
        .iter()
        .flat_map(|observation| {
            let on = if versions > 1 {
                format!(" on {}", short(&observation.server))
            } else {
                String::new()
            };
            observation.rows.iter().flat_map(move |row| {
                let on = on.clone();
                row.cells.iter().filter_map(move |c| {
                    c.instead.map(|a| {
                        format!(
                            "{} at {}{on}: the same run showed a {} ({}).",
                            row.name,
                            c.level,
                            a.name(),
                            a.class()
                        )
                    })
                })
            })
        })
        .collect();
    // Row by row, each level's cell on every version side by side.
    let rows = first
        .rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let by_level: Vec<Vec<(String, ObservedCell)>> = (0..levels.len())
                .map(|j| {
                    observations
                        .iter()
                        .filter_map(|o| {
                            let cell = o.rows.get(i)?.cells.get(j)?.clone();
                            let major = shared::versions::major_of(&o.server).unwrap_or(0).to_string();
                            Some((major, cell))
                        })
                        .collect()
                })
                .collect();
            view! { <Row row=row.clone() by_level=by_level /> }
        })
        .collect_view();
    let heads = levels
        .into_iter()
        .map(|l| view! { <th scope="colgroup" colspan=versions.to_string()>{l}</th> })
        .collect_view();
    let version_heads = (versions > 1).then(|| {
        let per_level = first.rows.first().map_or(0, |r| r.cells.len());
        view! {
            <tr class="rl-atlas-versions">
                {(0..per_level)
                    .flat_map(|_| servers.clone())
                    .map(|s| view! { <th scope="col">{s}</th> })
                    .collect_view()}
            </tr>
        }
    });
    let anomaly_rows = if versions > 1 { "2" } else { "1" };
    view! {
        <p class="rl-atlas-observed">
            "Observed on " <strong>{servers.join(" and ")}</strong> " at " {observed_at} "."
        </p>
        <div class="rl-atlas-scroll">
            <table class="rl-atlas-matrix" data-versions=versions.to_string()>
                <thead>
                    <tr>
                        <th scope="col" rowspan=anomaly_rows>"Anomaly"</th>
                        {heads}
                    </tr>
                    {version_heads}
                </thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
        <ul class="rl-atlas-legend">
            <li data-kind="allowed">"✗ allowed: the run's proof found the anomaly"</li>
            <li data-kind="refused">"✓ error: PostgreSQL refused a step, with this SQLSTATE"</li>
            <li data-kind="waited">"✓ waits: a step waited for another's lock, then saw its result"</li>
            <li data-kind="unseen">"✓ not seen: no reader's snapshot showed it"</li>
            {(versions > 1).then(|| view! {
                <li data-kind="differs">"≠ the versions did not do the same"</li>
            })}
        </ul>
        {(!notes.is_empty()).then(|| view! {
            <ul class="rl-atlas-notes">
                {notes.into_iter().map(|n| view! { <li>"* " {n}</li> }).collect_view()}
            </ul>
        })}
    }
    .into_any()
}

#[component]
fn Row(row: ObservedRow, by_level: Vec<Vec<(String, ObservedCell)>>) -> impl IntoView {
    // A level whose versions' cells differ is marked on every one of its cells.
    let cells = by_level
        .into_iter()
        .flat_map(|cells| {
            let differs = cells.windows(2).any(|w| w[0].1.cell != w[1].1.cell);
            cells
                .into_iter()
                .map(move |(major, cell)| view! { <CellView cell=cell postgres=major differs=differs /> })
        })
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
fn CellView(
    cell: ObservedCell,
    /// The major version it played on.
    postgres: String,
    /// The other versions' cells at this level say otherwise.
    differs: bool,
) -> impl IntoView {
    let (kind, mark, words) = label(&cell.cell);
    let title = cell.cell.sentence();
    view! {
        <td class="rl-atlas-cell" data-kind=kind data-level=cell.level.clone() data-postgres=postgres
            data-differs=differs.to_string() title=title>
            <a class="rl-atlas-run" href=format!("/runs/{}", cell.run_id)>
                <span aria-hidden="true">{mark} " "</span>
                {words}
                {cell.instead.is_some().then_some(" *")}
                {differs.then_some(" ≠")}
            </a>
            <a class="rl-atlas-spec" href=format!("/s/{}", cell.spec_id)>"spec"</a>
        </td>
    }
}
