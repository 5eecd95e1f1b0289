//! Finding the worst cycle: the one with the fewest anti-dependencies, since fewer `rw` edges
//! means a weaker isolation level already forbids it (Adya: G0 ⊂ G1c ⊂ G-single ⊂ G2).

use super::{Anomaly, Dep, Edge};
use std::collections::VecDeque;

/// The most telling cycle among `edges` (indexes, in order around it) and the anomaly it is.
pub(super) fn worst(edges: &[Edge], read_only: &dyn Fn(usize) -> bool) -> Option<(Vec<usize>, Anomaly)> {
    if let Some(cycle) = shortest_cycle(edges, &|e| e.dep == Dep::Ww) {
        return Some((cycle, Anomaly::DirtyWrite));
    }
    if let Some(cycle) = shortest_cycle(edges, &|e| e.dep != Dep::Rw) {
        return Some((cycle, Anomaly::CircularInformationFlow));
    }
    let no_rw = |e: &Edge| e.dep != Dep::Rw;
    let single = edges
        .iter()
        .enumerate()
        .filter(|(_, e)| e.dep == Dep::Rw)
        .filter_map(|(i, e)| path(edges, e.to, e.from, &no_rw).map(|rest| [vec![i], rest].concat()))
        .min_by_key(Vec::len);
    if let Some(cycle) = single {
        let rw = &edges[cycle[0]];
        let anomaly = if rw.predicate {
            Anomaly::PredicateManyPreceders
        } else if cycle.len() == 2 && edges[cycle[1]].dep == Dep::Ww && edges[cycle[1]].row == rw.row {
            Anomaly::LostUpdate
        } else {
            Anomaly::ReadSkew
        };
        return Some((cycle, anomaly));
    }
    let cycle = shortest_cycle(edges, &|_| true)?;
    let txns: Vec<usize> = cycle.iter().map(|&e| edges[e].from).collect();
    let predicate = cycle.iter().any(|&e| edges[e].predicate);
    let anomaly = if txns.len() > 2 && txns.iter().any(|&t| read_only(t)) {
        Anomaly::ReadOnlyTransaction
    } else if txns.len() == 2 && predicate {
        Anomaly::PredicateWriteSkew
    } else if txns.len() == 2 {
        Anomaly::WriteSkew
    } else {
        Anomaly::AntiDependencyCycle
    };
    Some((cycle, anomaly))
}

/// The shortest cycle through edges that `allowed` admits, as edge indexes in order.
fn shortest_cycle(edges: &[Edge], allowed: &dyn Fn(&Edge) -> bool) -> Option<Vec<usize>> {
    edges
        .iter()
        .enumerate()
        .filter(|(_, e)| allowed(e))
        .filter_map(|(i, e)| path(edges, e.to, e.from, allowed).map(|rest| [vec![i], rest].concat()))
        .min_by_key(Vec::len)
}

/// The shortest path of allowed edges from transaction `from` to `to` (empty when they are the
/// same), by breadth-first search.
fn path(edges: &[Edge], from: usize, to: usize, allowed: &dyn Fn(&Edge) -> bool) -> Option<Vec<usize>> {
    if from == to {
        return Some(Vec::new());
    }
    let nodes = edges.iter().map(|e| e.from.max(e.to) + 1).max().unwrap_or(0);
    let mut came_by: Vec<Option<usize>> = vec![None; nodes];
    let mut queue = VecDeque::from([from]);
    let mut reached = vec![false; nodes];
    *reached.get_mut(from)? = true;
    while let Some(node) = queue.pop_front() {
        for (i, edge) in edges.iter().enumerate() {
            if edge.from != node || !allowed(edge) || reached[edge.to] {
                continue;
            }
            reached[edge.to] = true;
            came_by[edge.to] = Some(i);
            if edge.to == to {
                let mut path = vec![i];
                let mut at = edges[i].from;
                while at != from {
                    let e = came_by[at]?;
                    path.push(e);
                    at = edges[e].from;
                }
                path.reverse();
                return Some(path);
            }
            queue.push_back(edge.to);
        }
    }
    None
}

/// An order of one-at-a-time runs of the transactions `counted` admits that agrees with every
/// edge (the graph has no cycle among them); ties go to the transaction that started first.
pub(super) fn order(txns: usize, edges: &[Edge], counted: &dyn Fn(usize) -> bool) -> Vec<usize> {
    let mut before = vec![0usize; txns];
    for e in edges.iter().filter(|e| e.from < txns && e.to < txns) {
        before[e.to] += 1;
    }
    let mut done = vec![false; txns];
    let mut order = Vec::new();
    while let Some(next) = (0..txns).find(|&t| !done[t] && before[t] == 0) {
        done[next] = true;
        for e in edges.iter().filter(|e| e.from == next && e.to < txns) {
            before[e.to] -= 1;
        }
        if counted(next) {
            order.push(next);
        }
    }
    order
}
