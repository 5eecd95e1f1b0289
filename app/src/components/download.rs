//! "Download recording": a finished run's page saves the run as a recording
//! (`GET /api/runs/<id>/recording`), one `.racelab.json` file that plays on any static page with
//! no racelab behind it (docs/recordings.md). Only a run that completed is offered: a recording
//! shows a race to its verdict.

use leptos::prelude::*;
use shared::run_state::{Phase, RunState};

/// The link, once the run in `state` has completed; nothing before.
#[component]
pub fn DownloadRecording(state: RwSignal<RunState>) -> impl IntoView {
    move || {
        state.with(|s| {
            let completed = matches!(s.phase, Phase::Finished(shared::Outcome::Completed));
            let run = s.run_id.clone().filter(|_| completed)?;
            let href = format!("/api/runs/{run}/recording");
            Some(view! {
                <a class="rl-download" href=href download=""
                    title="A file that plays this run on any page, with no racelab server">
                    "Download recording"
                </a>
            })
        })
    }
}
