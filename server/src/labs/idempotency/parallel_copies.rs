//! Twenty identical copies at once: one key shared by all twenty (the phone's `-parallel 20`,
//! first timeout 3 s). One wins the claim and is at the provider for a second; the other 19 get
//! 409 at about 0, 0.3 and 0.9 s, and the stored answer on their fourth attempt at about 2.1 s.
//! Counted the way the tutorial counts them (`sort | uniq -c` of the lines without `copy N `):
//! 1 × `attempt 1: 201`, 19 × 409 on attempts 1–3, 19 × `attempt 4: 201 … (replayed)`. One charge.

use super::phone::{Attempt, KeyMode, Settings, pay_printing};
use super::shop::CLAIM;
use super::{Servers, finish, ledger};
use crate::engine::{Run, RunError};
use crate::labs::ScenarioDef;
use std::time::Duration;

/// How many copies, and how many of them get a lane.
pub const COPIES: usize = 20;
pub const SHOWN: usize = 3;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "idempotency/parallel-copies",
    title: "Twenty copies of one payment at once",
    hook: "Twenty requests with one key: one charge, 57 × 409, 19 replays",
    about: "Twenty copies of the same payment, one key, all sent at once. The atomic claim lets exactly one through to the provider; every other copy is told 409 (still in progress) until the answer is stored, then gets that answer. The copies needed four attempts only because the client ignores Retry-After.",
    variants: &[("copies", "20 copies", "One key shared by twenty simultaneous requests")],
    steppable: false,
    workload: false,
    sandbox: super::SANDBOX,
    actors: |_| {
        // The shown copies' lanes, then the shop's and the provider's (not the single phone's).
        let copies: Vec<String> = (1..=SHOWN).map(|i| format!("copy {i}")).collect();
        let names: Vec<&str> = copies.iter().map(String::as_str).collect();
        let mut lanes = crate::labs::actors_at(&names, "a copy; 17 more run unseen");
        lanes.extend(super::lanes("", "atomic claim").into_iter().skip(1));
        lanes
    },
    budget: Some(|_| super::BUDGET),
    play: |run, _| Box::pin(play(run)),
    summarize: None,
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

async fn play(run: &Run) -> Result<(), RunError> {
    let servers = Servers::start(run, CLAIM).await?;
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
    let copies = futures_util::future::join_all(phones.iter().enumerate().map(|(i, phone)| {
        let (base, settings) = (&base, &settings);
        async move { pay_printing(phone, base, settings, &format!("copy {} ", i + 1), false).await }
    }))
    .await;
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
    finish(
        run,
        before,
        "Exactly one copy's INSERT claimed the key; every other copy waited for its stored answer.",
        1,
    )
    .await
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
