//! The provider is down: a fault releases the key. Two attempts (`-attempts 2`) each get `502
//! {"error":"payment provider unavailable"}` at once, and each releases its own claim, so no key
//! is left (`(0 rows)`). The provider comes back (on the same port); the same key then pays
//! normally: `attempt 1: 201 {"id":1,…}`, a fresh charge, not a replay.

use super::phone::{KeyMode, Settings, pay};
use super::shop::CLAIM;
use super::{Servers, finish, lanes, ledger};
use crate::engine::{Run, RunError};
use crate::labs::ScenarioDef;
use std::time::Duration;

pub const KEY: &str = "order-7733";

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "idempotency/provider-down",
    title: "The provider is down: a fault releases the key",
    hook: "Two 502s leave no key behind, so the payment goes through once the provider is back",
    about: "A fault is not a final answer: the shop deletes its own claim (only if it is still its own) and answers 502, so the key is free again. When the provider is back, the same key pays normally. Releasing is safe only because the provider will deduplicate a charge that went through just before the connection broke; until then a 502 can hide a real charge.",
    variants: &[(
        "provider-down",
        "provider down",
        "Stop the provider, pay twice, start it, pay again",
    )],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| lanes("checkout client: key order-7733", "atomic claim"),
    budget: Some(|_| super::BUDGET),
    play: |run, _| Box::pin(play(run)),
    summarize: None,
};

async fn play(run: &Run) -> Result<(), RunError> {
    let servers = Servers::start(run, CLAIM).await?;
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
    let left = run
        .snapshot(&[crate::engine::TableQuery {
            name: "keys",
            schema: "shop",
            sql: "SELECT key, status FROM idempotency_keys",
            key_columns: 1,
        }])
        .await?;
    let rows = left.tables.first().map_or(0, |t| t.rows.len());
    run.say_plain(format!("keys left after the faults: {rows}"));
    let provider = run
        .http_server_on(
            super::provider::router(super::provider::Provider {
                pool: run.pool("provider", Some("provider"), super::POOL).await?,
                lane: run.lane("provider", false),
                lock_space: run.lock_space(),
                in_flight: in_flight.clone(),
            }),
            provider_port,
        )
        .await?;
    run.lane("provider", false).note("back on the same port");
    let back = Settings {
        first_timeout: Duration::from_secs(3),
        attempts: Settings::default().attempts,
        ..down
    };
    pay(&phone, &base, &back, "").await;
    let servers = Servers {
        provider,
        shop,
        in_flight,
    };
    servers.settle().await?;
    finish(
        run,
        before,
        "Each fault released its own claim, so the key was free when the provider came back: one charge, recorded once.",
        1,
    )
    .await
}
