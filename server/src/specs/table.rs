//! Result sets as the isolation tester prints them: libpq's `PQprint` with a header, aligned
//! columns and `|` between them (not psql's format, which pads and centres differently).
//!
//! The rules, as `PQprint` has them: a column is as wide as its widest value or its name,
//! counted in bytes; a column whose every non-empty value looks like a number (digits, `.`,
//! `-`, `E`, spaces, not starting with `E` and ending in a digit) is right-aligned, name
//! included, and so is a column with no non-empty value at all; NULL and the empty string both
//! print as nothing; values are printed as the server sent them, newlines and all.

/// One result set: its column names and its rows, each value the server's text or NULL.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResultSet {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
    /// Rows the server sent beyond the ones kept (see [`super::Limits::rows_kept`]).
    pub rows_dropped: u64,
}

/// Whether `value` reads as a number to `PQprint`.
fn numeric(value: &str) -> bool {
    let mut last = '0';
    for c in value.chars() {
        last = c;
        if !(c.is_ascii_digit() || matches!(c, '.' | 'E' | 'e' | ' ' | '-')) {
            return false;
        }
    }
    !value.starts_with(['E', 'e']) && last.is_ascii_digit()
}

/// `set` as the tester prints it, every line ending in a newline, then `(N rows)` and an
/// empty line. A set without columns prints nothing.
pub fn print(set: &ResultSet) -> String {
    if set.columns.is_empty() {
        return String::new();
    }
    let mut width: Vec<usize> = set.columns.iter().map(String::len).collect();
    let mut right = vec![true; set.columns.len()];
    for row in &set.rows {
        for (j, value) in row.iter().enumerate().take(width.len()) {
            let Some(value) = value.as_deref().filter(|v| !v.is_empty()) else {
                continue;
            };
            width[j] = width[j].max(value.len());
            if right[j] && !numeric(value) {
                right[j] = false;
            }
        }
    }
    let cell = |j: usize, text: &str| {
        let pad = " ".repeat(width[j].saturating_sub(text.len()));
        if right[j] {
            format!("{pad}{text}")
        } else {
            format!("{text}{pad}")
        }
    };
    let mut out = String::new();
    let header: Vec<String> = set.columns.iter().enumerate().map(|(j, name)| cell(j, name)).collect();
    out.push_str(&header.join("|"));
    out.push('\n');
    let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&rule.join("+"));
    out.push('\n');
    for row in &set.rows {
        let cells: Vec<String> = (0..width.len())
            .map(|j| cell(j, row.get(j).and_then(|v| v.as_deref()).unwrap_or("")))
            .collect();
        out.push_str(&cells.join("|"));
        out.push('\n');
    }
    let count = set.rows.len() as u64 + set.rows_dropped;
    if set.rows_dropped > 0 {
        out.push_str(&format!("… {} more rows not kept\n", set.rows_dropped));
    }
    out.push_str(&format!("({count} row{})\n\n", if count == 1 { "" } else { "s" }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(columns: &[&str], rows: &[&[Option<&str>]]) -> ResultSet {
        ResultSet {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: rows
                .iter()
                .map(|r| r.iter().map(|v| v.map(str::to_owned)).collect())
                .collect(),
            rows_dropped: 0,
        }
    }

    #[test]
    fn numbers_align_right_and_text_left_as_pqprint_does() {
        // Seen from PostgreSQL 15's isolationtester on the same values.
        let s = set(
            &["id", "name", "amount", "flag"],
            &[
                &[Some("1"), Some("alice"), Some("12.50"), Some("t")],
                &[Some("22"), None, Some("-3"), Some("f")],
                &[Some("333"), Some("a much longer name"), Some("1000"), None],
            ],
        );
        assert_eq!(
            print(&s),
            " id|name              |amount|flag\n---+------------------+------+----\n  1|alice             | 12.50|t   \n 22|                  |    -3|f   \n333|a much longer name|  1000|    \n(3 rows)\n\n"
        );
    }

    #[test]
    fn what_counts_as_a_number() {
        for yes in ["1", "-1", "1e5", "1.5", "  12", "1E-3"] {
            assert!(numeric(yes), "{yes}");
        }
        for no in ["+3", ".", "  12 ", "e5", "E5", "1a", "ünï", "1.5x"] {
            assert!(!numeric(no), "{no}");
        }
    }

    #[test]
    fn widths_count_bytes_and_empty_columns_stay_right_aligned() {
        let s = set(&["u", "empty", "count"], &[&[Some("ünïcode"), Some(""), Some("2")]]);
        assert_eq!(
            print(&s),
            "u        |empty|count\n---------+-----+-----\nünïcode|     |    2\n(1 row)\n\n"
        );
        let none = set(&["a", "bb"], &[]);
        assert_eq!(print(&none), "a|bb\n-+--\n(0 rows)\n\n");
        assert_eq!(print(&set(&[], &[])), "");
    }
}
