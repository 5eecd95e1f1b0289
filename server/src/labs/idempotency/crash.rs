//! The shop API dies after the charge, and the lease that recovers from it.
//!
//! The API runs as its own process with `-crash-after-charge`: the phone pays with key
//! `order-8001` (3 s, one attempt), the provider charges (1 s), and the process is killed before
//! it writes anything: `attempt 1: no answer: Post "…/payments": EOF`, and the key is left
//! `started`. Then, by variant:
//! - `no-lease`: restarted with no flags, two attempts get `409` each: nothing will ever finish
//!   the key (0 payments in the shop, 1 charge at the provider).
//! - `lease`: restarted with `-lease 10s`; once the lease has run out the retry takes the key
//!   over and charges again: `attempt 1: 201 {"id":1,…}`, 1 payment, 2 charges.
//! - `lease-provider-key`: both processes pass the provider `hex(sha256("cus_1001:order-8001"))`,
//!   so the takeover gets the first charge back at once: 1 payment, 1 charge, the same id.
//! - `short-lease` (no crash): a 500 ms lease is shorter than the 1 s charge, so the retry at
//!   0.9 s takes over a *live* owner: `attempt 2: 201 {"id":1,…} (replayed)`, 1 payment, 2
//!   charges.
//! - `short-lease-provider-key`: the takeover's charge meets the first one's lock at the
//!   provider: `409`, then `attempt 3: 201 {"id":1,…} (replayed)`; 1 payment, 1 charge.
//!
//! The tutorial waits 10 s for the lease to run out. racelab moves the dead owner's `locked_at`
//! 10 s into the past instead (a step on the psql lane): the takeover compares `locked_at` with
//! `now()`, so PostgreSQL sees exactly what it would after the wait.

use super::phone::{KeyMode, Settings, pay, told};
use super::shop::{CLAIM, Mode, Options};
use super::shop_api::ShopProcess;
use super::{InFlight, POOL, finish_with, lanes, ledger, one_purchase, provider, provider_of};
use crate::engine::{Budget, End, Level, Run, RunError};
use crate::labs::{PredictDef, ScenarioDef, actors_at};
use shared::event::ActorInfo;
use std::sync::Arc;
use std::time::Duration;

/// The tutorial's key for the crashed order.
pub const KEY: &str = "order-8001";
/// The lease the API is restarted with.
pub const LEASE: Duration = Duration::from_secs(10);
/// A lease shorter than the provider's one-second charge.
pub const SHORT_LEASE: Duration = Duration::from_millis(500);

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "idempotency/crash",
    title: "The API dies after the charge: a stuck key, and the lease that frees it",
    hook: "The card is charged, the process is gone, and the key says started forever",
    about: "The shop API runs as its own process and is killed right after the provider charged, before it records anything: the phone reads EOF and the key stays started. Without a lease every retry gets 409. A lease lets a retry take over a dead owner's key, and without a provider key the takeover charges the card again; with one, the provider hands back the first charge. A lease shorter than the work takes over owners that are still alive. The tutorial waits 10 s for the lease to run out; racelab moves the dead claim's locked_at 10 s back instead, which is the same to PostgreSQL.",
    variants: &[
        (
            "no-lease",
            "no lease",
            "Restarted without a lease: every retry gets 409, and nothing ever finishes the key",
        ),
        (
            "lease",
            "lease 10 s",
            "Restarted with a 10 s lease: the retry takes over and charges the card again",
        ),
        (
            "lease-provider-key",
            "lease + provider key",
            "The charge carries a key derived from the order: the takeover gets the first charge back",
        ),
        (
            "short-lease",
            "lease 500 ms",
            "No crash, a lease shorter than the charge: the retry takes over a live owner",
        ),
        (
            "short-lease-provider-key",
            "500 ms + provider key",
            "The same short lease, but the provider holds the charge's key: 409, then the stored answer",
        ),
    ],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors,
    budget: Some(|variant| match variant {
        // The API's own process with its pool, and the psql session.
        "no-lease" | "lease" | "lease-provider-key" => Budget::postgres(2 * POOL + 1).and_processes(1),
        _ => super::BUDGET,
    }),
    play: |run, variant| Box::pin(play(run, variant)),
    summarize: None,
    predict: Some(&PREDICT),
};

/// Predict, then run. The answers are how each variant ends (the module doc), told apart by the
/// card's charges, the shop's payments and the phone's last answer; `tests/idempotency.rs`
/// checks each against the run's ledgers and the phone's answers.
static PREDICT: PredictDef = PredictDef {
    question: "The phone tries again with the same key while the request that claimed it has died, or is still at the provider. How does the payment end?",
    choices: &[
        (
            "retries-409",
            "Every retry gets 409, and the shop never records the charge",
        ),
        (
            "charged-twice",
            "The phone gets its receipt, but the card is charged twice",
        ),
        (
            "charged-once",
            "The phone gets its receipt, and the card is charged once",
        ),
        ("recorded-twice", "The shop records two payments, one for each charge"),
    ],
    only_on: &[],
    answers: &[
        (
            "no-lease",
            "retries-409",
            "Without a lease a started key is never taken over, and the process that owned it is gone, so every retry is told the work is still in progress and the charge stays unrecorded.",
        ),
        (
            "lease",
            "charged-twice",
            "Once the dead owner's claim is older than the lease the retry takes the key over, and with no provider key nothing tells the provider that this charge repeats the first.",
        ),
        (
            "lease-provider-key",
            "charged-once",
            "The takeover sends the provider the same key derived from the customer and the order, so the provider hands back the charge it already made and the shop records that one.",
        ),
        (
            "short-lease",
            "charged-twice",
            "A 500 ms lease runs out while the first one-second charge is still going, so the retry takes over a live owner and charges again, then replays the answer the first one recorded.",
        ),
        (
            "short-lease-provider-key",
            "charged-once",
            "The takeover's charge carries the same provider key while the first charge is still in progress under it, so the provider answers 409 and the phone's next attempt gets the stored answer.",
        ),
    ],
};

