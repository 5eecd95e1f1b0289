//! A thousand readers who leave at a random moment: each starts a run of a scenario that holds
//! something worth leaking when it is cut (a session blocked on a row lock, a transaction about
//! to retry, a load test's pool, an outbox relay killed between publish and commit, a card being
//! charged by a child process, a Redis lock), then closes the tab or presses Cancel after a
//! random number of the run's messages or a random time into it. When they have all gone, no
//! schema, session, lock (advisory ones too), registry row, Redis key, topic, consumer group or
//! child process of any of their runs is left, and the same engine still plays a run right.
//!
//! `RACELAB_CUTS` (default 1,000) sets how many runs; `RACELAB_CUT_SEED` replays a failing
//! draw (every run prints its seed's draws on failure).

#![allow(clippy::too_many_lines, reason = "a test reads top to bottom as the story it checks")]

mod common;

use racelab::engine::{Engine, RunHandle};
use shared::{Mode, Outcome, ServerMsg};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What a run of this kind holds while it plays: where a cut can leak.
struct Kind {
    scenario: &'static str,
    variant: &'static str,
    holds: &'static str,
}

const KINDS: &[Kind] = &[
    Kind {
        scenario: "isolation/approve",
        variant: "for-update",
        holds: "Bob blocked on Alice's row lock",
    },
    Kind {
        scenario: "isolation/deadlock",
        variant: "opposite-order",
        holds: "two sessions waiting for each other, then a retry",
    },
    Kind {
        scenario: "isolation/write-skew",
        variant: "serializable",
        holds: "Bob's cancelled commit and his retry",
    },
    Kind {
        scenario: "isolation/load-test",
        variant: "serializable",
        holds: "sixteen workers' pool, retrying",
    },
    Kind {
        scenario: "locks/load-test",
        variant: "",
        holds: "a Redis lock per request, a fencing token",
    },
    Kind {
        scenario: "locks/double-tap",
        variant: "",
        holds: "a Redis lock held by one server",
    },
    Kind {
        scenario: "locks/ttl",
        variant: "",
        holds: "a lease that expires under its holder",
    },
    Kind {
        scenario: "outbox/relay-crash",
        variant: "after-produce",
        holds: "a relay process killed between the broker's ack and its commit",
    },
    Kind {
        scenario: "outbox/dual-write",
        variant: "commit-first",
        holds: "a process killed after its commit, a topic",
    },
    Kind {
        scenario: "outbox/two-relays",
        variant: "advisory-lock",
        holds: "two relay processes, an advisory lock, a consumer group",
    },
    Kind {
        scenario: "idempotency/crash",
        variant: "",
        holds: "a shop API process charging a card, then killed",
    },
    Kind {
        scenario: "idempotency/double-charge",
        variant: "naive",
        holds: "a charge in flight while the phone retries",
    },
    Kind {
        scenario: "idempotency/load-test",
        variant: "",
        holds: "150 requests at once through the shop's pool",
    },
];

/// The variant a kind plays: its own, else the scenario's first.
fn variant_of(kind: &Kind) -> &'static str {
    if !kind.variant.is_empty() {
        return kind.variant;
    }
    let def = racelab::labs::find(kind.scenario).expect("the scenario");
    def.variants[0].0
}

/// A small deterministic generator (SplitMix64): a seed replays every draw.
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// How long a whole run of a kind takes here, and how many messages it sends: the window the
/// cuts are drawn from.
#[derive(Clone, Copy, Debug)]
struct Whole {
    messages: u64,
    took: Duration,
}

/// When the reader leaves.
#[derive(Clone, Copy, Debug)]
enum Point {
    /// As soon as Run is pressed: the run is likely still queued, or just starting.
    Pressed,
    /// After reading this many of the run's messages from its `Started` on.
    Messages(u64),
    /// This long after the run started, whatever arrived.
    After(Duration),
}

/// How the reader leaves.
#[derive(Clone, Copy, Debug)]
enum Leave {
    /// Closes the tab: the handle is dropped.
    Tab,
    /// Presses Cancel, then closes the tab without waiting.
    Cancel,
}

/// One cut run, as the report shows it.
#[derive(Debug)]
struct Cut {
    /// None when the reader left before the run said its id (closed the tab as Run was pressed,
    /// or cancelled it while queued).
    run_id: Option<String>,
    kind: usize,
    point: Point,
    leave: Leave,
    /// Whether the run was still going when the reader left (not queued-and-done or finished).
    mid_run: bool,
}

