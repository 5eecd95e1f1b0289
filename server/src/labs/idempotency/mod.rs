//! The idempotency-keys lab: a phone that retries a payment, a shop API, and a card provider that
//! takes a second for every charge, on real HTTP servers the run starts and real PostgreSQL
//! ledgers (the shop's and the provider's, each in its own schema).
//!
//! Scenarios (one file each), in the tutorial's order:
//! - [`double_charge`]: no key at all: the retry is a second charge.
//! - [`check_first`]: the key is looked up before charging, and saved after: both requests look
//!   before either saves.
//! - [`claim`]: the key is claimed first, atomically: the retry gets 409, then the stored answer.
//! - [`parallel_copies`]: twenty copies with one key: one charge, the rest 409 then replays.
//! - [`fingerprint`]: the key with another body gets 422; the quoted key is the same key.
//! - [`decline`]: a decline is stored and replayed like any final answer.
//! - [`provider_down`]: faults release the key, so the payment goes through once the provider is
//!   back (and, stored as final answers instead, fail the key forever).
//! - [`crash`]: the API dies after the charge (a real process, killed): a stuck key; a lease that
//!   takes it over and charges again; the provider key that makes the takeover safe; a lease
//!   shorter than the work.
//! - [`stale_release`]: a failed owner's release must not delete the takeover's claim.
//! - [`load_test`]: thirty payments, five copies each, at once: thirty charges, ledgers agree.
//! - [`expiry`]: the load test's keys, twelve of them a day old, and the cleanup that removes
//!   them.
//! - [`new_key`]: a client that makes a new key per attempt: every layer is idempotent, and the
//!   card is charged twice (the troubleshooting table's first row).
//! - [`two_customers`]: two customers send the same key; unique per customer, or everyone's.
//!
//! The troubleshooting table's other rows are variants where their story is told: the claim
//! inside the charge's transaction ([`parallel_copies`]), a body changed between attempts
//! ([`claim`]), a fault stored as final ([`provider_down`]), a key compared with its quotes
//! ([`fingerprint`]), a dead owner with no lease and a takeover without a provider key
//! ([`crash`]).
//!
//! The pieces: [`provider`] (the card network), [`shop`] (`POST /payments` in every mode),
//! [`shop_api`] (the shop as its own process, for the crashes), [`phone`] (the checkout client).
//! The helpers below start the two servers for a run, wait for their work to finish, and take
//! the ledger and the verdict.

pub mod check_first;
pub mod claim;
pub mod crash;
pub mod decline;
pub mod double_charge;
pub mod expiry;
pub mod fingerprint;
pub mod load_test;
pub mod new_key;
pub mod parallel_copies;
pub mod phone;
pub mod provider;
pub mod provider_down;
pub mod shop;
pub mod shop_api;
pub mod stale_release;
pub mod two_customers;

use super::{LabDef, actors_at};
use crate::engine::{Budget, HttpServer, Run, RunError, TableQuery};
use crate::sandbox::Spec;
use shared::event::ActorInfo;
use shared::{Check, EventKind, Ledger, Moment, Service, Table, Value, Verdict};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// The lab as the catalog lists it.
pub static LAB: LabDef = LabDef {
    id: "idempotency",
    title: "Idempotency keys: a retrying phone, a shop API and a slow card provider",
    services: &[Service::Postgres, Service::Http],
    scenarios: &[
        &double_charge::SCENARIO,
        &check_first::SCENARIO,
        &claim::SCENARIO,
        &parallel_copies::SCENARIO,
        &fingerprint::SCENARIO,
        &decline::SCENARIO,
        &provider_down::SCENARIO,
        &crash::SCENARIO,
        &stale_release::SCENARIO,
        &load_test::SCENARIO,
        &expiry::SCENARIO,
        &new_key::SCENARIO,
        &two_customers::SCENARIO,
    ],
};

/// The shop's and the provider's databases: two ledgers, two schemas.
pub const SANDBOX: Spec = Spec {
    schemas: &[
        ("shop", include_str!("shop.sql")),
        ("provider", include_str!("provider.sql")),
    ],
    redis: false,
    topics: &[],
};

