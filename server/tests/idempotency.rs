//! The idempotency lab against real HTTP servers (the run's own card provider and shop API on
//! loopback) and real PostgreSQL ledgers: each scenario's phone lines as the tutorial prints
//! them (charge ids are random, so they are matched by shape), both ledgers, the key, the
//! verdict, and nothing left behind.

mod common;

use common::{Finished, Leftovers, engine, play, wait_until_clean};
use shared::event::Detail;
use shared::{EventKind, Outcome, Value, VerdictKind};

async fn idempotency(scenario: &str, variant: &str) -> Finished {
    idempotency_holding(scenario, variant, 1).await
}

/// As [`idempotency`], holding `slots` of the tests' database slots while it plays.
async fn idempotency_holding(scenario: &str, variant: &str, slots: u32) -> Finished {
    let _slots = common::db_slots(slots).await;
    let run = play(&engine().await, scenario, variant).await;
    assert_eq!(run.outcome, Outcome::Completed, "{scenario}: {:?}", run.outcome);
    assert_eq!(
        wait_until_clean(&run.run_id).await,
        Leftovers::NONE,
        "{scenario}: leftovers"
    );
    run
}

/// `201 {"id":N,"amount":2500,"provider_charge_id":"ch_…"}`: the charge id, if `line` is that
/// answer with payment `id`.
fn charged(line: &str, prefix: &str, id: i64, suffix: &str) -> Option<String> {
    let rest = line
        .strip_prefix(prefix)?
        .strip_prefix(&format!("201 {{\"id\":{id},\"amount\":2500,\"provider_charge_id\":\""))?;
    let charge = rest.strip_suffix(&format!("\"}}{suffix}"))?;
    let ok = charge.len() == 13 && charge.starts_with("ch_") && charge[3..].bytes().all(|b| b.is_ascii_hexdigit());
    ok.then(|| charge.to_owned())
}

/// The shop's and the provider's charge ids.
fn ledgers(run: &Finished) -> (Vec<Value>, Vec<Value>) {
    let shop = run.rows_after("charges").into_iter().map(|r| r[2].clone()).collect();
    let provider = run
        .rows_after("card_charges")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    (shop, provider)
}

#[tokio::test]
async fn without_a_key_the_retry_charges_the_card_again() {
    let run = idempotency("idempotency/double-charge", "naive").await;
    let transcript = run.transcript();
    assert_eq!(transcript.len(), 2, "{transcript:?}");
    assert_eq!(transcript[0], "attempt 1: no answer: timed out");
    let second = charged(&transcript[1], "attempt 2: ", 2, "").unwrap_or_else(|| panic!("{}", transcript[1]));
    let (shop, provider) = ledgers(&run);
    assert_eq!((shop.len(), provider.len()), (2, 2), "two charges in each ledger");
    assert!(
        provider.contains(&Value::Text(second)),
        "the phone saw the second charge"
    );
    assert!(
        run.rows_after("card_charges").iter().all(|r| r[1] == Value::Null),
        "no key reached the provider"
    );
    assert!(run.rows_after("idempotency_keys").is_empty());
    assert_eq!(run.verdict().kind, VerdictKind::Reproduced);
}

#[tokio::test]
async fn checking_the_key_first_still_charges_twice() {
    let run = idempotency("idempotency/check-first", "check-first").await;
    let transcript = run.transcript();
    assert_eq!(transcript[0], "attempt 1: no answer: timed out");
    let seen = charged(&transcript[1], "attempt 2: ", 2, "").unwrap_or_else(|| panic!("{}", transcript[1]));
    let (shop, provider) = ledgers(&run);
    assert_eq!((shop.len(), provider.len()), (2, 2));
    let keys = run.rows_after("idempotency_keys");
    assert_eq!(keys.len(), 1);
    let key = keys[0][0].as_text().expect("a key");
    assert_eq!(key.len(), 26, "a rand.Text() key: {key}");
    assert_eq!(keys[0][1..], [Value::from("completed"), Value::Int(201)]);
    // The key was saved by the first request (payment 1); the phone saw payment 2.
    assert_eq!(shop[1], Value::Text(seen));
    assert_eq!(run.verdict().kind, VerdictKind::Reproduced);
}

