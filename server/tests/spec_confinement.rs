//! A spec is SQL from anyone on the internet. Each test here tries one thing it must not be able
//! to do, from a spec played as a reader's would be (`racelab::specs::play`, the page's
//! limits), asserts the server's refusal in the run's own output, and that the run left nothing:
//! no role, schema, session, prepared transaction or lock.

mod common;

use racelab::engine::BoxFuture;
use racelab::engine::lane::Stage;
use racelab::specs::{self, Limits, SpecError};
use shared::{EventKind, Service};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn database_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/racelab".to_owned())
}

/// Keeps a run's transcript lines.
#[derive(Default)]
struct Transcript(Mutex<Vec<String>>);

impl Stage for Transcript {
    fn emit(&self, kind: EventKind) {
        if let EventKind::Say { line, .. } = kind {
            self.0.lock().expect("transcript").push(line);
        }
    }
    fn gate<'a>(&'a self, _: &'a str, _: Service, _: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

fn run_id(name: &str) -> String {
    let stem: String = name.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    format!("c{}{}", &stem[..stem.len().min(14)], std::process::id())
}

/// Plays `text` under `limits` as run `name`; its output, and how it ended.
async fn play_with(name: &str, text: &str, limits: Limits) -> (String, Result<(), SpecError>) {
    play_on(&database_url(), name, text, limits).await
}

/// [`play_with`] on the server at `url`.
async fn play_on(url: &str, name: &str, text: &str, limits: Limits) -> (String, Result<(), SpecError>) {
    let transcript = Arc::new(Transcript::default());
    let ended = match specs::read(text, &limits) {
        Ok(spec) => specs::play(url, &run_id(name), &spec, &limits, transcript.clone())
            .await
            .map(|_| ()),
        Err(error) => Err(error),
    };
    let lines = transcript.0.lock().expect("transcript").join("\n");
    (lines, ended)
}

async fn play(name: &str, text: &str) -> String {
    let (lines, ended) = play_with(name, text, Limits::default()).await;
    if let Err(error) = ended {
        panic!("{name}: {error}\n{lines}");
    }
    lines
}

/// PostgreSQL 15 (the machine's) and 18 (racelab's private one): each attack is tried on both.
fn both() -> [(u32, String); 2] {
    [(15, database_url()), (18, common::versions::postgres_18())]
}

async fn admin() -> tokio_postgres::Client {
    admin_on(&database_url()).await
}

/// racelab's own user on the server at `url`.
async fn admin_on(url: &str) -> tokio_postgres::Client {
    let mut config: tokio_postgres::Config = url.parse().expect("a database URL");
    config.dbname("postgres");
    let (client, connection) = config.connect(tokio_postgres::NoTls).await.expect("PostgreSQL answers");
    tokio::spawn(connection);
    client
}

async fn left_on(url: &str, name: &str) -> i64 {
    common::spec_runs::left_by_spec_run(url, &run_id(name)).await
}

async fn left_by(name: &str) -> i64 {
    left_on(&database_url(), name).await
}

/// What PostgreSQL 15 and PostgreSQL 18 say as they refuse (16 reworded many refusals).
type Refusal = [&'static str; 2];

/// The same words on both.
const fn alike(words: &'static str) -> Refusal {
    [words, words]
}

/// Plays a one-step spec doing `sql` on PostgreSQL 15 and on 18, and asserts each server refused
/// it in its words, and that nothing is left.
async fn refused(name: &str, sql: &str, refusal: Refusal) {
    let text = format!("session hostile\nstep try {{ {sql} }}\n");
    for ((version, url), refusal) in both().into_iter().zip(refusal) {
        let (lines, ended) = play_on(&url, name, &text, Limits::default()).await;
        if let Err(error) = ended {
            panic!("{name} on {version}: {error}\n{lines}");
        }
        assert!(
            lines.contains(refusal),
            "{name} on {version}: expected {refusal:?} in\n{lines}"
        );
        assert_eq!(
            left_on(&url, name).await,
            0,
            "{name} on {version} left something behind"
        );
    }
}

#[tokio::test]
async fn it_cannot_read_racelabs_own_tables() {
    refused(
        "racelabtables",
        "SELECT * FROM racelab.public.runs;",
        alike("ERROR:  cross-database references are not implemented"),
    )
    .await;
}

#[tokio::test]
async fn it_cannot_read_change_hear_or_signal_another_run() {
    for (version, url) in both() {
        another_run(version, &url).await;
    }
}

/// How many of run A's function, view, comment and default a query finds in the catalogs it
/// reads: 4 in A's own database (the control), 0 anywhere else.
const HERS: &str = "SELECT (SELECT count(*) FROM pg_proc WHERE prosrc LIKE '%''her'' || ''body''%') \
    + (SELECT count(*) FROM pg_views WHERE definition LIKE '%view%' AND viewname = 'seen') \
    + (SELECT count(*) FROM pg_description WHERE description LIKE 'her%') \
    + (SELECT count(*) FROM pg_attrdef WHERE pg_get_expr(adbin, adrelid) LIKE '%default%') AS hers;";

async fn another_run(version: u32, url: &str) {
    // Run A makes a table, a function, a view, a comment and a default, listens, holds an
    // advisory lock and its session a while; run B, told A's database name (every role can read
    // it in pg_database), tries to read and drop A's table, find A's SQL in the catalogs, reach
    // A's channel and lock, and end A's session.
    let a = "setup { CREATE TABLE secrets (v text); INSERT INTO secrets VALUES ('hers');\n\
             CREATE FUNCTION secret() RETURNS text LANGUAGE sql AS $$ SELECT 'her' || 'body' $$;\n\
             CREATE VIEW seen AS SELECT 'her' || 'view' AS v; COMMENT ON TABLE secrets IS 'hercomment';\n\
             ALTER TABLE secrets ALTER v SET DEFAULT 'her' || 'default'; }\n\
             session a step mine { SELECT 1 AS mine; }\n\
             step listen { LISTEN news; SELECT pg_advisory_lock(7) IS NOT NULL AS locked; }\n\
             step hold { SELECT pg_sleep(1.5); }\n";
    let b = async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        let a_db = loop {
            if let Some(place) = specs::confine::place_of(&run_id(&format!("otherruna{version}"))) {
                break place.database;
            }
            assert!(tokio::time::Instant::now() < deadline, "A took a database");
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        tokio::time::sleep(Duration::from_millis(500)).await;
        let b = format!(
            "session b\nstep peek {{ SELECT * FROM {a_db}.public.secrets; }}\n\
             step drop {{ DROP TABLE {a_db}.public.secrets; }}\n\
             step catalogs {{ {HERS} }}\n\
             step lock {{ SELECT pg_try_advisory_lock(7) AS free; }}\n\
             step shout {{ NOTIFY news, 'from b'; }}\n\
             step kill {{ SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{a_db}'; }}\n"
        );
        (
            play_on(url, &format!("otherrunb{version}"), &b, Limits::default())
                .await
                .0,
            a_db,
        )
    };
    let a = a.replace("SELECT 1 AS mine;", HERS);
    let (a_lines, (b_lines, a_db)) = tokio::join!(
        async {
            play_on(url, &format!("otherruna{version}"), &a, Limits::default())
                .await
                .0
        },
        b
    );
    assert!(
        b_lines.contains(&format!(
            "ERROR:  cross-database references are not implemented: \"{a_db}.public.secrets\""
        )),
        "{b_lines}"
    );
    assert!(
        a_lines.contains("hers\n----\n   4\n(1 row)"),
        "A finds its own function, view, comment and default: {a_lines}"
    );
    assert!(
        b_lines.contains("hers\n----\n   0\n(1 row)"),
        "B found A's function, view, comment or default: {b_lines}"
    );
    assert!(
        b_lines.contains("free\n----\nt   \n(1 row)"),
        "A's lock is not B's: {b_lines}"
    );
    assert!(
        b_lines.contains("ERROR:  permission denied to terminate process")
            || b_lines.contains("must be a member of the role whose process is being terminated"),
        "{b_lines}"
    );
    assert!(
        a_lines.contains("step hold: SELECT pg_sleep(1.5);\npg_sleep"),
        "A played on: {a_lines}"
    );
    assert!(!a_lines.contains("from b"), "A heard B's NOTIFY: {a_lines}");
    assert_eq!(
        left_on(url, &format!("otherruna{version}")).await + left_on(url, &format!("otherrunb{version}")).await,
        0
    );
}

#[tokio::test]
async fn it_cannot_run_programs_on_the_server() {
    refused(
        "program",
        "CREATE TABLE t (x text); COPY t FROM PROGRAM 'id';",
        [
            "ERROR:  must be superuser or have privileges of the pg_execute_server_program role",
            "ERROR:  permission denied to COPY to or from an external program",
        ],
    )
    .await;
}

#[tokio::test]
async fn it_cannot_read_files_on_the_server() {
    refused(
        "readfile",
        "SELECT pg_read_file('/etc/passwd');",
        alike("ERROR:  permission denied for function pg_read_file"),
    )
    .await;
    refused(
        "copyfile",
        "CREATE TABLE t (x text); COPY t FROM '/etc/passwd';",
        [
            "ERROR:  must be superuser or have privileges of the pg_read_server_files role",
            "ERROR:  permission denied to COPY from a file",
        ],
    )
    .await;
    refused(
        "loimport",
        "SELECT lo_import('/etc/passwd');",
        alike("ERROR:  permission denied for function lo_import"),
    )
    .await;
    refused(
        "lsdir",
        "SELECT pg_ls_dir('.');",
        alike("ERROR:  permission denied for function pg_ls_dir"),
    )
    .await;
}

#[tokio::test]
async fn it_cannot_create_extensions() {
    refused(
        "hstore",
        "CREATE EXTENSION hstore;",
        alike("ERROR:  permission denied to create extension \"hstore\""),
    )
    .await;
    refused(
        "dblink",
        "CREATE EXTENSION dblink;",
        alike("ERROR:  permission denied to create extension \"dblink\""),
    )
    .await;
}

#[tokio::test]
async fn it_cannot_create_untrusted_language_functions() {
    refused(
        "langc",
        "CREATE FUNCTION f() RETURNS int LANGUAGE c AS 'x', 'y';",
        alike("ERROR:  permission denied for language c"),
    )
    .await;
    refused(
        "langinternal",
        "CREATE FUNCTION f() RETURNS int LANGUAGE internal AS 'int4in';",
        alike("ERROR:  permission denied for language internal"),
    )
    .await;
}

#[tokio::test]
async fn it_cannot_change_server_or_role_settings() {
    refused(
        "altersystem",
        "ALTER SYSTEM SET work_mem = '1GB';",
        alike("ERROR:  permission denied to set parameter \"work_mem\""),
    )
    .await;
    refused(
        "suset",
        "SET session_replication_role = replica;",
        alike("ERROR:  permission denied to set parameter \"session_replication_role\""),
    )
    .await;
    refused(
        "templimit",
        "SET temp_file_limit = -1;",
        alike("ERROR:  permission denied to set parameter \"temp_file_limit\""),
    )
    .await;
    refused(
        "superuser",
        "ALTER ROLE CURRENT_USER SUPERUSER;",
        [
            "ERROR:  must be superuser to alter superuser roles",
            "ERROR:  permission denied to alter role",
        ],
    )
    .await;
    refused(
        "otherrole",
        "ALTER ROLE postgres SET work_mem = '1GB';",
        [
            "ERROR:  must be superuser to alter superusers",
            "ERROR:  permission denied to alter role",
        ],
    )
    .await;
    refused(
        "setrole",
        "SET ROLE postgres;",
        alike("ERROR:  permission denied to set role \"postgres\""),
    )
    .await;
    refused(
        "sessionauth",
        "SET SESSION AUTHORIZATION postgres;",
        [
            "ERROR:  permission denied to set session authorization",
            "ERROR:  permission denied to set session authorization \"postgres\"",
        ],
    )
    .await;
    refused(
        "createdb",
        "CREATE DATABASE evil;",
        alike("ERROR:  permission denied to create database"),
    )
    .await;
    refused(
        "createrole",
        "CREATE ROLE evil;",
        alike("ERROR:  permission denied to create role"),
    )
    .await;
    refused(
        "racelabschema",
        "CREATE TABLE racelab.evil (k int);",
        alike("ERROR:  permission denied for schema racelab"),
    )
    .await;
    refused(
        "newschema",
        "CREATE SCHEMA evil;",
        alike("ERROR:  permission denied for database racelab_spec_"),
    )
    .await;
}

#[tokio::test]
async fn it_cannot_see_other_sessions_queries() {
    for (version, url) in both() {
        // A session of racelab's own user, its last query naming a marker.
        let client = admin_on(&url).await;
        client
            .simple_query("SELECT 'racelab-secret-marker'")
            .await
            .expect("the marker query");
        let (lines, ended) = play_on(
            &url,
            "peek",
            "session peek\nstep look { SELECT count(*) AS seen FROM pg_stat_activity WHERE query LIKE '%racelab-secret' || '-marker%'; }\n",
            Limits::default(),
        )
        .await;
        ended.unwrap_or_else(|e| panic!("on {version}: {e}\n{lines}"));
        assert!(lines.contains("seen\n----\n   0\n(1 row)"), "on {version}: {lines}");
        // The marker was there to be seen by a user allowed to.
        let seen: i64 = admin_on(&url)
            .await
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%racelab-secret' || '-marker%'",
                &[],
            )
            .await
            .expect("the check")
            .get(0);
        assert!(seen >= 1, "on {version}");
        assert_eq!(left_on(&url, "peek").await, 0, "on {version}");
    }
}

#[tokio::test]
async fn it_cannot_signal_other_backends() {
    let client = admin().await;
    let before: i64 = client
        .query_one("SELECT count(*) FROM pg_stat_activity WHERE usename = 'postgres'", &[])
        .await
        .expect("count")
        .get(0);
    refused(
        "terminate",
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'postgres';",
        [
            "ERROR:  must be a superuser to terminate superuser process",
            "ERROR:  permission denied to terminate process",
        ],
    )
    .await;
    refused(
        "cancel",
        "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE usename = 'postgres';",
        [
            "ERROR:  must be a superuser to cancel superuser query",
            "ERROR:  permission denied to cancel query",
        ],
    )
    .await;
    client
        .simple_query("SELECT 1")
        .await
        .expect("racelab's own session is alive");
    assert!(before >= 1);
}

#[tokio::test]
async fn it_cannot_keep_a_lock_or_a_session_past_its_run() {
    for (version, url) in both() {
        let (lines, ended) = play_on(
            &url,
            "keeplock",
            "session s\nstep lock { SELECT pg_advisory_lock(4242) IS NOT NULL AS locked; }\nstep open { BEGIN; CREATE TABLE held (k int); LOCK TABLE held; }\n",
            Limits::default(),
        )
        .await;
        ended.unwrap_or_else(|e| panic!("on {version}: {e}\n{lines}"));
        assert!(lines.contains("locked\n------\nt"), "on {version}: {lines}");
        assert_eq!(
            left_on(&url, "keeplock").await,
            0,
            "on {version}: the advisory lock, the open transaction and the session are gone"
        );
    }
    refused(
        "prepared",
        "BEGIN; PREPARE TRANSACTION 'keep';",
        alike("ERROR:  prepared transactions are disabled"),
    )
    .await;
}

#[tokio::test]
async fn a_step_that_never_ends_is_cancelled_at_the_step_limit() {
    let limits = Limits {
        step_wait: Duration::from_millis(600),
        ..Limits::default()
    };
    let spec = "session s\nstep forever { SET statement_timeout = 0; SELECT pg_sleep(60); }\n";
    for (version, url) in both() {
        let started = std::time::Instant::now();
        let (lines, ended) = play_on(&url, "forever", spec, limits).await;
        ended.expect("the run ends");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "on {version}: cancelled, not waited out"
        );
        assert!(
            lines.contains("isolationtester: canceling step forever after 0 seconds"),
            "on {version}: {lines}"
        );
        assert!(
            lines.contains("ERROR:  canceling statement due to user request"),
            "on {version}: {lines}"
        );
        assert_eq!(left_on(&url, "forever").await, 0, "on {version}");
    }
}

