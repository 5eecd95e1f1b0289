//! The chaos test: a thousand payments (eight writers, `pay_00000` to `pay_00999`, amounts 100 to
//! 1099 cents, each authorized then captured) while two relays and the notifier crash at random
//! and are started again at once, as the tutorial's shell restart loops do: each relay dies after
//! producing on one batch in ten (`CRASH_RATE=0.1`), the notifier before its offset commit on one
//! message in five hundred (`0.002`). When the pipeline has drained, `verify` prints the six
//! figures, whose zeros and thousands must not vary:
//!
//! ```text
//! payments captured:          1000
//! outbox events:              2000 (0 unpublished)
//! messages on the topic:      2201 (201 duplicates)
//! events processed once:      2000
//! receipts sent:              1000 for 1000 payments
//! projection shows captured:  1000
//! ```
//!
//! and the replay audit, `payments with an 'authorized' arriving after 'captured': 98`. The
//! counts in between vary run to run; the arithmetic does not: duplicates are exactly the rows of
//! the batches a relay crashed after producing, and the payments read out of order are exactly
//! those with both events in such a batch (republished whole, straight after its first copy).
//!
//! The notifiers restart as the same static member, so no restart waits for a dead member to
//! expire (the tutorial's drain of about 40 s was mostly one such wait).

use super::figures::{self, Figures};
use super::notifier::{self, Switches as NotifierSwitches};
use super::relay::{self, Switches};
use super::writer::{authorize, capture};
use super::{TOPIC, finish, invariants, ledger, message};
use crate::engine::{Budget, ChildActor, End, Level, News, Run, RunError};
use crate::labs::{ScenarioDef, actors_at, tutorial_figures};
use shared::{Check, EventKind, Ledger, Table, Value};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// Payments, and the writers that make them.
pub const PAYMENTS: usize = 1000;
pub const WRITERS: usize = 8;
/// The crash rates of the tutorial's chaos run.
pub const RELAY_CRASH_RATE: f64 = 0.1;
pub const NOTIFIER_CRASH_RATE: f64 = 0.002;
/// How long the pipeline may take to drain before the run gives up.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(240);
/// The static member id every notifier of the run joins as.
pub const INSTANCE: &str = "notifier-1";

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "outbox/chaos",
    title: "Chaos: a thousand payments while the relays and the notifier keep crashing",
    hook: "Crash the relays after producing and the notifier before committing offsets, at random: the thousands still add up",
    about: "A thousand payments are authorized and captured while two relays (one active, one on standby) die after producing on one batch in ten, and the notifier dies before committing its offset on one message in five hundred; each is started again at once, as the tutorial's restart loops do. Duplicates pile up on the topic and messages arrive out of order, and none of it reaches the figures that matter: every event published, every event processed once, one receipt per payment, the projection right.",
    variants: &[
        (
            "1000",
            "1,000 payments",
            "Relays crash on 10% of batches, the notifier on 0.2% of messages",
        ),
        (
            "200",
            "200 payments",
            "The same crash rates on a fifth of the load: a quicker run",
        ),
    ],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |variant| {
        let mut lanes = actors_at(&["loadgen"], &format!("loadgen.py {variant}: eight writers, quiet"));
        lanes.extend(actors_at(
            &["relay A", "relay B"],
            "relay.py, CRASH_RATE=0.1, restarted at once",
        ));
        lanes.extend(actors_at(
            &["notifier"],
            "notifier.py, CRASH_RATE=0.002, restarted at once",
        ));
        lanes.extend(actors_at(&["verify"], "verify.py and replay_order.py"));
        lanes
    },
    budget: Some(|_| Budget::postgres(WRITERS as u32 + 4).and_broker(8).and_processes(3)),
    play: |run, variant| Box::pin(play(run, variant.parse().unwrap_or(PAYMENTS))),
    summarize: None,
    predict: None,
};

/// What the supervisor counted of one relay.
#[derive(Default)]
struct RelayCount {
    crashes: u64,
    /// Times it exited on its own (a failed delivery) and was restarted, as a restart loop does.
    exits: u64,
    batches: u64,
    /// Rows of its batches that were published: the `N` of its `published N:` lines.
    rows: u64,
    /// Messages produced in the batch under way (`(key, type)`), reset when it is marked.
    producing: Vec<(String, String)>,
}

