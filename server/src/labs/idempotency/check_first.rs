//! Check first, charge, then save the key: the race. The first request looks the key up (not
//! there) and is at the provider until about 1.0 s; the retry arrives at about 0.9 s, looks the key
//! up, and it is still not there. Both charge. The first saves the key with payment 1; the
//! second's save does nothing (`ON CONFLICT DO NOTHING`) and it still answers 201 with payment 2.
//! Two charges in each ledger again, and the stored answer is not the one the phone saw.

use super::phone::Settings;
use super::shop::Mode;
use super::{lanes, one_purchase};
use crate::labs::ScenarioDef;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "idempotency/check-first",
    title: "Check the key first: a check-then-act race",
    hook: "The retry looked for the key while the first request was still at the provider",
    about: "The shop looks the key up before charging and saves it after. The retry arrives while the first request is still waiting on the card network, so the key is not saved yet: both requests charge. Checking is not claiming; ownership has to come from the database, in one step.",
    variants: &[(
        "check-first",
        "look up, then save",
        "SELECT the key; charge; INSERT the key",
    )],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| lanes("checkout client: one key on every attempt", "check first"),
    budget: Some(|_| super::BUDGET),
    play: |run, _| {
        Box::pin(one_purchase(
            run,
            Mode::CheckFirst,
            Settings::default(),
            "Both requests looked for the key before either had saved it: a lookup is not a claim.",
            1,
        ))
    },
    summarize: None,
    predict: None,
};
