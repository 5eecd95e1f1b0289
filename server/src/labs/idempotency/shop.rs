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
//! Each mistake of the tutorial's troubleshooting table can be made on purpose ([`Mistake`]), for
//! the variants that show what it costs. Input is validated before anything is claimed or
//! charged: a missing or over-long key, a body that is not a payment, a body over
//! [`MAX_BODY`], and a card token the provider does not know each get a 4xx and leave nothing
//! behind.
//!
//! Every mode finishes its work after the client hangs up: the work is a spawned task the
//! request waits for, not the request's own future (the tutorial's `context.WithoutCancel`).
//! Bodies and status codes are the tutorial's, byte for byte: fresh answers end with a newline,
//! stored ones do not.

use super::{CUSTOMER_HEADER, InFlight, json_line};
use crate::engine::{Crasher, Lane};
use axum::body::Body;
use axum::extract::rejection::StringRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use sqlx::types::chrono::{DateTime, Utc};
use std::sync::Arc;
use std::time::Duration;

/// How the shop treats a retried payment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    Naive,
    CheckFirst,
    /// The atomic claim, with its options.
    Idempotent(Options),
}

/// The idempotent mode's options: the tutorial's `-lease` and `-pass-key` flags, and a mistake
/// from its troubleshooting table made on purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Options {
    /// A started key older than this may be taken over; zero: never.
    pub lease: Duration,
    /// Pass `hex(sha256(customer:key))` to the provider, which charges once per key.
    pub provider_key: bool,
    pub mistake: Option<Mistake>,
}

/// A mistake the tutorial warns about, for the variants that show what it costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mistake {
    /// The claim shares the charge's transaction: a duplicate's INSERT waits on the first one's
    /// uncommitted key, holding a connection, instead of getting 409 at once.
    ClaimInsideTheCharge,
    /// Keys are unique across all customers: one customer's key can replay another's receipt.
    GlobalKeys,
    /// A provider fault is stored as the final answer, so the key fails forever.
    StoreFaults,
    /// The key is compared as sent: the quoted form `"order-7731"` is another key.
    RawKey,
    /// A failed owner deletes the key whoever holds it now, without the `locked_at` guard.
    UnguardedRelease,
}

impl Options {
    /// The atomic claim alone: no lease, no provider key, no mistake.
    pub const CLAIM: Options = Options {
        lease: Duration::ZERO,
        provider_key: false,
        mistake: None,
    };

    /// The claim with a lease, and the provider key or not.
    pub const fn leased(lease: Duration, provider_key: bool) -> Options {
        Options {
            lease,
            provider_key,
            mistake: None,
        }
    }

    /// The claim making `mistake`.
    pub const fn mistaken(mistake: Mistake) -> Options {
        Options {
            mistake: Some(mistake),
            ..Options::CLAIM
        }
    }

    fn makes(&self, mistake: Mistake) -> bool {
        self.mistake == Some(mistake)
    }
}

/// The atomic claim alone: no lease (a started key is never taken over), no provider key.
pub const CLAIM: Mode = Mode::Idempotent(Options::CLAIM);

/// What the shop's handler needs.
#[derive(Clone)]
pub struct Shop {
    pub pool: PgPool,
    pub lane: Lane,
    /// `http://127.0.0.1:<port>` of the provider.
    pub provider: String,
    pub mode: Mode,
    pub in_flight: Arc<InFlight>,
    /// The tutorial's `-crash-after-charge`: when the shop runs as its own process, it dies
    /// here, after the provider charged and before anything is recorded.
    pub crash_after_charge: Option<Crasher>,
}

/// The provider client's timeout.
pub const PROVIDER_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest key the shop accepts, in bytes.
pub const MAX_KEY: usize = 255;
/// The largest body the shop reads (Go's `MaxBytesReader`, which the tutorial names and leaves
/// out): a payment is a few dozen bytes.
pub const MAX_BODY: usize = 16 * 1024;

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
    /// The provider does not know this card token (400): the request is wrong, not the network.
    Refused(String),
    Fault(String),
}

/// The shop's router.
pub fn router(shop: Shop) -> axum::Router {
    axum::Router::new()
        .route("/payments", axum::routing::post(payments))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(shop)
}

