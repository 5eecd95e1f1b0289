//! Specs on MariaDB from the command line (`racelab run FILE.spec --database mariadb`), against
//! the real server at `MARIADB_URL`: the tester's output with MariaDB's answers, every
//! permutation, `# check:` verdicts, a step cancelled at the step limit, a reader's escapes
//! refused, and the run's database and user gone after, however it ended.
//!
//! MariaDB has no isolation tester to compare with, as PostgreSQL's specs are compared with
//! PostgreSQL's own. Each expected output (`tests/specs/mariadb/*.out`) was checked line by
//! line against what two `mariadb` clients did by hand, fed the same statements in the same
//! order (7 Dec, MariaDB 10.11.19):
//! - `write-skew.spec`: at SERIALIZABLE both checks read $0; alice's insert waits (for bob's
//!   shared lock on the range he read); bob's insert is refused at once, `ERROR 1213 (40001)`;
//!   alice's completes. In the serial order, bob's check reads 3000.
//! - `one-account.spec`: an UPDATE of a row another transaction updated waits for it; it goes
//!   on when that one commits, and fails with `ERROR 1205 (HY000)` after the session's 1 s
//!   lock wait timeout when that commit is queued behind it on the waiting session.
//! - `escapes.spec`: each escape refused as `tests/mariadb_sandbox.rs` pins it, the run's name
//!   in MariaDB's messages written `<run>`.
//!
//! `--why` on MariaDB: each proof is what Adya's model says of what the clients showed (the
//! dependencies in the docs of `each_race_on_mariadb_says_why_and_what_racelab_cannot_see_there`),
//! and says what racelab cannot see there; a lab run's recording carries its proof; a play whose
//! writes racelab cannot account for (its trigger dropped, a savepoint rolled back to) gets none.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use tokio::process::Command;

fn spec(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/specs/mariadb")
        .join(name)
}

fn expected(name: &str) -> String {
    std::fs::read_to_string(spec(name)).expect("the expected output")
}

/// The tests of this file one at a time: each counts the run sandboxes left on MariaDB.
static ALONE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn racelab(args: &[&str], step_limit: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_racelab"));
    command.args(args).env_remove("PGISOLATIONTIMEOUT");
    if let Some(seconds) = step_limit {
        command.env("PGISOLATIONTIMEOUT", seconds);
    }
    command.output().await.expect("racelab runs")
}

/// Plays `name` on MariaDB (`--database mariadb`, unless `name` says so itself): its stdout
/// (the run's name written `<run>`), its stderr.
async fn play(name: &str, step_limit: Option<&str>) -> (String, String) {
    let path = spec(name).to_string_lossy().into_owned();
    let says_so = std::fs::read_to_string(&path).is_ok_and(|text| text.contains("# database: mariadb"));
    let args: &[&str] = if says_so {
        &["run", &path]
    } else {
        &["run", &path, "--database", "mariadb"]
    };
    let out = racelab(args, step_limit).await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{name}: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (anonymous(&stdout), stderr)
}

/// `text` with every run sandbox's name written `<run>`.
fn anonymous(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("racelab_maria_") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "racelab_maria_".len()..];
        let name_len = after.chars().take_while(char::is_ascii_hexdigit).count();
        out.push_str("<run>");
        rest = &after[name_len..];
    }
    out.push_str(rest);
    out
}

#[tokio::test]
async fn a_spec_plays_on_mariadb_as_the_tester_prints_it_with_innodbs_deadlock() {
    let _alone = ALONE.lock().await;
    let (stdout, stderr) = play("write-skew.spec", None).await;
    assert_eq!(stdout, expected("write-skew.out"));
    let checks: Vec<&str> = stderr.lines().filter(|l| l.starts_with("check ")).collect();
    assert_eq!(
        checks,
        [
            "check held after a_check b_check a_insert b_insert a_commit b_commit: SELECT SUM(amount) <= 5000 FROM expenses → 1",
            "check broken after a_check a_insert a_commit b_check b_insert b_commit: SELECT SUM(amount) <= 5000 FROM expenses → 0",
        ]
    );
    assert_eq!(
        common::mariadb::sandboxes_on_mariadb().await,
        (0, 0),
        "the run's database and user are gone"
    );
}

