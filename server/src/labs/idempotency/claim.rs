//! The atomic claim: the key is taken first, with one autocommitted `INSERT … ON CONFLICT DO
//! NOTHING RETURNING`. The first request owns it and is at the provider until about 1.0 s; the
//! retry at 0.9 s finds it started with the same fingerprint and gets `409` with `Retry-After:
//! 1`; the third attempt, at about 1.5 s, finds it completed and gets the stored answer:
//! `attempt 3: 201 {"id":1,…} (replayed)`. One charge in each ledger, and the key completed/201.

use super::phone::{KeyMode, Settings};
use super::shop::CLAIM;
use super::{lanes, one_purchase};
use crate::labs::ScenarioDef;

/// The key the tutorial's client sends.
pub const KEY: &str = "order-7731";

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "idempotency/claim",
    title: "Claim the key first: the retry waits for the answer",
    hook: "One INSERT decides who owns the key; the retry gets 409, then the stored 201",
    about: "The shop claims the key before charging, in a statement of its own that commits at once: exactly one request owns it. The retry finds the key started and gets 409 with Retry-After: 1; the next attempt finds it completed and gets the stored answer, marked Idempotent-Replayed. The card is charged once.",
    variants: &[(
        "claim",
        "atomic claim",
        "INSERT … ON CONFLICT DO NOTHING RETURNING before charging",
    )],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| lanes("checkout client: key order-7731", "atomic claim"),
    budget: Some(|_| super::BUDGET),
    play: |run, _| {
        Box::pin(one_purchase(
            run,
            CLAIM,
            Settings {
                key: KeyMode::Once(KEY.into()),
                ..Settings::default()
            },
            "The claim committed before the charge began, so the retry saw the key taken and waited for its answer instead of paying again.",
            1,
        ))
    },
    summarize: None,
};