/// Every run holds the two servers' pools.
pub const POOL: u32 = 4;
pub const BUDGET: Budget = Budget::postgres(2 * POOL);

/// The tutorial's customer, amount and card.
pub const CUSTOMER: &str = "cus_1001";
pub const CUSTOMER_HEADER: &str = "Customer-ID";
pub const AMOUNT: i64 = 2500;
pub const CARD: &str = "tok_visa";

/// Work a server has in flight: a request counts from its arrival until its spawned work ends,
/// so a scenario can wait for the servers to be done before it reads the ledgers.
#[derive(Default)]
pub struct InFlight {
    count: AtomicUsize,
    idle: Notify,
}

/// One piece of work in flight; leaving when dropped.
pub struct InFlightGuard(Arc<InFlight>);

impl InFlight {
    pub fn enter(self: &Arc<Self>) -> InFlightGuard {
        self.count.fetch_add(1, Ordering::SeqCst);
        InFlightGuard(self.clone())
    }

    /// Waits (at most `timeout`) until nothing is in flight.
    pub async fn idle(&self, timeout: Duration) -> Result<(), RunError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.idle.notified();
            if self.count.load(Ordering::SeqCst) == 0 {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Err(RunError::Other("the servers' work did not finish in time".into()));
            }
        }
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// A JSON value as Go's `json.NewEncoder(w).Encode` writes it: compact, then a newline.
pub fn json_line(value: &serde_json::Value) -> String {
    format!("{value}\n")
}

/// The two servers of a run: the provider, and the shop in `mode` in front of it.
pub struct Servers {
    pub provider: HttpServer,
    pub shop: HttpServer,
    pub in_flight: Arc<InFlight>,
}

impl Servers {
    /// Starts the provider and the shop on loopback ports, each with its own lane and pool.
    pub async fn start(run: &Run, mode: shop::Mode) -> Result<Servers, RunError> {
        Self::serve(run, mode, POOL, false, false).await
    }

    /// As [`Servers::start`], for a crowd of requests: a provider pool of `provider_pool` (one
    /// connection per charge in flight) and quiet lanes, since a note for each of a load test's
    /// 150 requests would bury the one copy the page shows.
    pub async fn start_for_crowd(run: &Run, mode: shop::Mode, provider_pool: u32) -> Result<Servers, RunError> {
        Self::serve(run, mode, provider_pool, true, false).await
    }

    /// As [`Servers::start`], with a provider whose first charge request fails (503 after the
    /// network's second, nothing charged).
    pub async fn start_failing_first(run: &Run, mode: shop::Mode) -> Result<Servers, RunError> {
        Self::serve(run, mode, POOL, false, true).await
    }

    async fn serve(
        run: &Run,
        mode: shop::Mode,
        provider_pool: u32,
        quiet: bool,
        fail_first: bool,
    ) -> Result<Servers, RunError> {
        let in_flight = Arc::new(InFlight::default());
        let provider = run
            .http_server(provider::router(
                provider_of(run, &in_flight, provider_pool, quiet, fail_first).await?,
            ))
            .await?;
        let shop = run
            .http_server(shop::router(shop::Shop {
                pool: run.pool("shop", Some("shop"), POOL).await?,
                lane: run.lane("shop", quiet),
                provider: provider.url(""),
                mode,
                in_flight: in_flight.clone(),
                crash_after_charge: None,
            }))
            .await?;
        run.name_server(provider.addr(), "provider");
        run.name_server(shop.addr(), "shop");
        Ok(Servers {
            provider,
            shop,
            in_flight,
        })
    }

    /// Waits until both servers have finished everything they started.
    pub async fn settle(&self) -> Result<(), RunError> {
        self.in_flight.idle(Duration::from_secs(15)).await
    }
}

