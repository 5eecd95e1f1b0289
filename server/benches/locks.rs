//! What racelab's Redis lock costs, and how long the S6 load test takes, measured side by side in
//! one run.
//!
//! `cargo bench --bench locks`. Loopback only; about half a minute on a busy two-core machine.
//!
//! Section 1, lock round trips: one obtain + release pair is `SET lock:wallet:42 <token> NX PX
//! 2000` then `EVAL <release script> 1 lock:wallet:42 <token>`. Three columns, measured in the
//! same round one after the other, rounds repeated:
//! - **racelab**: a bench-only scenario played through the engine (`Engine::start` in auto mode)
//!   whose one quiet Redis actor (`Run::redis_worker`, no events per step) calls
//!   `labs::locks::lock::acquire` and `release` in a loop. Only the loop is timed, inside the
//!   run; the run's sandbox, connection and teardown are not (their wall time is printed apart).
//! - **bare**: redis-rs on a multiplexed connection of its own (the engine's actors use the same
//!   kind), sending the same two commands with the same random tokens and the lab's own
//!   `RELEASE` script. No lane, no events, no key prefix. racelab/bare is the engine's per-step
//!   overhead.
//! - **redis-benchmark**: `redis-benchmark -t set -n 20000 -c 1 -q` on the same server: one
//!   client, one SET at a time, like one lock holder. A pair is two commands and the EVAL runs a
//!   Lua script, so pairs/s × 2 ÷ SET/s shows how close a lock round trip gets to the server's
//!   plainest command, not an overhead of racelab's.
//!
//! Section 2, the S6 load test (`locks/load-test`, variants `ttl-2s` and
//! `ttl-1ms-version-check`): each run's wall time from `Engine::start` to `Done`, and its own
//! transcript lines, beside the lines the tutorial printed (it prints no wall times).
//!
//! Why interleaved (racelab, bare, redis-benchmark, racelab, …; ttl-2s, 1 ms, ttl-2s, …): the
//! machine is shared, and whatever drifts during the benchmark then lands on every column alike.
//! One untimed warm-up round precedes each section.

#![allow(
    clippy::too_many_lines,
    reason = "a benchmark reads top to bottom as the measurement it makes"
)]

mod common;

use common::{Result, engine_run, median, millis};
use racelab::engine::{Budget, Engine, Run, RunError};
use racelab::labs::ScenarioDef;
use racelab::labs::locks::LOCK_KEY;
use racelab::labs::locks::lock::{RELEASE, acquire, release, token};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Obtain + release pairs per round and side.
const PAIRS: u32 = 2500;
/// The lease each obtain asks for, as the tutorial's lock.
const TTL: Duration = Duration::from_secs(2);
/// How long an obtain may wait for a busy lock (it never is: every pair releases its own).
const ACQUIRE_DEADLINE: Duration = Duration::from_secs(1);
/// Timed rounds of section 1, after one untimed warm-up round.
const LOCK_ROUNDS: usize = 8;
/// redis-benchmark's requests per round.
const BENCHMARK_REQUESTS: u32 = 20_000;
/// Timed runs per variant of section 2, after one untimed warm-up pair.
const LOAD_ROUNDS: usize = 5;
const LOAD_VARIANTS: [&str; 2] = ["ttl-2s", "ttl-1ms-version-check"];
/// How long one engine run or one redis-benchmark may take before the benchmark gives up.
const RUN_DEADLINE: Duration = Duration::from_secs(60);
/// The key redis-benchmark's SET writes when not given `-r`.
const BENCHMARK_KEY: &str = "key:__rand_int__";

/// What the racelab loop took, in nanoseconds, written by the scenario at the end of its loop and
/// read (then reset) by the benchmark after `Done`. Runs are played one at a time.
static RACELAB_LOOP_NANOS: AtomicU64 = AtomicU64::new(0);

/// The bench's own scenario: one quiet Redis actor obtaining and releasing the lab's lock.
static LOCK_LOOP: ScenarioDef = ScenarioDef {
    id: "bench/lock-loop",
    title: "bench/lock-loop",
    hook: "",
    about: "",
    steppable: false,
    workload: false,
    variants: &[("only", "only", "")],
    sandbox: racelab::labs::locks::SANDBOX,
    actors: |_| racelab::labs::actors_at(&["bench"], "Redis"),
    budget: Some(|_| Budget::postgres(0).and_redis(1)),
    play: |run, _| Box::pin(lock_loop(run)),
    summarize: None,
    predict: None,
};

