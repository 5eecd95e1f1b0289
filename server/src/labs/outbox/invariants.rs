//! The rules a sound outbox pipeline keeps, payment by payment, whatever crashed: the issue's
//! "no lost events, no phantom events, exactly one receipt per captured payment, per-payment
//! order". The totals in [`super::figures`] can agree while two errors cancel out; these cannot.
//!
//! The state is plain data read from both databases and the topic, and the rules are a pure
//! function of it, tested below.

use super::message;
use crate::engine::{Run, RunError};
use shared::{Check, Table, Value};
use std::collections::{HashMap, HashSet};

/// One message on the topic, as the rules read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub event_id: Option<String>,
    pub payment_id: String,
    pub event_type: String,
}

/// Everything the rules look at.
#[derive(Clone, Debug, Default)]
pub struct State {
    /// `(id, status)` of every payment.
    pub payments: Vec<(String, String)>,
    /// `(event_id, aggregate_id, event_type, published)`, in id order.
    pub outbox: Vec<(String, String, String, bool)>,
    /// The topic's messages, each partition in offset order.
    pub messages: Vec<Message>,
    /// `(payment_id, receipts)`.
    pub receipts: Vec<(String, i64)>,
    /// The notifier's `(payment_id, status)`.
    pub projection: Vec<(String, String)>,
}

/// Which rules apply to a scenario.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scope<'a> {
    /// A notifier ran: the receipt and projection rules apply.
    pub notifier: bool,
    /// Only these payments are the scenario's own (the rest is stage it inherited); `None`: all.
    pub payments: Option<&'a [&'a str]>,
}

impl Scope<'_> {
    /// Every payment, with a notifier: every rule applies.
    pub const WITH_NOTIFIER: Scope<'static> = Scope {
        notifier: true,
        payments: None,
    };
}

/// The rules, one check each.
pub fn checks(state: &State, scope: Scope<'_>) -> Vec<Check> {
    let rules = Rules::new(state, scope);
    let mut checks = vec![
        rules.no_lost_events(),
        rules.no_phantom_events(),
        rules.per_payment_order(),
    ];
    if scope.notifier {
        checks.push(rules.one_receipt_each());
        checks.push(rules.projection_right());
    }
    checks
}

/// The state as every rule reads it: which payments are the scenario's own, each payment's
/// status, and the captured ones among them. Worked out once, since most rules need them.
struct Rules<'a> {
    state: &'a State,
    scope: Scope<'a>,
    status: HashMap<&'a str, &'a str>,
    captured: Vec<&'a str>,
}

