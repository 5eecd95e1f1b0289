//! The fingerprint and the quoted key, three phone runs in one sandbox:
//! 1. `order-7731`: timed out, 409, `201 {"id":1,…} (replayed)`.
//! 2. The same key with another amount (9900): `attempt 1: 422 {"error":"Idempotency-Key was
//!    already used with a different request"}`, final at once.
//! 3. The key in the IETF draft's quoted form, `"order-7731"`: `attempt 1: 201 {"id":1,…}
//!    (replayed)`.
//!
//! One charge; without the fingerprint, the 99.00 payment would have been handed the 25.00 one's
//! receipt.
//!
//! `raw-key` (the troubleshooting table's "header never matched"): the shop compares the key as
//! sent, so the quoted form is another key and the third run is a new payment: `attempt 1: 201
//! {"id":2,…}`, two charges.

use super::phone::{KeyMode, Settings, pay, told};
use super::shop::{CLAIM, Mistake, Mode, Options};
use super::{Servers, finish_with, lanes, ledger};
use crate::engine::{Run, RunError};
use crate::labs::ScenarioDef;
use std::time::Duration;

pub const KEY: &str = "order-7731";
/// The second payment's amount, with the first one's key.
pub const OTHER_AMOUNT: i64 = 9900;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "idempotency/fingerprint",
    title: "One key, another payment: 422; the quoted key: the same payment",
    hook: "A 99.00 payment with the 25.00 one's key is refused, not handed its receipt",
    about: "The shop stores a fingerprint of the request with the key: a hash of the method, the path and the body in canonical form. The same key with another amount gets 422 at once. The key sent quoted, as the IETF draft writes it, is the same key once one pair of quotes is removed, and gets the stored answer.",
    variants: &[
        (
            "fingerprint",
            "fingerprint",
            "The same key: as before, with another amount, quoted",
        ),
        (
            "raw-key",
            "key compared raw",
            "The shop keeps the quotes: the quoted key is another key, and another charge",
        ),
    ],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |variant| {
        let shop = if variant == "raw-key" {
            "atomic claim, keys compared as sent"
        } else {
            "atomic claim"
        };
        lanes("checkout client: key order-7731, three times", shop)
    },
    budget: Some(|_| super::BUDGET),
    play: |run, variant| Box::pin(play(run, variant == "raw-key")),
    summarize: None,
    predict: None,
};

async fn play(run: &Run, raw_key: bool) -> Result<(), RunError> {
    let mode = if raw_key {
        Mode::Idempotent(Options::mistaken(Mistake::RawKey))
    } else {
        CLAIM
    };
    let servers = Servers::start(run, mode).await?;
    let before = ledger(run).await?;
    let phone = run.http_client("phone");
    let base = servers.shop.url("");
    let first = Settings {
        key: KeyMode::Once(KEY.into()),
        ..Settings::default()
    };
    pay(&phone, &base, &first, "").await;
    let other = Settings {
        amount: OTHER_AMOUNT,
        first_timeout: Duration::from_secs(3),
        ..first.clone()
    };
    pay(&phone, &base, &other, "").await;
    let quoted = Settings {
        key: KeyMode::Once(format!("\"{KEY}\"")),
        first_timeout: Duration::from_secs(3),
        ..first
    };
    let attempts = pay(&phone, &base, &quoted, "").await;
    servers.settle().await?;
    let how = if raw_key {
        "The shop took the quotes as part of the key, so the quoted retry of order-7731 was a key it had never seen: a new claim and a second charge for one purchase."
    } else {
        "The stored fingerprint told a new payment reusing the key from a retry of the old one, and the quotes are not part of the key."
    };
    finish_with(run, before, how, 1, vec![told(&attempts, 201)]).await
}
