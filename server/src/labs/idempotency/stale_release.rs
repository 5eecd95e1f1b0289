//! A stale owner's release must not delete the takeover's claim (the tutorial describes it and
//! does not run it; racelab runs it with a provider told to fail its first request).
//!
//! Lease 500 ms, no provider key. The first request claims the key at T0 and goes to the
//! provider, which fails it after its second (503, nothing charged). Meanwhile the retry at
//! 0.9 s finds the claim older than the lease, takes it over (`locked_at` = T1) and charges. At
//! 1.0 s the first request releases its claim after the fault:
//! - `guarded`: `DELETE … AND locked_at = T0` matches nothing, so the takeover's claim stays and
//!   finishes: `attempt 2: 201 {"id":1,…}`. One charge, recorded once.
//! - `unguarded`: the DELETE without `locked_at` removes the takeover's claim; the takeover's
//!   finish finds no key and answers `500 {"error":"could not record payment"}` though the card
//!   was charged, and the phone's next attempt claims a free key and charges again:
//!   `attempt 3: 201 {"id":1,…}`. Two charges, one payment.
//!
//! The guard is the Redis tutorial's fencing token in a smaller form: a stale owner's write
//! must be recognisable as stale.

use super::phone::Settings;
use super::shop::{Mistake, Mode, Options};
use super::{Servers, lanes, purchase};
use crate::engine::{Run, RunError};
use crate::labs::{PredictDef, ScenarioDef};
use std::time::Duration;

/// The lease: shorter than the provider's one-second charge, so the retry at 0.9 s takes over.
pub const LEASE: Duration = Duration::from_millis(500);

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "idempotency/stale-release",
    title: "A stale owner's release must not delete the takeover's claim",
    hook: "The first request fails after its lease ran out; its clean-up must not free the key the retry holds",
    about: "With a 500 ms lease the retry takes over the key while the first request is still at the provider. Then the provider fails the first request, and it releases its claim. Released only where locked_at is still its own, nothing happens and the takeover finishes. Released without that check, the takeover's claim is deleted under it: it charged the card and cannot record the payment, and the next attempt charges again. The tutorial only describes this; racelab makes the provider fail its first request to run it.",
    variants: &[
        (
            "guarded",
            "guarded release",
            "DELETE … AND locked_at = <this claim's>: the stale owner's release matches nothing",
        ),
        (
            "unguarded",
            "unguarded release",
            "DELETE without the locked_at check: the stale owner deletes the takeover's claim",
        ),
    ],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |variant| {
        let shop = if variant == "unguarded" {
            "lease 500 ms, release without the locked_at check"
        } else {
            "lease 500 ms, release guarded by locked_at"
        };
        let mut lanes = lanes("checkout client: 600 ms, then 3 s", shop);
        if let Some(provider) = lanes.last_mut() {
            provider.detail = "card network, 1 s per charge; fails its first request".into();
        }
        lanes
    },
    budget: Some(|_| super::BUDGET),
    play: |run, variant| Box::pin(play(run, variant)),
    summarize: None,
    predict: Some(&PREDICT),
};

/// Predict, then run. The answers are what each release does to the takeover (the module doc);
/// `tests/idempotency.rs` checks each against the run's ledgers and the phone's answers.
static PREDICT: PredictDef = PredictDef {
    question: "The phone's retry has taken over the key when the provider fails the first request, which then releases its claim. What happens?",
    choices: &[
        ("one-charge", "The retry finishes: one charge, and the shop records it"),
        ("charged-twice", "The retry loses its key: the card is charged twice"),
        (
            "phone-told-failed",
            "The phone is told the payment failed, and the card is never charged",
        ),
        ("stuck-409", "The key is stuck: the phone gets 409 until it gives up"),
    ],
    only_on: &[],
    answers: &[
        (
            "guarded",
            "one-charge",
            "The first request deletes the key only where locked_at is still its own claim's, and the takeover has moved it, so the delete matches nothing and the retry records its charge.",
        ),
        (
            "unguarded",
            "charged-twice",
            "Deleting by the key alone removes the retry's live claim, so the retry charges the card, finds no key to record it under and answers 500, and the phone's next attempt claims the freed key and charges again.",
        ),
    ],
};

async fn play(run: &Run, variant: &str) -> Result<(), RunError> {
    let guarded = variant != "unguarded";
    let options = Options {
        mistake: (!guarded).then_some(Mistake::UnguardedRelease),
        ..Options::leased(LEASE, false)
    };
    let servers = Servers::start_failing_first(run, Mode::Idempotent(options)).await?;
    let how = if guarded {
        "The first request's release named its own claim by locked_at; the takeover had moved locked_at, so the release matched nothing and the takeover finished."
    } else {
        "The first request's release deleted whatever claim was started, which by then was the takeover's: the takeover charged the card and found no key to record it under, and the next attempt, finding the key free, charged again."
    };
    purchase(run, &servers, Settings::default(), how, 1).await
}
