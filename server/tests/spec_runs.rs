//! `racelab run FILE.spec` beside PostgreSQL's own isolation tester: for every spec of
//! `tests/specs/`, both play it on the same server, and racelab's stdout must be the tester's,
//! byte for byte, with the same exit status. Then the command line's own promises: errors at
//! their line, standard input, the checks' verdicts, and nothing left behind.
//!
//! The tester is the one `postgresql-client-15` installs (or `RACELAB_ISOLATIONTESTER`); where
//! it is missing, the comparison says so and is skipped, the rest still runs.

use std::path::{Path, PathBuf};
use std::process::Output;
use tokio::process::Command;

/// The tester's `PGISOLATIONTIMEOUT` for the corpus (and racelab's the same): long enough for
/// every step that finishes, short enough that `never-unblocks.spec` is cancelled soon.
const STEP_LIMIT: &str = "2";

const TESTER: &str = "/usr/lib/postgresql/15/lib/pgxs/src/test/isolation/isolationtester";

fn database_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/racelab".to_owned())
}

fn tester() -> Option<PathBuf> {
    let path = std::env::var_os("RACELAB_ISOLATIONTESTER").map_or_else(|| PathBuf::from(TESTER), PathBuf::from);
    path.exists().then_some(path)
}

fn specs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/specs")
}

async fn racelab(args: &[&str], stdin: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_racelab"));
    command
        .args(args)
        .env("DATABASE_URL", database_url())
        .env_remove("PGISOLATIONTIMEOUT");
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().expect("racelab starts");
    if let Some(mut pipe) = child.stdin.take() {
        use tokio::io::AsyncWriteExt;
        pipe.write_all(stdin.unwrap_or_default().as_bytes())
            .await
            .expect("stdin written");
    }
    child.wait_with_output().await.expect("racelab ends")
}

/// psql as racelab's user on the maintenance database: one query, its rows as text.
async fn psql(sql: &str) -> String {
    let output = Command::new("psql")
        .args(["-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-Atc", sql])
        .output()
        .await
        .expect("psql runs");
    assert!(
        output.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// The run databases (and roles) on the server now, by name.
async fn spec_databases() -> String {
    psql(
        "SELECT coalesce(string_agg(name, ','), '') FROM (SELECT rolname AS name FROM pg_roles \
         UNION SELECT datname FROM pg_database) n WHERE name LIKE 'racelab\\_spec\\_%'",
    )
    .await
}

/// What the commands run since `before` (the names [`spec_databases`] gave then) left behind: a
/// run database in use (a session, open to logins), or one made since and not dropped (a
/// command drops its spares as it exits). The tests that run commands take turns
/// ([`ONE_AT_A_TIME`]), so nothing else makes one meanwhile.
async fn left_since(before: &str) -> String {
    psql(&format!(
        "SELECT count(*) FROM (SELECT rolname AS name FROM pg_roles UNION SELECT datname FROM pg_database) n \
         LEFT JOIN pg_roles r ON r.rolname = n.name \
         WHERE n.name LIKE 'racelab\\_spec\\_%' \
           AND (coalesce(r.rolconnlimit, 0) <> 0 \
                OR EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.usename = n.name OR a.datname = n.name) \
                OR n.name <> ALL (string_to_array('{before}', ',')) \
                OR EXISTS (SELECT 1 FROM pg_prepared_xacts p WHERE p.database = n.name))"
    ))
    .await
}

/// The tests that run commands on specs take turns, so that [`left_since`] sees only theirs.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn fresh_id(name: &str) -> String {
    let stem: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_lowercase();
    format!("t{}{}", &stem[..stem.len().min(12)], std::process::id())
}

#[tokio::test]
async fn every_spec_prints_what_postgresqls_isolation_tester_prints() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let Some(tester) = tester() else {
        eprintln!(
            "SKIPPED: no isolationtester at {TESTER} (install postgresql-client-15, or set RACELAB_ISOLATIONTESTER)"
        );
        return;
    };
    let mut specs: Vec<PathBuf> = std::fs::read_dir(specs_dir())
        .expect("tests/specs")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "spec"))
        .collect();
    specs.sort();
    assert!(specs.len() >= 8, "the corpus is there: {specs:?}");
    let oracle_db = format!("racelab_oracle_{}", std::process::id());
    psql(&format!("DROP DATABASE IF EXISTS {oracle_db}")).await;
    psql(&format!("CREATE DATABASE {oracle_db}")).await;
    let mut differences = Vec::new();
    for spec in &specs {
        let name = spec
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(spec).expect("the spec reads");
        let theirs = {
            let mut child = Command::new(&tester)
                .env("PGISOLATIONTIMEOUT", STEP_LIMIT)
                .arg(format!("host=127.0.0.1 user=postgres dbname={oracle_db}"))
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("the tester starts");
            use tokio::io::AsyncWriteExt;
            let mut pipe = child.stdin.take().expect("stdin");
            pipe.write_all(text.as_bytes()).await.expect("spec sent");
            drop(pipe);
            child.wait_with_output().await.expect("the tester ends")
        };
        let run_id = fresh_id(&name);
        let before = spec_databases().await;
        let path = spec.to_string_lossy().into_owned();
        let ours = racelab(&["run", &path, "--run-id", &run_id, "--step-limit", STEP_LIMIT], None).await;
        if theirs.stdout != ours.stdout || theirs.status.code() != ours.status.code() {
            differences.push(format!(
                "{name}: tester exit {:?}, racelab exit {:?}\n--- tester\n{}\n--- racelab\n{}\n--- racelab's stderr\n{}",
                theirs.status.code(),
                ours.status.code(),
                String::from_utf8_lossy(&theirs.stdout),
                String::from_utf8_lossy(&ours.stdout),
                String::from_utf8_lossy(&ours.stderr),
            ));
        }
        assert_eq!(left_since(&before).await, "0", "{name} left its sandbox behind");
    }
    psql(&format!("DROP DATABASE IF EXISTS {oracle_db}")).await;
    assert!(differences.is_empty(), "{}", differences.join("\n\n"));
}

