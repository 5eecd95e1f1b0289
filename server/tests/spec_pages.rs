//! Readers' specs over HTTP and the websocket, as the /write page uses them: saved (immutable,
//! named by content), refused with where and why, played as `spec/<id>` one permutation at a time
//! (transcript, ledger before and after, verdict from the checks), every permutation for the
//! matrix, stepped, cancelled, stored for a permalink; and nothing left behind.

mod common;

use common::socket::{self, event_type, is_type, receive_until, send};
use common::{db_slot, get, get_json};
use serde_json::{Value, json};
use std::net::SocketAddr;

const WRITE_SKEW: &str = include_str!("specs/write-skew.spec");

/// Two sessions at SERIALIZABLE, each leaving only if the other is on call: six interleavings.
const GUARDED: &str = "# Guarded leaves at SERIALIZABLE\n\
# check: SELECT count(*) >= 1 FROM doctors WHERE on_call\n\
setup { CREATE TABLE doctors (name text PRIMARY KEY, on_call bool NOT NULL); INSERT INTO doctors VALUES ('alice', true), ('bob', true); }\n\
teardown { DROP TABLE doctors; }\n\
session alice\n\
setup { BEGIN ISOLATION LEVEL SERIALIZABLE; }\n\
step a_leave { UPDATE doctors SET on_call = false WHERE name = 'alice' AND (SELECT count(*) FROM doctors WHERE on_call) >= 2; }\n\
step a_commit { COMMIT; }\n\
session bob\n\
setup { BEGIN ISOLATION LEVEL SERIALIZABLE; }\n\
step b_leave { UPDATE doctors SET on_call = false WHERE name = 'bob' AND (SELECT count(*) FROM doctors WHERE on_call) >= 2; }\n\
step b_commit { COMMIT; }\n";

async fn save(address: SocketAddr, text: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("http://{address}/api/specs"))
        .body(text.to_owned())
        .send()
        .await
        .expect("POST /api/specs");
    let status = response.status().as_u16();
    let body = response.text().await.expect("a body");
    (
        status,
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}")),
    )
}

/// Plays `spec/<id>` at `variant` to its end; every frame.
async fn play(address: SocketAddr, id: &str, variant: &str) -> Vec<Value> {
    let mut ws = socket::connect(address).await;
    socket::start(&mut ws, &format!("spec/{id}"), variant, "auto").await;
    receive_until(&mut ws, |f| is_type(f, "done")).await
}

fn events<'a>(frames: &'a [Value], kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    frames
        .iter()
        .filter(move |f| event_type(f) == Some(kind))
        .map(|f| &f["event"])
}

