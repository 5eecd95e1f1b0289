//! `GET /healthz`: each dependency, up or down, and every PostgreSQL server with its version
//! (MariaDB's too).
//! 200 while PostgreSQL is up (the labs that need only PostgreSQL keep working when Redis or the
//! broker is down: degrade, don't die); 503 when it is not.

use super::AppState;
use crate::health;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

pub fn router() -> Router<AppState> {
    Router::new().route("/healthz", get(healthz))
}

async fn healthz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    let (health, mut servers) = state.engine.health_and_servers().await;
    // Those not reached since racelab started too: down, with why, until they answer.
    servers.extend(state.engine.waiting_servers());
    let all_up = health.postgres.up && health.redis.up && health.kafka.up;
    let status = if all_up {
        "ok"
    } else if health.postgres.up {
        "degraded"
    } else {
        "down"
    };
    let code = if health.postgres.up {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        code,
        Json(json!({
            "status": status,
            "postgres": health.postgres,
            // Every server runs play on (the first is `postgres` above), with its version.
            "servers": servers,
            "redis": health.redis,
            "kafka": health.kafka,
            // Where the isolation lab's MariaDB variants play: no lab needs it whole, so no
            // status counts it (a MariaDB variant is refused by name while it is down).
            "mariadb": state.engine.mariadb().await,
            "rooms": health::rooms_reach(&health.redis),
        })),
    )
}
