//! SIGTERM drains `racelab serve`: no new run starts, the runs in flight get a few seconds to
//! finish, the rest are cancelled, every sandbox is destroyed, and only then does racelab exit.

mod common;

use common::socket::{connect, is_type, receive, receive_until, send, start};
use serde_json::json;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

#[tokio::test]
async fn sigterm_refuses_new_runs_cancels_a_waiting_one_and_cleans_its_sandbox() {
    let _slot = common::db_slot().await;
    let (mut racelab, address) = common::racelab_process(std::path::Path::new("no-such-dist")).await;

    // A reader stepping through write skew: it waits for "next" that never comes.
    let mut stepping = connect(address).await;
    let run_id = start(&mut stepping, "isolation/write-skew", "read-committed", "step").await;
    receive_until(&mut stepping, |f| f["event"]["type"] == "paused").await;
    let mut late = connect(address).await;

    let pid = racelab.id().expect("running") as i32;
    // SAFETY: kill(2) of our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let asked = Instant::now();

    // A reader who presses Run now is told why nothing starts.
    tokio::time::sleep(Duration::from_millis(200)).await;
    send(
        &mut late,
        json!({"v": 1, "type": "start", "scenario": "isolation/write-skew", "variant": "serializable"}),
    )
    .await;
    let refused = receive(&mut late).await;
    assert_eq!(
        (refused["type"].as_str(), refused["code"].as_str()),
        (Some("error"), Some("shutting_down")),
        "{refused}"
    );

    // The waiting run gets its time to finish, is cancelled, and says so.
    let done = receive_until(&mut stepping, |f| is_type(f, "done")).await;
    assert_eq!(done.last().expect("done")["outcome"]["status"], "cancelled");
    // Then the socket closes cleanly, "going away", before the process exits: the page got the
    // end of its run, never a reset connection.
    let goodbye = tokio::time::timeout(Duration::from_secs(10), futures_util::StreamExt::next(&mut stepping))
        .await
        .expect("a goodbye in time")
        .expect("a frame")
        .expect("not an error");
    assert!(
        matches!(&goodbye, Message::Close(Some(frame)) if u16::from(frame.code) == 1001),
        "{goodbye:?}"
    );
    let waited = asked.elapsed();
    assert!(
        waited >= Duration::from_secs(7),
        "cancelled after {waited:?}: before its time to finish"
    );

    let status = tokio::time::timeout(Duration::from_secs(40), racelab.wait())
        .await
        .expect("racelab exits")
        .expect("an exit status");
    assert!(status.success(), "{status}");
    // Exited only after the sandbox was gone.
    let mut inspector = common::inspector().await;
    assert_eq!(
        common::leftovers(&mut inspector, &run_id, false).await,
        common::Leftovers::NONE
    );
}
