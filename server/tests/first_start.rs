//! First start under concurrency: many racelab processes started at once against a server where
//! racelab's database does not exist yet (a script that runs several scenarios in parallel on a
//! fresh machine) all come up; one creates the database, the others find it.

mod common;

use racelab::db::connect_engine;
use sqlx::Connection;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_engines_starting_at_once_on_a_missing_database_all_come_up() {
    let _slot = common::db_slot().await;
    let name = format!("racelab_first_start_{}", racelab::sandbox::new_run_id());
    let base = common::config();
    let url = match base.database_url.rsplit_once('/') {
        Some((server, _)) => format!("{server}/{name}"),
        None => panic!("DATABASE_URL names a database"),
    };
    let starts = (0..20).map(|_| {
        let mut config = base.clone();
        config.database_url = url.clone();
        // Small caps: twenty engines share the server with the other tests.
        config.run_connections = Some(4);
        async move { connect_engine(&config).await.map(|_| ()).map_err(|e| e.to_string()) }
    });
    // All twenty at once, interleaved on this task: each one's CREATE DATABASE is in flight
    // together with the others'.
    let results = futures_util::future::join_all(starts).await;
    let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    let server = url.rsplit_once('/').map(|(server, _)| server).unwrap_or_default();
    drop_database(server, &name).await;
    assert!(failures.is_empty(), "{} of 20 failed: {failures:?}", failures.len());
}

/// Drops the test's database `name` on `server` (a URL without a database), its engines'
/// sessions with it: through the server's own `postgres` database, since on a fresh machine
/// `racelab` may not exist.
async fn drop_database(server: &str, name: &str) {
    let mut admin = sqlx::PgConnection::connect(&format!("{server}/postgres"))
        .await
        .expect("PostgreSQL answers");
    sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        .execute(&mut admin)
        .await
        .expect("drop the test database");
}

/// A racelab meeting its database migrated further by a newer racelab (a rolling deploy, two
/// versions' replicas sharing it) still starts, and migrates nothing twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_racelab_starts_on_a_database_a_newer_one_migrated() {
    let _slot = common::db_slot().await;
    let name = format!("racelab_newer_{}", racelab::sandbox::new_run_id());
    let mut config = common::config();
    let server = config
        .database_url
        .rsplit_once('/')
        .map(|(s, _)| s.to_owned())
        .expect("a database");
    config.database_url = format!("{server}/{name}");
    config.run_connections = Some(4);
    let first = connect_engine(&config).await.map(|_| ()).map_err(|e| e.to_string());
    let mut newer = sqlx::PgConnection::connect(&config.database_url)
        .await
        .expect("its database");
    // What a newer racelab's migration leaves in sqlx's table.
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (29991231000000, 'from a newer racelab', true, '\\x00', 0)",
    )
    .execute(&mut newer)
    .await
    .expect("a newer migration recorded");
    drop(newer);
    let again = connect_engine(&config).await.map(|_| ()).map_err(|e| e.to_string());
    drop_database(&server, &name).await;
    assert_eq!(first, Ok(()));
    assert_eq!(again, Ok(()), "an older racelab on a newer database");
}

/// A fresh PostgreSQL server of the test's own (racelab's private one, with room for everyone's
/// connections), where racelab's database does not exist yet; stopped and removed on drop.
struct FreshServer {
    postgres: Option<racelab::embedded::postgres::PrivatePostgres>,
    dir: std::path::PathBuf,
}

impl FreshServer {
    async fn start(name: &str) -> FreshServer {
        let dir = std::env::temp_dir().join(format!("racelab-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a test directory");
        let bin = racelab::embedded::postgres::find_binaries().expect("PostgreSQL's binaries are installed");
        let postgres = racelab::embedded::postgres::start(&bin, &dir)
            .await
            .expect("a fresh PostgreSQL starts");
        FreshServer {
            postgres: Some(postgres),
            dir,
        }
    }

    fn url(&self) -> String {
        self.postgres.as_ref().expect("running").url()
    }

    async fn stop(mut self) {
        if let Some(postgres) = self.postgres.take() {
            postgres.process.stop().await;
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_cli_runs_and_two_servers_started_at_once_on_a_fresh_server_all_work() {
    use std::process::Stdio;
    let fresh = FreshServer::start("first-start").await;
    let racelab = || {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_racelab"));
        command
            .env("DATABASE_URL", fresh.url())
            .env("RACELAB_RUN_CONNECTIONS", "8")
            // Where a server would put a private broker (none runs at the default address):
            // inside this test's directory, removed with it.
            .env("RACELAB_EMBEDDED_DIR", fresh.dir.join("embedded"))
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    };
    let servers: Vec<_> = (0..2)
        .map(|_| {
            let port = racelab::embedded::process::free_port().expect("a free port");
            let mut server = racelab();
            server
                .arg("serve")
                .env("PORT", port.to_string())
                .env("RACELAB_BIND", "127.0.0.1")
                .env("RACELAB_DIST", "no-such-dist")
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            (port, server.spawn().expect("racelab serve starts"))
        })
        .collect();
    let runs = (0..20).map(|_| {
        let mut run = racelab();
        run.args(["run", "isolation/write-skew", "--variant", "serializable"]);
        async move { run.output().await.expect("racelab run") }
    });
    let outputs = futures_util::future::join_all(runs).await;

    let mut failures = Vec::new();
    for output in &outputs {
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() || common::lines(&stdout) != common::lines(common::WRITE_SKEW_SERIALIZABLE) {
            failures.push(format!(
                "{}\n{stdout}{}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    for (port, mut server) in servers {
        if let Err(said) = common::until_ready(&mut server).await {
            failures.push(format!(
                "the server on port {port} never became ready:\n{}",
                said.join("\n")
            ));
        }
        // SIGTERM, as a service manager stops it: it stops what it started.
        if let Some(pid) = server.id() {
            // SAFETY: kill(2) of our own child.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        }
        match tokio::time::timeout(std::time::Duration::from_secs(30), server.wait()).await {
            Ok(Ok(status)) if status.success() => {}
            other => failures.push(format!("the server on port {port} did not stop cleanly: {other:?}")),
        }
    }
    fresh.stop().await;
    assert!(
        failures.is_empty(),
        "{} of 22 failed:\n{}",
        failures.len(),
        failures.join("\n---\n")
    );
}
