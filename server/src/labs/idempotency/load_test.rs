//! The load test, final configuration (a 30 s lease and the provider key): thirty payments of
//! distinct amounts (1001 to 1030), each sent as five identical copies at the same instant (first
//! timeout 3 s), 150 copies in all. Counted as the tutorial counts them (the `copy N attempt N: `
//! prefix dropped, payments written `{payment}`): `30 201 {payment}`, `120 201 {payment}
//! (replayed)`, `360 409 {…}`. Then the ledgers: 30 payments of 30 distinct amounts, 30 card
//! charges, 30 keys completed with 201. Both ledgers agree; counting 201s alone would have passed
//! the naive shop too.

use super::phone::{Attempt, KeyMode, Settings, pay_printing};
use super::shop::{Mode, Options};
use super::{Servers, ledger};
use crate::engine::{Budget, HttpClient, Run, RunError};
use crate::labs::{ScenarioDef, actors_at};
use shared::{Check, EventKind, Ledger, Moment, Verdict};
use std::time::Duration;

/// How many payments, how many copies of each, and the first amount less one.
pub const PAYMENTS: usize = 30;
pub const COPIES: usize = 5;
pub const BASE_AMOUNT: i64 = 1000;
/// The final configuration.
pub const LEASE: Duration = Duration::from_secs(30);
/// Every payment's winner holds a provider connection for its second at the card network: the
/// provider's pool must hold them all (the tutorial's has 50).
pub const PROVIDER_POOL: u32 = 32;

pub static SCENARIO: ScenarioDef = ScenarioDef {
    id: "idempotency/load-test",
    title: "Load test: thirty payments, five copies each, at once",
    hook: "150 simultaneous requests: 30 charges, 120 replays, 360 × 409, and the ledgers agree",
    about: "The final configuration (the claim, a 30 s lease, the key passed to the provider) against a burst of duplicates: thirty payments with distinct amounts, each sent as five identical copies in the same instant. One copy of each charges; the others wait on 409 and get its stored answer. The check that matters is not the count of 201s but both ledgers: thirty payments, thirty charges.",
    variants: &[("final", "lease 30 s + provider key", "30 payments × 5 copies")],
    steppable: false,
    // Not a free-running workload: its two ledgers are the point, so the page draws them (and
    // the one copy it shows) rather than a strategies chart.
    workload: false,
    sandbox: super::SANDBOX,
    // The shop and the provider serve the crowd on quiet lanes: only the copy shown is drawn.
    actors: |_| actors_at(&["payment 1 copy 1"], "one copy shown; 149 more run unseen"),
    budget: Some(|_| Budget::postgres(PROVIDER_POOL + super::POOL)),
    play: |run, _| Box::pin(async move { play(run, true).await.map(|_| ()) }),
    summarize: None,
    predict: None,
};

/// A payment's answer as the tutorial's `sed` writes it: the body from `{"id"` on is
/// `{payment}`.
pub fn masked(line: &str) -> String {
    match line.find("{\"id\"") {
        Some(at) => {
            let tail = &line[at..];
            let end = tail.rfind('}').map_or(tail.len(), |i| i + 1);
            format!("{}{{payment}}{}", &line[..at], &tail[end..])
        }
        None => line.to_owned(),
    }
}

/// Plays the burst and reports its counts; with `judge`, also the ledgers and the verdict (the
/// expiry scenario, which continues from the burst, judges its own). Returns the servers, still
/// running.
pub async fn play(run: &Run, judge: bool) -> Result<Servers, RunError> {
    let mode = Mode::Idempotent(Options::leased(LEASE, true));
    let servers = Servers::start_for_crowd(run, mode, PROVIDER_POOL).await?;
    let before = ledger(run).await?;
    let copies = send(run, &servers.shop.url(""), phones(run)).await;
    for line in super::parallel_copies::counted(&answers(&copies)) {
        run.say_plain(line);
    }
    servers.settle().await?;
    let after = ledger(run).await?;
    let totals = Totals::of(run, &after).await?;
    totals.say(run);
    if !judge {
        return Ok(servers);
    }
    emit_ledgers(run, before, after);
    run.verdict(totals.verdict());
    Ok(servers)
}

/// Every copy's phone and what it sends: five copies of each payment, each payment with its own
/// amount. Only payment 1's copy 1 is drawn; the others are workers on quiet lanes.
fn phones(run: &Run) -> Vec<(usize, HttpClient, Settings)> {
    (1..=PAYMENTS)
        .flat_map(|payment| {
            // One key per payment, shared by its five copies, as `pay -parallel 5` makes it.
            let settings = Settings {
                amount: BASE_AMOUNT + payment as i64,
                key: KeyMode::Once(crate::labs::rand_text()),
                first_timeout: Duration::from_secs(3),
                ..Settings::default()
            };
            (1..=COPIES).map(move |copy| (payment, copy, settings.clone()))
        })
        .map(|(payment, copy, settings)| {
            let name = format!("payment {payment} copy {copy}");
            let phone = if payment == 1 && copy == 1 {
                run.http_client(&name)
            } else {
                run.http_worker(&name)
            };
            (copy, phone, settings)
        })
        .collect()
}

