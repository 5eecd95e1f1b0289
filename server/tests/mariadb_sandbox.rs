//! A run's sandbox on MariaDB, against the real server at `MARIADB_URL` (default
//! `mysql://root@127.0.0.1:3306`): every escape a reader's SQL could try, each a test that fails
//! if the escape works. What the sandbox promises is in `src/sandbox/mariadb.rs`.
#![allow(
    clippy::too_many_lines,
    reason = "a test reads top to bottom, as the escape it tries"
)]

use racelab::sandbox::mariadb::{Bounds, MariaSandbox, Overrun, PREFIX, sweep};
use sqlx::mysql::{MySqlConnection, MySqlDatabaseError};
use sqlx::{Connection, Executor, Row};
use std::time::{Duration, Instant};

fn url() -> String {
    std::env::var("MARIADB_URL").unwrap_or_else(|_| racelab::config::DEFAULT_MARIADB_URL.to_owned())
}

async fn open(bounds: Bounds) -> MariaSandbox {
    MariaSandbox::open(&url(), bounds)
        .await
        .expect("MariaDB at MARIADB_URL makes a sandbox")
}

/// MariaDB's error number, if the statement failed on the server.
fn number(error: &sqlx::Error) -> Option<u16> {
    error
        .as_database_error()
        .and_then(|e| e.try_downcast_ref::<MySqlDatabaseError>())
        .map(MySqlDatabaseError::number)
}

/// Runs `sql` and returns the error number it must fail with.
async fn refused(conn: &mut MySqlConnection, sql: &str) -> u16 {
    match conn.execute(sql).await {
        Ok(done) => panic!("{sql} was allowed ({} rows)", done.rows_affected()),
        Err(error) => number(&error).unwrap_or_else(|| panic!("{sql}: {error}")),
    }
}

