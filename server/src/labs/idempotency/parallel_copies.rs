//! Twenty identical copies at once: one key shared by all twenty (the phone's `-parallel 20`,
//! first timeout 3 s). One wins the claim and is at the provider for a second; the other 19 get
//! 409 at about 0, 0.3 and 0.9 s, and the stored answer on their fourth attempt at about 2.1 s.
//! Counted the way the tutorial counts them (`sort | uniq -c` of the lines without `copy N `):
//! 1 × `attempt 1: 201`, 19 × 409 on attempts 1–3, 19 × `attempt 4: 201 … (replayed)`. One charge.
//!
//! `one-transaction` (the troubleshooting table's "retries never get 409"): the claim is made in
//! the charge's own transaction. Each duplicate's INSERT waits on the first one's uncommitted key
//! (PostgreSQL shows the shop's sessions waiting on a lock, sampled every 10 ms) until the first
//! commits, then sees it completed and replays it: 1 × `attempt 1: 201`, 19 × `attempt 1: 201 …
//! (replayed)`. Still one charge, but every waiting duplicate held one of the shop's four
//! connections for the second the charge took, and the rest queued for one.

use super::phone::{Attempt, KeyMode, Settings, pay_printing};
use super::shop::{CLAIM, Mistake, Mode, Options};
use super::{POOL, Servers, finish_with, ledger};
use crate::engine::{Run, RunError};
use crate::labs::ScenarioDef;
use crate::sandbox::application_name;
use shared::Check;
use std::time::Duration;

/// How many copies, and how many of them get a lane.
pub const COPIES: usize = 20;
pub const SHOWN: usize = 3;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "idempotency/parallel-copies",
    title: "Twenty copies of one payment at once",
    hook: "Twenty requests with one key: one charge, 57 × 409, 19 replays",
    about: "Twenty copies of the same payment, one key, all sent at once. The atomic claim lets exactly one through to the provider; every other copy is told 409 (still in progress) until the answer is stored, then gets that answer. The copies needed four attempts only because the client ignores Retry-After.",
    variants: &[
        ("copies", "20 copies", "One key shared by twenty simultaneous requests"),
        (
            "one-transaction",
            "claim inside the charge",
            "The claim shares the charge's transaction: duplicates wait on a lock instead of getting 409",
        ),
    ],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |variant| {
        // The shown copies' lanes, then the shop's and the provider's (not the single phone's).
        let copies: Vec<String> = (1..=SHOWN).map(|i| format!("copy {i}")).collect();
        let names: Vec<&str> = copies.iter().map(String::as_str).collect();
        let mut lanes = crate::labs::actors_at(&names, "a copy; 17 more run unseen");
        let shop = if variant == "one-transaction" {
            "claim inside the charge's transaction"
        } else {
            "atomic claim"
        };
        lanes.extend(super::lanes("", shop).into_iter().skip(1));
        lanes
    },
    budget: Some(|_| super::BUDGET),
    play: |run, variant| Box::pin(play(run, variant == "one-transaction")),
    summarize: None,
    predict: None,
};

/// The lines as `sort | uniq -c` printed them in the tutorial: the count right-aligned in four
/// columns.
pub fn counted(lines: &[String]) -> Vec<String> {
    let mut sorted = lines.to_vec();
    sorted.sort();
    let mut out: Vec<(usize, String)> = Vec::new();
    for line in sorted {
        match out.last_mut() {
            Some((count, last)) if *last == line => *count += 1,
            _ => out.push((1, line)),
        }
    }
    out.into_iter()
        .map(|(count, line)| format!("{count:>4} {line}"))
        .collect()
}

