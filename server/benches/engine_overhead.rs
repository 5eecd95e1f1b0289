//! What the engine costs: each scenario's wall time through racelab's engine, beside a bare sqlx
//! program that sends PostgreSQL the same statements, measured side by side in one run.
//!
//! `cargo bench --bench engine_overhead [N]` (N: write-skew runs, default 20).
//!
//! Measured, for each side, from the first thing it asks of PostgreSQL to the last:
//! - **engine**: `Engine::start` until `ServerMsg::Done`. That covers the admission queue, the
//!   sandbox (schema + seed, later terminate + drop), the monitor connection, one connection per
//!   actor, the step events, the before/after ledger snapshots, the verdict and storing the run.
//! - **bare**: create a schema `bench_<n>` with the lab's schema SQL, open one `PgConnection` per
//!   actor with `search_path` set to it, run the scenario's statements (the lab's own SQL
//!   constants, the same parameters, BEGIN/COMMIT over the simple protocol as the actors do),
//!   close the connections and drop the schema. Nothing else: no events, no snapshots, no store.
//!
//! The ratio engine/bare is what the engine adds on top of the work the scenario itself makes
//! PostgreSQL do. Absolute times depend on the machine; the ratio much less.
//!
//! Why interleaved (engine, bare, engine, bare, …) rather than all engine runs then all bare
//! runs: anything that drifts during the benchmark (another build on the machine, autovacuum,
//! checkpoints, CPU frequency) then lands on both sides alike instead of on whichever block ran
//! at the time. One untimed warm-up pair precedes each series.
//!
//! Sections: write skew at SERIALIZABLE (two actors, bob's first COMMIT fails with 40001 and he
//! retries), and the load test (16 workers drain 400 approvals against $50,000) for the
//! `for-update` and `conditional` strategies. Every `bench_<n>` schema is dropped before the
//! benchmark starts, after each bare run (also when it failed), and once more at the end.

#![allow(
    clippy::too_many_lines,
    reason = "a benchmark reads top to bottom as the measurement it makes"
)]

use racelab::config::Config;
use racelab::engine::{BoxFuture, Engine};
use racelab::labs::isolation::load_test::{AMOUNTS, LOAD_BUDGET, Strategy, WORKERS, figures_of};
use racelab::labs::isolation::{
    AMOUNT, INSERT_EXPENSE, LOCK_TEAM, RESERVE, SCHEMA, SELECT_APPROVED, SELECT_BUDGET, TEAM,
};
use shared::{Event, EventKind, Mode, Moment, Outcome, ServerMsg, usd};
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, Executor, PgConnection};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Result<T> = std::result::Result<T, BoxError>;

/// Write-skew runs per side unless the first CLI argument says otherwise.
const WRITE_SKEW_RUNS: usize = 20;
/// Rounds of the crowd section (one crowd of each kind a round).
const CROWD_ROUNDS: usize = 3;
/// Readers in the crowd section.
const CROWD: usize = 200;
/// Sandboxes the engine keeps ready, as `racelab serve` does by default.
const WARM_SANDBOXES: usize = 2;
/// Load-test runs per side and strategy.
const LOAD_RUNS: usize = 5;
/// Untimed pairs before each series.
const WARMUP: usize = 1;
/// The load-test strategies measured.
const LOAD_STRATEGIES: [Strategy; 2] = [Strategy::ForUpdate, Strategy::Conditional];
/// Sessions an engine holds outside its runs' budget: its pool (5) and its probe.
const OWN_SESSIONS: u32 = 6;
/// `RACELAB_RUNS_AT_ONCE` for the engine whose runs at once only its connections limit.
const UNLIMITED_RUNS: u64 = 10_000;
/// How long one engine run may take before the benchmark gives up on it.
const RUN_DEADLINE: Duration = Duration::from_secs(120);

fn main() -> Result<()> {
    let write_skew_runs = match std::env::args().skip(1).find(|a| !a.starts_with("--")) {
        Some(arg) => arg
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("the first argument is the number of write-skew runs, not {arg:?}"))?,
        None => WRITE_SKEW_RUNS,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(bench(write_skew_runs))
}

