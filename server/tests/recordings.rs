//! Recordings: a race recorded on a real database by `racelab record`, read back and folded as
//! a player folds it; the recording committed as a fixture plays in every build; a file that is
//! not a whole recording says why.

mod common;

use common::{Finished, WRITE_SKEW_SERIALIZABLE, lines};
use shared::recording::{self, Recording, Unplayable};
use shared::run_state::RunState;
use shared::{EventKind, Outcome, Service, VerdictKind};
use std::path::PathBuf;
use tokio::process::Command;

fn database_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/racelab".to_owned())
}

/// The recording committed beside the tests: the serializable write skew, recorded on
/// PostgreSQL 18.6 on 6 Dec 2026 by `racelab record isolation/write-skew --variant serializable
/// --postgres 18`. Every later build must play it.
fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/write-skew.serializable.racelab.json")
}

/// `racelab record ARGS… -o <a file of its own>`, on the machine's PostgreSQL; the recording
/// read back.
async fn record(name: &str, args: &[&str]) -> Recording {
    let path = std::env::temp_dir().join(format!("{name}-{}.racelab.json", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_racelab"))
        .arg("record")
        .args(args)
        .arg("-o")
        .arg(&path)
        .env("DATABASE_URL", database_url())
        .output()
        .await
        .expect("racelab starts");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("written (recorded on PostgreSQL "), "{stderr}");
    let text = std::fs::read_to_string(&path).expect("the recording was written");
    let _ = std::fs::remove_file(&path);
    recording::read(&text).expect("a recording this build wrote plays in it")
}

/// The serializable write skew's transcript, final ledger and verdict, from the scenario's
/// constants, as a player folds the recording's events.
fn assert_plays_as_the_write_skew_ran(recorded: &Recording) {
    assert_eq!(recorded.run.outcome, Outcome::Completed);
    let state = RunState::replay(recorded.run.id.clone(), recorded.run.events.clone());
    assert_eq!(lines(&state.transcript()), lines(WRITE_SKEW_SERIALIZABLE));
    let run = Finished {
        run_id: recorded.run.id.clone(),
        events: recorded.run.events.clone(),
        outcome: recorded.run.outcome.clone(),
    };
    assert_eq!(run.rows_after("teams")[0], row!["design", 5000, 0]);
    assert_eq!(run.rows_after("expenses"), vec![row![1, "design", 3000, "alice"]]);
    assert_eq!(state.verdict().map(|v| v.kind), Some(VerdictKind::Prevented));
    // bob's commit refused with its SQLSTATE, on his lane.
    let refused = recorded.run.events.iter().find_map(|e| match &e.kind {
        EventKind::Error { actor, code, .. } => Some((actor.as_str(), code.as_deref())),
        _ => None,
    });
    assert_eq!(refused, Some(("bob", Some("40001"))));
    assert_eq!(recorded.scenario.id, "isolation/write-skew");
    assert_eq!(recorded.stamp.variant, "serializable");
    assert_eq!(recorded.stamp.variant_label, "SERIALIZABLE");
    // Why: the cycle bob's commit would have closed, and the 40001 that prevented it.
    let proof = recorded.proof.as_ref().expect("a lab run's recording keeps its proof");
    assert!(proof.prevented.is_some(), "{:?}", proof.lines);
    assert!(
        proof.lines.iter().any(|l| l.contains("SQLSTATE 40001")),
        "{:?}",
        proof.lines
    );
}

#[tokio::test]
async fn the_committed_recording_plays_in_this_build() {
    let text = std::fs::read_to_string(fixture()).expect("the fixture");
    let recorded = recording::read(&text).expect("the fixture plays");
    assert_eq!(recorded.version, 1);
    assert_plays_as_the_write_skew_ran(&recorded);
    assert_eq!(recorded.stamp.line(), "recorded on PostgreSQL 18.6, 6 Dec 2026");
}

#[tokio::test]
async fn a_scenario_recorded_from_the_command_line_plays_as_it_ran() {
    let recorded = record("writeskew", &["isolation/write-skew", "--variant", "serializable"]).await;
    assert_plays_as_the_write_skew_ran(&recorded);
    // The stamp: the server the run played on, this build, today.
    let postgres = &recorded.stamp.services;
    assert_eq!(postgres.len(), 1, "{postgres:?}");
    assert_eq!(postgres[0].service, Service::Postgres);
    let version = postgres[0].version.as_deref().unwrap_or_default();
    assert!(version.starts_with("PostgreSQL 15."), "{version}");
    let today = shared::recording::utc_timestamp(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs(),
    );
    assert_eq!(recorded.stamp.recorded_at[..10], today[..10]);
    assert_eq!(recorded.stamp.racelab, env!("CARGO_PKG_VERSION"));
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    if !head.is_empty() {
        assert!(
            head.starts_with(&recorded.stamp.commit),
            "{} is not HEAD's {head}",
            recorded.stamp.commit
        );
    }
}

/// A run that talked to the broker names it in its stamp by what it speaks (the Kafka protocol
/// has no request for a broker's version), and the player's line says so.
#[tokio::test]
async fn a_run_on_the_broker_names_the_protocol_it_speaks_in_its_stamp() {
    let recorded = record("dualwrite", &["outbox/dual-write", "--variant", "commit-first"]).await;
    let services: Vec<(Service, Option<&str>)> = recorded
        .stamp
        .services
        .iter()
        .map(|s| (s.service, s.version.as_deref()))
        .collect();
    assert_eq!(services.len(), 2, "{services:?}");
    assert_eq!(services[0].0, Service::Postgres);
    let (service, broker) = services[1];
    assert_eq!(service, Service::Kafka);
    let broker = broker.expect("the broker named");
    let speaks = broker
        .strip_prefix("Kafka protocol Produce v")
        .and_then(|rest| rest.split_once("/Fetch v"))
        .map(|(produce, fetch)| (produce.parse::<u32>(), fetch.parse::<u32>()));
    assert!(matches!(speaks, Some((Ok(_), Ok(_)))), "{broker}");
    assert!(
        recorded.stamp.line().contains(&format!(" and {broker}, ")),
        "{}",
        recorded.stamp.line()
    );
}

#[tokio::test]
async fn a_spec_is_recorded_with_its_text_and_every_permutations_outcome() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/specs/write-skew-serializable.spec");
    let text = std::fs::read_to_string(&path).expect("the spec");
    let recorded = record("spec", &[path.to_str().expect("a UTF-8 path"), "--variant", "p1"]).await;
    let spec = recorded.spec.as_ref().expect("a spec's recording keeps the spec");
    assert_eq!(spec.text, text);
    assert!(recorded.scenario.id.starts_with("spec/"), "{}", recorded.scenario.id);
    // The spec lists one permutation: the matrix has its one outcome, the run plays it.
    assert_eq!(spec.matrix.len(), 1);
    assert!(matches!(spec.matrix[0].kind, EventKind::Permutation { index: 0, .. }));
    let state = RunState::replay(recorded.run.id.clone(), recorded.run.events.clone());
    let transcript = state.transcript();
    assert!(
        transcript.contains("starting permutation: a_count b_count a_leave b_leave a_commit b_commit"),
        "{transcript}"
    );
    assert!(
        transcript.contains("ERROR:  could not serialize access due to read/write dependencies among transactions"),
        "{transcript}"
    );
    // The check (`count(*) >= 1`) held: SERIALIZABLE kept one doctor on call.
    assert_eq!(state.verdict().map(|v| v.kind), Some(VerdictKind::Prevented));
    let doctors = state.table_after("doctors").expect("the doctors table");
    assert_eq!(
        doctors.rows,
        vec![row!["alice", false], row!["bob", true]],
        "alice left, bob's leave was cancelled"
    );
    assert!(
        recorded
            .run
            .events
            .iter()
            .any(|e| matches!(e.kind, EventKind::Proof { .. })),
        "a spec's run carries its proof"
    );
}

