//! Many PostgreSQL servers: a reader picks the version a run plays on, and runs of one version
//! spread over its servers within each one's budget. Against real servers: the machine's
//! PostgreSQL and PostgreSQL 18.6 (the tutorial's), and two private ones started for the crowd,
//! one of which is stopped mid-crowd and started again.

#![allow(clippy::too_many_lines, reason = "a test reads top to bottom as the story it checks")]

mod common;

use common::socket::{connect, receive_until, send};
use common::versions::{engine_with_18, inspector_18, postgres_18};
use common::{Finished, Leftovers, WRITE_SKEW_SERIALIZABLE, config, db_slots, follow, lines};
use racelab::embedded::postgres::{PrivatePostgres, find_binaries};
use racelab::engine::Engine;
use serde_json::json;
use shared::{Mode, Outcome};
use sqlx::{Connection, PgConnection};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[tokio::test]
async fn a_reader_picks_the_version_and_the_server_lists_each_one() {
    let _slots = db_slots(2).await;
    let engine = engine_with_18().await;
    let home = engine.default_postgres();
    let address = common::serve_engine(engine, config(), std::path::Path::new("no-such-dist")).await;

    let health = common::get_json(address, "/healthz").await;
    let majors: Vec<u64> = health["servers"]
        .as_array()
        .expect("/healthz lists the servers")
        .iter()
        .map(|s| s["major"].as_u64().expect("a major version"))
        .collect();
    assert_eq!(majors, vec![u64::from(home), 18]);
    assert!(
        health["servers"]
            .as_array()
            .is_some_and(|s| s.iter().all(|s| s["up"] == json!(true))),
        "{health}"
    );
    let listed = common::get_json(address, "/api/servers").await;
    assert_eq!(listed, health["servers"], "the catalog's list is /healthz's");
    assert_eq!(listed[1]["version"], json!("PostgreSQL 18.6"));

    let mut socket = connect(address).await;
    let first = format!("PostgreSQL {home}.");
    for (postgres, wanted) in [(Some("18"), "PostgreSQL 18."), (None, first.as_str())] {
        let mut frame = json!({"v": 1, "type": "start", "scenario": "isolation/write-skew", "variant": "serializable"});
        if let Some(postgres) = postgres {
            frame["postgres"] = json!(postgres);
        }
        send(&mut socket, frame).await;
        let frames = receive_until(&mut socket, |f| common::socket::is_type(f, "done")).await;
        let header = frames
            .iter()
            .find(|f| common::socket::event_type(f) == Some("run_started"))
            .expect("a run header");
        let server = header["event"]["server"].as_str().expect("the header names its server");
        assert!(server.starts_with(wanted), "asked {postgres:?}, played on {server}");
        let done = frames.last().expect("done");
        assert_eq!(done["outcome"]["status"], json!("completed"), "{done}");
    }

    for (asked, said) in [
        ("17", "no PostgreSQL 17 server here; runs play on PostgreSQL 15 or 18"),
        (
            "eighteen",
            "postgres must be a major version such as 18, not \"eighteen\"",
        ),
    ] {
        send(
            &mut socket,
            json!({"v": 1, "type": "start", "scenario": "isolation/write-skew", "variant": "serializable", "postgres": asked}),
        )
        .await;
        let refused = receive_until(&mut socket, |f| common::socket::is_type(f, "error")).await;
        let refused = refused.last().expect("an error");
        assert_eq!(refused["code"], json!("unknown_variant"), "{refused}");
        assert_eq!(refused["message"], json!(said));
    }
}