async fn lock_loop(run: &Run) -> std::result::Result<(), RunError> {
    let who = run.redis_worker("bench").await?;
    let started = Instant::now();
    for _ in 0..PAIRS {
        let lock = acquire(&who, LOCK_KEY, TTL, ACQUIRE_DEADLINE).await?;
        release(&who, &lock).await?;
    }
    let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    RACELAB_LOOP_NANOS.store(nanos.max(1), Ordering::SeqCst);
    Ok(())
}

fn main() -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(bench())
}

async fn bench() -> Result<()> {
    let config = common::config();
    let redis_at = RedisAt::of(&config.redis_url)?;
    let engine = common::engine(&config).await?;
    let client = redis::Client::open(config.redis_url.as_str())?;
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| format!("the benchmark needs Redis at REDIS_URL: {e}"))?;
    let info: String = redis::cmd("INFO").arg("server").query_async(&mut conn).await?;
    let version = info
        .lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("?")
        .trim()
        .to_owned();
    println!(
        "racelab locks benchmark: Redis {version} at {}:{}, {} CPU(s); columns interleaved round by round, 1 untimed warm-up round per section",
        redis_at.host,
        redis_at.port,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!();
    lock_round_trips(&engine, &mut conn, &redis_at).await?;
    println!();
    load_test(&engine).await
}

/// Where redis-benchmark should point: REDIS_URL's host, port and database, loopback only.
struct RedisAt {
    host: String,
    port: u16,
    db: u32,
}

impl RedisAt {
    fn of(redis_url: &str) -> Result<RedisAt> {
        let url = url::Url::parse(redis_url).map_err(|e| format!("REDIS_URL {redis_url:?}: {e}"))?;
        let host = url
            .host_str()
            .unwrap_or("127.0.0.1")
            .trim_matches(['[', ']'])
            .to_owned();
        if !matches!(host.as_str(), "127.0.0.1" | "localhost" | "::1") {
            return Err(format!("this benchmark runs on loopback only; REDIS_URL points at {host}").into());
        }
        let db = match url.path().trim_start_matches('/') {
            "" => 0,
            db => db
                .parse()
                .map_err(|_| format!("REDIS_URL's database {db:?} is not a number"))?,
        };
        Ok(RedisAt {
            host,
            port: url.port().unwrap_or(6379),
            db,
        })
    }
}

// ---- Section 1: lock round trips ----------------------------------------------------------

/// One round of section 1, as rates.
struct LockRound {
    racelab: f64,
    /// `Engine::start` → `Done` of the racelab run, loop included.
    racelab_run: Duration,
    bare: f64,
    /// redis-benchmark's SET requests per second; `None` when it is not installed.
    set: Option<f64>,
}

