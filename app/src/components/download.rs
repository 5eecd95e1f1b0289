//! "Download recording": a finished run's page saves the run as a recording
//! (`GET /api/runs/<id>/recording`), one `.racelab.json` file that plays on any static page with
//! no racelab behind it (docs/recordings.md). Only a run that completed is offered: a recording
//! shows a race to its verdict.
//!
//! Before downloading, its author can mark chapters: steps where the player stops and asks the
//! reader to predict what happens next, each with a caption ([`shared::chapters`]). The link
//! asks for them (`?chapter=12:…`); racelab checks them and writes them into the file.

use leptos::prelude::*;
use shared::EventKind;
use shared::run_state::{Phase, RunState};

/// The link, once the run in `state` has completed, and the chapters to mark; nothing before.
#[component]
pub fn DownloadRecording(state: RwSignal<RunState>) -> impl IntoView {
    // Each marked step's seq and its caption so far.
    let marks: RwSignal<Vec<(u64, String)>> = RwSignal::new(Vec::new());
    move || {
        state.with(|s| {
            let completed = matches!(s.phase, Phase::Finished(shared::Outcome::Completed));
            let run = s.run_id.clone().filter(|_| completed)?;
            let href = move || {
                let query = marks.with(|m| shared::chapters::query(m));
                match query.is_empty() {
                    true => format!("/api/runs/{run}/recording"),
                    false => format!("/api/runs/{run}/recording?{query}"),
                }
            };
            let steps: Vec<(u64, String)> = s
                .events
                .iter()
                .filter_map(|e| match &e.kind {
                    EventKind::Step { actor, text, .. } => {
                        Some((e.seq, format!("{actor}: {}", text.lines().next().unwrap_or_default())))
                    }
                    _ => None,
                })
                .collect();
            Some(view! {
                <a class="rl-download" href=href download=""
                    title="A file that plays this run on any page, with no racelab server">
                    "Download recording"
                </a>
                <Chapters steps=steps marks=marks />
            })
        })
    }
}

/// The run's steps, each with a box to mark it as a chapter and its caption.
#[component]
fn Chapters(steps: Vec<(u64, String)>, marks: RwSignal<Vec<(u64, String)>>) -> impl IntoView {
    let rows = steps
        .into_iter()
        .map(|(seq, said)| {
            let marked = move || marks.with(|m| m.iter().any(|(at, _)| *at == seq));
            let toggle = move |_| {
                marks.update(|m| match m.iter().position(|(at, _)| *at == seq) {
                    Some(i) => {
                        m.remove(i);
                    }
                    None => m.push((seq, String::new())),
                })
            };
            let caption = move |e| {
                let text = event_target_value(&e);
                marks.update(|m| {
                    if let Some((_, caption)) = m.iter_mut().find(|(at, _)| *at == seq) {
                        *caption = text;
                    }
                })
            };
            view! {
                <li class="rl-chapter-step" data-seq=seq.to_string()>
                    <label>
                        <input type="checkbox" class="rl-chapter-mark" prop:checked=marked on:change=toggle />
                        " " <code>{said}</code>
                    </label>
                    <input type="text" class="rl-chapter-caption" maxlength="280" aria-label="Its caption"
                        placeholder="What should the reader predict here?" hidden=move || !marked() on:input=caption />
                </li>
            }
        })
        .collect_view();
    view! {
        <details class="rl-chapters">
            <summary>"Chapters"</summary>
            <p class="rl-explain">
                "Mark the steps where the recording stops and asks its reader what will happen next, \
                 and say what to ask; the download carries them."
            </p>
            <ol class="rl-chapter-steps">{rows}</ol>
        </details>
    }
}
