//! The locks lab against the real Redis and PostgreSQL: each scenario's transcript (exact where
//! the tutorial's program prints the same lines every time, its invariants where timing decides
//! the figures, repeated to catch a race that only sometimes happens), its final ledger against
//! the scenario's constants, its verdict, and nothing left behind.

mod common;

use common::{Finished, Leftovers, db_slot, engine, lines, play, wait_until_clean};
use shared::{ErrorKind, EventKind, LeaseChange, Value, VerdictKind};

/// Plays a locks scenario and checks what every run must: it completes, and leaves nothing.
async fn locks(scenario: &str, variant: &str) -> Finished {
    let _slot = db_slot().await;
    let run = play(&engine().await, scenario, variant).await;
    common::completed_and_clean(run, (scenario, variant), common::inspector().await, false).await
}

/// The `accepted=… balance=… expected=… OK|BROKEN` line, parsed: (accepted, balance, ok).
fn check_line(line: &str) -> (i64, i64, bool) {
    let field = |name: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")))
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or_else(|| panic!("no {name}= in {line:?}"))
    };
    let ok = match line.rsplit(' ').next() {
        Some("OK") => true,
        Some("BROKEN") => false,
        other => panic!("no status in {line:?}: {other:?}"),
    };
    assert_eq!(field("expected"), 100 - 10 * field("accepted"), "{line}");
    (field("accepted"), field("balance"), ok)
}

/// A Redis key's value in the final ledger, if the key is there.
fn redis_value(run: &Finished, key: &str) -> Option<Value> {
    run.rows_after("redis")
        .into_iter()
        .find(|row| row.first() == Some(&Value::from(key)))
        .map(|row| row[1].clone())
}

/// The `spends` table of the final ledger: accepted, turned away.
fn spends(run: &Finished) -> (i64, i64) {
    let rows = run.rows_after("spends");
    (
        rows[0][1].as_int().expect("accepted"),
        rows[1][1].as_int().expect("turned away"),
    )
}

#[tokio::test]
async fn redis_cli_takes_the_lock_once_and_only_its_token_releases_it() {
    let run = locks("locks/redis-cli", "redis-cli").await;
    let transcript = run.transcript();
    let prompt = format!(
        "{}>",
        common::config()
            .redis_url
            .trim_start_matches("redis://")
            .trim_end_matches('/')
    );
    let release = |token: &str| {
        format!(
            r#"{prompt} EVAL 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end' 1 lock:wallet:42 {token}"#
        )
    };
    assert_eq!(
        transcript[..4],
        [
            format!("{prompt} SET lock:wallet:42 token-a NX PX 30000"),
            "OK".to_owned(),
            format!("{prompt} SET lock:wallet:42 token-b NX PX 30000"),
            "(nil)".to_owned(),
        ]
    );
    assert_eq!(transcript[4], format!("{prompt} PTTL lock:wallet:42"));
    let pttl: i64 = transcript[5]
        .strip_prefix("(integer) ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a PTTL reply: {}", transcript[5]));
    assert!(0 < pttl && pttl <= 30_000, "the lease runs down from 30000: {pttl}");
    assert_eq!(
        transcript[6..],
        [
            release("token-b"),
            "(integer) 0".into(),
            release("token-a"),
            "(integer) 1".into()
        ]
    );
    assert_eq!(run.verdict().kind, VerdictKind::Prevented);
    assert!(run.rows_after("redis").is_empty(), "A's release deleted the lock");
}

#[tokio::test]
async fn a_zero_ttl_is_refused_before_anything_reaches_redis() {
    let run = locks("locks/zero-ttl", "zero-ttl").await;
    assert_eq!(
        run.transcript(),
        lines(
            "[guarded] acquire with a TTL of 0: lock TTL must be at least 1ms
[unguarded] SET without PX: PTTL -1, the lock never expires"
        )
    );
    let guarded_steps = run
        .events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Step { actor, .. } if actor == "guarded"))
        .count();
    assert_eq!(guarded_steps, 0, "the guard sends no command");
    assert_eq!(redis_value(&run, "lock:wallet:42"), Some(Value::from("token-a")));
    let ttl = run.rows_after("redis")[0][2].clone();
    assert_eq!(ttl, Value::Int(-1), "the unguarded lock never expires");
    assert_eq!(run.verdict().kind, VerdictKind::Reproduced);
}

