//! First start under concurrency: many racelab processes started at once against a server where
//! racelab's database does not exist yet (a script that runs several scenarios in parallel on a
//! fresh machine) all come up; one creates the database, the others find it.

mod common;

use racelab::db::connect_engine;

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
    // Let the engines' pools close before the database is dropped.
    let mut admin = common::inspector().await;
    sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        .execute(&mut admin)
        .await
        .expect("drop the test database");
    assert!(failures.is_empty(), "{} of 20 failed: {failures:?}", failures.len());
}
