//! The atomic claim: the key is taken first, with one autocommitted `INSERT … ON CONFLICT DO
//! NOTHING RETURNING`. The first request owns it and is at the provider until about 1.0 s; the
//! retry at 0.9 s finds it started with the same fingerprint and gets `409` with `Retry-After:
//! 1`; the third attempt, at about 1.5 s, finds it completed and gets the stored answer:
//! `attempt 3: 201 {"id":1,…} (replayed)`. One charge in each ledger, and the key completed/201.
//!
//! `changed-body` (the troubleshooting table's 422 on a retry): the app sends 26.00 on its retry.
//! The retry's fingerprint differs, so it gets `attempt 2: 422 {"error":"Idempotency-Key was
//! already used with a different request"}` and stops, although the first attempt charged 25.00:
//! one charge, and a phone that says the payment failed.

use super::phone::{KeyMode, Settings};
use super::shop::CLAIM;
use super::{lanes, one_purchase};
use crate::labs::ScenarioDef;

/// The key the tutorial's client sends.
pub const KEY: &str = "order-7731";

/// T7's retry: the app recomputed the total (1.00 of tax) before it retried.
pub const RETRY_AMOUNT: i64 = 2600;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "idempotency/claim",
    title: "Claim the key first: the retry waits for the answer",
    hook: "One INSERT decides who owns the key; the retry gets 409, then the stored 201",
    about: "The shop claims the key before charging, in a statement of its own that commits at once: exactly one request owns it. The retry finds the key started and gets 409 with Retry-After: 1; the next attempt finds it completed and gets the stored answer, marked Idempotent-Replayed. The card is charged once. In the second variant the app changes the body between attempts, and the shop, rightly, refuses the retry.",
    variants: &[
        (
            "claim",
            "atomic claim",
            "INSERT … ON CONFLICT DO NOTHING RETURNING before charging",
        ),
        (
            "changed-body",
            "body changed on retry",
            "The app adds 1.00 of tax before retrying: the same key with another body gets 422",
        ),
    ],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |variant| {
        let phone = if variant == "changed-body" {
            "checkout client: key order-7731; 26.00 on retries"
        } else {
            "checkout client: key order-7731"
        };
        lanes(phone, "atomic claim")
    },
    budget: Some(|_| super::BUDGET),
    play: |run, variant| {
        let changed = variant == "changed-body";
        let settings = Settings {
            key: KeyMode::Once(KEY.into()),
            retry_amount: changed.then_some(RETRY_AMOUNT),
            ..Settings::default()
        };
        let how = if changed {
            "The retry carried the same key with another body, which the shop cannot tell from a new payment reusing a key: 422, final, while the first attempt's charge went through. The phone shows an error for a payment that was made; a body must stay fixed per key."
        } else {
            "The claim committed before the charge began, so the retry saw the key taken and waited for its answer instead of paying again."
        };
        Box::pin(one_purchase(run, CLAIM, settings, how, 1))
    },
    summarize: None,
    predict: None,
};
