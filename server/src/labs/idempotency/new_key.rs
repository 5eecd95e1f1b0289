//! A new key per attempt (the troubleshooting table's first mistake, T1): the phone makes up a
//! fresh key for its retry, so the shop sees two payments and passes two different keys to the
//! provider: two charges, each deduplicated perfectly, and the customer pays twice. One key per
//! operation, kept with the pending payment and sent on every attempt, is the fix.

use super::phone::{KeyMode, Settings};
use super::shop::{Mode, Options};
use super::{lanes, one_purchase};
use crate::labs::ScenarioDef;
use std::time::Duration;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "idempotency/new-key-per-attempt",
    title: "A new key on every attempt charges twice",
    hook: "Each retry made up its own key: the shop and the provider each saw two payments",
    about: "The client generated a fresh idempotency key for its retry. To the shop that is another payment, and the key it derives for the provider is another key too: both are charged, and every layer did exactly what it was told. Keep one key per operation, stored with the pending payment, and send it on every attempt; never switch to a new key until the first one's outcome is known.",
    variants: &[(
        "new-key",
        "key per attempt",
        "The final API, and a client that makes a key per attempt",
    )],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| lanes("checkout client: a new key per attempt", "lease 30 s, provider key"),
    budget: Some(|_| super::BUDGET),
    play: |run, _| {
        Box::pin(one_purchase(
            run,
            Mode::Idempotent(Options::leased(Duration::from_secs(30), true)),
            Settings {
                key: KeyMode::New,
                ..Settings::default()
            },
            "The retry carried another key, so nothing downstream could know it was the same purchase.",
            1,
        ))
    },
    summarize: None,
    predict: None,
};
