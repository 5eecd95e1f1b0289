//! The ledger diff: each table before → after, changed cells highlighted, added and removed rows
//! marked, what a correct system would hold beside it, and the money totals compared. The diff
//! itself is `shared::ledger::diff`, the same function the CLI prints with; its layout (changed
//! columns first, big tables folded to what differs) is `shared::ledger_view`'s.

use leptos::prelude::*;
use shared::ledger::{RowChange, diff};
use shared::ledger_view::{Fold, column_order, fold, fold_expected};
use shared::{Ledger, Table, usd};

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
    let changes = diff(&before, &after);
    let tables = changes
        .tables
        .into_iter()
        .map(|table| {
            let actual = after.table(&table.name);
            let wanted = expected.as_ref().and_then(|e| e.table(&table.name));
            let total = money_total(actual, wanted).map(|(column, actual, wanted)| {
                let differs = wanted.is_some_and(|w| w != actual);
                view! {
                    <p class="rl-total" class:rl-total--differs=differs data-table=table.name.clone()>
                        {format!("total {column}: ")}
                        <span class="rl-total-actual">{usd(actual)}</span>
                        {wanted.map(|w| view! { " — a correct system: " <span class="rl-total-expected">{usd(w)}</span> })}
                    </p>
                }
            });
            // The columns the run changed first (a phone scrolls the rest), and a big table
            // folded to the rows that differ from a correct system until "show all".
            let order = column_order(&table);
            let changed_column = |i: usize| table.rows.iter().any(|r| r.changed_cells.contains(&i));
            let header = order
                .iter()
                .map(|&i| {
                    let name = table.columns.get(i).cloned().unwrap_or_default();
                    view! { <th scope="col" class:rl-col--changed=changed_column(i)>{name}</th> }
                })
                .collect_view();
            let folded = fold(&table, wanted);
            let everything = RwSignal::new(false);
            let summary = folded.as_ref().map(|f| fold_summary(f, everything));
            let shown: Option<Vec<usize>> = folded.map(|f| f.shown);
            let rows = table
                .rows
                .iter()
                .enumerate()
                .map(|(n, row)| {
                    let change = match row.change {
                        RowChange::Same => "same",
                        RowChange::Changed => "changed",
                        RowChange::Added => "added",
                        RowChange::Removed => "removed",
                    };
                    let values = row.after.clone().or_else(|| row.before.clone()).unwrap_or_default();
                    let cells = order
                        .iter()
                        .filter_map(|&i| values.get(i).map(|value| (i, value)))
                        .map(|(i, value)| {
                            let changed = row.changed_cells.contains(&i);
                            let old = row.before.as_ref().and_then(|b| b.get(i)).filter(|_| changed).map(ToString::to_string);
                            // A short word is data the style can mark (the topic's `repeat`
                            // copies): named by its column, never parsed from prose.
                            let column = table.columns.get(i).cloned();
                            let word = value.as_text().filter(|t| t.len() <= 24).map(str::to_owned);
                            view! {
                                <td class:rl-cell--changed=changed data-column=column data-value=word>
                                    {old.map(|o| view! { <del class="rl-old">{o}</del> " → " })}
                                    {value.to_string()}
                                </td>
                            }
                        })
                        .collect_view();
                    // Folded away: hidden (by the table's class) until "show all".
                    let away = shown.as_ref().is_some_and(|shown| !shown.contains(&n)).then_some("");
                    view! { <tr data-change=change data-folded=away>{cells}</tr> }
                })
                .collect_view();
            let empty = table.rows.is_empty().then(|| view! { <p class="rl-empty">"(no rows)"</p> });
            let unchanged = table.rows.iter().all(|r| r.change == RowChange::Same)
                && wanted.is_none_or(|w| actual.is_some_and(|a| a.rows == w.rows));
            let names: Vec<String> = order.iter().filter_map(|&i| table.columns.get(i).cloned()).collect();
            let expected_table = wanted.map(|w| view! { <ExpectedTable table=w.clone() after=actual.cloned() order=names /> });
            let inner = view! {
                <h3>{table.name.clone()}</h3>
                <div class="rl-ledger-pair">
                    // A wide table scrolls sideways: focusable, so a keyboard can scroll it.
                    <div class="rl-ledger-side" tabindex="0">
                        <p class="rl-side-label">"before → after"</p>
                        {summary}
                        <table class="rl-ledger-table" data-table=table.name.clone()>
                            <thead><tr>{header}</tr></thead>
                            <tbody class:rl-folded=move || !everything.get()>{rows}</tbody>
                        </table>
                        {empty}
                    </div>
                    {expected_table}
                </div>
                {total}
            };
            if fold_unchanged && unchanged {
                let said = if wanted.is_some() { ": unchanged, as a correct system holds it" } else { ": unchanged" };
                view! {
                    <details class="rl-ledger-block rl-ledger-block--folded" data-table=table.name.clone()>
                        <summary><strong>{table.name.clone()}</strong>{said}</summary>
                        {inner}
                    </details>
                }
                .into_any()
            } else {
                view! { <div class="rl-ledger-block">{inner}</div> }.into_any()
            }
        })
        .collect_view();
    view! {
        <section class="rl-ledger" aria-label="Ledger">
            <h2>"Ledger"</h2>
            {tables}
        </section>
    }
}