/// Everything the supervisor counted.
#[derive(Default)]
struct Counts {
    relays: [RelayCount; 2],
    /// Messages the relays produced, every one acknowledged (a relay whose produce fails exits,
    /// and the run with it): the topic's length.
    produced: u64,
    notifier_crashes: u64,
    notifier_exits: u64,
    notifier_lines: u64,
    skipped: u64,
    /// Rows of the batches that a relay crashed after producing.
    replayed: u64,
    /// Payments with both events in one crashed batch.
    both_in_a_crash: HashSet<String>,
}

impl Counts {
    /// Counts one event of relay `i`.
    fn relay_event(&mut self, i: usize, event: &EventKind) {
        let relay = &mut self.relays[i];
        match event {
            EventKind::Step {
                text,
                detail: Some(shared::Detail::Message { key, value, .. }),
                ..
            } if text.starts_with("produce ") => {
                self.produced += 1;
                let kind = value.as_deref().and_then(message::read).map(|m| m.event_type);
                relay
                    .producing
                    .push((key.clone().unwrap_or_default(), kind.unwrap_or_default()));
            }
            EventKind::Say { line, .. } if line.starts_with("published ") => {
                relay.batches += 1;
                relay.rows += published_rows(line);
                relay.producing.clear();
            }
            _ => {}
        }
    }

    /// Relay `i` crashed: the batch it was producing will come again.
    fn relay_crashed(&mut self, i: usize) {
        let relay = &mut self.relays[i];
        relay.crashes += 1;
        self.replayed += relay.producing.len() as u64;
        let kinds = |wanted: &str| -> HashSet<String> {
            relay
                .producing
                .iter()
                .filter(|(_, kind)| kind == wanted)
                .map(|(key, _)| key.clone())
                .collect()
        };
        let both: Vec<String> = kinds("payment.authorized")
            .intersection(&kinds("payment.captured"))
            .cloned()
            .collect();
        self.both_in_a_crash.extend(both);
        relay.producing.clear();
    }

    /// Relay `i` exited on its own: what it was producing is unpublished and will come again.
    fn relay_exited(&mut self, i: usize) {
        self.relays[i].exits += 1;
        self.replayed += self.relays[i].producing.len() as u64;
        self.relays[i].producing.clear();
    }

    fn notifier_event(&mut self, event: &EventKind) {
        if let EventKind::Say { line, .. } = event
            && line.starts_with('p')
            && line.contains('@')
        {
            self.notifier_lines += 1;
            if line.ends_with(notifier::Outcome::Skipped.words()) {
                self.skipped += 1;
            }
        }
    }
}

async fn play(run: &Run, payments: usize) -> Result<(), RunError> {
    let before = ledger(run).await?;
    let crashing_relay = Switches {
        crash_after_produce: Some(RELAY_CRASH_RATE),
        ..Switches::default()
    };
    let mut relays = [
        relay::start_muted(run, "relay A", &crashing_relay).await?,
        relay::start_muted(run, "relay B", &crashing_relay).await?,
    ];
    let crashing_notifier = NotifierSwitches {
        crash_before_offset_commit: Some(NOTIFIER_CRASH_RATE),
        instance: Some(INSTANCE.into()),
        show_sql: false,
        ..NotifierSwitches::default()
    };
    let mut notifier = notifier::start_muted(run, "notifier", &crashing_notifier).await?;
    let started = Instant::now();
    let writers = load(run, payments);
    let (written, counts) = tokio::join!(writers, supervise(run, &mut relays, &mut notifier, payments));
    let (load_took, counts) = (written?, counts?);
    let drained = started.elapsed();
    for relay in &mut relays {
        relay.stop().await?;
    }
    notifier.stop().await?;
    let mut after = ledger(run).await?;
    let (actual, topic, stale) = verify(run, &after).await?;
    let expected = expected(payments);
    // Every figure but the topic's: at-least-once delivery repeats what a crash interrupted.
    let mut checks: Vec<Check> = expected
        .checks(&actual)
        .into_iter()
        .filter(|c| !c.rule.starts_with("messages on the topic"))
        .collect();
    checks.extend(invariants::checks(
        &invariants::state(run, &topic).await?,
        invariants::Scope::WITH_NOTIFIER,
    ));
    checks.extend(arithmetic(&counts, &actual, &stale, payments));
    after
        .tables
        .push(ours(&counts, &actual, stale.len(), load_took, drained));
    let headline = headline(&checks, &counts, &actual);
    finish(
        run,
        before,
        after,
        &expected,
        super::Judged {
            checks,
            headline,
            how: "Events leave the outbox only once the broker confirmed them, so a crash repeats a batch and never loses one; the inbox turns every repeat into 'duplicate, skipped', and the offset is committed only after the effects.",
        },
        Some(tutorial()),
    );
    Ok(())
}

