//! The load test's picture: a progress bar while the approvals run, then one group of bars per
//! strategy (over budget, approved, retries, most attempts, gave up) beside the tutorial's ranges
//! (the metrics are `shared::chart`'s, which a run's picture draws too).

use leptos::prelude::*;
use shared::chart::{METRICS, int_at};
use shared::float::one_decimal;
use shared::{Table, usd};

#[component]
pub fn Progress(label: String, done: u64, total: u64) -> impl IntoView {
    view! {
        <div class="rl-progress">
            <progress max=total.to_string() value=done.to_string()></progress>
            <span class="rl-progress-label">{format!("{done} of {total} approvals (now: {label})")}</span>
        </div>
    }
}

#[component]
pub fn StrategyChart(figures: Table, tutorial: Option<Table>) -> impl IntoView {
    let max_of = |column: &str| {
        figures
            .rows
            .iter()
            .map(|r| int_at(&figures, r, column))
            .max()
            .unwrap_or(0)
            .max(1)
    };
    let maxima: Vec<i64> = METRICS.iter().map(|(column, _, _)| max_of(column)).collect();
    let groups = figures
        .rows
        .iter()
        .map(|row| {
            let strategy = row.first().map(ToString::to_string).unwrap_or_default();
            let range = tutorial.as_ref().and_then(|t| {
                t.rows.iter().find(|r| r.first().map(ToString::to_string).as_deref() == Some(strategy.as_str())).map(|r| {
                    let cell = |i: usize| r.get(i).map(ToString::to_string).unwrap_or_default();
                    format!(
                        "tutorial (six runs, PostgreSQL 18.6): over budget {}, approved {}, retries {}, most attempts {}",
                        cell(1),
                        cell(2),
                        cell(3),
                        cell(4)
                    )
                })
            });
            let bars = METRICS
                .iter()
                .zip(&maxima)
                .map(|((column, label, money), max)| {
                    let value = int_at(&figures, row, column);
                    let width = (value as f64 / *max as f64 * 100.0).clamp(0.0, 100.0);
                    let shown = if *money { usd(value) } else { value.to_string() };
                    view! {
                        <div class="rl-bar-row">
                            <span class="rl-bar-label">{*label}</span>
                            <span class="rl-bar-track">
                                <span class="rl-bar" data-metric=*column style=format!("width: {}%", one_decimal(width))></span>
                            </span>
                            <span class="rl-bar-value">{shown}</span>
                        </div>
                    }
                })
                .collect_view();
            view! {
                <div class="rl-chart-group" data-strategy=strategy.clone()>
                    <h3>{strategy.clone()}</h3>
                    {bars}
                    {range.map(|r| view! { <p class="rl-tutorial-range">{r}</p> })}
                </div>
            }
        })
        .collect_view();
    view! {
        <section class="rl-chart" aria-label="Results per strategy">
            {groups}
        </section>
    }
}
