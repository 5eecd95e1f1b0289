//! What the engine counts for `/metrics`: runs started and finished (by lab and outcome), how
//! long runs waited in line and how long they played (histograms), and the text format
//! Prometheus reads (version 0.0.4), written here so the exposition has no dependency.
//!
//! Counters only go up and live as long as the process, as Prometheus expects; gauges (the
//! line, sandboxes, connections, readers, rooms) are read when scraped, by their owners.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the histograms' buckets, in seconds: a run plays in tens of milliseconds
/// to a minute (the load test), and waits in line from nothing to the queue's limit.
const BUCKETS: [f64; 12] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

/// A histogram in seconds: counts per bucket (not cumulative; the text makes them so), sum, count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Histogram {
    counts: [u64; BUCKETS.len()],
    over: u64,
    sum: f64,
    count: u64,
}

impl Histogram {
    pub fn observe(&mut self, took: Duration) {
        let seconds = took.as_secs_f64();
        match BUCKETS.iter().position(|&bound| seconds <= bound) {
            Some(i) => self.counts[i] += 1,
            None => self.over += 1,
        }
        self.sum += seconds;
        self.count += 1;
    }

    fn write(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut cumulative = 0;
        for (bound, count) in BUCKETS.iter().zip(self.counts) {
            cumulative += count;
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {cumulative}");
        }
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", cumulative + self.over);
        let _ = writeln!(out, "{name}_sum {}\n{name}_count {}", self.sum, self.count);
    }
}

#[derive(Default)]
struct Counts {
    started: BTreeMap<String, u64>,
    finished: BTreeMap<(String, &'static str), u64>,
    queue_wait: Histogram,
    duration: Histogram,
}

/// The engine's counters.
#[derive(Default)]
pub struct Metrics(Mutex<Counts>);

/// The lab of a scenario id: `isolation` for `isolation/write-skew`, `spec` for a reader's spec.
pub fn lab_of(scenario: &str) -> &str {
    scenario.split('/').next().unwrap_or(scenario)
}

impl Metrics {
    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A run left the line after `waited` and starts playing.
    pub fn started(&self, scenario: &str, waited: Duration) {
        let mut counts = self.counts();
        *counts.started.entry(lab_of(scenario).to_owned()).or_default() += 1;
        counts.queue_wait.observe(waited);
    }

    /// A run ended with `outcome` (`completed`, `failed`, `cancelled`) after playing `took`.
    pub fn finished(&self, scenario: &str, outcome: &'static str, took: Duration) {
        let mut counts = self.counts();
        *counts
            .finished
            .entry((lab_of(scenario).to_owned(), outcome))
            .or_default() += 1;
        counts.duration.observe(took);
    }

    /// How many runs have finished, whatever their outcome.
    pub fn finished_total(&self) -> u64 {
        self.counts().finished.values().sum()
    }

    /// The counters and histograms in Prometheus's text format.
    pub fn render(&self, out: &mut String) {
        let counts = self.counts();
        let _ = writeln!(
            out,
            "# HELP racelab_runs_started_total Runs that left the line and started playing, by lab.\n\
             # TYPE racelab_runs_started_total counter"
        );
        for (lab, n) in &counts.started {
            let _ = writeln!(out, "racelab_runs_started_total{{lab=\"{}\"}} {n}", label(lab));
        }
        let _ = writeln!(
            out,
            "# HELP racelab_runs_finished_total Runs that ended, by lab and outcome.\n\
             # TYPE racelab_runs_finished_total counter"
        );
        for ((lab, outcome), n) in &counts.finished {
            let _ = writeln!(
                out,
                "racelab_runs_finished_total{{lab=\"{}\",outcome=\"{outcome}\"}} {n}",
                label(lab)
            );
        }
        counts.queue_wait.write(
            out,
            "racelab_queue_wait_seconds",
            "How long runs waited in line before playing.",
        );
        counts
            .duration
            .write(out, "racelab_run_duration_seconds", "How long runs played.");
    }
}

/// A gauge, with its help and type lines.
pub fn gauge(out: &mut String, name: &str, help: &str, samples: &[(&str, f64)]) {
    family(out, (name, "gauge"), help, samples);
}

/// A counter read from its owner when scraped, with its help and type lines.
pub fn counter(out: &mut String, name: &str, help: &str, samples: &[(&str, f64)]) {
    family(out, (name, "counter"), help, samples);
}

fn family(out: &mut String, (name, kind): (&str, &str), help: &str, samples: &[(&str, f64)]) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    for (labels, value) in samples {
        let _ = writeln!(out, "{name}{labels} {value}");
    }
}

/// A label value with Prometheus's three escapes.
pub fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_histograms_read_as_prometheus_text() {
        let metrics = Metrics::default();
        metrics.started("isolation/write-skew", Duration::from_millis(3));
        metrics.started("spec/0123abcd", Duration::from_millis(700));
        metrics.finished("isolation/write-skew", "completed", Duration::from_millis(40));
        metrics.finished("isolation/write-skew", "completed", Duration::from_secs(90));
        let mut out = String::new();
        metrics.render(&mut out);
        assert!(
            out.contains("racelab_runs_started_total{lab=\"isolation\"} 1\n"),
            "{out}"
        );
        assert!(out.contains("racelab_runs_started_total{lab=\"spec\"} 1\n"), "{out}");
        assert!(out.contains("racelab_runs_finished_total{lab=\"isolation\",outcome=\"completed\"} 2\n"));
        assert!(
            out.contains("racelab_queue_wait_seconds_bucket{le=\"0.01\"} 1\n"),
            "{out}"
        );
        assert!(out.contains("racelab_queue_wait_seconds_bucket{le=\"1\"} 2\n"), "{out}");
        assert!(
            out.contains("racelab_run_duration_seconds_bucket{le=\"60\"} 1\n"),
            "{out}"
        );
        assert!(
            out.contains("racelab_run_duration_seconds_bucket{le=\"+Inf\"} 2\n"),
            "{out}"
        );
        assert!(out.contains("racelab_run_duration_seconds_count 2\n"), "{out}");
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