#[tokio::test]
async fn delex_releases_once_or_shows_the_servers_unknown_command() {
    let run = locks("locks/delex", "delex").await;
    let transcript = run.transcript();
    if common::redis_version().await >= (8, 4) {
        assert_eq!(
            transcript,
            lines(
                "first release:  <nil>
second release: lock not held (expired or taken by someone else)"
            )
        );
        assert_eq!(run.verdict().kind, VerdictKind::Prevented);
    } else {
        assert!(
            transcript[0].starts_with("first release:  ERR unknown command 'DELEX'"),
            "{}",
            transcript[0]
        );
        assert!(
            !transcript[0].contains("racelab:"),
            "the key is shown without the run's prefix"
        );
        assert_eq!(
            transcript[1], "second release: <nil>",
            "the Lua release works everywhere"
        );
        assert_eq!(run.verdict().kind, VerdictKind::Reproduced);
    }
    assert!(run.rows_after("redis").is_empty());
}

/// The fencing transcript's lines, the same in both variants but for A's write and the end.
fn fencing_lines(a_write: &str, fence: i64) -> Vec<String> {
    lines(&format!(
        "A: got the lock, fence 33, read balance 100
A: paused for 250ms (GC pause, slow network, stopped VM)
B: got the lock, fence 34, read balance 100
B: wrote balance 90 with fence 34
A: wakes up and carries on
{a_write}
A: release: lock not held (expired or taken by someone else)
final: balance=90 fence={fence} (two spends of 10 were attempted)"
    ))
}

#[tokio::test]
async fn a_fenced_update_refuses_the_paused_holders_stale_write() {
    fenced_update_refuses(locks("locks/fencing", "fence").await);
}

/// On PostgreSQL 18.6, the tutorial's version: the same transcript and ledger.
#[tokio::test]
async fn on_postgres_18_a_fenced_update_refuses_the_paused_holders_stale_write() {
    let _slot = db_slot().await;
    let (run, conn) = common::versions::played_on_18("locks/fencing", "fence").await;
    fenced_update_refuses(common::completed_and_clean(run, ("locks/fencing", "fence"), conn, false).await);
}

fn fenced_update_refuses(run: Finished) {
    assert_eq!(run.transcript(), fencing_lines("A: write with fence 33 REJECTED", 34));
    assert_eq!(run.rows_after("wallets"), vec![row![42, 90, 34]]);
    assert_eq!(redis_value(&run, "fence:{wallet:42}"), Some(Value::from("34")));
    assert_eq!(redis_value(&run, "lock:{wallet:42}"), None, "no lock is left");
    assert_eq!(run.verdict().kind, VerdictKind::Prevented);
}

/// A sandbox played in again (reset after its run: `engine::warm`) is the lab's as made in
/// Redis as in PostgreSQL: the first run's fence key is gone, and the second fencing run in it
/// prints the same lines and leaves the same wallet.
#[tokio::test]
async fn a_reset_sandbox_plays_fencing_again_with_the_same_fences() {
    let _slot = db_slot().await;
    let mut config = common::config();
    config.warm_sandboxes = 1;
    let engine = std::sync::Arc::new(racelab::db::connect_engine(&config).await.expect("PostgreSQL"));
    let first = play(&engine, "locks/fencing", "fence").await;
    let sandbox = common::named(&first.run_id);
    fenced_update_refuses(first);
    assert_eq!(
        common::on_shelf(&common::until_on_shelves(&engine, 1).await, &sandbox),
        Some(1)
    );
    assert_eq!(
        common::redis_keys_of(&sandbox).await,
        0,
        "the first run's fence key went with the reset"
    );
    let second = play(&engine, "locks/fencing", "fence").await;
    assert_ne!(second.run_id, sandbox);
    fenced_update_refuses(second);
    assert_eq!(
        common::on_shelf(&common::until_on_shelves(&engine, 1).await, &sandbox),
        Some(2)
    );
    assert_eq!(
        engine
            .close(std::time::Duration::from_secs(5), std::time::Duration::from_secs(5))
            .await,
        0
    );
    assert_eq!(
        wait_until_clean(&sandbox).await,
        Leftovers::NONE,
        "taken down with the engine"
    );
}