/// The first column of each row `sql` returns, as text.
async fn texts(conn: &mut MySqlConnection, sql: &str) -> Vec<Option<String>> {
    conn.fetch_all(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .iter()
        .map(|row| {
            row.try_get::<Option<String>, _>(0)
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
        })
        .collect()
}

async fn admin() -> MySqlConnection {
    MySqlConnection::connect(&url()).await.expect("MariaDB's admin account")
}

/// Whether a database or user of this name is left on the server.
async fn left(name: &str) -> (bool, bool) {
    let mut admin = admin().await;
    let database: Option<String> =
        sqlx::query_scalar("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?")
            .bind(name)
            .fetch_optional(&mut admin)
            .await
            .expect("schemata");
    let user: Option<String> = sqlx::query_scalar("SELECT CONVERT(User USING utf8mb4) FROM mysql.user WHERE User = ?")
        .bind(name)
        .fetch_optional(&mut admin)
        .await
        .expect("users");
    (database.is_some(), user.is_some())
}

#[tokio::test]
async fn a_run_sees_its_own_database_and_threads_and_nothing_else() {
    let (alice, bob) = (open(Bounds::default()).await, open(Bounds::default()).await);
    let mut bobs = bob.connect().await.expect("bob's session");
    bobs.execute("CREATE TABLE secrets (id INT PRIMARY KEY, note TEXT)")
        .await
        .expect("bob's table");
    bobs.execute("INSERT INTO secrets VALUES (1, 'bob''s budget')")
        .await
        .expect("bob's row");
    let mut session = alice.connect().await.expect("alice's session");

    let databases = texts(&mut session, "SHOW DATABASES").await;
    assert_eq!(
        databases,
        [Some("information_schema".to_owned()), Some(alice.name().to_owned())]
    );
    let schemata = texts(&mut session, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA").await;
    assert!(!schemata.contains(&Some(bob.name().to_owned())), "{schemata:?}");
    let tables = texts(
        &mut session,
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_NAME = 'secrets'",
    )
    .await;
    assert!(
        tables.is_empty(),
        "bob's table is seen in information_schema: {tables:?}"
    );
    // 1142: SELECT denied on the table; 1044: access denied to the database.
    let read = refused(&mut session, &format!("SELECT * FROM `{}`.secrets", bob.name())).await;
    assert!([1142, 1044].contains(&read), "{read}");
    assert_eq!(refused(&mut session, &format!("USE `{}`", bob.name())).await, 1044);
    // The process list: alice's own threads, never bob's statements.
    let users = texts(&mut session, "SELECT DISTINCT USER FROM information_schema.PROCESSLIST").await;
    assert_eq!(users, [Some(alice.name().to_owned())]);
    let shown = session
        .fetch_all("SHOW FULL PROCESSLIST")
        .await
        .expect("the process list")
        .len();
    assert_eq!(shown, 1, "only alice's own thread");
    // Users and their passwords.
    assert_eq!(
        refused(&mut session, "SELECT User, Password FROM mysql.user").await,
        1142
    );
    let grants = texts(&mut session, &format!("SHOW GRANTS FOR '{}'@'%'", alice.name())).await;
    assert!(
        grants
            .iter()
            .flatten()
            .all(|g| !g.contains("bob") && !g.contains(bob.name())),
        "{grants:?}"
    );
    assert_eq!(
        refused(&mut session, &format!("SHOW GRANTS FOR '{}'@'%'", bob.name())).await,
        1044
    );
    drop((session, bobs));
    alice.close().await;
    bob.close().await;
}

#[tokio::test]
async fn files_are_out_of_reach() {
    let sandbox = open(Bounds::default()).await;
    let mut session = sandbox.connect().await.expect("a session");
    session
        .execute("CREATE TABLE passwd (line TEXT)")
        .await
        .expect("a table");
    // LOAD_FILE needs FILE: without it, NULL.
    assert_eq!(texts(&mut session, "SELECT LOAD_FILE('/etc/passwd')").await, [None]);
    // 1045 or 1227: access denied, FILE needed.
    for sql in [
        "SELECT 'x' INTO OUTFILE '/tmp/racelab-escape.txt'",
        "SELECT 'x' INTO DUMPFILE '/tmp/racelab-escape.bin'",
        "LOAD DATA INFILE '/etc/passwd' INTO TABLE passwd",
    ] {
        let code = refused(&mut session, sql).await;
        assert!([1045, 1227].contains(&code), "{sql}: {code}");
    }
    // The client never sends a local file: the request is refused before any file is read.
    let local = session
        .execute("LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE passwd")
        .await;
    assert!(local.is_err(), "LOAD DATA LOCAL read a file");
    assert!(!std::path::Path::new("/tmp/racelab-escape.txt").exists());
    drop(session);
    sandbox.close().await;
}

#[tokio::test]
async fn the_server_and_other_runs_are_out_of_reach() {
    let (alice, bob) = (open(Bounds::default()).await, open(Bounds::default()).await);
    let mut bobs = bob.connect().await.expect("bob's session");
    let bob_thread: u64 = sqlx::query_scalar("SELECT CONNECTION_ID()")
        .fetch_one(&mut bobs)
        .await
        .expect("bob's id");
    let mut session = alice.connect().await.expect("alice's session");
    // 1227: SUPER / CONNECTION ADMIN / CREATE USER needed.
    assert_eq!(refused(&mut session, "SET GLOBAL max_connections = 5").await, 1227);
    assert_eq!(
        refused(&mut session, "SET GLOBAL innodb_snapshot_isolation = ON").await,
        1227
    );
    assert_eq!(refused(&mut session, "CREATE USER 'mallory'@'%'").await, 1227);
    // 1095: not the owner of bob's thread.
    assert_eq!(refused(&mut session, &format!("KILL QUERY {bob_thread}")).await, 1095);
    assert_eq!(refused(&mut session, &format!("KILL {bob_thread}")).await, 1095);
    let bob_alive: i64 = sqlx::query_scalar("SELECT 1")
        .fetch_one(&mut bobs)
        .await
        .expect("bob's session lives");
    assert_eq!(bob_alive, 1);
    // Nothing that runs after the run, or as someone else: events, routines, grants.
    assert_eq!(
        refused(
            &mut session,
            "CREATE EVENT later ON SCHEDULE EVERY 1 SECOND DO SELECT 1"
        )
        .await,
        1044
    );
    assert_eq!(refused(&mut session, "CREATE PROCEDURE p() SELECT 1").await, 1044);
    session.execute("CREATE TABLE t (id INT)").await.expect("a table");
    let grant = refused(&mut session, &format!("GRANT SELECT ON t TO '{}'@'%'", bob.name())).await;
    assert!([1044, 1142].contains(&grant), "{grant}");
    // A session's own settings are its own: innodb_snapshot_isolation is the run's to choose.
    session
        .execute("SET SESSION innodb_snapshot_isolation = ON")
        .await
        .expect("the snapshot switch, per session");
    drop((session, bobs));
    alice.close().await;
    bob.close().await;
}

#[tokio::test]
async fn a_statement_cannot_outlive_its_bound_even_when_the_session_lifts_it() {
    let bounds = Bounds {
        statement_time: Duration::from_secs(1),
        ..Bounds::default()
    };
    let sandbox = open(bounds).await;
    let mut session = sandbox.connect().await.expect("a session");
    // MariaDB's own per-user bound first: the session's default.
    let default: f64 = sqlx::query_scalar("SELECT @@max_statement_time")
        .fetch_one(&mut session)
        .await
        .expect("its bound");
    assert!((default - 1.0).abs() < 1e-9, "{default}");
    // Lifted by the session: the watchdog cancels it all the same.
    session
        .execute("SET SESSION max_statement_time = 0")
        .await
        .expect("a session may lift its default");
    let started = Instant::now();
    let _ = session.execute("SELECT SLEEP(30)").await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "SLEEP(30) ran {:?}",
        started.elapsed()
    );
    assert!(
        sandbox.overruns().contains(&Overrun::Statement { seconds: 1 }),
        "{:?}",
        sandbox.overruns()
    );

    // A lock wait the session made long is a statement too.
    session
        .execute("CREATE TABLE budget (id INT PRIMARY KEY, spent INT) ENGINE=InnoDB")
        .await
        .expect("a table");
    session
        .execute("INSERT INTO budget VALUES (1, 0)")
        .await
        .expect("a row");
    let mut holder = sandbox.connect().await.expect("a second session");
    holder.execute("BEGIN").await.expect("begin");
    holder
        .execute("SELECT * FROM budget WHERE id = 1 FOR UPDATE")
        .await
        .expect("the row lock");
    session
        .execute("SET SESSION innodb_lock_wait_timeout = 1000, lock_wait_timeout = 1000")
        .await
        .expect("raised");
    let started = Instant::now();
    let waited = session.execute("UPDATE budget SET spent = 1 WHERE id = 1").await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the wait lasted {:?}",
        started.elapsed()
    );
    // 1317: the query was interrupted.
    assert_eq!(waited.as_ref().err().and_then(number), Some(1317), "{waited:?}");
    drop((session, holder));
    sandbox.close().await;
}

