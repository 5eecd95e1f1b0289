//! The shop's API, `POST /payments`, in the tutorial's three modes:
//! - **naive**: charge the card, record the payment. A retry is a new payment.
//! - **check-first**: look the key up, and only if it is not there, charge and then save it. Two
//!   requests can both look before either saves: a check-then-act race.
//! - **idempotent**: *claim* the key first, in one autocommitted `INSERT … ON CONFLICT DO
//!   NOTHING RETURNING`, so exactly one request owns it; the others get 422 (another body), the
//!   stored answer (`Idempotent-Replayed: true`) or 409 with `Retry-After: 1`. Final answers
//!   (201, 402) are stored; a provider fault releases the key (only if it is still this
//!   request's claim). With a lease, a claim older than the lease can be taken over; with the
//!   provider key, the charge itself is deduplicated by the provider.
//!
//! Every mode finishes its work after the client hangs up: the work is a spawned task the
//! request waits for, not the request's own future (the tutorial's `context.WithoutCancel`).
//! Bodies and status codes are the tutorial's, byte for byte: fresh answers end with a newline,
//! stored ones do not.

use super::{CUSTOMER_HEADER, InFlight, json_line};
use crate::engine::Lane;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use sqlx::types::chrono::{DateTime, Utc};
use std::sync::Arc;
use std::time::Duration;

/// How the shop treats a retried payment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Naive,
    CheckFirst,
    /// The atomic claim; `lease` (zero: never take over) and the provider key are options.
    Idempotent {
        lease: Duration,
        provider_key: bool,
    },
}

/// The atomic claim alone: no lease (a started key is never taken over), no provider key.
pub const CLAIM: Mode = Mode::Idempotent {
    lease: Duration::ZERO,
    provider_key: false,
};

/// What the shop's handler needs.
#[derive(Clone)]
pub struct Shop {
    pub pool: PgPool,
    pub lane: Lane,
    /// `http://127.0.0.1:<port>` of the provider.
    pub provider: String,
    pub mode: Mode,
    pub in_flight: Arc<InFlight>,
}

/// The provider client's timeout.
pub const PROVIDER_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest key the shop accepts, in bytes.
pub const MAX_KEY: usize = 255;

/// The request body, in the field order the fingerprint is computed over.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct PaymentRequest {
    pub amount: i64,
    pub card: String,
}

/// The answer to a payment: the shop's row.
#[derive(Serialize)]
struct Payment {
    id: i64,
    amount: i64,
    provider_charge_id: String,
}

/// How a charge at the provider ended.
enum Charged {
    Id(String),
    Declined,
    InProgress,
    Fault(String),
}

/// The shop's router.
pub fn router(shop: Shop) -> axum::Router {
    axum::Router::new()
        .route("/payments", axum::routing::post(payments))
        .with_state(shop)
}

async fn payments(State(shop): State<Shop>, headers: HeaderMap, body: String) -> Response {
    let guard = shop.in_flight.enter();
    let work = tokio::spawn(async move {
        let answer = match shop.mode {
            Mode::Naive => naive(&shop, &headers, &body).await,
            Mode::CheckFirst => check_first(&shop, &headers, &body).await,
            Mode::Idempotent { lease, provider_key } => idempotent(&shop, &headers, &body, lease, provider_key).await,
        };
        drop(guard);
        answer
    });
    work.await
        .unwrap_or_else(|_| error(StatusCode::INTERNAL_SERVER_ERROR, "the payment crashed"))
}

fn customer(headers: &HeaderMap) -> String {
    header_text(headers, CUSTOMER_HEADER).unwrap_or_default()
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
}

/// The body, or why it is refused (answered with 400).
fn decode(body: &str) -> Result<PaymentRequest, String> {
    let request: PaymentRequest = serde_json::from_str(body).map_err(|e| e.to_string())?;
    if request.amount <= 0 || request.card.is_empty() {
        return Err("amount and card are required".into());
    }
    Ok(request)
}