async fn bench(write_skew_runs: usize) -> Result<()> {
    let mut config = Config::from_env()?;
    if config.run_connections.is_none() {
        // Four engines in one process, each with its own pool and probe session: the default
        // budget leaves room for one such set, so the other three come off it.
        let first = connect_engine(&config).await?;
        let budget = first.connection_budget();
        first.close(Duration::from_secs(5), Duration::from_secs(5)).await;
        config.run_connections = Some(budget.saturating_sub(3 * OWN_SESSIONS).max(3));
    }
    let database_url = config.database_url.clone();
    let connect = |warm_sandboxes: usize, keep_sessions: bool, runs_at_once: Option<u64>| {
        let mut config = config.clone();
        config.warm_sandboxes = warm_sandboxes;
        config.keep_sessions = keep_sessions;
        config.runs_at_once = runs_at_once.or(config.runs_at_once);
        async move { connect_engine(&config).await.map(Arc::new) }
    };
    // The engine as served (sandboxes made ahead of demand, sessions kept between runs, a few
    // runs at once per core), one that makes each run's sandbox when the run starts, one that
    // connects each run's sessions when it starts, and one that plays as many runs at once as
    // its connections allow.
    let engine = connect(WARM_SANDBOXES, true, None).await?;
    let cold = connect(0, true, None).await?;
    let unkept = connect(WARM_SANDBOXES, false, None).await?;
    let crowded = connect(WARM_SANDBOXES, true, Some(UNLIMITED_RUNS)).await?;
    let base = PgConnectOptions::from_str(&database_url)?;
    let mut admin = base.clone().application_name("racelab-bench/admin").connect().await?;

    let total_schemas = (write_skew_runs + WARMUP) + LOAD_STRATEGIES.len() * (LOAD_RUNS + WARMUP);
    let mut bench = Bench {
        engine: engine.clone(),
        cold: cold.clone(),
        unkept: unkept.clone(),
        crowded: crowded.clone(),
        base,
        next_schema: 0,
        total_schemas,
    };
    bench.sweep(&mut admin).await?;
    let result = bench.all(&mut admin, write_skew_runs).await;
    let swept = bench.sweep(&mut admin).await;
    let _ = admin.close().await;
    // The ready sandboxes go with the engine.
    for engine in [engine, cold, unkept, crowded] {
        engine.close(Duration::from_secs(5), Duration::from_secs(5)).await;
    }
    result.and(swept)
}

/// racelab's engine with `config`, or why not.
async fn connect_engine(config: &Config) -> Result<Engine> {
    racelab::db::connect_engine(config)
        .await
        .map_err(|e| format!("racelab's engine needs PostgreSQL at DATABASE_URL: {e}").into())
}

struct Bench {
    engine: Arc<Engine>,
    /// The same engine without sandboxes made ahead (`RACELAB_WARM_SANDBOXES=0`).
    cold: Arc<Engine>,
    /// The same engine without sessions kept between runs (`RACELAB_KEEP_SESSIONS=false`).
    unkept: Arc<Engine>,
    /// The same engine playing as many runs at once as its connections allow
    /// (`RACELAB_RUNS_AT_ONCE` past the budget).
    crowded: Arc<Engine>,
    base: PgConnectOptions,
    next_schema: usize,
    total_schemas: usize,
}

impl Bench {
    async fn all(&mut self, admin: &mut PgConnection, write_skew_runs: usize) -> Result<()> {
        let version: String = sqlx::query_scalar("SELECT current_setting('server_version')")
            .fetch_one(&mut *admin)
            .await?;
        println!(
            "racelab engine overhead: PostgreSQL {version}, {} CPU(s); engine and bare runs interleaved, {WARMUP} untimed warm-up pair per series",
            std::thread::available_parallelism().map_or(0, |n| n.get())
        );
        println!();
        self.write_skew(admin, write_skew_runs).await?;
        println!();
        self.crowd().await?;
        for strategy in LOAD_STRATEGIES {
            println!();
            self.load_test(admin, strategy).await?;
        }
        Ok(())
    }

    /// Drops every schema this benchmark may create (`bench_0` …, `bench_crowd_0` …), whatever
    /// state it is in.
    async fn sweep(&self, admin: &mut PgConnection) -> Result<()> {
        let drops: String = (0..self.total_schemas)
            .map(|n| format!("DROP SCHEMA IF EXISTS bench_{n} CASCADE;"))
            .chain((0..CROWD).map(|n| format!("DROP SCHEMA IF EXISTS bench_crowd_{n} CASCADE;")))
            .collect();
        sqlx::raw_sql(&drops).execute(&mut *admin).await?;
        Ok(())
    }

