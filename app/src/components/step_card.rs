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
            let failed = error.is_some() || refused(received.as_deref());
            // A request to one of the run's servers points at its lane; its answer comes back.
            let to = request_to(sent.as_deref());
            let head = step_head(service, text, to.clone());
            let params = (!params.is_empty()).then(|| view! { <div class="rl-params">{params_text(&params)}</div> });
            let sent = sent.map(|d| detail_view(*d));
            let received = received.map(|d| detail_view(*d));
            let outcome = ending(answered(to, result), rows, error);
            let service = service_badge(service).0;
            view! {
                <div class="rl-card" class:rl-card--error=failed data-lane=lane data-kind="statement" data-service=service>
                    {head}
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
            view! {
                <div class="rl-card" class:rl-card--error=failed data-lane=lane data-kind="released">
                    <div class="rl-released">{released_headline(waited_ms, failed)}</div>
                    {ending(result, rows, error)}
                </div>
            }
            .into_any()
        }
        Card::Commit => line_card(lane, "commit", "COMMIT ✓".to_owned()),
        Card::Rollback => line_card(lane, "rollback", "ROLLBACK".to_owned()),
        Card::Process { pid, restart } => line_card(lane, "process", process_text(pid, restart)),
        Card::Crash { point } => view! {
            <div class="rl-card rl-card--error" data-lane=lane data-kind="crash">
                <span class="rl-sqlstate" data-error-kind="crash">"SIGKILL"</span>
                " "
                <span class="rl-error-message">{format!("killed at {point}: no cleanup ran")}</span>
            </div>
        }
        .into_any(),
        Card::Exited { code } => line_card(lane, "exited", exited_text(code)),
        Card::Note { line } if line.contains('\n') => note_lines(lane, line),
        Card::Note { line } => line_card(lane, "note", line),
    }
}

/// A statement's headline: the badge of its service, its text, and an arrow to the lane of the
/// run's server it goes `to`, if any.
fn step_head(service: Service, text: String, to: Option<String>) -> impl IntoView {
    let (service_id, service_label) = service_badge(service);
    let arrow = to.map(|to| view! { <span class="rl-http-to" data-to=to.clone()>{format!("→ {to}")}</span> });
    view! {
        <div class="rl-step-head">
            <span class="rl-service-badge" data-service=service_id>{service_label}</span>
            <code class="rl-sql">{text}</code>
            {arrow}
        </div>
    }
}

/// Whether an HTTP answer is an error status: its card is shown as a failure, with its headers
/// kept.
fn refused(received: Option<&Detail>) -> bool {
    matches!(received, Some(Detail::Response { status, .. }) if *status >= 400)
}

/// The lane a request goes to, when it goes to one of the run's own servers.
fn request_to(sent: Option<&Detail>) -> Option<String> {
    match sent {
        Some(Detail::Request { to: Some(to), .. }) => Some(to.clone()),
        _ => None,
    }
}

/// A statement's result, said as coming back from the server it went `to` (`← shop: 201`).
fn answered(to: Option<String>, result: Option<String>) -> Option<String> {
    match (to, result) {
        (Some(to), Some(result)) => Some(format!("← {to}: {result}")),
        (_, result) => result,
    }
}

/// How a wait for a lock ended, after how long.
fn released_headline(waited_ms: u64, failed: bool) -> String {
    if failed {
        format!("stopped waiting after {waited_ms} ms")
    } else {
        format!("got the lock after {waited_ms} ms")
    }
}

/// A child process starting: a restart is a new process (the old one was killed or exited).
fn process_text(pid: u32, restart: bool) -> String {
    if restart {
        format!("restarted: a new process, pid {pid}")
    } else {
        format!("process started, pid {pid}")
    }
}

/// A child process that exited by itself, with its status when it has one.
fn exited_text(code: Option<i32>) -> String {
    match code {
        Some(code) => format!("exited with status {code}"),
        None => "exited".to_owned(),
    }
}

/// A card that is one line of text (a commit, a process starting, a note).
fn line_card(lane: String, kind: &'static str, text: String) -> AnyView {
    view! { <div class="rl-card" data-lane=lane data-kind=kind>{text}</div> }.into_any()
}

/// Several lines spoken in a row (a psql result): they keep their columns.
fn note_lines(lane: String, line: String) -> AnyView {
    let table = shared::compact::is_table(&line);
    view! {
        <div class="rl-card" data-lane=lane data-kind="note">
            <pre class="rl-note-lines" class:rl-note-lines--table=table>{line}</pre>
        </div>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(to: Option<&str>) -> Detail {
        Detail::Request {
            method: "POST".to_owned(),
            path: "/orders".to_owned(),
            headers: vec![],
            body: String::new(),
            to: to.map(str::to_owned),
        }
    }

    fn response(status: u16) -> Detail {
        Detail::Response {
            status,
            headers: vec![],
            body: String::new(),
        }
    }

    #[test]
    fn a_request_to_a_run_s_server_is_answered_from_its_lane() {
        let to = request_to(Some(&request(Some("shop"))));
        assert_eq!(to.as_deref(), Some("shop"));
        assert_eq!(answered(to, Some("201".to_owned())).as_deref(), Some("← shop: 201"));
        assert_eq!(request_to(Some(&request(None))), None);
        assert_eq!(request_to(Some(&response(200))), None);
        assert_eq!(answered(None, Some("1 row".to_owned())).as_deref(), Some("1 row"));
        assert_eq!(answered(Some("shop".to_owned()), None), None);
    }

    #[test]
    fn an_answer_from_400_up_is_a_refusal() {
        assert!(refused(Some(&response(409))));
        assert!(!refused(Some(&response(201))));
        assert!(!refused(Some(&request(None))));
        assert!(!refused(None));
    }
}