async fn naive(shop: &Shop, headers: &HeaderMap, body: &str) -> Response {
    let request = match decode(body) {
        Ok(request) => request,
        Err(why) => return error(StatusCode::BAD_REQUEST, &why),
    };
    let id = match charge(shop, &request, "").await {
        Charged::Id(id) => id,
        Charged::Declined => return error(StatusCode::PAYMENT_REQUIRED, "card declined"),
        _ => return error(StatusCode::BAD_GATEWAY, "payment provider unavailable"),
    };
    match record(&shop.pool, &customer(headers), &request, &id).await {
        Ok(payment) => {
            shop.lane.note(format!("recorded payment {} for {id}", payment.id));
            fresh(StatusCode::CREATED, &payment)
        }
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "could not record payment"),
    }
}

async fn check_first(shop: &Shop, headers: &HeaderMap, body: &str) -> Response {
    let key = header_text(headers, "idempotency-key").unwrap_or_default();
    if key.is_empty() {
        return error(StatusCode::BAD_REQUEST, "Idempotency-Key header is required");
    }
    let request = match decode(body) {
        Ok(request) => request,
        Err(why) => return error(StatusCode::BAD_REQUEST, &why),
    };
    let customer = customer(headers);
    let stored: Result<Option<(i32, Vec<u8>)>, _> =
        sqlx::query_as("SELECT response_code, response_body FROM idempotency_keys WHERE customer_id = $1 AND key = $2")
            .bind(&customer)
            .bind(&key)
            .fetch_optional(&shop.pool)
            .await;
    match stored {
        Ok(Some((code, body))) => {
            shop.lane.note(format!("key {key} found: the stored answer"));
            return stored_answer(code, body, false);
        }
        Ok(None) => shop.lane.note(format!("key {key} not found: charging")),
        Err(_) => return error(StatusCode::INTERNAL_SERVER_ERROR, "could not read idempotency key"),
    }
    let Charged::Id(id) = charge(shop, &request, "").await else {
        return error(StatusCode::BAD_GATEWAY, "payment provider unavailable");
    };
    let payment = match record(&shop.pool, &customer, &request, &id).await {
        Ok(payment) => payment,
        Err(_) => return error(StatusCode::INTERNAL_SERVER_ERROR, "could not record payment"),
    };
    let saved = sqlx::query(
        "INSERT INTO idempotency_keys (customer_id, key, request_hash, status, response_code, response_body)
         VALUES ($1, $2, '', 'completed', 201, $3) ON CONFLICT DO NOTHING",
    )
    .bind(&customer)
    .bind(&key)
    .bind(body_of(&payment))
    .execute(&shop.pool)
    .await;
    match saved {
        Ok(done) => {
            let how = if done.rows_affected() == 0 {
                "another request saved it first"
            } else {
                "saved"
            };
            shop.lane
                .note(format!("recorded payment {} for {id}; key {key}: {how}", payment.id));
            fresh(StatusCode::CREATED, &payment)
        }
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "could not save idempotency key"),
    }
}

/// The key as the client sent it: trimmed, one pair of surrounding quotes removed (the IETF
/// draft's quoted form); `None` when empty or longer than [`MAX_KEY`] bytes.
pub fn normalize_key(raw: &str) -> Option<String> {
    let mut key = raw.trim();
    if key.len() >= 2 && key.starts_with('"') && key.ends_with('"') {
        key = &key[1..key.len() - 1];
    }
    (!key.is_empty() && key.len() <= MAX_KEY).then(|| key.to_owned())
}

/// The request's fingerprint: SHA-256 of `POST /payments`, a newline, and the body in canonical
/// form (fixed field order, no whitespace, unknown fields dropped). The customer is not in it.
pub fn fingerprint(request: &PaymentRequest) -> Vec<u8> {
    let canonical = serde_json::to_string(request).unwrap_or_default();
    Sha256::digest(format!("POST /payments\n{canonical}")).to_vec()
}

