//! Lost update: alice adds $1,200 and bob adds $800 to the same `spent`; a correct system ends
//! at $2,000.
//!
//! - `read-committed`: both read $0 and write their own sums; bob's $800 erases alice's $1,200.
//!   Ends at $800.
//! - `repeatable-read`: bob's UPDATE fails at once with 40001 ("could not serialize access due to
//!   concurrent update"). Ends at $1,200: nothing is lost silently, but bob must retry.
//! - `atomic`: both let the database add (`spent = spent + x`); bob waits for alice's row lock,
//!   then adds to her $1,200. Ends at $2,000.

use super::{ADD_TO_SPENT, BUDGET, READ_SPENT, TEAM, ledger_after, ledger_before, ledger_of, level_of, spent_of};
use crate::engine::{PgActor, Run, RunError};
use crate::labs::{PredictDef, ScenarioDef, actors_at};
use shared::{Check, Service, Verdict, usd};

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "isolation/lost-update",
    title: "Lost update",
    hook: "Alice adds $1,200 and Bob adds $800 to the same total; one of them vanishes",
    about: "Alice and Bob each read the team's running total, add their own expense in the application, and write the sum back. Watch what the second write does to the first, and how REPEATABLE READ or a single `spent = spent + x` changes the ending.",
    variants: &[
        (
            "read-committed",
            "READ COMMITTED",
            "Each reads, adds in the app, writes back: the second write erases the first",
        ),
        (
            "repeatable-read",
            "REPEATABLE READ",
            "Bob's write fails with 40001 instead of erasing Alice's",
        ),
        (
            "atomic",
            "spent = spent + x",
            "The database does the math; Bob waits for Alice's row lock, then adds",
        ),
        (
            "mariadb-read-committed",
            "MariaDB READ COMMITTED",
            "Each reads, adds in the app, writes back: the second write erases the first",
        ),
        (
            "mariadb-repeatable-read",
            "MariaDB REPEATABLE READ",
            "Before MariaDB 11.6.2: Bob's write erases Alice's, where PostgreSQL refuses it",
        ),
        (
            "mariadb-repeatable-read-snapshot",
            "MariaDB REPEATABLE READ, snapshot isolation on",
            "MariaDB 11.6.2's default: Bob's write is refused with 1020",
        ),
        (
            "mariadb-atomic",
            "MariaDB spent = spent + x",
            "The database does the math; Bob waits for Alice's row lock, then adds",
        ),
    ],
    steppable: true,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |variant| actors_at(&["alice", "bob"], &super::session_detail(variant)),
    budget: None,
    play: |run, variant| Box::pin(play(run, variant)),
    summarize: None,
    predict: Some(&PREDICT),
};

/// Predict, then run. The answers are what each variant does with the race (the module doc);
/// `tests/isolation.rs` checks each against the run's own events and ledger.
static PREDICT: PredictDef = PredictDef {
    question: "Alice adds $1,200 and Bob adds $800 to the same running total at the same moment. What happens?",
    choices: &[
        ("both-add", "Both additions land at once: $2,000"),
        ("bob-erases", "Bob's write erases Alice's: the total ends at $800"),
        ("bob-waits", "Bob waits for Alice's row lock, then adds: $2,000"),
        (
            "bob-40001",
            "Bob's write fails with 40001: the total stays at $1,200 until he retries",
        ),
        (
            "bob-1020",
            "Bob's write is refused with error 1020: the total stays at $1,200 until he retries",
        ),
    ],
    only_on: &[("bob-40001", Service::Postgres), ("bob-1020", Service::Mariadb)],
    answers: &[
        (
            "read-committed",
            "bob-erases",
            "Both read $0 before either wrote, and each writes back its own sum; nothing tells Bob that the $0 he added to is gone.",
        ),
        (
            "repeatable-read",
            "bob-40001",
            "Bob's snapshot predates Alice's committed update of the same row, so PostgreSQL refuses his write instead of letting it erase hers.",
        ),
        (
            "atomic",
            "bob-waits",
            "The database does the adding: Bob's UPDATE waits for Alice's row lock, then adds $800 to the $1,200 she committed.",
        ),
        (
            "mariadb-read-committed",
            "bob-erases",
            "Both read $0 before either wrote, and each writes back its own sum; nothing tells Bob that the $0 he added to is gone.",
        ),
        (
            "mariadb-repeatable-read",
            "bob-erases",
            "InnoDB writes the newest version of a row whatever the snapshot read: with the switch off, Bob's stale sum overwrites Alice's committed $1,200.",
        ),
        (
            "mariadb-repeatable-read-snapshot",
            "bob-1020",
            "With innodb_snapshot_isolation on, a write to a row changed since the snapshot read it is refused (1020), as PostgreSQL refuses it with 40001.",
        ),
        (
            "mariadb-atomic",
            "bob-waits",
            "Each UPDATE adds to the row as it is now; Bob's waits for the row lock Alice's holds until she commits, then adds to her $1,200.",
        ),
    ],
};

const ALICE_ADDS: i64 = 1_200;
const BOB_ADDS: i64 = 800;
const EXPECTED: i64 = ALICE_ADDS + BOB_ADDS;

const WRITE_SPENT: &str = "UPDATE teams SET spent = $2 WHERE id = $1";

