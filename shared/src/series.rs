//! Progress over time, for the picture of a run that drains a pipeline (the outbox's chaos test):
//! each progress label's points, `(ms since the start, done)`, and the moments a process was
//! killed. Pure, so the chart draws exactly what a replay of the same events would; [`html`] is
//! how the page draws it.

use crate::compact::duration;
use crate::float::one_decimal;
use crate::markup::Html;
use crate::{Event, EventKind};

/// The chart's drawing box, in SVG units; it scales to the column's width.
const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 180.0;
const LEFT: f64 = 36.0;
const BOTTOM: f64 = 22.0;

/// One progress label's points over time.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub label: String,
    pub total: u64,
    /// `(at_ms, done)`, in time order.
    pub points: Vec<(u64, u64)>,
}

/// A process killed at a crash point: when, and whose.
#[derive(Clone, Debug, PartialEq)]
pub struct CrashMark {
    pub at_ms: u64,
    pub actor: String,
}

/// What the chart draws.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Drain {
    pub series: Vec<Series>,
    pub crashes: Vec<CrashMark>,
    /// The last moment drawn.
    pub end_ms: u64,
}

impl Drain {
    /// Folds the events: one series per progress label, in the order labels first appear.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> Drain {
        let mut drain = Drain::default();
        for event in events {
            match &event.kind {
                EventKind::Progress { label, done, total } => {
                    let series = match drain.series.iter_mut().position(|s| &s.label == label) {
                        Some(i) => &mut drain.series[i],
                        None => {
                            drain.series.push(Series {
                                label: label.clone(),
                                total: *total,
                                points: Vec::new(),
                            });
                            let last = drain.series.len() - 1;
                            &mut drain.series[last]
                        }
                    };
                    series.total = *total;
                    series.points.push((event.at_ms, *done));
                    drain.end_ms = drain.end_ms.max(event.at_ms);
                }
                EventKind::Crash { actor, .. } => {
                    drain.crashes.push(CrashMark {
                        at_ms: event.at_ms,
                        actor: actor.clone(),
                    });
                    drain.end_ms = drain.end_ms.max(event.at_ms);
                }
                _ => {}
            }
        }
        drain
    }

    /// Whether there is a curve to draw: some label reported progress at least three times.
    pub fn drawable(&self) -> bool {
        self.series.iter().any(|s| s.points.len() >= 3)
    }

    /// Each series' latest `(label, done, total)`.
    pub fn latest(&self) -> Vec<(&str, u64, u64)> {
        self.series
            .iter()
            .filter_map(|s| s.points.last().map(|(_, done)| (s.label.as_str(), *done, s.total)))
            .collect()
    }
}

/// The chart as the page draws it, inside its figure: each count's curve over time, a red line
/// wherever a process was killed (its title says whose, and when), and the legend. Written as
/// text, every text escaped; coordinates in tenths ([`one_decimal`]: an `f64`'s own formatting
/// would bring core's float code into the bundle).
pub fn html(drain: &Drain) -> String {
    let crashes = match drain.crashes.len() {
        1 => "1 process killed".to_owned(),
        n => format!("{n} processes killed"),
    };
    let seconds = one_decimal(drain.end_ms as f64 / 1000.0);
    let axis = one_decimal(HEIGHT - BOTTOM + 4.0);
    let tick_x = one_decimal(LEFT - 4.0);
    let mut html = Html::default();
    html.open(
        "svg",
        &[
            (
                "viewBox",
                Some(&format!("0 0 {} {}", one_decimal(WIDTH), one_decimal(HEIGHT + 8.0))),
            ),
            ("role", Some("img")),
            ("aria-label", Some(&format!("progress over {seconds} s, {crashes}"))),
        ],
    )
    .element(
        "line",
        &[
            ("class", Some("rl-drain-axis")),
            ("x1", Some(&one_decimal(LEFT))),
            ("x2", Some(&one_decimal(WIDTH))),
            ("y1", Some(&axis)),
            ("y2", Some(&axis)),
        ],
        "",
    );
    let tick = [
        ("class", Some("rl-drain-tick")),
        ("x", Some(&*tick_x)),
        ("y", Some("10")),
        ("text-anchor", Some("end")),
    ];
    html.element("text", &tick, "100%");
    let tick = [
        ("class", Some("rl-drain-tick")),
        ("x", Some(&*tick_x)),
        ("y", Some(&*axis)),
        ("text-anchor", Some("end")),
    ];
    html.element("text", &tick, "0");
    let end = [
        ("class", Some("rl-drain-tick")),
        ("x", Some(&*one_decimal(WIDTH - 4.0))),
        ("y", Some(&*one_decimal(HEIGHT + 4.0))),
        ("text-anchor", Some("end")),
    ];
    html.element("text", &end, &format!("{seconds} s"));
    lines(&mut html, drain, &axis);
    html.close("svg")
        .open("figcaption", &[])
        .open("ul", &[("class", Some("rl-drain-legend"))]);
    for (i, series) in drain.series.iter().enumerate() {
        html.element("li", &[("data-series", Some(&i.to_string()))], &series.label);
    }
    html.element(
        "li",
        &[("class", Some("rl-drain-legend-crash"))],
        &format!("{crashes} (red lines)"),
    )
    .close("ul")
    .close("figcaption");
    html.into_string()
}