#[tokio::test]
async fn a_run_cannot_fill_the_memory_or_the_disk() {
    let bounds = Bounds {
        bytes: 4 * 1024 * 1024,
        statement_time: Duration::from_secs(20),
        ..Bounds::default()
    };
    for engine in ["MEMORY", "InnoDB"] {
        let sandbox = open(bounds).await;
        let mut session = sandbox.connect().await.expect("a session");
        session
            .execute("SET SESSION max_heap_table_size = 1073741824")
            .await
            .expect("a session may raise it");
        session
            .execute(
                format!("CREATE TABLE hoard (id INT AUTO_INCREMENT PRIMARY KEY, pad VARCHAR(1000)) ENGINE={engine}")
                    .as_str(),
            )
            .await
            .expect("a table");
        session
            .execute("INSERT INTO hoard (pad) VALUES (REPEAT('x', 1000))")
            .await
            .expect("a row");
        // Doubling: 2^16 rows of 1 KB is 64 MB, sixteen times the bound.
        let started = Instant::now();
        let mut ended = None;
        for _ in 0..16 {
            if let Err(error) = session.execute("INSERT INTO hoard (pad) SELECT pad FROM hoard").await {
                ended = Some(error);
                break;
            }
        }
        let ended = ended.unwrap_or_else(|| panic!("{engine}: 64 MB went in past a 4 MB bound"));
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{engine}: {:?}",
            started.elapsed()
        );
        assert!(
            sandbox
                .overruns()
                .iter()
                .any(|o| matches!(o, Overrun::Bytes { bound, held } if *bound == bounds.bytes && *held > *bound)),
            "{engine}: ended by {ended}, overruns {:?}",
            sandbox.overruns()
        );
        drop(session);
        sandbox.close().await;
    }
}

