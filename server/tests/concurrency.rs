//! Fifty runs of the same scenario at once: each plays in its own sandbox and prints the
//! tutorial's transcript, and together they leave nothing behind: no schema, session, advisory
//! lock, registry row, Redis key, topic or consumer group. More runs
//! than the server's connection cap allows at once, so some of them wait in the queue (the queue's
//! positions are checked in `engine.rs`).

mod common;

use common::{WRITE_SKEW_SERIALIZABLE, engine, lines, play, wait_until_clean_of};
use shared::Outcome;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_runs_all_match_the_tutorial_and_leave_nothing_behind() {
    let engine = engine().await;
    let runs = futures_util::future::join_all((0..50).map(|_| {
        let engine = engine.clone();
        async move { play(&engine, "isolation/write-skew", "serializable").await }
    }))
    .await;
    let mut ids: Vec<&str> = runs.iter().map(|r| r.run_id.as_str()).collect();
    for run in &runs {
        assert_eq!(run.outcome, Outcome::Completed);
        assert_eq!(run.transcript(), lines(WRITE_SKEW_SERIALIZABLE), "run {}", run.run_id);
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 50, "every run had its own sandbox");
    for run in &runs {
        assert_eq!(
            wait_until_clean_of(&run.run_id, true).await,
            common::Leftovers::NONE,
            "run {} left something behind",
            run.run_id
        );
    }
}

/// The load client (`racelab crowd`) against the real server: twenty readers press Run at once;
/// every one gets a completed run and serializable write skew's verdict (the bug prevented).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crowd_of_twenty_readers_all_get_the_right_verdict() {
    let address = common::server().await;
    let crowd = racelab::crowd::Crowd {
        url: format!("ws://{address}/ws"),
        readers: 20,
        scenario: "isolation/write-skew".to_owned(),
        variant: "serializable".to_owned(),
        within: std::time::Duration::from_secs(120),
    };
    let (seen, wall) = crowd.gather().await.expect("a crowd on loopback");
    let summary = racelab::crowd::Summary::of(&seen, wall);
    assert_eq!(summary.outcomes.get("completed"), Some(&20), "{summary}");
    assert_eq!(summary.verdicts.get("prevented"), Some(&20), "{summary}");
    assert!(summary.refused.is_empty() && summary.lost == 0, "{summary}");
    assert!(summary.p50 <= summary.p95 && summary.p95 <= summary.max && summary.max <= wall);
    let elsewhere = racelab::crowd::Crowd {
        url: "ws://racelab.example/ws".to_owned(),
        ..crowd
    };
    assert!(elsewhere.gather().await.is_err(), "a crowd only loads this machine");
}
