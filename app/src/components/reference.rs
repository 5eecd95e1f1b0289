//! The tutorial's own figures beside ours: what its author measured on their machine and
//! versions. A reference for the reader, never the expected state (that is what a correct system
//! holds, in the ledger diff above). Its markup is `shared::ledger_html::reference`'s.

use leptos::prelude::*;
use shared::Table;
use shared::ledger_html::reference;

#[component]
pub fn ReferenceFigures(table: Table) -> impl IntoView {
    view! { <section class="rl-reference" data-table=table.name.clone() inner_html=reference(&table)></section> }
}
