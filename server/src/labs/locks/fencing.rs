//! Fencing tokens checked by PostgreSQL. A takes the lock with token 33 and reads balance 100,
//! then pauses for 250 ms (a GC pause, a stopped VM) while its 100 ms lease expires. B takes the
//! lock with token 34, reads 100 and writes 90. A wakes and writes 90 with token 33:
//! - `fence`: the UPDATE requires `fence < 33`; PostgreSQL already holds 34, so 0 rows: REJECTED.
//!   `final: balance=90 fence=34`.
//! - `no-fence`: the UPDATE goes through; the fence goes back to 33, and one of the two spends is
//!   lost. `final: balance=90 fence=33`.
//!
//! Either way A's release finds the key gone: `lock not held`.

use super::lock::{acquire_fenced, release};
use super::{AMOUNT, FENCE_KEY, FENCED_LOCK_KEY, INITIAL};
use crate::engine::{Budget, Command, Level, PgActor, RedisActor, Run, RunError, TableQuery};
use crate::labs::{PredictDef, ScenarioDef, actors_at};
use shared::{Check, Ledger, Moment, Table, Value, Verdict};
use std::time::Duration;

/// The lease: shorter than A's pause.
pub const TTL: Duration = Duration::from_millis(100);
pub const PAUSE: Duration = Duration::from_millis(250);
/// Where the fencing counter starts, so the tokens are the tutorial's 33 and 34.
pub const FIRST_FENCE: i64 = 32;

/// The fenced write: only a higher token than the last one that wrote.
pub const FENCED_WRITE: &str = "UPDATE wallets SET balance = $1, fence = $2 WHERE id = 42 AND fence < $2";
/// The same write without the check.
pub const UNFENCED_WRITE: &str = "UPDATE wallets SET balance = $1, fence = $2 WHERE id = 42";
const READ: &str = "SELECT balance, fence FROM wallets WHERE id = 42";

const LEDGER: [TableQuery; 1] = [TableQuery {
    name: "wallets",
    schema: "",
    sql: "SELECT id, balance, fence FROM wallets ORDER BY id",
    key_columns: 1,
}];

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "locks/fencing",
    title: "Fencing tokens: a paused lock holder wakes up too late",
    hook: "A's lease expired while it was paused; its stale write arrives after B's",
    about: "Every lease comes with a fencing token from INCR, issued in the same script that takes the lock, so tokens only grow. The UPDATE that writes the wallet requires a token higher than the last one that wrote: A wakes after B has written with 34, and its write with 33 changes nothing. Without that check, A's write lands and one of the two spends is lost. The lesson reaches past this demo: a Redis lock can fail open (a failover, a paused or partitioned holder, a clock jump), and no Redlock majority changes that; treat the lock as a performance tool and let the database refuse a write made from a stale read.",
    variants: &[
        (
            "fence",
            "fenced UPDATE",
            "WHERE fence < $token: PostgreSQL refuses the stale write",
        ),
        (
            "no-fence",
            "no fence",
            "The same UPDATE without the check: the stale write lands",
        ),
    ],
    steppable: true,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| actors_at(&["A", "B"], "Redis + PostgreSQL (autocommit)"),
    budget: Some(|_| Budget::postgres(2).and_redis(3)),
    play: |run, variant| Box::pin(play(run, variant == "fence")),
    summarize: None,
    predict: Some(&PREDICT),
};

/// Predict, then run. The answers are what each variant does with A's late write (the module
/// doc); `tests/locks.rs` checks each against the run's own events and the wallet it leaves.
static PREDICT: PredictDef = PredictDef {
    question: "A's lease runs out while A is paused; B takes the lock and writes 90. When A wakes up and writes, what happens?",
    choices: &[
        ("a-refused", "PostgreSQL refuses A's write; the wallet keeps B's 90"),
        (
            "a-overwrites",
            "A's write lands: B's spend is lost, the fence back to 33",
        ),
        ("b-waits", "B waits until A is done, so both spends count: 80"),
        ("a-stops", "A notices its lease is gone and skips its write"),
    ],
    only_on: &[],
    answers: &[
        (
            "fence",
            "a-refused",
            "B's write left token 34 in the row and A's UPDATE only matches a row whose fence is below A's 33, so it changes nothing and only B's spend counts.",
        ),
        (
            "no-fence",
            "a-overwrites",
            "Nothing told A its lease had expired and this UPDATE checks no token, so the 90 A worked out from the same 100 B read replaces B's 90 and stores A's older token.",
        ),
    ],
};

/// One side of the story: its Redis client and its PostgreSQL session, on one lane.
struct Holder {
    redis: RedisActor,
    pg: PgActor,
}

impl Holder {
    async fn open(run: &Run, name: &str) -> Result<Holder, RunError> {
        Ok(Holder {
            redis: run.redis(name).await?,
            pg: run.actor(name, Level::Autocommit).await?,
        })
    }

    fn say(&self, line: String) {
        self.redis.lane().say_exactly(line);
    }

    async fn read_balance(&self) -> Result<i64, RunError> {
        Ok(self.pg.query(READ, &[]).await?.int()?)
    }

    /// Writes `balance` with `fence`; how many rows it changed.
    async fn write(&self, fenced: bool, balance: i64, fence: i64) -> Result<u64, RunError> {
        let sql = if fenced { FENCED_WRITE } else { UNFENCED_WRITE };
        Ok(self.pg.query(sql, &[balance.into(), fence.into()]).await?.affected)
    }
}