    fn schema(&mut self) -> Result<String> {
        if self.next_schema >= self.total_schemas {
            return Err("the benchmark ran out of schema names: total_schemas is miscounted".into());
        }
        let name = format!("bench_{}", self.next_schema);
        self.next_schema += 1;
        Ok(name)
    }

    async fn write_skew(&mut self, admin: &mut PgConnection, runs: usize) -> Result<()> {
        let mut engine_times = Vec::with_capacity(runs);
        let mut cold_times = Vec::with_capacity(runs);
        let mut unkept_times = Vec::with_capacity(runs);
        let mut bare_times = Vec::with_capacity(runs);
        let (mut engine_40001, mut bare_40001) = (0, 0);
        let bob_got_40001 = |run: &EngineRun| {
            run.events.iter().any(
                |e| matches!(&e.kind, EventKind::Error { actor, code: Some(s), .. } if actor == "bob" && s == "40001"),
            )
        };
        for i in 0..WARMUP + runs {
            // The shelf fills again after each run's `done` (as between one reader's runs): no
            // side is timed while it does.
            until_shelf_full(&self.engine, i == 0).await;
            let run = engine_run(&self.engine, "isolation/write-skew", "serializable").await?;
            until_shelf_full(&self.engine, false).await;
            let cold = engine_run(&self.cold, "isolation/write-skew", "serializable").await?;
            until_shelf_full(&self.unkept, i == 0).await;
            let unkept = engine_run(&self.unkept, "isolation/write-skew", "serializable").await?;
            let schema = self.schema()?;
            let (bare_time, bare_failed) = in_schema(admin, &schema, bare_write_skew(&self.base, &schema)).await?;
            if i >= WARMUP {
                engine_times.push(run.wall);
                cold_times.push(cold.wall);
                unkept_times.push(unkept.wall);
                bare_times.push(bare_time);
                engine_40001 += usize::from(bob_got_40001(&run))
                    + usize::from(bob_got_40001(&cold))
                    + usize::from(bob_got_40001(&unkept));
                bare_40001 += usize::from(bare_failed);
            }
        }
        println!(
            "write skew, serializable: {runs} runs per side (bob's first COMMIT got 40001: engine {engine_40001}/{}, bare {bare_40001}/{runs})",
            3 * runs
        );
        print_table(&engine_times, &bare_times);
        println!("  without sandboxes made ahead (RACELAB_WARM_SANDBOXES=0):");
        print_rows(&cold_times, &bare_times);
        println!("  without sessions kept between runs (RACELAB_KEEP_SESSIONS=false):");
        print_rows(&unkept_times, &bare_times);
        Ok(())
    }

