//! Every actor kind on its real service: a Redis client whose keys live under the run's prefix
//! and are gone afterwards; an HTTP server the run owns and a client that times out while the
//! server finishes its work; a child process killed with SIGKILL in the middle of a transaction
//! (PostgreSQL rolls back and frees its advisory lock), restarted, crashing at a named point and
//! exiting by itself; a sandbox with two schemas; a topic with three partitions and a consumer
//! group on the broker. Each scenario here is test code driving the engine's public API, and
//! every expected value comes from the scenario's own constants or the tutorials' specs.

mod common;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use common::{Finished, Leftovers, engine, play_def, wait_until_clean_of};
use racelab::engine::{Budget, Command, End, Lane, Level, RunError, StepError};
use racelab::labs::{ScenarioDef, actors_at};
use racelab::sandbox::Spec;
use shared::event::{Detail, ErrorKind};
use shared::{EventKind, Ledger, Moment, Outcome, Service, Value};
use std::sync::Arc;
use std::time::Duration;

/// A scenario that only tests need: no catalog text, one variant.
macro_rules! test_scenario {
    ($id:literal, $sandbox:expr, $actors:expr, $budget:expr, $play:expr) => {
        ScenarioDef {
            id: $id,
            title: $id,
            hook: "",
            about: "",
            steppable: true,
            workload: false,
            variants: &[("only", "only", "")],
            sandbox: $sandbox,
            actors: $actors,
            budget: Some($budget),
            play: $play,
            summarize: None,
            predict: None,
        }
    };
}

/// The events of one lane, in order.
fn lane_events<'a>(run: &'a Finished, lane: &str) -> Vec<&'a EventKind> {
    run.events
        .iter()
        .map(|e| &e.kind)
        .filter(|k| k.actor() == Some(lane))
        .collect()
}

/// The step texts and result summaries of one lane, in order.
fn steps_and_results(run: &Finished, lane: &str) -> Vec<String> {
    lane_events(run, lane)
        .into_iter()
        .filter_map(|k| match k {
            EventKind::Step { text, .. } => Some(format!("> {text}")),
            EventKind::Result { summary, .. } => Some(format!("< {summary}")),
            EventKind::Error { code, message, .. } => Some(format!("! {} {message}", code.clone().unwrap_or_default())),
            _ => None,
        })
        .collect()
}

// ---- Redis --------------------------------------------------------------------------------

const LOCK_KEY: &str = "lock:{wallet:42}";
const LOCK_TTL_MS: i64 = 30_000;

fn set_lock(token: &str) -> Command {
    Command::new("SET")
        .key(LOCK_KEY)
        .arg(token)
        .arg("NX")
        .arg("PX")
        .arg(LOCK_TTL_MS)
}

static REDIS_LOCK: ScenarioDef = test_scenario!(
    "test/redis-lock",
    Spec {
        schemas: &[("", "")],
        redis: true,
        topics: &[],
    },
    |_| actors_at(&["a", "b"], "Redis"),
    |_| Budget::postgres(0).and_redis(2),
    |run, _| {
        Box::pin(async move {
            let a = run.redis("a").await?;
            let b = run.redis("b").await?;
            a.run(&set_lock("token-a")).await?;
            b.run(&set_lock("token-b")).await?;
            a.run(&Command::new("PTTL").key(LOCK_KEY)).await?;
            // On the wire the key is under the run's prefix; the reply shows the tutorial's name.
            a.run(&Command::new("KEYS").arg(format!("racelab:{}:*", run.id())))
                .await?;
            let keys = run.redis_keys("redis", &[LOCK_KEY]).await?;
            run.emit(EventKind::Ledger {
                moment: Moment::After,
                ledger: Ledger { tables: vec![keys] },
            });
            // DELEX exists from Redis 8.4 on; before, its error reply is data, not a crash.
            match a
                .run(&Command::new("DELEX").key(LOCK_KEY).arg("IFEQ").arg("token-a"))
                .await
            {
                Ok(_) | Err(StepError::Redis { .. }) => Ok(()),
                Err(other) => Err(RunError::from(other)),
            }
        })
    }
);