/// Where `value` breaks `schema` (the keywords docs/recording.schema.json uses: `type` of
/// objects, arrays, strings, integers and booleans, `required`, `properties`, `items`, `enum`,
/// `const`, `minimum`, `$ref` into `$defs`; not `pattern`), as `path: why` lines.
fn schema_breaks(
    schema: &serde_json::Value,
    root: &serde_json::Value,
    value: &serde_json::Value,
    path: &str,
) -> Vec<String> {
    use serde_json::Value as J;
    let schema = match schema.get("$ref").and_then(J::as_str) {
        Some(reference) => {
            let name = reference.trim_start_matches("#/$defs/");
            &root["$defs"][name]
        }
        None => schema,
    };
    let mut breaks = Vec::new();
    let kind_holds = match schema.get("type").and_then(J::as_str) {
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        Some("string") => value.is_string(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("boolean") => value.is_boolean(),
        _ => true,
    };
    if !kind_holds {
        return vec![format!("{path}: not of type {}", schema["type"])];
    }
    if let Some(allowed) = schema.get("enum").and_then(J::as_array)
        && !allowed.contains(value)
    {
        breaks.push(format!("{path}: {value} is not one of {allowed:?}"));
    }
    if let Some(constant) = schema.get("const")
        && constant != value
    {
        breaks.push(format!("{path}: {value} is not {constant}"));
    }
    if let (Some(minimum), Some(number)) = (schema.get("minimum").and_then(J::as_i64), value.as_i64())
        && number < minimum
    {
        breaks.push(format!("{path}: {number} is below {minimum}"));
    }
    for key in schema.get("required").and_then(J::as_array).into_iter().flatten() {
        let key = key.as_str().unwrap_or_default();
        if value.get(key).is_none() {
            breaks.push(format!("{path}: no {key}"));
        }
    }
    if let Some(properties) = schema.get("properties").and_then(J::as_object) {
        for (key, property) in properties {
            if let Some(field) = value.get(key) {
                breaks.extend(schema_breaks(property, root, field, &format!("{path}.{key}")));
            }
        }
    }
    if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
        for (i, item) in array.iter().enumerate() {
            breaks.extend(schema_breaks(items, root, item, &format!("{path}[{i}]")));
        }
    }
    breaks
}

