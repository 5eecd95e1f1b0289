//! PostgreSQL 18.6, the tutorials' version, beside the machine's: one private server per test
//! binary, started from the project's tools folder (`scripts/postgres.sh install`, which the test
//! command runs), and engines that play on both.

use super::config;
use racelab::embedded::Embedded;
use racelab::engine::Engine;
use shared::Service;
use sqlx::{Connection, PgConnection};
use std::sync::{Arc, OnceLock};

/// Where `scripts/postgres.sh install` puts PostgreSQL 18's binaries.
pub fn bin_18() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools/postgres-18/bin")
}

/// The private PostgreSQL 18 of this test binary (its URL), started on first use. It runs on a
/// thread of its own that lives as long as the binary: a private server dies with the thread
/// that started it, and each test's runtime thread ends with its test.
pub fn postgres_18() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for PostgreSQL 18");
            runtime.block_on(async move {
                let mut config = config();
                config.private_postgres = vec![bin_18()];
                let started = Embedded::provide(&mut config, &[Service::Postgres]).await;
                let _embedded = match started {
                    Ok(embedded) => {
                        let _ = tx.send(config.servers.last().cloned());
                        embedded
                    }
                    Err(error) => {
                        eprintln!("PostgreSQL 18 did not start: {error}");
                        let _ = tx.send(None);
                        return;
                    }
                };
                std::future::pending::<()>().await;
            });
        });
        rx.recv()
            .ok()
            .flatten()
            .expect("PostgreSQL 18 from .tools/postgres-18 (scripts/postgres.sh install; scripts/test runs it)")
    })
    .clone()
}

/// An engine on the machine's PostgreSQL (runs play there unless asked) and on PostgreSQL 18.
pub async fn engine_with_18() -> Arc<Engine> {
    let mut config = config();
    config.servers = vec![postgres_18()];
    Arc::new(
        racelab::db::connect_engine(&config)
            .await
            .expect("racelab on PostgreSQL at DATABASE_URL and on PostgreSQL 18"),
    )
}

/// Plays `scenario`/`variant` on PostgreSQL 18 (an engine on both versions, asked for 18), checks
/// that its header says so, and returns it with a connection to 18 to look for what it left.
pub async fn played_on_18(scenario: &str, variant: &str) -> (super::Finished, PgConnection) {
    let engine = engine_with_18().await;
    let run = super::play_on(&engine, scenario, variant, 18).await;
    assert_played_on_18(&run);
    (run, inspector_18().await)
}

/// Asserts that `run`'s header names PostgreSQL 18.
pub fn assert_played_on_18(run: &super::Finished) {
    assert!(
        matches!(&run.events[0].kind, shared::EventKind::RunStarted { server, .. } if server.starts_with("PostgreSQL 18.")),
        "the run header names PostgreSQL 18: {:?}",
        run.events[0].kind
    );
}

/// A connection to racelab's database on PostgreSQL 18, for inspecting it from outside.
pub async fn inspector_18() -> PgConnection {
    PgConnection::connect(&postgres_18()).await.expect("PostgreSQL 18")
}