/// The tutorial's `verify.py` then `replay_order.py`, on the verify lane: the six figures of the
/// ledger `after`, and how many payments were read out of order. Returns the figures, the topic
/// and those payments, which the checks compare with what the supervisor counted.
async fn verify(run: &Run, after: &Ledger) -> Result<(Figures, Table, HashSet<String>), RunError> {
    let verify = run.lane("verify", false);
    let actual = Figures::from_table(after.table(figures::TABLE));
    for line in actual.lines() {
        verify.say_exactly(line);
    }
    let topic = run.topic_table("messages", TOPIC).await?;
    let stale = stale_payments(&topic);
    verify.say_exactly(format!(
        "payments with an 'authorized' arriving after 'captured': {}",
        stale.len()
    ));
    Ok((actual, topic, stale))
}

/// A correct system's six figures for `payments` payments: every one captured, its two events
/// published, processed once, one receipt each. The topic too holds each event once.
fn expected(payments: usize) -> Figures {
    let n = payments as i64;
    Figures {
        captured: n,
        events: 2 * n,
        unpublished: 0,
        messages: 2 * n,
        processed: 2 * n,
        receipts: n,
        receipt_payments: n,
        projection_captured: n,
    }
}

/// The checks only this run can make, because the supervisor counted what every crash cut short:
/// the counts in between vary run to run, the arithmetic between them does not.
fn arithmetic(counts: &Counts, actual: &Figures, stale: &HashSet<String>, payments: usize) -> Vec<Check> {
    let n = payments as i64;
    let duplicates = actual.messages - actual.events;
    let published: u64 = counts.relays.iter().map(|r| r.rows).sum();
    let crashes = i64::try_from(counts.notifier_crashes).unwrap_or(i64::MAX);
    let skipped = i64::try_from(counts.skipped).unwrap_or(i64::MAX);
    vec![
        Check::new(
            "duplicates on the topic = rows of the batches a relay crashed after producing",
            format!("{duplicates} duplicates, {} rows in crashed batches", counts.replayed),
            duplicates == counts.replayed as i64,
        ),
        Check::new(
            format!("the relays' `published N` lines add up to {} events", 2 * n),
            format!("{published}"),
            published == 2 * n as u64,
        ),
        Check::new(
            "duplicates ≤ duplicates skipped ≤ duplicates + notifier crashes (a crashed first claim comes back as a duplicate)",
            format!("{duplicates} ≤ {skipped} ≤ {duplicates} + {crashes}"),
            duplicates <= skipped && skipped <= duplicates + crashes,
        ),
        Check::new(
            "payments read out of order = payments with both events in one crashed batch",
            format!(
                "{} read out of order, {} with both events in a crashed batch",
                stale.len(),
                counts.both_in_a_crash.len()
            ),
            *stale == counts.both_in_a_crash,
        ),
    ]
}

/// The headline: when everything holds, how much chaos it held through.
fn headline(checks: &[Check], counts: &Counts, actual: &Figures) -> String {
    if checks.iter().all(|c| c.holds) {
        format!(
            "{} duplicates, {} crashes, and the thousands still add up",
            actual.messages - actual.events,
            counts.relays.iter().map(|r| r.crashes).sum::<u64>() + counts.notifier_crashes
        )
    } else {
        "The figures do not add up".to_owned()
    }
}