#[tokio::test]
async fn claiming_the_key_first_makes_the_retry_wait_for_the_answer() {
    let run = idempotency("idempotency/claim", "claim").await;
    let transcript = run.transcript();
    assert_eq!(transcript[0], "attempt 1: no answer: timed out");
    // The retry at 0.9 s lands while the first request is at the provider (until 1.0 s): 409.
    assert_eq!(
        transcript[1],
        r#"attempt 2: 409 {"error":"a request with this Idempotency-Key is still in progress"}"#
    );
    let replayed =
        charged(&transcript[2], "attempt 3: ", 1, " (replayed)").unwrap_or_else(|| panic!("{}", transcript[2]));
    assert_eq!(transcript.len(), 3, "a 201 is final: {transcript:?}");
    let (shop, provider) = ledgers(&run);
    assert_eq!(shop, vec![Value::Text(replayed.clone())]);
    assert_eq!(provider, vec![Value::Text(replayed)]);
    assert_eq!(
        run.rows_after("idempotency_keys"),
        vec![row!["order-7731", "completed", 201]]
    );
    let conflict = run
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Result {
                detail: Some(Detail::Response {
                    status: 409, headers, ..
                }),
                ..
            } => Some(headers.clone()),
            _ => None,
        })
        .expect("the 409's response");
    assert!(
        conflict.contains(&("retry-after".to_owned(), "1".to_owned())),
        "{conflict:?}"
    );
    assert_eq!(run.verdict().kind, VerdictKind::Prevented);
}

const IN_PROGRESS: &str = r#"409 {"error":"a request with this Idempotency-Key is still in progress"}"#;

#[tokio::test]
async fn twenty_copies_with_one_key_charge_once() {
    let run = idempotency("idempotency/parallel-copies", "copies").await;
    let transcript = run.transcript();
    assert_eq!(transcript.len(), 5, "{transcript:?}");
    let charge = charged(&transcript[0], "   1 attempt 1: ", 1, "").unwrap_or_else(|| panic!("{}", transcript[0]));
    for (n, line) in transcript.iter().enumerate().take(4).skip(1) {
        assert_eq!(line, &format!("  19 attempt {n}: {IN_PROGRESS}"));
    }
    assert_eq!(
        charged(&transcript[4], "  19 attempt 4: ", 1, " (replayed)"),
        Some(charge.clone())
    );
    let (shop, provider) = ledgers(&run);
    assert_eq!(
        (shop, provider),
        (vec![Value::Text(charge.clone())], vec![Value::Text(charge)])
    );
    assert_eq!(run.verdict().kind, VerdictKind::Prevented);
}

#[tokio::test]
async fn another_body_with_the_key_is_refused_and_the_quoted_key_replays() {
    let run = idempotency("idempotency/fingerprint", "fingerprint").await;
    let transcript = run.transcript();
    assert_eq!(transcript.len(), 5, "{transcript:?}");
    assert_eq!(transcript[0], "attempt 1: no answer: timed out");
    assert_eq!(transcript[1], format!("attempt 2: {IN_PROGRESS}"));
    let charge =
        charged(&transcript[2], "attempt 3: ", 1, " (replayed)").unwrap_or_else(|| panic!("{}", transcript[2]));
    assert_eq!(
        transcript[3],
        r#"attempt 1: 422 {"error":"Idempotency-Key was already used with a different request"}"#
    );
    assert_eq!(charged(&transcript[4], "attempt 1: ", 1, " (replayed)"), Some(charge));
    assert_eq!(
        run.rows_after("idempotency_keys"),
        vec![row!["order-7731", "completed", 201]]
    );
    assert_eq!(ledgers(&run).1.len(), 1, "one charge");
}

#[tokio::test]
async fn a_decline_is_stored_and_replayed() {
    let run = idempotency("idempotency/decline", "decline").await;
    assert_eq!(
        run.transcript(),
        vec![
            "attempt 1: no answer: timed out".to_owned(),
            format!("attempt 2: {IN_PROGRESS}"),
            r#"attempt 3: 402 {"error":"card declined"} (replayed)"#.to_owned(),
        ]
    );
    assert_eq!(ledgers(&run), (vec![], vec![]), "nothing charged, nothing recorded");
    assert_eq!(
        run.rows_after("idempotency_keys"),
        vec![row!["order-7732", "completed", 402]]
    );
    assert_eq!(run.verdict().kind, VerdictKind::Prevented);
}