    /// A crowd: `CROWD` readers press Run on serializable write skew at the same moment, over
    /// racelab's websocket on loopback (`racelab::crowd`, the load client of `racelab crowd`),
    /// beside the bare program playing as many write skews at once as the engine does (three
    /// sessions a run on both sides: the engine's monitor and actors, the bare program's setup
    /// session and actors). The engine comes as served (a few runs at once per core), without
    /// kept sessions (it connects three per run, as the bare program does), and with as many
    /// runs at once as its connection budget allows, beside the bare program at that
    /// concurrency too. One crowd of each is a round; `CROWD_ROUNDS` rounds, each config's
    /// median shown (one crowd lasts a few seconds, and this machine's speed drifts over that).
    async fn crowd(&mut self) -> Result<()> {
        let budget = self.engine.connection_budget();
        let most = usize::try_from(budget / 3).unwrap_or(1).max(1);
        let at_once = self.engine.runs_at_once().unwrap_or(most).min(most);
        let (alone, _) = crowd_through(&self.engine, WARMUP + 10, 0).await?;
        let mut rounds: [Vec<racelab::crowd::Summary>; 5] = Default::default();
        for _ in 0..CROWD_ROUNDS {
            // A crowd's kept sessions hold the shared budget until they go, and the bare
            // program's sessions are not leased: each crowd starts with none kept.
            let (_, served) = crowd_through(&self.engine, 0, CROWD).await?;
            until_nothing_kept(&self.engine).await;
            let (_, unkept) = crowd_through(&self.unkept, 0, CROWD).await?;
            let (_, crowded) = crowd_through(&self.crowded, 0, CROWD).await?;
            until_nothing_kept(&self.crowded).await;
            let bare = bare_crowd(&self.base, CROWD, at_once).await?;
            let bare_crowded = bare_crowd(&self.base, CROWD, most).await?;
            for (kept, summary) in rounds.iter_mut().zip([served, unkept, bare, crowded, bare_crowded]) {
                kept.push(summary);
            }
        }
        let engines = [0, 1, 3];
        for i in engines {
            for s in &rounds[i] {
                if s.lost > 0 || !s.refused.is_empty() || s.outcomes.get("completed") != Some(&CROWD) {
                    return Err(format!("not every reader of a crowd had a completed run: {s}").into());
                }
            }
        }

        let ms = |d: Duration| d.as_secs_f64() * 1_000.0;
        println!(
            "a crowd: {CROWD} readers press Run on write skew, serializable, at once (connection budget {budget}: room for {most} runs at once; the engine as served plays {at_once}); {CROWD_ROUNDS} rounds, medians"
        );
        println!(
            "  one reader alone, Run → done over the websocket: median {:.1} ms",
            median(&alone)
        );
        let labels = [
            format!("engine, {at_once} at once"),
            "  no sessions kept".to_owned(),
            format!("bare sqlx, {at_once} at once"),
            format!("engine, {most} at once"),
            format!("bare sqlx, {most} at once"),
        ];
        for i in engines {
            let verdicts: Vec<String> = rounds[i].iter().map(|s| format!("{:?}", s.verdicts)).collect();
            println!("  {}: verdicts {}", labels[i].trim(), verdicts.join(", "));
        }
        // Each figure's median over the rounds.
        let med = |i: usize, figure: &dyn Fn(&racelab::crowd::Summary) -> f64| {
            let mut values: Vec<f64> = rounds[i].iter().map(figure).collect();
            values.sort_by(f64::total_cmp);
            values[values.len() / 2]
        };
        let figures: [&dyn Fn(&racelab::crowd::Summary) -> f64; 4] = [
            &|s| ms(s.p50),
            &|s| ms(s.p95),
            &|s| ms(s.max),
            &racelab::crowd::Summary::runs_per_s,
        ];
        println!(
            "  {:<28} {:>10} {:>10} {:>10} {:>10}   p95 of each round",
            "Run → done", "p50 ms", "p95 ms", "max ms", "runs/s"
        );
        for (i, label) in labels.iter().enumerate() {
            let each: Vec<String> = rounds[i].iter().map(|s| format!("{:.0}", ms(s.p95))).collect();
            println!(
                "  {label:<28} {:>10.0} {:>10.0} {:>10.0} {:>10.1}   {}",
                med(i, figures[0]),
                med(i, figures[1]),
                med(i, figures[2]),
                med(i, figures[3]),
                each.join(", ")
            );
        }
        let ratios = [
            (format!("engine / bare, {at_once} at once"), 0, 2),
            ("no sessions kept / bare".to_owned(), 1, 2),
            (format!("engine / bare, {most} at once"), 3, 4),
            (format!("engine {at_once} / {most} at once"), 0, 3),
        ];
        for (label, a, b) in ratios {
            let [p50, p95, max, rate] = figures.map(|f| med(a, f) / med(b, f));
            println!("  {label:<28} {p50:>9.2}x {p95:>9.2}x {max:>9.2}x {rate:>9.2}x");
        }
        Ok(())
    }

    async fn load_test(&mut self, admin: &mut PgConnection, strategy: Strategy) -> Result<()> {
        let mut engine_times = Vec::with_capacity(LOAD_RUNS);
        let mut bare_times = Vec::with_capacity(LOAD_RUNS);
        let mut engine_drains = Vec::with_capacity(LOAD_RUNS);
        let mut bare_drains = Vec::with_capacity(LOAD_RUNS);
        let mut engine_approved = Vec::with_capacity(LOAD_RUNS);
        let mut bare_approved = Vec::with_capacity(LOAD_RUNS);
        for i in 0..WARMUP + LOAD_RUNS {
            let run = engine_run(&self.engine, "isolation/load-test", strategy.name()).await?;
            let figures = run
                .events
                .iter()
                .find_map(|e| match &e.kind {
                    EventKind::Ledger {
                        moment: Moment::After,
                        ledger,
                    } => figures_of(ledger).into_iter().find(|f| f.strategy == strategy),
                    _ => None,
                })
                .ok_or("the engine's load test reported no figures in its After ledger")?;
            let schema = self.schema()?;
            let bare = in_schema(admin, &schema, bare_load_test(&self.base, &schema, strategy)).await?;
            let (bare_time, bare_figures) = bare;
            for (side, total) in [("engine", figures.total), ("bare program", bare_figures.total)] {
                if total > LOAD_BUDGET {
                    return Err(format!("the {side} overspent with {}: {}", strategy.name(), usd(total)).into());
                }
            }
            if i >= WARMUP {
                engine_times.push(run.wall);
                bare_times.push(bare_time);
                engine_drains.push(Duration::from_millis(u64::try_from(figures.elapsed_ms).unwrap_or(0)));
                bare_drains.push(bare_figures.drain);
                engine_approved.push((figures.approved, figures.total));
                bare_approved.push((i64::try_from(bare_figures.approved)?, bare_figures.total));
            }
        }
        println!(
            "load test, {}: {LOAD_RUNS} runs per side, {WORKERS} workers, {} amounts, {} budget (approved: engine {}, bare {})",
            strategy.name(),
            AMOUNTS.len(),
            usd(LOAD_BUDGET),
            approved_span(&engine_approved),
            approved_span(&bare_approved)
        );
        print_table(&engine_times, &bare_times);
        println!("  connect + drain only (the engine's own elapsed_ms, beside the bare program's):");
        print_rows(&engine_drains, &bare_drains);
        Ok(())
    }
}

