//! How fast the outbox lab drains, measured side by side in one run.
//!
//! `cargo bench --bench outbox`. Needs PostgreSQL and a Kafka-compatible broker at
//! `KAFKA_BROKERS` (`scripts/broker.sh start 39092`); loopback only; a few minutes on a busy
//! two-core machine.
//!
//! 1. **Relay throughput** (rounds interleaved, one untimed warm-up): 2,000 events staged in the
//!    outbox, unpublished; then
//!    - **relay**: one `racelab actor relay` process (no crashes), timed from its `active` line
//!      to the moment no row is left unpublished: batches of 100, each one transaction that
//!      locks, produces, waits for every acknowledgement and marks;
//!    - **bare rdkafka**: the same 2,000 messages (same keys, same bytes) from a bare
//!      idempotent `FutureProducer`, all queued, then every delivery awaited: the most this
//!      broker takes here.
//!
//!    relay/bare is what the outbox's guarantees cost per event.
//! 2. **The chaos test** (`outbox/chaos`, 1,000 payments, crashes at the tutorial's rates):
//!    each run's load time, drain time, duplicates and crashes, beside the tutorial's one run.

mod common;

use common::{EngineRun, Result, engine_run, median, millis};
use racelab::engine::{Budget, Run, RunError};
use racelab::labs::ScenarioDef;
use racelab::labs::outbox::relay::{self, FETCH, Row, Switches};
use racelab::labs::outbox::{SANDBOX, TOPIC};
use rdkafka::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord};
use shared::{EventKind, Value};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Events staged for section 1, and its timed rounds.
const EVENTS: i64 = 2000;
const ROUNDS: usize = 3;
/// Chaos runs in section 2.
const CHAOS_RUNS: usize = 2;

/// Section 1's measurements of one round: (relay, bare), written by the scenario.
static MEASURED: Mutex<Option<(Duration, Duration)>> = Mutex::new(None);

static RELAY_DRAIN: ScenarioDef = ScenarioDef {
    id: "bench/relay-drain",
    title: "bench/relay-drain",
    hook: "",
    about: "",
    steppable: false,
    workload: false,
    variants: &[("only", "only", "")],
    sandbox: SANDBOX,
    actors: |_| racelab::labs::actors_at(&["relay"], ""),
    budget: Some(|_| Budget::postgres(1).and_broker(3).and_processes(1)),
    play: |run, _| Box::pin(relay_drain(run)),
    summarize: None,
    predict: None,
};