impl<'a> Rules<'a> {
    fn new(state: &'a State, scope: Scope<'a>) -> Rules<'a> {
        let mut rules = Rules {
            state,
            scope,
            status: state.payments.iter().map(|(id, s)| (id.as_str(), s.as_str())).collect(),
            captured: Vec::new(),
        };
        rules.captured = state
            .payments
            .iter()
            .filter(|(id, s)| s == "captured" && rules.ours(id))
            .map(|(id, _)| id.as_str())
            .collect();
        rules
    }

    /// Whether payment `id` is the scenario's own.
    fn ours(&self, id: &str) -> bool {
        self.scope.payments.is_none_or(|own| own.contains(&id))
    }

    /// Whether payment `id`'s capture has an event, in the outbox or on the topic.
    fn told_captured(&self, id: &str) -> bool {
        let state = self.state;
        state
            .outbox
            .iter()
            .any(|(_, p, t, _)| p == id && t == "payment.captured")
            || state
                .messages
                .iter()
                .any(|m| m.payment_id == id && m.event_type == "payment.captured")
    }

    /// A capture with no event, or an event marked published that the topic never got: what a
    /// crash between the change and its publication loses.
    fn no_lost_events(&self) -> Check {
        let on_topic: HashSet<&str> = self
            .state
            .messages
            .iter()
            .filter_map(|m| m.event_id.as_deref())
            .collect();
        let untold: Vec<&str> = self
            .captured
            .iter()
            .copied()
            .filter(|id| !self.told_captured(id))
            .collect();
        let unpublished_but_marked: Vec<&str> = self
            .state
            .outbox
            .iter()
            .filter(|(e, p, _, published)| *published && self.ours(p) && !on_topic.contains(e.as_str()))
            .map(|(_, p, ..)| p.as_str())
            .collect();
        let lost: Vec<&str> = untold.iter().chain(&unpublished_but_marked).copied().collect();
        Check::new(
            "no lost events: every capture has its event, and every event marked published is on the topic",
            none_or(&lost, "events lost for"),
            lost.is_empty(),
        )
    }

    /// A message for a change that never committed, or for an event the outbox never held: what
    /// publishing before committing leaves behind.
    fn no_phantom_events(&self) -> Check {
        let in_outbox: HashSet<&str> = self.state.outbox.iter().map(|(e, ..)| e.as_str()).collect();
        let phantoms: Vec<String> = self
            .state
            .messages
            .iter()
            .filter(|m| self.ours(&m.payment_id))
            .filter(|m| {
                let unknown = m.event_id.as_deref().is_some_and(|e| !in_outbox.contains(e));
                let uncommitted = match m.event_type.as_str() {
                    "payment.captured" => self.status.get(m.payment_id.as_str()) != Some(&"captured"),
                    _ => !self.status.contains_key(m.payment_id.as_str()),
                };
                unknown || uncommitted
            })
            .map(|m| format!("{} {}", m.event_type, m.payment_id))
            .collect();
        Check::new(
            "no phantom events: every message describes a change that committed",
            none_or(&phantoms, "phantoms:"),
            phantoms.is_empty(),
        )
    }

    /// Per payment, the order its events first arrive in must be the order they were written.
    fn per_payment_order(&self) -> Check {
        let mut reordered: Vec<&str> = first_arrivals(&self.state.messages)
            .into_iter()
            .filter(|(id, types)| {
                self.ours(id) && {
                    let written: Vec<&str> = self
                        .state
                        .outbox
                        .iter()
                        .filter(|(_, p, ..)| p == *id)
                        .map(|(_, _, t, _)| t.as_str())
                        .filter(|t| types.contains(t))
                        .collect();
                    written.len() == types.len() && written != *types
                }
            })
            .map(|(id, _)| id)
            .collect();
        reordered.sort_unstable();
        Check::new(
            "per-payment order: each payment's events first arrive in the order they were written",
            none_or(&reordered, "out of order:"),
            reordered.is_empty(),
        )
    }

    /// The receipt is the effect a customer sees: a repeat the inbox let through sends a second
    /// one, a lost capture none, and a phantom one for a payment never captured.
    fn one_receipt_each(&self) -> Check {
        let state = self.state;
        let receipts: HashMap<&str, i64> = state.receipts.iter().map(|(p, n)| (p.as_str(), *n)).collect();
        let mut wrong: Vec<String> = self
            .captured
            .iter()
            .filter(|id| receipts.get(*id).copied().unwrap_or(0) != 1)
            .map(|id| format!("{id} ({})", receipts.get(id).copied().unwrap_or(0)))
            .chain(
                state
                    .receipts
                    .iter()
                    .filter(|(p, _)| self.ours(p) && self.status.get(p.as_str()) != Some(&"captured"))
                    .map(|(p, n)| format!("{p} ({n}, not captured)")),
            )
            .collect();
        wrong.sort();
        Check::new(
            "exactly one receipt per captured payment",
            none_or(&wrong, "receipts:"),
            wrong.is_empty(),
        )
    }

    /// The notifier's view against the payments database: two events swapped on the topic leave
    /// it wrong while every count agrees.
    fn projection_right(&self) -> Check {
        let status = &self.status;
        let mut disagree: Vec<String> = self
            .state
            .projection
            .iter()
            .filter(|(p, seen)| self.ours(p) && status.get(p.as_str()).is_some_and(|s| s != seen))
            .map(|(p, seen)| format!("{p} shown {seen}, is {}", status.get(p.as_str()).unwrap_or(&"?")))
            .collect();
        disagree.sort();
        Check::new(
            "the projection shows every payment's real status",
            none_or(&disagree, ""),
            disagree.is_empty(),
        )
    }
}

/// Each payment's event types in the order they first arrive: a repeat (the same event id, or
/// for messages without one, the same type) is not an arrival.
fn first_arrivals(messages: &[Message]) -> HashMap<&str, Vec<&str>> {
    let mut first_arrivals: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut seen = HashSet::new();
    for m in messages {
        let key = m
            .event_id
            .clone()
            .unwrap_or_else(|| format!("{}/{}", m.payment_id, m.event_type));
        if seen.insert(key) {
            first_arrivals
                .entry(m.payment_id.as_str())
                .or_default()
                .push(m.event_type.as_str());
        }
    }
    first_arrivals
}

/// `none`, or what is wrong.
fn none_or<S: AsRef<str>>(wrong: &[S], what: &str) -> String {
    if wrong.is_empty() {
        "none".to_owned()
    } else {
        let listed: Vec<&str> = wrong.iter().map(AsRef::as_ref).collect();
        format!("{what} {}", listed.join(", ")).trim().to_owned()
    }
}