/// What every proof on MariaDB ends with.
const CANNOT_SEE: &str = "  (On MariaDB racelab sees no snapshot and no transaction id: each read is taken to have \
read from the view, among those InnoDB could have read from, whose rows give the read's own answer; a statement \
undone by an error is left out, and so are the rows an UPDATE or DELETE looked at and left as they were.)";

/// The `why` lines `racelab run FILE --why` prints of `name`, one block a permutation.
async fn why_of(name: &str) -> Vec<String> {
    let path = spec(name).to_string_lossy().into_owned();
    let out = racelab(&["run", &path, "--database", "mariadb", "--why"], None).await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{name}: {stderr}");
    let mut lines = Vec::new();
    let mut inside = false;
    for line in stderr.lines() {
        inside = line.starts_with("why, ") || (inside && line.starts_with("  "));
        if inside {
            lines.push(line.to_owned());
        }
    }
    lines
}

/// Why each race happened on MariaDB, as the proof tells it from the witness's triggers and
/// the views InnoDB reads from (what the clients showed, as dependencies):
/// - the lost update, the snapshot switch off: both read 10 in their snapshots; bob's write
///   waits for alice's, then lands on her 11 (ww alice→bob), though his read missed it (rw
///   bob→alice): G-single. The switch on: bob's write is refused (1020), nothing of his lands.
/// - read skew at READ COMMITTED: the report's first read precedes the transfer (rw), its
///   second reads the transfer's committed 18 (wr): G-single.
/// - write skew at SERIALIZABLE: alice's insert waits for bob's range lock; bob's insert
///   deadlocks and his transaction is rolled back (1213): no cycle among the committed. In the
///   serial order, bob's check reads alice's row (wr) and alice's missed bob's later one (rw).
#[tokio::test]
async fn each_race_on_mariadb_says_why_and_what_racelab_cannot_see_there() {
    let _alone = ALONE.lock().await;
    let lost = "after a_begin b_begin a_read b_read a_write a_commit b_write b_commit";
    assert_eq!(
        why_of("lost-update.spec").await,
        [
            &format!("why, {lost}: lost update (G-single)"),
            "  bob read totals 1 = 10, which alice then replaced with 11, so bob comes before alice.",
            "  However, bob wrote totals 1 = 11 over alice's 11, so alice comes before bob.",
            "  No order of one-at-a-time runs explains this: lost update (G-single).",
            CANNOT_SEE,
        ]
    );
    assert_eq!(
        why_of("lost-update-snapshot.spec").await,
        [
            &format!("why, {lost}: no cycle"),
            "  No committed transaction depended on another's reads or writes.",
            "  MariaDB cancelled bob as a row it wrote had changed since its snapshot (error 1020).",
            CANNOT_SEE,
        ]
    );
    assert_eq!(
        why_of("read-skew.spec").await,
        [
            "why, after r_begin t_begin r_first t_take t_give t_commit r_second r_commit: read skew (G-single)",
            "  report read accounts 1 = 10, which transfer then replaced with 12, so report comes before transfer.",
            "  However, report read accounts 2 = 18, which transfer wrote, so transfer comes before report.",
            "  No order of one-at-a-time runs explains this: read skew (G-single).",
            CANNOT_SEE,
        ]
    );
    assert_eq!(
        why_of("write-skew.spec").await,
        [
            "why, after a_check b_check a_insert b_insert a_commit b_commit: no cycle",
            "  No committed transaction depended on another's reads or writes.",
            "  alice waited for bob to finish (a lock bob held).",
            "  MariaDB cancelled bob to break a deadlock (error 1213).",
            CANNOT_SEE,
            "why, after a_check a_insert a_commit b_check b_insert b_commit: no cycle",
            "  alice's read did not see bob's insert of expenses 2 = (team_id=design, amount=3000), so alice comes before bob.",
            "  bob read expenses 1 = (team_id=design, amount=3000), which alice wrote, so alice comes before bob.",
            "  One order of one-at-a-time runs explains every read: alice, then bob.",
            CANNOT_SEE,
        ]
    );
    assert_eq!(
        common::mariadb::sandboxes_on_mariadb().await,
        (0, 0),
        "every run's database and user are gone"
    );
}