fn said(frames: &[Value]) -> String {
    events(frames, "say")
        .map(|e| e["line"].as_str().unwrap_or_default().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// What run `run_id` (a spec's, played by this process's engine) left in its database.
async fn left_by(run_id: &str) -> i64 {
    let url = std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/racelab".to_owned());
    common::spec_runs::left_by_spec_run(&url, &common::named(run_id)).await
}

#[tokio::test]
async fn a_spec_is_saved_once_by_its_content_and_read_back() {
    let _slot = db_slot().await;
    let address = common::server().await;
    let (status, saved) = save(address, WRITE_SKEW).await;
    assert_eq!(status, 201, "{saved}");
    let id = saved["id"].as_str().expect("an id").to_owned();
    assert_eq!(id.len(), 16);
    let scenario = &saved["scenario"]["scenario"];
    assert_eq!(scenario["id"], format!("spec/{id}"));
    assert_eq!(
        scenario["title"],
        "Two on-call doctors each check that the other is still on call, then leave."
    );
    let variants: Vec<&str> = scenario["variants"]
        .as_array()
        .expect("variants")
        .iter()
        .filter_map(|v| v["id"].as_str())
        .collect();
    assert_eq!(variants, ["p1", "p2", "every"]);
    assert_eq!(
        scenario["variants"][0]["description"],
        "a_count b_count a_leave b_leave a_commit b_commit"
    );

    let (again, resaved) = save(address, WRITE_SKEW).await;
    assert_eq!(
        (again, resaved["id"].as_str()),
        (201, Some(id.as_str())),
        "the same text is the same spec"
    );
    let read = get_json(address, &format!("/api/specs/{id}")).await;
    assert_eq!(read["text"], WRITE_SKEW);
    let (status, _, body) = get(address, "/api/specs/0000000000000000").await;
    assert_eq!(status, 404, "{body}");
    // Its page, and a page for a spec nobody saved: the app's page (which says so) under a 404.
    let (status, _, _) = get(address, &format!("/s/{id}")).await;
    assert_eq!(status, 200, "the saved spec's page");
    let (status, _, _) = get(address, "/s/0000000000000000").await;
    assert_eq!(status, 404, "no such spec");
}

#[tokio::test]
async fn a_spec_that_does_not_read_is_refused_with_where_and_why_and_not_saved() {
    let _slot = db_slot().await;
    let address = common::server().await;
    let bad = "setup { CREATE TABLE t (k int); }\n\nsession s\nstep { SELECT 1; }\n";
    let (status, refused) = save(address, bad).await;
    assert_eq!(status, 400, "{refused}");
    let message = refused["error"].as_str().unwrap_or_default();
    assert!(message.contains("line 4, column 6: expected a step name"), "{refused}");
    let id = racelab::store::spec_id(bad);
    let (status, _, _) = get(address, &format!("/api/specs/{id}")).await;
    assert_eq!(status, 404, "nothing saved");

    // A body past the route's 96 KB, and one that is not UTF-8: refused in racelab's JSON shape.
    let (status, refused) = save(address, &"-- a comment\n".repeat(10_000)).await;
    assert_eq!(status, 413, "{refused}");
    assert!(refused["error"].as_str().is_some_and(|e| !e.is_empty()), "{refused}");
    let response = reqwest::Client::new()
        .post(format!("http://{address}/api/specs"))
        .body(vec![b's', 0xff, 0xfe])
        .send()
        .await
        .expect("POST /api/specs");
    assert_eq!(response.status().as_u16(), 400);
    let body = response.text().await.expect("a body");
    let refused: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert!(
        refused["error"].as_str().is_some_and(|e| e.contains("UTF-8")),
        "{refused}"
    );

    let wide: String = ["a", "b", "c"]
        .iter()
        .map(|s| format!("session {s} step {s}1 {{ }} step {s}2 {{ }} step {s}3 {{ }}\n"))
        .collect();
    let (status, refused) = save(address, &wide).await;
    assert_eq!(status, 400);
    assert!(
        refused["error"]
            .as_str()
            .unwrap_or_default()
            .contains("1680 interleavings"),
        "{refused}"
    );

    // A NUL byte (PostgreSQL takes none in text) and too many listed steps: 400, naming what
    // was counted, not a 500 from the store.
    let (status, refused) = save(address, "session s\nstep a { SELECT '\0'; }\n").await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap_or_default()
            .contains("NUL byte at line 2, column 18"),
        "{refused}"
    );
    let listed = format!("session s\nstep a {{ SELECT 1; }}\npermutation {}\n", "a ".repeat(2001));
    let (status, refused) = save(address, &listed).await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap_or_default()
            .contains("name 2001 steps in all"),
        "{refused}"
    );

    let mut ws = socket::connect(address).await;
    send(
        &mut ws,
        json!({"v": 1, "type": "start", "scenario": "spec/0000000000000000", "variant": "p1"}),
    )
    .await;
    let answer = receive_until(&mut ws, |f| is_type(f, "error")).await;
    let error = answer.last().expect("an error frame");
    assert_eq!(error["code"], "unknown_scenario", "{error}");
}

