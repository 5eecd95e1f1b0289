//! How a table of the ledger diff is laid out for a reader, so what changed is what they see:
//! - the columns the run changed come right after the first one, so on a phone, where a wide
//!   table scrolls sideways, they are not the ones out of view ([`column_order`]);
//! - a table of hundreds of rows shows the rows that differ from what a correct system holds
//!   (or, with nothing to compare, those the run changed) and a summary, the rest behind
//!   "show all" ([`fold`], and [`fold_expected`] for the correct system's own table).
//!
//! Pure, so the live page, a replay and an embed lay out a ledger alike. Kept small: it is part
//! of the embed's budget (docs/embedding.md, "The embed bundle").

use crate::ledger::{RowChange, TableDiff};
use crate::money::grouped;
use crate::{Table, Value};

/// Tables up to this many rows are shown whole.
pub const WHOLE_UP_TO: usize = 25;
/// How many rows a folded table shows at most before "show all".
pub const SHOWN_AT_MOST: usize = 12;

/// The order to draw `table`'s columns in, as indexes: the first (the row's name), then the
/// columns some row changed, then the rest, each group in the table's own order.
pub fn column_order(table: &TableDiff) -> Vec<usize> {
    let changed = |i: &usize| table.rows.iter().any(|r| r.changed_cells.contains(i));
    let count = table.columns.len();
    let mut order: Vec<usize> = (0..count.min(1)).collect();
    order.extend((1..count).filter(changed));
    order.extend((1..count).filter(|i| !changed(i)));
    order
}

/// A big table, folded: the rows to show and what the others are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fold {
    /// Indexes into the table's rows.
    pub shown: Vec<usize>,
    /// `1,000 rows; 1 differs from what a correct system holds.`
    pub summary: String,
}

/// Which rows of `table` to show first, if it is too big to show whole: with `expected` (what
/// a correct system holds), the rows that are not in it; without, the rows the run changed.
pub fn fold(table: &TableDiff, expected: Option<&Table>) -> Option<Fold> {
    let total = table.rows.len();
    if total <= WHOLE_UP_TO {
        return None;
    }
    let Some(expected) = expected else {
        let changed = (0..total).filter(|&i| table.rows[i].change != RowChange::Same);
        return Some(folded(total, changed.collect(), "changed by the run"));
    };
    let mut holds = Unmatched::new(&expected.rows);
    let differ = (0..total).filter(|&i| table.rows[i].after.as_ref().is_none_or(|row| !holds.take(row)));
    Some(folded(total, differ.collect(), "not as a correct system holds it"))
}

/// Which rows of a big `expected` table to show first: those the run's `after` table lacks.
pub fn fold_expected(expected: &Table, after: Option<&Table>) -> Option<Fold> {
    let total = expected.rows.len();
    if total <= WHOLE_UP_TO {
        return None;
    }
    let mut has = Unmatched::new(after.map_or(&[][..], |a| &a.rows));
    let missing = (0..total).filter(|&i| !has.take(&expected.rows[i]));
    Some(folded(total, missing.collect(), "missing from the run's"))
}

/// `rows` (the picked ones, the first shown) of `total`, said with `what` they are.
fn folded(total: usize, rows: Vec<usize>, what: &str) -> Fold {
    let more = if rows.len() > SHOWN_AT_MOST {
        format!(", the first {SHOWN_AT_MOST} shown")
    } else {
        String::new()
    };
    Fold {
        summary: format!(
            "{} rows; {} {what}{more}.",
            grouped(total as u64),
            grouped(rows.len() as u64)
        ),
        shown: rows.into_iter().take(SHOWN_AT_MOST).collect(),
    }
}

/// Rows not matched yet: a row found once is not found again (a duplicate must be matched by a
/// duplicate).
struct Unmatched<'a>(Vec<Option<&'a Vec<Value>>>);

