//! The plain answer at the end of a run.

use serde::{Deserialize, Serialize};

/// Did the run show the bug, or did the variant's fix stop it?
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// The database really allowed the anomaly: the ledger breaks a rule a correct system keeps.
    Reproduced,
    /// Every rule holds: the variant prevented the anomaly.
    Prevented,
    /// No rule was stated (a reader's spec without `# check:` lines): nothing to judge by.
    Unstated,
}

/// One rule a correct system keeps, and whether this run kept it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// The rule in the reader's words: `spent = $2,000`, `total ≤ $5,000`.
    pub rule: String,
    /// What the run actually ended with: `spent = $800`.
    pub actual: String,
    pub holds: bool,
}

impl Check {
    pub fn new(rule: impl Into<String>, actual: impl Into<String>, holds: bool) -> Self {
        Check {
            rule: rule.into(),
            actual: actual.into(),
            holds,
        }
    }
}

/// The verdict: a headline (`Overspent: $6,000 approved against a $5,000 budget`), a one-line
/// reason in our words, and the checks it rests on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub kind: VerdictKind,
    pub headline: String,
    pub reason: String,
    pub checks: Vec<Check>,
}

impl Verdict {
    /// Judges a run by its checks: any broken rule means the bug was reproduced. The headline and
    /// reason are the scenario's; the kind is never chosen by hand, so it cannot disagree with
    /// the ledger.
    pub fn judge(checks: Vec<Check>, headline: impl Into<String>, reason: impl Into<String>) -> Self {
        let kind = if checks.iter().all(|c| c.holds) {
            VerdictKind::Prevented
        } else {
            VerdictKind::Reproduced
        };
        Verdict {
            kind,
            headline: headline.into(),
            reason: reason.into(),
            checks,
        }
    }

    /// `reproduced`, `prevented` or `unstated`: the word pages and pictures style it by.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            VerdictKind::Reproduced => "reproduced",
            VerdictKind::Prevented => "prevented",
            VerdictKind::Unstated => "unstated",
        }
    }

    /// `bug reproduced` / `bug prevented`, for plain-text readers.
    pub fn label(&self) -> &'static str {
        match self.kind {
            VerdictKind::Reproduced => "bug reproduced",
            VerdictKind::Prevented => "bug prevented",
            VerdictKind::Unstated => "no rule stated",
        }
    }
}

/// The verdict as the page draws it, inside its banner: its label (reproduced or prevented),
/// headline and reason, and each check with ✓ or ✗, so colour is never the only cue. Written as
/// text, every text escaped.
pub fn html(verdict: &Verdict) -> String {
    let mut html = crate::markup::Html::default();
    html.element("p", &[("class", Some("rl-verdict-label"))], verdict.label())
        .element("p", &[("class", Some("rl-verdict-headline"))], &verdict.headline)
        .element("p", &[("class", Some("rl-verdict-reason"))], &verdict.reason)
        .open("ul", &[("class", Some("rl-checks"))]);
    for check in &verdict.checks {
        let holds = if check.holds { "true" } else { "false" };
        html.open("li", &[("class", Some("rl-check")), ("data-holds", Some(holds))])
            .text(if check.holds { "✓ " } else { "✗ " })
            .text(&check.rule)
            .element(
                "span",
                &[("class", Some("rl-check-actual"))],
                &format!(" (got {})", check.actual),
            )
            .close("li");
    }
    html.close("ul");
    html.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_broken_rule_means_reproduced() {
        let v = Verdict::judge(
            vec![
                Check::new("a", "a", true),
                Check::new("spent = $2,000", "spent = $800", false),
            ],
            "Lost $1,200",
            "why",
        );
        assert_eq!(v.kind, VerdictKind::Reproduced);
        assert_eq!(v.label(), "bug reproduced");
    }

    #[test]
    fn all_rules_kept_means_prevented() {
        let v = Verdict::judge(vec![Check::new("total ≤ $5,000", "total = $3,000", true)], "h", "r");
        assert_eq!(v.kind, VerdictKind::Prevented);
    }

    #[test]
    fn the_page_draws_the_label_the_headline_and_each_check_escaped() {
        let v = Verdict::judge(
            vec![Check::new("spent = $2,000", "spent = <$800>", false)],
            "Lost $1,200",
            "why",
        );
        assert_eq!(
            html(&v),
            "<p class=\"rl-verdict-label\">bug reproduced</p><p class=\"rl-verdict-headline\">Lost $1,200</p><p class=\"rl-verdict-reason\">why</p><ul class=\"rl-checks\"><li class=\"rl-check\" data-holds=\"false\">✗ spent = $2,000<span class=\"rl-check-actual\"> (got spent = &lt;$800&gt;)</span></li></ul>"
        );
    }
}