#[tokio::test]
async fn a_spec_with_a_mistake_is_refused_at_its_line_before_anything_runs() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let bad = "setup { CREATE TABLE t (k int); }\n\nsession s\nstep { SELECT 1; }\n";
    let out = racelab(&["run", "-"], Some(bad)).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stdout.is_empty(),
        "nothing printed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("line 4, column 6: expected a step name after \"step\", found an SQL block"),
        "{stderr}"
    );

    let unknown = "session s step a { SELECT 1; }\npermutation a b\n";
    let out = racelab(&["run", "-"], Some(unknown)).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("undefined step \"b\" specified in permutation"));

    let out = racelab(&["run", "/nonexistent/race.spec"], None).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /nonexistent/race.spec"));
}

#[tokio::test]
async fn a_failing_setup_stops_the_run_as_the_tester_does_and_leaves_nothing() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let before = spec_databases().await;
    let spec = "setup { CREATE TABLE t (k int); SELECT * FROM no_such_table; }\nsession s step a { SELECT 1; }\n";
    let run_id = fresh_id("failingsetup");
    let out = racelab(&["run", "-", "--run-id", &run_id], Some(spec)).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Parsed test spec with 1 sessions\n\nstarting permutation: a\n"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("setup failed: ERROR:  relation \"no_such_table\" does not exist"),
        "{stderr}"
    );
    assert_eq!(left_since(&before).await, "0");
}

#[tokio::test]
async fn checks_give_each_permutation_a_verdict_on_stderr() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let path = specs_dir().join("write-skew.spec");
    let out = racelab(&["run", &path.to_string_lossy()], None).await;
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Both left at once: nobody is on call. One after the other: the second saw the first leave
    // and still left (the spec's steps do not look), so this check is broken both times? No:
    // the second permutation's bob counts 1 and leaves anyway; the check says what a correct
    // system holds, whatever the steps do.
    assert!(
        stderr.contains(
            "check broken after a_count b_count a_leave b_leave a_commit b_commit: SELECT count(*) >= 1 FROM doctors WHERE on_call → f"
        ),
        "{stderr}"
    );
    let spec = "# check: SELECT count(*) = 1 FROM t\nsetup { CREATE TABLE t (k int); }\nteardown { DROP TABLE t; }\nsession s step a { INSERT INTO t VALUES (1); }\n";
    let out = racelab(&["run", "-"], Some(spec)).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("check held after a: SELECT count(*) = 1 FROM t → t"),
        "{stderr}"
    );
    let spec = "session s step a { SELECT 1; }\n";
    let out = racelab(&["run", "-"], Some(spec)).await;
    assert!(String::from_utf8_lossy(&out.stderr).contains("no check stated"));
}

/// A spec's proof is asked for, as a lab run's is: without `--why` no permutation is witnessed
/// and nothing is said of why; with it, each permutation says what cycle it closed, or none.
#[tokio::test]
async fn why_is_told_of_each_permutation_only_when_asked() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let path = specs_dir().join("write-skew.spec");
    let path = path.to_string_lossy();
    let plain = racelab(&["run", &path], None).await;
    let asked = racelab(&["run", &path, "--why"], None).await;
    assert!(plain.status.success() && asked.status.success());
    // The tester's output is the same either way.
    assert_eq!(plain.stdout, asked.stdout);
    let plain = String::from_utf8_lossy(&plain.stderr);
    assert!(!plain.contains("why, after"), "{plain}");
    let asked = String::from_utf8_lossy(&asked.stderr);
    let told = |order: &str| {
        asked
            .lines()
            .find_map(|line| line.strip_prefix(&format!("why, after {order}: ")))
            .unwrap_or_else(|| panic!("no why for {order}:\n{asked}"))
            .to_owned()
    };
    let both_at_once = told("a_count b_count a_leave b_leave a_commit b_commit");
    assert!(both_at_once.contains("write skew"), "{asked}");
    assert_eq!(
        told("a_count a_leave a_commit b_count b_leave b_commit"),
        "no cycle",
        "{asked}"
    );
}

#[tokio::test]
async fn an_interrupted_run_removes_its_sandbox_before_it_exits() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let before = spec_databases().await;
    let spec = "setup { CREATE TABLE t (k int); }\nsession s step wait { SELECT pg_sleep(30); }\n";
    let run_id = fresh_id("interrupted");
    let mut child = Command::new(env!("CARGO_BIN_EXE_racelab"))
        .args(["run", "-", "--run-id", &run_id])
        .env("DATABASE_URL", database_url())
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
    // Until its session is in its step.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let waiting = psql(
            "SELECT count(*) FROM pg_stat_activity WHERE usename LIKE 'racelab\\_spec\\_%' \
             AND query LIKE '%pg_sleep(30)%' AND state = 'active'",
        )
        .await;
        if waiting == "1" {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the step started");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let pid = child.id().expect("a pid");
    // SIGTERM, as a stopped job or a terminal's Ctrl-C would be.
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
    assert_eq!(left_since(&before).await, "0", "nothing left once it has exited");
}