async fn lock_round_trips(
    engine: &Arc<Engine>,
    conn: &mut redis::aio::MultiplexedConnection,
    redis_at: &RedisAt,
) -> Result<()> {
    println!("1. lock obtain + release round trips ({PAIRS} pairs per round and side, key {LOCK_KEY}, TTL 2 s)");
    println!("   racelab pairs/s   labs::locks::lock::acquire + release through the engine, quiet actor");
    println!("   bare pairs/s      redis-rs, same SET NX PX + EVAL of lock::RELEASE, own connection");
    println!("   racelab/bare      racelab's rate / bare's, same round (1.00 = no overhead; below 1: racelab slower)");
    println!("   SET/s             redis-benchmark -t set -n {BENCHMARK_REQUESTS} -c 1 -q, same server");
    println!("   cmds/SET          racelab pairs/s x 2 commands / SET/s (EVAL runs Lua: not racelab's overhead)");
    let benchmark_key_existed: bool = redis::cmd("EXISTS")
        .arg(BENCHMARK_KEY)
        .query_async::<i64>(&mut *conn)
        .await?
        > 0;
    let bare_key = format!("racelab-bench:{}:{LOCK_KEY}", std::process::id());
    let mut have_benchmark = true;
    let mut rounds = Vec::with_capacity(LOCK_ROUNDS);
    for i in 0..=LOCK_ROUNDS {
        let (racelab, racelab_run) = racelab_lock_loop(engine).await?;
        // On a spawned task, as the engine plays its scenario: neither side runs on the thread
        // that blocks on the benchmark's own future.
        let bare = tokio::spawn(bare_lock_loop(conn.clone(), bare_key.clone())).await??;
        let set = if have_benchmark {
            let set = redis_benchmark(redis_at).await?;
            if set.is_none() {
                have_benchmark = false;
                println!("   redis-benchmark is not installed: its columns are skipped");
            }
            set
        } else {
            None
        };
        if i == 0 {
            continue;
        }
        let round = LockRound {
            racelab,
            racelab_run,
            bare,
            set,
        };
        if i == 1 {
            println!(
                "   {:<6} {:>15} {:>13} {:>13} {:>11} {:>9}",
                "round", "racelab pairs/s", "bare pairs/s", "racelab/bare", "SET/s", "cmds/SET"
            );
        }
        println!(
            "   {:<6} {:>15.0} {:>13.0} {:>12.2}x {:>11} {:>9}",
            i,
            round.racelab,
            round.bare,
            round.racelab / round.bare,
            round.set.map_or("-".into(), |s| format!("{s:.0}")),
            round
                .set
                .map_or("-".into(), |s| format!("{:.2}", round.racelab * 2.0 / s)),
        );
        rounds.push(round);
    }
    if have_benchmark && !benchmark_key_existed {
        redis::cmd("DEL")
            .arg(BENCHMARK_KEY)
            .query_async::<i64>(&mut *conn)
            .await?;
    }
    let column = |f: &dyn Fn(&LockRound) -> Option<f64>| rounds.iter().filter_map(f).collect::<Vec<f64>>();
    println!("   min–median–max over the {LOCK_ROUNDS} rounds:");
    let summary = [
        ("racelab pairs/s", span(&column(&|r| Some(r.racelab)), 0)),
        ("bare pairs/s", span(&column(&|r| Some(r.bare)), 0)),
        ("racelab/bare", span(&column(&|r| Some(r.racelab / r.bare)), 2)),
        ("SET/s", span(&column(&|r| r.set), 0)),
        ("cmds/SET", span(&column(&|r| r.set.map(|s| r.racelab * 2.0 / s)), 2)),
        (
            "racelab run ms",
            format!(
                "{}  (Engine::start → Done: sandbox, connection, loop, teardown)",
                span(&column(&|r| Some(millis(r.racelab_run))), 0)
            ),
        ),
    ];
    for (label, value) in summary {
        println!("     {label:<16} {value}");
    }
    Ok(())
}

/// Plays [`LOCK_LOOP`] and returns its loop's pairs per second and the run's wall time.
async fn racelab_lock_loop(engine: &Arc<Engine>) -> Result<(f64, Duration)> {
    RACELAB_LOOP_NANOS.store(0, Ordering::SeqCst);
    let run = engine_run(engine, &LOCK_LOOP, "only").await?;
    let nanos = RACELAB_LOOP_NANOS.swap(0, Ordering::SeqCst);
    if nanos == 0 {
        return Err("the racelab lock loop completed without reporting its time".into());
    }
    Ok((f64::from(PAIRS) / (nanos as f64 / 1e9), run.wall))
}

/// The same pairs with redis-rs alone; returns pairs per second.
async fn bare_lock_loop(mut conn: redis::aio::MultiplexedConnection, key: String) -> Result<f64> {
    let ttl_ms = TTL.as_millis();
    let started = Instant::now();
    for _ in 0..PAIRS {
        let token = token();
        let set: redis::Value = redis::cmd("SET")
            .arg(&key)
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(ttl_ms.to_string())
            .query_async(&mut conn)
            .await?;
        if set != redis::Value::Okay {
            return Err(format!("bare SET NX on {key} answered {set:?}: is something else holding it?").into());
        }
        let released: redis::Value = redis::cmd("EVAL")
            .arg(RELEASE)
            .arg(1)
            .arg(&key)
            .arg(&token)
            .query_async(&mut conn)
            .await?;
        if released != redis::Value::Int(1) {
            return Err(format!("bare release of {key} answered {released:?}").into());
        }
    }
    Ok(f64::from(PAIRS) / started.elapsed().as_secs_f64())
}

