//! `racelab crowd`: a crowd of readers pressing Run at the same moment, against a racelab on this
//! machine, to see what a post on a front page does to it.
//!
//! Every reader opens its own websocket first; then all of them send `start` at once, and each
//! times its run from that frame to its `done`. The crowd is bounded (at most [`MOST_READERS`],
//! each waiting at most the time it is given) and reaches only loopback addresses: it is a tool to
//! measure your own racelab, not to load someone else's. A reader that has no `done` in time
//! drops its socket, which cancels its run.
//!
//! Note: `racelab serve` caps the runs of one reader address (`RACELAB_RUNS_PER_CLIENT`,
//! `RACELAB_STARTS_PER_MINUTE`), and every reader of a crowd comes from 127.0.0.1: raise both for
//! a crowd bigger than the caps, or the summary shows the refusals (`too_many`).

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

/// The most readers one crowd may have.
pub const MOST_READERS: usize = 1_000;
/// The longest a crowd may wait for its runs.
pub const LONGEST_WAIT: Duration = Duration::from_secs(600);

/// Who presses Run, where, and on what.
#[derive(Clone, Debug)]
pub struct Crowd {
    /// `ws://127.0.0.1:8080/ws`.
    pub url: String,
    pub readers: usize,
    pub scenario: String,
    pub variant: String,
    /// How long every reader waits for its `done`, from the moment they all press Run.
    pub within: Duration,
}

/// Why a crowd was not sent.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CrowdError {
    #[error(
        "{0:?} is not a websocket URL on this machine (ws://127.0.0.1:…, ws://[::1]:… or ws://localhost:…): a crowd only loads your own racelab"
    )]
    NotLoopback(String),
    #[error("a crowd has 1 to {MOST_READERS} readers, not {0}")]
    Size(usize),
    #[error("a crowd waits at most {most} s, not {0} s", most = LONGEST_WAIT.as_secs())]
    TooLong(u64),
}

/// What one reader saw.
#[derive(Clone, Debug, PartialEq)]
pub enum Seen {
    /// The run ended: how, after how long, and the verdict's kind if it gave one.
    Done {
        took: Duration,
        outcome: String,
        verdict: Option<String>,
    },
    /// The server refused the run (an `error` frame): its code.
    Refused { code: String },
    /// No `done` in time, or the socket failed: why.
    Lost { why: String },
}

/// Checks that `url` is a `ws://` URL of this machine.
pub fn loopback(url: &str) -> Result<(), CrowdError> {
    let refused = || CrowdError::NotLoopback(url.to_owned());
    let rest = url.strip_prefix("ws://").ok_or_else(refused)?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err(refused());
    }
    let host = match authority.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    match host {
        "localhost" => Ok(()),
        host => match host.parse::<std::net::IpAddr>() {
            Ok(ip) if ip.is_loopback() => Ok(()),
            _ => Err(refused()),
        },
    }
}

impl Crowd {
    /// Checks the crowd's bounds and address.
    pub fn check(&self) -> Result<(), CrowdError> {
        loopback(&self.url)?;
        if self.readers == 0 || self.readers > MOST_READERS {
            return Err(CrowdError::Size(self.readers));
        }
        if self.within > LONGEST_WAIT {
            return Err(CrowdError::TooLong(self.within.as_secs()));
        }
        Ok(())
    }