#[tokio::test]
async fn a_room_plays_on_the_version_its_trainer_picks() {
    let _slots = db_slots(2).await;
    let engine = engine_with_18().await;
    let first = format!("PostgreSQL {}.", engine.default_postgres());
    let address = common::serve_engine(engine.clone(), config(), std::path::Path::new("no-such-dist")).await;
    let (room, token) = common::open_room(address).await;
    let mut trainer = connect(address).await;
    let mut follower = connect(address).await;
    for (socket, token) in [(&mut trainer, Some(&token)), (&mut follower, None)] {
        let mut join = json!({"v": 1, "type": "join", "room": room});
        if let Some(token) = token {
            join["token"] = json!(token);
        }
        send(socket, join).await;
        receive_until(socket, |f| common::socket::is_type(f, "room")).await;
    }
    let header = |frames: &[serde_json::Value]| {
        frames
            .iter()
            .find(|f| common::socket::event_type(f) == Some("run_started"))
            .and_then(|f| f["event"]["server"].as_str().map(str::to_owned))
    };
    // The trainer picks 18, then the first server's version; a version that is not a number is
    // refused, as a reader's is.
    for (postgres, wanted) in [(json!("18"), "PostgreSQL 18."), (json!(null), first.as_str())] {
        let mut start = json!({"v": 1, "type": "start", "scenario": "isolation/write-skew", "variant": "serializable",
                               "room": room, "token": token});
        if !postgres.is_null() {
            start["postgres"] = postgres.clone();
        }
        send(&mut trainer, start).await;
        let seen = receive_until(&mut follower, |f| common::socket::is_type(f, "done")).await;
        let server = header(&seen).expect("the follower sees the run's header");
        assert!(
            server.starts_with(wanted),
            "the trainer picked {postgres}, the room's run played on {server}"
        );
        let done = seen.last().expect("done");
        assert_eq!(done["outcome"]["status"], json!("completed"), "{done}");
        receive_until(&mut trainer, |f| common::socket::is_type(f, "done")).await;
    }
    send(
        &mut trainer,
        json!({"v": 1, "type": "start", "scenario": "isolation/write-skew", "variant": "serializable",
               "room": room, "token": token, "postgres": "eighteen"}),
    )
    .await;
    let refused = receive_until(&mut trainer, |f| common::socket::is_type(f, "error")).await;
    let refused = refused.last().expect("an error");
    assert_eq!(refused["code"], json!("unknown_variant"), "{refused}");
    // Closed as its trainer closes it: nothing of the room is left in Redis.
    common::close_room(address, &room, &token).await;
    engine.close(Duration::from_secs(5), Duration::from_secs(10)).await;
}

#[tokio::test]
async fn racelab_run_plays_on_the_version_asked_for() {
    let _slots = db_slots(2).await;
    // Told where PostgreSQL 18 is, as a user would (`--servers`); `--postgres 18` picks it.
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_racelab"))
        .args(["run", "isolation/write-skew", "--variant", "serializable", "--json"])
        .args(["--servers", &postgres_18(), "--postgres", "18"])
        .env("RUST_LOG", "warn")
        .output()
        .await
        .expect("racelab run");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let header: serde_json::Value =
        serde_json::from_slice(output.stdout.split(|b| *b == b'\n').next().expect("a first line")).expect("JSON");
    assert_eq!(header["type"], json!("run_started"));
    assert_eq!(header["server"], json!("PostgreSQL 18.6"));
    // Nothing of it is left on 18.
    let run_id = header["run_id"].as_str().expect("a run id");
    assert_eq!(
        common::wait_until_clean_on(inspector_18().await, run_id, false).await,
        Leftovers::NONE
    );
}

/// Two private PostgreSQL servers of the machine's version, in a directory of their own.
struct TwoServers {
    bin: PathBuf,
    dir: PathBuf,
    a: PrivatePostgres,
    b: Option<PrivatePostgres>,
}

