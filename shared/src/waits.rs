//! The wait-for graph: who waits for whom, and on what, at one moment of a run, folded from its
//! events (`blocked` with the lock PostgreSQL reported, `unblocked`, a result or an error that
//! ended the wait). A cycle in it is a deadlock forming; the `40P01` that follows names the
//! transaction PostgreSQL cancelled to break it. Pure, so a live run, a replay and a scrubbed
//! moment draw the same graph; [`html`] is how the page draws it.

use crate::markup::Html;
use crate::{Event, EventKind};

/// One waiting actor and one it waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitFor {
    pub waiter: String,
    pub holder: String,
    /// What lock, as PostgreSQL reported it (`a row lock (…)`, `table accounts (…)`).
    pub on: Option<String>,
}

/// The graph at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitGraph {
    pub edges: Vec<WaitFor>,
    /// The actors of a cycle among the edges, in order (`alice`, `bob`: alice waits for bob,
    /// bob for alice); empty without one.
    pub cycle: Vec<String>,
    /// The deadlock PostgreSQL broke by now: the cycle it was, and whom it cancelled.
    pub broken: Option<Broken>,
    /// Whether anyone waited at all, up to this moment.
    pub anyone_waited: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broken {
    pub cycle: Vec<String>,
    pub cancelled: String,
    pub code: String,
}

/// The graph after `events` (a run's, up to the moment shown).
pub fn graph(events: &[Event]) -> WaitGraph {
    let mut g = WaitGraph::default();
    // The last cycle that formed: PostgreSQL may release the waits (the engine reports its
    // victim unblocked) an instant before the 40P01 that says why.
    let mut last_cycle: Vec<String> = Vec::new();
    for event in events {
        match &event.kind {
            EventKind::Blocked { actor, by, on } => {
                g.edges.retain(|e| e.waiter != *actor);
                g.edges.extend(by.iter().map(|holder| WaitFor {
                    waiter: actor.clone(),
                    holder: holder.clone(),
                    on: on.clone(),
                }));
                g.anyone_waited = true;
                g.cycle = cycle(&g.edges);
                if !g.cycle.is_empty() {
                    last_cycle = g.cycle.clone();
                }
            }
            EventKind::Error { actor, code, .. } => {
                if code.as_deref() == Some("40P01") && last_cycle.contains(actor) {
                    g.broken = Some(Broken {
                        cycle: std::mem::take(&mut last_cycle),
                        cancelled: actor.clone(),
                        code: "40P01".to_owned(),
                    });
                }
                g.edges.retain(|e| e.waiter != *actor);
                g.cycle = cycle(&g.edges);
            }
            EventKind::Unblocked { actor, .. } | EventKind::Result { actor, .. } => {
                g.edges.retain(|e| e.waiter != *actor);
                g.cycle = cycle(&g.edges);
            }
            EventKind::Done { .. } => {
                g.edges.clear();
                g.cycle.clear();
            }
            _ => {}
        }
    }
    g
}

/// A cycle among `edges`, as the actors along it from the first that has one; empty if none.
fn cycle(edges: &[WaitFor]) -> Vec<String> {
    for start in edges.iter().map(|e| &e.waiter) {
        let mut path: Vec<&String> = vec![start];
        let mut at = start;
        // Follow the first edge out of each actor; a wait-for graph of a run has few.
        while let Some(next) = edges.iter().find(|e| e.waiter == *at).map(|e| &e.holder) {
            if let Some(pos) = path.iter().position(|p| *p == next) {
                return path[pos..].iter().map(|p| (*p).clone()).collect();
            }
            path.push(next);
            at = next;
        }
    }
    Vec::new()
}

/// The graph as the page draws it, inside its section: an arrow per wait with the lock
/// PostgreSQL reported, the cycle of a deadlock as it forms, and whom PostgreSQL cancelled to
/// break it. Written as text, every text escaped: drawn afresh at each moment shown.
pub fn html(graph: &WaitGraph) -> String {
    let mut html = Html::default();
    html.element("h3", &[], "Who waits for whom")
        .open("ul", &[("class", Some("rl-wait-edges"))]);
    for e in &graph.edges {
        let on = e.on.as_ref().map(|on| format!(" · on {on}")).unwrap_or_default();
        html.open(
            "li",
            &[
                ("class", Some("rl-wait-edge")),
                ("data-waiter", Some(&e.waiter)),
                ("data-holder", Some(&e.holder)),
            ],
        )
        .element("strong", &[], &e.waiter)
        .text(" waits for ")
        .element("strong", &[], &e.holder)
        .element("span", &[("class", Some("rl-wait-on"))], &on)
        .close("li");
    }
    if graph.edges.is_empty() {
        html.element("li", &[("class", Some("rl-wait-none"))], "Nobody waits at this moment.");
    }
    html.close("ul");
    if let Some(first) = graph.cycle.first() {
        let around = format!(
            "Deadlock forming: {} → {first}. Each waits for the next; PostgreSQL's deadlock check will cancel one.",
            graph.cycle.join(" → ")
        );
        html.element(
            "p",
            &[("class", Some("rl-wait-cycle")), ("role", Some("status"))],
            &around,
        );
    }
    if let Some(b) = &graph.broken {
        let said = format!(
            "PostgreSQL broke the deadlock ({}) by cancelling {} with {}.",
            b.cycle.join(" ⇄ "),
            b.cancelled,
            b.code
        );
        html.element(
            "p",
            &[
                ("class", Some("rl-wait-broken")),
                ("data-cancelled", Some(&b.cancelled)),
            ],
            &said,
        );
    }
    html.into_string()
}