    /// Sends the crowd: every reader connects, then all press Run at once. Returns what each saw
    /// and the wall time from the first Run to the last reader's end.
    pub async fn gather(&self) -> Result<(Vec<Seen>, Duration), CrowdError> {
        self.check()?;
        let (go, _) = tokio::sync::broadcast::channel::<Instant>(1);
        let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(self.readers);
        let readers: Vec<_> = (0..self.readers)
            .map(|_| {
                let (crowd, mut go, ready) = (self.clone(), go.subscribe(), ready_tx.clone());
                tokio::spawn(async move {
                    // Frames sent at once, as the server sends its own (no Nagle delay); read
                    // in small pieces, as the server reads (`web::ws::READ_BUFFER`).
                    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
                        .read_buffer_size(crate::web::ws::READ_BUFFER);
                    let connecting = tokio_tungstenite::connect_async_with_config(&crowd.url, Some(config), true);
                    let socket = tokio::time::timeout(crowd.within, connecting).await;
                    let _ = ready.send(()).await;
                    let socket = match socket {
                        Ok(Ok((socket, _))) => socket,
                        Ok(Err(error)) => {
                            return Seen::Lost {
                                why: format!("could not connect: {error}"),
                            };
                        }
                        Err(_) => {
                            return Seen::Lost {
                                why: "could not connect in time".to_owned(),
                            };
                        }
                    };
                    let Ok(pressed) = go.recv().await else {
                        return Seen::Lost {
                            why: "the crowd was called off".to_owned(),
                        };
                    };
                    crowd.read(socket, pressed).await
                })
            })
            .collect();
        drop(ready_tx);
        for _ in 0..self.readers {
            if ready_rx.recv().await.is_none() {
                break;
            }
        }
        let pressed = Instant::now();
        let _ = go.send(pressed);
        let mut seen = Vec::with_capacity(self.readers);
        for reader in readers {
            seen.push(reader.await.unwrap_or_else(|error| Seen::Lost {
                why: format!("the reader crashed: {error}"),
            }));
        }
        Ok((seen, pressed.elapsed()))
    }

    /// Presses Run on `socket` and reads until `done` (or an error, or the deadline).
    async fn read(
        &self,
        mut socket: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
        pressed: Instant,
    ) -> Seen {
        let start = json!({"v": 1, "type": "start", "scenario": self.scenario, "variant": self.variant});
        if let Err(error) = socket.send(Message::Text(start.to_string().into())).await {
            return Seen::Lost {
                why: format!("could not press Run: {error}"),
            };
        }
        let deadline = tokio::time::Instant::from_std(pressed) + self.within;
        let mut verdict = None;
        loop {
            let message = match tokio::time::timeout_at(deadline, socket.next()).await {
                Err(_) => {
                    return Seen::Lost {
                        why: format!("no done within {} s", self.within.as_secs()),
                    };
                }
                Ok(None) => {
                    return Seen::Lost {
                        why: "the server closed the socket".to_owned(),
                    };
                }
                Ok(Some(Err(error))) => return Seen::Lost { why: error.to_string() },
                Ok(Some(Ok(message))) => message,
            };
            let Message::Text(text) = message else { continue };
            let Ok(frame) = serde_json::from_str::<Value>(text.as_str()) else {
                continue;
            };
            match frame["type"].as_str() {
                Some("error") => {
                    return Seen::Refused {
                        code: frame["code"].as_str().unwrap_or("error").to_owned(),
                    };
                }
                Some("event") if frame["event"]["type"] == "verdict" => {
                    verdict = frame["event"]["verdict"]["kind"].as_str().map(str::to_owned);
                }
                Some("done") => {
                    return Seen::Done {
                        took: pressed.elapsed(),
                        outcome: frame["outcome"]["status"].as_str().unwrap_or("?").to_owned(),
                        verdict,
                    };
                }
                _ => {}
            }
        }
    }
}

/// What a crowd saw, in figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub readers: usize,
    /// `done` by outcome (`completed`, `failed`, `cancelled`).
    pub outcomes: BTreeMap<String, usize>,
    /// Completed runs by verdict kind.
    pub verdicts: BTreeMap<String, usize>,
    /// Refusals by error code.
    pub refused: BTreeMap<String, usize>,
    pub lost: usize,
    /// Over the runs that ended (`done`).
    pub p50: Duration,
    pub p95: Duration,
    pub max: Duration,
    pub wall: Duration,
}

/// The value at percentile `p` (0–100) of `sorted` times, nearest rank; zero for none.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

