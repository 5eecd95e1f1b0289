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
    // The run to offer and its steps (seq, who and what): drawn again only when they change, so
    // the chapters being marked survive the run's other frames.
    let offered = Memo::new(move |_| {
        state.with(|s| {
            let completed = matches!(s.phase, Phase::Finished(shared::Outcome::Completed));
            let run = s.run_id.clone().filter(|_| completed)?;
            Some((run, steps_of(s)))
        })
    });
    move || {
        offered.get().map(|(run, steps)| {
            let marks = Marks::new();
            let href = move || {
                let query = marks.query();
                match query.is_empty() {
                    true => format!("/api/runs/{run}/recording"),
                    false => format!("/api/runs/{run}/recording?{query}"),
                }
            };
            view! {
                <a class="rl-download" href=href download=""
                    title="A file that plays this run on any page, with no racelab server">
                    "Download recording"
                </a>
                <Chapters steps=steps marks=marks />
            }
        })
    }
}

/// Each step of the run: its seq, and who ran what (the text's first line).
fn steps_of(run: &RunState) -> Vec<(u64, String)> {
    run.events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Step { actor, text, .. } => {
                Some((e.seq, format!("{actor}: {}", text.lines().next().unwrap_or_default())))
            }
            _ => None,
        })
        .collect()
}

/// What the author marked: the steps ticked, and each step's caption (kept when its box is
/// unticked, so ticking it again brings it back).
#[derive(Clone, Copy)]
struct Marks {
    ticked: RwSignal<Vec<u64>>,
    captions: RwSignal<Vec<(u64, String)>>,
}

impl Marks {
    fn new() -> Marks {
        Marks {
            ticked: RwSignal::new(Vec::new()),
            captions: RwSignal::new(Vec::new()),
        }
    }

    fn caption(&self, seq: u64) -> String {
        self.captions
            .with(|c| c.iter().find(|(at, _)| *at == seq).map(|(_, text)| text.clone()))
            .unwrap_or_default()
    }

    /// The chapters the download asks for: the ticked steps that have a caption.
    fn query(&self) -> String {
        let marked: Vec<(u64, String)> = self
            .ticked
            .with(|t| t.iter().map(|seq| (*seq, self.caption(*seq))).collect());
        shared::chapters::query(&marked)
    }

    /// Ticked steps with no caption yet, which the download leaves out.
    fn uncaptioned(&self) -> usize {
        self.ticked
            .with(|t| t.iter().filter(|seq| self.caption(**seq).trim().is_empty()).count())
    }
}

/// The run's steps, each with a box to mark it as a chapter and its caption; at most
/// [`shared::chapters::AT_MOST`], and a word on any marked without a caption.
#[component]
fn Chapters(steps: Vec<(u64, String)>, marks: Marks) -> impl IntoView {
    let full = move || marks.ticked.with(Vec::len) >= shared::chapters::AT_MOST;
    let rows = steps
        .into_iter()
        .map(|(seq, said)| {
            let marked = move || marks.ticked.with(|t| t.contains(&seq));
            let toggle = move |_| {
                marks.ticked.update(|t| match t.iter().position(|at| *at == seq) {
                    Some(i) => {
                        t.remove(i);
                    }
                    None => t.push(seq),
                })
            };
            let typed = move |e| {
                let text = event_target_value(&e);
                marks
                    .captions
                    .update(|c| match c.iter_mut().find(|(at, _)| *at == seq) {
                        Some((_, caption)) => *caption = text,
                        None => c.push((seq, text)),
                    })
            };
            view! {
                <li class="rl-chapter-step" data-seq=seq.to_string()>
                    <label>
                        <input type="checkbox" class="rl-chapter-mark" prop:checked=marked on:change=toggle
                            disabled=move || full() && !marked() />
                        " " <code>{said}</code>
                    </label>
                    <input type="text" class="rl-chapter-caption" maxlength="280" aria-label="Its caption"
                        placeholder="What should the reader predict here?" hidden=move || !marked()
                        prop:value=move || marks.caption(seq) on:input=typed />
                </li>
            }
        })
        .collect_view();
    let note = move || match (marks.uncaptioned(), full()) {
        (0, false) => None,
        (0, true) => Some(format!(
            "{} chapters: a recording keeps at most that many.",
            shared::chapters::AT_MOST
        )),
        (1, _) => Some("One marked step has no caption yet: the download leaves it out.".to_owned()),
        (n, _) => Some(format!(
            "{n} marked steps have no caption yet: the download leaves them out."
        )),
    };
    view! {
        <details class="rl-chapters">
            <summary>"Chapters"</summary>
            <p class="rl-explain">
                "Mark the steps where the recording stops and asks its reader what will happen next, \
                 and say what to ask; the download carries them."
            </p>
            <ol class="rl-chapter-steps">{rows}</ol>
            {move || note().map(|text| view! { <p class="rl-chapter-note" role="status">{text}</p> })}
        </details>
    }
}