/// One engine run, as its client sees it.
struct EngineRun {
    wall: Duration,
    events: Vec<Event>,
}

/// Plays `scenario`/`variant` through the engine and waits for `Done`; fails unless it completed.
async fn engine_run(engine: &Arc<Engine>, scenario: &str, variant: &str) -> Result<EngineRun> {
    let def = racelab::labs::find(scenario).ok_or_else(|| format!("no scenario {scenario} in the catalog"))?;
    let started = Instant::now();
    let mut handle = engine.start(def, variant, Mode::Auto).await?;
    let deadline = tokio::time::Instant::now() + RUN_DEADLINE;
    let mut events = Vec::new();
    loop {
        let update = tokio::time::timeout_at(deadline, handle.updates.recv())
            .await
            .map_err(|_| format!("{scenario} {variant}: no Done within {RUN_DEADLINE:?}"))?;
        match update {
            None => return Err(format!("{scenario} {variant}: the run closed without Done").into()),
            Some(ServerMsg::Event { event }) => events.push(event),
            Some(ServerMsg::Done { outcome, .. }) => {
                let wall = started.elapsed();
                return match outcome {
                    Outcome::Completed => Ok(EngineRun { wall, events }),
                    other => Err(format!("{scenario} {variant} did not complete: {other:?}").into()),
                };
            }
            Some(_) => {}
        }
    }
}

/// Times a bare run: creates `schema` from the lab's schema SQL, runs `body`, drops the schema
/// (also when the body failed), and returns the wall time of the whole with the body's value.
async fn in_schema<T>(
    admin: &mut PgConnection,
    schema: &str,
    body: impl Future<Output = Result<T>>,
) -> Result<(Duration, T)> {
    let started = Instant::now();
    let result = match create_schema(admin, schema).await {
        Ok(()) => body.await,
        Err(error) => Err(error),
    };
    let dropped = sqlx::raw_sql(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .execute(&mut *admin)
        .await;
    let wall = started.elapsed();
    let value = result?;
    dropped?;
    Ok((wall, value))
}

/// As `Sandbox::create` does: the schema and the lab's tables in one transaction.
async fn create_schema(admin: &mut PgConnection, schema: &str) -> Result<()> {
    let mut tx = admin.begin().await?;
    sqlx::raw_sql(&format!("CREATE SCHEMA {schema}; SET LOCAL search_path TO {schema};"))
        .execute(&mut *tx)
        .await?;
    sqlx::raw_sql(SCHEMA).execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(())
}

/// A dedicated session in `schema`, named like the engine's actors. Boxed, with `Send` checked
/// here where the lifetimes are concrete, for the reason `engine::actor::execute` gives
/// (rust-lang/rust#102211): the workers' futures must be `Send` to be spawned.
fn connect<'a>(base: &'a PgConnectOptions, schema: &'a str, who: &'a str) -> BoxFuture<'a, Result<PgConnection>> {
    Box::pin(async move {
        Ok(base
            .clone()
            .options([("search_path", schema)])
            .application_name(&format!("racelab-bench/{schema}/{who}"))
            .connect()
            .await?)
    })
}

// The statement helpers below are boxed like [`connect`]: sqlx's executor traits are generic over
// lifetimes, and unboxed they defeat the proof that the spawned workers' futures are `Send`.

