//! The websocket protocol and HTTP API against the real router on port 0 and real PostgreSQL.

mod common;

use common::socket::{connect, event_type, is_type, receive, receive_until, send, send_raw, start};
use common::{db_slot, server, wait_until_clean};
use futures_util::SinkExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

#[tokio::test]
async fn a_run_streams_events_and_ends_with_ledger_verdict_and_done() {
    let _slot = db_slot().await;
    let address = server().await;
    let mut socket = connect(address).await;
    send(
        &mut socket,
        json!({"v": 1, "type": "start", "scenario": "isolation/write-skew", "variant": "serializable"}),
    )
    .await;
    let frames = receive_until(&mut socket, |f| is_type(f, "done")).await;
    assert!(frames.iter().all(|f| f["v"] == 1));
    let started = frames.iter().find(|f| is_type(f, "started")).expect("started");
    let run_id = started["run_id"].as_str().expect("run id").to_owned();
    let events: Vec<&Value> = frames
        .iter()
        .filter(|f| is_type(f, "event"))
        .map(|f| &f["event"])
        .collect();
    assert_eq!(events[0]["type"], "run_started");
    assert_eq!(events[0]["actors"][0]["name"], "alice");
    let seqs: Vec<u64> = events.iter().filter_map(|e| e["seq"].as_u64()).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "sequence numbers have no gaps"
    );
    let error = events.iter().find(|e| e["type"] == "error").expect("bob's 40001");
    assert_eq!(
        (error["actor"].as_str(), error["kind"].as_str(), error["code"].as_str()),
        (Some("bob"), Some("database"), Some("40001"))
    );
    assert!(events.iter().any(|e| e["type"] == "ledger" && e["moment"] == "after"));
    let verdict = events.iter().find(|e| e["type"] == "verdict").expect("verdict");
    assert_eq!(verdict["verdict"]["kind"], "prevented");
    assert_eq!(events.last().expect("events")["type"], "done");
    assert_eq!(frames.last().expect("frames")["outcome"]["status"], "completed");

    // The finished run is stored and replays without a sandbox.
    let stored: Value = common::get_json(address, &format!("/api/runs/{run_id}")).await;
    assert_eq!(stored["events"].as_array().map(Vec::len), Some(events.len()));
    assert_eq!(stored["scenario"], "isolation/write-skew");
    assert_eq!(wait_until_clean(&run_id).await, common::Leftovers::NONE);

    // The socket stays usable for another run.
    send(
        &mut socket,
        json!({"v": 1, "type": "start", "scenario": "isolation/read-skew", "variant": "read-committed"}),
    )
    .await;
    let frames = receive_until(&mut socket, |f| is_type(f, "done")).await;
    assert_eq!(frames.last().expect("frames")["outcome"]["status"], "completed");
}

