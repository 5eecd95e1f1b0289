//! The ledger diff: each table before → after, changed cells highlighted, added and removed rows
//! marked, what a correct system would hold beside it, and the money totals compared. The diff
//! itself is `shared::ledger::diff`, the same function the CLI prints with; its layout (changed
//! columns first, big tables folded to what differs) is `shared::ledger_view`'s.

use leptos::prelude::*;
use shared::ledger::{RowChange, RowDiff, TableDiff, diff};
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
            table_block(&table, actual, wanted, fold_unchanged)
        })
        .collect_view();
    view! {
        <section class="rl-ledger" aria-label="Ledger">
            <h2>"Ledger"</h2>
            {tables}
        </section>
    }
}

/// One table: the run's before → after beside what a correct system would hold, and the money
/// totals under them; folded to one line, if asked, when the run left it as it was.
fn table_block(table: &TableDiff, actual: Option<&Table>, wanted: Option<&Table>, fold_unchanged: bool) -> AnyView {
    // The columns the run changed first (a phone scrolls the rest).
    let order = column_order(table);
    let names: Vec<String> = order.iter().filter_map(|&i| table.columns.get(i).cloned()).collect();
    let expected_table = wanted.map(|w| view! { <ExpectedTable table=w.clone() after=actual.cloned() order=names /> });
    let inner = view! {
        <h3>{table.name.clone()}</h3>
        <div class="rl-ledger-pair">
            {diff_side(table, &order, wanted)}
            {expected_table}
        </div>
        {total(&table.name, actual, wanted)}
    };
    match unchanged(table, actual, wanted) {
        Some(said) if fold_unchanged => view! {
            <details class="rl-ledger-block rl-ledger-block--folded" data-table=table.name.clone()>
                <summary><strong>{table.name.clone()}</strong>{said}</summary>
                {inner}
            </details>
        }
        .into_any(),
        _ => view! { <div class="rl-ledger-block">{inner}</div> }.into_any(),
    }
}

/// What a folded table says after its name when the run left it as it was (and as a correct
/// system holds it, when there is one); none when anything in it changed.
fn unchanged(table: &TableDiff, actual: Option<&Table>, wanted: Option<&Table>) -> Option<&'static str> {
    let same = table.rows.iter().all(|r| r.change == RowChange::Same)
        && wanted.is_none_or(|w| actual.is_some_and(|a| a.rows == w.rows));
    let said = if wanted.is_some() {
        ": unchanged, as a correct system holds it"
    } else {
        ": unchanged"
    };
    same.then_some(said)
}

/// The run's side of a table, its columns in `order`: a big table folded to the rows that differ
/// from a correct system (`wanted`) until "show all".
fn diff_side(table: &TableDiff, order: &[usize], wanted: Option<&Table>) -> impl IntoView + use<> {
    let changed_column = |i: usize| table.rows.iter().any(|r| r.changed_cells.contains(&i));
    let header = order
        .iter()
        .map(|&i| {
            let name = table.columns.get(i).cloned().unwrap_or_default();
            view! { <th scope="col" class:rl-col--changed=changed_column(i)>{name}</th> }
        })
        .collect_view();
    let folded = fold(table, wanted);
    let everything = RwSignal::new(false);
    let summary = folded.as_ref().map(|f| fold_summary(f, everything));
    let shown: Option<Vec<usize>> = folded.map(|f| f.shown);
    let rows = table
        .rows
        .iter()
        .enumerate()
        .map(|(n, row)| {
            let away = shown.as_ref().is_some_and(|shown| !shown.contains(&n));
            diff_row(row, order, &table.columns, away)
        })
        .collect_view();
    let empty = table
        .rows
        .is_empty()
        .then(|| view! { <p class="rl-empty">"(no rows)"</p> });
    view! {
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
    }
}

/// One row of the run's side: each cell as the run left it, and where the run changed it, the
/// value before struck out; `folded_away` until "show all".
fn diff_row(row: &RowDiff, order: &[usize], columns: &[String], folded_away: bool) -> impl IntoView + use<> {
    let values = row.after.clone().or_else(|| row.before.clone()).unwrap_or_default();
    let cells = order
        .iter()
        .filter_map(|&i| values.get(i).map(|value| (i, value)))
        .map(|(i, value)| {
            let changed = row.changed_cells.contains(&i);
            let old = row
                .before
                .as_ref()
                .and_then(|b| b.get(i))
                .filter(|_| changed)
                .map(ToString::to_string);
            // A short word is data the style can mark (the topic's `repeat` copies): named by
            // its column, never parsed from prose.
            let column = columns.get(i).cloned();
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
    let away = folded_away.then_some("");
    view! { <tr data-change=change_name(row.change) data-folded=away>{cells}</tr> }
}

/// A row's change as the DOM names it (`data-change`).
fn change_name(change: RowChange) -> &'static str {
    match change {
        RowChange::Same => "same",
        RowChange::Changed => "changed",
        RowChange::Added => "added",
        RowChange::Removed => "removed",
    }
}

/// The money total under a table, and beside it a correct system's, marked when they differ.
fn total(table: &str, actual: Option<&Table>, wanted: Option<&Table>) -> impl IntoView + use<> {
    money_total(actual, wanted).map(|(column, actual, wanted)| {
        let differs = wanted.is_some_and(|w| w != actual);
        view! {
            <p class="rl-total" class:rl-total--differs=differs data-table=table.to_owned()>
                {format!("total {column}: ")}
                <span class="rl-total-actual">{usd(actual)}</span>
                {wanted.map(|w| view! { " — a correct system: " <span class="rl-total-expected">{usd(w)}</span> })}
            </p>
        }
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use shared::Value;

    /// An `accounts` table of `(id, amount)` rows.
    fn accounts(rows: &[(i64, i64)]) -> Table {
        Table {
            name: "accounts".to_owned(),
            columns: vec!["id".to_owned(), "amount".to_owned()],
            key_columns: 1,
            rows: rows
                .iter()
                .map(|&(id, amount)| vec![Value::Int(id), Value::Int(amount)])
                .collect(),
        }
    }

    fn table_diff(before: &Table, after: &Table) -> TableDiff {
        let ledger = |table: &Table| Ledger {
            tables: vec![table.clone()],
        };
        diff(&ledger(before), &ledger(after)).tables.remove(0)
    }

    #[test]
    fn a_table_folds_only_when_neither_the_run_nor_a_correct_system_changed_it() {
        let before = accounts(&[(1, 100), (2, 50)]);
        let after = accounts(&[(1, 70), (2, 50)]);
        let same = table_diff(&before, &before);
        assert_eq!(unchanged(&same, Some(&before), None), Some(": unchanged"));
        assert_eq!(
            unchanged(&same, Some(&before), Some(&before)),
            Some(": unchanged, as a correct system holds it")
        );
        // The run lost a write a correct system would have made: that is what to show.
        assert_eq!(unchanged(&same, Some(&before), Some(&after)), None);
        assert_eq!(unchanged(&table_diff(&before, &after), Some(&after), None), None);
    }
}
