//! The tutorial's own figures beside ours: what its author measured on their machine and
//! versions. A reference for the reader, never the expected state (that is what a correct system
//! holds, in the ledger diff above).

use leptos::prelude::*;
use shared::Table;

#[component]
pub fn ReferenceFigures(table: Table) -> impl IntoView {
    let header = table
        .columns
        .iter()
        .map(|c| view! { <th scope="col">{c.clone()}</th> })
        .collect_view();
    let rows = table
        .rows
        .iter()
        .map(|row| {
            let cells = row.iter().map(|v| view! { <td>{v.to_string()}</td> }).collect_view();
            view! { <tr>{cells}</tr> }
        })
        .collect_view();
    view! {
        <section class="rl-reference" data-table=table.name.clone()>
            <h3 class="rl-reference-title">{table.name.clone()}</h3>
            // It scrolls sideways on a phone: focusable, so a keyboard can scroll it.
            <table class="rl-ledger-table rl-reference-table" tabindex="0">
                <thead><tr>{header}</tr></thead>
                <tbody>{rows}</tbody>
            </table>
            <p class="rl-reference-note">
                "Measured in the tutorial's own runs, on its author's machine and versions. racelab's run is judged by what a correct system holds, not by these numbers."
            </p>
        </section>
    }
}
