//! The interleavings a spec without `permutation` lines plays: every order of all steps that
//! keeps each session's own order, in the tester's order (it picks from the sessions' piles
//! depth-first, first session first).

use super::Spec;

/// How many interleavings the spec's sessions have: the multinomial coefficient
/// `(n1 + n2 + …)! / (n1! · n2! · …)`, or `None` past `u64`. Two sessions of three steps
/// have 20; three of four have 34,650.
pub fn count_permutations(spec: &Spec) -> Option<u64> {
    let mut total: u64 = 1;
    let mut placed: u64 = 0;
    for session in &spec.sessions {
        // Multiply by C(placed + k, k), one factor at a time so every division is exact.
        for i in 1..=session.steps.len() as u64 {
            placed += 1;
            total = total.checked_mul(placed)? / i;
        }
    }
    Some(total)
}

/// Every interleaving, each as step names in order, at most `limit` of them (the tester plays
/// them all; a page asks the reader to narrow down past its limit instead).
pub fn all_permutations(spec: &Spec, limit: usize) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut piles = vec![0usize; spec.sessions.len()];
    let total: usize = spec.sessions.iter().map(|s| s.steps.len()).sum();
    let mut current = Vec::with_capacity(total);
    recurse(spec, &mut piles, &mut current, total, limit, &mut out);
    out
}

fn recurse(
    spec: &Spec,
    piles: &mut [usize],
    current: &mut Vec<String>,
    total: usize,
    limit: usize,
    out: &mut Vec<Vec<String>>,
) {
    if out.len() >= limit {
        return;
    }
    if current.len() == total {
        out.push(current.clone());
        return;
    }
    for i in 0..spec.sessions.len() {
        let Some(step) = spec.sessions[i].steps.get(piles[i]) else {
            continue;
        };
        current.push(step.name.clone());
        piles[i] += 1;
        recurse(spec, piles, current, total, limit, out);
        piles[i] -= 1;
        current.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    fn spec(text: &str) -> Spec {
        parse(text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn interleavings_come_in_the_testers_order() {
        let s = spec("session a step a1 { } step a2 { } session b step b1 { }");
        let all = all_permutations(&s, usize::MAX);
        assert_eq!(
            all,
            vec![vec!["a1", "a2", "b1"], vec!["a1", "b1", "a2"], vec!["b1", "a1", "a2"]]
        );
        assert_eq!(count_permutations(&s), Some(3));
    }

    #[test]
    fn counts_are_multinomials() {
        let two_by_three =
            spec("session a step a1 { } step a2 { } step a3 { } session b step b1 { } step b2 { } step b3 { }");
        assert_eq!(count_permutations(&two_by_three), Some(20));
        assert_eq!(all_permutations(&two_by_three, usize::MAX).len(), 20);
        let three_by_four = spec(
            "session a step a1 { } step a2 { } step a3 { } step a4 { }
             session b step b1 { } step b2 { } step b3 { } step b4 { }
             session c step c1 { } step c2 { } step c3 { } step c4 { }",
        );
        assert_eq!(count_permutations(&three_by_four), Some(34_650));
        assert_eq!(all_permutations(&three_by_four, 120).len(), 120);
    }

    #[test]
    fn every_interleaving_keeps_each_sessions_order() {
        let s = spec("session a step a1 { } step a2 { } session b step b1 { } step b2 { } session c step c1 { }");
        for order in all_permutations(&s, usize::MAX) {
            let at = |n: &str| order.iter().position(|s| s == n);
            assert!(at("a1") < at("a2") && at("b1") < at("b2"), "{order:?}");
        }
        assert_eq!(count_permutations(&s), Some(30));
    }
}
