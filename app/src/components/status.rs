//! Where the run is, in words: queued (and where in line), running on which services, paused
//! before whose step on which service, done, failed, or the connection lost (with a reconnect
//! button, never a blank page).

use crate::api::{Link, RunSocket};
use leptos::prelude::*;
use shared::Outcome;
use shared::Service;
use shared::run_state::{Phase, RunState};

/// `1st`, `2nd`, `3rd`, `11th`.
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// `PostgreSQL`, `PostgreSQL and Redis`, `HTTP, PostgreSQL and Kafka`.
fn listed(services: &[Service]) -> String {
    let names: Vec<&str> = services.iter().map(|s| s.label()).collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// A running run in words: paused before whose step on which service, or playing on which.
fn running(state: &RunState) -> String {
    match &state.next_step {
        Some(next) => format!(
            "Paused before {}'s next step on {}. Press Next step to play it.",
            next.actor,
            next.service.label()
        ),
        None => match state.services().as_slice() {
            [] => "Running…".to_owned(),
            services => format!("Running on a real {}…", listed(services)),
        },
    }
}

#[component]
pub fn Status(socket: RunSocket) -> impl IntoView {
    let (state, link) = (socket.state, socket.link);
    let phase = move || state.with(|s| s.phase.clone());
    let paused = move || state.with(|s| s.next_step.is_some());
    let data_state = move || match (link.get(), phase()) {
        (Link::Lost, Phase::Idle | Phase::Queued(_) | Phase::Running) => "lost",
        (_, Phase::Idle) => "idle",
        (_, Phase::Queued(_)) => "queued",
        (_, Phase::Running) if paused() => "paused",
        (_, Phase::Running) => "running",
        (_, Phase::Finished(Outcome::Completed)) => "done",
        (_, Phase::Finished(Outcome::Failed { .. })) => "failed",
        (_, Phase::Finished(Outcome::Cancelled)) => "cancelled",
    };
    let text = move || match (link.get(), phase()) {
        (Link::Lost, Phase::Idle | Phase::Queued(_) | Phase::Running) => "Connection lost.".to_owned(),
        (Link::Connecting, Phase::Idle) => "Connecting…".to_owned(),
        (_, Phase::Idle) => "Ready.".to_owned(),
        (_, Phase::Queued(n)) => format!(
            "Queued: {} in line. Every run gets its own sandbox; yours starts soon.",
            ordinal(n)
        ),
        (_, Phase::Running) => state.with(running),
        (_, Phase::Finished(Outcome::Completed)) => "Done.".to_owned(),
        (_, Phase::Finished(Outcome::Failed { message })) => format!("The run failed: {message}"),
        (_, Phase::Finished(Outcome::Cancelled)) => "Cancelled.".to_owned(),
    };
    let refused = move || state.with(|s| s.refused.clone());
    view! {
        <div class="rl-status" data-state=data_state role="status" aria-live="polite">
            <span>{text}</span>
            {move || refused().map(|r| view! { <span class="rl-refused">" " {r}</span> })}
            {move || (link.get() == Link::Lost).then(|| {
                view! { <button class="rl-reconnect" on:click=move |_| socket.connect()>"Reconnect"</button> }
            })}
        </div>
    }
}