async fn payments(State(shop): State<Shop>, headers: HeaderMap, body: Result<String, StringRejection>) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("request body is larger than {MAX_BODY} bytes"),
            );
        }
        Err(rejection) => return error(StatusCode::BAD_REQUEST, &rejection.body_text()),
    };
    let guard = shop.in_flight.enter();
    let work = tokio::spawn(async move {
        let answer = match shop.mode {
            Mode::Naive => naive(&shop, &headers, &body).await,
            Mode::CheckFirst => check_first(&shop, &headers, &body).await,
            Mode::Idempotent(options) => idempotent(&shop, &headers, &body, options).await,
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
        Charged::Refused(card) => return unknown_card(&card),
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
    // Any provider error is a 502 here, a decline too (the tutorial's check-first quirk); only an
    // unknown card, which the tutorial's provider never refuses, is the client's own error.
    let id = match charge(shop, &request, "").await {
        Charged::Id(id) => id,
        Charged::Refused(card) => return unknown_card(&card),
        _ => return error(StatusCode::BAD_GATEWAY, "payment provider unavailable"),
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

/// The key as a raw-key shop reads it: only empty and too-long keys are refused.
fn raw_key(raw: &str) -> Option<String> {
    (!raw.is_empty() && raw.len() <= MAX_KEY).then(|| raw.to_owned())
}

async fn idempotent(shop: &Shop, headers: &HeaderMap, body: &str, options: Options) -> Response {
    let read_key = if options.makes(Mistake::RawKey) {
        raw_key
    } else {
        normalize_key
    };
    let Some(key) = header_text(headers, "idempotency-key").and_then(|k| read_key(&k)) else {
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
    // Whose keys this one is unique among: the customer's, or (the mistake) everyone's.
    let scope = if options.makes(Mistake::GlobalKeys) {
        String::new()
    } else {
        customer.clone()
    };
    let key = KeyRow {
        scope,
        key,
        hash: fingerprint(&request),
    };
    if options.makes(Mistake::ClaimInsideTheCharge) {
        return claim_inside_the_charge(shop, &key, &customer, &request).await;
    }
    let claimed = match claim(&shop.pool, &key, options.lease).await {
        Ok(claimed) => claimed,
        Err(_) => return error(StatusCode::INTERNAL_SERVER_ERROR, "could not claim idempotency key"),
    };
    let Some(locked_at) = claimed else {
        return not_owner(shop, &key).await;
    };
    shop.lane.note(format!("claimed key {}", key.key));
    let charge_key = if options.provider_key {
        provider_key(&customer, &key.key)
    } else {
        String::new()
    };
    let charged = charge(shop, &request, &charge_key).await;
    if let (Charged::Id(_), Some(crash)) = (&charged, &shop.crash_after_charge) {
        crash.reach("after_charge").await;
    }
    match charged {
        Charged::Id(id) => finish(shop, &key, &customer, &request, &id).await,
        Charged::Declined => store_decline(shop, &key).await,
        Charged::InProgress => in_progress(),
        Charged::Refused(card) => {
            release(shop, &key, locked_at, options).await;
            unknown_card(&card)
        }
        Charged::Fault(why) if options.makes(Mistake::StoreFaults) => store_fault(shop, &key, &why).await,
        Charged::Fault(why) => {
            let released = release(shop, &key, locked_at, options).await;
            shop.lane.note(format!("provider fault ({why}): {released}"));
            error(StatusCode::BAD_GATEWAY, "payment provider unavailable")
        }
    }
}

/// A decline is a final answer: stored as the key's 402, so a retry gets the same decline
/// without another charge. A takeover that completed the key first wins, and this request
/// replays its answer.
async fn store_decline(shop: &Shop, key: &KeyRow) -> Response {
    let body = serde_json::json!({"error": "card declined"}).to_string();
    match complete_with(&shop.pool, key, 402, body.as_bytes()).await {
        Ok(true) => {
            shop.lane.note(format!("stored the decline under key {}", key.key));
            stored_answer(402, body.into_bytes(), false)
        }
        Ok(false) => replay(shop, key).await,
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "could not save result"),
    }
}

/// The store-faults mistake: a provider fault (`why`) stored as the key's final 502, so every
/// retry of this key fails too, though the provider might answer now.
async fn store_fault(shop: &Shop, key: &KeyRow, why: &str) -> Response {
    let body = serde_json::json!({"error": "payment provider unavailable"}).to_string();
    let _ = complete_with(&shop.pool, key, 502, body.as_bytes()).await;
    shop.lane.note(format!(
        "provider fault ({why}): stored the 502 as key {}'s final answer",
        key.key
    ));
    error(StatusCode::BAD_GATEWAY, "payment provider unavailable")
}

/// A key row as the shop addresses it: whose keys it is unique among (the customer, or nobody
/// for the global-keys mistake), the key, and the request's fingerprint.
struct KeyRow {
    scope: String,
    key: String,
    hash: Vec<u8>,
}

/// Deletes this request's claim after a fault, so a retry can run again; only while it is
/// still this request's claim (`locked_at` unchanged), unless the shop makes the unguarded-release
/// mistake. Says what happened, for the shop's lane.
async fn release(shop: &Shop, key: &KeyRow, locked_at: DateTime<Utc>, options: Options) -> String {
    let deleted = if options.makes(Mistake::UnguardedRelease) {
        sqlx::query("DELETE FROM idempotency_keys WHERE customer_id = $1 AND key = $2 AND status = 'started'")
            .bind(&key.scope)
            .bind(&key.key)
            .execute(&shop.pool)
            .await
    } else {
        sqlx::query(
            "DELETE FROM idempotency_keys WHERE customer_id = $1 AND key = $2 AND status = 'started' AND locked_at = $3",
        )
        .bind(&key.scope)
        .bind(&key.key)
        .bind(locked_at)
        .execute(&shop.pool)
        .await
    };
    match deleted.map(|done| done.rows_affected()) {
        Ok(0) => format!("key {} is not its claim any more: left alone", key.key),
        Ok(_) => format!("released key {}", key.key),
        Err(_) => format!("could not release key {}", key.key),
    }
}

/// The troubleshooting table's second row: the claim inside the charge's transaction. A
/// duplicate's claim waits for the first transaction's uncommitted key (holding a connection the
/// whole time) and then sees it completed, so it never answers 409.
async fn claim_inside_the_charge(shop: &Shop, key: &KeyRow, customer: &str, request: &PaymentRequest) -> Response {
    let outcome: Result<Option<Response>, sqlx::Error> = async {
        let mut tx = shop.pool.begin().await?;
        let started = std::time::Instant::now();
        let claimed: Option<DateTime<Utc>> = sqlx::query_scalar(
            "INSERT INTO idempotency_keys (customer_id, key, request_hash) VALUES ($1, $2, $3)
             ON CONFLICT (customer_id, key) DO NOTHING RETURNING locked_at",
        )
        .bind(&key.scope)
        .bind(&key.key)
        .bind(&key.hash)
        .fetch_optional(&mut *tx)
        .await?;
        let waited = started.elapsed();
        if waited >= Duration::from_millis(50) {
            shop.lane.note(format!(
                "the claim of key {} waited {} ms on another transaction's uncommitted key, holding a connection",
                key.key,
                waited.as_millis()
            ));
        }
        if claimed.is_none() {
            tx.rollback().await?;
            return Ok(None);
        }
        shop.lane
            .note(format!("claimed key {} inside the charge's transaction", key.key));
        let Charged::Id(id) = charge(shop, request, "").await else {
            // Rolling back removes the claim: whatever went wrong, nothing is stored.
            tx.rollback().await?;
            return Ok(Some(error(StatusCode::BAD_GATEWAY, "payment provider unavailable")));
        };
        let payment = record(&mut *tx, customer, request, &id).await?;
        complete(&mut *tx, key, &payment).await?;
        tx.commit().await?;
        shop.lane.note(format!(
            "recorded payment {} for {id}; key {} completed",
            payment.id, key.key
        ));
        Ok(Some(fresh(StatusCode::CREATED, &payment)))
    }
    .await;
    match outcome {
        Ok(Some(answer)) => answer,
        Ok(None) => not_owner(shop, key).await,
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "could not record payment"),
    }
}

/// The claim: one autocommitted statement; `Some(locked_at)` when this request owns the key.
async fn claim(pool: &PgPool, key: &KeyRow, lease: Duration) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
    if lease.is_zero() {
        sqlx::query_scalar(
            "INSERT INTO idempotency_keys (customer_id, key, request_hash) VALUES ($1, $2, $3)
             ON CONFLICT (customer_id, key) DO NOTHING RETURNING locked_at",
        )
        .bind(&key.scope)
        .bind(&key.key)
        .bind(&key.hash)
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
        .bind(&key.scope)
        .bind(&key.key)
        .bind(&key.hash)
        .bind(lease.as_secs_f64())
        .fetch_optional(pool)
        .await
    }
}

/// Another request owns the key: 422 for another body, the stored answer once it is completed,
/// 409 while it is started.
async fn not_owner(shop: &Shop, key: &KeyRow) -> Response {
    let row: Result<Option<(String, Vec<u8>)>, _> =
        sqlx::query_as("SELECT status, request_hash FROM idempotency_keys WHERE customer_id = $1 AND key = $2")
            .bind(&key.scope)
            .bind(&key.key)
            .fetch_optional(&shop.pool)
            .await;
    // Gone a moment ago (its owner released it): still in progress as far as this request knows.
    let (status, stored_hash) = match row {
        Ok(Some(row)) => row,
        Ok(None) => ("started".to_owned(), key.hash.clone()),
        Err(_) => return error(StatusCode::INTERNAL_SERVER_ERROR, "could not claim idempotency key"),
    };
    if stored_hash != key.hash {
        shop.lane
            .note(format!("key {} was used with another request: 422", key.key));
        return error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Idempotency-Key was already used with a different request",
        );
    }
    if status == "completed" {
        return replay(shop, key).await;
    }
    shop.lane.note(format!("key {} is still in progress: 409", key.key));
    in_progress()
}

/// Records the payment and completes the key in one transaction, unless a takeover completed it
/// first (then this request replays). The key's row is locked first, so of two owners finishing
/// at once the second waits, then sees the key completed.
async fn finish(shop: &Shop, key: &KeyRow, customer: &str, request: &PaymentRequest, id: &str) -> Response {
    let done: Result<Option<Payment>, sqlx::Error> = async {
        let mut tx = shop.pool.begin().await?;
        let status: String =
            sqlx::query_scalar("SELECT status FROM idempotency_keys WHERE customer_id = $1 AND key = $2 FOR UPDATE")
                .bind(&key.scope)
                .bind(&key.key)
                .fetch_one(&mut *tx)
                .await?;
        if status != "started" {
            return Ok(None);
        }
        let payment = record(&mut *tx, customer, request, id).await?;
        complete(&mut *tx, key, &payment).await?;
        tx.commit().await?;
        Ok(Some(payment))
    }
    .await;
    match done {
        Ok(Some(payment)) => {
            shop.lane.note(format!(
                "recorded payment {} for {id}; key {} completed",
                payment.id, key.key
            ));
            fresh(StatusCode::CREATED, &payment)
        }
        Ok(None) => replay(shop, key).await,
        Err(sqlx::Error::RowNotFound) => {
            shop.lane
                .note(format!("key {} is gone: charged {id}, but cannot record it", key.key));
            error(StatusCode::INTERNAL_SERVER_ERROR, "could not record payment")
        }
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "could not record payment"),
    }
}