#[tokio::test]
async fn a_redis_actor_races_for_a_lock_under_the_runs_prefix_and_leaves_no_key() {
    let _slot = common::db_slot().await;
    let run = play_def(&engine().await, &REDIS_LOCK, "only").await;
    assert_eq!(run.outcome, Outcome::Completed);
    let a = steps_and_results(&run, "a");
    assert_eq!(a[0], "> SET lock:{wallet:42} token-a NX PX 30000");
    assert_eq!(a[1], "< OK");
    assert_eq!(a[2], "> PTTL lock:{wallet:42}");
    let pttl: i64 = a[3]
        .strip_prefix("< (integer) ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a PTTL reply, got {}", a[3]));
    assert!(0 < pttl && pttl <= LOCK_TTL_MS, "PTTL {pttl}");
    assert_eq!(
        a[5], "< 1) \"lock:{wallet:42}\"",
        "the key lives under the prefix, shown without it"
    );
    assert_eq!(
        steps_and_results(&run, "b"),
        vec!["> SET lock:{wallet:42} token-b NX PX 30000", "< (nil)"]
    );
    let steps: Vec<Service> = lane_events(&run, "a")
        .into_iter()
        .filter_map(|k| match k {
            EventKind::Step { service, .. } => Some(*service),
            _ => None,
        })
        .collect();
    assert!(steps.iter().all(|s| *s == Service::Redis), "{steps:?}");

    let keys = run.rows_after("redis");
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0][..2], [Value::from(LOCK_KEY), Value::from("token-a")]);
    let ttl = keys[0][2].as_int().expect("a ttl");
    assert!(0 < ttl && ttl <= LOCK_TTL_MS, "ttl {ttl}");

    let delex = lane_events(&run, "a")
        .into_iter()
        .rev()
        .find(|k| matches!(k, EventKind::Result { .. } | EventKind::Error { .. }))
        .cloned();
    if common::redis_version().await < (8, 4) {
        match delex {
            Some(EventKind::Error {
                kind, code, message, ..
            }) => {
                assert_eq!((kind, code.as_deref()), (ErrorKind::Redis, Some("ERR")));
                assert!(message.to_lowercase().contains("unknown command"), "{message}");
            }
            other => panic!("DELEX before Redis 8.4 is an unknown command, got {other:?}"),
        }
    } else {
        assert!(matches!(delex, Some(EventKind::Result { ref summary, .. }) if summary == "(integer) 1"));
    }
    assert_eq!(wait_until_clean_of(&run.run_id, false).await, Leftovers::NONE);
}

#[tokio::test]
async fn a_run_whose_service_is_down_is_refused_before_it_queues() {
    let _slot = common::db_slot().await;
    let mut config = common::config();
    config.redis_url = "redis://127.0.0.1:1".into();
    config.kafka_brokers = "127.0.0.1:1".into();
    let engine = Arc::new(racelab::db::connect_engine(&config).await.expect("engine"));
    let refused = engine
        .start(&REDIS_LOCK, "only", shared::Mode::Auto)
        .await
        .err()
        .expect("refused");
    let message = refused.to_string();
    assert!(message.contains("needs Redis, which is down"), "{message}");
    let refused = engine
        .start(&BROKER, "only", shared::Mode::Auto)
        .await
        .err()
        .expect("refused");
    assert!(refused.to_string().contains("needs Kafka, which is down"), "{refused}");
    // The isolation lab needs neither, and still plays.
    let write_skew = racelab::labs::find("isolation/write-skew").expect("scenario");
    let run = play_def(&engine, write_skew, "serializable").await;
    assert_eq!(run.outcome, Outcome::Completed);
}

// ---- HTTP ---------------------------------------------------------------------------------

/// How long the card provider's charge takes: longer than the phone's first timeout.
const CHARGE_MS: u64 = 300;
const FIRST_TIMEOUT_MS: u64 = 100;

