//! SQL sessions on MariaDB, against the real server at `MARIADB_URL`, each in a run's sandbox:
//! a step blocked is seen waiting for whom it waits for; errors come as MariaDB gives them; and
//! InnoDB's snapshot switch (`innodb_snapshot_isolation`, on by default since MariaDB 11.6.2)
//! turns REPEATABLE READ's lost update into an error.
#![allow(clippy::too_many_lines, reason = "a test reads top to bottom, as the race it plays")]

use racelab::engine::mariadb::{Level, MariaSession, SessionError, Setting, Wait, waits_for};
use racelab::sandbox::mariadb::{Bounds, MariaSandbox};
use shared::Value;
use std::time::{Duration, Instant};

async fn sandbox() -> MariaSandbox {
    let url = std::env::var("MARIADB_URL").unwrap_or_else(|_| racelab::config::DEFAULT_MARIADB_URL.to_owned());
    MariaSandbox::open(&url, Bounds::default())
        .await
        .expect("MariaDB at MARIADB_URL makes a sandbox")
}

async fn session(sandbox: &MariaSandbox, level: Level, snapshot_isolation: bool) -> MariaSession {
    let setting = Setting {
        level: Some(level),
        snapshot_isolation,
    };
    MariaSession::open(sandbox.session_options(), setting)
        .await
        .expect("a session")
}

/// An `accounts` table with alice's 100.
async fn accounts(sandbox: &MariaSandbox) {
    let mut setup = session(sandbox, Level::RepeatableRead, false).await;
    setup
        .run("CREATE TABLE accounts (name VARCHAR(20) PRIMARY KEY, balance INT) ENGINE=InnoDB")
        .await
        .expect("the table");
    setup
        .run("INSERT INTO accounts VALUES ('alice', 100), ('bob', 100)")
        .await
        .expect("the rows");
}

async fn balance(session: &mut MariaSession, name: &str) -> i64 {
    let out = session
        .run(&format!("SELECT balance FROM accounts WHERE name = '{name}'"))
        .await
        .expect("a balance");
    out.int().expect("an integer")
}

#[tokio::test]
async fn a_blocked_step_is_seen_waiting_for_the_session_that_holds_its_row() {
    let sandbox = sandbox().await;
    accounts(&sandbox).await;
    let mut alice = session(&sandbox, Level::ReadCommitted, false).await;
    let mut bob = session(&sandbox, Level::ReadCommitted, false).await;
    alice.run("BEGIN").await.expect("begin");
    let updated = alice
        .run("UPDATE accounts SET balance = balance - 30 WHERE name = 'alice'")
        .await
        .expect("alice's update");
    assert_eq!((updated.tag.as_str(), updated.affected), ("UPDATE 1", 1));
    assert_eq!(
        waits_for(sandbox.racelab(), bob.thread()).await.expect("the waits"),
        Wait::Nothing
    );
    let bob_thread = bob.thread();
    let blocked = tokio::spawn(async move {
        let out = bob
            .run("UPDATE accounts SET balance = balance - 50 WHERE name = 'alice'")
            .await;
        (bob, out)
    });
    let started = Instant::now();
    let seen = loop {
        let wait = waits_for(sandbox.racelab(), bob_thread).await.expect("the waits");
        if wait != Wait::Nothing || started.elapsed() > Duration::from_secs(3) {
            break wait;
        }
        // InnoDB refreshes its lock tables at most every 100 ms, and not while they are read
        // more often than that.
        tokio::time::sleep(Duration::from_millis(150)).await;
    };
    assert_eq!(
        seen,
        Wait::RowLock {
            holders: vec![alice.thread()]
        }
    );
    alice.run("COMMIT").await.expect("alice commits");
    let (mut bob, out) = blocked.await.expect("bob's task");
    assert_eq!(out.expect("bob's update, once alice committed").affected, 1);
    assert_eq!(
        balance(&mut bob, "alice").await,
        20,
        "both withdrawals landed: 100 − 30 − 50"
    );
    drop((alice, bob));
    sandbox.close().await;
}

