//! One card on the timeline: a statement with its parameters and result (or its error, in red
//! with the SQLSTATE), a wait and who it waits for, a release, a commit or rollback, a note.

use leptos::prelude::*;
use shared::run_state::rows_text;
use shared::timeline::Card;

/// The statement with `$1`, `$2`… replaced by their values, for reading at a glance.
fn params_text(params: &[shared::Value]) -> String {
    params
        .iter()
        .enumerate()
        .map(|(i, p)| format!("${} = {}", i + 1, p.sql_literal()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How a statement ended: its error (SQLSTATE badge and message), or its result and rows, or
/// "…" while it still runs.
fn ending(
    result: Option<String>,
    rows: Option<shared::event::Rows>,
    error: Option<(Option<String>, String)>,
) -> AnyView {
    match (error, result) {
        (Some((sqlstate, message)), _) => view! {
            <div class="rl-error-line">
                {sqlstate.map(|s| view! { <span class="rl-sqlstate">{s}</span> })}
                <span class="rl-error-message">{message}</span>
            </div>
        }
        .into_any(),
        (None, Some(result)) => {
            let shown = rows.as_ref().filter(|r| !r.rows.is_empty()).map(rows_text);
            view! {
                <div class="rl-result">
                    {result}
                    {shown.map(|rows| view! { <pre class="rl-rows">{rows}</pre> })}
                </div>
            }
            .into_any()
        }
        (None, None) => view! { <div class="rl-result rl-result--pending">"…"</div> }.into_any(),
    }
}

#[component]
pub fn StepCard(lane: String, card: Card) -> impl IntoView {
    match card {
        Card::Statement {
            text,
            params,
            result,
            rows,
            error,
        } => {
            let failed = error.is_some();
            let params = (!params.is_empty()).then(|| view! { <div class="rl-params">{params_text(&params)}</div> });
            let outcome = ending(result, rows, error);
            view! {
                <div class="rl-card" class:rl-card--error=failed data-lane=lane data-kind="statement">
                    <code class="rl-sql">{text}</code>
                    {params}
                    {outcome}
                </div>
            }
            .into_any()
        }
        Card::Waiting { by } => view! {
            <div class="rl-card" data-lane=lane data-kind="waiting">
                "waits for a lock held by " <span class="rl-waits-for">{by.join(", ")}</span>
            </div>
        }
        .into_any(),
        Card::Released {
            waited_ms,
            result,
            rows,
            error,
        } => {
            let failed = error.is_some();
            let headline = if failed {
                format!("stopped waiting after {waited_ms} ms")
            } else {
                format!("got the lock after {waited_ms} ms")
            };
            view! {
                <div class="rl-card" class:rl-card--error=failed data-lane=lane data-kind="released">
                    <div class="rl-released">{headline}</div>
                    {ending(result, rows, error)}
                </div>
            }
            .into_any()
        }
        Card::Commit => view! { <div class="rl-card" data-lane=lane data-kind="commit">"COMMIT ✓"</div> }.into_any(),
        Card::Rollback => {
            view! { <div class="rl-card" data-lane=lane data-kind="rollback">"ROLLBACK"</div> }.into_any()
        }
        Card::Crash { point } => view! {
            <div class="rl-card" data-lane=lane data-kind="crash">{format!("crashed at {point}")}</div>
        }
        .into_any(),
        Card::Note { line } => view! { <div class="rl-card" data-lane=lane data-kind="note">{line}</div> }.into_any(),
    }
}