/// The key passed to the provider: the hex SHA-256 of `customer:key`.
pub fn provider_key(customer: &str, key: &str) -> String {
    Sha256::digest(format!("{customer}:{key}"))
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

async fn idempotent(shop: &Shop, headers: &HeaderMap, body: &str, lease: Duration, pass_key: bool) -> Response {
    let Some(key) = header_text(headers, "idempotency-key").and_then(|k| normalize_key(&k)) else {
        return error(
            StatusCode::BAD_REQUEST,
            "Idempotency-Key header is required (at most 255 characters)",
        );
    };
    let request = match decode(body) {
        Ok(request) => request,
        Err(why) => return error(StatusCode::BAD_REQUEST, &why),
    };
    let customer = customer(headers);
    let hash = fingerprint(&request);
    let claimed = match claim(&shop.pool, &customer, &key, &hash, lease).await {
        Ok(claimed) => claimed,
        Err(_) => return error(StatusCode::INTERNAL_SERVER_ERROR, "could not claim idempotency key"),
    };
    let Some(locked_at) = claimed else {
        return not_owner(shop, &customer, &key, &hash).await;
    };
    shop.lane.note(format!("claimed key {key}"));
    let charge_key = if pass_key {
        provider_key(&customer, &key)
    } else {
        String::new()
    };
    match charge(shop, &request, &charge_key).await {
        Charged::Id(id) => finish(shop, &customer, &key, &request, &id).await,
        Charged::Declined => {
            let body = serde_json::json!({"error": "card declined"}).to_string();
            match complete_with(&shop.pool, &customer, &key, 402, body.as_bytes()).await {
                Ok(true) => {
                    shop.lane.note(format!("stored the decline under key {key}"));
                    stored_answer(402, body.into_bytes(), false)
                }
                Ok(false) => replay(shop, &customer, &key).await,
                Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "could not save result"),
            }
        }
        Charged::InProgress => in_progress(),
        Charged::Fault(why) => {
            // Only this request's own claim: a takeover's stays.
            let _ = sqlx::query(
                "DELETE FROM idempotency_keys WHERE customer_id = $1 AND key = $2 AND status = 'started' AND locked_at = $3",
            )
            .bind(&customer)
            .bind(&key)
            .bind(locked_at)
            .execute(&shop.pool)
            .await;
            shop.lane.note(format!("provider fault ({why}): released key {key}"));
            error(StatusCode::BAD_GATEWAY, "payment provider unavailable")
        }
    }
}

/// The claim: one autocommitted statement; `Some(locked_at)` when this request owns the key.
async fn claim(
    pool: &PgPool,
    customer: &str,
    key: &str,
    hash: &[u8],
    lease: Duration,
) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
    if lease.is_zero() {
        sqlx::query_scalar(
            "INSERT INTO idempotency_keys (customer_id, key, request_hash) VALUES ($1, $2, $3)
             ON CONFLICT (customer_id, key) DO NOTHING RETURNING locked_at",
        )
        .bind(customer)
        .bind(key)
        .bind(hash)
        .fetch_optional(pool)
        .await
    } else {
        sqlx::query_scalar(
            "INSERT INTO idempotency_keys AS existing (customer_id, key, request_hash) VALUES ($1, $2, $3)
             ON CONFLICT (customer_id, key) DO UPDATE SET locked_at = now()
             WHERE existing.status = 'started' AND existing.request_hash = EXCLUDED.request_hash
               AND existing.locked_at < now() - make_interval(secs => $4)
             RETURNING locked_at",
        )
        .bind(customer)
        .bind(key)
        .bind(hash)
        .bind(lease.as_secs_f64())
        .fetch_optional(pool)
        .await
    }
}

/// Another request owns the key: 422 for another body, the stored answer once it is completed,
/// 409 while it is started.
async fn not_owner(shop: &Shop, customer: &str, key: &str, hash: &[u8]) -> Response {
    let row: Result<Option<(String, Vec<u8>)>, _> =
        sqlx::query_as("SELECT status, request_hash FROM idempotency_keys WHERE customer_id = $1 AND key = $2")
            .bind(customer)
            .bind(key)
            .fetch_optional(&shop.pool)
            .await;
    // Gone a moment ago (its owner released it): still in progress as far as this request knows.
    let (status, stored_hash) = match row {
        Ok(Some(row)) => row,
        Ok(None) => ("started".to_owned(), hash.to_vec()),
        Err(_) => return error(StatusCode::INTERNAL_SERVER_ERROR, "could not claim idempotency key"),
    };
    if stored_hash != hash {
        shop.lane.note(format!("key {key} was used with another request: 422"));
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Idempotency-Key was already used with a different request",
        );
    }
    if status == "completed" {
        return replay(shop, customer, key).await;
    }
    shop.lane.note(format!("key {key} is still in progress: 409"));
    in_progress()
}

