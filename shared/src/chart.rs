//! The load test's results as bars: one group per strategy, a bar per metric (over budget,
//! approved, retries, most attempts, gave up), each as long as its share of that metric's
//! largest value across the strategies. The app draws them as HTML ([`html`]), a run's
//! picture as SVG.

use crate::float::one_decimal;
use crate::markup::Html;
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

/// The load test's results as the page draws them: a group of bars per strategy, and under
/// each the tutorial's own figures for it (`tutorial`, a row per strategy) where it has some.
/// Written as text, every text escaped: drawn once, when the run ends.
pub fn html(figures: &Table, tutorial: Option<&Table>) -> String {
    let mut html = Html::default();
    for group in groups(figures) {
        html.open(
            "div",
            &[
                ("class", Some("rl-chart-group")),
                ("data-strategy", Some(&group.strategy)),
            ],
        )
        .element("h3", &[], &group.strategy);
        for bar in &group.bars {
            let width = format!("width: {}%", one_decimal(bar.share * 100.0));
            html.open("div", &[("class", Some("rl-bar-row"))])
                .element("span", &[("class", Some("rl-bar-label"))], bar.label)
                .open("span", &[("class", Some("rl-bar-track"))])
                .element(
                    "span",
                    &[
                        ("class", Some("rl-bar")),
                        ("data-metric", Some(bar.metric)),
                        ("style", Some(&width)),
                    ],
                    "",
                )
                .close("span")
                .element("span", &[("class", Some("rl-bar-value"))], &bar.shown)
                .close("div");
        }
        if let Some(range) = tutorial.and_then(|t| tutorial_range(t, &group.strategy)) {
            html.element("p", &[("class", Some("rl-tutorial-range"))], &range);
        }
        html.close("div");
    }
    html.into_string()
}

/// What the tutorial measured for `strategy` over its six runs, in one line.
fn tutorial_range(tutorial: &Table, strategy: &str) -> Option<String> {
    let row = tutorial
        .rows
        .iter()
        .find(|r| r.first().is_some_and(|v| v.to_string() == strategy))?;
    let cell = |i: usize| row.get(i).map(ToString::to_string).unwrap_or_default();
    Some(format!(
        "tutorial (six runs, PostgreSQL 18.6): over budget {}, approved {}, retries {}, most attempts {}",
        cell(1),
        cell(2),
        cell(3),
        cell(4)
    ))
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

    #[test]
    fn the_page_draws_a_group_per_strategy_with_the_tutorials_range_under_it() {
        let figures = figures(&[("naive", 10, 150_000), ("<b>x</b>", 5, 0)]);
        let mut tutorial = figures.clone();
        tutorial.rows.truncate(1);
        let html = html(&figures, Some(&tutorial));
        assert_eq!(html.matches("<div class=\"rl-chart-group\"").count(), 2, "{html}");
        assert!(html.contains("<span class=\"rl-bar\" data-metric=\"over_budget\" style=\"width: 100.0%\"></span></span><span class=\"rl-bar-value\">$150,000</span>"), "{html}");
        assert!(
            html.contains("<span class=\"rl-bar\" data-metric=\"approved\" style=\"width: 50.0%\">"),
            "{html}"
        );
        assert_eq!(
            html.matches("<p class=\"rl-tutorial-range\">tutorial (six runs")
                .count(),
            1,
            "{html}"
        );
        assert!(
            html.contains("<h3>&lt;b&gt;x&lt;/b&gt;</h3>") && !html.contains("<b>"),
            "{html}"
        );
    }
}