/// A MariaDB lab run's recording carries its proof, worked out on MariaDB: the write skew at
/// REPEATABLE READ is a cycle of two predicate anti-dependencies, as on PostgreSQL.
#[tokio::test]
async fn a_mariadb_runs_recording_carries_its_proof() {
    let _alone = ALONE.lock().await;
    let file = std::env::temp_dir().join(format!("racelab-mariadb-{}.racelab.json", std::process::id()));
    let path = file.to_string_lossy().into_owned();
    let args = [
        "record",
        "isolation/write-skew",
        "--variant",
        "mariadb-repeatable-read",
        "-o",
        &path,
    ];
    let out = racelab(&args, None).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&file).expect("the recording");
    let _ = std::fs::remove_file(&file);
    let recording: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let proof = &recording["proof"];
    assert_eq!(proof["anomaly"], "predicate_write_skew", "{proof}");
    let lines: Vec<&str> = proof["lines"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| l.as_str())
        .collect();
    assert!(lines.contains(&CANNOT_SEE.trim_start()), "{lines:?}");
    assert_eq!(
        common::mariadb::sandboxes_on_mariadb().await,
        (0, 0),
        "the run's and the proof's databases and users are gone"
    );
}

/// No proof rather than a wrong one: a spec that drops one of racelab's triggers (its user may:
/// it holds `TRIGGER` on its own database), and a write undone by `ROLLBACK TO SAVEPOINT`,
/// which racelab cannot tell from the writes it kept. Each plays as it would without a witness.
#[tokio::test]
async fn a_play_whose_writes_racelab_cannot_account_for_gets_no_proof() {
    let _alone = ALONE.lock().await;
    for name in ["drops-the-witness.spec", "savepoint.spec"] {
        assert_eq!(why_of(name).await, Vec::<String>::new(), "{name}");
        let (stdout, _) = play(name, None).await;
        assert!(stdout.contains("step a_commit: COMMIT;"), "{name}: {stdout}");
    }
}

#[tokio::test]
async fn every_permutation_plays_when_none_is_listed_and_lock_waits_are_seen() {
    let _alone = ALONE.lock().await;
    let (stdout, stderr) = play("one-account.spec", None).await;
    assert_eq!(stdout, expected("one-account.out"));
    assert_eq!(stdout.matches("starting permutation").count(), 6);
    let held = stderr.lines().filter(|l| l.starts_with("check held")).count();
    let broken = stderr.lines().filter(|l| l.starts_with("check broken")).count();
    // The two orders where a lock wait timed out lose a withdrawal.
    assert_eq!((held, broken), (4, 2), "{stderr}");
    assert_eq!(common::mariadb::sandboxes_on_mariadb().await, (0, 0));
}

/// The spec names its database itself (`# database: mariadb`): no flag needed.
#[tokio::test]
async fn a_readers_escapes_are_refused_by_mariadb_itself() {
    let _alone = ALONE.lock().await;
    let (stdout, _) = play("escapes.spec", None).await;
    // Each escape that worked would print a row or an OK here instead of its error.
    assert_eq!(stdout, expected("escapes.out"));
    assert!(!stdout.contains("root:"), "no file was read");
    assert!(!Path::new("/tmp/racelab-escape").exists(), "no file was written");
    assert_eq!(common::mariadb::sandboxes_on_mariadb().await, (0, 0));
}

