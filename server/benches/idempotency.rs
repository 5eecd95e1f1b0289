//! How long the idempotency lab's S14 load test takes and how many requests per second it serves,
//! beside the tutorial's figures and beside the same burst sent by a bare HTTP client, measured
//! side by side in one run.
//!
//! `cargo bench --bench idempotency`. Loopback only; about a minute on a busy two-core machine.
//!
//! Two columns, interleaved run by run (racelab, bare, racelab, …) after one untimed warm-up
//! pair, so whatever drifts on a shared machine lands on both alike:
//! - **racelab**: `idempotency/load-test` played through the engine (`Engine::start` in auto
//!   mode). Its burst is timed from the run's own events: from the shown copy's first request to
//!   the "copies answered" progress event, when the last of the 150 copies has its answer. The
//!   requests are its counted lines (every attempt is one request); requests/s is their sum over
//!   the burst. Wall time (`Engine::start` → `Done`) adds the sandbox, the servers and the ledgers.
//! - **bare**: a bench-only scenario that starts the same servers (shop with a 30 s lease and the
//!   provider key, provider pool of 32) and sends the same 150 copies with the same schedule
//!   (3 s, then 3 s; 300 ms backoff doubling; retry on 409 and 5xx) from a plain reqwest client:
//!   no lanes, no `Call`, no events. racelab/bare is what the phone's lanes cost.
//!
//! The tutorial printed no per-request timing: its run "took about 3 seconds" (about 5 with Go's
//! race detector), for 30 + 120 + 360 = 510 requests. Both columns are bound below by the
//! choreography itself: a losing copy's fourth attempt starts after 300 + 600 + 1200 ms of
//! backoff, and a winner's charge takes the provider's one second.

mod common;

use common::{EngineRun, Result, engine_run, median, millis};
use racelab::engine::{Engine, Run, RunError};
use racelab::labs::ScenarioDef;
use racelab::labs::idempotency::load_test::{BASE_AMOUNT, COPIES, LEASE, PAYMENTS, PROVIDER_POOL};
use racelab::labs::idempotency::shop::{Mode, Options};
use racelab::labs::idempotency::{CARD, CUSTOMER, Servers};
use shared::EventKind;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Timed runs per column, after one untimed warm-up pair.
const ROUNDS: usize = 5;
/// The phone's schedule, as the load test's copies use it.
const TIMEOUT: Duration = Duration::from_secs(3);
const ATTEMPTS: u32 = 4;
const BACKOFF: Duration = Duration::from_millis(300);

/// The bare burst's measurement: (burst duration, requests, statuses), written by the scenario
/// and taken by the benchmark after `Done`. Runs are played one at a time.
static BARE: Mutex<Option<(Duration, u64, Statuses)>> = Mutex::new(None);

/// How many answers of each kind a burst got.
#[derive(Clone, Copy, Debug, Default)]
struct Statuses {
    fresh: u64,
    replayed: u64,
    conflicts: u64,
    other: u64,
}

/// The bench's own scenario: the load test's servers and burst, from a bare client.
static BARE_BURST: ScenarioDef = ScenarioDef {
    id: "bench/bare-burst",
    title: "bench/bare-burst",
    hook: "",
    about: "",
    steppable: false,
    workload: false,
    variants: &[("only", "only", "")],
    sandbox: racelab::labs::idempotency::SANDBOX,
    actors: |_| racelab::labs::actors_at(&["bench"], "bare reqwest"),
    budget: Some(|_| racelab::engine::Budget::postgres(PROVIDER_POOL + racelab::labs::idempotency::POOL)),
    play: |run, _| Box::pin(bare_burst(run)),
    summarize: None,
    predict: None,
};

async fn bare_burst(run: &Run) -> std::result::Result<(), RunError> {
    let servers = Servers::start_for_crowd(run, Mode::Idempotent(Options::leased(LEASE, true)), PROVIDER_POOL).await?;
    let url = servers.shop.url("/payments");
    let started = Instant::now();
    let copies = (1..=PAYMENTS).flat_map(|payment| {
        let key = racelab::labs::rand_text();
        let body = format!("{{\"amount\": {}, \"card\": {CARD:?}}}", BASE_AMOUNT + payment as i64);
        (0..COPIES).map(move |_| (key.clone(), body.clone()))
    });
    let answers = futures_util::future::join_all(copies.map(|(key, body)| {
        let url = url.clone();
        async move { bare_copy(&url, &key, &body).await }
    }))
    .await;
    let burst = started.elapsed();
    servers.settle().await?;
    let mut statuses = Statuses::default();
    let mut requests = 0;
    for copy in answers {
        for (status, replayed) in copy {
            requests += 1;
            match (status, replayed) {
                (201, false) => statuses.fresh += 1,
                (201, true) => statuses.replayed += 1,
                (409, _) => statuses.conflicts += 1,
                _ => statuses.other += 1,
            }
        }
    }
    *BARE.lock().unwrap_or_else(|p| p.into_inner()) = Some((burst, requests, statuses));
    Ok(())
}