/// The crash marks, down to the `axis`, and each count's curve.
fn lines(html: &mut Html, drain: &Drain, axis: &str) {
    let end = drain.end_ms.max(1) as f64;
    let x = |at_ms: u64| LEFT + (WIDTH - LEFT - 4.0) * at_ms as f64 / end;
    let y = |done: u64, total: u64| (HEIGHT - BOTTOM) * (1.0 - done as f64 / total.max(1) as f64) + 4.0;
    for crash in &drain.crashes {
        let at = one_decimal(x(crash.at_ms));
        html.open(
            "line",
            &[
                ("class", Some("rl-drain-crash")),
                ("x1", Some(&at)),
                ("x2", Some(&at)),
                ("y1", Some("4")),
                ("y2", Some(axis)),
            ],
        )
        .element(
            "title",
            &[],
            &format!("{} killed at {}", crash.actor, duration(crash.at_ms)),
        )
        .close("line");
    }
    for (i, series) in drain.series.iter().enumerate() {
        let points: Vec<String> = series
            .points
            .iter()
            .map(|&(at, done)| format!("{},{}", one_decimal(x(at)), one_decimal(y(done, series.total))))
            .collect();
        let attributes = [
            ("class", Some("rl-drain-line")),
            ("data-series", Some(&*i.to_string())),
            ("points", Some(&*points.join(" "))),
        ];
        html.element("polyline", &attributes, "");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(at_ms: u64, kind: EventKind) -> Event {
        Event {
            seq: at_ms,
            at_ms,
            kind,
        }
    }

    fn progress(label: &str, done: u64) -> EventKind {
        EventKind::Progress {
            label: label.into(),
            done,
            total: 10,
        }
    }

    #[test]
    fn labels_become_series_and_crashes_marks() {
        let events = vec![
            at(0, progress("published", 0)),
            at(0, progress("processed", 0)),
            at(250, progress("published", 4)),
            at(
                300,
                EventKind::Crash {
                    actor: "relay A".into(),
                    point: "after_produce".into(),
                },
            ),
            at(500, progress("published", 10)),
            at(500, progress("processed", 9)),
        ];
        let drain = Drain::from_events(&events);
        assert_eq!(drain.series.len(), 2);
        assert_eq!(drain.series[0].points, [(0, 0), (250, 4), (500, 10)]);
        assert_eq!(
            drain.crashes,
            [CrashMark {
                at_ms: 300,
                actor: "relay A".into()
            }]
        );
        assert_eq!(drain.end_ms, 500);
        assert!(drain.drawable());
        assert_eq!(drain.latest(), [("published", 10, 10), ("processed", 9, 10)]);
    }

    #[test]
    fn a_single_progress_report_is_no_curve() {
        let drain = Drain::from_events(&[at(9, progress("copies answered", 10))]);
        assert!(!drain.drawable());
    }

    #[test]
    fn the_page_draws_a_curve_per_count_and_a_red_line_per_crash() {
        let events = vec![
            at(0, progress("published", 0)),
            at(
                250,
                EventKind::Crash {
                    actor: "relay <A>".into(),
                    point: "after_produce".into(),
                },
            ),
            at(500, progress("published", 10)),
        ];
        let drawn = html(&Drain::from_events(&events));
        assert!(
            drawn.contains("aria-label=\"progress over 0.5 s, 1 process killed\""),
            "{drawn}"
        );
        assert!(
            drawn.contains("<line class=\"rl-drain-crash\" x1=\"336.0\" x2=\"336.0\" y1=\"4\" y2=\"162.0\"><title>relay &lt;A&gt; killed at"),
            "{drawn}"
        );
        assert!(
            drawn.contains(
                "<polyline class=\"rl-drain-line\" data-series=\"0\" points=\"36.0,162.0 636.0,4.0\"></polyline>"
            ),
            "{drawn}"
        );
        assert!(drawn.ends_with("<li data-series=\"0\">published</li><li class=\"rl-drain-legend-crash\">1 process killed (red lines)</li></ul></figcaption>"), "{drawn}");
    }
}