#[tokio::test]
async fn without_the_fence_the_stale_write_lands_and_the_fence_goes_back() {
    let run = locks("locks/fencing", "no-fence").await;
    assert_eq!(run.transcript(), fencing_lines("A: wrote balance 90 with fence 33", 33));
    assert_eq!(run.rows_after("wallets"), vec![row![42, 90, 33]]);
    assert_eq!(redis_value(&run, "fence:{wallet:42}"), Some(Value::from("34")));
    let verdict = run.verdict();
    assert_eq!(verdict.kind, VerdictKind::Reproduced);
    assert!(verdict.checks.iter().all(|c| !c.holds), "{verdict:?}");
}

#[tokio::test]
async fn a_double_tap_records_one_of_two_spends() {
    let run = locks("locks/double-tap", "no-lock").await;
    assert_eq!(
        run.transcript(),
        lines(
            "[req01] read 100: 10 is affordable
[req02] read 100: 10 is affordable
[req01] wrote 90
[req02] wrote 90
accepted=2 balance=90 expected=80 BROKEN"
        )
    );
    assert_eq!(redis_value(&run, "wallet:42:balance"), Some(Value::from("90")));
    assert_eq!(spends(&run), (2, 0));
    assert_eq!(run.verdict().kind, VerdictKind::Reproduced);
}

#[tokio::test]
async fn fifty_requests_without_a_lock_are_all_accepted_and_the_balance_is_wrong() {
    // Timing decides the balance; that all fifty are accepted and it is wrong does not.
    for _ in 0..3 {
        let run = locks("locks/no-lock", "no-lock").await;
        let transcript = run.transcript();
        assert_eq!(transcript.len(), 1, "{transcript:?}");
        let (accepted, balance, ok) = check_line(&transcript[0]);
        assert_eq!((accepted, ok), (50, false), "{}", transcript[0]);
        assert!(0 < balance && balance <= 90, "balance {balance}");
        assert_eq!(
            redis_value(&run, "wallet:42:balance"),
            Some(Value::Text(balance.to_string()))
        );
        assert_eq!(spends(&run), (50, 0));
        assert_eq!(run.verdict().kind, VerdictKind::Reproduced);
    }
}

#[tokio::test]
async fn the_hand_rolled_lock_accepts_ten_and_leaves_no_lock() {
    for _ in 0..3 {
        let run = locks("locks/hand-lock", "lock").await;
        assert_eq!(run.transcript(), lines("accepted=10 balance=0 expected=0 OK"));
        assert_eq!(redis_value(&run, "wallet:42:balance"), Some(Value::from("0")));
        assert_eq!(redis_value(&run, "lock:wallet:42"), None, "EXISTS lock:wallet:42 is 0");
        assert_eq!(spends(&run), (10, 40));
        assert_eq!(run.verdict().kind, VerdictKind::Prevented);
    }
}

/// The figures of the `refused stale releases=N elapsed=D` log line (after its timestamp).
fn stale_and_elapsed(line: &str) -> (i64, String) {
    let rest = line.get(20..).unwrap_or_else(|| panic!("a log line: {line:?}"));
    let stale = rest
        .strip_prefix("refused stale releases=")
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line:?}"));
    let elapsed = rest.rsplit("elapsed=").next().unwrap_or_default().to_owned();
    (stale, elapsed)
}

/// Go's duration text in milliseconds: `740ms` → 740, `1.52s` → 1520.
fn millis(text: &str) -> u64 {
    if let Some(ms) = text.strip_suffix("ms") {
        ms.parse().unwrap_or(0)
    } else {
        let seconds: f64 = text.trim_end_matches('s').parse().unwrap_or(0.0);
        (seconds * 1000.0).round() as u64
    }
}

#[tokio::test]
async fn work_that_outlives_the_lease_loses_debits_without_a_watchdog() {
    for _ in 0..2 {
        let run = locks("locks/ttl", "no-watchdog").await;
        let transcript = run.transcript();
        let (accepted, balance, ok) = check_line(&transcript[0]);
        assert_eq!((accepted, ok), (5, false), "{}", transcript[0]);
        assert!(balance > 50, "overlapping holders lost debits: {balance}");
        let (stale, elapsed) = stale_and_elapsed(&transcript[1]);
        assert!(stale >= 1, "a holder whose lease expired found another token: {stale}");
        assert!(millis(&elapsed) < 1_500, "the leases overlapped: {elapsed}");
        assert_eq!(run.verdict().kind, VerdictKind::Reproduced);
    }
}

