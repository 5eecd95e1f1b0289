//! The provider is down: a fault releases the key. Two attempts (`-attempts 2`) each get `502
//! {"error":"payment provider unavailable"}` at once, and each releases its own claim, so the
//! key's query in psql prints no row (`(0 rows)`). The provider comes back (on the same port);
//! the same key then pays normally: `attempt 1: 201 {"id":1,…}`, a fresh charge, not a replay.
//!
//! `store-faults` (the troubleshooting table's "a retry keeps failing long after the provider
//! recovered"): the shop stores the 502 as the key's final answer. The query shows the key
//! `completed`, and once the provider is back every attempt is answered with the stored 502,
//! `(replayed)`: nothing is ever charged for a payment the customer still wants to make.

use super::phone::{KeyMode, Settings, pay, told};
use super::shop::{CLAIM, Mistake, Mode, Options};
use super::{POOL, Servers, finish_with, lanes, ledger, provider, provider_of};
use crate::engine::{Budget, Level, Run, RunError};
use crate::labs::{ScenarioDef, actors_at};
use std::time::Duration;

pub const KEY: &str = "order-7733";

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "idempotency/provider-down",
    title: "The provider is down: a fault releases the key",
    hook: "Two 502s leave no key behind, so the payment goes through once the provider is back",
    about: "A fault is not a final answer: the shop deletes its own claim (only if it is still its own) and answers 502, so the key is free again. When the provider is back, the same key pays normally. Releasing is safe only because the provider will deduplicate a charge that went through just before the connection broke; until then a 502 can hide a real charge. Store the fault as the final answer instead, and the key fails forever.",
    variants: &[
        (
            "provider-down",
            "release on faults",
            "Stop the provider, pay twice, start it, pay again",
        ),
        (
            "store-faults",
            "store faults",
            "The 502 is stored as the key's final answer: the retry fails after the provider is back",
        ),
    ],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |variant| {
        let shop = if variant == "store-faults" {
            "atomic claim, faults stored as final answers"
        } else {
            "atomic claim"
        };
        let mut lanes = lanes("checkout client: key order-7733", shop);
        lanes.extend(actors_at(&["psql"], "a terminal on the shop's database"));
        lanes
    },
    budget: Some(|_| Budget::postgres(2 * POOL + 1)),
    play: |run, variant| Box::pin(play(run, variant == "store-faults")),
    summarize: None,
    predict: None,
};

async fn play(run: &Run, store_faults: bool) -> Result<(), RunError> {
    let mode = if store_faults {
        Mode::Idempotent(Options::mistaken(Mistake::StoreFaults))
    } else {
        CLAIM
    };
    let servers = Servers::start(run, mode).await?;
    let psql = run.actor_in("psql", "shop", Level::Autocommit).await?;
    let before = ledger(run).await?;
    let provider_port = servers.provider.addr().port();
    let Servers {
        provider,
        shop,
        in_flight,
    } = servers;
    provider.stop().await;
    run.lane("provider", false).note("stopped");
    let phone = run.http_client("phone");
    let base = shop.url("");
    let down = Settings {
        key: KeyMode::Once(KEY.into()),
        attempts: 2,
        ..Settings::default()
    };
    pay(&phone, &base, &down, "").await;
    psql.psql(&format!("SELECT key, status FROM idempotency_keys WHERE key = '{KEY}'"))
        .await?;
    let provider = run
        .http_server_on(
            provider::router(provider_of(run, &in_flight, POOL, false, false).await?),
            provider_port,
        )
        .await?;
    run.name_server(provider.addr(), "provider");
    run.lane("provider", false).note("back on the same port");
    let back = Settings {
        first_timeout: Duration::from_secs(3),
        attempts: Settings::default().attempts,
        ..down
    };
    let attempts = pay(&phone, &base, &back, "").await;
    psql.close().await;
    let servers = Servers {
        provider,
        shop,
        in_flight,
    };
    servers.settle().await?;
    let how = if store_faults {
        "The fault was stored as the key's final answer, so after the provider came back every retry was handed the stored 502: the payment can never go through under this key, and only a new key, which risks a second charge, would help."
    } else {
        "Each fault released its own claim, so the key was free when the provider came back: one charge, recorded once."
    };
    finish_with(run, before, how, 1, vec![told(&attempts, 201)]).await
}