#[tokio::test]
async fn malformed_and_unknown_frames_get_errors_and_the_socket_stays_usable() {
    let address = server().await;
    let mut socket = connect(address).await;
    let cases: Vec<(&str, &str)> = vec![
        ("not json", "bad_frame"),
        (r#"{"type":"next"}"#, "bad_frame"),
        (r#"{"v":2,"type":"next"}"#, "bad_version"),
        (r#"{"v":1,"type":"launch"}"#, "bad_frame"),
        (
            r#"{"v":1,"type":"start","scenario":"isolation/nope","variant":"x"}"#,
            "unknown_scenario",
        ),
        (
            r#"{"v":1,"type":"start","scenario":"isolation/write-skew","variant":"snapshot"}"#,
            "unknown_variant",
        ),
        (r#"{"v":1,"type":"next"}"#, "no_run"),
        (r#"{"v":1,"type":"cancel"}"#, "no_run"),
        (
            r#"{"v":1,"type":"start","scenario":"isolation/load-test","variant":"all","mode":"step"}"#,
            "not_steppable",
        ),
    ];
    for (frame, code) in cases {
        send_raw(&mut socket, frame).await;
        let reply = receive(&mut socket).await;
        assert_eq!(
            (reply["type"].as_str(), reply["code"].as_str()),
            (Some("error"), Some(code)),
            "for {frame}"
        );
        assert!(reply["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    socket
        .send(Message::Binary(vec![1u8, 2, 3].into()))
        .await
        .expect("send");
    assert_eq!(receive(&mut socket).await["code"], "bad_frame");
    // Unknown variants name the valid ones.
    send_raw(
        &mut socket,
        r#"{"v":1,"type":"start","scenario":"isolation/approve","variant":"magic"}"#,
    )
    .await;
    let reply = receive(&mut socket).await;
    assert!(
        reply["message"].as_str().is_some_and(|m| m.contains("for-update")),
        "{reply}"
    );
}

#[tokio::test]
async fn step_mode_plays_one_step_per_next() {
    let _slot = db_slot().await;
    let address = server().await;
    let mut socket = connect(address).await;
    send(&mut socket, json!({"v": 1, "type": "start", "scenario": "isolation/write-skew", "variant": "read-committed", "mode": "step"})).await;
    let frames = receive_until(&mut socket, |f| event_type(f) == Some("paused")).await;
    assert!(
        frames.iter().all(|f| event_type(f) != Some("step")),
        "nothing runs before the first next"
    );
    let paused = &frames.last().expect("paused")["event"];
    assert_eq!(paused["actor"], "alice");
    assert!(
        paused["step"].as_str().is_some_and(|s| s.starts_with("SELECT budget")),
        "{paused}"
    );
    for _ in 0..3 {
        send(&mut socket, json!({"v": 1, "type": "next"})).await;
        let frames = receive_until(&mut socket, |f| event_type(f) == Some("paused")).await;
        let steps: Vec<&str> = frames
            .iter()
            .filter(|f| event_type(f) == Some("step"))
            .filter_map(|f| f["event"]["text"].as_str())
            .filter(|text| !text.starts_with("BEGIN"))
            .collect();
        assert_eq!(steps.len(), 1, "one next, one step: {steps:?}");
    }
    // Auto-mode runs refuse next; cancel ends the step run with a clean sandbox.
    send(&mut socket, json!({"v": 1, "type": "cancel"})).await;
    let frames = receive_until(&mut socket, |f| is_type(f, "done")).await;
    let done = frames.last().expect("done");
    assert_eq!(done["outcome"]["status"], "cancelled");
    let run_id = done["run_id"].as_str().expect("run id");
    assert_eq!(wait_until_clean(run_id).await, common::Leftovers::NONE);
}

#[tokio::test]
async fn closing_the_tab_while_bob_is_blocked_leaves_no_schema_session_or_lock() {
    let _slot = db_slot().await;
    let address = server().await;
    let mut socket = connect(address).await;
    let run_id = start(&mut socket, "isolation/approve", "for-update", "step").await;
    // Step until bob is seen blocked on alice's row lock.
    loop {
        let frames = receive_until(&mut socket, |f| matches!(event_type(f), Some("paused" | "blocked"))).await;
        if frames.iter().any(|f| event_type(f) == Some("blocked")) {
            break;
        }
        send(&mut socket, json!({"v": 1, "type": "next"})).await;
    }
    let mut inspector = common::inspector().await;
    let left = common::leftovers(&mut inspector, &run_id, false).await;
    assert_eq!((left.schemas, left.registry), (1, 1));
    assert!(
        left.sessions >= 3 && left.locks > 0,
        "alice, bob and the monitor hold sessions and locks mid-run"
    );
    drop(socket);
    assert_eq!(wait_until_clean(&run_id).await, common::Leftovers::NONE);
}

/// A reader closes the tab while the card is being charged: the shop API's own process, the
/// provider's transaction (and its advisory lock, had it one), both schemas: all gone.
#[tokio::test]
async fn closing_the_tab_mid_charge_leaves_no_process_schema_or_lock() {
    let _slot = db_slot().await;
    let address = server().await;
    let mut socket = connect(address).await;
    let run_id = start(&mut socket, "idempotency/crash", "lease-provider-key", "auto").await;
    // The phone's request is on its way: the provider is charging (one second) under the
    // derived key's advisory lock.
    receive_until(&mut socket, |f| {
        event_type(f) == Some("step") && f["event"]["actor"] == "phone"
    })
    .await;
    assert_eq!(common::processes_of(&run_id), 1, "the shop API runs as its own process");
    drop(socket);
    assert_eq!(wait_until_clean(&run_id).await, common::Leftovers::NONE);
}

/// A reader closes the tab while two relay processes run, one holding the advisory lock and a
/// batch's row locks, and a notifier sits in its consumer group: the processes, the lock, the
/// schemas, the topic and the group are all gone.
#[tokio::test]
async fn closing_the_tab_mid_outbox_run_leaves_no_process_lock_topic_or_group() {
    let _slot = db_slot().await;
    let address = server().await;
    let mut socket = connect(address).await;
    let run_id = start(&mut socket, "outbox/two-relays", "advisory-lock", "auto").await;
    // Relay A has its batch and holds it (HOLD_SECONDS): row locks and the advisory lock.
    receive_until(&mut socket, |f| {
        event_type(f) == Some("note") && f["event"]["actor"] == "relay A"
    })
    .await;
    assert_eq!(common::processes_of(&run_id), 3, "two relays and a notifier run");
    let mut inspector = common::inspector().await;
    let held = common::leftovers(&mut inspector, &run_id, true).await;
    assert!(held.locks > 0, "relay A holds its locks mid-run: {held:?}");
    assert_eq!(held.topics, 1, "the run's topic exists");
    drop(socket);
    assert_eq!(
        common::wait_until_clean_of(&run_id, true).await,
        common::Leftovers::NONE
    );
}

#[tokio::test]
async fn catalog_health_and_missing_runs_answer_over_http() {
    let address = server().await;
    let labs: Value = common::get_json(address, "/api/labs").await;
    let isolation = labs
        .as_array()
        .and_then(|l| l.iter().find(|lab| lab["id"] == "isolation"))
        .expect("isolation lab");
    assert_eq!(isolation["down"], json!([]));
    assert!(isolation["scenarios"].as_array().is_some_and(|s| s.len() >= 8));
    // One scenario, for its page or an embed, without the whole catalog.
    let one: Value = common::get_json(address, "/api/scenarios/isolation/write-skew").await;
    assert_eq!(one["scenario"]["id"], "isolation/write-skew");
    // Four outcomes on PostgreSQL, and MariaDB's deadlock.
    assert_eq!(one["scenario"]["predict"]["choices"].as_array().map(Vec::len), Some(5));
    assert_eq!(one["down"], json!([]));
    let (status, _, body) = common::get(address, "/api/scenarios/isolation/nope").await;
    assert_eq!(status, 404);
    assert!(body.contains("isolation/nope"), "{body}");
    let health: Value = common::get_json(address, "/healthz").await;
    assert_eq!(health["postgres"]["up"], true);
    // MariaDB, named by its version, though no lab plays there yet (MARIADB_URL).
    assert_eq!(health["mariadb"]["up"], true, "{health}");
    assert!(
        health["mariadb"]["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("MariaDB 1")),
        "{health}"
    );
    let (status, _, body) = common::get(address, "/api/runs/does-not-exist").await;
    assert_eq!(status, 404);
    assert!(body.contains("does-not-exist"));
    let (status, _, body) = common::get(address, "/api/nope").await;
    assert_eq!(status, 404);
    assert!(body.contains("no API at /api/nope"), "{body}");
}

#[tokio::test]
async fn a_frame_over_the_limit_gets_close_code_1009_with_a_reason() {
    let address = server().await;
    for size in [100 * 1024, 8 * 1024 * 1024] {
        let mut socket = connect(address).await;
        // A frame far over the limit: the server hangs up before reading its rest.
        let _ = socket.send(Message::Text("x".repeat(size).into())).await;
        let close = loop {
            match tokio::time::timeout(
                std::time::Duration::from_secs(10),
                futures_util::StreamExt::next(&mut socket),
            )
            .await
            .expect("an answer in time")
            {
                Some(Ok(Message::Close(frame))) => break frame,
                Some(Ok(_)) => continue,
                other => panic!("{size} bytes: the socket dropped without a close frame: {other:?}"),
            }
        };
        let close = close.expect("a close frame with a code");
        assert_eq!(u16::from(close.code), 1009, "{size} bytes");
        assert!(close.reason.contains("64 KiB"), "{:?}", close.reason);
    }
}

#[tokio::test]
async fn a_frame_bigger_than_one_read_but_within_the_limit_is_read_whole() {
    let address = server().await;
    let mut socket = connect(address).await;
    // 60 KiB: fifteen of the server's 4 KiB reads (`web::ws::READ_BUFFER`), under the 64 KiB limit.
    let start = r#"{"v":1,"type":"start","scenario":"isolation/write-skew","variant":"nope"}"#;
    let padded = format!("{start}{}", " ".repeat(60 * 1024 - start.len()));
    assert!(padded.len() > 14 * racelab::web::ws::READ_BUFFER);
    send_raw(&mut socket, &padded).await;
    let reply = receive(&mut socket).await;
    assert_eq!(
        (reply["type"].as_str(), reply["code"].as_str()),
        (Some("error"), Some("unknown_variant")),
        "the whole frame was read and parsed: {reply}"
    );
}

#[tokio::test]
async fn only_racelabs_own_pages_and_allowed_sites_open_the_socket() {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let address = server().await;
    let open = |origin: Option<String>| async move {
        let mut request = format!("ws://{address}/ws").into_client_request().expect("a request");
        if let Some(origin) = origin {
            request
                .headers_mut()
                .insert("origin", origin.parse().expect("a header"));
        }
        match tokio_tungstenite::connect_async(request).await {
            Ok(_) => 101,
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) => response.status().as_u16(),
            Err(other) => panic!("{other}"),
        }
    };
    assert_eq!(open(Some(format!("http://{address}"))).await, 101, "racelab's own page");
    assert_eq!(open(None).await, 101, "a client that is not a page");
    assert_eq!(
        open(Some("https://evil.example".into())).await,
        403,
        "another site's page"
    );
}

#[tokio::test]
async fn one_reader_may_have_so_many_runs_going_and_start_so_many_a_minute() {
    let _slot = db_slot().await;
    let mut config = common::config();
    config.runs_per_client = 1;
    config.starts_per_minute = 2;
    let address = common::server_with(config).await;
    let refused = |reply: &Value, words: &str| {
        assert_eq!(
            (reply["type"].as_str(), reply["code"].as_str()),
            (Some("error"), Some("too_many")),
            "{reply}"
        );
        assert!(reply["message"].as_str().is_some_and(|m| m.contains(words)), "{reply}");
    };

    // One run going (a reader stepping through it), so a second tab is refused.
    let mut first = connect(address).await;
    let run_id = start(&mut first, "isolation/write-skew", "read-committed", "step").await;
    let mut second = connect(address).await;
    send(
        &mut second,
        json!({"v": 1, "type": "start", "scenario": "isolation/write-skew", "variant": "serializable"}),
    )
    .await;
    refused(&receive(&mut second).await, "1 run(s) going");

    // Once it is done, the place is free: the second tab's run plays.
    send(&mut first, json!({"v": 1, "type": "cancel"})).await;
    receive_until(&mut first, |f| is_type(f, "done")).await;
    assert_eq!(wait_until_clean(&run_id).await, common::Leftovers::NONE);
    start(&mut second, "isolation/write-skew", "serializable", "auto").await;
    let done = receive_until(&mut second, |f| is_type(f, "done")).await;
    assert_eq!(done.last().expect("done")["outcome"]["status"], "completed");

    // Two starts in this minute already: a third waits for the minute to pass.
    send(
        &mut second,
        json!({"v": 1, "type": "start", "scenario": "isolation/write-skew", "variant": "serializable"}),
    )
    .await;
    refused(&receive(&mut second).await, "try again in");
}
