//! `cargo bench --bench fairness`: a crowd of benign readers alone, then the same crowd beside
//! four hostile readers' specs (the most runs one address may have going), on one racelab
//! served on loopback; printed side by side, with racelab's own memory.
//!
//! The hostile specs each try a way to take the machine from everyone else: burning a core for
//! as long as the step limit allows, step after step; holding memory past any `work_mem`; printing
//! far more than a page shows; filling a temporary table past the disk bound. The benign crowd
//! plays the isolation lab's write skew (serializable), whose every verdict is known; its p95 beside
//! them is the figure the issue bounds (within 1.5× of alone).
//!
//! Arguments: the crowd's size (default 100).

#![allow(
    clippy::too_many_lines,
    reason = "a benchmark reads top to bottom as the measurement it makes"
)]

// The lab benchmarks' helpers; this one takes their configuration and engine.
#[allow(dead_code)]
mod common;

use common::Result;
use futures_util::{SinkExt, StreamExt};
use racelab::crowd::{Crowd, Summary};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

const READERS: usize = 100;

/// One core, busy for the step limit (10 s, then cancelled), five times: a join of the catalog
/// with itself, four deep, all CPU (no temporary file to run into its limit).
const BURNS_A_CORE: &str = "session burner
step b1 { SELECT count(*) FROM pg_class a, pg_class b, pg_class c, pg_class d; }
step b2 { SELECT count(*) FROM pg_class a, pg_class b, pg_class c, pg_class d; }
step b3 { SELECT count(*) FROM pg_class a, pg_class b, pg_class c, pg_class d; }
step b4 { SELECT count(*) FROM pg_class a, pg_class b, pg_class c, pg_class d; }
step b5 { SELECT count(*) FROM pg_class a, pg_class b, pg_class c, pg_class d; }
";

/// A sort at a work_mem of 2 GB, again and again.
const HOLDS_MEMORY: &str = "session hog
step m1 { SET work_mem = '2GB'; SELECT count(*) FROM (SELECT md5(g::text) AS h FROM generate_series(1, 8000000) g ORDER BY h) s; }
step m2 { SELECT count(*) FROM (SELECT md5(g::text) AS h FROM generate_series(1, 8000000) g ORDER BY h) s; }
step m3 { SELECT count(*) FROM (SELECT md5(g::text) AS h FROM generate_series(1, 8000000) g ORDER BY h) s; }
step m4 { SELECT count(*) FROM (SELECT md5(g::text) AS h FROM generate_series(1, 8000000) g ORDER BY h) s; }
";

/// A value of 1 MB beside NULLs that print as wide, in every step.
const PRINTS_A_LOT: &str = "session printer
step p1 { SELECT repeat('x', 900000) AS a, NULL AS b FROM generate_series(1, 1000); }
step p2 { SELECT repeat('y', 900000) AS a, NULL AS b FROM generate_series(1, 1000); }
step p3 { SELECT repeat('z', 900000) AS a, NULL AS b FROM generate_series(1, 1000); }
step p4 { SELECT NULL AS a, repeat('w', 900000) AS b FROM generate_series(1, 1000); }
";

/// A temporary table past the disk bound.
const FILLS_THE_DISK: &str = "session filler
step f1 { CREATE TEMPORARY TABLE t AS SELECT g, repeat('x', 1000) AS pad FROM generate_series(1, 400000) g; }
step f2 { SELECT count(*) FROM t; }
";

fn main() -> Result<()> {
    let readers = match std::env::args().skip(1).find(|a| !a.starts_with("--")) {
        Some(arg) => arg
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=racelab::crowd::MOST_READERS).contains(n))
            .ok_or_else(|| format!("the first argument is the crowd's size (1 to 1,000), not {arg:?}"))?,
        None => READERS,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(bench(readers))
}

/// The benign crowd's p95 beside the hostile runs, at most this many times its p95 alone.
const P95_GOAL: f64 = 1.5;
/// racelab's own memory (resident) at most, in MB, while the hostile runs play: what docs/
/// performance.md states as its bound under attack.
const MEMORY_GOAL_MB: u64 = 128;

