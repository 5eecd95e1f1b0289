//! The ledger diff as the page draws it: each table before → after, changed cells highlighted,
//! added and removed rows marked, what a correct system would hold beside it, and the money
//! totals compared. The diff is [`crate::ledger::diff`] (the CLI prints the same one), the layout
//! [`crate::ledger_view`]'s.
//!
//! Written as HTML text rather than as Leptos views: a finished run's ledger is drawn once and
//! never changes, and the same elements as view code cost the player and embed bundles several
//! KB more (docs/embedding.md, "The player bundle"). Every text is escaped ([`Html`]). The one
//! thing that moves, "Show all" on a folded table, is the app's: it toggles `rl-folded` on the
//! table's `tbody`, and the button's words ([`SHOW_ALL`], [`SHOW_FEWER`]). The tutorial's own
//! figures, drawn under the ledger, are here too ([`reference`]).

use crate::ledger::{RowChange, RowDiff, TableDiff, diff};
use crate::ledger_view::{Fold, column_order, fold, fold_expected};
use crate::markup::Html;
use crate::{Ledger, Table, usd};

/// The button of a folded table, while its other rows are hidden.
pub const SHOW_ALL: &str = "Show all";
/// The same button, while every row shows.
pub const SHOW_FEWER: &str = "Show fewer";

/// The inside of the ledger's section: its heading, then each table the run touched, with what a
/// correct system holds (`expected`) beside it where the scenario says. `fold_unchanged` folds a
/// table the run left as it was (and as a correct system holds it) into one line that opens to
/// it: the compact view, where the embed's height goes to what changed.
pub fn ledger(before: &Ledger, after: &Ledger, expected: Option<&Ledger>, fold_unchanged: bool) -> String {
    let mut html = Html::default();
    html.element("h2", &[], "Ledger");
    for table in diff(before, after).tables {
        let actual = after.table(&table.name);
        let wanted = expected.and_then(|e| e.table(&table.name));
        table_block(&mut html, &table, actual, wanted, fold_unchanged);
    }
    html.into_string()
}