/// Sends every copy at once to the shop at `base`, and returns each copy's attempts.
async fn send(run: &Run, base: &str, phones: Vec<(usize, HttpClient, Settings)>) -> Vec<Vec<Attempt>> {
    let total = phones.len() as u64;
    let copies = futures_util::future::join_all(phones.iter().map(|(copy, phone, settings)| async move {
        pay_printing(phone, base, settings, &format!("copy {copy} "), false).await
    }))
    .await;
    run.emit(EventKind::Progress {
        label: "copies answered".into(),
        done: total,
        total,
    });
    copies
}

/// Every answer as the tutorial counts it: masked, without its `copy N attempt N: ` prefix.
fn answers(copies: &[Vec<Attempt>]) -> Vec<String> {
    copies
        .iter()
        .flat_map(|attempts| {
            attempts
                .iter()
                .enumerate()
                .map(|(n, a): (usize, &Attempt)| masked(&a.line(n as u32 + 1)))
        })
        .map(|line| line.split_once(": ").map_or(line.clone(), |(_, rest)| rest.to_owned()))
        .collect()
}

/// What both ledgers hold after the burst, as the tutorial's queries count it: the shop's
/// payments and their distinct amounts, the provider's card charges, the keys completed with 201.
#[derive(Clone, Copy)]
struct Totals {
    payments: i64,
    amounts: i64,
    card_charges: i64,
    completed: i64,
}

impl Totals {
    /// Counts the ledger `after` (and the shop's amounts, which it does not show).
    async fn of(run: &Run, after: &Ledger) -> Result<Totals, RunError> {
        let totals = run
            .check("SELECT count(*), count(DISTINCT amount) FROM charges", &[])
            .await?;
        let (payments, amounts) = (totals.int_at(0)?, totals.int_at(1)?);
        let card_charges = after.table("card_charges").map_or(0, |t| t.rows.len()) as i64;
        let completed = after.table("idempotency_keys").map_or(0, |t| {
            t.rows
                .iter()
                .filter(|r| {
                    r.get(1).and_then(|v| v.as_text()) == Some("completed")
                        && r.get(2).and_then(|v| v.as_int()) == Some(201)
                })
                .count()
        }) as i64;
        Ok(Totals {
            payments,
            amounts,
            card_charges,
            completed,
        })
    }

    /// The tutorial's three query results, as lines.
    fn say(&self, run: &Run) {
        run.say_plain(format!(
            "payments {} | distinct_amounts {}",
            self.payments, self.amounts
        ));
        run.say_plain(format!("card_charges {}", self.card_charges));
        run.say_plain(format!("completed | 201 | {}", self.completed));
    }

    /// One payment per payment sent, in both ledgers: counting 201s alone would not tell.
    fn verdict(&self) -> Verdict {
        let want = PAYMENTS as i64;
        let Totals {
            payments,
            amounts,
            card_charges,
            completed,
        } = *self;
        let checks = vec![
            Check::new(
                format!("{want} payments, of {want} distinct amounts"),
                format!("{payments} payments, {amounts} amounts"),
                payments == want && amounts == want,
            ),
            Check::new(
                format!("{want} card charges"),
                format!("{card_charges} charges"),
                card_charges == want,
            ),
            Check::new(
                format!("{want} keys completed with 201"),
                format!("{completed} keys"),
                completed == want,
            ),
        ];
        let ok = checks.iter().all(|c| c.holds);
        Verdict::judge(
            checks,
            if ok {
                format!("150 copies, {want} payments: both ledgers agree")
            } else {
                format!("150 copies: {payments} payments, {card_charges} charges")
            },
            "Each payment's five copies shared one key: one claimed it and charged (with the key passed on to the provider), the others waited for its answer.",
        )
    }
}

/// The ledgers before and after, a correct system's (one charge per payment in each), and the
/// tutorial's counts beside them.
fn emit_ledgers(run: &Run, before: Ledger, after: Ledger) {
    let want = PAYMENTS as i64;
    for (moment, ledger) in [
        (Moment::Before, before),
        (Moment::After, after),
        (
            Moment::Expected,
            Ledger {
                tables: vec![super::counts(want, want)],
            },
        ),
        (
            Moment::Reference,
            crate::labs::tutorial_figures(&[
                ("30 201 {payment}", "30 (one per payment)"),
                ("201 {payment} (replayed)", "120"),
                (
                    "409 … still in progress",
                    "360 (each loser three times: at 0, 0.3 and 0.9 s)",
                ),
                (
                    "racelab",
                    "150 clients on one task start later than 150 processes, so fewer 409s",
                ),
            ]),
        ),
    ] {
        run.emit(EventKind::Ledger { moment, ledger });
    }
}

#[cfg(test)]
mod tests {
    use super::masked;

    #[test]
    fn payments_are_masked_as_the_tutorials_sed_does() {
        assert_eq!(
            masked(r#"201 {"id":7,"amount":1007,"provider_charge_id":"ch_0123456789"} (replayed)"#),
            "201 {payment} (replayed)"
        );
        assert_eq!(masked(r#"409 {"error":"x"}"#), r#"409 {"error":"x"}"#);
    }
}
