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
    // MariaDB's, when the reader asks: 65 more runs, on another server.
    let on_mariadb = RwSignal::new(None::<Result<Observation, String>>);
    let asked = RwSignal::new(false);
    let ask = move |_| {
        asked.set(true);
        leptos::task::spawn_local(async move {
            on_mariadb.set(Some(fetch_json::<Observation>("/api/atlas?database=mariadb").await));
        });
    };
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
            <section class="rl-atlas-postgres">
                {move || observed.get().map(|result| match result {
                    Err(message) => view! { <ErrorView message=message /> }.into_any(),
                    Ok(observations) => view! { <Matrix observations=observations /> }.into_any(),
                }).unwrap_or_else(|| loading("Playing the atlas on this server (39 runs a version)…"))}
            </section>
            <section class="rl-atlas-mariadb">
                <h2>"On MariaDB"</h2>
                <p class="rl-explain">
                    "The same races on MariaDB (InnoDB): every level it has, and REPEATABLE READ with its snapshot "
                    "switch ("<code>"innodb_snapshot_isolation"</code>") off, as before MariaDB 11.6.2, and on, as from it. "
                    "MariaDB gives racelab no proof, so a cell says the anomaly appeared when what the run's reads returned, "
                    "or the rows it left, show it."
                </p>
                {move || match (asked.get(), on_mariadb.get()) {
                    (false, _) => view! {
                        <button class="rl-atlas-on-mariadb" on:click=ask>"Play it on MariaDB (65 runs)"</button>
                    }.into_any(),
                    (true, None) => loading("Playing the atlas on MariaDB (65 runs)…").into_any(),
                    (true, Some(Err(message))) => view! { <ErrorView message=message /> }.into_any(),
                    (true, Some(Ok(observation))) => view! { <Matrix observations=vec![observation] /> }.into_any(),
                }}
            </section>
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
    let versions = observations.len();
    let rows = first
        .rows
        .iter()
        .enumerate()
        .map(|(i, row)| view! { <Row row=row.clone() by_level=by_level(&observations, i, levels.len()) /> })
        .collect_view();
    let notes = notes(&observations);
    view! {
        <p class="rl-atlas-observed">
            "Observed on " <strong>{servers.join(" and ")}</strong> " at " {first.observed_at.clone()} "."
        </p>
        <div class="rl-atlas-scroll">
            <table class="rl-atlas-matrix" data-versions=versions.to_string()>
                {head(levels, &servers)}
                <tbody>{rows}</tbody>
            </table>
        </div>
        {legend(versions > 1, first.server.starts_with("MariaDB"))}
        {(!notes.is_empty()).then(|| view! {
            <ul class="rl-atlas-notes">
                {notes.into_iter().map(|n| view! { <li>"* " {n}</li> }).collect_view()}
            </ul>
        })}
    }
    .into_any()
}

/// Row `row` of the matrix, each of its `levels` with its cell on every version side by side
/// (each named by its major version).
fn by_level(observations: &[Observation], row: usize, levels: usize) -> Vec<Vec<(String, ObservedCell)>> {
    (0..levels)
        .map(|j| {
            observations
                .iter()
                .filter_map(|o| {
                    let cell = o.rows.get(row)?.cells.get(j)?.clone();
                    let major = shared::versions::major_of(&o.server).unwrap_or(0).to_string();
                    Some((major, cell))
                })
                .collect()
        })
        .collect()
}

/// The notes under the matrix: each run that showed an anomaly other than its row's (marked *
/// in its cell), said with its level, and its version where there are several.
fn notes(observations: &[Observation]) -> Vec<String> {
    let versions = observations.len();
    observations
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
        .collect()
}