async fn play(run: &Run, one_transaction: bool) -> Result<(), RunError> {
    let mode = if one_transaction {
        Mode::Idempotent(Options::mistaken(Mistake::ClaimInsideTheCharge))
    } else {
        CLAIM
    };
    let servers = Servers::start(run, mode).await?;
    let before = ledger(run).await?;
    let settings = Settings {
        key: KeyMode::Once(crate::labs::rand_text()),
        first_timeout: Duration::from_secs(3),
        ..Settings::default()
    };
    let phones: Vec<_> = (1..=COPIES)
        .map(|i| {
            let name = format!("copy {i}");
            if i <= SHOWN {
                run.http_client(&name)
            } else {
                run.http_worker(&name)
            }
        })
        .collect();
    let base = servers.shop.url("");
    let all_copies = futures_util::future::join_all(phones.iter().enumerate().map(|(i, phone)| {
        let (base, settings) = (&base, &settings);
        async move { pay_printing(phone, base, settings, &format!("copy {} ", i + 1), false).await }
    }));
    let (copies, waits) = lock_waits(run, "shop", all_copies).await?;
    let lines: Vec<String> = copies
        .iter()
        .flat_map(|attempts| {
            attempts
                .iter()
                .enumerate()
                .map(|(n, a): (usize, &Attempt)| a.line(n as u32 + 1))
        })
        .collect();
    for line in counted(&lines) {
        run.say_plain(line);
    }
    servers.settle().await?;
    let waited = Check::new(
        format!(
            "a duplicate is answered at once: no claim waits on a lock for more than {} ms",
            LONG_WAIT.as_millis()
        ),
        match waits.longest_ms {
            0 => "no session of the shop was seen waiting on a lock".to_owned(),
            ms => format!(
                "the longest wait seen: {ms} ms; up to {} of the shop's {POOL} sessions waiting at once",
                waits.most_at_once
            ),
        },
        u128::from(waits.longest_ms) <= LONG_WAIT.as_millis(),
    );
    let how = if one_transaction {
        "The claim was not committed until the charge was, so each duplicate's INSERT waited on the first one's uncommitted key, holding a connection of the shop's small pool for the whole second the charge took, while the rest queued for one. Nobody got 409; they all hung, then replayed."
    } else {
        "Exactly one copy's INSERT claimed the key; every other copy waited for its stored answer."
    };
    finish_with(run, before, how, 1, vec![waited]).await
}

/// How long a claim may wait on a lock and still count as answered at once: the atomic claim's
/// duplicates wait too, for the instant until the winner's autocommitted INSERT commits, well
/// under a millisecond; the claim inside the charge's transaction waits for the whole charge.
pub const LONG_WAIT: Duration = Duration::from_millis(100);

/// What sampling the shop's sessions saw.
struct Waits {
    /// The longest a statement had been waiting on a lock when a sample saw it.
    longest_ms: u64,
    most_at_once: i64,
}

/// Runs `work` while sampling, every 10 ms, lane `lane`'s PostgreSQL sessions that wait on a lock
/// (`pg_stat_activity.wait_event_type = 'Lock'`, and how long their statement has run): waits
/// seen, not assumed.
async fn lock_waits<T>(run: &Run, lane: &str, work: impl Future<Output = T>) -> Result<(T, Waits), RunError> {
    let name = application_name(run.id(), lane);
    let mut work = std::pin::pin!(work);
    let mut waits = Waits {
        longest_ms: 0,
        most_at_once: 0,
    };
    loop {
        tokio::select! {
            output = &mut work => return Ok((output, waits)),
            () = tokio::time::sleep(Duration::from_millis(10)) => {
                let seen = run
                    .check(
                        "SELECT count(*), coalesce(max(extract(epoch FROM clock_timestamp() - query_start) * 1000), 0)::bigint
                         FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
                        &[name.clone().into()],
                    )
                    .await?;
                waits.most_at_once = waits.most_at_once.max(seen.int_at(0)?);
                waits.longest_ms = waits.longest_ms.max(u64::try_from(seen.int_at(1)?).unwrap_or(0));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::counted;

    #[test]
    fn lines_are_counted_as_sort_and_uniq_count_them() {
        let lines: Vec<String> = ["b", "a", "b", "b"].iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(counted(&lines), vec!["   1 a", "   3 b"]);
    }
}