/// The card provider's handler state, on its own pool of `pool` sessions in the provider's
/// database.
pub async fn provider_of(
    run: &Run,
    in_flight: &Arc<InFlight>,
    pool: u32,
    quiet: bool,
    fail_first: bool,
) -> Result<provider::Provider, RunError> {
    Ok(provider::Provider {
        pool: run.pool("provider", Some("provider"), pool).await?,
        lane: run.lane("provider", quiet),
        lock_space: run.lock_space(),
        in_flight: in_flight.clone(),
        fail_first: Arc::new(std::sync::atomic::AtomicBool::new(fail_first)),
    })
}

/// Both ledgers and the keys.
const LEDGER: [TableQuery; 3] = [
    TableQuery {
        name: "charges",
        schema: "shop",
        // In cents, as the tutorial's API takes them (the page's dollar totals are for dollars).
        sql: "SELECT id, amount AS amount_cents, provider_id FROM charges ORDER BY id",
        key_columns: 1,
    },
    TableQuery {
        name: "card_charges",
        schema: "provider",
        sql: "SELECT id, idempotency_key, amount AS amount_cents FROM card_charges ORDER BY created_at, id",
        key_columns: 1,
    },
    TableQuery {
        name: "idempotency_keys",
        schema: "shop",
        // The lease time and the stored answer, as the tutorial's psql queries show them.
        sql: "SELECT key, status, response_code, locked_at, convert_from(response_body, 'UTF8') AS response
              FROM idempotency_keys ORDER BY created_at, key",
        key_columns: 1,
    },
];

/// Every scenario's three lanes: the phone (`phone` says how it pays), the shop (in `shop`'s
/// mode), the provider.
pub fn lanes(phone: &str, shop: &str) -> Vec<ActorInfo> {
    let mut lanes = actors_at(&["phone"], phone);
    lanes.extend(actors_at(&["shop"], shop));
    lanes.extend(actors_at(&["provider"], "card network, 1 s per charge"));
    lanes
}

/// One purchase: the servers in `mode`, the phone paying once with `settings` (and retrying as it
/// does), the servers' work waited for, then the ledgers and the verdict against a correct
/// system's `charges` payments (`how` says why).
pub async fn one_purchase(
    run: &Run,
    mode: shop::Mode,
    settings: phone::Settings,
    how: &str,
    charges: i64,
) -> Result<(), RunError> {
    let servers = Servers::start(run, mode).await?;
    purchase(run, &servers, settings, how, charges).await
}

/// As [`one_purchase`], on servers already running. Besides the ledgers, the verdict checks what
/// the phone is finally told: what a correct shop would answer (201, or 402 for a declined card).
pub async fn purchase(
    run: &Run,
    servers: &Servers,
    settings: phone::Settings,
    how: &str,
    charges: i64,
) -> Result<(), RunError> {
    let before = ledger(run).await?;
    let phone = run.http_client("phone");
    let attempts = phone::pay(&phone, &servers.shop.url(""), &settings, "").await;
    servers.settle().await?;
    let told = phone::told(&attempts, settings.correct_answer());
    finish_with(run, before, how, charges, vec![told]).await
}

/// How many rows each ledger holds.
pub(super) fn counts(shop: i64, provider: i64) -> Table {
    Table {
        name: "charges per ledger".into(),
        columns: vec!["ledger".into(), "charges".into()],
        key_columns: 1,
        rows: vec![
            vec![Value::from("shop"), Value::Int(shop)],
            vec![Value::from("card provider"), Value::Int(provider)],
        ],
    }
}

/// The ledgers now, with their counts.
pub async fn ledger(run: &Run) -> Result<Ledger, RunError> {
    let mut ledger = run.snapshot(&LEDGER).await?;
    let rows = |name: &str| ledger.table(name).map_or(0, |t| t.rows.len() as i64);
    let (shop, provider) = (rows("charges"), rows("card_charges"));
    ledger.tables.push(counts(shop, provider));
    Ok(ledger)
}