/// Plays a kind to its end and counts its messages from its `Started` on.
async fn whole(engine: &Arc<Engine>, kind: &Kind) -> Whole {
    let def = racelab::labs::find(kind.scenario).expect("the scenario");
    let mut began = Instant::now();
    let mut handle = engine.start(def, variant_of(kind), Mode::Auto).await.expect("started");
    let mut messages = 0;
    loop {
        let update = tokio::time::timeout(Duration::from_secs(120), handle.updates.recv())
            .await
            .unwrap_or_else(|_| panic!("{} ended in time", kind.scenario))
            .unwrap_or_else(|| panic!("{} said done before closing", kind.scenario));
        messages += 1;
        if let ServerMsg::Started { .. } = update {
            (began, messages) = (Instant::now(), 0);
        }
        if let ServerMsg::Done { outcome, .. } = update {
            assert_eq!(outcome, Outcome::Completed, "a whole run of {}", kind.scenario);
            return Whole {
                messages,
                took: began.elapsed(),
            };
        }
    }
}

/// Reads `handle` until `point`; returns the run's id (if it started) and whether it was still
/// going when the point came (started, not done).
async fn read_until(handle: &mut RunHandle, point: Point) -> (Option<String>, bool) {
    if let Point::Pressed = point {
        return (None, false);
    }
    // Until the run starts: its place in line is not part of it.
    let run_id = match until_started(handle).await {
        Ok(run_id) => run_id,
        Err(ended) => return (ended, false),
    };
    let (limit, deadline) = match point {
        Point::After(wait) => (u64::MAX, tokio::time::Instant::now() + wait),
        Point::Messages(n) => (n, tokio::time::Instant::now() + Duration::from_secs(120)),
        Point::Pressed => unreachable!("returned above"),
    };
    let mut read = 0;
    while read < limit {
        match tokio::time::timeout_at(deadline, handle.updates.recv()).await {
            Err(_) => break,
            Ok(None) | Ok(Some(ServerMsg::Done { .. })) => return (Some(run_id), false),
            Ok(Some(_)) => read += 1,
        }
    }
    (Some(run_id), true)
}

/// Starts one run, leaves at the drawn point, and returns what was cut (with the run's id when
/// the reader learned it).
async fn cut(engine: &Arc<Engine>, index: usize, kind: usize, whole: Whole, draws: &mut Draws) -> Cut {
    let def = racelab::labs::find(KINDS[kind].scenario).expect("the scenario");
    let point = match draws.below(10) {
        0 => Point::Pressed,
        1..=5 => Point::Messages(draws.below(whole.messages)),
        _ => Point::After(Duration::from_micros(draws.below(whole.took.as_micros() as u64))),
    };
    let leave = if draws.below(4) == 0 { Leave::Cancel } else { Leave::Tab };
    let mut handle = engine
        .start(def, variant_of(&KINDS[kind]), Mode::Auto)
        .await
        .unwrap_or_else(|e| panic!("cut {index}: {} refused: {e}", KINDS[kind].scenario));
    let (run_id, mid_run) = read_until(&mut handle, point).await;
    if let Leave::Cancel = leave {
        handle.cancel();
    }
    // A tab closed while the run is queued gives no id: whatever such a run might leave is caught
    // by the test's look at every run's namespace at the end. After Cancel, the handle is read
    // on until the run's id arrives (or none: cancelled while queued).
    let run_id = match (run_id, leave) {
        (Some(id), _) => Some(id),
        (None, Leave::Tab) => None,
        (None, Leave::Cancel) => until_started(&mut handle).await.map_or_else(|ended| ended, Some),
    };
    Cut {
        run_id,
        kind,
        point,
        leave,
        mid_run,
    }
}

