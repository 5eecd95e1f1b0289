//! The naive double charge: no key at all. The phone's first attempt gives up after 600 ms while
//! the provider is still charging (a second per charge); the shop finishes anyway and records
//! payment 1. The retry, at 0.9 s, is a new payment: the card is charged again, the shop records
//! payment 2, and the phone shows `attempt 2: 201 {"id":2,…}`. Two charges in each ledger for one
//! purchase, and nothing links them.

use super::phone::{KeyMode, Settings};
use super::shop::Mode;
use super::{lanes, one_purchase};
use crate::labs::ScenarioDef;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "idempotency/double-charge",
    title: "A retry charges the card twice",
    hook: "The phone gave up after 600 ms; the shop finished the charge anyway, then charged again",
    about: "The card provider takes a second to charge; the phone waits 600 ms, gives up, and retries. The shop has no way to know the retry is the same purchase, and the first request was never cancelled: it charged and recorded a payment after the phone stopped listening. The customer sees one success, with payment id 2.",
    variants: &[("naive", "no key", "The shop charges every request it gets")],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| lanes("checkout client: 600 ms, then 3 s; no key", "naive"),
    budget: Some(|_| super::BUDGET),
    play: |run, _| {
        Box::pin(one_purchase(
            run,
            Mode::Naive,
            Settings {
                key: KeyMode::None,
                ..Settings::default()
            },
            "Nothing told the shop that the retry was the same purchase, and the first request kept working after the phone hung up.",
            1,
        ))
    },
    summarize: None,
    predict: None,
};
