//! One card on the timeline: a step with its parameters and result (or its error, in red with
//! its code), a wait and who it waits for, a release, a commit or rollback, a process starting,
//! crashing or exiting, a note. Each step card says which service it talks to (SQL, Redis, HTTP,
//! Kafka), so a reader tells a lock command from a request at a glance; an HTTP request and a
//! broker message show their structure (headers, body, key, partition and offset).

use leptos::prelude::*;
use shared::Service;
use shared::event::Detail;
use shared::run_state::rows_text;
use shared::timeline::{Card, Failure};

/// The badge of a step's service: `SQL`, `Redis`, `HTTP`, `Kafka`.
fn service_badge(service: Service) -> (&'static str, &'static str) {
    match service {
        Service::Postgres => ("postgres", "SQL"),
        Service::Redis => ("redis", "Redis"),
        Service::Http => ("http", "HTTP"),
        Service::Kafka => ("kafka", "Kafka"),
        Service::Process => ("process", "process"),
    }
}

/// `Idempotency-Key: order-7731`, one per line.
fn headers_text(headers: &[(String, String)]) -> String {
    headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The structure of a request, response or message, under its card's headline.
fn detail_view(detail: Detail) -> AnyView {
    match detail {
        Detail::Request { headers, body, .. } | Detail::Response { headers, body, .. } => {
            let headers =
                (!headers.is_empty()).then(|| view! { <pre class="rl-headers">{headers_text(&headers)}</pre> });
            let body =
                (!body.trim().is_empty()).then(|| view! { <pre class="rl-body">{body.trim_end().to_owned()}</pre> });
            view! { <div class="rl-detail">{headers}{body}</div> }.into_any()
        }
        Detail::Message {
            partition,
            offset,
            key,
            value,
            headers,
            ..
        } => {
            let place = match (partition, offset) {
                (Some(p), Some(o)) => format!("p{p}@{o}"),
                (Some(p), None) => format!("p{p}"),
                _ => String::new(),
            };
            let key = key.map(|k| view! { <span class="rl-message-key">{format!("key {k}")}</span> });
            let place = (!place.is_empty()).then(|| view! { <span class="rl-message-place">{place}</span> });
            let value = value.map(|v| view! { <pre class="rl-body">{v}</pre> });
            let headers =
                (!headers.is_empty()).then(|| view! { <pre class="rl-headers">{headers_text(&headers)}</pre> });
            view! { <div class="rl-detail">{key}{place}{headers}{value}</div> }.into_any()
        }
    }
}

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
fn ending(result: Option<String>, rows: Option<shared::event::Rows>, error: Option<Failure>) -> AnyView {
    match (error, result) {
        (Some(failure), _) => view! {
            <div class="rl-error-line">
                <span class="rl-sqlstate" data-error-kind=failure.kind.label()>{failure.badge()}</span>
                <span class="rl-error-message">{failure.message}</span>
            </div>
        }
        .into_any(),
        (None, Some(result)) => {
            let shown = rows.as_ref().filter(|r| !r.rows.is_empty()).map(rows_text);
            view! {
                <div class="rl-result">
                    {result}
                    // It scrolls when the rows are wide or many: focusable, so a keyboard can.
                    {shown.map(|rows| view! { <pre class="rl-rows" tabindex="0">{rows}</pre> })}
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
            service,
            text,
            params,
            sent,
            result,
            rows,
            received,
            error,
        } => {
            // An HTTP answer that is an error status is shown as one, with its headers kept.
            let refused = matches!(received.as_deref(), Some(Detail::Response { status, .. }) if *status >= 400);
            // A request to one of the run's servers points at its lane; its answer comes back.
            let to = match sent.as_deref() {
                Some(Detail::Request { to: Some(to), .. }) => Some(to.clone()),
                _ => None,
            };
            let arrow = to
                .clone()
                .map(|to| view! { <span class="rl-http-to" data-to=to.clone()>{format!("→ {to}")}</span> });
            let result = match (to, result) {
                (Some(to), Some(result)) => Some(format!("← {to}: {result}")),
                (_, result) => result,
            };
            let failed = error.is_some() || refused;
            let (service_id, service_label) = service_badge(service);
            let params = (!params.is_empty()).then(|| view! { <div class="rl-params">{params_text(&params)}</div> });
            let sent = sent.map(|d| detail_view(*d));
            let received = received.map(|d| detail_view(*d));
            let outcome = ending(result, rows, error);
            view! {
                <div class="rl-card" class:rl-card--error=failed data-lane=lane data-kind="statement" data-service=service_id>
                    <div class="rl-step-head">
                        <span class="rl-service-badge" data-service=service_id>{service_label}</span>
                        <code class="rl-sql">{text}</code>
                        {arrow}
                    </div>
                    {params}
                    {sent}
                    {outcome}
                    {received}
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
        Card::Process { pid, restart } => {
            let text = if restart {
                format!("restarted: a new process, pid {pid}")
            } else {
                format!("process started, pid {pid}")
            };
            view! { <div class="rl-card" data-lane=lane data-kind="process">{text}</div> }.into_any()
        }
        Card::Crash { point } => view! {
            <div class="rl-card rl-card--error" data-lane=lane data-kind="crash">
                <span class="rl-sqlstate" data-error-kind="crash">"SIGKILL"</span>
                " "
                <span class="rl-error-message">{format!("killed at {point}: no cleanup ran")}</span>
            </div>
        }
        .into_any(),
        Card::Exited { code } => {
            let text = match code {
                Some(code) => format!("exited with status {code}"),
                None => "exited".to_owned(),
            };
            view! { <div class="rl-card" data-lane=lane data-kind="exited">{text}</div> }.into_any()
        }
        // Several lines spoken in a row (a psql result) keep their columns.
        Card::Note { line } if line.contains('\n') => {
            let table = shared::compact::is_table(&line);
            view! {
                <div class="rl-card" data-lane=lane data-kind="note">
                    <pre class="rl-note-lines" class:rl-note-lines--table=table>{line}</pre>
                </div>
            }
            .into_any()
        }
        Card::Note { line } => view! { <div class="rl-card" data-lane=lane data-kind="note">{line}</div> }.into_any(),
    }
}