fn follows_the_schema(recorded: &Recording) -> Vec<String> {
    let schema_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/recording.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).expect("the schema")).expect("the schema is JSON");
    let value = serde_json::to_value(recorded).expect("a recording as JSON");
    schema_breaks(&schema, &schema, &value, "$")
}

#[tokio::test]
async fn recordings_follow_their_documented_schema() {
    let text = std::fs::read_to_string(fixture()).expect("the fixture");
    let fixture = recording::read(&text).expect("the fixture plays");
    assert_eq!(follows_the_schema(&fixture), Vec::<String>::new());
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/specs/deadlock.spec");
    let spec = record("schema", &[path.to_str().expect("a UTF-8 path")]).await;
    assert_eq!(follows_the_schema(&spec), Vec::<String>::new());
    // The check can fail: a recording with a stranger event type and no stamp does not pass.
    let mut value = serde_json::to_value(&fixture).expect("JSON");
    value["run"]["events"][0]["type"] = serde_json::Value::from("telepathy");
    value.as_object_mut().expect("an object").remove("scenario");
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/recording.schema.json"))
            .expect("the schema"),
    )
    .expect("JSON");
    let breaks = schema_breaks(&schema, &schema, &value, "$");
    assert!(breaks.iter().any(|b| b.starts_with("$: no scenario")), "{breaks:?}");
    assert!(
        breaks.iter().any(|b| b.starts_with("$.run.events[0].type")),
        "{breaks:?}"
    );
}

#[tokio::test]
async fn a_file_that_is_not_a_whole_recording_says_why() {
    let text = std::fs::read_to_string(fixture()).expect("the fixture");
    // Cut short, as a download that stopped.
    match recording::read(&text[..text.len() / 2]) {
        Err(cut @ Unplayable::NotJson(_)) => {
            assert!(
                cut.to_string().starts_with("this file is not a whole recording ("),
                "{cut}"
            );
        }
        other => panic!("{other:?}"),
    }
    // From a later racelab.
    let later = text.replacen("\"version\":1", "\"version\":2", 1);
    assert_ne!(later, text);
    assert_eq!(
        recording::read(&later).map(|_| ()),
        Err(Unplayable::FromTheFuture { version: 2 })
    );
    // Edited: the run's events are gone.
    let mut value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    value["run"].as_object_mut().expect("the run").remove("events");
    match recording::read(&value.to_string()) {
        Err(Unplayable::Damaged(why)) => assert!(why.contains("events"), "{why}"),
        other => panic!("{other:?}"),
    }
    // Another tool's file.
    assert_eq!(
        recording::read("{\"version\": 2, \"width\": 80}").map(|_| ()),
        Err(Unplayable::NotARecording)
    );
    // Script in every text field is text: it reads as written, for the player to escape.
    let hostile = text.replace(
        "Write skew: two managers overspend a budget",
        "<script>alert(1)</script>",
    );
    let recorded = recording::read(&hostile).expect("still a recording");
    assert_eq!(recorded.scenario.title, "<script>alert(1)</script>");
}

/// The serializable write skew played to its end over `address`'s websocket, as a lab page
/// plays it: its run id and every frame.
async fn a_finished_write_skew(address: std::net::SocketAddr) -> (String, Vec<serde_json::Value>) {
    let mut ws = common::socket::connect(address).await;
    common::socket::start(&mut ws, "isolation/write-skew", "serializable", "auto").await;
    let frames = common::socket::receive_until(&mut ws, |f| common::socket::is_type(f, "done")).await;
    let done = frames.last().expect("a done frame");
    assert_eq!(done["outcome"]["status"], "completed", "{done}");
    let run = done["run_id"].as_str().expect("a run id").to_owned();
    (run, frames)
}

