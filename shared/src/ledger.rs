//! Ledger snapshots and the pure diff between two of them.
//!
//! A snapshot is plain data: tables of rows (or Redis keys, Kafka messages, provider charges, all
//! drawn as tables). Rows are matched by their key columns, so "row 2 was added" and "spent went
//! from $0 to $800" fall out of one function that the CLI and the browser both use.

use crate::Value;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// Everything a scenario watches, at one moment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    pub tables: Vec<Table>,
}

/// One table (or key space, or topic) of a snapshot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub name: String,
    pub columns: Vec<String>,
    /// How many leading columns identify a row (`id` → 1).
    pub key_columns: usize,
    pub rows: Vec<Vec<Value>>,
}

impl Ledger {
    /// The table called `name`, if the snapshot has one.
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// Only the tables that `other` also has: what to compare against an expected ledger that
    /// speaks about part of the state (the load test's expected ledger is its budget alone).
    pub fn restricted_to(&self, other: &Ledger) -> Ledger {
        Ledger {
            tables: self
                .tables
                .iter()
                .filter(|t| other.table(&t.name).is_some())
                .cloned()
                .collect(),
        }
    }
}

impl Table {
    /// The sum of an integer column (`amount`), if the table has it: the number a reader
    /// compares first ($6,000 approved vs $3,000).
    pub fn column_total(&self, column: &str) -> Option<i64> {
        let i = self.columns.iter().position(|c| c == column)?;
        Some(
            self.rows
                .iter()
                .filter_map(|row| row.get(i).and_then(Value::as_int))
                .sum(),
        )
    }

    fn key<'a>(&self, row: &'a [Value]) -> &'a [Value] {
        &row[..self.key_columns.min(row.len())]
    }
}

/// What happened to one row between two snapshots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowChange {
    Same,
    Changed,
    Added,
    Removed,
}

/// One row in a diff: its old and new values and which cells changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowDiff {
    pub change: RowChange,
    pub before: Option<Vec<Value>>,
    pub after: Option<Vec<Value>>,
    /// Indexes of the columns whose value differs (empty unless `Changed`).
    pub changed_cells: Vec<usize>,
}

/// One table in a diff.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableDiff {
    pub name: String,
    pub columns: Vec<String>,
    pub rows: Vec<RowDiff>,
}

/// The diff of two ledgers, table by table.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LedgerDiff {
    pub tables: Vec<TableDiff>,
}

impl LedgerDiff {
    /// True when nothing was added, removed or changed.
    pub fn is_empty(&self) -> bool {
        self.tables
            .iter()
            .all(|t| t.rows.iter().all(|r| r.change == RowChange::Same))
    }
}

/// Diffs `before` against `after`. Tables are taken in `before`'s order, then any new ones; rows
/// in `before`'s order, then added rows in `after`'s order.
pub fn diff(before: &Ledger, after: &Ledger) -> LedgerDiff {
    let empty = |t: &Table| Table {
        rows: Vec::new(),
        ..t.clone()
    };
    let mut tables: Vec<TableDiff> = before
        .tables
        .iter()
        .map(|old| match after.table(&old.name) {
            Some(new) => diff_table(old, new),
            None => diff_table(old, &empty(old)),
        })
        .collect();
    tables.extend(
        after
            .tables
            .iter()
            .filter(|new| before.table(&new.name).is_none())
            .map(|new| diff_table(&empty(new), new)),
    );
    LedgerDiff { tables }
}

/// Diffs one table. Rows are matched by key; a row whose key appears in both is `Same` or
/// `Changed` (with the changed column indexes).
pub fn diff_table(before: &Table, after: &Table) -> TableDiff {
    let mut rows: Vec<RowDiff> = before
        .rows
        .iter()
        .map(|old| {
            let key = before.key(old);
            match after.rows.iter().find(|new| after.key(new) == key) {
                Some(new) => {
                    let changed_cells: Vec<usize> = (0..old.len().max(new.len()))
                        .filter(|&i| old.get(i) != new.get(i))
                        .collect();
                    let change = if changed_cells.is_empty() {
                        RowChange::Same
                    } else {
                        RowChange::Changed
                    };
                    RowDiff {
                        change,
                        before: Some(old.clone()),
                        after: Some(new.clone()),
                        changed_cells,
                    }
                }
                None => RowDiff {
                    change: RowChange::Removed,
                    before: Some(old.clone()),
                    after: None,
                    changed_cells: Vec::new(),
                },
            }
        })
        .collect();
    rows.extend(
        after
            .rows
            .iter()
            .filter(|new| !before.rows.iter().any(|old| before.key(old) == after.key(new)))
            .map(|new| RowDiff {
                change: RowChange::Added,
                before: None,
                after: Some(new.clone()),
                changed_cells: Vec::new(),
            }),
    );
    TableDiff {
        name: after.name.clone(),
        columns: after.columns.clone(),
        rows,
    }
}