/// redis-benchmark's SET requests per second, or `None` if it is not installed.
async fn redis_benchmark(at: &RedisAt) -> Result<Option<f64>> {
    let child = tokio::process::Command::new("redis-benchmark")
        .args([
            "-h",
            &at.host,
            "-p",
            &at.port.to_string(),
            "--dbnum",
            &at.db.to_string(),
        ])
        .args(["-t", "set", "-n", &BENCHMARK_REQUESTS.to_string(), "-c", "1", "-q"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let child = match child {
        Ok(child) => child,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(format!("cannot start redis-benchmark: {error}").into()),
    };
    let output = tokio::time::timeout(RUN_DEADLINE, child.wait_with_output())
        .await
        .map_err(|_| format!("redis-benchmark did not finish within {RUN_DEADLINE:?}"))??;
    let stdout = String::from_utf8_lossy(&output.stdout);
    // `-q` redraws a progress line with `\r`; the last one says `SET: 13324.45 requests per second, p50=…`.
    let rate = stdout
        .split(['\r', '\n'])
        .filter_map(|line| line.trim().strip_prefix("SET:"))
        .find_map(|rest| {
            rest.split_once("requests per second")
                .map(|(n, _)| n.trim().parse::<f64>())
        });
    match rate {
        Some(Ok(rate)) if output.status.success() => Ok(Some(rate)),
        _ => Err(format!(
            "redis-benchmark ({}) printed no SET rate: {} {}",
            output.status,
            stdout.trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        )
        .into()),
    }
}

// ---- Section 2: the S6 load test ----------------------------------------------------------

/// The lines the tutorial printed for each variant (it prints no wall times).
fn tutorial_lines(variant: &str) -> &'static [&'static str] {
    match variant {
        "ttl-2s" => &[
            "accepted=10 balance=0 expected=0 OK",
            "writes rejected by the database=0",
        ],
        _ => &[
            "accepted=10 balance=0 expected=0 OK",
            "writes rejected by the database=9 … 11 (two of five runs shown: 9, 11)",
        ],
    }
}

async fn load_test(engine: &Arc<Engine>) -> Result<()> {
    println!(
        "2. S6 load test, locks/load-test: 50 fenced spends; wall time Engine::start → Done, {LOAD_ROUNDS} runs per variant"
    );
    println!("   tutorial: the lines its program printed (reference, not measured here)");
    println!("   this run: each run's wall time and its own transcript lines (its Say events)");
    let mut walls: Vec<Vec<f64>> = vec![Vec::with_capacity(LOAD_ROUNDS); LOAD_VARIANTS.len()];
    let mut lines: Vec<Vec<String>> = vec![Vec::with_capacity(LOAD_ROUNDS); LOAD_VARIANTS.len()];
    let def = racelab::labs::find("locks/load-test").ok_or("no scenario locks/load-test in the catalog")?;
    for i in 0..=LOAD_ROUNDS {
        for (v, variant) in LOAD_VARIANTS.iter().enumerate() {
            let run = engine_run(engine, def, variant).await?;
            if i == 0 {
                continue;
            }
            walls[v].push(millis(run.wall));
            let transcript = shared::event::transcript(&run.events).join(" | ");
            lines[v].push(format!("run {i}  {:>7.0} ms  {transcript}", millis(run.wall)));
        }
    }
    for (v, variant) in LOAD_VARIANTS.iter().enumerate() {
        println!("   {variant}");
        for line in tutorial_lines(variant) {
            println!("     tutorial        {line}");
        }
        for line in &lines[v] {
            println!("     {line}");
        }
        println!("     wall time min–median–max: {} ms", span(&walls[v], 0));
    }
    let ratio = median(&walls[1]) / median(&walls[0]);
    println!(
        "   median wall time, {} / {}: {ratio:.2}x",
        LOAD_VARIANTS[1], LOAD_VARIANTS[0]
    );
    Ok(())
}

// ---- Shared ---------------------------------------------------------------------------------

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut values = values.to_vec();
    values.sort_by(f64::total_cmp);
    values
}

/// `min–median–max` with `decimals` places, or `-` for an empty column.
fn span(values: &[f64], decimals: usize) -> String {
    let all = sorted(values);
    match (all.first(), all.last()) {
        (Some(min), Some(max)) => format!("{min:.decimals$}–{:.decimals$}–{max:.decimals$}", median(values)),
        _ => "-".into(),
    }
}