fn actors(variant: &str) -> Vec<ActorInfo> {
    match variant {
        "short-lease" => lanes("checkout client: 600 ms, then 3 s", "lease 500 ms"),
        "short-lease-provider-key" => lanes("checkout client: 600 ms, then 3 s", "lease 500 ms, provider key"),
        _ => {
            let mut lanes = lanes(
                "checkout client: key order-8001, 3 s",
                "its own process: -crash-after-charge, then restarted",
            );
            lanes.extend(actors_at(&["psql"], "a terminal on the shop's database"));
            lanes
        }
    }
}

async fn play(run: &Run, variant: &str) -> Result<(), RunError> {
    match variant {
        "short-lease" => {
            one_purchase(
                run,
                Mode::Idempotent(Options::leased(SHORT_LEASE, false)),
                Settings::default(),
                "The lease (500 ms) was shorter than the charge (1 s), so the retry took over an owner that was still working: both charged the card, the first recorded it, and the takeover, finding the key completed, replayed the first one's answer.",
                1,
            )
            .await
        }
        "short-lease-provider-key" => {
            one_purchase(
                run,
                Mode::Idempotent(Options::leased(SHORT_LEASE, true)),
                Settings::default(),
                "The takeover passed the provider the same derived key while the first charge still held the provider's lock on it: 409, the key stayed started, and the next retry got the stored answer.",
                1,
            )
            .await
        }
        "no-lease" => crash_then(run, None).await,
        "lease" => crash_then(run, Some(false)).await,
        _ => crash_then(run, Some(true)).await,
    }
}

/// The crash, then the restart: with `lease` `None` without flags; with `Some(provider_key)`
/// with a 10 s lease (and the provider key, which the crashed process passed too).
async fn crash_then(run: &Run, lease: Option<bool>) -> Result<(), RunError> {
    let provider_key = lease == Some(true);
    let in_flight = Arc::new(InFlight::default());
    let provider = run
        .http_server(provider::router(
            provider_of(run, &in_flight, POOL, false, false).await?,
        ))
        .await?;
    let crashing = Mode::Idempotent(Options {
        provider_key,
        ..Options::CLAIM
    });
    let mut api = ShopProcess::start(run, crashing, true, &provider.url("")).await?;
    let psql = run.actor_in("psql", "shop", Level::Autocommit).await?;
    let before = ledger(run).await?;
    let phone = run.http_client("phone");
    let once = Settings {
        key: KeyMode::Once(KEY.into()),
        first_timeout: Duration::from_secs(3),
        attempts: 1,
        ..Settings::default()
    };
    pay(&phone, &api.url(), &once, "").await;
    let end = api.actor.wait_end(Duration::from_secs(10)).await?;
    if !matches!(end, End::Crashed { .. }) {
        return Err(RunError::Other(format!(
            "the API should have crashed after the charge; it {end:?}"
        )));
    }
    if !provider_key {
        psql.psql("SELECT key, status, locked_at FROM idempotency_keys").await?;
    }
    let retry = match lease {
        None => {
            api.restart(CLAIM, false).await?;
            Settings { attempts: 2, ..once }
        }
        Some(provider_key) => {
            api.restart(Mode::Idempotent(Options::leased(LEASE, provider_key)), false)
                .await?;
            psql.lane().note(format!(
                "instead of waiting {} s for the lease: the dead owner's locked_at moves {} s back (the takeover compares it with now())",
                LEASE.as_secs(),
                LEASE.as_secs()
            ));
            psql.query(
                "UPDATE idempotency_keys SET locked_at = locked_at - make_interval(secs => $1) WHERE key = $2",
                &[(LEASE.as_secs() as i64).into(), KEY.into()],
            )
            .await?;
            Settings {
                attempts: Settings::default().attempts,
                ..once
            }
        }
    };
    let attempts = pay(&phone, &api.url(), &retry, "").await;
    api.stop().await?;
    psql.close().await;
    in_flight.idle(Duration::from_secs(15)).await?;
    drop(provider);
    let how = match lease {
        None => {
            "The API died after the provider charged and before it recorded anything. Without a lease the started key belongs to a process that no longer exists, so every retry gets 409, and the charge is recorded nowhere in the shop."
        }
        Some(false) => {
            "The lease let the retry take over the dead owner's key, but nothing told the provider that the takeover was the same charge: the card was charged again, and the first charge exists only at the provider."
        }
        Some(true) => {
            "The takeover passed the provider the same key derived from the customer and the order, and the provider answered with the first charge's id at once: one charge, recorded once."
        }
    };
    finish_with(run, before, how, 1, vec![told(&attempts, 201)]).await
}