#[tokio::test]
async fn a_watchdog_keeps_the_lease_and_the_requests_take_turns() {
    let run = locks("locks/ttl", "watchdog").await;
    let transcript = run.transcript();
    assert_eq!(transcript[0], "accepted=5 balance=50 expected=50 OK");
    let (stale, elapsed) = stale_and_elapsed(&transcript[1]);
    assert_eq!(stale, 0);
    assert!(millis(&elapsed) >= 1_500, "five turns of 300 ms: {elapsed}");
    assert!(!transcript.iter().any(|l| l.contains("lock lost")), "{transcript:?}");
    assert_eq!(redis_value(&run, "wallet:42:balance"), Some(Value::from("50")));
    assert_eq!(run.verdict().kind, VerdictKind::Prevented);
}

/// The `writes rejected by the database=N` log line's count (after its timestamp).
fn rejected(line: &str) -> i64 {
    line.get(20..)
        .and_then(|rest| rest.strip_prefix("writes rejected by the database="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a rejected-writes line: {line:?}"))
}

#[tokio::test]
async fn a_healthy_lease_keeps_fifty_fenced_spends_in_line() {
    for variant in ["ttl-2s", "ttl-2s-version-check"] {
        let run = locks("locks/load-test", variant).await;
        let transcript = run.transcript();
        assert_eq!(transcript[0], "accepted=10 balance=0 expected=0 OK", "{variant}");
        assert_eq!(rejected(&transcript[1]), 0, "{variant}");
        assert_eq!(run.rows_after("wallets"), vec![row![42, 0]]);
        assert_eq!(run.verdict().kind, VerdictKind::Prevented, "{variant}");
    }
}

#[tokio::test]
async fn a_one_ms_lease_with_fencing_alone_lets_stale_reads_through() {
    // Timing decides the counts; the wrong balance and the never-negative one do not.
    for _ in 0..2 {
        let run = locks("locks/load-test", "ttl-1ms").await;
        let transcript = run.transcript();
        let (accepted, balance, ok) = check_line(&transcript[0]);
        assert!(accepted > 10 && !ok, "{}", transcript[0]);
        // Almost always 0, as in the tutorial's runs; a stale write that lands last leaves more
        // (30 seen once under CI's load). Never less.
        assert!(balance >= 0, "the balance never goes below 0: {}", transcript[0]);
        assert!(rejected(&transcript[1]) >= 0);
        assert_eq!(run.verdict().kind, VerdictKind::Reproduced);
    }
}

#[tokio::test]
async fn checking_the_version_read_turns_the_overlap_into_rejected_writes() {
    for _ in 0..2 {
        let run = locks("locks/load-test", "ttl-1ms-version-check").await;
        let transcript = run.transcript();
        assert_eq!(transcript[0], "accepted=10 balance=0 expected=0 OK");
        assert!(
            rejected(&transcript[1]) >= 1,
            "the overlap shows as refused writes: {}",
            transcript[1]
        );
        assert_eq!(run.rows_after("wallets"), vec![row![42, 0]]);
        assert_eq!(run.verdict().kind, VerdictKind::Prevented);
    }
}

/// The figures of the `gave up=N (err == ErrNotObtained matched M) elapsed=D` line.
fn gave_up_matched_elapsed(line: &str) -> (i64, i64, u64) {
    let rest = line.get(20..).unwrap_or_else(|| panic!("a log line: {line:?}"));
    let number_after = |tag: &str| -> i64 {
        rest.split(tag)
            .nth(1)
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {tag} in {line:?}"))
    };
    let elapsed = rest.rsplit("elapsed=").next().unwrap_or_default();
    (number_after("gave up="), number_after("matched "), millis(elapsed))
}

#[tokio::test]
async fn retries_in_lockstep_may_give_up_jitter_never_does_and_the_balance_is_right_either_way() {
    let run = locks("locks/retry", "no-jitter").await;
    let transcript = run.transcript();
    assert_eq!(transcript[0], "accepted=10 balance=0 expected=0 OK");
    let (gave_up, matched, elapsed) = gave_up_matched_elapsed(&transcript[1]);
    assert!((0..=40).contains(&gave_up), "{}", transcript[1]);
    assert_eq!(matched, 0, "the joined error is never == ErrNotObtained");
    assert!(
        elapsed <= 5_500,
        "nobody waits past the 5 s deadline: {}",
        transcript[1]
    );
    assert_eq!(run.verdict().kind, VerdictKind::Prevented);

    let run = locks("locks/retry", "jitter").await;
    let transcript = run.transcript();
    assert_eq!(transcript[0], "accepted=10 balance=0 expected=0 OK");
    let (gave_up, matched, elapsed) = gave_up_matched_elapsed(&transcript[1]);
    assert_eq!((gave_up, matched), (0, 0), "{}", transcript[1]);
    assert!(elapsed < 5_000, "{}", transcript[1]);
}

/// The client-timeout runs start a private `redis-server` each; one test checks that none
/// outlives its run by looking for any, so those tests take turns.
static PRIVATE_REDIS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn a_stalled_redis_holds_a_default_client_past_its_deadline() {
    let _turn = PRIVATE_REDIS.lock().await;
    let run = locks("locks/client-timeout", "context-timeouts").await;
    let line = &run.transcript()[0];
    let after = line.rsplit("after ").next().unwrap_or_default();
    // The tutorial's 100 ms; a busy machine rounds it up by a tick or two.
    assert!(
        line.starts_with("deadline honoured: a GET with a 100ms deadline failed after")
            && (100..300).contains(&millis(after)),
        "{line}"
    );
    assert_eq!(run.verdict().kind, VerdictKind::Prevented);
    let run = locks("locks/client-timeout", "default").await;
    let line = &run.transcript()[0];
    let after = line.rsplit("after ").next().unwrap_or_default();
    assert!(
        line.starts_with("default client: a GET with a 100ms deadline failed after") && millis(after) >= 4_900,
        "{line}"
    );
    assert_eq!(run.verdict().kind, VerdictKind::Reproduced);
    // The private server is gone with its run; the shared one (the tests' REDIS_URL) stays.
    let shared = common::config()
        .redis_url
        .rsplit(':')
        .next()
        .unwrap_or("6379")
        .to_owned();
    let private: Vec<String> = std::process::Command::new("pgrep")
        .args(["-af", "redis-server"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().map(str::to_owned).collect())
        .unwrap_or_default();
    let private: Vec<&String> = private.iter().filter(|l| !l.contains(&format!(":{shared}"))).collect();
    assert!(
        private.is_empty(),
        "a private redis-server outlived its run: {private:?}"
    );
}

#[tokio::test]
async fn a_reader_who_leaves_mid_run_leaves_no_key_behind() {
    let _slot = db_slot().await;
    let engine = engine().await;
    let ttl = racelab::labs::find("locks/ttl").expect("scenario");
    let mut handle = engine.start(ttl, "watchdog", shared::Mode::Auto).await.expect("start");
    let run_id = loop {
        match handle.updates.recv().await.expect("updates") {
            shared::ServerMsg::Event { event } if matches!(event.kind, EventKind::Step { .. }) => {}
            shared::ServerMsg::Started { run_id } => break run_id,
            _ => {}
        }
    };
    // The first Redis command is on its way: the reader closes the tab.
    loop {
        if let shared::ServerMsg::Event { event } = handle.updates.recv().await.expect("updates")
            && matches!(event.kind, EventKind::Step { .. })
        {
            break;
        }
    }
    drop(handle);
    assert_eq!(wait_until_clean(&run_id).await, Leftovers::NONE);
}

/// Where the first event matching `what` is in the run, if anywhere.
fn first(run: &Finished, what: impl Fn(&EventKind) -> bool) -> Option<usize> {
    run.events.iter().position(|e| what(&e.kind))
}

/// What A's late write did in a fencing run, from its events and the wallet it left alone: did A
/// send its UPDATE at all, had B taken the lock before it, and what the row holds.
fn what_the_stale_write_did(run: &Finished) -> &'static str {
    let a_writes = first(
        run,
        |k| matches!(k, EventKind::Step { actor, text, .. } if actor == "A" && text.starts_with("UPDATE")),
    );
    let b_locks = first(
        run,
        |k| matches!(k, EventKind::Lease { actor, change: LeaseChange::Acquired, .. } if actor == "B"),
    );
    let b_before_a = match (b_locks, a_writes) {
        (Some(b), Some(a)) => b < a,
        _ => b_locks.is_some(),
    };
    let wallet = run.rows_after("wallets");
    let (balance, fence) = (wallet[0][1].as_int(), wallet[0][2].as_int());
    match (a_writes.is_some(), b_before_a, balance, fence) {
        (true, true, Some(90), Some(34)) => "a-refused",
        (true, true, Some(90), Some(33)) => "a-overwrites",
        (true, false, Some(80), Some(34)) => "b-waits",
        (false, true, Some(90), Some(34)) => "a-stops",
        _ => "none of the choices",
    }
}

#[tokio::test]
async fn fencing_reveals_what_each_variant_really_did() {
    let def = racelab::labs::find("locks/fencing").expect("the scenario");
    for (variant, _, _) in def.variants {
        let run = locks("locks/fencing", variant).await;
        assert_eq!(
            common::revealed(&run, "locks/fencing", variant),
            what_the_stale_write_did(&run),
            "{variant}: the answer is what the run did"
        );
    }
}

/// What five requests with a lease shorter than their work came to, from the run alone: the
/// check line, the error lines, and how many leases were found lost under their holders.
fn what_the_leases_did(run: &Finished) -> &'static str {
    let transcript = run.transcript();
    let line = transcript
        .iter()
        .find(|l| l.starts_with("accepted="))
        .unwrap_or_else(|| panic!("a check line: {transcript:?}"));
    let (accepted, balance, _) = check_line(line);
    let errors = transcript.iter().filter(|l| l.starts_with("error: ")).count();
    let lost = run
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::Lease {
                    change: LeaseChange::Lost,
                    ..
                }
            )
        })
        .count();
    match (accepted, balance, errors, lost) {
        (5, 50, 0, 0) => "take-turns",
        (5, b, 0, 1..) if b > 50 => "debits-lost",
        (1, 90, 4, 0) => "others-give-up",
        (a, _, 1.., 1..) if a < 5 => "writes-dropped",
        _ => "none of the choices",
    }
}