/// Records the payment and completes the key in one transaction, unless a takeover completed it
/// first (then this request replays).
async fn finish(shop: &Shop, customer: &str, key: &str, request: &PaymentRequest, id: &str) -> Response {
    let done: Result<Option<Payment>, sqlx::Error> = async {
        let mut tx = shop.pool.begin().await?;
        let status: String =
            sqlx::query_scalar("SELECT status FROM idempotency_keys WHERE customer_id = $1 AND key = $2 FOR UPDATE")
                .bind(customer)
                .bind(key)
                .fetch_one(&mut *tx)
                .await?;
        if status != "started" {
            return Ok(None);
        }
        let payment = record(&mut *tx, customer, request, id).await?;
        sqlx::query(
            "UPDATE idempotency_keys SET status = 'completed', response_code = 201, response_body = $3
             WHERE customer_id = $1 AND key = $2",
        )
        .bind(customer)
        .bind(key)
        .bind(body_of(&payment))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(payment))
    }
    .await;
    match done {
        Ok(Some(payment)) => {
            shop.lane
                .note(format!("recorded payment {} for {id}; key {key} completed", payment.id));
            fresh(StatusCode::CREATED, &payment)
        }
        Ok(None) => replay(shop, customer, key).await,
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "could not record payment"),
    }
}

/// Stores a final answer on a started key; false if the key was not started any more.
async fn complete_with(pool: &PgPool, customer: &str, key: &str, code: i32, body: &[u8]) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE idempotency_keys SET status = 'completed', response_code = $3, response_body = $4
         WHERE customer_id = $1 AND key = $2 AND status = 'started'",
    )
    .bind(customer)
    .bind(key)
    .bind(code)
    .bind(body)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The stored answer, with `Idempotent-Replayed: true`.
async fn replay(shop: &Shop, customer: &str, key: &str) -> Response {
    let stored: Result<(Option<i32>, Option<Vec<u8>>), _> =
        sqlx::query_as("SELECT response_code, response_body FROM idempotency_keys WHERE customer_id = $1 AND key = $2")
            .bind(customer)
            .bind(key)
            .fetch_one(&shop.pool)
            .await;
    match stored {
        Ok((Some(code), Some(body))) => {
            shop.lane.note(format!("key {key} completed: replayed its {code}"));
            stored_answer(code, body, true)
        }
        _ => error(StatusCode::INTERNAL_SERVER_ERROR, "could not read stored result"),
    }
}

/// Charges at the provider (sending `key` only if it is not empty).
async fn charge(shop: &Shop, request: &PaymentRequest, key: &str) -> Charged {
    let client = match reqwest::Client::builder().timeout(PROVIDER_TIMEOUT).build() {
        Ok(client) => client,
        Err(e) => return Charged::Fault(e.to_string()),
    };
    let mut call = client
        .post(format!("{}/charges", shop.provider))
        .header(header::CONTENT_TYPE, "application/json")
        .body(serde_json::json!({"amount": request.amount, "card": request.card}).to_string());
    if !key.is_empty() {
        call = call.header("Idempotency-Key", key);
    }
    let response = match call.send().await {
        Ok(response) => response,
        Err(e) => {
            return Charged::Fault(if e.is_connect() {
                "connection refused".into()
            } else {
                e.to_string()
            });
        }
    };
    match response.status().as_u16() {
        201 => match response
            .text()
            .await
            .map(|t| serde_json::from_str::<serde_json::Value>(&t))
        {
            Ok(Ok(body)) => body["id"].as_str().map_or_else(
                || Charged::Fault("no charge id".into()),
                |id| Charged::Id(id.to_owned()),
            ),
            Ok(Err(e)) => Charged::Fault(e.to_string()),
            Err(e) => Charged::Fault(e.to_string()),
        },
        402 => Charged::Declined,
        409 => Charged::InProgress,
        status => Charged::Fault(format!("provider returned {status}")),
    }
}