#[tokio::test]
async fn a_session_that_never_unblocks_is_cancelled_by_the_testers_rule() {
    let limits = Limits {
        step_wait: Duration::from_millis(500),
        ..Limits::default()
    };
    // b waits for a's lock, and b's commit comes before a's: b can never go on by itself.
    let spec = "setup { CREATE TABLE t (k int PRIMARY KEY); INSERT INTO t VALUES (1); }\nteardown { DROP TABLE t; }\n\
                session a setup { BEGIN; } step a_lock { SELECT k FROM t FOR UPDATE; } step a_commit { COMMIT; }\n\
                session b setup { BEGIN; } step b_lock { SELECT k FROM t FOR UPDATE; } step b_commit { COMMIT; }\n\
                permutation a_lock b_lock b_commit a_commit\n";
    for (version, url) in both() {
        let (lines, ended) = play_on(&url, "neverunblocks", spec, limits).await;
        ended.expect("the tester's rule ends the wait, and the permutation goes on");
        assert!(
            lines.contains(
                "step b_lock: SELECT k FROM t FOR UPDATE; <waiting ...>\nisolationtester: canceling step b_lock after 0 seconds\n\
                 step b_lock: <... completed>\nERROR:  canceling statement due to user request\nstep b_commit: COMMIT;"
            ),
            "on {version}: {lines}"
        );
        assert_eq!(left_on(&url, "neverunblocks").await, 0, "on {version}");
    }
}