#[tokio::test]
async fn one_permutation_plays_with_its_transcript_ledger_and_verdict() {
    let _slot = db_slot().await;
    let address = common::server().await;
    let (_, saved) = save(address, WRITE_SKEW).await;
    let id = saved["id"].as_str().expect("an id").to_owned();
    let frames = play(address, &id, "p1").await;
    let done = frames.last().expect("done");
    assert_eq!(done["outcome"]["status"], "completed", "{done}");
    let run_id = done["run_id"].as_str().expect("a run id").to_owned();

    // The isolation tester's output for the first permutation, line for line.
    let transcript = said(&frames);
    assert!(
        transcript.starts_with("Parsed test spec with 2 sessions\n\nstarting permutation: a_count b_count a_leave b_leave a_commit b_commit\nstep a_count: SELECT count(*) FROM doctors WHERE on_call;\ncount\n-----\n    2\n(1 row)\n"),
        "{transcript}"
    );
    assert!(transcript.contains("step b_commit: COMMIT;"), "{transcript}");
    assert!(
        !transcript.contains("starting permutation: a_count a_leave"),
        "only the first permutation"
    );

    // Swimlanes: a step per statement, on the session that ran it.
    let steps: Vec<&str> = events(&frames, "step").filter_map(|e| e["actor"].as_str()).collect();
    assert_eq!(steps, ["alice", "bob", "alice", "bob", "alice", "bob"]);

    // The ledger: the table the setup made, before (both on call, from the setup's INSERT) and
    // after (both left).
    let ledgers: Vec<&Value> = events(&frames, "ledger").collect();
    assert_eq!(ledgers.len(), 2);
    assert_eq!(ledgers[0]["moment"], "before");
    let rows = |l: &Value| l["ledger"]["tables"][0]["rows"].clone();
    assert_eq!(ledgers[0]["ledger"]["tables"][0]["name"], "doctors");
    // Values with their types: booleans as booleans.
    assert_eq!(rows(ledgers[0]), json!([["alice", true], ["bob", true]]));
    assert_eq!(rows(ledgers[1]), json!([["alice", false], ["bob", false]]));

    // The verdict: the spec's check, broken.
    let verdict = &events(&frames, "verdict").next().expect("a verdict")["verdict"];
    assert_eq!(verdict["kind"], "reproduced", "{verdict}");
    assert_eq!(
        verdict["checks"][0]["rule"],
        "SELECT count(*) >= 1 FROM doctors WHERE on_call"
    );
    assert_eq!(verdict["checks"][0]["holds"], false);

    // Stored for its permalink, and nothing left.
    let stored = get_json(address, &format!("/api/runs/{run_id}")).await;
    assert_eq!(stored["scenario"], format!("spec/{id}"));
    assert_eq!(left_by(&run_id).await, 0);
}

