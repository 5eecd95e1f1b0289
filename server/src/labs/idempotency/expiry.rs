//! Key expiry: keys are kept a day (Stripe keeps them at least 24 hours). After the load test's
//! thirty completed keys, twelve are backdated by 25 hours (`UPDATE 12`, test only), and the
//! scheduled cleanup deletes every key older than 24 hours (`DELETE 12`): eighteen are left. The
//! charges are untouched. After the window, a retry with an old key is a new payment: choose a
//! window longer than any client's retries.

use super::load_test;
use crate::engine::{Budget, Level, Run, RunError};
use crate::labs::{ScenarioDef, actors_at};
use shared::{Check, Verdict};

/// How many keys are backdated past the window.
pub const BACKDATED: i64 = 12;

/// The test-only backdate, and the cleanup a scheduler runs.
pub const BACKDATE: &str = "UPDATE idempotency_keys SET created_at = now() - interval '25 hours'
 WHERE key IN (SELECT key FROM idempotency_keys ORDER BY key LIMIT 12)";
pub const CLEANUP: &str = "DELETE FROM idempotency_keys WHERE created_at < now() - interval '24 hours'";

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "idempotency/expiry",
    title: "Keys expire: the cleanup after the load test",
    hook: "Twelve keys a day old are deleted; eighteen stay, and no charge moves",
    about: "A key is kept as long as a retry could still arrive, and no longer. After the load test, twelve of its keys are made 25 hours old, and the cleanup a scheduler would run deletes every key older than 24 hours. The payments stay; only the keys go, so a retry with one of them now would be a new payment.",
    variants: &[(
        "24h",
        "24 hour window",
        "Backdate twelve keys, delete what is older than a day",
    )],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| {
        let mut lanes = (load_test::SCENARIO.actors)("final");
        lanes.extend(actors_at(&["cleanup"], "autocommit"));
        lanes
    },
    budget: Some(|_| Budget::postgres(load_test::PROVIDER_POOL + super::POOL + 1)),
    play: |run, _| Box::pin(play(run)),
    summarize: None,
    predict: None,
};

async fn play(run: &Run) -> Result<(), RunError> {
    let servers = load_test::play(run, false).await?;
    let cleanup = run.actor_in("cleanup", "shop", Level::Autocommit).await?;
    let backdated = cleanup.query(BACKDATE, &[]).await?;
    run.say_plain(backdated.tag.clone());
    let deleted = cleanup.query(CLEANUP, &[]).await?;
    run.say_plain(deleted.tag.clone());
    let left = cleanup
        .query("SELECT count(*) FROM idempotency_keys", &[])
        .await?
        .int()?;
    run.say_plain(format!("count {left}"));
    let charges = run.check("SELECT count(*) FROM charges", &[]).await?.int()?;
    drop(servers);
    let kept = load_test::PAYMENTS as i64 - BACKDATED;
    run.verdict(Verdict::judge(
        vec![
            Check::new(
                format!("the {BACKDATED} keys older than a day are deleted"),
                deleted.tag.clone(),
                deleted.affected == BACKDATED as u64,
            ),
            Check::new(format!("{kept} keys stay"), format!("{left} keys"), left == kept),
            Check::new(
                "no payment moves",
                format!("{charges} payments"),
                charges == load_test::PAYMENTS as i64,
            ),
        ],
        format!("{BACKDATED} expired keys deleted, {left} kept, payments untouched"),
        "The cleanup deletes keys by age only; the payments they guarded stay.",
    ));
    Ok(())
}
