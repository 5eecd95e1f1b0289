//! The verdict banner: reproduced or prevented, in one headline and one reason, with the checks
//! (`shared::verdict::html`'s markup, written once).

use leptos::prelude::*;
use shared::Verdict;
use shared::verdict::html;

#[component]
pub fn VerdictBanner(verdict: Verdict) -> impl IntoView {
    view! { <section class="rl-verdict" data-kind=verdict.kind_name() role="status" inner_html=html(&verdict)></section> }
}