#[tokio::test]
async fn temporary_files_are_limited() {
    // A sort of about 130 MB, spilled to disk at a work_mem of 64 kB.
    let spec = "session s\nstep sort { SET work_mem = '64kB'; SELECT sum(length(pad)) FROM (SELECT g, repeat('x', 100) || g AS pad FROM generate_series(1, 1000000) g ORDER BY g DESC) s; }\n";
    // 18 quotes the setting's name.
    let refusal: Refusal = [
        "ERROR:  temporary file size exceeds temp_file_limit (65536kB)",
        "ERROR:  temporary file size exceeds \"temp_file_limit\" (65536kB)",
    ];
    for ((version, url), refusal) in both().into_iter().zip(refusal) {
        let (lines, ended) = play_on(&url, "tempfiles", spec, Limits::default()).await;
        ended.expect("the run ends");
        assert!(lines.contains(refusal), "on {version}: {lines}");
        assert_eq!(left_on(&url, "tempfiles").await, 0, "on {version}");
    }
}

#[tokio::test]
async fn rows_kept_from_results_are_capped() {
    let lines = play(
        "manyrows",
        "session s\nstep many { SELECT g AS n FROM generate_series(1, 5000) g; }\n",
    )
    .await;
    assert!(
        lines.contains("… 4000 more rows not kept\n(5000 rows)"),
        "{}",
        &lines[lines.len().saturating_sub(300)..]
    );
    assert_eq!(lines.lines().filter(|l| l.trim().parse::<u32>().is_ok()).count(), 1000);
    assert_eq!(left_by("manyrows").await, 0);
}