/// One table: the run's before → after beside what a correct system would hold, and the money
/// totals under them; folded to one line, if asked, when the run left it as it was.
fn table_block(
    html: &mut Html,
    table: &TableDiff,
    actual: Option<&Table>,
    wanted: Option<&Table>,
    fold_unchanged: bool,
) {
    let name = Some(table.name.as_str());
    let folded = unchanged(table, actual, wanted).filter(|_| fold_unchanged);
    if let Some(said) = folded {
        html.open(
            "details",
            &[
                ("class", Some("rl-ledger-block rl-ledger-block--folded")),
                ("data-table", name),
            ],
        )
        .open("summary", &[])
        .element("strong", &[], &table.name)
        .text(said)
        .close("summary");
    } else {
        html.open("div", &[("class", Some("rl-ledger-block"))]);
    }
    html.element("h3", &[], &table.name);
    // The columns the run changed first (a phone scrolls the rest).
    let order = column_order(table);
    html.open("div", &[("class", Some("rl-ledger-pair"))]);
    diff_side(html, table, &order, wanted);
    if let Some(wanted) = wanted {
        let names: Vec<&str> = order
            .iter()
            .filter_map(|&i| table.columns.get(i))
            .map(String::as_str)
            .collect();
        expected_side(html, wanted, actual, &names);
    }
    html.close("div");
    total(html, &table.name, actual, wanted);
    html.close(if folded.is_some() { "details" } else { "div" });
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
fn diff_side(html: &mut Html, table: &TableDiff, order: &[usize], wanted: Option<&Table>) {
    let folded = fold(table, wanted);
    // A wide table scrolls sideways: focusable, so a keyboard can scroll it.
    html.open("div", &[("class", Some("rl-ledger-side")), ("tabindex", Some("0"))])
        .element("p", &[("class", Some("rl-side-label"))], "before → after");
    fold_summary(html, folded.as_ref());
    html.open(
        "table",
        &[("class", Some("rl-ledger-table")), ("data-table", Some(&table.name))],
    )
    .open("thead", &[])
    .open("tr", &[]);
    for &i in order {
        let changed = table.rows.iter().any(|r| r.changed_cells.contains(&i));
        let name = table.columns.get(i).map_or("", String::as_str);
        html.element(
            "th",
            &[("scope", Some("col")), ("class", changed.then_some("rl-col--changed"))],
            name,
        );
    }
    html.close("tr")
        .close("thead")
        .open("tbody", &[("class", Some("rl-folded"))]);
    for (n, row) in table.rows.iter().enumerate() {
        let away = folded.as_ref().is_some_and(|f| !f.shown.contains(&n));
        diff_row(html, row, order, &table.columns, away);
    }
    html.close("tbody").close("table");
    if table.rows.is_empty() {
        html.element("p", &[("class", Some("rl-empty"))], "(no rows)");
    }
    html.close("div");
}

/// One row of the run's side: each cell as the run left it, and where the run changed it, the
/// value before struck out; `folded_away` (hidden by its table's class) until "show all".
fn diff_row(html: &mut Html, row: &RowDiff, order: &[usize], columns: &[String], folded_away: bool) {
    let values = row.after.as_ref().or(row.before.as_ref());
    html.open(
        "tr",
        &[
            ("data-change", Some(change_name(row.change))),
            ("data-folded", folded_away.then_some("")),
        ],
    );
    for &i in order {
        let Some(value) = values.and_then(|v| v.get(i)) else {
            continue;
        };
        let changed = row.changed_cells.contains(&i);
        // A short word is data the style can mark (the topic's `repeat` copies): named by its
        // column, never parsed from prose.
        let word = value.as_text().filter(|t| t.len() <= 24);
        html.open(
            "td",
            &[
                ("class", changed.then_some("rl-cell--changed")),
                ("data-column", columns.get(i).map(String::as_str)),
                ("data-value", word),
            ],
        );
        if let Some(old) = row.before.as_ref().and_then(|b| b.get(i)).filter(|_| changed) {
            html.element("del", &[("class", Some("rl-old"))], &old.to_string())
                .text(" → ");
        }
        html.text(&value.to_string()).close("td");
    }
    html.close("tr");
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

/// What a correct system would hold, as a plain table: its columns in the diff's `order` (by
/// name) and then the rest, a big one folded to the rows the run's `after` lacks until "show all".
fn expected_side(html: &mut Html, table: &Table, after: Option<&Table>, order: &[&str]) {
    let mut columns: Vec<usize> = order
        .iter()
        .filter_map(|name| table.columns.iter().position(|c| c == name))
        .collect();
    let rest: Vec<usize> = (0..table.columns.len()).filter(|i| !columns.contains(i)).collect();
    columns.extend(rest);
    let folded = fold_expected(table, after);
    html.open(
        "div",
        &[
            ("class", Some("rl-ledger-side rl-ledger-side--expected")),
            ("tabindex", Some("0")),
        ],
    )
    .element("p", &[("class", Some("rl-side-label"))], "a correct system");
    fold_summary(html, folded.as_ref());
    let name = format!("{}-expected", table.name);
    html.open(
        "table",
        &[
            ("class", Some("rl-ledger-table rl-ledger-table--expected")),
            ("data-table", Some(&name)),
        ],
    )
    .open("thead", &[])
    .open("tr", &[]);
    for &i in &columns {
        html.element("th", &[("scope", Some("col"))], &table.columns[i]);
    }
    html.close("tr")
        .close("thead")
        .open("tbody", &[("class", Some("rl-folded"))]);
    for (n, row) in table.rows.iter().enumerate() {
        let away = folded.as_ref().is_some_and(|f| !f.shown.contains(&n));
        html.open("tr", &[("data-folded", away.then_some(""))]);
        for value in columns.iter().filter_map(|&i| row.get(i)) {
            html.element("td", &[], &value.to_string());
        }
        html.close("tr");
    }
    html.close("tbody").close("table").close("div");
}

/// What a folded table holds, and the button that shows every row.
fn fold_summary(html: &mut Html, fold: Option<&Fold>) {
    if let Some(fold) = fold {
        html.open("p", &[("class", Some("rl-fold"))])
            .text(&fold.summary)
            .text(" ")
            .element("button", &[("class", Some("rl-show-all"))], SHOW_ALL)
            .close("p");
    }
}

/// The money total under a table, and beside it a correct system's, marked when they differ.
fn total(html: &mut Html, table: &str, actual: Option<&Table>, wanted: Option<&Table>) {
    let column = "amount";
    let Some(sum) = actual.and_then(|t| t.column_total(column)) else {
        return;
    };
    let expected = wanted.and_then(|t| t.column_total(column));
    let class = if expected.is_some_and(|e| e != sum) {
        "rl-total rl-total--differs"
    } else {
        "rl-total"
    };
    html.open("p", &[("class", Some(class)), ("data-table", Some(table))])
        .text(&format!("total {column}: "))
        .element("span", &[("class", Some("rl-total-actual"))], &usd(sum));
    if let Some(expected) = expected {
        html.text(" — a correct system: ")
            .element("span", &[("class", Some("rl-total-expected"))], &usd(expected));
    }
    html.close("p");
}

/// The tutorial's own figures, beside ours, inside their section: what its author measured on
/// their machine and versions. A reference for the reader, never the expected state (that is
/// what a correct system holds, in the ledger above).
pub fn reference(table: &Table) -> String {
    let mut html = Html::default();
    html.element("h3", &[("class", Some("rl-reference-title"))], &table.name)
        // It scrolls sideways on a phone: focusable, so a keyboard can scroll it.
        .open(
            "table",
            &[
                ("class", Some("rl-ledger-table rl-reference-table")),
                ("tabindex", Some("0")),
            ],
        )
        .open("thead", &[])
        .open("tr", &[]);
    for column in &table.columns {
        html.element("th", &[("scope", Some("col"))], column);
    }
    html.close("tr").close("thead").open("tbody", &[]);
    for row in &table.rows {
        html.open("tr", &[]);
        for value in row {
            html.element("td", &[], &value.to_string());
        }
        html.close("tr");
    }
    html.close("tbody").close("table").element(
        "p",
        &[("class", Some("rl-reference-note"))],
        "Measured in the tutorial's own runs, on its author's machine and versions. racelab's run is judged by what a correct system holds, not by these numbers.",
    );
    html.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Value;

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

    fn ledger(table: Table) -> Ledger {
        Ledger { tables: vec![table] }
    }

    fn table_diff(before: &Table, after: &Table) -> TableDiff {
        diff(&ledger(before.clone()), &ledger(after.clone())).tables.remove(0)
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

    #[test]
    fn a_changed_cell_shows_its_old_value_struck_out_and_the_totals_differ() {
        let before = accounts(&[(1, 100), (2, 50)]);
        let after = accounts(&[(1, 70), (2, 50)]);
        let expected = accounts(&[(1, 40), (2, 50)]);
        let html = super::ledger(&ledger(before), &ledger(after), Some(&ledger(expected)), true);
        assert!(
            html.starts_with("<h2>Ledger</h2><div class=\"rl-ledger-block\"><h3>accounts</h3>"),
            "{html}"
        );
        // The changed column comes right after the first, marked.
        assert!(
            html.contains("<th scope=\"col\">id</th><th scope=\"col\" class=\"rl-col--changed\">amount</th>"),
            "{html}"
        );
        assert!(
            html.contains(
                "<tr data-change=\"changed\"><td data-column=\"id\">1</td><td class=\"rl-cell--changed\" data-column=\"amount\"><del class=\"rl-old\">100</del> → 70</td></tr>"
            ),
            "{html}"
        );
        assert!(
            html.ends_with(
                "<p class=\"rl-total rl-total--differs\" data-table=\"accounts\">total amount: <span class=\"rl-total-actual\">$120</span> — a correct system: <span class=\"rl-total-expected\">$90</span></p></div>"
            ),
            "{html}"
        );
    }

    #[test]
    fn an_unchanged_table_folds_to_one_line_in_the_compact_view_only() {
        let table = accounts(&[(1, 100)]);
        let folded = super::ledger(
            &ledger(table.clone()),
            &ledger(table.clone()),
            Some(&ledger(table.clone())),
            true,
        );
        assert!(
            folded.starts_with(
                "<h2>Ledger</h2><details class=\"rl-ledger-block rl-ledger-block--folded\" data-table=\"accounts\"><summary><strong>accounts</strong>: unchanged, as a correct system holds it</summary><h3>accounts</h3>"
            ),
            "{folded}"
        );
        assert!(folded.ends_with("</p></details>"), "{folded}");
        let whole = super::ledger(&ledger(table.clone()), &ledger(table), None, false);
        assert!(
            whole.starts_with("<h2>Ledger</h2><div class=\"rl-ledger-block\">"),
            "{whole}"
        );
    }

    #[test]
    fn a_big_table_shows_the_rows_that_differ_and_a_button_for_the_rest() {
        let before = accounts(&(1..=30).map(|id| (id, 10)).collect::<Vec<_>>());
        let mut rows: Vec<(i64, i64)> = (1..=30).map(|id| (id, 10)).collect();
        rows[4].1 = 0;
        let after = accounts(&rows);
        let html = super::ledger(&ledger(before.clone()), &ledger(after), Some(&ledger(before)), false);
        assert!(html.contains("<p class=\"rl-fold\">30 rows; 1 not as a correct system holds it. <button class=\"rl-show-all\">Show all</button></p>"), "{html}");
        assert_eq!(
            html.matches("<tr data-change=\"same\" data-folded=\"\">").count(),
            29,
            "{html}"
        );
        assert!(
            html.contains("<tr data-change=\"changed\"><td data-column=\"id\">5</td>"),
            "{html}"
        );
    }

    #[test]
    fn text_from_the_database_is_escaped_everywhere() {
        let hostile = "<script>alert(1)</script>";
        let mut table = accounts(&[(1, 100)]);
        table.name = format!("t\"{hostile}");
        table.columns[0] = hostile.to_owned();
        table.rows[0][0] = Value::Text(hostile.to_owned());
        let html = super::ledger(&ledger(table.clone()), &ledger(table), None, true);
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
        assert!(html.contains("data-table=\"t&quot;&lt;script&gt;"), "{html}");
    }

    #[test]
    fn the_tutorials_figures_are_a_plain_table_with_its_note() {
        let html = reference(&accounts(&[(1, 100)]));
        assert!(
            html.starts_with("<h3 class=\"rl-reference-title\">accounts</h3><table class=\"rl-ledger-table rl-reference-table\" tabindex=\"0\"><thead><tr><th scope=\"col\">id</th><th scope=\"col\">amount</th></tr></thead><tbody><tr><td>1</td><td>100</td></tr></tbody></table>"),
            "{html}"
        );
        assert!(html.ends_with("not by these numbers.</p>"), "{html}");
    }
}