/// Completes `key` with `payment` as its stored 201.
async fn complete<'e, E>(db: E, key: &KeyRow, payment: &Payment) -> Result<(), sqlx::Error>
where
    E: sqlx::Executor<'e, Database = sqlx::Postgres>,
{
    sqlx::query(
        "UPDATE idempotency_keys SET status = 'completed', response_code = 201, response_body = $3
         WHERE customer_id = $1 AND key = $2",
    )
    .bind(&key.scope)
    .bind(&key.key)
    .bind(body_of(payment))
    .execute(db)
    .await?;
    Ok(())
}

/// Stores a final answer on a started key; false if the key was not started any more.
async fn complete_with(pool: &PgPool, key: &KeyRow, code: i32, body: &[u8]) -> Result<bool, sqlx::Error> {
    let done = sqlx::query(
        "UPDATE idempotency_keys SET status = 'completed', response_code = $3, response_body = $4
         WHERE customer_id = $1 AND key = $2 AND status = 'started'",
    )
    .bind(&key.scope)
    .bind(&key.key)
    .bind(code)
    .bind(body)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The stored answer, with `Idempotent-Replayed: true`.
async fn replay(shop: &Shop, key: &KeyRow) -> Response {
    let stored: Result<(Option<i32>, Option<Vec<u8>>), _> =
        sqlx::query_as("SELECT response_code, response_body FROM idempotency_keys WHERE customer_id = $1 AND key = $2")
            .bind(&key.scope)
            .bind(&key.key)
            .fetch_one(&shop.pool)
            .await;
    match stored {
        Ok((Some(code), Some(body))) => {
            shop.lane
                .note(format!("key {} completed: replayed its {code}", key.key));
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
        400 => Charged::Refused(request.card.clone()),
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

/// 400 for a card token the provider does not know, in Stripe's words.
fn unknown_card(card: &str) -> Response {
    error(StatusCode::BAD_REQUEST, &format!("no such card token: '{card}'"))
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