impl Summary {
    pub fn of(seen: &[Seen], wall: Duration) -> Summary {
        let mut summary = Summary {
            readers: seen.len(),
            outcomes: BTreeMap::new(),
            verdicts: BTreeMap::new(),
            refused: BTreeMap::new(),
            lost: 0,
            p50: Duration::ZERO,
            p95: Duration::ZERO,
            max: Duration::ZERO,
            wall,
        };
        let mut times = Vec::new();
        for reader in seen {
            match reader {
                Seen::Done { took, outcome, verdict } => {
                    times.push(*took);
                    *summary.outcomes.entry(outcome.clone()).or_default() += 1;
                    if let Some(verdict) = verdict {
                        *summary.verdicts.entry(verdict.clone()).or_default() += 1;
                    }
                }
                Seen::Refused { code } => *summary.refused.entry(code.clone()).or_default() += 1,
                Seen::Lost { .. } => summary.lost += 1,
            }
        }
        times.sort_unstable();
        summary.p50 = percentile(&times, 50.0);
        summary.p95 = percentile(&times, 95.0);
        summary.max = times.last().copied().unwrap_or_default();
        summary
    }

    /// Runs that ended, per second of the crowd's wall time.
    pub fn runs_per_s(&self) -> f64 {
        let ended: usize = self.outcomes.values().sum();
        ended as f64 / self.wall.as_secs_f64().max(f64::EPSILON)
    }
}

fn counts(counts: &BTreeMap<String, usize>) -> String {
    if counts.is_empty() {
        return "none".to_owned();
    }
    counts
        .iter()
        .map(|(what, n)| format!("{what} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1_000.0;
        writeln!(f, "readers: {}", self.readers)?;
        writeln!(f, "done: {}", counts(&self.outcomes))?;
        writeln!(f, "verdicts: {}", counts(&self.verdicts))?;
        writeln!(f, "refused: {}", counts(&self.refused))?;
        writeln!(f, "lost: {}", self.lost)?;
        writeln!(
            f,
            "Run → done: p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms",
            ms(self.p50),
            ms(self.p95),
            ms(self.max)
        )?;
        write!(
            f,
            "wall {:.2} s, {:.1} runs/s",
            self.wall.as_secs_f64(),
            self.runs_per_s()
        )
    }
}

/// The racelab's `/metrics` beside its websocket: `ws://127.0.0.1:8080/ws` →
/// `http://127.0.0.1:8080/metrics`.
pub fn metrics_url(ws: &str) -> Option<String> {
    let rest = ws.strip_prefix("ws://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    Some(format!("http://{authority}/metrics"))
}

/// Prometheus text as samples: `name{labels}` → value (comments and malformed lines left out).
pub fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            Some((name.to_owned(), value.parse().ok()?))
        })
        .collect()
}

/// What the racelab said about itself (`/metrics`) while the crowd played: the server's side
/// of the same runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerSide {
    /// Runs that finished during the crowd, by outcome.
    pub finished: BTreeMap<String, f64>,
    /// The mean wait in line and the mean run, in seconds, of the runs that started and
    /// finished during it.
    pub mean_wait_s: f64,
    pub mean_run_s: f64,
    /// The longest line and the most runs playing at once, as sampled.
    pub most_waiting: f64,
    pub most_playing: f64,
    /// Each server's most connections in use at once, as sampled, and its budget.
    pub most_in_use: BTreeMap<String, (f64, f64)>,
    /// Runs' sandboxes reset and played in again rather than made anew.
    pub reused: f64,
}