impl TwoServers {
    async fn start() -> TwoServers {
        let bin = find_binaries().expect("PostgreSQL's binaries (the machine's)");
        let dir = std::env::temp_dir().join(format!("racelab-servers-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (dir_a, dir_b) = (dir.join("a"), dir.join("b"));
        for d in [&dir_a, &dir_b] {
            // Entered by the postgres user when racelab runs as root: 0755 from the umask.
            std::fs::create_dir_all(d).expect("a directory for a private server");
        }
        let (a, b) = tokio::join!(
            racelab::embedded::postgres::start(&bin, &dir_a),
            racelab::embedded::postgres::start(&bin, &dir_b)
        );
        TwoServers {
            bin,
            dir,
            a: a.expect("server a starts"),
            b: Some(b.expect("server b starts")),
        }
    }

    /// Stops both (b if it runs) and removes their data.
    async fn stop(self) {
        self.a.process.stop().await;
        if let Some(b) = self.b {
            b.process.stop().await;
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }

    fn b_port(&self) -> u16 {
        self.b.as_ref().map_or(0, |b| b.port)
    }
}

/// What a sampler saw on each server while a crowd played.
#[derive(Default)]
struct Seen {
    /// The most connections leased at once, by server port.
    most_leased: BTreeMap<u16, i64>,
    /// The runs seen holding a session, by server port.
    runs: BTreeMap<u16, BTreeSet<String>>,
}

/// Looks at each server every 20 ms until dropped: its leased connections, and whose sessions
/// it holds.
fn sample(ports: Vec<u16>, seen: Arc<Mutex<Seen>>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut conns: Vec<(u16, Option<PgConnection>)> = ports.into_iter().map(|p| (p, None)).collect();
        loop {
            for (port, conn) in &mut conns {
                if conn.is_none() {
                    *conn = PgConnection::connect(&format!("postgres://postgres@127.0.0.1:{port}/racelab"))
                        .await
                        .ok();
                }
                let Some(c) = conn.as_mut() else { continue };
                let looked: Result<(i64, Vec<String>), sqlx::Error> = async {
                    let leased: i64 =
                        sqlx::query_scalar("SELECT coalesce(sum(connections), 0)::bigint FROM connection_leases")
                            .fetch_one(&mut *c)
                            .await?;
                    let runs: Vec<String> = sqlx::query_scalar(
                        "SELECT DISTINCT split_part(application_name, '/', 2) FROM pg_stat_activity
                          WHERE application_name LIKE 'racelab/%/%' AND application_name NOT LIKE 'racelab/server%'",
                    )
                    .fetch_all(&mut *c)
                    .await?;
                    Ok((leased, runs))
                }
                .await;
                match looked {
                    Ok((leased, runs)) => {
                        let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
                        let most = seen.most_leased.entry(*port).or_default();
                        *most = (*most).max(leased);
                        seen.runs.entry(*port).or_default().extend(runs);
                    }
                    Err(_) => *conn = None,
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
}

/// Starts `n` write skews, alternating between the replicas; returns the runs' handles.
async fn crowd(replicas: &[Arc<Engine>], n: usize) -> Vec<racelab::engine::RunHandle> {
    let def = racelab::labs::find("isolation/write-skew").expect("write skew");
    let mut handles = Vec::new();
    for i in 0..n {
        let replica = &replicas[i % replicas.len()];
        handles.push(
            replica
                .start_on(def, "serializable", Mode::Auto, None)
                .await
                .expect("a start"),
        );
    }
    handles
}

/// The runs followed to their ends.
async fn ends(handles: Vec<racelab::engine::RunHandle>) -> Vec<Finished> {
    futures_util::future::join_all(handles.into_iter().map(follow)).await
}

/// A crowd of `n` on `replicas`, every run correct: the runs' ids, and how many of them the
/// sampler saw on the server at `port`.
async fn correct_crowd_seen_on(
    replicas: &[Arc<Engine>],
    n: usize,
    seen: &Mutex<Seen>,
    port: u16,
) -> (Vec<String>, usize) {
    seen.lock().unwrap_or_else(|p| p.into_inner()).runs.clear();
    let runs = ends(crowd(replicas, n).await).await;
    assert!(
        runs.iter().all(correct),
        "{:?}",
        runs.iter().map(|r| &r.outcome).collect::<Vec<_>>()
    );
    // By their sandboxes' ids, which their sessions are named by.
    let ids: Vec<String> = runs.iter().map(|r| common::named(&r.run_id)).collect();
    let on_port = seen
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .runs
        .get(&port)
        .map_or(0, |r| r.iter().filter(|id| ids.contains(id)).count());
    (ids, on_port)
}

fn correct(run: &Finished) -> bool {
    run.outcome == Outcome::Completed && run.transcript() == lines(WRITE_SKEW_SERIALIZABLE)
}

/// Waits (up to `within`) until none of `runs` left anything on the server at `port`.
async fn clean_on(port: u16, runs: &[String], within: Duration) -> BTreeMap<String, Leftovers> {
    let url = format!("postgres://postgres@127.0.0.1:{port}/racelab");
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let left = match PgConnection::connect(&url).await {
            Ok(mut conn) => common::leftovers_in_postgres_by_run(&mut conn, runs).await,
            Err(_) => BTreeMap::from([(String::from("(server)"), Leftovers::NONE)]),
        };
        if left.is_empty() || tokio::time::Instant::now() >= deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_crowd_spreads_over_two_servers_and_one_that_stops_is_passed_over_until_back() {
    let _slots = db_slots(6).await;
    let mut servers = TwoServers::start().await;
    let (a, b) = (servers.a.port, servers.b_port());
    const BUDGET: u32 = 15;
    let mut config = config();
    config.database_url = servers.a.url();
    config.servers = vec![servers.b.as_ref().expect("b").url()];
    config.run_connections = Some(BUDGET);
    // Two replicas on the same two servers: they share each server's budget through its leases.
    let (one, two) = tokio::join!(
        racelab::db::connect_engine(&config),
        racelab::db::connect_engine(&config)
    );
    let replicas = vec![Arc::new(one.expect("replica one")), Arc::new(two.expect("replica two"))];
    let seen = Arc::new(Mutex::new(Seen::default()));
    let sampler = sample(vec![a, b], seen.clone());

    // A crowd of 200: every run correct, spread over both servers, within each one's budget.
    let runs = ends(crowd(&replicas, 200).await).await;
    let wrong: Vec<_> = runs
        .iter()
        .filter(|r| !correct(r))
        .map(|r| (&r.run_id, &r.outcome))
        .collect();
    assert!(wrong.is_empty(), "{} of 200 runs went wrong: {wrong:?}", wrong.len());
    // By their sandboxes' ids, which their sessions are named by.
    let ids: Vec<String> = runs.iter().map(|r| common::named(&r.run_id)).collect();
    let mut every = ids.clone();
    {
        let seen = seen.lock().unwrap_or_else(|p| p.into_inner());
        for port in [a, b] {
            let most = seen.most_leased.get(&port).copied().unwrap_or(0);
            assert!(
                most > 0 && most <= i64::from(BUDGET),
                "server {port}: at most {most} connections leased at once (budget {BUDGET})"
            );
            let played = seen
                .runs
                .get(&port)
                .map_or(0, |r| r.iter().filter(|id| ids.contains(id)).count());
            assert!(
                played >= 20,
                "server {port} played {played} of the 200 runs: {seen:?}",
                seen = seen.most_leased
            );
        }
        let on_both = seen.runs[&a].intersection(&seen.runs[&b]).count();
        assert_eq!(on_both, 0, "a run's sessions are all on one server");
    }
    for port in [a, b] {
        assert_eq!(
            clean_on(port, &ids, Duration::from_secs(15)).await,
            BTreeMap::new(),
            "left on {port}"
        );
    }

    // Server b stops while runs play on it: they fail naming it, the others complete.
    seen.lock().unwrap_or_else(|p| p.into_inner()).runs.clear();
    let handles = crowd(&replicas, 60).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while seen
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .runs
        .get(&b)
        .is_none_or(BTreeSet::is_empty)
    {
        assert!(tokio::time::Instant::now() < deadline, "no run reached server b");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let stopped = servers.b.take().expect("b runs").stop_keeping_data().await;
    let runs = ends(handles).await;
    every.extend(runs.iter().map(|r| r.run_id.clone()));
    let (failed, completed): (Vec<&Finished>, Vec<&Finished>) =
        runs.iter().partition(|r| r.outcome != Outcome::Completed);
    assert!(!failed.is_empty(), "runs on the stopped server failed");
    let name = format!("127.0.0.1:{b}");
    for run in &failed {
        let Outcome::Failed { message } = &run.outcome else {
            panic!("{:?}", run.outcome);
        };
        assert!(
            message.contains(&name),
            "a failed run names its server {name}: {message}"
        );
    }
    assert!(completed.iter().all(|r| correct(r)), "the others complete correctly");
    assert!(completed.len() >= 20, "{} of 60 completed", completed.len());

    // New runs go to server a while b is down.
    let runs = ends(crowd(&replicas, 20).await).await;
    every.extend(runs.iter().map(|r| r.run_id.clone()));
    assert!(
        runs.iter().all(correct),
        "{:?}",
        runs.iter().map(|r| &r.outcome).collect::<Vec<_>>()
    );

    // b comes back and rejoins: the servers say so, and runs reach it again.
    servers.b = Some(stopped.start(&servers.bin).await.expect("b starts again"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let states = replicas[0].servers().await;
        if states.iter().all(|s| s.up) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "b is seen up again: {states:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (back, on_b) = correct_crowd_seen_on(&replicas, 40, &seen, b).await;
    every.extend(back);
    assert!(on_b > 0, "runs reach server b again once it is back");
    sampler.abort();

    // Nothing is left on either, the failed runs' sandboxes included (removed once b was back).
    for port in [a, b] {
        assert_eq!(
            clean_on(port, &every, Duration::from_secs(40)).await,
            BTreeMap::new(),
            "left on {port}"
        );
    }
    for replica in &replicas {
        replica.close(Duration::from_secs(5), Duration::from_secs(10)).await;
    }
    drop(replicas);
    servers.stop().await;
}

#[tokio::test]
async fn a_server_down_when_racelab_starts_joins_when_it_answers() {
    let _slots = db_slots(4).await;
    let mut servers = TwoServers::start().await;
    let (a, b) = (servers.a.port, servers.b_port());
    let stopped = servers.b.take().expect("b runs").stop_keeping_data().await;
    let mut config = config();
    config.database_url = servers.a.url();
    config.servers = vec![format!("postgres://postgres@127.0.0.1:{b}/racelab")];
    let engine = Arc::new(
        racelab::db::connect_engine(&config)
            .await
            .expect("racelab starts without b"),
    );
    let address = common::serve_engine(engine.clone(), common::config(), std::path::Path::new("no-such-dist")).await;

    // b waits outside the rotation: /healthz shows it down and why, the picker does not offer it.
    let health = common::get_json(address, "/healthz").await;
    let listed = health["servers"].as_array().expect("/healthz lists the servers");
    assert_eq!(listed.len(), 2, "{health}");
    assert_eq!(listed[0]["name"], json!(format!("127.0.0.1:{a}")));
    assert_eq!(listed[0]["up"], json!(true));
    assert_eq!(listed[1]["name"], json!(format!("127.0.0.1:{b}")));
    assert_eq!(listed[1]["up"], json!(false));
    let why = listed[1]["detail"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("not reached since racelab started: cannot reach PostgreSQL"),
        "{why}"
    );
    assert_eq!(
        health["postgres"]["up"],
        json!(true),
        "the home server answers: {health}"
    );
    let picker = common::get_json(address, "/api/servers").await;
    assert_eq!(picker.as_array().map(Vec::len), Some(1), "{picker}");

    // Runs play on a meanwhile.
    let seen = Arc::new(Mutex::new(Seen::default()));
    let sampler = sample(vec![a, b], seen.clone());
    let first = ends(crowd(std::slice::from_ref(&engine), 6).await).await;
    assert!(
        first.iter().all(correct),
        "{:?}",
        first.iter().map(|r| &r.outcome).collect::<Vec<_>>()
    );
    let mut every: Vec<String> = first.iter().map(|r| r.run_id.clone()).collect();

    // b starts: the next asks reach it, and it joins with its own budget.
    servers.b = Some(stopped.start(&servers.bin).await.expect("b starts"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let states = engine.servers().await;
        if states.len() == 2 && states.iter().all(|s| s.up) {
            assert_eq!(states[1].name, format!("127.0.0.1:{b}"));
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "b joins: {states:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(engine.waiting_servers().is_empty());
    let health = common::get_json(address, "/healthz").await;
    assert!(
        health["servers"]
            .as_array()
            .is_some_and(|s| s.len() == 2 && s.iter().all(|s| s["up"] == json!(true))),
        "{health}"
    );

    // Runs now spread over both.
    let (ids, on_b) = correct_crowd_seen_on(std::slice::from_ref(&engine), 40, &seen, b).await;
    every.extend(ids);
    assert!(on_b > 0, "runs reach b once it has joined");
    sampler.abort();

    engine.close(Duration::from_secs(5), Duration::from_secs(10)).await;
    for port in [a, b] {
        assert_eq!(
            clean_on(port, &every, Duration::from_secs(20)).await,
            BTreeMap::new(),
            "left on {port}"
        );
    }
    drop(engine);
    servers.stop().await;
}

#[tokio::test]
async fn the_first_spec_runs_on_a_fresh_server_all_play_at_once() {
    // A server no spec ever ran on: the atlas's 39 runs on a new version start this way, each
    // needing the template that run databases are copied from, made once, by one of them.
    let _slots = db_slots(4).await;
    let bin = find_binaries().expect("PostgreSQL's binaries (the machine's)");
    let dir = std::env::temp_dir().join(format!("racelab-fresh-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a directory for a private server");
    let fresh = racelab::embedded::postgres::start(&bin, &dir)
        .await
        .expect("a fresh server");
    let url = fresh.url();
    let limits = racelab::specs::Limits::command_line(Duration::from_secs(10));
    let spec = racelab::specs::read(
        "setup { CREATE TABLE t (k int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 10); }
         session a
         step r { SELECT v FROM t WHERE k = 1; }",
        &limits,
    )
    .expect("a spec");
    let played = futures_util::future::join_all((0..20).map(|_| {
        let (url, spec, limits) = (url.clone(), &spec, &limits);
        async move {
            let run_id = racelab::sandbox::new_run_id();
            racelab::specs::play(&url, &run_id, spec, limits, Arc::new(racelab::specs::Silent)).await
        }
    }))
    .await;
    let failed: Vec<String> = played
        .iter()
        .filter_map(|p| p.as_ref().err().map(ToString::to_string))
        .collect();
    assert!(failed.is_empty(), "{} of 20 failed: {failed:?}", failed.len());
    // And the databases they played in are closed to PUBLIC.
    let mut conn = PgConnection::connect(&url.replace("/racelab", "/postgres"))
        .await
        .expect("the fresh server");
    let open: bool = sqlx::query_scalar(
        "SELECT bool_or(has_database_privilege('public', datname, 'CONNECT')) FROM pg_database \
         WHERE datname LIKE 'racelab\\_spec\\_%'",
    )
    .fetch_one(&mut conn)
    .await
    .expect("the run databases");
    assert!(!open, "PUBLIC may not connect to the specs database");
    drop(conn);
    fresh.process.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}