async fn play(run: &Run, fenced: bool) -> Result<(), RunError> {
    let a = Holder::open(run, "A").await?;
    let b = Holder::open(run, "B").await?;
    // The program's reset, off the timeline: the wallet, the counter (so the next token is 33),
    // no lock.
    run.setup("UPDATE wallets SET balance = 100, fence = 0 WHERE id = 42")
        .await?;
    let setup = run.redis_worker("setup").await?;
    setup.run(&Command::new("SET").key(FENCE_KEY).arg(FIRST_FENCE)).await?;
    setup.run(&Command::new("DEL").key(FENCED_LOCK_KEY)).await?;
    let before = ledger(run).await?;

    let a_lock = acquire_fenced(&a.redis, FENCED_LOCK_KEY, FENCE_KEY, TTL, Duration::from_secs(5)).await?;
    let a_read = a.read_balance().await?;
    a.say(format!(
        "A: got the lock, fence {}, read balance {a_read}",
        a_lock.fence
    ));
    a.say(format!(
        "A: paused for {}ms (GC pause, slow network, stopped VM)",
        PAUSE.as_millis()
    ));
    tokio::time::sleep(PAUSE).await;

    let b_lock = acquire_fenced(&b.redis, FENCED_LOCK_KEY, FENCE_KEY, TTL, Duration::from_secs(5)).await?;
    let b_read = b.read_balance().await?;
    b.say(format!(
        "B: got the lock, fence {}, read balance {b_read}",
        b_lock.fence
    ));
    b.write(fenced, b_read - AMOUNT, b_lock.fence).await?;
    b.say(format!(
        "B: wrote balance {} with fence {}",
        b_read - AMOUNT,
        b_lock.fence
    ));
    // B's release is not checked, as in the program.
    let _ = release(&b.redis, &b_lock).await;

    a.say("A: wakes up and carries on".into());
    let a_wrote = a.write(fenced, a_read - AMOUNT, a_lock.fence).await? > 0;
    if a_wrote {
        a.say(format!(
            "A: wrote balance {} with fence {}",
            a_read - AMOUNT,
            a_lock.fence
        ));
    } else {
        a.say(format!("A: write with fence {} REJECTED", a_lock.fence));
    }
    let a_release = release(&a.redis, &a_lock).await;
    a.say(format!(
        "A: release: {}",
        a_release.err().map_or_else(|| "<nil>".to_owned(), |e| e.to_string())
    ));
    let last = run
        .check("SELECT balance, fence FROM wallets WHERE id = 42", &[])
        .await?;
    let (balance, fence) = (last.int_at(0)?, last.int_at(1)?);
    run.say_plain(format!(
        "final: balance={balance} fence={fence} (two spends of {AMOUNT} were attempted)"
    ));

    let after = ledger(run).await?;
    run.emit(shared::EventKind::Ledger {
        moment: Moment::Before,
        ledger: before,
    });
    run.emit(shared::EventKind::Ledger {
        moment: Moment::After,
        ledger: after,
    });
    run.emit(shared::EventKind::Ledger {
        moment: Moment::Expected,
        ledger: expected(),
    });
    let accepted = 1 + i64::from(a_wrote);
    run.verdict(verdict(balance, fence, accepted));
    Ok(())
}

/// The wallet row and the Redis keys.
async fn ledger(run: &Run) -> Result<Ledger, RunError> {
    let mut ledger = run.snapshot(&LEDGER).await?;
    ledger
        .tables
        .push(run.redis_keys("redis", &[FENCED_LOCK_KEY, FENCE_KEY]).await?);
    Ok(ledger)
}

/// A correct system: B's spend counts, A's stale one is refused; the counter issued 33 and 34;
/// no lock is left.
fn expected() -> Ledger {
    let b_fence = FIRST_FENCE + 2;
    Ledger {
        tables: vec![
            Table {
                name: "wallets".into(),
                columns: vec!["id".into(), "balance".into(), "fence".into()],
                key_columns: 1,
                rows: vec![vec![Value::Int(42), Value::Int(INITIAL - AMOUNT), Value::Int(b_fence)]],
            },
            Table {
                name: "redis".into(),
                columns: vec!["key".into(), "value".into(), "ttl_ms".into()],
                key_columns: 1,
                rows: vec![vec![
                    Value::from(FENCE_KEY),
                    Value::Text(b_fence.to_string()),
                    Value::Int(-1),
                ]],
            },
        ],
    }
}

/// Judged from the wallet: the balance must agree with the writes that went through, and the
/// stored fence must be the highest token issued.
fn verdict(balance: i64, fence: i64, accepted: i64) -> Verdict {
    let highest = FIRST_FENCE + 2;
    let implied = INITIAL - AMOUNT * accepted;
    let checks = vec![
        Check::new(
            format!("balance = {INITIAL} − {AMOUNT} × accepted writes = {implied}"),
            format!("balance = {balance} after {accepted} accepted write(s)"),
            balance == implied,
        ),
        Check::new(
            format!("the stored fence is the highest token issued ({highest})"),
            format!("fence = {fence}"),
            fence == highest,
        ),
    ];
    if accepted > 1 {
        Verdict::judge(
            checks,
            format!("Two spends accepted, one charged: the stale write took the fence back to {fence}"),
            "A held a valid lease when it read; nothing in A could know it had expired. Only the database, checking the token, can refuse the late write.",
        )
    } else {
        Verdict::judge(
            checks,
            format!("PostgreSQL refused A's stale write: balance {balance}, fence {fence}"),
            "The UPDATE requires a higher token than the last writer's, so a holder that woke up late changes nothing.",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::VerdictKind;

    #[test]
    fn the_stale_write_is_what_breaks_the_wallet() {
        assert_eq!(verdict(90, 34, 1).kind, VerdictKind::Prevented);
        assert_eq!(verdict(90, 33, 2).kind, VerdictKind::Reproduced);
        let expected = expected();
        assert_eq!(
            expected.tables[0].rows[0],
            vec![Value::Int(42), Value::Int(90), Value::Int(34)]
        );
    }
}