#[tokio::test]
async fn ttl_reveals_what_each_variant_really_did() {
    let def = racelab::labs::find("locks/ttl").expect("the scenario");
    for (variant, _, _) in def.variants {
        let run = locks("locks/ttl", variant).await;
        assert_eq!(
            common::revealed(&run, "locks/ttl", variant),
            what_the_leases_did(&run),
            "{variant}: the answer is what the run did"
        );
    }
}

/// How the caller's GET to the stalled Redis ended, from its own events: a reply or a timeout,
/// and how long after the GET was sent.
fn what_the_stalled_get_did(run: &Finished) -> &'static str {
    let sent = run
        .events
        .iter()
        .position(
            |e| matches!(&e.kind, EventKind::Step { actor, text, .. } if actor == "caller" && text.starts_with("GET")),
        )
        .expect("the caller's GET");
    let ended = run.events[sent + 1..]
        .iter()
        .find(|e| {
            matches!(&e.kind, EventKind::Result { actor, .. } | EventKind::Error { actor, .. } if actor == "caller")
        })
        .expect("the GET's end");
    let after_ms = ended.at_ms.saturating_sub(run.events[sent].at_ms);
    match &ended.kind {
        EventKind::Error {
            kind: ErrorKind::Timeout,
            ..
        } if after_ms < 1_000 => "fails-at-deadline",
        EventKind::Error {
            kind: ErrorKind::Timeout,
            ..
        } if (4_000..6_000).contains(&after_ms) => "fails-after-5s",
        EventKind::Result { .. } if after_ms >= 5_500 => "answers-after-pause",
        EventKind::Result { .. } if after_ms < 1_000 => "answers-at-once",
        _ => "none of the choices",
    }
}

#[tokio::test]
async fn client_timeout_reveals_what_each_variant_really_did() {
    let _turn = PRIVATE_REDIS.lock().await;
    let def = racelab::labs::find("locks/client-timeout").expect("the scenario");
    for (variant, _, _) in def.variants {
        let run = locks("locks/client-timeout", variant).await;
        assert_eq!(
            common::revealed(&run, "locks/client-timeout", variant),
            what_the_stalled_get_did(&run),
            "{variant}: the answer is what the run did"
        );
    }
}