/// The tutorial's loadgen: `payments` payments over [`WRITERS`] writers, each payment on a new
/// connection of its own (as `loadgen.py` opens one per payment), authorized then captured.
/// Returns how long it took.
async fn load(run: &Run, payments: usize) -> Result<Duration, RunError> {
    let started = Instant::now();
    let work = (0..WRITERS).map(|w| async move {
        for n in (w..payments).step_by(WRITERS) {
            let writer = run.worker(&format!("loadgen {}", w + 1), Level::Autocommit).await?;
            let id = format!("pay_{n:05}");
            authorize(&writer, &id, 100 + n as i64).await?;
            capture(&writer, &id).await?;
            writer.close().await;
        }
        Ok::<(), RunError>(())
    });
    for written in futures_util::future::join_all(work).await {
        written?;
    }
    run.lane("loadgen", false)
        .say_exactly(format!("{payments} payments authorized and captured"));
    Ok(started.elapsed())
}

/// Restarts every child that crashes, counts what each does, and reports progress, until every
/// event of `payments` payments is published and processed.
async fn supervise(
    run: &Run,
    relays: &mut [ChildActor; 2],
    notifier: &mut ChildActor,
    payments: usize,
) -> Result<Counts, RunError> {
    let events = 2 * payments as u64;
    let mut counts = Counts::default();
    let deadline = tokio::time::Instant::now() + DRAIN_LIMIT;
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let [relay_a, relay_b] = relays;
    loop {
        tokio::select! {
            news = relay_a.next() => on_relay(&mut counts, 0, relay_a, news).await?,
            news = relay_b.next() => on_relay(&mut counts, 1, relay_b, news).await?,
            news = notifier.next() => match news {
                Some(News::Event(event)) => counts.notifier_event(&event),
                Some(News::Ended(End::Crashed { .. })) => {
                    counts.notifier_crashes += 1;
                    notifier.restart().await?;
                }
                Some(News::Ended(End::Exited { .. })) => {
                    counts.notifier_exits += 1;
                    notifier.restart().await?;
                }
                Some(News::Listening(_)) | None => {}
            },
            _ = tick.tick() => {
                let (published, processed) = progress(run).await?;
                run.emit(EventKind::Progress { label: "events published".into(), done: published, total: events });
                run.emit(EventKind::Progress { label: "events processed".into(), done: processed, total: events });
                // Drained: every event published and processed, and every message, repeats
                // included, read and committed.
                if published == events && processed == events && counts.notifier_lines == counts.produced {
                    return Ok(counts);
                }
                if tokio::time::Instant::now() >= deadline {
                    return Err(RunError::Other(format!(
                        "the pipeline did not drain within {} s: {published} of {events} published, {processed} processed",
                        DRAIN_LIMIT.as_secs()
                    )));
                }
            }
        }
    }
}

async fn on_relay(counts: &mut Counts, i: usize, relay: &mut ChildActor, news: Option<News>) -> Result<(), RunError> {
    match news {
        Some(News::Event(event)) => counts.relay_event(i, &event),
        // The tutorial's `while true; do python relay.py; done`: whatever ended it, start it again.
        Some(News::Ended(End::Crashed { .. })) => {
            counts.relay_crashed(i);
            relay.restart().await?;
        }
        Some(News::Ended(End::Exited { .. })) => {
            counts.relay_exited(i);
            relay.restart().await?;
        }
        Some(News::Listening(_)) | None => {}
    }
    Ok(())
}

/// Events published and processed so far.
async fn progress(run: &Run) -> Result<(u64, u64), RunError> {
    let counts = run
        .check(
            &format!(
                "SELECT (SELECT count(*) FROM {p}.outbox WHERE published_at IS NOT NULL),
                        (SELECT count(*) FROM {n}.processed_events)",
                p = crate::sandbox::postgres::quote_ident(run.schema("payments")?),
                n = crate::sandbox::postgres::quote_ident(run.schema("notifier")?),
            ),
            &[],
        )
        .await?;
    let at = |i: usize| counts.int_at(i).map(|v| u64::try_from(v).unwrap_or(0));
    Ok((at(0)?, at(1)?))
}