#[tokio::test]
async fn faults_release_the_key_and_the_payment_goes_through_when_the_provider_is_back() {
    let run = idempotency("idempotency/provider-down", "provider-down").await;
    let transcript = run.transcript();
    let unavailable = r#"502 {"error":"payment provider unavailable"}"#;
    assert_eq!(
        transcript[..3],
        [
            format!("attempt 1: {unavailable}"),
            format!("attempt 2: {unavailable}"),
            "keys left after the faults: 0".to_owned(),
        ]
    );
    let charge = charged(&transcript[3], "attempt 1: ", 1, "").unwrap_or_else(|| panic!("{}", transcript[3]));
    assert_eq!(transcript.len(), 4, "a fresh 201, not a replay");
    assert_eq!(ledgers(&run).1, vec![Value::Text(charge)]);
    assert_eq!(
        run.rows_after("idempotency_keys"),
        vec![row!["order-7733", "completed", 201]]
    );
}

/// The load test's counted lines: (fresh 201s, replayed 201s, 409s).
fn load_counts(transcript: &[String]) -> (i64, i64, i64) {
    let count_of = |suffix: &str| -> i64 {
        transcript
            .iter()
            .find(|l| l.trim_start().split_once(' ').is_some_and(|(_, rest)| rest == suffix))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    (
        count_of("201 {payment}"),
        count_of("201 {payment} (replayed)"),
        count_of(IN_PROGRESS),
    )
}

#[tokio::test]
async fn thirty_payments_of_five_copies_charge_thirty_times_and_the_ledgers_agree() {
    // Its provider pool alone holds 32 connections: few other runs beside it.
    let run = idempotency_holding("idempotency/load-test", "final", 5).await;
    let transcript = run.transcript();
    let (fresh, replayed, conflicts) = load_counts(&transcript);
    assert_eq!((fresh, replayed), (30, 120), "{transcript:?}");
    // Each of the 120 losers is told 409 at least once, at most on its first three attempts.
    assert!((120..=360).contains(&conflicts), "{conflicts} × 409");
    assert_eq!(
        transcript[transcript.len() - 3..],
        [
            "payments 30 | distinct_amounts 30".to_owned(),
            "card_charges 30".to_owned(),
            "completed | 201 | 30".to_owned(),
        ]
    );
    let keys: Vec<Value> = run
        .rows_after("card_charges")
        .into_iter()
        .map(|r| r[1].clone())
        .collect();
    assert!(
        keys.iter().all(|k| k.as_text().is_some_and(|k| k.len() == 64)),
        "every charge carries the derived provider key"
    );
    assert_eq!(run.verdict().kind, VerdictKind::Prevented);
}

#[tokio::test]
async fn the_cleanup_deletes_keys_older_than_a_day_and_nothing_else() {
    let run = idempotency_holding("idempotency/expiry", "24h", 5).await;
    let transcript = run.transcript();
    assert_eq!(
        transcript[transcript.len() - 3..],
        ["UPDATE 12".to_owned(), "DELETE 12".to_owned(), "count 18".to_owned(),]
    );
    assert_eq!(run.verdict().kind, VerdictKind::Prevented);
}

#[tokio::test]
async fn a_new_key_per_attempt_charges_twice_with_two_provider_keys() {
    let run = idempotency("idempotency/new-key-per-attempt", "new-key").await;
    let transcript = run.transcript();
    assert_eq!(transcript[0], "attempt 1: no answer: timed out");
    charged(&transcript[1], "attempt 2: ", 2, "").unwrap_or_else(|| panic!("{}", transcript[1]));
    let provider_keys: Vec<Value> = run
        .rows_after("card_charges")
        .into_iter()
        .map(|r| r[1].clone())
        .collect();
    assert_eq!(provider_keys.len(), 2, "two charges");
    assert_ne!(provider_keys[0], provider_keys[1], "with two different provider keys");
    assert_eq!(run.rows_after("idempotency_keys").len(), 2, "two keys in the shop");
    assert_eq!(run.verdict().kind, VerdictKind::Reproduced);
}