async fn play(run: &Run, variant: &str) -> Result<(), RunError> {
    let (after, bob_committed) = match super::mariadb::setting_of(variant) {
        Some(setting) => super::mariadb::lost_update(run, variant, setting, (ALICE_ADDS, BOB_ADDS)).await?,
        None => on_postgres(run, variant).await?,
    };
    let spent = spent_of(&after, TEAM);
    run.say_plain(format!("final spent = {} (expected {})", usd(spent), usd(EXPECTED)));
    run.verdict(verdict(variant, spent, bob_committed));
    Ok(())
}

/// The race on PostgreSQL: the ledger after it, and whether bob's write committed.
async fn on_postgres(run: &Run, variant: &str) -> Result<(shared::Ledger, bool), RunError> {
    run.say_plain(format!("--- lost update, {variant} ---"));
    ledger_before(run).await?;
    let alice = run.actor("alice", level_of(variant)).await?;
    let bob = run.actor("bob", level_of(variant)).await?;
    let bob_committed = if variant == "atomic" {
        atomic(&alice, &bob).await?;
        true
    } else {
        read_modify_write(&alice, &bob).await?
    };
    let after = ledger_after(run, ledger_of(&[(TEAM, BUDGET, EXPECTED)], &[])).await?;
    Ok((after, bob_committed))
}

/// The rule: every committed addition is counted. A refused one (40001, 1020) is not lost: the
/// caller was told and can retry.
fn verdict(variant: &str, spent: i64, bob_committed: bool) -> Verdict {
    let committed = ALICE_ADDS + if bob_committed { BOB_ADDS } else { 0 };
    let check = Check::new(
        format!("spent = every committed addition = {}", usd(committed)),
        format!("spent = {}", usd(spent)),
        spent == committed,
    );
    let on_mariadb = super::mariadb::setting_of(variant).is_some();
    let (headline, reason) = if !bob_committed {
        (
            format!("Stopped with an error: spent is {}, Bob must retry", usd(spent)),
            if on_mariadb {
                "Bob's snapshot was stale when he wrote, so InnoDB's snapshot isolation refused his UPDATE (1020); nothing was erased, but his $800 is not in yet."
            } else {
                "Bob's snapshot was stale when he wrote, so PostgreSQL refused his UPDATE (40001); nothing was erased, but his $800 is not in yet."
            },
        )
    } else if spent < EXPECTED {
        (
            format!(
                "Lost {}: spent is {}, not {}",
                usd(EXPECTED - spent),
                usd(spent),
                usd(EXPECTED)
            ),
            "Both read $0 and wrote their own total; Bob's write erased Alice's.",
        )
    } else {
        (
            format!("Both counted: spent is {}", usd(spent)),
            "The database did the addition; Bob waited for Alice's row lock and added to her total.",
        )
    };
    Verdict::judge(vec![check], headline, reason)
}

/// Each actor reads `spent`, adds in the application, and writes the sum back. Returns whether
/// bob's write committed.
async fn read_modify_write(alice: &PgActor, bob: &PgActor) -> Result<bool, RunError> {
    let alice_read = alice.query(READ_SPENT, &[TEAM.into()]).await?.int()?;
    alice.say(format!("read spent = {}", usd(alice_read)));
    let bob_read = bob.query(READ_SPENT, &[TEAM.into()]).await?.int()?;
    bob.say(format!("read spent = {}", usd(bob_read)));

    alice
        .query(WRITE_SPENT, &[TEAM.into(), (alice_read + ALICE_ADDS).into()])
        .await?;
    alice.say(format!("set spent = {}", usd(alice_read + ALICE_ADDS)));
    alice.commit().await?;
    alice.say("commit");

    match bob
        .query(WRITE_SPENT, &[TEAM.into(), (bob_read + BOB_ADDS).into()])
        .await
    {
        Ok(_) => {
            bob.say(format!("set spent = {}", usd(bob_read + BOB_ADDS)));
            bob.commit().await?;
            bob.say("commit");
            Ok(true)
        }
        Err(error) => match error.retryable() {
            Some(db) => {
                bob.say(format!("UPDATE failed: {db}"));
                bob.rollback().await?;
                Ok(false)
            }
            None => Err(error.into()),
        },
    }
}

/// Each actor lets the database add; bob's UPDATE waits for alice's row lock.
async fn atomic(alice: &PgActor, bob: &PgActor) -> Result<(), RunError> {
    let spent = alice
        .query(ADD_TO_SPENT, &[TEAM.into(), ALICE_ADDS.into()])
        .await?
        .int()?;
    alice.say(format!(
        "add {} -> spent = {} (not committed yet)",
        usd(ALICE_ADDS),
        usd(spent)
    ));

    let (bob_waits, by) = bob
        .start(ADD_TO_SPENT, &[TEAM.into(), BOB_ADDS.into()])
        .await?
        .expect_blocked()
        .await?;
    bob.say(format!("waiting for {}'s row lock", by.join(", ")));

    alice.say("commit");
    alice.commit().await?;

    let spent = bob_waits.finish().await?.int()?;
    bob.say(format!("add {} -> spent = {}", usd(BOB_ADDS), usd(spent)));
    bob.commit().await?;
    bob.say("commit");
    Ok(())
}