#[tokio::test]
async fn sessions_steps_size_and_interleavings_are_capped_with_a_clear_message() {
    let limits = Limits::default();
    let nine: String = (1..=9)
        .map(|i| format!("session s{i} step a{i} {{ SELECT 1; }}\n"))
        .collect();
    let (_, ended) = play_with("ninesessions", &nine, limits).await;
    assert_eq!(
        ended.expect_err("refused").to_string(),
        "the spec has 9 sessions; at most 8 are played"
    );
    let big = format!("session s step a {{ SELECT '{}'; }}", "x".repeat(70_000));
    let (_, ended) = play_with("toobig", &big, limits).await;
    assert!(
        ended
            .expect_err("refused")
            .to_string()
            .contains("at most 65536 are played")
    );
    let steps: String = (1..=101).map(|i| format!("step x{i} {{ SELECT 1; }}\n")).collect();
    let (_, ended) = play_with("manysteps", &format!("session s\n{steps}"), limits).await;
    assert_eq!(
        ended.expect_err("refused").to_string(),
        "the spec has 101 steps; at most 100 are played"
    );
    let wide: String = ["a", "b", "c"]
        .iter()
        .map(|s| format!("session {s} step {s}1 {{ }} step {s}2 {{ }} step {s}3 {{ }}\n"))
        .collect();
    let (_, ended) = play_with("interleavings", &wide, limits).await;
    let message = ended.expect_err("refused").to_string();
    assert!(
        message.contains("this spec has 1680 interleavings, and at most 120 are played"),
        "{message}"
    );
    for name in ["ninesessions", "toobig", "manysteps", "interleavings"] {
        assert_eq!(left_by(name).await, 0, "a refused spec makes nothing");
    }
}