/// BEGIN, COMMIT, ROLLBACK: over the simple query protocol, as the engine's actors send them.
fn simple<'a>(conn: &'a mut PgConnection, sql: &'a str) -> BoxFuture<'a, std::result::Result<(), sqlx::Error>> {
    // A `&str` without arguments goes over the simple protocol, as `engine::actor::execute` sends it.
    Box::pin(async move { conn.execute(sql).await.map(|_| ()) })
}

/// The rule's two reads: `(budget, approved so far)`.
fn read_rule(conn: &mut PgConnection) -> BoxFuture<'_, Result<(i64, i64)>> {
    Box::pin(async move {
        let budget: i32 = sqlx::query_scalar(SELECT_BUDGET)
            .bind(TEAM)
            .fetch_one(&mut *conn)
            .await?;
        let approved: i64 = sqlx::query_scalar(SELECT_APPROVED)
            .bind(TEAM)
            .fetch_one(&mut *conn)
            .await?;
        Ok((i64::from(budget), approved))
    })
}

fn insert_expense<'a>(conn: &'a mut PgConnection, amount: i64, who: &'a str) -> BoxFuture<'a, Result<()>> {
    Box::pin(async move {
        sqlx::query(INSERT_EXPENSE)
            .bind(TEAM)
            .bind(amount)
            .bind(who)
            .execute(&mut *conn)
            .await?;
        Ok(())
    })
}

/// The row-lock fix's first statement.
fn lock_team(conn: &mut PgConnection) -> BoxFuture<'_, Result<()>> {
    Box::pin(async move {
        sqlx::query(LOCK_TEAM).bind(TEAM).fetch_optional(&mut *conn).await?;
        Ok(())
    })
}

/// The conditional fix's reservation: whether the money fitted.
fn reserve(conn: &mut PgConnection, amount: i64) -> BoxFuture<'_, Result<bool>> {
    Box::pin(async move {
        let reserved = sqlx::query(RESERVE)
            .bind(TEAM)
            .bind(amount)
            .fetch_optional(&mut *conn)
            .await?;
        Ok(reserved.is_some())
    })
}

/// BEGIN at SERIALIZABLE and the check: does $3,000 more fit?
async fn begin_and_check(conn: &mut PgConnection) -> Result<bool> {
    simple(conn, "BEGIN ISOLATION LEVEL SERIALIZABLE").await?;
    let (budget, approved) = read_rule(conn).await?;
    Ok(approved + AMOUNT <= budget)
}

/// Write skew's statements, in the order `write_skew::race` sends them. Returns whether bob's first
/// COMMIT failed with 40001. Like the engine (whose actor knows a failed COMMIT already ended the
/// transaction), it sends no ROLLBACK after that COMMIT.
async fn bare_write_skew(base: &PgConnectOptions, schema: &str) -> Result<bool> {
    let mut alice = connect(base, schema, "alice").await?;
    let mut bob = connect(base, schema, "bob").await?;
    let played = write_skew_statements(&mut alice, &mut bob).await;
    let closed = (alice.close().await, bob.close().await);
    let cancelled = played?;
    closed.0?;
    closed.1?;
    Ok(cancelled)
}

async fn write_skew_statements(alice: &mut PgConnection, bob: &mut PgConnection) -> Result<bool> {
    begin_and_check(alice).await?;
    begin_and_check(bob).await?;
    insert_expense(alice, AMOUNT, "alice").await?;
    insert_expense(bob, AMOUNT, "bob").await?;
    simple(alice, "COMMIT").await?;
    match simple(bob, "COMMIT").await {
        Ok(()) => Ok(false),
        Err(sqlx::Error::Database(e)) if matches!(e.code().as_deref(), Some("40001" | "40P01")) => {
            if begin_and_check(bob).await? {
                insert_expense(bob, AMOUNT, "bob").await?;
            }
            simple(bob, "COMMIT").await?;
            Ok(true)
        }
        Err(other) => Err(other.into()),
    }
}

