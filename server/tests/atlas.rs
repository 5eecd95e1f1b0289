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
        // The judge MariaDB's cells get, from what the reads returned, agrees with the proof's.
        assert_eq!(
            cell.by_reads.allowed(),
            cell.cell.allowed(),
            "{} at {}: by its reads {:?}, by its proof {:?}",
            cell.entry.name,
            cell.level,
            cell.by_reads,
            cell.cell
        );
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

/// The atlas on MariaDB (10.11 here), every entry in each of its five columns, against what two
/// (or three) `mariadb` clients did by hand, fed the same statements in the same order (7 Dec,
/// MariaDB 10.11.19; a session's next statement sent only once its previous one completed, as
/// the tester sends them; each session's lock wait timeout 2 s, as the atlas's specs set it).
/// What the clients showed, case by case:
/// - G0: bob's first update waits for alice's commit at every level; the rows end bob's.
/// - G1a, G1b: at READ UNCOMMITTED bob reads alice's 101; above it he reads 10 (or, at READ
///   COMMITTED, her committed 11), waiting at SERIALIZABLE, where his read is a locking one.
/// - G1c: at READ UNCOMMITTED each reads the other's uncommitted write; above it neither does;
///   at SERIALIZABLE bob's read closes a lock cycle and is refused (1213).
/// - OTV: carol never sees bob's 18 and then alice's 11; bob's first update waits throughout.
/// - PMP: alice's second search finds bob's row at READ UNCOMMITTED and READ COMMITTED, not at
///   REPEATABLE READ (one read view); at SERIALIZABLE bob's insert waits for her range lock.
/// - PMP, write predicate: bob's delete waits for alice's update, then deletes the row she made
///   20 (no row worth 20 is left); with the snapshot switch on it is refused (1020).
/// - P4: both read 10, bob's write waits, then lands: 11, one increment lost, up to REPEATABLE
///   READ; the switch on refuses it (1020); SERIALIZABLE deadlocks (1213).
/// - G-single: alice reads 10 then 18 at READ UNCOMMITTED and READ COMMITTED, 10 then 20 at
///   REPEATABLE READ; at SERIALIZABLE bob's move waits for her lock until it times out.
/// - G-single, write predicate: alice's delete (a locking read: the newest rows) finds no row
///   worth 20 after bob's move, though she read row 1 before it, up to REPEATABLE READ; the
///   switch on refuses it (1020); at SERIALIZABLE bob's move waits for her lock.
/// - G2-item, G2: both read the same rows or find none, and both changes commit, up to
///   REPEATABLE READ, the switch on or off (it refuses only writes to rows changed since the
///   snapshot); SERIALIZABLE deadlocks (1213).
/// - The read-only anomaly: carol's report sees the deposit and not the withdrawal, which takes
///   the fee, up to REPEATABLE READ; at SERIALIZABLE bob's deposit waits for alice's locks.
///
/// Each cell's proof (which on MariaDB must take each read's view to be the one that gives its
/// answer) agrees with its reads but in three cells, where the two part for a reason:
/// - PMP, write predicate, at READ COMMITTED and REPEATABLE READ: the proof finds a read skew
///   (G-single) that the reads judge does not look for. Bob's first search saw row 2 at 20,
///   before alice's raise; his delete, a locking read of the newest rows, then removed row 1 at
///   alice's 20. No one-at-a-time order gives both (alice first, his search finds row 1; bob
///   first, he deletes row 2).
/// - G-single, write predicate, at REPEATABLE READ: the skew is in what alice's delete looked at
///   and left alone (row 2 at 18, after bob's move), which no witness on MariaDB sees (it wrote
///   no row and returned none): the proof finds no cycle, and says what it cannot see.
const PROOF_PARTS: [(&str, &str, Option<shared::proof::Anomaly>); 3] = [
    ("pmp-write", "READ COMMITTED", Some(shared::proof::Anomaly::ReadSkew)),
    ("pmp-write", "REPEATABLE READ", Some(shared::proof::Anomaly::ReadSkew)),
    ("g-single-write", "REPEATABLE READ", None),
];

