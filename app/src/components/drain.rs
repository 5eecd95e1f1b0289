//! A run that drains a pipeline (the outbox's chaos test): a progress bar per count while it
//! runs, and once there is a curve, a chart of each count over time with a mark wherever a
//! process was killed, so a reader sees the crashes and the backlog they left catch up.

use leptos::prelude::*;
use shared::compact::duration;
use shared::float::one_decimal;
use shared::series::Drain;

/// The chart's drawing box, in SVG units; it scales to the column's width.
const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 180.0;
const LEFT: f64 = 36.0;
const BOTTOM: f64 = 22.0;

/// One bar per count: `1,734 of 2,000 events published`.
#[component]
pub fn ProgressBars(drain: Drain) -> impl IntoView {
    drain
        .latest()
        .into_iter()
        .map(|(label, done, total)| {
            view! {
                <div class="rl-progress" data-progress=label.to_owned()>
                    <progress max=total.to_string() value=done.to_string()></progress>
                    <span class="rl-progress-label">{format!("{done} of {total} {label}")}</span>
                </div>
            }
        })
        .collect_view()
}

/// Each count's curve over time, and the crash marks.
#[component]
pub fn DrainChart(drain: Drain) -> impl IntoView {
    let end = drain.end_ms.max(1) as f64;
    let x = move |at_ms: u64| LEFT + (WIDTH - LEFT - 4.0) * at_ms as f64 / end;
    let y = |done: u64, total: u64| (HEIGHT - BOTTOM) * (1.0 - done as f64 / total.max(1) as f64) + 4.0;
    let curves = drain
        .series
        .iter()
        .enumerate()
        .map(|(i, series)| {
            let points = series
                .points
                .iter()
                .map(|(at, done)| format!("{},{}", one_decimal(x(*at)), one_decimal(y(*done, series.total))))
                .collect::<Vec<_>>()
                .join(" ");
            view! { <polyline class="rl-drain-line" data-series=i.to_string() points=points /> }
        })
        .collect_view();
    let marks = drain
        .crashes
        .iter()
        .map(|crash| {
            let at = one_decimal(x(crash.at_ms));
            let title = format!("{} killed at {}", crash.actor, duration(crash.at_ms));
            view! {
                <line class="rl-drain-crash" x1=at.clone() x2=at y1="4" y2=one_decimal(HEIGHT - BOTTOM + 4.0)>
                    <title>{title}</title>
                </line>
            }
        })
        .collect_view();
    let legend = drain
        .series
        .iter()
        .enumerate()
        .map(|(i, series)| view! { <li data-series=i.to_string()>{series.label.clone()}</li> })
        .collect_view();
    let crashes = match drain.crashes.len() {
        1 => "1 process killed".to_owned(),
        n => format!("{n} processes killed"),
    };
    let seconds = one_decimal(drain.end_ms as f64 / 1000.0);
    // Coordinates as text: an `f64` attribute would bring core's float formatting along.
    let (left, width, axis, bottom) = (
        one_decimal(LEFT),
        one_decimal(WIDTH),
        one_decimal(HEIGHT - BOTTOM + 4.0),
        one_decimal(HEIGHT + 4.0),
    );
    let (tick_x, end_x) = (one_decimal(LEFT - 4.0), one_decimal(WIDTH - 4.0));
    view! {
        <figure class="rl-drain">
            <svg viewBox=format!("0 0 {} {}", one_decimal(WIDTH), one_decimal(HEIGHT + 8.0)) role="img"
                aria-label=format!("progress over {seconds} s, {crashes}")>
                <line class="rl-drain-axis" x1=left x2=width y1=axis.clone() y2=axis.clone() />
                <text class="rl-drain-tick" x=tick_x.clone() y="10" text-anchor="end">"100%"</text>
                <text class="rl-drain-tick" x=tick_x y=axis text-anchor="end">"0"</text>
                <text class="rl-drain-tick" x=end_x y=bottom text-anchor="end">{format!("{seconds} s")}</text>
                {marks}
                {curves}
            </svg>
            <figcaption>
                <ul class="rl-drain-legend">
                    {legend}
                    <li class="rl-drain-legend-crash">{format!("{crashes} (red lines)")}</li>
                </ul>
            </figcaption>
        </figure>
    }
}
