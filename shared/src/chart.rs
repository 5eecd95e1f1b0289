//! The load test's results as bars: one group per strategy, a bar per metric (over budget,
//! approved, retries, most attempts, gave up), each as long as its share of that metric's
//! largest value across the strategies. The app draws them as HTML, a run's picture as SVG.

use crate::{Table, Value, usd};

/// The metrics drawn, with the column they come from and whether they are money.
pub const METRICS: [(&str, &str, bool); 5] = [
    ("over_budget", "over budget", true),
    ("approved", "approved", false),
    ("retries", "retries", false),
    ("most_attempts", "most attempts", false),
    ("gave_up", "gave up", false),
];

/// One strategy's bars.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub strategy: String,
    pub bars: Vec<Bar>,
}

/// One metric of one strategy.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// The column it comes from (`over_budget`).
    pub metric: &'static str,
    /// In words (`over budget`).
    pub label: &'static str,
    /// As a reader reads it: `$1,000` for money, `12` for a count.
    pub shown: String,
    /// Its length, from 0 to 1: its value over the metric's largest (a metric all zero draws
    /// no bars, not bars of NaN).
    pub share: f64,
}

/// The integer in `row`'s `column` of `table`, 0 where there is none.
pub fn int_at(table: &Table, row: &[Value], column: &str) -> i64 {
    table
        .columns
        .iter()
        .position(|c| c == column)
        .and_then(|i| row.get(i))
        .and_then(Value::as_int)
        .unwrap_or(0)
}

/// The bars of the `strategies` table `figures`, a group per row, in its order.
pub fn groups(figures: &Table) -> Vec<Group> {
    let largest = |column: &str| {
        figures
            .rows
            .iter()
            .map(|r| int_at(figures, r, column))
            .max()
            .unwrap_or(0)
            .max(1)
    };
    let maxima: Vec<i64> = METRICS.iter().map(|(column, _, _)| largest(column)).collect();
    figures
        .rows
        .iter()
        .map(|row| Group {
            strategy: row.first().map(ToString::to_string).unwrap_or_default(),
            bars: METRICS
                .iter()
                .zip(&maxima)
                .map(|(&(metric, label, money), &max)| {
                    let value = int_at(figures, row, metric);
                    Bar {
                        metric,
                        label,
                        shown: if money { usd(value) } else { value.to_string() },
                        share: (value as f64 / max as f64).clamp(0.0, 1.0),
                    }
                })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(rows: &[(&str, i64, i64)]) -> Table {
        Table {
            name: "strategies".into(),
            columns: ["strategy", "approved", "retries", "over_budget"]
                .map(str::to_owned)
                .to_vec(),
            key_columns: 1,
            rows: rows
                .iter()
                .map(|&(name, approved, over)| vec![name.into(), approved.into(), 0.into(), over.into()])
                .collect(),
        }
    }

    #[test]
    fn each_bar_is_its_share_of_the_largest_and_reads_as_money_or_a_count() {
        let groups = groups(&figures(&[("naive", 10, 150_000), ("serializable", 5, 0)]));
        assert_eq!(groups.len(), 2);
        let naive = &groups[0];
        assert_eq!(naive.strategy, "naive");
        let over = &naive.bars[0];
        assert_eq!(
            (over.metric, over.shown.as_str(), over.share),
            ("over_budget", "$150,000", 1.0)
        );
        let approved = &groups[1].bars[1];
        assert_eq!((approved.shown.as_str(), approved.share), ("5", 0.5));
    }

    #[test]
    fn a_metric_nobody_scored_and_a_missing_column_draw_empty_bars() {
        let groups = groups(&figures(&[("a", 0, 0)]));
        for bar in &groups[0].bars {
            assert_eq!(bar.share, 0.0, "{bar:?}");
        }
        assert_eq!(groups[0].bars[3].metric, "most_attempts");
        assert_eq!(groups[0].bars[3].shown, "0", "no such column: zero");
    }
}
