//! The naive double charge: no key at all. The phone's first attempt gives up after 600 ms while
//! the provider is still charging (a second per charge); the shop finishes anyway and records
//! payment 1. The retry, at 0.9 s, is a new payment: the card is charged again, the shop records
//! payment 2, and the phone shows `attempt 2: 201 {"id":2,…}`. Two charges in each ledger for one
//! purchase, and nothing links them.

use super::phone::{KeyMode, Settings, pay};
use super::shop::Mode;
use super::{Servers, finish, ledger};
use crate::engine::{Run, RunError};
use crate::labs::{ScenarioDef, actors_at};

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "idempotency/double-charge",
    title: "A retry charges the card twice",
    hook: "The phone gave up after 600 ms; the shop finished the charge anyway, then charged again",
    about: "The card provider takes a second to charge; the phone waits 600 ms, gives up, and retries. The shop has no way to know the retry is the same purchase, and the first request was never cancelled: it charged and recorded a payment after the phone stopped listening. The customer sees one success, with payment id 2.",
    variants: &[("naive", "no key", "The shop charges every request it gets")],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| {
        actors_at(&["phone"], "checkout client: 600 ms, then 3 s")
            .into_iter()
            .chain(actors_at(&["shop"], "naive"))
            .chain(actors_at(&["provider"], "card network, 1 s per charge"))
            .collect()
    },
    budget: Some(|_| super::BUDGET),
    play: |run, _| Box::pin(play(run)),
    summarize: None,
};

async fn play(run: &Run) -> Result<(), RunError> {
    let servers = Servers::start(run, Mode::Naive).await?;
    let before = ledger(run).await?;
    let phone = run.http_client("phone");
    let settings = Settings {
        key: KeyMode::None,
        ..Settings::default()
    };
    pay(&phone, &servers.shop.url(""), &settings, "").await;
    servers.settle().await?;
    finish(
        run,
        before,
        "Nothing told the shop that the retry was the same purchase, and the first request kept working after the phone hung up.",
    )
    .await
}