impl ServerSide {
    /// From the samples before the crowd, during it (every scrape), and after.
    pub fn between(
        before: &BTreeMap<String, f64>,
        during: &[BTreeMap<String, f64>],
        after: &BTreeMap<String, f64>,
    ) -> Self {
        let moved = |name: &str| after.get(name).copied().unwrap_or(0.0) - before.get(name).copied().unwrap_or(0.0);
        let mean = |histogram: &str| {
            let count = moved(&format!("{histogram}_count"));
            if count > 0.0 {
                moved(&format!("{histogram}_sum")) / count
            } else {
                0.0
            }
        };
        let mut side = ServerSide {
            mean_wait_s: mean("racelab_queue_wait_seconds"),
            mean_run_s: mean("racelab_run_duration_seconds"),
            reused: moved("racelab_sandboxes_reused_total"),
            ..ServerSide::default()
        };
        for name in after.keys().filter(|k| k.starts_with("racelab_runs_finished_total{")) {
            let outcome = name
                .split("outcome=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap_or("?");
            *side.finished.entry(outcome.to_owned()).or_default() += moved(name);
        }
        for sample in during.iter().chain([after]) {
            let at = |name: &str| sample.get(name).copied().unwrap_or(0.0);
            side.most_waiting = side.most_waiting.max(at("racelab_queue_length"));
            side.most_playing = side.most_playing.max(at("racelab_runs_playing"));
            for (name, value) in sample
                .iter()
                .filter(|(k, _)| k.starts_with("racelab_connections_in_use{"))
            {
                let labels = &name["racelab_connections_in_use".len()..];
                let budget = sample
                    .get(&format!("racelab_connections_budget{labels}"))
                    .copied()
                    .unwrap_or(0.0);
                let most = side.most_in_use.entry(labels.to_owned()).or_default();
                *most = (most.0.max(*value), budget);
            }
        }
        side
    }
}

impl fmt::Display for ServerSide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let finished: Vec<String> = self.finished.iter().map(|(o, n)| format!("{o} {n:.0}")).collect();
        writeln!(
            f,
            "server (/metrics): finished {}",
            if finished.is_empty() {
                "none".to_owned()
            } else {
                finished.join(", ")
            }
        )?;
        writeln!(
            f,
            "  mean wait in line {:.0} ms, mean run {:.0} ms; at most {:.0} waiting, {:.0} playing; {:.0} sandboxes reused",
            self.mean_wait_s * 1_000.0,
            self.mean_run_s * 1_000.0,
            self.most_waiting,
            self.most_playing,
            self.reused
        )?;
        let servers: Vec<String> = self
            .most_in_use
            .iter()
            .map(|(labels, (most, budget))| format!("{labels} {most:.0} of {budget:.0}"))
            .collect();
        write!(f, "  connections in use at most: {}", servers.join(", "))
    }
}