/// The matrix's head: a column group per level, and where the atlas played on several
/// `servers`, a column per version under each level.
fn head(levels: Vec<String>, servers: &[String]) -> impl IntoView + use<> {
    let versions = servers.len();
    let per_level = levels.len();
    let heads = levels
        .into_iter()
        .map(|l| view! { <th scope="colgroup" colspan=versions.to_string()>{l}</th> })
        .collect_view();
    let version_heads = (versions > 1).then(|| {
        view! {
            <tr class="rl-atlas-versions">
                {(0..per_level)
                    .flat_map(|_| servers.to_vec())
                    .map(|s| view! { <th scope="col">{s}</th> })
                    .collect_view()}
            </tr>
        }
    });
    let anomaly_rows = if versions > 1 { "2" } else { "1" };
    view! {
        <thead>
            <tr>
                <th scope="col" rowspan=anomaly_rows>"Anomaly"</th>
                {heads}
            </tr>
            {version_heads}
        </thead>
    }
}

/// What each mark means, in words; ≠ only where versions are side by side.
fn legend(versions_compared: bool, on_mariadb: bool) -> impl IntoView {
    let (allowed, refused) = if on_mariadb {
        (
            "✗ allowed: what the run's reads returned, or the rows it left, showed the anomaly",
            "✓ error: MariaDB refused a step, with this error number",
        )
    } else {
        (
            "✗ allowed: the run's proof found the anomaly",
            "✓ error: PostgreSQL refused a step, with this SQLSTATE",
        )
    };
    view! {
        <ul class="rl-atlas-legend">
            <li data-kind="allowed">{allowed}</li>
            <li data-kind="refused">{refused}</li>
            <li data-kind="waited">"✓ waits: a step waited for another's lock, then saw its result"</li>
            <li data-kind="unseen">"✓ not seen: no reader's snapshot showed it"</li>
            {versions_compared.then(|| view! {
                <li data-kind="differs">"≠ the versions did not do the same"</li>
            })}
        </ul>
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use shared::proof::Anomaly;

    fn cell(level: &str, cell: Cell, instead: Option<Anomaly>) -> ObservedCell {
        ObservedCell {
            level: level.to_owned(),
            cell,
            instead,
            run_id: "r".to_owned(),
            spec_id: "s".to_owned(),
        }
    }

    /// The atlas on `server`: one row, G1c, prevented at READ COMMITTED by waiting, and there a
    /// write skew instead; `serializable` at SERIALIZABLE.
    fn observed(server: &str, serializable: Cell) -> Observation {
        Observation {
            server: server.to_owned(),
            observed_at: "2025-12-05 10:00".to_owned(),
            rows: vec![ObservedRow {
                id: "g1c".to_owned(),
                class: "G1c".to_owned(),
                name: "circular information flow".to_owned(),
                cells: vec![
                    cell("READ COMMITTED", Cell::Waited, Some(Anomaly::WriteSkew)),
                    cell("SERIALIZABLE", serializable, None),
                ],
            }],
        }
    }

    #[test]
    fn each_level_holds_its_cell_on_every_version() {
        let refused = Cell::Refused {
            code: "40001".to_owned(),
        };
        let observations = [
            observed("PostgreSQL 15.20 (Debian)", Cell::Unseen),
            observed("PostgreSQL 18.1", refused.clone()),
        ];
        let levels = by_level(&observations, 0, 2);
        let serializable: Vec<(&str, &Cell)> = levels[1].iter().map(|(major, c)| (major.as_str(), &c.cell)).collect();
        assert_eq!(serializable, [("15", &Cell::Unseen), ("18", &refused)]);
        assert_eq!(levels[0].len(), 2);
        assert!(
            by_level(&observations, 1, 2).iter().all(Vec::is_empty),
            "there is no second row"
        );
    }

    #[test]
    fn a_note_names_the_version_only_where_there_are_several() {
        let one = [observed("PostgreSQL 18.1", Cell::Unseen)];
        assert_eq!(
            notes(&one),
            ["circular information flow at READ COMMITTED: the same run showed a write skew (G2-item)."]
        );
        let two = [
            observed("PostgreSQL 15.20 (Debian)", Cell::Unseen),
            observed("PostgreSQL 18.1", Cell::Unseen),
        ];
        assert_eq!(
            notes(&two)[0],
            "circular information flow at READ COMMITTED on PostgreSQL 15.20: the same run showed a write skew (G2-item)."
        );
    }
}
