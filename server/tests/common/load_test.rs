//! What every run of the load test must show, on PostgreSQL or MariaDB: its figures, lines,
//! progress, verdict and ledgers agree with one another and with what correctness demands.

use super::Finished;
use racelab::labs::isolation::load_test::{Strategy, figures_of};
use shared::{EventKind, Moment, Outcome, Value, VerdictKind};

/// Checks a completed `all` run of the load test (every strategy in turn). How far a naive
/// strategy overspends, and how often SERIALIZABLE retries, are up to timing; what each
/// strategy may never do is not.
pub fn keeps_its_invariants(run: &Finished) {
    assert_eq!(run.outcome, Outcome::Completed);
    let transcript = run.transcript();
    assert_eq!(transcript[0], "--- 16 workers, 400 approvals, $50,000 budget ---");
    let figures = figures_of(&run.ledger(Moment::After));
    let order: Vec<Strategy> = figures.iter().map(|f| f.strategy).collect();
    assert_eq!(order, Strategy::ALL.to_vec());
    for (f, line) in figures.iter().zip(&transcript[1..]) {
        assert_eq!(&f.line(), line, "the summary line is made from the figures");
        if f.strategy.is_fix() {
            assert_eq!(f.over_budget(), 0, "a fix overspent: {f:?}");
        } else {
            // How far a naive run overspends is up to timing (it may even stay within budget);
            // that it never retries or gives up is not.
            assert_eq!((f.retries, f.most_attempts, f.gave_up), (0, 1, 0), "{f:?}");
        }
        match f.strategy {
            Strategy::ForUpdate | Strategy::Conditional => assert_eq!((f.retries, f.most_attempts), (0, 1), "{f:?}"),
            Strategy::Serializable => assert!(f.retries > 0 && f.most_attempts <= 10, "{f:?}"),
            _ => {}
        }
        let expected_spent = if f.strategy == Strategy::Conditional {
            f.total
        } else {
            0
        };
        assert_eq!(f.spent, expected_spent, "{f:?}");
    }
    // Progress streamed while it ran: each strategy ends at its share of all 2,000 approvals.
    let ends: Vec<(String, u64)> = run
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Progress {
                label,
                done,
                total: 2000,
            } if done % 400 == 0 => Some((label.clone(), *done)),
            _ => None,
        })
        .collect();
    let names = ["naive-rc", "naive-rr", "serializable", "for-update", "conditional"];
    let expected: Vec<(String, u64)> = names.iter().zip(1..).map(|(n, i)| ((*n).to_owned(), 400 * i)).collect();
    assert_eq!(ends, expected);
    // The verdict agrees with the figures: reproduced exactly when a naive strategy overspent.
    let naive_overspent = figures.iter().any(|f| !f.strategy.is_fix() && f.over_budget() > 0);
    let expected_kind = if naive_overspent {
        VerdictKind::Reproduced
    } else {
        VerdictKind::Prevented
    };
    assert_eq!(run.verdict().kind, expected_kind, "{:?}", run.verdict());
    assert!(
        run.verdict()
            .checks
            .iter()
            .filter(|c| !c.rule.starts_with("naive"))
            .all(|c| c.holds),
        "{:?}",
        run.verdict()
    );
    // What a correct system holds is nothing over budget, for every strategy; the tutorial's
    // own figures are a reference beside it, not the expectation.
    let correct = run.ledger(Moment::Expected);
    let budget = correct.table("budget").expect("the expected budget table");
    let expected_rows: Vec<Vec<Value>> = names.iter().map(|n| vec![Value::from(*n), Value::Int(0)]).collect();
    assert_eq!(budget.rows, expected_rows);
    let reference = run.ledger(Moment::Reference);
    assert_eq!(reference.tables[0].name, "tutorial, six runs");
}