/// One scrape of `url` (none if it does not answer in a second).
pub async fn scrape(client: &reqwest::Client, url: &str) -> Option<BTreeMap<String, f64>> {
    let answer = client.get(url).timeout(Duration::from_secs(1)).send().await.ok()?;
    Some(samples(&answer.text().await.ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metrics_sit_beside_the_websocket() {
        assert_eq!(
            metrics_url("ws://127.0.0.1:8080/ws").as_deref(),
            Some("http://127.0.0.1:8080/metrics")
        );
        assert_eq!(
            metrics_url("ws://[::1]:9000/ws?x=1").as_deref(),
            Some("http://[::1]:9000/metrics")
        );
        assert_eq!(metrics_url("wss://example.com/ws"), None);
    }

    #[test]
    fn the_server_side_is_what_moved_and_the_most_seen() {
        let before = samples(
            "# HELP x\nracelab_runs_finished_total{lab=\"isolation\",outcome=\"completed\"} 10\n\
             racelab_queue_wait_seconds_sum 1\nracelab_queue_wait_seconds_count 10\n\
             racelab_run_duration_seconds_sum 2\nracelab_run_duration_seconds_count 10\n\
             racelab_sandboxes_reused_total 7\nnot a sample\n",
        );
        let during = [samples(
            "racelab_queue_length 40\nracelab_runs_playing 6\n\
             racelab_connections_in_use{server=\"a\",version=\"15\"} 18\n\
             racelab_connections_budget{server=\"a\",version=\"15\"} 87\n",
        )];
        let after = samples(
            "racelab_runs_finished_total{lab=\"isolation\",outcome=\"completed\"} 110\n\
             racelab_runs_finished_total{lab=\"isolation\",outcome=\"failed\"} 2\n\
             racelab_queue_wait_seconds_sum 51\nracelab_queue_wait_seconds_count 112\n\
             racelab_run_duration_seconds_sum 24.4\nracelab_run_duration_seconds_count 112\n\
             racelab_queue_length 0\nracelab_runs_playing 0\n\
             racelab_connections_in_use{server=\"a\",version=\"15\"} 0\n\
             racelab_connections_budget{server=\"a\",version=\"15\"} 87\n\
             racelab_sandboxes_reused_total 101\n",
        );
        let side = ServerSide::between(&before, &during, &after);
        assert_eq!(
            side.finished,
            BTreeMap::from([("completed".to_owned(), 100.0), ("failed".to_owned(), 2.0)])
        );
        assert!((side.mean_wait_s - 50.0 / 102.0).abs() < 1e-9, "{side:?}");
        assert!((side.mean_run_s - 22.4 / 102.0).abs() < 1e-9, "{side:?}");
        assert_eq!((side.most_waiting, side.most_playing), (40.0, 6.0));
        assert_eq!(side.reused, 94.0);
        assert_eq!(
            side.most_in_use,
            BTreeMap::from([("{server=\"a\",version=\"15\"}".to_owned(), (18.0, 87.0))])
        );
        let text = side.to_string();
        assert!(text.contains("finished completed 100, failed 2"), "{text}");
        assert!(text.contains("94 sandboxes reused"), "{text}");
        assert!(text.contains("{server=\"a\",version=\"15\"} 18 of 87"), "{text}");
    }

    #[test]
    fn a_crowd_only_reaches_this_machine() {
        for ok in [
            "ws://127.0.0.1:8080/ws",
            "ws://localhost:8080/ws",
            "ws://[::1]:8080/ws",
            "ws://127.0.0.2/ws",
        ] {
            assert_eq!(loopback(ok), Ok(()), "{ok}");
        }
        for refused in [
            "ws://racelab.example/ws",
            "wss://127.0.0.1/ws",
            "http://127.0.0.1/ws",
            "ws://10.0.0.1:8080/ws",
            "ws://127.0.0.1@evil.example/ws",
            "ws://localhost.evil.example/ws",
            "ws://[::2]:8080/ws",
        ] {
            assert!(loopback(refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn a_crowd_is_bounded() {
        let crowd = Crowd {
            url: "ws://127.0.0.1:8080/ws".into(),
            readers: 200,
            scenario: "isolation/write-skew".into(),
            variant: "serializable".into(),
            within: Duration::from_secs(60),
        };
        assert_eq!(crowd.check(), Ok(()));
        assert_eq!(
            Crowd {
                readers: 0,
                ..crowd.clone()
            }
            .check(),
            Err(CrowdError::Size(0))
        );
        assert_eq!(
            Crowd {
                readers: 1_001,
                ..crowd.clone()
            }
            .check(),
            Err(CrowdError::Size(1_001))
        );
        assert_eq!(
            Crowd {
                within: Duration::from_secs(601),
                ..crowd
            }
            .check(),
            Err(CrowdError::TooLong(601))
        );
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let times: Vec<Duration> = (1..=20).map(Duration::from_millis).collect();
        assert_eq!(percentile(&times, 50.0), Duration::from_millis(10));
        assert_eq!(percentile(&times, 95.0), Duration::from_millis(19));
        assert_eq!(percentile(&times, 100.0), Duration::from_millis(20));
        assert_eq!(percentile(&times[..1], 95.0), Duration::from_millis(1));
        assert_eq!(percentile(&[], 95.0), Duration::ZERO);
    }

    #[test]
    fn a_summary_counts_what_each_reader_saw() {
        let done = |ms: u64, verdict: &str| Seen::Done {
            took: Duration::from_millis(ms),
            outcome: "completed".into(),
            verdict: Some(verdict.into()),
        };
        let seen = [
            done(100, "prevented"),
            done(300, "prevented"),
            done(200, "reproduced"),
            Seen::Refused {
                code: "too_many".into(),
            },
            Seen::Lost { why: "no done".into() },
        ];
        let summary = Summary::of(&seen, Duration::from_secs(2));
        assert_eq!(summary.readers, 5);
        assert_eq!(summary.verdicts.get("prevented"), Some(&2));
        assert_eq!(summary.refused.get("too_many"), Some(&1));
        assert_eq!(
            (summary.lost, summary.p50, summary.max),
            (1, Duration::from_millis(200), Duration::from_millis(300))
        );
        assert!((summary.runs_per_s() - 1.5).abs() < 1e-9);
        let text = summary.to_string();
        assert!(
            text.contains("verdicts: prevented 2, reproduced 1") && text.contains("1.5 runs/s"),
            "{text}"
        );
    }
}