/// The tutorial's `replay_order.py`: payments whose authorization arrives after their capture,
/// reading each partition in offset order (a payment's events share a partition).
pub fn stale_payments(topic: &Table) -> HashSet<String> {
    let mut captured = HashSet::new();
    let mut stale = HashSet::new();
    for row in &topic.rows {
        let Some(event) = row.get(3).and_then(Value::as_text).and_then(message::read) else {
            continue;
        };
        if event.event_type == "payment.captured" {
            captured.insert(event.payment_id);
        } else if captured.contains(&event.payment_id) {
            stale.insert(event.payment_id);
        }
    }
    stale
}

/// The `N` of a relay's `published N: …` line.
fn published_rows(line: &str) -> u64 {
    line.strip_prefix("published ")
        .and_then(|rest| rest.split(':').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// This run's own figures, beside the tutorial's (a reference, never the expected state).
fn ours(counts: &Counts, actual: &Figures, stale: usize, load: Duration, drained: Duration) -> Table {
    let rows: Vec<(&str, String)> = vec![
        ("duplicates on the topic", (actual.messages - actual.events).to_string()),
        (
            "relay A: crashes, batches published",
            format!("{}, {}", counts.relays[0].crashes, counts.relays[0].batches),
        ),
        (
            "relay B: crashes, batches published",
            format!("{}, {}", counts.relays[1].crashes, counts.relays[1].batches),
        ),
        ("notifier: crashes", counts.notifier_crashes.to_string()),
        (
            "exits without a crash (restarted)",
            (counts.relays.iter().map(|r| r.exits).sum::<u64>() + counts.notifier_exits).to_string(),
        ),
        ("notifier: duplicates skipped", counts.skipped.to_string()),
        ("payments read out of order", stale.to_string()),
        ("load took", format!("{:.1} s", load.as_secs_f64())),
        ("drained after", format!("{:.1} s", drained.as_secs_f64())),
    ];
    Table {
        name: "this run".into(),
        columns: vec!["figure".into(), "this run".into()],
        key_columns: 1,
        rows: rows
            .into_iter()
            .map(|(figure, value)| vec![Value::from(figure), Value::from(value)])
            .collect(),
    }
}

/// What the tutorial's one chaos run printed and counted.
fn tutorial() -> shared::Ledger {
    tutorial_figures(&[
        ("duplicates on the topic", "201 (2201 messages)"),
        ("relay A: crashes, batches published", "3, 37"),
        (
            "relay B: crashes, batches published",
            "0, 0 (A's restart loop won the lock back each time)",
        ),
        ("notifier: crashes", "1"),
        ("notifier: duplicates skipped", "202 (201 repeats + 1 redelivery)"),
        ("payments read out of order", "98"),
        ("load took", "about 2.5 s"),
        (
            "drained after",
            "about 40 s, most of it a dead notifier's session timing out",
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(messages: &[(&str, &str)]) -> Table {
        Table {
            name: "messages".into(),
            columns: vec![],
            key_columns: 2,
            rows: messages
                .iter()
                .enumerate()
                .map(|(offset, (payment, kind))| {
                    let value = message::event("e", kind, payment, "2026-10-21 09:12:33+00", "{}");
                    vec![
                        Value::Int(0),
                        Value::Int(offset as i64),
                        Value::from(*payment),
                        Value::from(value),
                    ]
                })
                .collect(),
        }
    }

    #[test]
    fn an_authorization_after_its_capture_is_stale() {
        let a = "payment.authorized";
        let c = "payment.captured";
        let replayed = topic(&[("p1", a), ("p1", c), ("p2", a), ("p1", a), ("p1", c), ("p2", c)]);
        assert_eq!(stale_payments(&replayed), HashSet::from(["p1".to_owned()]));
        let in_order = topic(&[("p1", a), ("p1", a), ("p1", c)]);
        assert!(stale_payments(&in_order).is_empty());
    }

    #[test]
    fn a_crashed_batch_counts_its_rows_and_its_whole_payments() {
        let mut counts = Counts::default();
        for (key, kind) in [
            ("p1", "payment.authorized"),
            ("p1", "payment.captured"),
            ("p2", "payment.authorized"),
        ] {
            counts.relays[0].producing.push((key.into(), kind.into()));
        }
        counts.relay_crashed(0);
        assert_eq!(counts.replayed, 3);
        assert_eq!(counts.both_in_a_crash, HashSet::from(["p1".to_owned()]));
        assert!(counts.relays[0].producing.is_empty());
    }
}
