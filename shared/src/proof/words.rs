//! The proof in plain words: an edge a line, in the order a reader follows the cycle.

use super::{End, History, Prevented, Proof, Read, Version};

/// How a reader calls a session's `n`th transaction (from 1): `alice`, `alice's 2nd transaction`.
pub fn ordinal_name(session: &str, n: usize) -> String {
    if n <= 1 {
        return session.to_owned();
    }
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{session}'s {n}{suffix} transaction")
}

fn name(history: &History, txn: Option<usize>) -> &str {
    match txn.and_then(|t| history.txns.get(t)) {
        Some(t) => &t.name,
        None => "the setup",
    }
}

fn value(version: &Version) -> &str {
    version.value.as_deref().unwrap_or("(deleted)")
}

pub(super) fn ww(history: &History, a: &Version, b: &Version) -> String {
    let (from, to) = (name(history, a.by), name(history, b.by));
    format!(
        "{to} wrote {} = {} over {from}'s {}, so {from} comes before {to}",
        b.row,
        value(b),
        value(a)
    )
}

pub(super) fn wr(history: &History, read: &Read, version: &Version) -> String {
    let (from, to) = (name(history, version.by), name(history, Some(read.txn)));
    format!(
        "{to} read {} = {}, which {from} wrote, so {from} comes before {to}",
        version.row,
        value(version)
    )
}

/// `seen`: the version the read saw (an item anti-dependency); `None`: the read's predicate
/// missed `next` altogether.
pub(super) fn rw(history: &History, read: &Read, seen: Option<&Version>, next: &Version) -> String {
    let (from, to) = (name(history, Some(read.txn)), name(history, next.by));
    match seen {
        Some(seen) => format!(
            "{from} read {} = {}, which {to} then replaced with {}, so {from} comes before {to}",
            seen.row,
            value(seen),
            value(next)
        ),
        None => {
            let first = history
                .versions
                .iter()
                .position(|v| v.row == next.row)
                .is_some_and(|i| std::ptr::eq(&history.versions[i], next));
            let what = match (&next.value, first) {
                (None, _) => format!("delete of {}", next.row),
                (Some(v), true) => format!("insert of {} = {v}", next.row),
                (Some(v), false) => format!("change of {} to {v}", next.row),
            };
            format!("{from}'s read did not see {to}'s {what}, so {from} comes before {to}")
        }
    }
}

fn sentence(text: &str) -> String {
    format!("{text}.")
}

fn however(text: &str) -> String {
    format!("However, {text}.")
}

fn order(history: &History, order: &[usize]) -> String {
    let names: Vec<&str> = order.iter().map(|&t| name(history, Some(t))).collect();
    names.join(", then ")
}

pub(super) fn lines(history: &History, proof: &Proof) -> Vec<String> {
    let mut lines = Vec::new();
    match (proof.anomaly, &proof.prevented) {
        (Some(anomaly), _) if !proof.cycle.is_empty() => {
            cycle_lines(proof, &proof.cycle, &mut lines);
            lines.push(format!(
                "No order of one-at-a-time runs explains this: {} ({}).",
                anomaly.name(),
                anomaly.class()
            ));
        }
        (Some(anomaly), _) => {
            lines.push(format!(
                "A committed transaction read a version no one-at-a-time run could show it: {} ({}).",
                anomaly.name(),
                anomaly.class()
            ));
        }
        (None, prevented) => {
            if proof.order.len() > 1 && proof.would_have > 0 {
                for edge in &proof.edges[..proof.would_have] {
                    lines.push(sentence(&edge.because));
                }
                lines.push(format!(
                    "One order of one-at-a-time runs explains every read: {}.",
                    order(history, &proof.order)
                ));
            } else {
                lines.push("No committed transaction depended on another's reads or writes.".to_owned());
            }
            if let Some(p) = prevented {
                prevented_lines(history, proof, p, &mut lines);
            }
        }
    }
    for wait in &history.waits {
        let holder = name(history, Some(wait.holder));
        lines.push(format!(
            "{} waited for {holder} to finish (a lock {holder} held).",
            name(history, Some(wait.waiter)),
        ));
    }
    let explained = proof.prevented.as_ref().map(|p| p.cancelled);
    for (t, txn) in history.txns.iter().enumerate() {
        if let End::Aborted { code: Some(code) } = &txn.end
            && explained != Some(t)
        {
            let why = match code.as_str() {
                "40P01" | "1213" => " to break a deadlock",
                "40001" => " as it could not serialize it",
                "1020" => " as a row it wrote had changed since its snapshot",
                _ => "",
            };
            lines.push(format!(
                "{} cancelled {}{why} ({}).",
                history.server.label(),
                txn.name,
                error(history, code)
            ));
        }
    }
    lines
}

/// An error as its server names it: PostgreSQL's SQLSTATE, MariaDB's error number.
fn error(history: &History, code: &str) -> String {
    match history.server {
        crate::Service::Mariadb => format!("error {code}"),
        _ => format!("SQLSTATE {code}"),
    }
}

/// A cycle's edges in order, a sentence each; the last, which closes it, starts "However".
fn cycle_lines(proof: &Proof, cycle: &[usize], lines: &mut Vec<String>) {
    for (i, &e) in cycle.iter().enumerate() {
        let because = &proof.edges[e].because;
        lines.push(if i + 1 == cycle.len() {
            however(because)
        } else {
            sentence(because)
        });
    }
}

/// The cycle a cancelled transaction's commit would have closed, and what happened instead:
/// PostgreSQL cancelled it, it rolled back, or it never committed.
fn prevented_lines(history: &History, proof: &Proof, p: &Prevented, lines: &mut Vec<String>) {
    let cancelled = name(history, Some(p.cancelled));
    lines.push(format!(
        "Had {cancelled} committed, this cycle would have closed, a {} ({}):",
        p.anomaly.name(),
        p.anomaly.class()
    ));
    cycle_lines(proof, &p.cycle, lines);
    let instead = match (&history.txns[p.cancelled].end, &p.code) {
        (End::Aborted { .. }, Some(code)) => {
            format!(
                "{} cancelled {cancelled} instead ({}).",
                history.server.label(),
                error(history, code)
            )
        }
        (End::Unfinished, _) => format!("{cancelled} never committed."),
        _ => format!("{cancelled} rolled back instead."),
    };
    lines.push(instead);
}

#[cfg(test)]
mod tests {
    use super::ordinal_name;

    #[test]
    fn transactions_after_a_sessions_first_are_counted_in_words() {
        assert_eq!(ordinal_name("alice", 1), "alice");
        assert_eq!(ordinal_name("alice", 2), "alice's 2nd transaction");
        assert_eq!(ordinal_name("bob", 3), "bob's 3rd transaction");
        assert_eq!(ordinal_name("bob", 11), "bob's 11th transaction");
        assert_eq!(ordinal_name("bob", 22), "bob's 22nd transaction");
    }
}
