//! The anomaly atlas, played on this machine's PostgreSQL, against what PostgreSQL's
//! documentation says each level allows (chapter "Transaction Isolation": its table of
//! phenomena per level, and the sections on each level). The atlas judges its cells from its
//! runs alone; this test is the only place the documentation's answers are written down.

mod common;

use racelab::specs::{self, Limits};
use shared::atlas::{self, Cell};

fn database_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/racelab".to_owned())
}

/// The documentation's phenomena, which each entry is an instance of.
#[derive(Clone, Copy, Debug)]
enum Phenomenon {
    /// Overwriting another's uncommitted write: never, at any level (row locks).
    DirtyWrite,
    /// Reading what another has not committed (or never will): "not possible" at every level
    /// PostgreSQL implements.
    DirtyRead,
    /// Reading a row again, or acting on it, after another committed a change to it: possible at
    /// READ COMMITTED only ("a repeatable read transaction cannot modify or lock rows changed by
    /// other transactions after it began").
    NonrepeatableRead,
    /// A predicate's rows changing under a transaction: possible at READ COMMITTED; at
    /// REPEATABLE READ "allowed, but not in PostgreSQL".
    PhantomRead,
    /// A result no one-at-a-time order gives: possible below SERIALIZABLE.
    SerializationAnomaly,
}

fn documented(id: &str) -> Phenomenon {
    match id {
        "g0" => Phenomenon::DirtyWrite,
        "g1a" | "g1b" | "g1c" | "otv" => Phenomenon::DirtyRead,
        "p4" | "g-single" | "g-single-write" => Phenomenon::NonrepeatableRead,
        "pmp" | "pmp-write" => Phenomenon::PhantomRead,
        "g2-item" | "g2" | "read-only" => Phenomenon::SerializationAnomaly,
        other => panic!("the atlas has an entry this test does not know: {other}"),
    }
}

fn allows(phenomenon: Phenomenon, level: &str) -> bool {
    match phenomenon {
        Phenomenon::DirtyWrite | Phenomenon::DirtyRead => false,
        Phenomenon::NonrepeatableRead | Phenomenon::PhantomRead => level == "READ COMMITTED",
        Phenomenon::SerializationAnomaly => level != "SERIALIZABLE",
    }
}

/// The two tests take turns: the first counts every spec sandbox on the server.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn spec_roles(url: &str) -> i64 {
    let mut config: tokio_postgres::Config = url.parse().expect("a database URL");
    config.dbname("postgres");
    let (client, connection) = config.connect(tokio_postgres::NoTls).await.expect("PostgreSQL answers");
    tokio::spawn(connection);
    client
        .query_one(
            "SELECT count(*) FROM pg_roles r WHERE rolname LIKE 'racelab\\_spec\\_%' \
             AND (rolconnlimit <> 0 OR EXISTS (SELECT 1 FROM pg_stat_activity a \
                                                WHERE a.usename = r.rolname OR a.datname = r.rolname))",
            &[],
        )
        .await
        .expect("roles counted")
        .get(0)
}

#[tokio::test]
async fn the_atlas_on_this_server_agrees_with_postgresqls_documentation() {
    let _turn = ONE_AT_A_TIME.lock().await;
    agrees_with_the_documentation(&database_url(), "PostgreSQL 1").await;
}

/// PostgreSQL 18.6, the tutorials' version: the documentation's answers are the same.
#[tokio::test]
async fn the_atlas_on_postgresql_18_agrees_with_postgresqls_documentation() {
    let _turn = ONE_AT_A_TIME.lock().await;
    agrees_with_the_documentation(&common::versions::postgres_18(), "PostgreSQL 18.6").await;
}

async fn agrees_with_the_documentation(url: &str, version: &str) {
    // Runs' databases are reset after the runs return: counted once none is being reset.
    specs::confine::settle().await;
    let before = spec_roles(url).await;
    let observed = specs::atlas::observe(url, &Limits::command_line(std::time::Duration::from_secs(10)))
        .await
        .expect("every entry plays at every level");
    assert_eq!(observed.cells.len(), atlas::ENTRIES.len() * atlas::LEVELS.len());
    assert!(observed.server.starts_with(version), "{}", observed.server);
    let mut disagreements = Vec::new();
    for cell in &observed.cells {
        let expected = allows(documented(cell.entry.id), cell.level);
        if cell.cell.allowed() != expected {
            disagreements.push(format!(
                "{} at {}: {} (the documentation: {})",
                cell.entry.name,
                cell.level,
                cell.cell.sentence(),
                if expected { "allowed" } else { "not possible" }
            ));
        }
        // Where the anomaly appeared, its proof says which, and the lines say why.
        if let Cell::Allowed { anomaly } = cell.cell {
            let proof = cell.proof.as_ref().expect("an allowed cell has its proof");
            assert_eq!(proof.anomaly, Some(anomaly));
            assert!(
                proof.lines.iter().any(|l| l.starts_with("However, ")),
                "{:?}",
                proof.lines
            );
        }
    }
    assert!(disagreements.is_empty(), "\n{}", disagreements.join("\n"));
    // SERIALIZABLE prevents every one of them by refusing or waiting, and says so.
    for cell in observed.cells.iter().filter(|c| c.level == "SERIALIZABLE") {
        assert!(!cell.cell.allowed(), "{}", cell.entry.name);
    }
    let text = specs::atlas::render(&observed);
    assert!(text.contains(&observed.server) && text.contains("REPEATABLE READ"));
    assert!(text.lines().filter(|l| l.contains("allowed")).count() >= 8, "{text}");
    specs::confine::settle().await;
    assert_eq!(spec_roles(url).await, before, "every run's sandbox is gone");
}

#[tokio::test]
async fn the_command_prints_the_matrix_and_each_proof() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_racelab"))
        .args(["atlas", "--why"])
        .env("DATABASE_URL", database_url())
        .output()
        .await
        .expect("racelab atlas runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for entry in &atlas::ENTRIES {
        assert!(stdout.contains(entry.name), "{}: {stdout}", entry.name);
    }
    assert!(stdout.contains("write skew at REPEATABLE READ: Allowed: the run showed a write skew (G2-item)."));
    assert!(stdout.contains("PostgreSQL cancelled bob instead (SQLSTATE 40001)."));
}
