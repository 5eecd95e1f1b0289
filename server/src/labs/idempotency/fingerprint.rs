//! The fingerprint and the quoted key, three phone runs in one sandbox:
//! 1. `order-7731`: timed out, 409, `201 {"id":1,…} (replayed)`.
//! 2. The same key with another amount (9900): `attempt 1: 422 {"error":"Idempotency-Key was
//!    already used with a different request"}`, final at once.
//! 3. The key in the IETF draft's quoted form, `"order-7731"`: `attempt 1: 201 {"id":1,…}
//!    (replayed)`.
//!
//! One charge; without the fingerprint, the 99.00 payment would have been handed the 25.00 one's
//! receipt.

use super::phone::{KeyMode, Settings, pay};
use super::shop::CLAIM;
use super::{Servers, finish, lanes, ledger};
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
    variants: &[(
        "fingerprint",
        "fingerprint",
        "The same key: as before, with another amount, quoted",
    )],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| lanes("checkout client: key order-7731, three times", "atomic claim"),
    budget: Some(|_| super::BUDGET),
    play: |run, _| Box::pin(play(run)),
    summarize: None,
};

async fn play(run: &Run) -> Result<(), RunError> {
    let servers = Servers::start(run, CLAIM).await?;
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
    pay(&phone, &base, &quoted, "").await;
    servers.settle().await?;
    finish(
        run,
        before,
        "The stored fingerprint told a new payment reusing the key from a retry of the old one, and the quotes are not part of the key.",
        1,
    )
    .await
}