/// Waits (at most 5 s) until the engine holds its [`WARM_SANDBOXES`] ready sandboxes; says so
/// when it does not (the next run is then timed with what is there). Before the engine's first
/// run there is no shelf yet.
async fn until_shelf_full(engine: &Engine, first: bool) {
    if first {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while engine.ready_sandboxes().len() < WARM_SANDBOXES {
        if Instant::now() >= deadline {
            eprintln!(
                "  (the shelf held {} of {WARM_SANDBOXES} ready sandboxes after 5 s)",
                engine.ready_sandboxes().len()
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// `alone_runs` readers alone one after another (Run → done each), then `readers` at once,
/// over `engine`'s websocket on loopback; the engine's kept sessions are gone before it starts.
async fn crowd_through(
    engine: &Arc<Engine>,
    alone_runs: usize,
    readers: usize,
) -> Result<(Vec<Duration>, racelab::crowd::Summary)> {
    until_nothing_kept(engine).await;
    let config = racelab::config::Config::from_env()?;
    let state = racelab::web::AppState::new(engine.clone(), Arc::new(config));
    let app = racelab::web::router(state, std::path::Path::new("no-such-dist"));
    let (listener, address) = racelab::web::listen(([127, 0, 0, 1], 0).into()).await?;
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let crowd = |readers: usize| racelab::crowd::Crowd {
        url: format!("ws://{address}/ws"),
        readers,
        scenario: "isolation/write-skew".to_owned(),
        variant: "serializable".to_owned(),
        within: Duration::from_secs(300),
    };
    let mut alone = Vec::new();
    for _ in 0..alone_runs {
        let (seen, _) = crowd(1).gather().await?;
        match seen.as_slice() {
            [racelab::crowd::Seen::Done { took, .. }] => alone.push(*took),
            other => return Err(format!("a reader alone did not finish: {other:?}").into()),
        }
    }
    alone.drain(..alone.len().min(WARMUP));
    let (seen, wall) = if readers > 0 {
        crowd(readers).gather().await?
    } else {
        (Vec::new(), Duration::ZERO)
    };
    server.abort();
    Ok((alone, racelab::crowd::Summary::of(&seen, wall)))
}

/// Waits (at most `KEEP_FOR` and a second) until `engine` keeps no session between runs.
async fn until_nothing_kept(engine: &Engine) {
    let deadline = Instant::now() + racelab::engine::kept::KEEP_FOR + Duration::from_secs(1);
    while engine.kept_sessions() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `runs` bare write skews started at the same moment, at most `at_once` playing together,
/// each in its own schema made and dropped on a setup session of its own, summed up as a
/// crowd's readers would have seen them.
async fn bare_crowd(base: &PgConnectOptions, runs: usize, at_once: usize) -> Result<racelab::crowd::Summary> {
    let turns = Arc::new(tokio::sync::Semaphore::new(at_once));
    let pressed = Instant::now();
    // Polled together on this task (sqlx's statements cannot be proven `Send` across a spawn
    // here, see `connect`); the work is PostgreSQL's either way.
    let played = futures_util::future::join_all((0..runs).map(|n| {
        let turns = turns.clone();
        async move {
            let _turn = turns.acquire_owned().await?;
            let schema = format!("bench_crowd_{n}");
            let mut setup = connect(base, &schema, "setup").await?;
            let played = in_schema(&mut setup, &schema, bare_write_skew(base, &schema)).await;
            let _ = setup.close().await;
            played?;
            Ok::<_, BoxError>(racelab::crowd::Seen::Done {
                took: pressed.elapsed(),
                outcome: "completed".to_owned(),
                verdict: None,
            })
        }
    }))
    .await;
    let seen = played.into_iter().collect::<Result<Vec<_>>>()?;
    Ok(racelab::crowd::Summary::of(&seen, pressed.elapsed()))
}

/// What the bare load test did.
struct BareFigures {
    approved: usize,
    total: i64,
    /// From the first connect to the last worker's end, as the engine's `elapsed_ms` counts.
    drain: Duration,
}

/// The load test's statements: budget set to $50,000, then 16 workers on their own connections
/// take the 400 amounts from one queue, `strategy`'s way.
async fn bare_load_test(base: &PgConnectOptions, schema: &str, strategy: Strategy) -> Result<BareFigures> {
    let mut setup = connect(base, schema, "setup").await?;
    let budget = sqlx::raw_sql(&format!(
        "UPDATE teams SET budget = {LOAD_BUDGET}, spent = 0 WHERE id = '{TEAM}'"
    ))
    .execute(&mut setup)
    .await;
    if let Err(error) = budget {
        let _ = setup.close().await;
        return Err(error.into());
    }

    let started = Instant::now();
    let next_job = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::with_capacity(WORKERS);
    for w in 0..WORKERS {
        let (base, schema, next_job) = (base.clone(), schema.to_owned(), next_job.clone());
        tasks.push(tokio::spawn(async move {
            let name = format!("w{w:02}");
            let mut conn = connect(&base, &schema, &name).await?;
            let drained = drain(&mut conn, &name, strategy, &next_job).await;
            let closed = conn.close().await;
            let approved = drained?;
            closed?;
            Ok::<usize, BoxError>(approved)
        }));
    }
    // Every worker is awaited, even after one failed, so none still holds a lock when the schema
    // is dropped.
    let mut approved = 0;
    let mut first_error: Option<BoxError> = None;
    for task in tasks {
        match task.await {
            Ok(Ok(n)) => approved += n,
            Ok(Err(error)) => first_error = first_error.or(Some(error)),
            Err(join) => first_error = first_error.or(Some(format!("a bare worker panicked: {join}").into())),
        }
    }
    let drain_time = started.elapsed();
    let total = sqlx::query_scalar::<_, i64>(SELECT_APPROVED)
        .bind(TEAM)
        .fetch_one(&mut setup)
        .await;
    let _ = setup.close().await;
    if let Some(error) = first_error {
        return Err(error);
    }
    Ok(BareFigures {
        approved,
        total: total?,
        drain: drain_time,
    })
}

/// One worker: takes amounts from the shared queue until it is empty; returns how many it approved.
async fn drain(conn: &mut PgConnection, name: &str, strategy: Strategy, next_job: &AtomicUsize) -> Result<usize> {
    let begin = format!("BEGIN ISOLATION LEVEL {}", strategy.level().sql());
    let mut approved = 0;
    while let Some(&amount) = AMOUNTS.get(next_job.fetch_add(1, Ordering::SeqCst)) {
        simple(conn, &begin).await?;
        match strategy {
            Strategy::ForUpdate => {
                lock_team(conn).await?;
                let (budget, so_far) = read_rule(conn).await?;
                if so_far + amount <= budget {
                    insert_expense(conn, amount, name).await?;
                    approved += 1;
                }
                simple(conn, "COMMIT").await?;
            }
            Strategy::Conditional => {
                if !reserve(conn, amount).await? {
                    simple(conn, "ROLLBACK").await?;
                    continue;
                }
                insert_expense(conn, amount, name).await?;
                simple(conn, "COMMIT").await?;
                approved += 1;
            }
            other => return Err(format!("the bare program does not play {}", other.name()).into()),
        }
    }
    Ok(approved)
}

/// `185–187 approvals, $49,952–$49,997`: the spread of `(approved, total)` over the runs.
fn approved_span(runs: &[(i64, i64)]) -> String {
    let span = |values: Vec<i64>, show: &dyn Fn(i64) -> String| {
        let (lo, hi) = (values.iter().min(), values.iter().max());
        match (lo, hi) {
            (Some(lo), Some(hi)) if lo == hi => show(*lo),
            (Some(lo), Some(hi)) => format!("{}–{}", show(*lo), show(*hi)),
            _ => "none".to_owned(),
        }
    };
    format!(
        "{} for {}",
        span(runs.iter().map(|r| r.0).collect(), &|v| v.to_string()),
        span(runs.iter().map(|r| r.1).collect(), &|v| usd(v))
    )
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(times: &[Duration]) -> f64 {
    let mut ms: Vec<f64> = times.iter().copied().map(millis).collect();
    ms.sort_by(f64::total_cmp);
    match ms.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => ms[n / 2],
        n => (ms[n / 2 - 1] + ms[n / 2]) / 2.0,
    }
}

fn mean(times: &[Duration]) -> f64 {
    if times.is_empty() {
        return f64::NAN;
    }
    times.iter().copied().map(millis).sum::<f64>() / times.len() as f64
}

fn min(times: &[Duration]) -> f64 {
    times.iter().copied().map(millis).fold(f64::INFINITY, f64::min)
}

fn print_table(engine: &[Duration], bare: &[Duration]) {
    println!(
        "  {:<14} {:>10} {:>10} {:>10}",
        "wall time", "median ms", "mean ms", "min ms"
    );
    print_rows(engine, bare);
}

fn print_rows(engine: &[Duration], bare: &[Duration]) {
    for (label, times) in [("engine", engine), ("bare sqlx", bare)] {
        println!(
            "  {label:<14} {:>10.2} {:>10.2} {:>10.2}",
            median(times),
            mean(times),
            min(times)
        );
    }
    println!(
        "  {:<14} {:>9.2}x {:>9.2}x {:>9.2}x",
        "engine / bare",
        median(engine) / median(bare),
        mean(engine) / mean(bare),
        min(engine) / min(bare)
    );
}
