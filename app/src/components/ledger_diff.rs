//! The ledger diff: each table before → after, changed cells highlighted, added and removed rows
//! marked, what a correct system would hold beside it, and the money totals compared. Its markup
//! is `shared::ledger_html`'s, written once when the run ends (as text: a fraction of the bytes
//! the same elements cost as view code); what moves in it, a big table's "Show all", is here.

use leptos::prelude::*;
use shared::Ledger;
use shared::ledger_html::{SHOW_ALL, SHOW_FEWER, ledger};

#[component]
pub fn LedgerDiff(
    before: Ledger,
    after: Ledger,
    expected: Option<Ledger>,
    /// Fold a table the run left as it was, and as a correct system holds it, into one line
    /// that opens to the table (the compact view: the embed's height goes to what changed).
    #[prop(default = false)]
    fold_unchanged: bool,
) -> impl IntoView {
    let markup = ledger(&before, &after, expected.as_ref(), fold_unchanged);
    view! { <section class="rl-ledger" aria-label="Ledger" inner_html=markup on:click=|e| show_all(e.target())></section> }
}

/// A click on a folded table's "Show all": its other rows shown (the `tbody` loses `rl-folded`)
/// and the button says "Show fewer", or back. Caught once, on the ledger, since its markup is
/// text with no handlers of its own (the player catches it on its page, and asks here too).
pub fn show_all(target: Option<web_sys::EventTarget>) {
    let Some(button) = crate::api::target_of_class(target, "rl-show-all") else {
        return;
    };
    let Some(rows) = button
        .closest(".rl-ledger-side")
        .ok()
        .flatten()
        .and_then(|side| side.query_selector("tbody").ok().flatten())
    else {
        return;
    };
    let everything = rows.class_name() == "rl-folded";
    rows.set_class_name(if everything { "" } else { "rl-folded" });
    button.set_text_content(Some(if everything { SHOW_FEWER } else { SHOW_ALL }));
}
