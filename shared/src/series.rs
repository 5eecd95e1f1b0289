//! Progress over time, for the picture of a run that drains a pipeline (the outbox's chaos test):
//! each progress label's points, `(ms since the start, done)`, and the moments a process was
//! killed. Pure, so the chart draws exactly what a replay of the same events would.

use crate::{Event, EventKind};

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
}