#[tokio::test]
async fn the_atlas_on_mariadb_agrees_with_mariadb_clients_played_by_hand() {
    let _turn = ONE_AT_A_TIME.lock().await;
    const BY_HAND: [(&str, [&str; 5]); 13] = [
        ("g0", ["waits", "waits", "waits", "waits", "waits"]),
        ("g1a", ["allowed", "not seen", "not seen", "not seen", "waits"]),
        ("g1b", ["allowed", "not seen", "not seen", "not seen", "waits"]),
        ("g1c", ["allowed", "not seen", "not seen", "not seen", "error 1213"]),
        ("otv", ["waits", "waits", "waits", "waits", "waits"]),
        ("pmp", ["allowed", "allowed", "not seen", "not seen", "waits"]),
        ("pmp-write", ["waits", "waits", "waits", "error 1020", "waits"]),
        ("p4", ["allowed", "allowed", "allowed", "error 1020", "error 1213"]),
        ("g-single", ["allowed", "allowed", "not seen", "not seen", "waits"]),
        (
            "g-single-write",
            ["allowed", "allowed", "allowed", "error 1020", "waits"],
        ),
        ("g2-item", ["allowed", "allowed", "allowed", "allowed", "error 1213"]),
        ("g2", ["allowed", "allowed", "allowed", "allowed", "error 1213"]),
        ("read-only", ["allowed", "allowed", "allowed", "allowed", "waits"]),
    ];
    let url = std::env::var("MARIADB_URL").unwrap_or_else(|_| racelab::config::DEFAULT_MARIADB_URL.to_owned());
    let observed = specs::atlas::observe_mariadb(&url, &Limits::command_line(std::time::Duration::from_secs(10)))
        .await
        .expect("every entry plays in every column");
    assert!(observed.server.starts_with("MariaDB 10."), "{}", observed.server);
    assert_eq!(
        observed.cells.len(),
        atlas::ENTRIES.len() * atlas::MARIADB_COLUMNS.len()
    );
    let mut disagreements = Vec::new();
    for (id, cells) in BY_HAND {
        for (column, by_hand) in atlas::MARIADB_COLUMNS.iter().zip(cells) {
            let cell = observed
                .cells
                .iter()
                .find(|c| c.entry.id == id && c.level == column.label)
                .unwrap_or_else(|| panic!("no cell for {id} at {}", column.label));
            if cell.cell.label() != by_hand {
                disagreements.push(format!(
                    "{id} at {}: {} (by hand: {by_hand})",
                    column.label,
                    cell.cell.sentence()
                ));
            }
            // The proof agrees with the reads, or parts from them where the docs above say.
            let parts = PROOF_PARTS
                .iter()
                .find(|(e, level, _)| *e == id && *level == column.label);
            let anomaly = cell.proof.as_ref().and_then(|p| p.anomaly);
            if let Some((_, _, found)) = parts {
                assert_eq!(anomaly, *found, "{id} at {}: {:?}", column.label, cell.proof);
                assert_ne!(
                    cell.by_proof.allowed(),
                    cell.by_reads.allowed(),
                    "{id} at {}",
                    column.label
                );
            } else if cell.by_proof.allowed() != cell.by_reads.allowed() {
                disagreements.push(format!(
                    "{id} at {}: by its proof {:?}, by its reads {:?}: {:?}",
                    column.label,
                    cell.by_proof,
                    cell.by_reads,
                    cell.proof.as_ref().map(|p| &p.lines)
                ));
            }
        }
    }
    assert!(disagreements.is_empty(), "\n{}", disagreements.join("\n"));
    let text = specs::atlas::render(&observed);
    assert!(text.contains("REPEATABLE READ, snapshot isolation on"), "{text}");
    assert_eq!(
        common::mariadb::sandboxes_on_mariadb().await,
        (0, 0),
        "every run's database and user are gone"
    );
}