#[derive(Clone)]
struct Provider {
    lane: Lane,
    pool: sqlx::PgPool,
    finished: Arc<tokio::sync::Semaphore>,
}

/// Charges in a spawned task, so the work goes on when the caller hangs up.
async fn charge(State(provider): State<Provider>) -> (StatusCode, [(&'static str, &'static str); 1], String) {
    let work = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(CHARGE_MS)).await;
        let id: i64 = sqlx::query_scalar("INSERT INTO charges (amount) VALUES (2500) RETURNING id")
            .fetch_one(&provider.pool)
            .await
            .unwrap_or(-1);
        provider.lane.say(format!("charge {id} recorded"));
        provider.finished.add_permits(1);
        id
    });
    let id = work.await.unwrap_or(-1);
    (StatusCode::CREATED, [("retry-after", "1")], format!("{{\"id\":{id}}}"))
}

static HTTP_TIMEOUT: ScenarioDef = test_scenario!(
    "test/http-timeout",
    Spec {
        schemas: &[(
            "",
            "CREATE TABLE charges (id bigserial PRIMARY KEY, amount bigint NOT NULL)"
        )],
        redis: false,
        topics: &[],
    },
    |_| actors_at(&["phone", "provider"], "HTTP"),
    |_| Budget::postgres(2),
    |run, _| {
        Box::pin(async move {
            let finished = Arc::new(tokio::sync::Semaphore::new(0));
            let provider = Provider {
                lane: run.lane("provider", false),
                pool: run.pool("provider", None, 2).await?,
                finished: finished.clone(),
            };
            let server = run
                .http_server(axum::Router::new().route("/charges", post(charge)).with_state(provider))
                .await?;
            let phone = run.http_client("phone");
            let call = |timeout_ms| common::checkout_call(server.url(""), "/charges", timeout_ms);
            match phone.send(&call(FIRST_TIMEOUT_MS)).await {
                Err(StepError::Timeout { .. }) => phone.lane().say("attempt 1: no answer: timed out"),
                other => return Err(RunError::Other(format!("the first attempt should time out: {other:?}"))),
            }
            // The server keeps working after the phone hung up, and is seen to finish.
            tokio::time::timeout(Duration::from_secs(5), finished.acquire())
                .await
                .map_err(|_| RunError::Other("the first charge never finished".into()))?
                .map_err(|e| RunError::Other(e.to_string()))?
                .forget();
            let reply = phone.send(&call(3_000)).await?;
            phone.lane().say(format!("attempt 2: {} {}", reply.status, reply.body));
            let charges = run
                .snapshot(&[racelab::engine::TableQuery {
                    name: "charges",
                    schema: "",
                    sql: "SELECT id, amount FROM charges ORDER BY id",
                    key_columns: 1,
                }])
                .await?;
            run.emit(EventKind::Ledger {
                moment: Moment::After,
                ledger: charges,
            });
            Ok(())
        })
    }
);