/// Reads a run's updates until it starts (`Ok` with its id) or ends first (`Err` with its id,
/// none if it ended while queued).
async fn until_started(handle: &mut RunHandle) -> Result<String, Option<String>> {
    loop {
        match tokio::time::timeout(Duration::from_secs(120), handle.updates.recv())
            .await
            .expect("a run's start or end in time")
        {
            Some(ServerMsg::Started { run_id }) => return Ok(run_id),
            Some(ServerMsg::Done { run_id, .. }) => return Err(Some(run_id).filter(|id| !id.is_empty())),
            Some(_) => {}
            None => return Err(None),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_runs_cut_at_random_points_leave_nothing_behind() {
    // Keeping sessions between runs, as served: the whole runs' kept sessions are taken by the
    // cut ones, and a cut run's sessions must still end with its sandbox (none is kept).
    let mut config = common::config();
    config.keep_sessions = true;
    let engine = Arc::new(racelab::db::connect_engine(&config).await.expect("PostgreSQL"));
    let count: usize = std::env::var("RACELAB_CUTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let seed: u64 = std::env::var("RACELAB_CUT_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    println!("RACELAB_CUT_SEED={seed} RACELAB_CUTS={count}");

    // The windows: one whole run of each kind, all at once.
    let wholes = futures_util::future::join_all(KINDS.iter().map(|kind| whole(&engine, kind))).await;
    for (kind, whole) in KINDS.iter().zip(&wholes) {
        println!(
            "{:<28} whole run: {:>4} messages, {:?}",
            kind.scenario, whole.messages, whole.took
        );
    }

    // Eight readers at a time, each taking the next cut.
    let next = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..8)
        .map(|_| {
            let (engine, next, wholes) = (engine.clone(), next.clone(), wholes.clone());
            tokio::spawn(async move {
                let mut cuts = Vec::new();
                loop {
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    if index >= count {
                        return cuts;
                    }
                    let mut draws = Draws(seed ^ (index as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
                    let kind = draws.below(KINDS.len() as u64) as usize;
                    cuts.push(cut(&engine, index, kind, wholes[kind], &mut draws).await);
                }
            })
        })
        .collect();
    let mut cuts = Vec::new();
    for reader in readers {
        cuts.extend(reader.await.expect("a reader"));
    }
    assert_eq!(cuts.len(), count);

    // Where the cuts landed.
    let mut by_kind: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for cut in &cuts {
        let entry = by_kind.entry(KINDS[cut.kind].scenario).or_default();
        entry.0 += 1;
        entry.1 += usize::from(cut.mid_run);
    }
    for (scenario, (all, mid)) in &by_kind {
        println!("{scenario:<28} {all:>4} runs, {mid:>4} cut while they played");
    }
    let pressed = cuts.iter().filter(|c| matches!(c.point, Point::Pressed)).count();
    let mid_run = cuts.iter().filter(|c| c.mid_run).count();
    println!("{pressed} readers left as they pressed Run; {mid_run} runs cut while they played");
    assert!(
        mid_run * 10 >= (count - pressed) * 8,
        "most cuts must land while their run plays, else this tests little: {mid_run} of {}",
        count - pressed
    );
    for (i, kind) in KINDS.iter().enumerate() {
        let cut_mid = cuts.iter().filter(|c| c.kind == i && c.mid_run).count();
        assert!(
            count < 100 || cut_mid > 0,
            "no {} run ({}) was cut while it played",
            kind.scenario,
            kind.holds
        );
    }

    // Nothing of any of them is left, in any service.
    let run_ids: Vec<String> = cuts.iter().filter_map(|c| c.run_id.clone()).collect();
    println!(
        "{} runs left before they said their id (closed or cancelled before they started)",
        count - run_ids.len()
    );
    let mut inspector = common::inspector().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let left = loop {
        let left = common::leftovers_by_run(&mut inspector, &run_ids, true).await;
        if left.is_empty() || tokio::time::Instant::now() >= deadline {
            break left;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let report: Vec<String> = left
        .iter()
        .map(|(run, leftovers)| {
            let cut = cuts
                .iter()
                .find(|c| c.run_id.as_ref() == Some(run))
                .expect("a cut of ours");
            format!(
                "{run} ({} {}, {:?}, {:?}, holds {}): {leftovers:?}",
                KINDS[cut.kind].scenario,
                variant_of(&KINDS[cut.kind]),
                cut.point,
                cut.leave,
                KINDS[cut.kind].holds
            )
        })
        .collect();
    assert!(
        left.is_empty(),
        "{} of {count} cut runs left something a minute later (RACELAB_CUT_SEED={seed}):\n{}",
        left.len(),
        report.join("\n")
    );

    // Nor of any run at all: tabs closed while their run was queued left no id to look for,
    // and this test is alone in its binary.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let anything = loop {
        let postgres: (i64, i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'run\\_%'),
                    (SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'racelab/%/%'),
                    (SELECT count(*) FROM sandboxes)",
        )
        .fetch_one(&mut inspector)
        .await
        .expect("every run's leftovers");
        let keys = common::redis_keys_of_every_run().await;
        let processes = common::processes_of_every_run();
        let anything = (postgres, keys, processes);
        if anything == ((0, 0, 0), BTreeMap::new(), BTreeMap::new()) || tokio::time::Instant::now() >= deadline {
            break anything;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(
        anything,
        ((0, 0, 0), BTreeMap::new(), BTreeMap::new()),
        "(schemas, run sessions, registry rows), Redis keys and processes of any run"
    );

    // The same engine still plays right.
    let again = common::play(&engine, "isolation/write-skew", "serializable").await;
    assert_eq!(again.transcript(), common::lines(common::WRITE_SKEW_SERIALIZABLE));
    assert_eq!(common::wait_until_clean(&again.run_id).await, common::Leftovers::NONE);
    assert_eq!(engine.close(Duration::from_secs(5), Duration::from_secs(5)).await, 0);
    common::until_no_kept_sessions(&mut inspector).await;
}