#[tokio::test]
async fn every_permutation_sums_each_up_for_the_matrix() {
    let _slot = db_slot().await;
    let address = common::server().await;
    let (status, saved) = save(address, GUARDED).await;
    assert_eq!(status, 201, "{saved}");
    let id = saved["id"].as_str().expect("an id").to_owned();
    let frames = play(address, &id, "every").await;
    let done = frames.last().expect("done");
    assert_eq!(done["outcome"]["status"], "completed", "{done}");
    let rows: Vec<&Value> = events(&frames, "permutation").collect();
    assert_eq!(rows.len(), 6, "two sessions of two steps: six interleavings");
    let indexes: Vec<u64> = rows.iter().filter_map(|r| r["index"].as_u64()).collect();
    assert_eq!(indexes, [0, 1, 2, 3, 4, 5]);
    // SERIALIZABLE keeps the rule in every order: the checks hold everywhere.
    for row in &rows {
        assert!(
            row["outcome"].as_str().unwrap_or_default().ends_with("checks held"),
            "{row}"
        );
    }
    // One after the other (the first and the last order), nothing fails; interleaved, a
    // serialization failure cancels one of them.
    assert_eq!(rows[0]["outcome"], "no errors · checks held");
    assert_eq!(rows[5]["outcome"], "no errors · checks held");
    let steps: Vec<&str> = rows[0]["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(steps, ["a_leave", "a_commit", "b_leave", "b_commit"]);
    let failed = rows
        .iter()
        .filter(|r| r["outcome"].as_str().unwrap_or_default().contains("40001"))
        .count();
    assert!(failed >= 1, "{rows:?}");
    let failing_step = rows
        .iter()
        .flat_map(|r| r["steps"].as_array().into_iter().flatten())
        .find(|s| s["error"] == "40001")
        .expect("a step that failed with 40001");
    assert!(failing_step["session"] == "alice" || failing_step["session"] == "bob");
    let run_id = done["run_id"].as_str().unwrap_or_default();
    assert_eq!(left_by(run_id).await, 0);

    // Its picture is the matrix: a line per interleaving, and the outcomes grouped where a
    // run's verdict goes (every check held, so the rules held), not "no verdict".
    let (status, kind, svg) = get(address, &format!("/runs/{run_id}.svg")).await;
    assert_eq!((status, kind.starts_with("image/svg+xml")), (200, true), "{kind}");
    assert_eq!(svg.matches("class=\"permutation\"").count(), 6, "{svg}");
    assert!(svg.contains("1. a_leave · a_commit · b_leave · b_commit"), "{svg}");
    assert!(svg.contains("class=\"verdict prevented\""), "{svg}");
    assert!(
        svg.contains("in 6 permutations") && !svg.contains("no verdict"),
        "{svg}"
    );
    let (status, kind, _) = get(address, &format!("/runs/{run_id}.png")).await;
    assert_eq!((status, kind.as_str()), (200, "image/png"));
}

#[tokio::test]
async fn a_spec_steps_one_statement_at_a_time_and_a_cancel_leaves_nothing() {
    let _slot = db_slot().await;
    let address = common::server().await;
    let (_, saved) = save(address, WRITE_SKEW).await;
    let id = saved["id"].as_str().expect("an id").to_owned();

    let mut ws = socket::connect(address).await;
    let run_id = socket::start(&mut ws, &format!("spec/{id}"), "p1", "step").await;
    let mut paused = 0;
    loop {
        let frames = receive_until(&mut ws, |f| event_type(f) == Some("paused") || is_type(f, "done")).await;
        let last = frames.last().expect("a frame");
        if is_type(last, "done") {
            assert_eq!(last["outcome"]["status"], "completed", "{last}");
            break;
        }
        paused += 1;
        send(&mut ws, json!({"v": 1, "type": "next"})).await;
    }
    assert_eq!(paused, 6, "one pause before each of the six steps");
    assert_eq!(left_by(&run_id).await, 0);

    // Cancelled while alice's transaction is open: the role, its sessions and schema go.
    let mut ws = socket::connect(address).await;
    let run_id = socket::start(&mut ws, &format!("spec/{id}"), "p1", "step").await;
    for _ in 0..3 {
        receive_until(&mut ws, |f| event_type(f) == Some("paused")).await;
        send(&mut ws, json!({"v": 1, "type": "next"})).await;
    }
    receive_until(&mut ws, |f| event_type(f) == Some("paused")).await;
    send(&mut ws, json!({"v": 1, "type": "cancel"})).await;
    let done = receive_until(&mut ws, |f| is_type(f, "done")).await;
    assert_eq!(done.last().expect("done")["outcome"]["status"], "cancelled");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while left_by(&run_id).await > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(left_by(&run_id).await, 0, "a cancelled run leaves nothing");
}

#[tokio::test]
async fn a_lab_run_opens_as_a_spec_that_plays_the_same_race() {
    let _slot = db_slot().await;
    let address = common::server().await;
    let mut ws = socket::connect(address).await;
    socket::start(&mut ws, "isolation/write-skew", "repeatable-read", "auto").await;
    let frames = receive_until(&mut ws, |f| is_type(f, "done")).await;
    let run_id = frames
        .last()
        .and_then(|f| f["run_id"].as_str())
        .expect("a run id")
        .to_owned();

    let (status, _, body) = get(address, &format!("/api/runs/{run_id}/spec")).await;
    assert_eq!(status, 200, "{body}");
    let spec: Value = serde_json::from_str(&body).expect("JSON");
    let text = spec["text"].as_str().expect("the spec's text");
    assert!(
        text.starts_with("# Write skew: two managers overspend a budget, REPEATABLE READ\n"),
        "{text}"
    );
    assert!(
        text.contains("session alice\nstep alice1 { BEGIN ISOLATION LEVEL REPEATABLE READ }"),
        "{text}"
    );
    let (status, saved) = save(address, text).await;
    assert_eq!(status, 201, "{saved}");
    let id = saved["id"].as_str().expect("an id");
    let replayed = play(address, id, "p1").await;
    assert_eq!(replayed.last().expect("done")["outcome"]["status"], "completed");
    // The lab's ledger: both managers' $3,000, $6,000 on a $5,000 budget, as the lab's run had.
    let after = events(&replayed, "ledger")
        .find(|l| l["moment"] == "after")
        .expect("the ledger after");
    let expenses = after["ledger"]["tables"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "expenses"))
        .expect("the expenses table");
    let amounts: Vec<i64> = expenses["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|r| r[2].as_i64())
        .collect();
    assert_eq!(amounts, [3000, 3000], "{expenses}");

    // A run of another lab's services is not plain SQL.
    let (status, _, body) = get(address, "/api/runs/no-such-run/spec").await;
    assert_eq!(status, 404, "{body}");
}

#[tokio::test]
async fn every_isolation_scenario_of_two_sessions_opens_as_a_spec_that_plays() {
    let _slot = db_slot().await;
    let engine = common::engine().await;
    let address = common::serve_engine(engine.clone(), common::config(), std::path::Path::new("no-such-dist")).await;
    let lab = racelab::labs::catalog()
        .into_iter()
        .find(|l| l.id == "isolation")
        .expect("the isolation lab");
    let mut opened = Vec::new();
    for scenario in lab.scenarios.iter().filter(|s| !s.workload) {
        for variant in &scenario.variants {
            let run = common::play(&engine, &scenario.id, &variant.id).await;
            let (status, _, body) = get(address, &format!("/api/runs/{}/spec", run.run_id)).await;
            let answer: Value = serde_json::from_str(&body).expect("JSON");
            let sessions = run
                .events
                .iter()
                .filter_map(|e| match &e.kind {
                    shared::EventKind::Step { actor, .. } => Some(actor.clone()),
                    _ => None,
                })
                .collect::<std::collections::BTreeSet<_>>()
                .len();
            if sessions < 2 {
                assert_eq!(status, 400, "{}/{}: {body}", scenario.id, variant.id);
                continue;
            }
            assert_eq!(status, 200, "{} {}: {body}", scenario.id, variant.id);
            let text = answer["text"].as_str().expect("a spec");
            // A run on MariaDB opens as a spec on MariaDB, in MariaDB's SQL, and plays there.
            let on_mariadb = variant.database() == shared::Service::Mariadb;
            assert_eq!(
                shared::spec::database_of(text) == shared::spec::Database::Mariadb,
                on_mariadb,
                "{}/{}",
                scenario.id,
                variant.id
            );
            let (saved, spec) = save(address, text).await;
            assert_eq!(saved, 201, "{} {}: {spec}\n{text}", scenario.id, variant.id);
            let frames = play(address, spec["id"].as_str().expect("an id"), "p1").await;
            let header = events(&frames, "run_started").next().expect("a header");
            let server = header["server"].as_str().unwrap_or_default();
            assert_eq!(
                server.starts_with("MariaDB"),
                on_mariadb,
                "{}/{}: {server}",
                scenario.id,
                variant.id
            );
            let done = frames.last().expect("done");
            assert_eq!(
                done["outcome"]["status"], "completed",
                "{} {}: {done}\n{text}",
                scenario.id, variant.id
            );
            opened.push(format!("{}/{}", scenario.id, variant.id));
        }
    }
    assert!(opened.len() >= 10, "{opened:?}");
}

#[tokio::test]
async fn a_spec_that_asks_reveals_its_authors_answer_for_each_permutation() {
    let _slot = db_slot().await;
    let address = common::server().await;
    let (status, saved) = save(address, shared::spec::STARTER).await;
    assert_eq!(status, 201, "{saved}");
    let scenario = &saved["scenario"]["scenario"];
    assert_eq!(scenario["predict"]["question"], "What happens to the budget?");
    let choices: Vec<&str> = scenario["predict"]["choices"]
        .as_array()
        .expect("choices")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(choices, ["overspent", "kept"]);
    let id = saved["id"].as_str().expect("an id");
    for (variant, choice, kind) in [("p1", "overspent", "reproduced"), ("p2", "kept", "prevented")] {
        let frames = play(address, id, variant).await;
        let reveal = events(&frames, "reveal")
            .next()
            .unwrap_or_else(|| panic!("{variant} reveals"));
        assert_eq!(reveal["choice"], choice, "{variant}");
        // The author's answer agrees with what the database did.
        let verdict = &events(&frames, "verdict").next().expect("a verdict")["verdict"];
        assert_eq!(verdict["kind"], kind, "{variant}");
    }
    let frames = play(address, id, "every").await;
    assert_eq!(
        events(&frames, "reveal").count(),
        0,
        "every permutation answers no one question"
    );
}

#[tokio::test]
async fn a_lab_scenario_opens_as_a_spec_before_anyone_ran_it() {
    let _slot = db_slot().await;
    let address = common::server().await;
    let (status, _, body) = get(
        address,
        "/api/scenarios/isolation/lost-update/spec?variant=repeatable-read",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).expect("JSON");
    let text = answer["text"].as_str().expect("a spec");
    let spec = shared::spec::parse(text).expect("it parses");
    assert_eq!(spec.validate(), Ok(()));
    assert!(spec.sessions.len() >= 2, "{text}");
    assert!(text.contains("BEGIN ISOLATION LEVEL REPEATABLE READ"), "{text}");
    let (status, _, body) = get(address, "/api/scenarios/isolation/lost-update/spec?variant=no-such").await;
    assert_eq!(status, 404, "{body}");
    let (status, _, body) = get(address, "/api/scenarios/locks/no-lock/spec").await;
    assert_eq!(status, 400, "Redis clients are not SQL sessions: {body}");
}

/// A spec that prints 27 MB over 30 steps, each result within what a step may print (1 MiB:
/// a 300 kB value, its header and rule padded to its width):
/// the run's output is cut at its cap with one line that says so, its ledger and verdict still
/// come, and what is stored for its permalink is about the cap, not 30 MB.
#[tokio::test]
async fn a_run_printing_past_its_cap_is_cut_with_a_line_and_stored_cut() {
    let _slot = db_slot().await;
    let address = common::server().await;
    let mut text = "setup { CREATE TABLE t (k int PRIMARY KEY); INSERT INTO t VALUES (1); }\nsession s\n".to_owned();
    for i in 1..=30 {
        text.push_str(&format!(
            "step p{i} {{ SELECT {i} AS n, repeat('x', 300000) AS page; }}\n"
        ));
    }
    let (status, saved) = save(address, &text).await;
    assert_eq!(status, 201, "{saved}");
    let id = saved["id"].as_str().expect("an id").to_owned();
    let frames = play(address, &id, "p1").await;
    let done = frames.last().expect("done");
    assert_eq!(done["outcome"]["status"], "completed", "{done}");
    let transcript = said(&frames);
    let cut = transcript
        .lines()
        .find(|l| l.starts_with("racelab: output cut at "))
        .unwrap_or_else(|| panic!("no cut line in {} bytes", transcript.len()));
    assert!(cut.contains("(at most 200000 events or 16 MB a run)"), "{cut}");
    assert!(transcript.len() < 17 << 20, "{} bytes said", transcript.len());
    assert!(!transcript.contains("step p30:"), "what came past the cap is not shown");
    assert_eq!(events(&frames, "ledger").count(), 2, "its ledgers still come");
    assert_eq!(events(&frames, "verdict").count(), 1, "and its verdict");
    let run_id = done["run_id"].as_str().expect("a run id").to_owned();
    let (status, _, stored) = get(address, &format!("/api/runs/{run_id}")).await;
    assert_eq!(status, 200);
    assert!(stored.len() < 18 << 20, "stored: {} bytes", stored.len());
    assert!(stored.contains("racelab: output cut at "), "stored with its cut line");
    assert_eq!(left_by(&run_id).await, 0);
}

/// A setup the database refuses ends the run as the tester does, and shows where it ran: the
/// tester's lane sends the setup's SQL and fails with the SQLSTATE (42P01, the table nobody
/// made), the run's failure quotes the tester's line, and a session's own setup fails on its
/// lane the same way.
#[tokio::test]
async fn a_failing_setup_shows_its_sql_and_sqlstate_on_the_lane_it_ran_on() {
    let _slot = db_slot().await;
    let address = common::server().await;
    for (text, lane, sql) in [
        (
            "setup { SELECT * FROM no_such_table; }\nsession s\nstep a { SELECT 1; }\n",
            "tester",
            "SELECT * FROM no_such_table;",
        ),
        (
            "session s\nsetup { SELECT * FROM no_such_table; }\nstep a { SELECT 1; }\n",
            "s",
            "SELECT * FROM no_such_table;",
        ),
    ] {
        let (status, saved) = save(address, text).await;
        assert_eq!(status, 201, "{saved}");
        let frames = play(address, saved["id"].as_str().expect("an id"), "p1").await;
        let done = frames.last().expect("done");
        assert_eq!(done["outcome"]["status"], "failed", "{done}");
        let message = done["outcome"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("ERROR:  relation \"no_such_table\" does not exist"),
            "{message}"
        );
        let step = events(&frames, "step")
            .find(|e| e["actor"] == lane)
            .expect("the setup, on its lane");
        assert_eq!(step["text"], sql);
        let error = events(&frames, "error")
            .find(|e| e["actor"] == lane)
            .expect("its failure");
        assert_eq!(error["code"], "42P01", "{error}");
        assert_eq!(left_by(done["run_id"].as_str().unwrap_or_default()).await, 0);
    }
}