/// Inserts the shop's row for a charge.
async fn record<'e, E>(db: E, customer: &str, request: &PaymentRequest, id: &str) -> Result<Payment, sqlx::Error>
where
    E: sqlx::Executor<'e, Database = sqlx::Postgres>,
{
    let (row_id, amount): (i64, i64) = sqlx::query_as(
        "INSERT INTO charges (customer_id, amount, provider_id) VALUES ($1, $2, $3) RETURNING id, amount",
    )
    .bind(customer)
    .bind(request.amount)
    .bind(id)
    .fetch_one(db)
    .await?;
    Ok(Payment {
        id: row_id,
        amount,
        provider_charge_id: id.to_owned(),
    })
}

/// A payment's JSON as it is stored: compact, no newline.
fn body_of(payment: &Payment) -> Vec<u8> {
    serde_json::to_vec(payment).unwrap_or_default()
}

/// A fresh answer: JSON in the fields' order and a newline, as Go's encoder writes it.
fn fresh(status: StatusCode, payment: &Payment) -> Response {
    let body = String::from_utf8_lossy(&body_of(payment)).into_owned();
    respond(status, format!("{body}\n"), &[])
}

/// `{"error":"…"}` and a newline.
fn error(status: StatusCode, message: &str) -> Response {
    respond(status, json_line(&serde_json::json!({"error": message})), &[])
}

/// 409 with `Retry-After: 1`.
fn in_progress() -> Response {
    respond(
        StatusCode::CONFLICT,
        json_line(&serde_json::json!({"error": "a request with this Idempotency-Key is still in progress"})),
        &[("retry-after", "1")],
    )
}

/// A stored answer: its code and body verbatim (no newline), replayed or not.
fn stored_answer(code: i32, body: Vec<u8>, replayed: bool) -> Response {
    let status = u16::try_from(code)
        .ok()
        .and_then(|c| StatusCode::from_u16(c).ok())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let extra: &[(&str, &str)] = if replayed {
        &[("idempotent-replayed", "true")]
    } else {
        &[]
    };
    respond(status, String::from_utf8_lossy(&body).into_owned(), extra)
}

fn respond(status: StatusCode, body: String, extra: &[(&str, &str)]) -> Response {
    let mut response = Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json");
    for (name, value) in extra {
        response = response.header(*name, *value);
    }
    response.body(Body::from(body)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_trimmed_and_unquoted_once() {
        assert_eq!(normalize_key(" order-7731 ").as_deref(), Some("order-7731"));
        assert_eq!(normalize_key("\"order-7731\"").as_deref(), Some("order-7731"));
        assert_eq!(normalize_key("\"\"x\"\"").as_deref(), Some("\"x\""));
        assert_eq!(normalize_key(""), None);
        assert_eq!(normalize_key("\"\""), None);
        assert_eq!(normalize_key(&"k".repeat(256)), None);
        assert!(normalize_key(&"k".repeat(255)).is_some());
    }

    #[test]
    fn the_fingerprint_and_provider_key_match_the_specs_vectors() {
        let request = PaymentRequest {
            amount: 2500,
            card: "tok_visa".into(),
        };
        let hex: String = fingerprint(&request).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "1ccc057bdea446830dc3c1150afe511cd89c51448e612b8bb3b8797d48a51b17");
        assert_eq!(
            provider_key("cus_1001", "order-8001"),
            "9115b225b4ef86fab14f1e43fc342407f9b1f20d5358ab1da88ef89ac96979ca"
        );
        let spaced: PaymentRequest =
            serde_json::from_str(r#"{"card": "tok_visa", "amount": 2500, "x": 1}"#).expect("json");
        assert_eq!(
            fingerprint(&spaced),
            fingerprint(&request),
            "whitespace, order and extra fields do not count"
        );
    }
}