async fn relay_drain(run: &Run) -> std::result::Result<(), RunError> {
    run.setup(&format!(
        "INSERT INTO outbox (aggregate_id, event_type, payload)
             SELECT format('pay_%s', lpad((n / 2)::text, 5, '0')),
                    CASE WHEN n % 2 = 0 THEN 'payment.authorized' ELSE 'payment.captured' END,
                    jsonb_build_object('amount_cents', 100 + n / 2, 'currency', 'USD')
             FROM generate_series(0, {}) AS n",
        EVENTS - 1
    ))
    .await?;
    // The bare producer's messages: the relay's own, built from the same rows.
    let messages: Vec<(String, String)> = run
        .check(&FETCH.replace("LIMIT 100", &format!("LIMIT {EVENTS}")), &[])
        .await?
        .rows
        .iter()
        .filter_map(|r| Row::of(r))
        .map(|r| (r.aggregate_id.clone(), r.message()))
        .collect();
    let mut relay = relay::start_muted(run, "relay", &Switches::default()).await?;
    relay
        .wait_for(
            Duration::from_secs(30),
            |e| matches!(e, EventKind::Say { line, .. } if line == "active"),
        )
        .await?;
    let started = Instant::now();
    loop {
        let left = run
            .check("SELECT count(*) FROM outbox WHERE published_at IS NULL", &[])
            .await?
            .int()?;
        if left == 0 {
            break;
        }
        if started.elapsed() > Duration::from_secs(120) {
            return Err(RunError::Other(format!("{left} events still unpublished after 120 s")));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let relayed = started.elapsed();
    relay.stop().await?;
    let brokers = std::env::var("KAFKA_BROKERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", &brokers)
        .set("enable.idempotence", "true")
        .create()
        .map_err(|e| RunError::Other(e.to_string()))?;
    let wire = run.topic(TOPIC)?.to_owned();
    let started = Instant::now();
    let mut deliveries = Vec::with_capacity(messages.len());
    for (key, value) in &messages {
        let record = FutureRecord::to(&wire).key(key.as_str()).payload(value.as_str());
        deliveries.push(
            producer
                .send_result(record)
                .map_err(|(e, _)| RunError::Other(e.to_string()))?,
        );
    }
    for delivery in deliveries {
        delivery
            .await
            .map_err(|_| RunError::Other("a delivery report never came".into()))?
            .map_err(|(e, _)| RunError::Other(e.to_string()))?;
    }
    let bare = started.elapsed();
    *MEASURED.lock().unwrap_or_else(|p| p.into_inner()) = Some((relayed, bare));
    Ok(())
}

fn main() -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(bench())
}

async fn bench() -> Result<()> {
    // The relay and the notifier run as `racelab actor …` processes of this build.
    let config = common::config();
    let engine = common::engine(&config).await?;
    println!(
        "racelab outbox benchmark: broker at {}, {} CPU(s)",
        config.kafka_brokers,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!();
    println!(
        "1. Relay throughput: {EVENTS} staged events; relay process (batches of 100) vs a bare idempotent rdkafka producer, same messages; {ROUNDS} rounds after 1 warm-up"
    );
    let (mut relay, mut bare) = (Vec::new(), Vec::new());
    for round in 0..=ROUNDS {
        engine_run(&engine, &RELAY_DRAIN, "only").await?;
        let (relayed, sent) = MEASURED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or("the relay drain measured nothing")?;
        if round > 0 {
            let (r, b) = (rate(relayed), rate(sent));
            println!(
                "   round {round}: relay {:>6.0} ms, {r:>6.0} events/s   bare {:>6.0} ms, {b:>6.0} messages/s   relay/bare {:.2}x of the rate",
                millis(relayed),
                millis(sent),
                r / b
            );
            relay.push(r);
            bare.push(b);
        }
    }
    println!(
        "   median: relay {:.0} events/s, bare {:.0} messages/s, relay/bare {:.2}x",
        median(&relay),
        median(&bare),
        median(&relay) / median(&bare)
    );
    println!("   tutorial: no throughput printed (its relay is \"about 70 lines\" of Python)");
    println!();
    println!("2. The chaos test, outbox/chaos 1000: {CHAOS_RUNS} runs");
    println!(
        "   tutorial (one run): load about 2.5 s, drained within about 40 s (most of it a dead notifier's session timing out), 201 duplicates, relay crashes 3, notifier crashes 1, 98 read out of order"
    );
    let def = racelab::labs::find("outbox/chaos").ok_or("no outbox/chaos")?;
    for i in 1..=CHAOS_RUNS {
        let EngineRun { wall, events } = engine_run(&engine, def, "1000").await?;
        let figure = |name: &str| -> String {
            events
                .iter()
                .rev()
                .find_map(|e| match &e.kind {
                    EventKind::Ledger {
                        moment: shared::Moment::After,
                        ledger,
                    } => ledger.table("this run").and_then(|t| {
                        t.rows
                            .iter()
                            .find(|r| r.first() == Some(&Value::from(name)))
                            .and_then(|r| r.get(1))
                            .map(ToString::to_string)
                    }),
                    _ => None,
                })
                .unwrap_or_else(|| "?".into())
        };
        println!(
            "   run {i}: wall {:.1} s; load {}, drained after {}; duplicates {}; relay A {}, relay B {} (crashes, batches); notifier crashes {}; read out of order {}",
            wall.as_secs_f64(),
            figure("load took"),
            figure("drained after"),
            figure("duplicates on the topic"),
            figure("relay A: crashes, batches published"),
            figure("relay B: crashes, batches published"),
            figure("notifier: crashes"),
            figure("payments read out of order"),
        );
    }
    Ok(())
}

fn rate(took: Duration) -> f64 {
    EVENTS as f64 / took.as_secs_f64()
}