#[tokio::test]
async fn a_run_holds_at_most_its_connections() {
    let sandbox = open(Bounds {
        connections: 2,
        ..Bounds::default()
    })
    .await;
    let first = sandbox.connect().await.expect("one");
    let second = sandbox.connect().await.expect("two");
    // 1226: the user's max_user_connections.
    let third = sandbox.connect().await;
    assert_eq!(third.as_ref().err().and_then(number), Some(1226), "{:?}", third.err());
    drop((first, second));
    sandbox.close().await;
}

#[tokio::test]
async fn closing_removes_the_run_and_the_sweep_what_a_crash_left() {
    let sandbox = open(Bounds::default()).await;
    let name = sandbox.name().to_owned();
    let mut session = sandbox.connect().await.expect("a session");
    session.execute("CREATE TABLE t (id INT)").await.expect("a table");
    session.execute("BEGIN").await.expect("begin");
    session
        .execute("INSERT INTO t VALUES (1)")
        .await
        .expect("a row, held in an open transaction");
    assert_eq!(left(&name).await, (true, true));
    // Closed while its session is open, mid-transaction: the session is ended, then everything
    // removed.
    sandbox.close().await;
    assert_eq!(left(&name).await, (false, false), "{name} is left after close");
    assert!(
        session.execute("SELECT 1").await.is_err(),
        "the run's session outlived its sandbox"
    );

    // What a crash leaves: a database and a user made in 1970, and a run's of now.
    let crashed = format!("{PREFIX}00000001abcdef01");
    let mut admin = admin().await;
    admin
        .execute(format!("CREATE DATABASE `{crashed}`").as_str())
        .await
        .expect("a leftover database");
    admin
        .execute(format!("CREATE USER '{crashed}'@'%'").as_str())
        .await
        .expect("a leftover user");
    let live = open(Bounds::default()).await;
    let removed = sweep(&url(), Duration::from_secs(3600)).await.expect("the sweep");
    assert!(removed >= 1, "{removed}");
    assert_eq!(left(&crashed).await, (false, false), "the sweep left {crashed}");
    assert_eq!(
        left(live.name()).await,
        (true, true),
        "the sweep removed a live run's sandbox"
    );
    live.close().await;
}

#[tokio::test]
async fn a_server_that_does_not_answer_is_said_by_name() {
    // Port 9 (discard) has nothing listening here: refused at once.
    let down = "mysql://root@127.0.0.1:9";
    let started = Instant::now();
    let error = MariaSandbox::open(down, Bounds::default())
        .await
        .err()
        .expect("no sandbox on a server that is down");
    assert!(
        error
            .to_string()
            .starts_with(&format!("MariaDB at {down} cannot be reached: ")),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    let swept = sweep(down, Duration::from_secs(3600)).await;
    assert!(swept.is_err_and(|e| e.to_string().contains("cannot be reached")));
}
