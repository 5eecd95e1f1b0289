//! The card provider, as the tutorial's fake one behaves: `POST /charges` takes about a second
//! for every new charge ("the card network is slow"), declines `tok_declined` with 402 and
//! remembers nothing of it, and, given an `Idempotency-Key`, charges once per key: a second
//! request with a known key gets the first charge's id at once, and one that arrives while the
//! first still runs gets 409 (a transaction advisory lock on the key, in the run's own space, held
//! across the slow part).
//!
//! Two things the tutorial's provider does not do, for the scenarios and the bad-input checks:
//! it knows its test cards and refuses any other token at once with 400 (as Stripe's test mode
//! does), and it can be told to fail its first request (503 after the network's second, nothing
//! charged), to show a failed owner's release in the stale-release scenario.
//!
//! Its ledger is its own database (`provider` schema): what the card network really charged.

use super::{InFlight, json_line};
use crate::engine::Lane;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use serde::Deserialize;
use sqlx::PgPool;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long a new charge (or a decline) takes.
pub const NETWORK_DELAY: Duration = Duration::from_secs(1);
/// The card the provider declines.
pub const DECLINED_CARD: &str = "tok_declined";
/// The test cards the provider knows, as a card network's test mode does; any other token is
/// refused at once with 400, and nothing is charged.
pub const KNOWN_CARDS: &[&str] = &["tok_visa", "tok_mastercard", "tok_amex", DECLINED_CARD];

/// What the provider's handler needs.
#[derive(Clone)]
pub struct Provider {
    pub pool: PgPool,
    pub lane: Lane,
    /// The run's advisory-lock space: two runs charging with the same key never contend.
    pub lock_space: i32,
    pub in_flight: Arc<InFlight>,
    /// Fault injection: the first charge request waits the network's second, then fails with
    /// 503 without charging (a lost answer, for one request only).
    pub fail_first: Arc<AtomicBool>,
}

#[derive(Deserialize)]
struct ChargeRequest {
    amount: i64,
    card: String,
}

/// The provider's router.
pub fn router(provider: Provider) -> axum::Router {
    axum::Router::new()
        .route("/charges", axum::routing::post(charge))
        .with_state(provider)
}

async fn charge(State(provider): State<Provider>, headers: HeaderMap, body: String) -> Response {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .filter(|k| !k.is_empty())
        .map(str::to_owned);
    let guard = provider.in_flight.enter();
    // The charge runs to its end even if the caller hangs up.
    let work = tokio::spawn(async move {
        let answer = charge_once(&provider, key.as_deref(), &body).await;
        drop(guard);
        answer
    });
    work.await
        .unwrap_or_else(|_| text(StatusCode::INTERNAL_SERVER_ERROR, "the charge crashed"))
}

async fn charge_once(provider: &Provider, key: Option<&str>, body: &str) -> Response {
    let Ok(request) = serde_json::from_str::<ChargeRequest>(body) else {
        return text(StatusCode::BAD_REQUEST, "bad request");
    };
    if !KNOWN_CARDS.contains(&request.card.as_str()) {
        provider
            .lane
            .note(format!("{}: no such card: 400, nothing charged", request.card));
        return json(StatusCode::BAD_REQUEST, &serde_json::json!({"error": "no_such_token"}));
    }
    if provider.fail_first.swap(false, Ordering::SeqCst) {
        tokio::time::sleep(NETWORK_DELAY).await;
        provider
            .lane
            .note("the card network failed this request: 503, nothing charged");
        return json(
            StatusCode::SERVICE_UNAVAILABLE,
            &serde_json::json!({"error": "network_error"}),
        );
    }
    match charge_in_transaction(provider, key, &request).await {
        Ok(response) => response,
        Err(error) => text(StatusCode::INTERNAL_SERVER_ERROR, &error.to_string()),
    }
}

async fn charge_in_transaction(
    provider: &Provider,
    key: Option<&str>,
    request: &ChargeRequest,
) -> Result<Response, sqlx::Error> {
    let mut tx = provider.pool.begin().await?;
    if let Some(key) = key {
        let free: bool = sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1, hashtext($2))")
            .bind(provider.lock_space)
            .bind(key)
            .fetch_one(&mut *tx)
            .await?;
        if !free {
            provider
                .lane
                .note(format!("key {key}: a charge with it is still running: 409"));
            return Ok(json(
                StatusCode::CONFLICT,
                &serde_json::json!({"error": "request_in_progress"}),
            ));
        }
        let known: Option<String> = sqlx::query_scalar("SELECT id FROM card_charges WHERE idempotency_key = $1")
            .bind(key)
            .fetch_optional(&mut *tx)
            .await?;
        if let Some(id) = known {
            provider
                .lane
                .note(format!("key {key} is known: the first charge, {id}, at once"));
            return Ok(json(StatusCode::CREATED, &serde_json::json!({"id": id})));
        }
    }
    tokio::time::sleep(NETWORK_DELAY).await;
    if request.card == DECLINED_CARD {
        provider
            .lane
            .note(format!("{} declined: 402, nothing recorded", request.card));
        return Ok(json(
            StatusCode::PAYMENT_REQUIRED,
            &serde_json::json!({"error": "card_declined"}),
        ));
    }
    let id: String =
        sqlx::query_scalar("INSERT INTO card_charges (idempotency_key, card, amount) VALUES ($1, $2, $3) RETURNING id")
            .bind(key)
            .bind(&request.card)
            .bind(request.amount)
            .fetch_one(&mut *tx)
            .await?;
    tx.commit().await?;
    provider.lane.note(format!(
        "charged {} to {}: {id}{}",
        request.amount,
        request.card,
        key.map(|k| format!(" (key {})", short(k)))
            .unwrap_or_else(|| " (no key)".into())
    ));
    Ok(json(StatusCode::CREATED, &serde_json::json!({"id": id})))
}

/// A long derived key, shortened for a note.
fn short(key: &str) -> String {
    if key.len() > 16 {
        format!("{}…", &key[..12])
    } else {
        key.to_owned()
    }
}

/// A JSON answer as Go's `json.NewEncoder(w).Encode` writes it: compact, then a newline.
fn json(status: StatusCode, value: &serde_json::Value) -> Response {
    respond(status, "application/json", json_line(value))
}

/// A plain-text error as Go's `http.Error` writes it.
fn text(status: StatusCode, message: &str) -> Response {
    respond(status, "text/plain; charset=utf-8", format!("{message}\n"))
}

fn respond(status: StatusCode, content_type: &str, body: String) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .body(Body::from(body))
        .unwrap_or_default()
}