#[tokio::test]
async fn a_deadlock_and_a_lock_wait_timeout_come_with_their_number_and_sqlstate() {
    let sandbox = sandbox().await;
    accounts(&sandbox).await;
    let mut alice = session(&sandbox, Level::RepeatableRead, false).await;
    let mut bob = session(&sandbox, Level::RepeatableRead, false).await;
    alice.run("BEGIN").await.expect("begin");
    bob.run("BEGIN").await.expect("begin");
    alice
        .run("UPDATE accounts SET balance = 0 WHERE name = 'alice'")
        .await
        .expect("alice's row");
    bob.run("UPDATE accounts SET balance = 0 WHERE name = 'bob'")
        .await
        .expect("bob's row");
    let alice_waits = tokio::spawn(async move {
        let out = alice.run("UPDATE accounts SET balance = 1 WHERE name = 'bob'").await;
        (alice, out)
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let bobs = bob.run("UPDATE accounts SET balance = 1 WHERE name = 'alice'").await;
    let (mut alice, alices) = alice_waits.await.expect("alice's task");
    // InnoDB breaks the cycle at once, choosing one of the two.
    let refused: Vec<SessionError> = [alices, bobs].into_iter().filter_map(Result::err).collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    let SessionError::Server {
        number,
        sqlstate,
        message,
    } = &refused[0]
    else {
        panic!("{refused:?}")
    };
    assert_eq!((*number, sqlstate.as_str()), (1213, "40001"), "{message}");
    assert!(
        message.starts_with("Deadlock found when trying to get lock"),
        "{message}"
    );
    alice.run("ROLLBACK").await.expect("rollback");
    bob.run("ROLLBACK").await.expect("rollback");

    // A lock wait past the session's innodb_lock_wait_timeout.
    alice.run("BEGIN").await.expect("begin");
    alice
        .run("UPDATE accounts SET balance = 0 WHERE name = 'alice'")
        .await
        .expect("alice's row");
    bob.run("SET SESSION innodb_lock_wait_timeout = 1")
        .await
        .expect("a short wait");
    let started = Instant::now();
    let timed_out = bob
        .run("UPDATE accounts SET balance = 1 WHERE name = 'alice'")
        .await
        .expect_err("a wait past 1 s");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(timed_out.number(), Some(1205), "{timed_out}");
    assert!(
        timed_out
            .to_string()
            .starts_with("ERROR 1205 (HY000): Lock wait timeout exceeded"),
        "{timed_out}"
    );
    drop((alice, bob));
    sandbox.close().await;
}

/// The lost update at REPEATABLE READ: alice and bob each read the balance, then each writes
/// what they read less what they withdraw. With the snapshot switch off (MariaDB before
/// 11.6.2), bob's write lands on alice's and her 30 is lost; on (11.6.2 and later), bob's write
/// is refused, `1020`, and a retry sees alice's.
#[tokio::test]
async fn the_snapshot_switch_turns_a_lost_update_into_an_error() {
    for switch in [false, true] {
        let sandbox = sandbox().await;
        accounts(&sandbox).await;
        let mut alice = session(&sandbox, Level::RepeatableRead, switch).await;
        let mut bob = session(&sandbox, Level::RepeatableRead, switch).await;
        alice.run("BEGIN").await.expect("begin");
        bob.run("BEGIN").await.expect("begin");
        let alice_saw = balance(&mut alice, "alice").await;
        let bob_saw = balance(&mut bob, "alice").await;
        assert_eq!((alice_saw, bob_saw), (100, 100));
        alice
            .run(&format!(
                "UPDATE accounts SET balance = {} WHERE name = 'alice'",
                alice_saw - 30
            ))
            .await
            .expect("alice's write");
        alice.run("COMMIT").await.expect("alice commits");
        let bobs = bob
            .run(&format!(
                "UPDATE accounts SET balance = {} WHERE name = 'alice'",
                bob_saw - 50
            ))
            .await;
        if switch {
            let refused = bobs.expect_err("with the switch on, bob's write is refused");
            assert_eq!(refused.number(), Some(1020), "{refused}");
            assert!(
                refused.to_string().contains("Record has changed since last read"),
                "{refused}"
            );
            bob.run("ROLLBACK").await.expect("rollback");
            bob.run("BEGIN").await.expect("the retry");
            let retry_saw = balance(&mut bob, "alice").await;
            bob.run(&format!(
                "UPDATE accounts SET balance = {} WHERE name = 'alice'",
                retry_saw - 50
            ))
            .await
            .expect("bob's retry");
            bob.run("COMMIT").await.expect("bob commits");
            assert_eq!(
                balance(&mut alice, "alice").await,
                20,
                "both withdrawals: 100 − 30 − 50"
            );
        } else {
            bobs.expect("with the switch off, bob's write lands");
            bob.run("COMMIT").await.expect("bob commits");
            assert_eq!(balance(&mut alice, "alice").await, 50, "alice's 30 is lost: 100 − 50");
        }
        let out = alice
            .run("SELECT name, balance FROM accounts ORDER BY name")
            .await
            .expect("the ledger");
        assert_eq!(out.columns, ["name", "balance"]);
        assert_eq!(out.rows[1], [Value::Text("bob".into()), Value::Int(100)]);
        drop((alice, bob));
        sandbox.close().await;
    }
}
