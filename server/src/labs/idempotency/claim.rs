//! The atomic claim: the key is taken first, with one autocommitted `INSERT … ON CONFLICT DO
//! NOTHING RETURNING`. The first request owns it and is at the provider until about 1.0 s; the
//! retry at 0.9 s finds it started with the same fingerprint and gets `409` with `Retry-After:
//! 1`; the third attempt, at about 1.5 s, finds it completed and gets the stored answer:
//! `attempt 3: 201 {"id":1,…} (replayed)`. One charge in each ledger, and the key completed/201.

use super::phone::{KeyMode, Settings, pay};
use super::shop::Mode;
use super::{Servers, finish, ledger};
use crate::engine::{Run, RunError};
use crate::labs::{ScenarioDef, actors_at};
use std::time::Duration;

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
    actors: |_| {
        actors_at(&["phone"], "checkout client: key order-7731")
            .into_iter()
            .chain(actors_at(&["shop"], "atomic claim"))
            .chain(actors_at(&["provider"], "card network, 1 s per charge"))
            .collect()
    },
    budget: Some(|_| super::BUDGET),
    play: |run, _| Box::pin(play(run)),
    summarize: None,
};

async fn play(run: &Run) -> Result<(), RunError> {
    let mode = Mode::Idempotent {
        lease: Duration::ZERO,
        provider_key: false,
    };
    let servers = Servers::start(run, mode).await?;
    let before = ledger(run).await?;
    let phone = run.http_client("phone");
    let settings = Settings {
        key: KeyMode::Once(KEY.into()),
        ..Settings::default()
    };
    pay(&phone, &servers.shop.url(""), &settings, "").await;
    servers.settle().await?;
    finish(
        run,
        before,
        "The claim committed before the charge began, so the retry saw the key taken and waited for its answer instead of paying again.",
    )
    .await
}