/// Emits the ledgers before, after, and what a correct system holds (`charges` payments, each
/// charged once and in both ledgers: 1 for a purchase, 0 for a decline), then the verdict.
pub async fn finish(run: &Run, before: Ledger, how: &str, charges: i64) -> Result<(), RunError> {
    finish_with(run, before, how, charges, Vec::new()).await
}

/// As [`finish`], with the scenario's own `extra` checks beside the ledgers' (what the phone
/// was told, whose receipt a customer got).
pub async fn finish_with(
    run: &Run,
    before: Ledger,
    how: &str,
    charges: i64,
    extra: Vec<Check>,
) -> Result<(), RunError> {
    let after = ledger(run).await?;
    let ids = |name: &str, col: usize| -> Vec<String> {
        after
            .table(name)
            .map(|t| t.rows.iter().filter_map(|r| r.get(col).map(Value::to_string)).collect())
            .unwrap_or_default()
    };
    let (shop, provider) = (ids("charges", 2), ids("card_charges", 0));
    for (moment, ledger) in [
        (Moment::Before, before),
        (Moment::After, after.clone()),
        (
            Moment::Expected,
            Ledger {
                tables: vec![counts(charges, charges)],
            },
        ),
    ] {
        run.emit(EventKind::Ledger { moment, ledger });
    }
    let mut agree = shop.clone();
    agree.sort();
    let mut charged = provider.clone();
    charged.sort();
    let want = usize::try_from(charges).unwrap_or(0);
    let mut checks = vec![
        Check::new(
            format!("the provider charges {}", times(want)),
            format!("charged {}", times(provider.len())),
            provider.len() == want,
        ),
        Check::new(
            format!("the shop records {}", payments(want)),
            format!("{} recorded", payments(shop.len())),
            shop.len() == want,
        ),
        Check::new(
            "both ledgers hold the same charges",
            format!("shop [{}], provider [{}]", agree.join(", "), charged.join(", ")),
            agree == charged,
        ),
    ];
    let ledgers_right = checks.iter().all(|c| c.holds);
    let broken_extra = extra.iter().find(|c| !c.holds).cloned();
    checks.extend(extra);
    let agreed = match want {
        0 => "Nothing charged, nothing recorded".to_owned(),
        1 => "One payment, charged once".to_owned(),
        n => format!("{n} payments, each charged once"),
    };
    let headline = match (ledgers_right, broken_extra) {
        (true, None) => format!("{agreed}: the ledgers agree"),
        (true, Some(broken)) => format!("{agreed}, but not: {} (got {})", broken.rule, broken.actual),
        (false, _) => format!(
            "The provider charged {}, the shop recorded {}; a correct system: {} each",
            times(provider.len()),
            payments(shop.len()),
            times(want)
        ),
    };
    run.verdict(Verdict::judge(checks, headline, how));
    Ok(())
}

/// `once`, `twice`, `3 times`, `never`.
fn times(n: usize) -> String {
    match n {
        0 => "never".into(),
        1 => "once".into(),
        2 => "twice".into(),
        n => format!("{n} times"),
    }
}

/// `1 payment`, `2 payments`, `no payment`.
fn payments(n: usize) -> String {
    match n {
        0 => "no payment".into(),
        1 => "1 payment".into(),
        n => format!("{n} payments"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_as_words() {
        assert_eq!(
            [times(0), times(1), times(2), times(3)],
            ["never", "once", "twice", "3 times"]
        );
        assert_eq!([payments(0), payments(2)], ["no payment", "2 payments"]);
    }

    #[test]
    fn go_style_json_ends_with_a_newline() {
        assert_eq!(json_line(&serde_json::json!({"id": "ch_1"})), "{\"id\":\"ch_1\"}\n");
    }

    #[tokio::test]
    async fn work_in_flight_is_waited_for() {
        let in_flight = Arc::new(InFlight::default());
        let guard = in_flight.enter();
        let waiter = {
            let in_flight = in_flight.clone();
            tokio::spawn(async move { in_flight.idle(Duration::from_secs(5)).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        drop(guard);
        assert!(waiter.await.expect("join").is_ok());
    }
}