/// The section's `data-kind`: `deadlock` while a cycle forms, else `waits`.
pub fn kind(graph: &WaitGraph) -> &'static str {
    if graph.cycle.is_empty() { "waits" } else { "deadlock" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn at(seq: u64, kind: EventKind) -> Event {
        Event { seq, at_ms: seq, kind }
    }

    fn blocked(actor: &str, by: &str) -> EventKind {
        EventKind::Blocked {
            actor: actor.into(),
            by: vec![by.into()],
            on: Some("a row lock".into()),
        }
    }

    #[test]
    fn a_deadlock_is_a_cycle_until_postgresql_cancels_one_of_it() {
        let events = vec![
            at(1, blocked("bob", "alice")),
            at(2, blocked("alice", "bob")),
            // Released an instant before the error that says why.
            at(
                3,
                EventKind::Unblocked {
                    actor: "alice".into(),
                    waited_ms: 990,
                },
            ),
            at(
                3,
                EventKind::Error {
                    actor: "alice".into(),
                    kind: ErrorKind::Database,
                    code: Some("40P01".into()),
                    message: "deadlock detected".into(),
                },
            ),
            at(
                4,
                EventKind::Unblocked {
                    actor: "bob".into(),
                    waited_ms: 1000,
                },
            ),
        ];
        let one = graph(&events[..1]);
        assert_eq!(one.edges.len(), 1);
        assert!(one.cycle.is_empty());
        let forming = graph(&events[..2]);
        assert_eq!(forming.cycle, ["bob", "alice"]);
        assert_eq!(forming.edges[0].on.as_deref(), Some("a row lock"));
        let broken = graph(&events[..4]);
        assert_eq!(broken.edges.len(), 1, "bob still waits, for a moment");
        let said = broken.broken.expect("the deadlock was broken");
        assert_eq!((said.cancelled.as_str(), said.cycle.len()), ("alice", 2));
        let after = graph(&events);
        assert!(after.edges.is_empty() && after.cycle.is_empty() && after.anyone_waited);
        assert!(after.broken.is_some());
    }

    #[test]
    fn a_wait_that_ends_leaves_no_edge_and_an_error_elsewhere_breaks_nothing() {
        let events = vec![
            at(1, blocked("bob", "alice")),
            at(
                2,
                EventKind::Error {
                    actor: "bob".into(),
                    kind: ErrorKind::Database,
                    code: Some("40001".into()),
                    message: "could not serialize access".into(),
                },
            ),
        ];
        let g = graph(&events);
        assert!(g.edges.is_empty() && g.broken.is_none() && g.anyone_waited);
        assert_eq!(graph(&[]), WaitGraph::default());
    }

    #[test]
    fn the_page_draws_each_wait_the_cycle_and_who_was_cancelled() {
        let wait = |waiter: &str, holder: &str| WaitFor {
            waiter: waiter.to_owned(),
            holder: holder.to_owned(),
            on: Some("a row lock <accounts>".to_owned()),
        };
        let graph = WaitGraph {
            edges: vec![wait("alice", "bob"), wait("bob", "alice")],
            cycle: vec!["alice".to_owned(), "bob".to_owned()],
            broken: Some(Broken {
                cycle: vec!["alice".to_owned(), "bob".to_owned()],
                cancelled: "bob".to_owned(),
                code: "40P01".to_owned(),
            }),
            anyone_waited: true,
        };
        let drawn = html(&graph);
        assert!(drawn.starts_with("<h3>Who waits for whom</h3><ul class=\"rl-wait-edges\"><li class=\"rl-wait-edge\" data-waiter=\"alice\" data-holder=\"bob\"><strong>alice</strong> waits for <strong>bob</strong><span class=\"rl-wait-on\"> · on a row lock &lt;accounts&gt;</span></li>"), "{drawn}");
        assert!(
            drawn.contains("Deadlock forming: alice → bob → alice. Each waits"),
            "{drawn}"
        );
        assert!(drawn.ends_with("<p class=\"rl-wait-broken\" data-cancelled=\"bob\">PostgreSQL broke the deadlock (alice ⇄ bob) by cancelling bob with 40P01.</p>"), "{drawn}");
        assert_eq!(kind(&graph), "deadlock");
        let nobody = html(&WaitGraph::default());
        assert!(
            nobody.contains("<li class=\"rl-wait-none\">Nobody waits at this moment.</li></ul>")
                && !nobody.contains("<p"),
            "{nobody}"
        );
        assert_eq!(kind(&WaitGraph::default()), "waits");
    }
}