impl<'a> Unmatched<'a> {
    fn new(rows: &'a [Vec<Value>]) -> Self {
        Unmatched(rows.iter().map(Some).collect())
    }

    /// Whether `row` is among them; it is matched (taken) if so.
    fn take(&mut self, row: &[Value]) -> bool {
        let found = self.0.iter_mut().find(|r| r.is_some_and(|r| r.as_slice() == row));
        found.map(Option::take).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::diff_table;

    fn receipts(ids: impl IntoIterator<Item = i64>) -> Table {
        Table {
            name: "receipts".into(),
            columns: vec!["payment".into(), "sent".into()],
            key_columns: 1,
            rows: ids.into_iter().map(|i| vec![Value::Int(i), Value::Int(1)]).collect(),
        }
    }

    #[test]
    fn changed_columns_come_after_the_first() {
        let before = Table {
            name: "outbox".into(),
            columns: vec!["id".into(), "event".into(), "published".into(), "tries".into()],
            key_columns: 1,
            rows: vec![vec![Value::Int(1), Value::Text("a".into()), Value::Null, Value::Int(0)]],
        };
        let mut after = before.clone();
        after.rows[0][2] = Value::Text("now".into());
        assert_eq!(column_order(&diff_table(&before, &after)), [0, 2, 1, 3]);
        assert_eq!(
            column_order(&diff_table(&before, &before)),
            [0, 1, 2, 3],
            "nothing changed: as it is"
        );
    }

    #[test]
    fn small_tables_are_shown_whole() {
        let t = receipts(1..=WHOLE_UP_TO as i64);
        assert_eq!(fold(&diff_table(&receipts([]), &t), Some(&t)), None);
        assert_eq!(fold_expected(&t, None), None);
    }

    #[test]
    fn a_big_table_shows_the_rows_a_correct_system_lacks() {
        let expected = receipts(1..=1_000);
        // The run sent a second receipt for payment 7 and none for 500.
        let mut after = receipts((1..=1_000).filter(|&i| i != 500));
        after.rows.push(vec![Value::Int(7), Value::Int(2)]);
        let diff = diff_table(&receipts([]), &after);
        let folded = fold(&diff, Some(&expected)).expect("folded");
        assert_eq!(folded.shown.len(), 1);
        assert_eq!(
            diff.rows[folded.shown[0]].after,
            Some(vec![Value::Int(7), Value::Int(2)])
        );
        assert_eq!(folded.summary, "1,000 rows; 1 not as a correct system holds it.");
        let missing = fold_expected(&expected, Some(&after)).expect("folded");
        assert_eq!(missing.shown, [499]);
        assert_eq!(missing.summary, "1,000 rows; 1 missing from the run's.");
    }

    #[test]
    fn a_duplicate_is_not_matched_twice() {
        let expected = receipts((1..=30).chain([5]));
        let after = receipts((1..=30).chain([5, 5]));
        let folded = fold(&diff_table(&receipts([]), &after), Some(&expected)).expect("folded");
        assert_eq!(folded.shown.len(), 1, "one copy of 5 too many");
    }

    #[test]
    fn a_big_table_as_a_correct_system_holds_it_shows_no_rows() {
        let expected = receipts(1..=1_000);
        let folded = fold(&diff_table(&receipts([]), &expected), Some(&expected)).expect("folded");
        assert_eq!(
            (folded.shown.len(), folded.summary.as_str()),
            (0, "1,000 rows; 0 not as a correct system holds it.")
        );
    }

    #[test]
    fn without_a_correct_system_the_first_changes_are_shown() {
        let after = receipts(1..=40);
        let folded = fold(&diff_table(&receipts(1..=10), &after), None).expect("folded");
        assert_eq!(folded.shown, (10..10 + SHOWN_AT_MOST).collect::<Vec<_>>());
        assert_eq!(folded.summary, "40 rows; 30 changed by the run, the first 12 shown.");
    }
}