/// One copy's attempts, as the tutorial's client makes them: `(status, replayed)` per attempt,
/// status 0 for no answer.
async fn bare_copy(url: &str, key: &str, body: &str) -> Vec<(u16, bool)> {
    let mut attempts = Vec::new();
    let mut backoff = BACKOFF;
    for _ in 0..ATTEMPTS {
        let answer = async {
            let client = reqwest::Client::builder().timeout(TIMEOUT).build()?;
            let response = client
                .post(url)
                .header("Content-Type", "application/json")
                .header("Customer-ID", CUSTOMER)
                .header("Idempotency-Key", key)
                .body(body.to_owned())
                .send()
                .await?;
            let replayed = response
                .headers()
                .get("idempotent-replayed")
                .is_some_and(|v| v == "true");
            let status = response.status().as_u16();
            response.bytes().await?;
            Ok::<_, reqwest::Error>((status, replayed))
        }
        .await
        .unwrap_or((0, false));
        attempts.push(answer);
        if !(answer.0 == 0 || answer.0 == 409 || answer.0 >= 500) {
            break;
        }
        tokio::time::sleep(backoff).await;
        backoff *= 2;
    }
    attempts
}

fn main() -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(bench())
}

/// One column's round.
struct Round {
    burst: Duration,
    wall: Duration,
    requests: u64,
    statuses: Statuses,
}

async fn bench() -> Result<()> {
    let engine = common::engine(&common::config()).await?;
    let load_test = racelab::labs::find("idempotency/load-test").ok_or("no idempotency/load-test")?;
    println!(
        "racelab idempotency benchmark: S14, {PAYMENTS} payments × {COPIES} copies at once; {} CPU(s); columns interleaved run by run, 1 untimed warm-up pair",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "   tutorial: about 3 s for 30 fresh + 120 replayed + 360 × 409 = 510 requests (~170 requests/s); about 5 s under Go's -race"
    );
    let (mut racelab, mut bare) = (Vec::new(), Vec::new());
    for round in 0..=ROUNDS {
        let ours = racelab_round(&engine, load_test).await?;
        let theirs = bare_round(&engine).await?;
        if round > 0 {
            racelab.push(ours);
            bare.push(theirs);
        }
    }
    println!();
    println!("   run   column    burst ms  wall ms  requests  req/s   201  201 replayed  409  other");
    for (i, (ours, theirs)) in racelab.iter().zip(&bare).enumerate() {
        for (column, r) in [("racelab", ours), ("bare", theirs)] {
            println!(
                "   {:<5} {column:<8} {:>8.0}  {:>7.0}  {:>8}  {:>5.0}  {:>4}  {:>12}  {:>3}  {:>5}",
                i + 1,
                millis(r.burst),
                millis(r.wall),
                r.requests,
                rate(r),
                r.statuses.fresh,
                r.statuses.replayed,
                r.statuses.conflicts,
                r.statuses.other
            );
        }
    }
    let bursts = |rounds: &[Round]| rounds.iter().map(|r| millis(r.burst)).collect::<Vec<_>>();
    let rates = |rounds: &[Round]| rounds.iter().map(rate).collect::<Vec<_>>();
    println!();
    println!(
        "   burst ms min–median–max: racelab {}, bare {}",
        span(&bursts(&racelab)),
        span(&bursts(&bare))
    );
    println!(
        "   requests/s min–median–max: racelab {}, bare {}",
        span(&rates(&racelab)),
        span(&rates(&bare))
    );
    println!(
        "   median burst, racelab / bare: {:.2}x; racelab / the tutorial's 3 s: {:.2}x",
        median(&bursts(&racelab)) / median(&bursts(&bare)),
        median(&bursts(&racelab)) / 3000.0
    );
    Ok(())
}

fn rate(round: &Round) -> f64 {
    round.requests as f64 / round.burst.as_secs_f64()
}

/// The load test through the engine, timed from its own events.
async fn racelab_round(engine: &Arc<Engine>, def: &'static ScenarioDef) -> Result<Round> {
    let EngineRun { wall, events } = engine_run(engine, def, "final").await?;
    let first = events
        .iter()
        .find(|e| matches!(&e.kind, EventKind::Step { actor, .. } if actor == "payment 1 copy 1"))
        .ok_or("no request of the shown copy")?;
    let answered = events
        .iter()
        .find(|e| matches!(&e.kind, EventKind::Progress { label, .. } if label == "copies answered"))
        .ok_or("no progress event")?;
    let mut statuses = Statuses::default();
    let mut requests = 0;
    for line in shared::event::transcript(&events) {
        // `  30 201 {payment}`: a count, then the answer.
        let Some((count, answer)) = line.trim_start().split_once(' ') else {
            continue;
        };
        let Ok(count) = count.parse::<u64>() else { continue };
        requests += count;
        match answer {
            "201 {payment}" => statuses.fresh += count,
            "201 {payment} (replayed)" => statuses.replayed += count,
            a if a.starts_with("409 ") => statuses.conflicts += count,
            _ => statuses.other += count,
        }
    }
    Ok(Round {
        burst: Duration::from_millis(answered.at_ms.saturating_sub(first.at_ms)),
        wall,
        requests,
        statuses,
    })
}

/// The bare burst through the engine (for its sandbox and servers only).
async fn bare_round(engine: &Arc<Engine>) -> Result<Round> {
    let wall = engine_run(engine, &BARE_BURST, "only").await?.wall;
    let (burst, requests, statuses) = BARE
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .ok_or("the bare burst measured nothing")?;
    Ok(Round {
        burst,
        wall,
        requests,
        statuses,
    })
}

/// `min–median–max`, whole numbers.
fn span(values: &[f64]) -> String {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if values.is_empty() {
        "-".into()
    } else {
        format!("{min:.0}–{:.0}–{max:.0}", median(values))
    }
}