/// Reads the state from the run's databases and from `topic` (the topic's table).
pub async fn state(run: &Run, topic: &Table) -> Result<State, RunError> {
    let payments = crate::sandbox::postgres::quote_ident(run.schema("payments")?);
    let notifier = crate::sandbox::postgres::quote_ident(run.schema("notifier")?);
    let rows = |sql: String| async move { run.check(&sql, &[]).await.map(|o| o.rows) };
    let text = |row: &[Value], i: usize| row.get(i).map(ToString::to_string).unwrap_or_default();
    let pairs =
        |rows: Vec<Vec<Value>>| -> Vec<(String, String)> { rows.iter().map(|r| (text(r, 0), text(r, 1))).collect() };
    Ok(State {
        payments: pairs(rows(format!("SELECT id, status FROM {payments}.payments ORDER BY id")).await?),
        outbox: rows(format!(
            "SELECT event_id::text, aggregate_id, event_type, published_at IS NOT NULL FROM {payments}.outbox ORDER BY id"
        ))
        .await?
        .iter()
        .map(|r| (text(r, 0), text(r, 1), text(r, 2), r.get(3) == Some(&Value::Bool(true))))
        .collect(),
        messages: topic
            .rows
            .iter()
            .filter_map(|r| r.get(3).and_then(Value::as_text).and_then(message::read))
            .map(|m| Message {
                event_id: m.event_id,
                payment_id: m.payment_id,
                event_type: m.event_type,
            })
            .collect(),
        receipts: rows(format!(
            "SELECT payment_id, count(*) FROM {notifier}.receipts_sent GROUP BY payment_id ORDER BY payment_id"
        ))
        .await?
        .iter()
        .map(|r| (text(r, 0), r.get(1).and_then(Value::as_int).unwrap_or(0)))
        .collect(),
        projection: pairs(rows(format!("SELECT payment_id, status FROM {notifier}.payment_status ORDER BY payment_id")).await?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "payment.authorized";
    const C: &str = "payment.captured";

    fn message(event: &str, payment: &str, kind: &str) -> Message {
        Message {
            event_id: Some(event.into()),
            payment_id: payment.into(),
            event_type: kind.into(),
        }
    }

    /// pay_1 authorized and captured, both published; the notifier saw both.
    fn sound() -> State {
        State {
            payments: vec![("pay_1".into(), "captured".into())],
            outbox: vec![
                ("e1".into(), "pay_1".into(), A.into(), true),
                ("e2".into(), "pay_1".into(), C.into(), true),
            ],
            messages: vec![
                message("e1", "pay_1", A),
                message("e2", "pay_1", C),
                message("e1", "pay_1", A),
            ],
            receipts: vec![("pay_1".into(), 1)],
            projection: vec![("pay_1".into(), "captured".into())],
        }
    }

    fn broken(state: &State, scope: Scope<'_>) -> Vec<String> {
        checks(state, scope)
            .into_iter()
            .filter(|c| !c.holds)
            .map(|c| c.rule.split(':').next().unwrap_or_default().to_owned())
            .collect()
    }

    #[test]
    fn a_sound_pipeline_keeps_every_rule_repeats_and_all() {
        assert!(broken(&sound(), Scope::WITH_NOTIFIER).is_empty());
    }

    #[test]
    fn a_capture_with_no_event_is_lost_and_an_uncommitted_one_is_a_phantom() {
        let lost = State {
            payments: vec![("pay_1".into(), "captured".into())],
            ..State::default()
        };
        assert_eq!(broken(&lost, Scope::default()), ["no lost events"]);
        let phantom = State {
            payments: vec![("pay_2".into(), "authorized".into())],
            messages: vec![Message {
                event_id: None,
                payment_id: "pay_2".into(),
                event_type: C.into(),
            }],
            ..State::default()
        };
        assert_eq!(broken(&phantom, Scope::default()), ["no phantom events"]);
        let elsewhere = Scope {
            notifier: false,
            payments: Some(&["pay_9"]),
        };
        assert!(broken(&phantom, elsewhere).is_empty(), "out of scope");
    }

    #[test]
    fn a_swapped_pair_breaks_the_order_and_the_projection() {
        let mut swapped = sound();
        swapped.messages = vec![message("e2", "pay_1", C), message("e1", "pay_1", A)];
        swapped.projection = vec![("pay_1".into(), "authorized".into())];
        assert_eq!(
            broken(&swapped, Scope::WITH_NOTIFIER),
            ["per-payment order", "the projection shows every payment's real status"]
        );
    }

    #[test]
    fn two_receipts_for_one_capture_break_the_receipt_rule() {
        let mut twice = sound();
        twice.receipts = vec![("pay_1".into(), 2)];
        assert_eq!(
            broken(&twice, Scope::WITH_NOTIFIER),
            ["exactly one receipt per captured payment"]
        );
    }
}