/// What a correct system would hold, as a plain table: its columns in the diff's `order` (by
/// name), a big one folded to the rows the run's `after` lacks until "show all".
#[component]
fn ExpectedTable(table: Table, after: Option<Table>, order: Vec<String>) -> impl IntoView {
    let mut columns: Vec<usize> = order
        .iter()
        .filter_map(|name| table.columns.iter().position(|c| c == name))
        .collect();
    let rest: Vec<usize> = (0..table.columns.len()).filter(|i| !columns.contains(i)).collect();
    columns.extend(rest);
    let header = columns
        .iter()
        .map(|&i| view! { <th scope="col">{table.columns[i].clone()}</th> })
        .collect_view();
    let folded = fold_expected(&table, after.as_ref());
    let everything = RwSignal::new(false);
    let summary = folded.as_ref().map(|f| fold_summary(f, everything));
    let rows = table
        .rows
        .iter()
        .enumerate()
        .map(|(n, row)| {
            let away = folded.as_ref().is_some_and(|f| !f.shown.contains(&n)).then_some("");
            let cells = columns
                .iter()
                .filter_map(|&i| row.get(i))
                .map(|v| view! { <td>{v.to_string()}</td> })
                .collect_view();
            view! { <tr data-folded=away>{cells}</tr> }
        })
        .collect_view();
    view! {
        <div class="rl-ledger-side rl-ledger-side--expected" tabindex="0">
            <p class="rl-side-label">"a correct system"</p>
            {summary}
            <table class="rl-ledger-table rl-ledger-table--expected" data-table=format!("{}-expected", table.name)>
                <thead><tr>{header}</tr></thead>
                <tbody class:rl-folded=move || !everything.get()>{rows}</tbody>
            </table>
        </div>
    }
}

/// What a folded table holds, and the button that shows `everything`.
fn fold_summary(fold: &Fold, everything: RwSignal<bool>) -> AnyView {
    view! {
        <p class="rl-fold">
            {fold.summary.clone()} " "
            <button class="rl-show-all" on:click=move |_| everything.update(|e| *e = !*e)>
                {move || if everything.get() { "Show fewer" } else { "Show all" }}
            </button>
        </p>
    }
    .into_any()
}

/// The money a table adds up to (`amount`), after and in a correct system.
fn money_total(actual: Option<&Table>, expected: Option<&Table>) -> Option<(&'static str, i64, Option<i64>)> {
    let column = "amount";
    let actual = actual?.column_total(column)?;
    Some((column, actual, expected.and_then(|t| t.column_total(column))))
}