async fn bench(readers: usize) -> Result<()> {
    let mut config = common::config();
    // The crowd comes from one address, loopback, as the hostile runs do: the per-address cap
    // would refuse it. The hostile runs are four, the cap's default.
    config.runs_per_client = 10_000;
    config.starts_per_minute = 100_000;
    let engine = common::engine(&config).await?;
    let state = racelab::web::AppState::new(engine.clone(), Arc::new(config));
    let app = racelab::web::router(state, std::path::Path::new("no-such-dist"));
    let (listener, address) = racelab::web::listen(([127, 0, 0, 1], 0).into()).await?;
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let url = format!("ws://{address}/ws");
    let crowd = Crowd {
        url: url.clone(),
        readers,
        scenario: "isolation/write-skew".to_owned(),
        variant: "serializable".to_owned(),
        within: Duration::from_secs(300),
    };
    // As `racelab serve` does as it starts: a ready database for each of one reader's runs.
    racelab::specs::confine::warm(&common::config().database_url, 4).await?;
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = tokio::spawn(sample_memory(peak.clone()));

    // Warm up (sandboxes made ahead, sessions kept), then the crowd alone.
    crowd.gather().await?;
    let rss_before = rss();
    let (seen, wall) = crowd.gather().await?;
    let alone = Summary::of(&seen, wall);

    let mut ids = Vec::new();
    for spec in [BURNS_A_CORE, HOLDS_MEMORY, PRINTS_A_LOT, FILLS_THE_DISK] {
        let saved = reqwest::Client::new()
            .post(format!("http://{address}/api/specs"))
            .body(spec)
            .send()
            .await?
            .text()
            .await?;
        let saved: serde_json::Value = serde_json::from_str(&saved)?;
        ids.push(saved["id"].as_str().ok_or("a saved spec's id")?.to_owned());
    }
    let hostile: Vec<_> = ids
        .iter()
        .map(|id| tokio::spawn(play_spec(url.clone(), format!("spec/{id}"))))
        .collect();
    // Once every hostile run has its sessions and its first step under way.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (seen, wall) = crowd.gather().await?;
    let beside = Summary::of(&seen, wall);
    let mut hostile_ends = Vec::new();
    for run in hostile {
        hostile_ends.push(run.await.map_err(|e| e.to_string())??);
    }
    let rss_after = rss();
    sampler.abort();
    server.abort();
    engine.close(Duration::from_secs(5), Duration::from_secs(5)).await;
    racelab::specs::confine::drain().await;

    println!("fairness: {readers} readers of isolation/write-skew (serializable), alone and beside 4 hostile specs");
    println!("                     alone      beside hostile   ratio");
    let ms = common::millis;
    for (label, a, b) in [
        ("p50", alone.p50, beside.p50),
        ("p95", alone.p95, beside.p95),
        ("max", alone.max, beside.max),
    ] {
        println!(
            "  {label:<16} {:>9.0} ms {:>12.0} ms   {:.2}x",
            ms(a),
            ms(b),
            ms(b) / ms(a).max(1.0)
        );
    }
    println!(
        "  runs/s           {:>9.1}    {:>12.1}",
        alone.runs_per_s(),
        beside.runs_per_s()
    );
    println!("  verdicts alone:  {:?}", alone.verdicts);
    println!("  verdicts beside: {:?}", beside.verdicts);
    println!(
        "  refused/lost:    {:?} / {} (alone), {:?} / {} (beside)",
        alone.refused, alone.lost, beside.refused, beside.lost
    );
    for ((name, _), (took, outcome, bytes)) in ["burns a core", "holds memory", "prints a lot", "fills the disk"]
        .iter()
        .zip(ids.iter())
        .zip(hostile_ends)
    {
        println!(
            "  hostile, {name:<15} {:>6.1} s  {outcome}  ({} kB of frames)",
            took.as_secs_f64(),
            bytes / 1024
        );
    }
    println!(
        "  racelab's memory: {} MB before, {} MB at most, {} MB after",
        rss_before >> 20,
        peak.load(Ordering::Relaxed) >> 20,
        rss_after >> 20
    );
    let ratio = ms(beside.p95) / ms(alone.p95).max(1.0);
    let peak_mb = peak.load(Ordering::Relaxed) >> 20;
    let met = |yes: bool| if yes { "met" } else { "NOT met" };
    println!(
        "  goals: p95 beside within {P95_GOAL}x alone: {} ({ratio:.2}x); racelab at most {MEMORY_GOAL_MB} MB: {} ({peak_mb} MB)",
        met(ratio <= P95_GOAL),
        met(peak_mb <= MEMORY_GOAL_MB)
    );
    if alone.verdicts != beside.verdicts {
        return Err("the benign crowd's verdicts differ beside the hostile runs".into());
    }
    if ratio > P95_GOAL || peak_mb > MEMORY_GOAL_MB {
        return Err("a goal is not met (above)".into());
    }
    Ok(())
}

/// Plays `scenario` (a saved spec, its first permutation) over the websocket to its end: how
/// long it took, how it ended, and the bytes of frames it sent.
async fn play_spec(url: String, scenario: String) -> Result<(Duration, String, usize)> {
    let (mut socket, _) = tokio_tungstenite::connect_async(url).await?;
    let start = serde_json::json!({"v": 1, "type": "start", "scenario": scenario, "variant": "p1", "mode": "auto"});
    socket.send(Message::Text(start.to_string().into())).await?;
    let started = Instant::now();
    let mut bytes = 0;
    while let Some(message) = tokio::time::timeout(Duration::from_secs(300), socket.next()).await? {
        let Message::Text(text) = message? else { continue };
        bytes += text.len();
        let frame: serde_json::Value = serde_json::from_str(text.as_str())?;
        match frame["type"].as_str() {
            Some("done") => return Ok((started.elapsed(), frame["outcome"].to_string(), bytes)),
            Some("error") => return Ok((started.elapsed(), format!("refused: {}", frame["message"]), bytes)),
            _ => {}
        }
    }
    Ok((started.elapsed(), "the socket closed".to_owned(), bytes))
}

/// This process's resident memory (racelab serves from it), in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Keeps the highest [`rss`] seen, every 100 ms.
async fn sample_memory(peak: Arc<AtomicU64>) {
    loop {
        peak.fetch_max(rss(), Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