#[tokio::test]
async fn an_http_client_times_out_while_the_server_finishes_its_work() {
    let _slot = common::db_slot().await;
    let run = play_def(&engine().await, &HTTP_TIMEOUT, "only").await;
    assert_eq!(run.outcome, Outcome::Completed, "{:?}", run.outcome);
    assert_eq!(
        run.transcript(),
        vec![
            "[phone] attempt 1: no answer: timed out",
            "[provider] charge 1 recorded",
            "[provider] charge 2 recorded",
            "[phone] attempt 2: 201 {\"id\":2}",
        ]
    );
    let phone = lane_events(&run, "phone");
    match phone[0] {
        EventKind::Step {
            service: Service::Http,
            text,
            detail: Some(Detail::Request {
                method, headers, body, ..
            }),
            ..
        } => {
            assert_eq!((text.as_str(), method.as_str()), ("POST /charges", "POST"));
            assert_eq!(headers, &vec![("Idempotency-Key".to_owned(), "order-7731".to_owned())]);
            assert_eq!(body, r#"{"amount": 2500, "card": "tok_visa"}"#);
        }
        other => panic!("the first step is the request, got {other:?}"),
    }
    assert!(
        matches!(
            phone[1],
            EventKind::Error {
                kind: ErrorKind::Timeout,
                code: None,
                ..
            }
        ),
        "{:?}",
        phone[1]
    );
    let reply = phone
        .iter()
        .find_map(|k| match k {
            EventKind::Result {
                summary,
                detail: Some(Detail::Response { status, headers, body }),
                ..
            } => Some((summary.clone(), *status, headers.clone(), body.clone())),
            _ => None,
        })
        .expect("the second attempt's response");
    assert_eq!((reply.0.as_str(), reply.1), ("201 Created", 201));
    assert!(
        reply.2.contains(&("retry-after".to_owned(), "1".to_owned())),
        "{:?}",
        reply.2
    );
    assert_eq!(reply.3, "{\"id\":2}");
    // The first charge was recorded after the phone's timeout: the double charge's mechanism.
    let seq_of = |wanted: &dyn Fn(&EventKind) -> bool| {
        run.events
            .iter()
            .find(|e| wanted(&e.kind))
            .map(|e| e.seq)
            .expect("the event")
    };
    let timed_out = seq_of(&|k| {
        matches!(
            k,
            EventKind::Error {
                kind: ErrorKind::Timeout,
                ..
            }
        )
    });
    let recorded = seq_of(&|k| matches!(k, EventKind::Say { line, .. } if line == "[provider] charge 1 recorded"));
    assert!(timed_out < recorded);
    assert_eq!(run.rows_after("charges"), vec![row![1, 2500], row![2, 2500]]);
    assert_eq!(wait_until_clean_of(&run.run_id, false).await, Leftovers::NONE);
}

// ---- Child processes ----------------------------------------------------------------------

/// The tutorial's relay lock key (outbox: `RELAY_LOCK = 4200`), in the run's own lock space.
const RELAY_LOCK: i64 = 4200;

/// Advisory locks of key `RELAY_LOCK` in the run's space, and the relay's outbox rows.
async fn relay_state(run: &racelab::engine::Run) -> Result<(i64, i64), RunError> {
    let locks = run
        .check(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
               AND classid = $1::bigint::oid AND objid = $2::bigint::oid AND objsubid = 2",
            &[i64::from(run.lock_space()).into(), RELAY_LOCK.into()],
        )
        .await?
        .int()?;
    let rows = run.check("SELECT count(*) FROM outbox", &[]).await?.int()?;
    Ok((locks, rows))
}

/// Polls (every 10 ms, up to 5 s) until PostgreSQL has noticed a dead session: a wait for the
/// server's own bookkeeping, not a sleep.
async fn state_after_death(run: &racelab::engine::Run) -> Result<(i64, i64), RunError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let state = relay_state(run).await?;
        if state.0 == 0 || tokio::time::Instant::now() >= deadline {
            return Ok(state);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn holding(event: &EventKind) -> bool {
    matches!(event, EventKind::Say { line, .. } if line == "[relay] holding the relay lock")
}

static CRASHING_RELAY: ScenarioDef = test_scenario!(
    "test/crashing-relay",
    Spec {
        schemas: &[("", "CREATE TABLE outbox (id int PRIMARY KEY)")],
        redis: false,
        topics: &[],
    },
    |_| actors_at(&["relay", "naive", "probe"], "process"),
    |_| Budget::postgres(1).and_processes(1),
    |run, _| {
        Box::pin(async move {
            let script = serde_json::json!({"steps": [
                "BEGIN",
                "SELECT pg_advisory_lock({lock_space}, 4200)",
                "INSERT INTO outbox VALUES (1)",
                "say:holding the relay lock",
                "sleep:30000",
            ]});
            let mut relay = run.process("relay", "sql-script", script).await?;
            let first_pid = relay.pid();
            relay.wait_for(Duration::from_secs(20), holding).await?;
            let (locks, _) = relay_state(run).await?;
            run.say_plain(format!("before the kill: relay locks {locks}"));
            relay.kill("mid-transaction").await?;
            let (locks, rows) = state_after_death(run).await?;
            run.say_plain(format!("after the kill: relay locks {locks}, outbox rows {rows}"));

            relay.restart().await?;
            relay.wait_for(Duration::from_secs(20), holding).await?;
            let (locks, _) = relay_state(run).await?;
            run.say_plain(format!(
                "restarted with a new pid: {}; relay locks {locks}",
                relay.pid() != first_pid
            ));
            relay.kill("again").await?;
            let (locks, rows) = state_after_death(run).await?;
            run.say_plain(format!(
                "after the second kill: relay locks {locks}, outbox rows {rows}"
            ));

            let mut naive = run
                .process(
                    "naive",
                    "sql-script",
                    serde_json::json!({"steps": ["say:about to crash", "crash:after_commit", "say:never said"]}),
                )
                .await?;
            let end = naive.wait_end(Duration::from_secs(20)).await?;
            run.say_plain(format!("naive ended: {end:?}"));

            let mut probe = run
                .process("probe", "sql-script", serde_json::json!({"steps": ["say:done"]}))
                .await?;
            let end = probe.wait_end(Duration::from_secs(20)).await?;
            run.say_plain(format!("probe ended: {end:?}"));
            if end != (End::Exited { code: Some(0) }) {
                return Err(RunError::Other(format!("the probe should exit with 0, not {end:?}")));
            }
            Ok(())
        })
    }
);

#[tokio::test]
async fn a_child_killed_mid_transaction_rolls_back_frees_its_lock_and_restarts() {
    let _slot = common::db_slot().await;
    let run = play_def(&engine().await, &CRASHING_RELAY, "only").await;
    assert_eq!(run.outcome, Outcome::Completed, "{:?}", run.outcome);
    assert_eq!(
        run.transcript(),
        vec![
            "[relay] holding the relay lock",
            "before the kill: relay locks 1",
            "after the kill: relay locks 0, outbox rows 0",
            "[relay] holding the relay lock",
            "restarted with a new pid: true; relay locks 1",
            "after the second kill: relay locks 0, outbox rows 0",
            "[naive] about to crash",
            "naive ended: Crashed { point: \"after_commit\" }",
            "[probe] done",
            "probe ended: Exited { code: Some(0) }",
        ]
    );
    let lifecycle: Vec<String> = run
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ProcessStarted { actor, restart, .. } => Some(format!("{actor} started, restart {restart}")),
            EventKind::Crash { actor, point } => Some(format!("{actor} crashed at {point}")),
            EventKind::ProcessExited { actor, code } => Some(format!("{actor} exited {code:?}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        lifecycle,
        vec![
            "relay started, restart false",
            "relay crashed at mid-transaction",
            "relay started, restart true",
            "relay crashed at again",
            "naive started, restart false",
            "naive crashed at after_commit",
            "probe started, restart false",
            "probe exited Some(0)",
        ]
    );
    // The child's statements are steps on its lane, like any actor's.
    let relay = steps_and_results(&run, "relay");
    assert_eq!(relay[..2], ["> BEGIN".to_owned(), "< BEGIN".to_owned()]);
    assert_eq!(relay[4], "> INSERT INTO outbox VALUES (1)");
    assert_eq!(wait_until_clean_of(&run.run_id, false).await, Leftovers::NONE);
    // No child outlives its run.
    let children = std::process::Command::new("pgrep")
        .args(["-f", "racelab actor sql-script"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
        .unwrap_or(0);
    assert_eq!(children, 0, "a racelab actor is still running");
}

// ---- Two schemas --------------------------------------------------------------------------

static TWO_DATABASES: ScenarioDef = test_scenario!(
    "test/two-databases",
    Spec {
        schemas: &[
            (
                "payments",
                "CREATE TABLE payments (id text PRIMARY KEY, status text NOT NULL)"
            ),
            (
                "notifier",
                "CREATE TABLE processed_events (event_id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
                    processed_at timestamptz NOT NULL DEFAULT now(), note jsonb, raw bytea, age interval)",
            ),
        ],
        redis: false,
        topics: &[],
    },
    |_| actors_at(&["payments", "notifier"], "autocommit"),
    |_| Budget::postgres(2),
    |run, _| {
        Box::pin(async move {
            let payments = run.actor("payments", Level::Autocommit).await?;
            let notifier = run.actor_in("notifier", "notifier", Level::Autocommit).await?;
            payments
                .query("INSERT INTO payments VALUES ('pay_001', 'captured')", &[])
                .await?;
            let own = payments.query("SELECT current_schema()::text", &[]).await?;
            payments.say(format!("works in {}", own.rows[0][0]));
            notifier
                .query(
                    "INSERT INTO processed_events (note, raw, age) VALUES ('{\"a\": 1}', '\\x7b', '8 days')",
                    &[],
                )
                .await?;
            let own = notifier.query("SELECT current_schema()::text", &[]).await?;
            notifier.say(format!("works in {}", own.rows[0][0]));
            let after = run
                .snapshot(&[
                    racelab::engine::TableQuery {
                        name: "payments",
                        schema: "payments",
                        sql: "SELECT id, status FROM payments",
                        key_columns: 1,
                    },
                    racelab::engine::TableQuery {
                        name: "processed_events",
                        schema: "notifier",
                        sql: "SELECT event_id, note, raw, age, processed_at FROM processed_events",
                        key_columns: 1,
                    },
                ])
                .await?;
            run.emit(EventKind::Ledger {
                moment: Moment::After,
                ledger: after,
            });
            Ok(())
        })
    }
);

#[tokio::test]
async fn a_sandbox_with_two_databases_gives_each_actor_its_own_schema() {
    let _slot = common::db_slot().await;
    let run = play_def(&engine().await, &TWO_DATABASES, "only").await;
    assert_eq!(run.outcome, Outcome::Completed, "{:?}", run.outcome);
    // Named by its sandbox's id, never the run's.
    let id = &common::named(&run.run_id);
    assert_ne!(id, &run.run_id);
    assert_eq!(
        run.transcript(),
        vec![
            format!("[payments] works in run_{id}_payments"),
            format!("[notifier] works in run_{id}_notifier"),
        ]
    );
    // Autocommit: no BEGIN, no COMMIT on the lane.
    assert!(
        !steps_and_results(&run, "payments").iter().any(|s| s.contains("BEGIN")),
        "{:?}",
        steps_and_results(&run, "payments")
    );
    assert_eq!(run.rows_after("payments"), vec![row!["pay_001", "captured"]]);
    let event = &run.rows_after("processed_events")[0];
    let uuid = event[0].as_text().expect("a uuid as text");
    assert_eq!((uuid.len(), uuid.matches('-').count()), (36, 4), "{uuid}");
    // As psql prints them: PostgreSQL's own text for jsonb, bytea and interval.
    assert_eq!(
        event[1..4],
        [Value::from(r#"{"a": 1}"#), Value::from("\\x7b"), Value::from("8 days")]
    );
    let at = event[4].as_text().expect("a timestamptz as text");
    assert!(at.ends_with("+00") && at.len() >= 22, "{at}");
    assert_eq!(wait_until_clean_of(&run.run_id, false).await, Leftovers::NONE);
}

// ---- The broker ---------------------------------------------------------------------------

/// The outbox tutorial's placements under librdkafka's default partitioner (specs/outbox.md §7.6).
/// The run also leaves a static consumer group member behind, which its cleanup must remove.
const PLACEMENTS: [(&str, i32); 2] = [("pay_001", 1), ("pay_002", 0)];

/// Whether the broker knows consumer group `group`, asked with a client of the test's own.
async fn group_exists(group: String) -> bool {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let brokers = common::config().kafka_brokers;
    tokio::task::spawn_blocking(move || {
        let client: BaseConsumer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", &brokers)
            .create()
            .expect("a client");
        client
            .fetch_group_list(Some(&group), Duration::from_secs(10))
            .map(|l| l.groups().iter().any(|g| g.name() == group))
            .unwrap_or(false)
    })
    .await
    .expect("join")
}

static BROKER: ScenarioDef = test_scenario!(
    "test/broker",
    Spec {
        schemas: &[("", "")],
        redis: false,
        topics: &[("payments", 3)],
    },
    |_| actors_at(&["relay", "notifier", "audit"], "Kafka"),
    |_| Budget::postgres(0).and_broker(4),
    |run, _| {
        Box::pin(async move {
            let relay = run.producer("relay", true)?;
            for (key, _) in PLACEMENTS {
                let value = format!(r#"{{"type": "payment.captured", "payment_id": "{key}"}}"#);
                let (partition, offset) = relay.send("payments", key, &value).await?;
                relay.lane().say(format!("{key} went to p{partition}@{offset}"));
            }
            // A dynamic member: it leaves the group when it closes, so the group can be deleted.
            // (A static member never leaves, and this test broker never expires it.)
            let notifier = run.consumer("notifier", "notifier", None, &["payments"])?;
            let mut received = 0;
            while received < PLACEMENTS.len() {
                let Some(message) = notifier.poll(Duration::from_secs(20)).await? else {
                    return Err(RunError::Other(format!("only {received} message(s) arrived")));
                };
                notifier.commit(&message).await?;
                notifier.lane().say(format!(
                    "p{}@{} {}",
                    message.partition,
                    message.offset,
                    message.key.unwrap_or_default()
                ));
                received += 1;
            }
            // A static member (`group.instance.id`) never leaves its group, even when it closes:
            // cleanup must remove it before the group can go.
            let audit = run.consumer("audit", "audit", Some("audit-1"), &["payments"])?;
            if let Some(message) = audit.poll(Duration::from_secs(20)).await? {
                audit.commit(&message).await?;
            }
            let partitions = common::partitions_of(run.topic("payments")?).await;
            let group = group_exists(run.group("notifier")).await;
            run.say_plain(format!(
                "the topic has {partitions} partitions; the group exists: {group}"
            ));
            let topic = run.topic_table("payments", "payments").await?;
            run.emit(EventKind::Ledger {
                moment: Moment::After,
                ledger: Ledger { tables: vec![topic] },
            });
            Ok(())
        })
    }
);

#[tokio::test]
async fn a_topic_with_three_partitions_and_a_group_come_and_go_with_the_run() {
    let _slot = common::db_slot().await;
    let run = play_def(&engine().await, &BROKER, "only").await;
    assert_eq!(run.outcome, Outcome::Completed, "{:?}", run.outcome);
    let transcript = run.transcript();
    assert_eq!(
        transcript[..2],
        [
            "[relay] pay_001 went to p1@0".to_owned(),
            "[relay] pay_002 went to p0@0".to_owned()
        ]
    );
    let mut consumed = transcript[2..4].to_vec();
    consumed.sort();
    assert_eq!(consumed, vec!["[notifier] p0@0 pay_002", "[notifier] p1@0 pay_001"]);
    assert_eq!(transcript[4], "the topic has 3 partitions; the group exists: true");
    let relay = lane_events(&run, "relay");
    assert!(matches!(
        relay[0],
        EventKind::Step { service: Service::Kafka, text, detail: Some(Detail::Message { key: Some(k), .. }), .. }
            if text == "produce payments key=pay_001" && k == "pay_001"
    ));
    let topic = run.rows_after("payments");
    let placed: Vec<(i64, i64, String)> = topic
        .iter()
        .map(|r| {
            (
                r[0].as_int().unwrap_or(-1),
                r[1].as_int().unwrap_or(-1),
                r[2].as_text().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(placed, vec![(0, 0, "pay_002".to_owned()), (1, 0, "pay_001".to_owned())]);
    assert_eq!(wait_until_clean_of(&run.run_id, true).await, Leftovers::NONE);
}
