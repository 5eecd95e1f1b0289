//! One run that touches every service, for the browser test that checks each kind of step is
//! drawn as its own kind of card: a Redis command, an HTTP request that times out and one that
//! answers, a broker message produced and received, and a child process that starts, crashes at
//! its crash point and is started again.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use racelab::engine::{Budget, Command, RunError, StepError};
use racelab::labs::{ScenarioDef, actors_at};
use racelab::sandbox::Spec;
use std::time::Duration;

/// How long the server's one slow request takes: longer than the client's first timeout.
const SLOW_MS: u64 = 300;

async fn slow_then_conflict(State(slow): State<bool>) -> (StatusCode, [(&'static str, &'static str); 1], &'static str) {
    if slow {
        tokio::time::sleep(Duration::from_millis(SLOW_MS)).await;
    }
    (
        StatusCode::CONFLICT,
        [("retry-after", "1")],
        r#"{"error":"a request with this Idempotency-Key is still in progress"}"#,
    )
}

pub static EVERY_SERVICE: ScenarioDef = ScenarioDef {
    id: "test/every-service",
    title: "Every service",
    hook: "",
    about: "",
    steppable: true,
    workload: false,
    variants: &[("only", "only", "")],
    sandbox: Spec {
        schemas: &[("", "")],
        redis: true,
        topics: &[("payments", 3)],
    },
    actors: |_| actors_at(&["wallet", "phone", "relay", "worker"], ""),
    budget: Some(|_| Budget::postgres(1).and_redis(1).and_broker(2).and_processes(1)),
    play: |run, _| {
        Box::pin(async move {
            let wallet = run.redis("wallet").await?;
            wallet
                .run(
                    &Command::new("SET")
                        .key("lock:wallet:42")
                        .arg("token-a")
                        .arg("NX")
                        .arg("PX")
                        .arg(2000),
                )
                .await?;

            let slow = run
                .http_server(
                    axum::Router::new()
                        .route("/payments", post(slow_then_conflict))
                        .with_state(true),
                )
                .await?;
            let phone = run.http_client("phone");
            let call = |timeout_ms| super::checkout_call(slow.url(""), "/payments", timeout_ms);
            match phone.send(&call(100)).await {
                Err(StepError::Timeout { .. }) => {}
                other => return Err(RunError::Other(format!("expected a timeout, got {other:?}"))),
            }
            phone.send(&call(3_000)).await?;

            let relay = run.producer("relay", true)?;
            relay
                .send(
                    "payments",
                    "pay_001",
                    r#"{"type": "payment.captured", "payment_id": "pay_001"}"#,
                )
                .await?;

            let mut worker = run
                .process(
                    "worker",
                    "sql-script",
                    serde_json::json!({"steps": ["SELECT 1", "crash:after_produce"]}),
                )
                .await?;
            worker.wait_end(Duration::from_secs(20)).await?;
            worker.restart().await?;
            worker.wait_end(Duration::from_secs(20)).await?;
            Ok(())
        })
    },
    summarize: None,
    predict: None,
};