#[tokio::test]
async fn a_finished_run_downloads_from_its_page_as_a_recording_that_plays_as_it_ran() {
    let _slot = common::db_slot().await;
    let address = common::server().await;
    let (run, _) = a_finished_write_skew(address).await;

    let response = reqwest::get(format!("http://{address}/api/runs/{run}/recording"))
        .await
        .expect("the recording is asked for");
    assert_eq!(response.status().as_u16(), 200);
    let saved_as = response
        .headers()
        .get("content-disposition")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        saved_as,
        "attachment; filename=\"isolation-write-skew.serializable.racelab.json\""
    );
    let text = response.text().await.expect("a body");
    let recorded = recording::read(&text).expect("a downloaded recording plays");
    assert_plays_as_the_write_skew_ran(&recorded);
    assert_eq!(recorded.run.id, run, "the run on the page, not another played for it");
    // Stamped with the server the run's header names, and the day it finished.
    let header = recorded.run.events.iter().find_map(|e| match &e.kind {
        EventKind::RunStarted { server, .. } => Some(server.clone()),
        _ => None,
    });
    let postgres = recorded
        .stamp
        .services
        .iter()
        .find(|s| s.service == Service::Postgres)
        .and_then(|s| s.version.clone());
    assert!(header.is_some() && postgres == header, "{postgres:?} / {header:?}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    assert_eq!(
        recorded.stamp.recorded_at.get(..10),
        recording::utc_timestamp(now).get(..10)
    );

    // No run of that id: said, not a file.
    let (status, _, body) = common::get(address, "/api/runs/000000000000/recording").await;
    assert_eq!(status, 404, "{body}");
}

/// Chapters an author marked on the finished run's page go into its download, at the steps
/// named, in order, each with its caption (HTML kept as text); one that names no step of the
/// run, has no caption, or is one too many is refused, with why, and nothing is made.
#[tokio::test]
async fn a_download_keeps_the_chapters_its_author_marked_and_refuses_what_cannot_be_one() {
    let _slot = common::db_slot().await;
    let address = common::server().await;
    let (run, frames) = a_finished_write_skew(address).await;
    let steps: Vec<u64> = frames
        .iter()
        .filter(|f| common::socket::event_type(f) == Some("step"))
        .filter_map(|f| f["event"]["seq"].as_u64())
        .collect();
    assert!(steps.len() >= 4, "{steps:?}");
    let (last, first) = (steps[steps.len() - 1], steps[1]);
    let url = |query: &str| format!("http://{address}/api/runs/{run}/recording?{query}");
    let asked = format!(
        "chapter={last}%3AAnd%20bob%27s%20commit%3F&chapter={first}%3A%20Will%20%3Cb%3Ebob%3C%2Fb%3E%20see%20alice%27s%20doctor%3F%20"
    );
    let response = reqwest::get(url(&asked)).await.expect("the recording is asked for");
    assert_eq!(response.status().as_u16(), 200);
    let recorded = recording::read(&response.text().await.expect("a body")).expect("it plays");
    assert_plays_as_the_write_skew_ran(&recorded);
    let chapters: Vec<(u64, &str)> = recorded.chapters.iter().map(|c| (c.at, c.caption.as_str())).collect();
    assert_eq!(
        chapters,
        [
            (first, "Will <b>bob</b> see alice's doctor?"),
            (last, "And bob's commit?")
        ]
    );
    assert_eq!(follows_the_schema(&recorded), Vec::<String>::new());

    let not_a_step = frames
        .iter()
        .filter(|f| common::socket::event_type(f).is_some_and(|kind| kind != "step"))
        .find_map(|f| f["event"]["seq"].as_u64())
        .expect("an event that is not a step");
    let many: Vec<String> = (0..=shared::chapters::AT_MOST)
        .map(|_| format!("chapter={first}%3Ax"))
        .collect();
    for (query, why) in [
        (format!("chapter={not_a_step}%3Ahere"), "is not a step of this run"),
        (format!("chapter={first}%3A%20"), "has no caption"),
        ("chapter=here".to_owned(), "a chapter is `SEQ:caption`"),
        // Not UTF-8: decoded as U+FFFD (as every query is), so no `SEQ:` before it.
        ("chapter=%FF".to_owned(), "a chapter is `SEQ:caption`"),
        (format!("chapter=%2B{first}%3Ax"), "a chapter is `SEQ:caption`"),
        (many.join("&"), "a recording keeps at most 20"),
    ] {
        let (status, _, body) = common::get(address, &format!("/api/runs/{run}/recording?{query}")).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert!(body.contains(why), "{query}: {body}");
    }
}