#[tokio::test]
async fn a_step_past_the_step_limit_is_cancelled_as_the_tester_cancels_it() {
    let _alone = ALONE.lock().await;
    let nap = "session sleeper\nstep nap { SELECT SLEEP(30) AS slept; }\nstep awake { SELECT 'awake' AS now; }\n";
    let path = std::env::temp_dir().join(format!("racelab-nap-{}.spec", std::process::id()));
    std::fs::write(&path, nap).expect("the spec written");
    let started = std::time::Instant::now();
    let out = racelab(&["run", &path.to_string_lossy(), "--database", "mariadb"], Some("1")).await;
    let _ = std::fs::remove_file(&path);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout,
        "Parsed test spec with 1 sessions\n\nstarting permutation: nap awake\n\
         isolationtester: canceling step nap after 1 seconds\n\
         step nap: SELECT SLEEP(30) AS slept;\n\
         ERROR 1317 (70100): Query execution was interrupted\n\
         step awake: SELECT 'awake' AS now;\nnow  \n-----\nawake\n(1 row)\n\n"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "not the whole 30 s"
    );
    assert_eq!(common::mariadb::sandboxes_on_mariadb().await, (0, 0));
}

#[tokio::test]
async fn an_interrupted_run_removes_its_database_and_user_before_it_exits() {
    let _alone = ALONE.lock().await;
    let spec = "session s\nstep wait { SELECT SLEEP(30); }\n";
    let mut child = Command::new(env!("CARGO_BIN_EXE_racelab"))
        .args(["run", "-", "--database", "mariadb"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("racelab starts");
    {
        use tokio::io::AsyncWriteExt;
        let mut pipe = child.stdin.take().expect("stdin");
        pipe.write_all(spec.as_bytes()).await.expect("spec sent");
    }
    // Until its sandbox is there and its step runs.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while common::mariadb::sandboxes_on_mariadb().await.0 == 0 {
        assert!(tokio::time::Instant::now() < deadline, "the run started");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let pid = child.id().expect("a pid");
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let out = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("racelab exits soon")
        .expect("racelab ends");
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        common::mariadb::sandboxes_on_mariadb().await,
        (0, 0),
        "nothing left once it has exited"
    );
}

#[tokio::test]
async fn a_lab_scenario_is_told_that_its_variant_names_its_database() {
    let out = racelab(&["run", "isolation/write-skew", "--database", "mariadb"], None).await;
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("--variant mariadb-"), "{said}");
}

/// A reader's spec on MariaDB through the engine, as a page plays it: cancelled mid-step (the
/// reader gone), its database and user are removed all the same.
#[tokio::test]
async fn a_spec_run_cancelled_mid_step_leaves_nothing_on_mariadb() {
    let _alone = ALONE.lock().await;
    let engine = common::engine().await;
    let text = "# database: mariadb\nsetup { CREATE TABLE t (k int) ENGINE = InnoDB; }\n\
                teardown { DROP TABLE t; }\nsession s\nstep nap { SELECT SLEEP(30); }\n";
    let scenario = racelab::specs::scenario::SpecScenario::new("0123456789abcdef", text).expect("a spec");
    let scenario: std::sync::Arc<dyn racelab::engine::Scenario> = std::sync::Arc::new(scenario);
    let mut handle = engine
        .start(scenario, "p1", shared::Mode::Auto)
        .await
        .expect("it starts");
    // Until its step is sent.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let update = tokio::time::timeout_at(deadline, handle.updates.recv())
            .await
            .expect("in time")
            .expect("open");
        match update {
            shared::ServerMsg::Event { event } => {
                if let shared::EventKind::RunStarted { server, .. } = &event.kind {
                    assert!(server.starts_with("MariaDB"), "played on {server}");
                }
                if matches!(&event.kind, shared::EventKind::Step { text, .. } if text.contains("SLEEP")) {
                    break;
                }
            }
            shared::ServerMsg::Done { outcome, .. } => panic!("ended before its step: {outcome:?}"),
            _ => {}
        }
    }
    assert_eq!(
        common::mariadb::sandboxes_on_mariadb().await,
        (1, 1),
        "its sandbox is there while it plays"
    );
    handle.cancel();
    let finished = common::follow(handle).await;
    assert_eq!(finished.outcome, shared::Outcome::Cancelled);
    // Removed on a task of its own as the play is dropped: within moments.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while common::mariadb::sandboxes_on_mariadb().await != (0, 0) {
        assert!(tokio::time::Instant::now() < deadline, "its database and user are gone");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
