//! Query results printed the way `psql` prints them (its default "aligned" format), because the
//! tutorials show their checks as psql output and racelab reproduces those lines exactly:
//!
//! ```text
//!     key     | status  |           locked_at
//! ------------+---------+-------------------------------
//!  order-8001 | started | 2026-10-12 11:39:00.616311+00
//! (1 row)
//! ```
//!
//! psql's rules, as its `print_aligned_text` applies them: every column is as wide as its widest
//! cell or header; headers are centred (the odd space goes to the right) and every header cell,
//! the last one too, has a space on each side; numbers are right-aligned and everything else
//! left-aligned; the last column of a data row is not padded on the right; the separator is one
//! dash per character plus one on each side, joined by `+`; a footer counts the rows.

use crate::Value;

/// The lines psql prints for a result with `columns` and `rows` (header, separator, rows, footer).
pub fn aligned<S: AsRef<str>>(columns: &[S], rows: &[Vec<Value>]) -> Vec<String> {
    let cells: Vec<Vec<String>> = rows.iter().map(|row| row.iter().map(cell_text).collect()).collect();
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, name)| {
            cells
                .iter()
                .filter_map(|row| row.get(i))
                .map(|c| width(c))
                .chain([width(name.as_ref())])
                .max()
                .unwrap_or(0)
        })
        .collect();
    // Alignment is the column's, from its type: numbers right, the rest (and NULLs) left.
    let numeric: Vec<bool> = (0..columns.len())
        .map(|i| {
            let mut values = rows.iter().filter_map(|r| r.get(i)).filter(|v| **v != Value::Null);
            let first = values.next();
            first.is_some()
                && first
                    .into_iter()
                    .chain(values)
                    .all(|v| matches!(v, Value::Int(_) | Value::Float(_)))
        })
        .collect();
    let last = columns.len().saturating_sub(1);
    let header = columns
        .iter()
        .zip(&widths)
        .map(|(name, &w)| {
            let gap = w - width(name.as_ref());
            let left = gap / 2;
            format!(" {}{}{} ", " ".repeat(left), name.as_ref(), " ".repeat(gap - left))
        })
        .collect::<Vec<_>>()
        .join("|");
    let separator = widths.iter().map(|&w| "-".repeat(w + 2)).collect::<Vec<_>>().join("+");
    let mut lines = vec![header, separator];
    for texts in &cells {
        let line = texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let w = widths.get(i).copied().unwrap_or(0);
                let pad = " ".repeat(w.saturating_sub(width(text)));
                match (numeric.get(i).copied().unwrap_or(false), i == last) {
                    (true, true) => format!(" {pad}{text}"),
                    (true, false) => format!(" {pad}{text} "),
                    (false, true) => format!(" {text}"),
                    (false, false) => format!(" {text}{pad} "),
                }
            })
            .collect::<Vec<_>>()
            .join("|");
        lines.push(line);
    }
    lines.push(match rows.len() {
        1 => "(1 row)".to_owned(),
        n => format!("({n} rows)"),
    });
    lines
}

/// A cell as psql shows it: NULL is empty, booleans are `t` and `f`.
fn cell_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::Bool(true) => "t".into(),
        Value::Bool(false) => "f".into(),
        other => other.to_string(),
    }
}

fn width(text: &str) -> usize {
    text.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_result_is_a_header_a_rule_and_no_rows() {
        assert_eq!(
            aligned(&["key", "status"], &[]),
            [" key | status ", "-----+--------", "(0 rows)"]
        );
    }

    #[test]
    fn headers_centre_and_the_last_cell_is_not_padded() {
        let rows = vec![vec![
            Value::from("order-8001"),
            Value::from("started"),
            Value::from("2026-10-12 11:39:00.616311+00"),
        ]];
        assert_eq!(
            aligned(&["key", "status", "locked_at"], &rows),
            [
                "    key     | status  |           locked_at           ",
                "------------+---------+-------------------------------",
                " order-8001 | started | 2026-10-12 11:39:00.616311+00",
                "(1 row)",
            ]
        );
    }

    #[test]
    fn numbers_are_right_aligned() {
        let rows = vec![vec![Value::Int(0), Value::from("00:00:00")]];
        assert_eq!(
            aligned(&["unpublished", "oldest_unpublished_age"], &rows),
            [
                " unpublished | oldest_unpublished_age ",
                "-------------+------------------------",
                "           0 | 00:00:00",
                "(1 row)",
            ]
        );
        let rows = vec![
            vec![Value::from("pay_001"), Value::Int(2)],
            vec![Value::from("pay_002"), Value::Null],
        ];
        assert_eq!(
            aligned(&["payment_id", "receipts"], &rows),
            [
                " payment_id | receipts ",
                "------------+----------",
                " pay_001    |        2",
                " pay_002    |         ",
                "(2 rows)",
            ]
        );
    }
}
