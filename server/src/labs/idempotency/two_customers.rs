//! Two customers, one key (the troubleshooting table's "one customer gets another customer's
//! receipt"). Both customers' apps number their orders from 1 and send `Idempotency-Key:
//! order-1`, each paying 25.00 with a test card, one after the other.
//! - `per-customer` (the tutorial's `(customer_id, key)` primary key): two claims, two charges,
//!   `attempt 1: 201 {"id":1,…}` for cus_1001 and `attempt 1: 201 {"id":2,…}` for cus_2002.
//! - `global-keys` (keys unique across customers): cus_2002's claim finds cus_1001's completed
//!   key with the same fingerprint (the customer is not in it) and replays it, `attempt 1: 201
//!   {"id":1,…} (replayed)`: cus_2002 is shown cus_1001's payment and is never charged.

use super::phone::{KeyMode, Settings, pay, told};
use super::shop::{Mistake, Mode, Options};
use super::{Servers, finish_with, ledger};
use crate::engine::{Run, RunError};
use crate::labs::{PredictDef, ScenarioDef, actors_at};
use shared::{Check, Value};
use std::time::Duration;

/// The key both apps send.
pub const KEY: &str = "order-1";
/// The two customers, in the order they pay.
pub const CUSTOMERS: [&str; 2] = ["cus_1001", "cus_2002"];

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "idempotency/two-customers",
    title: "Two customers send the same key",
    hook: "Both apps call their first order order-1: is the key theirs, or everyone's?",
    about: "Clients choose their keys, and two clients can choose the same one: here both apps number orders from 1. The tutorial's keys are unique per customer, so each customer's order-1 is their own. Make keys unique across all customers and the second customer's payment looks like a retry of the first's: same key, same amount and card, so the same fingerprint. It is answered with the first customer's receipt and never charged.",
    variants: &[
        (
            "per-customer",
            "keys per customer",
            "PRIMARY KEY (customer_id, key): each customer's order-1 is their own",
        ),
        (
            "global-keys",
            "keys global",
            "One key space for everyone: the second customer gets the first one's receipt",
        ),
    ],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |variant| {
        let mut lanes = actors_at(&["phone cus_1001", "phone cus_2002"], "checkout client: key order-1");
        let shop = if variant == "global-keys" {
            "atomic claim, keys unique across customers"
        } else {
            "atomic claim, keys per customer"
        };
        lanes.extend(super::lanes("", shop).into_iter().skip(1));
        lanes
    },
    budget: Some(|_| super::BUDGET),
    play: |run, variant| Box::pin(play(run, variant == "global-keys")),
    summarize: None,
    predict: Some(&PREDICT),
};

/// Predict, then run. The answers are what the key's scope does to the second customer (the
/// module doc); `tests/idempotency.rs` checks each against the phones' answers and the
/// provider's charges.
static PREDICT: PredictDef = PredictDef {
    question: "Two customers' apps each pay 25.00 with the key order-1, one after the other. What does the second customer get?",
    choices: &[
        ("own-payment", "Their own charge and their own receipt"),
        (
            "other-receipt",
            "The first customer's receipt, and no charge on their card",
        ),
        ("key-refused", "422: the shop says the key was used for another request"),
        (
            "charged-wrong-receipt",
            "A charge on their card, but the first customer's receipt",
        ),
    ],
    only_on: &[],
    answers: &[
        (
            "per-customer",
            "own-payment",
            "The customer is part of the key's primary key, so the second customer's order-1 is a fresh row nobody has claimed, and it is charged and recorded like any first payment.",
        ),
        (
            "global-keys",
            "other-receipt",
            "With one key space for everyone the second claim finds a completed order-1 whose fingerprint (amount and card, not the customer) matches, so the shop replays the stored answer and never calls the provider.",
        ),
    ],
};

async fn play(run: &Run, global: bool) -> Result<(), RunError> {
    let options = if global {
        Options::mistaken(Mistake::GlobalKeys)
    } else {
        Options::CLAIM
    };
    let servers = Servers::start(run, Mode::Idempotent(options)).await?;
    let before = ledger(run).await?;
    let mut checks = Vec::new();
    for customer in CUSTOMERS {
        let phone = run.http_client(&format!("phone {customer}"));
        let settings = Settings {
            key: KeyMode::Once(KEY.into()),
            customer: customer.into(),
            first_timeout: Duration::from_secs(3),
            ..Settings::default()
        };
        let attempts = pay(&phone, &servers.shop.url(""), &settings, "").await;
        servers.settle().await?;
        let mut told = told(&attempts, 201);
        told.rule = format!("{customer}'s phone is finally told 201 Created");
        checks.push(told);
        checks.push(own_receipt(run, customer, attempts.last()).await?);
    }
    let how = if global {
        "The key was unique across customers and the fingerprint leaves the customer out, so cus_2002's first order looked like a retry of cus_1001's: it was answered with cus_1001's receipt and never charged."
    } else {
        "Keys are unique per customer, so each customer's order-1 was a key of their own: two claims, two charges, two receipts."
    };
    finish_with(run, before, how, 2, checks).await
}

/// The check that the payment `customer` was shown is theirs in the shop's ledger.
async fn own_receipt(run: &Run, customer: &str, last: Option<&super::phone::Attempt>) -> Result<Check, RunError> {
    let shown = match last {
        Some(super::phone::Attempt::Answered { body, .. }) => serde_json::from_str::<serde_json::Value>(body)
            .ok()
            .and_then(|b| b["id"].as_i64()),
        _ => None,
    };
    let rule = format!("{customer} is shown a payment of their own");
    let Some(id) = shown else {
        return Ok(Check::new(rule, "no payment shown", false));
    };
    let owner = run
        .check("SELECT customer_id FROM charges WHERE id = $1", &[Value::Int(id)])
        .await?;
    let owner = owner
        .rows
        .first()
        .and_then(|r| r.first())
        .and_then(Value::as_text)
        .unwrap_or("nobody")
        .to_owned();
    let holds = owner == customer;
    Ok(Check::new(rule, format!("payment {id}, which is {owner}'s"), holds))
}
