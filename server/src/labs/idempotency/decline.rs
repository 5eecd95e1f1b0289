//! A decline is a final answer: stored under the key and replayed. The provider takes a second
//! to decline `tok_declined`; the retry at 0.9 s gets 409, the third attempt the stored 402:
//! `attempt 3: 402 {"error":"card declined"} (replayed)`. Nothing is charged, nothing recorded,
//! and the key is completed/402.

use super::phone::{KeyMode, Settings};
use super::provider::DECLINED_CARD;
use super::shop::CLAIM;
use super::{lanes, one_purchase};
use crate::engine::{Run, RunError};
use crate::labs::ScenarioDef;

pub const KEY: &str = "order-7732";

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "idempotency/decline",
    title: "A decline is a final answer",
    hook: "The card is declined once, and every retry is told so, without asking the bank again",
    about: "The provider declines the card after a second. The shop stores the 402 under the key like any final answer, so the retry waiting on the key gets the same decline, marked as replayed, and nobody is charged.",
    variants: &[("decline", "tok_declined", "A declined card, retried")],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| lanes("checkout client: key order-7732, card tok_declined", "atomic claim"),
    budget: Some(|_| super::BUDGET),
    play: |run, _| Box::pin(play(run)),
    summarize: None,
    predict: None,
};

async fn play(run: &Run) -> Result<(), RunError> {
    let settings = Settings {
        card: DECLINED_CARD.into(),
        key: KeyMode::Once(KEY.into()),
        ..Settings::default()
    };
    let how = "The decline was stored as the key's answer, so the retry got it back instead of trying the card again.";
    one_purchase(run, CLAIM, settings, how, 0).await
}