/// Renders a diff as plain text for terminals: `+` added, `-` removed, `~` changed with
/// `old → new` in the changed cells, two spaces for unchanged rows.
pub fn render_text(diff: &LedgerDiff) -> String {
    let mut out = String::new();
    for table in &diff.tables {
        let _ = writeln!(out, "{} ({})", table.name, table.columns.join(", "));
        if table.rows.is_empty() {
            out.push_str("  (no rows)\n");
        }
        for row in &table.rows {
            let (mark, cells) = match row.change {
                RowChange::Same => ("  ", cells_of(row.after.as_deref())),
                RowChange::Added => ("+ ", cells_of(row.after.as_deref())),
                RowChange::Removed => ("- ", cells_of(row.before.as_deref())),
                RowChange::Changed => {
                    let old = row.before.as_deref().unwrap_or_default();
                    let new = row.after.as_deref().unwrap_or_default();
                    let cells = (0..new.len())
                        .map(|i| match (old.get(i), row.changed_cells.contains(&i)) {
                            (Some(o), true) => format!("{o} → {}", new[i]),
                            _ => new[i].to_string(),
                        })
                        .collect();
                    ("~ ", cells)
                }
            };
            let _ = writeln!(out, "{mark}{}", cells.join(" | "));
        }
    }
    out
}

fn cells_of(row: Option<&[Value]>) -> Vec<String> {
    row.unwrap_or_default().iter().map(Value::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn teams(spent: i64) -> Table {
        Table {
            name: "teams".into(),
            columns: vec!["id".into(), "budget".into(), "spent".into()],
            key_columns: 1,
            rows: vec![vec!["design".into(), 5000.into(), spent.into()]],
        }
    }

    fn expenses(rows: &[(i64, &str)]) -> Table {
        Table {
            name: "expenses".into(),
            columns: vec!["id".into(), "amount".into(), "approved_by".into()],
            key_columns: 1,
            rows: rows
                .iter()
                .map(|(id, who)| vec![(*id).into(), 3000.into(), (*who).into()])
                .collect(),
        }
    }

    #[test]
    fn totals_sum_a_named_column() {
        assert_eq!(expenses(&[(1, "alice"), (2, "bob")]).column_total("amount"), Some(6000));
        assert_eq!(expenses(&[]).column_total("amount"), Some(0));
        assert_eq!(teams(0).column_total("amount"), None);
    }

    #[test]
    fn changed_cell_is_found_by_key() {
        let d = diff_table(&teams(0), &teams(800));
        assert_eq!(d.rows.len(), 1);
        assert_eq!(d.rows[0].change, RowChange::Changed);
        assert_eq!(d.rows[0].changed_cells, vec![2]);
    }

    #[test]
    fn added_and_removed_rows_are_marked() {
        let d = diff_table(&expenses(&[(1, "alice")]), &expenses(&[(2, "bob")]));
        let changes: Vec<RowChange> = d.rows.iter().map(|r| r.change).collect();
        assert_eq!(changes, vec![RowChange::Removed, RowChange::Added]);
    }

    #[test]
    fn identical_ledgers_diff_empty() {
        let l = Ledger {
            tables: vec![teams(0), expenses(&[(1, "alice")])],
        };
        assert!(diff(&l, &l).is_empty());
        let changed = Ledger {
            tables: vec![teams(0), expenses(&[(1, "alice"), (2, "bob")])],
        };
        assert!(!diff(&l, &changed).is_empty());
    }

    #[test]
    fn restricting_keeps_only_the_tables_the_other_has() {
        let after = Ledger {
            tables: vec![teams(0), expenses(&[(1, "alice")])],
        };
        let expected = Ledger { tables: vec![teams(0)] };
        assert_eq!(after.restricted_to(&expected), expected);
    }

    #[test]
    fn a_table_missing_afterwards_loses_all_its_rows() {
        let before = Ledger { tables: vec![teams(0)] };
        let d = diff(&before, &Ledger::default());
        assert_eq!(d.tables[0].rows[0].change, RowChange::Removed);
    }

    #[test]
    fn text_rendering_marks_each_kind_of_change() {
        let before = Ledger {
            tables: vec![teams(0), expenses(&[])],
        };
        let after = Ledger {
            tables: vec![teams(800), expenses(&[(1, "alice")])],
        };
        let text = render_text(&diff(&before, &after));
        assert_eq!(
            text,
            "teams (id, budget, spent)\n~ design | 5000 | 0 → 800\n\
             expenses (id, amount, approved_by)\n+ 1 | 3000 | alice\n"
        );
    }
}
