//! The verdict banner: reproduced or prevented, in one headline and one reason, with the checks.

use leptos::prelude::*;
use shared::Verdict;

#[component]
pub fn VerdictBanner(verdict: Verdict) -> impl IntoView {
    let kind = verdict.kind_name();
    let checks = verdict
        .checks
        .iter()
        .map(|c| {
            view! {
                <li class="rl-check" data-holds=c.holds.to_string()>
                    {if c.holds { "✓ " } else { "✗ " }}
                    {c.rule.clone()}
                    <span class="rl-check-actual">{format!(" (got {})", c.actual)}</span>
                </li>
            }
        })
        .collect_view();
    view! {
        <section class="rl-verdict" data-kind=kind role="status">
            <p class="rl-verdict-label">{verdict.label()}</p>
            <p class="rl-verdict-headline">{verdict.headline.clone()}</p>
            <p class="rl-verdict-reason">{verdict.reason.clone()}</p>
            <ul class="rl-checks">{checks}</ul>
        </section>
    }
}
