//! The spec editor: a plain textarea, line numbers beside it, and what is wrong, where, as you
//! type. The spec is read in the browser by the parser the server uses (`shared::spec`), so
//! what the editor accepts is what the server plays.

use leptos::prelude::*;
use shared::spec::{self, Pos};

/// What the editor says of the text: a problem at a place, or a summary of what reads.
#[derive(Clone, Debug, PartialEq)]
pub enum Reading {
    Problem { at: Pos, message: String },
    Fine { summary: String },
}

/// Reads `text` as the server will (`shared::spec::reading`).
pub fn read(text: &str) -> Reading {
    match spec::reading(text) {
        Ok(summary) => Reading::Fine { summary },
        Err((at, message)) => Reading::Problem { at, message },
    }
}

#[component]
pub fn SpecEditor(text: RwSignal<String>, reading: Memo<Reading>) -> impl IntoView {
    let lines = Memo::new(move |_| text.with(|t| t.split('\n').count()).max(1));
    let wrong_line = move || match reading.get() {
        Reading::Problem { at, .. } => Some(at.line as usize),
        Reading::Fine { .. } => None,
    };
    let gutter = move || {
        let wrong = wrong_line();
        (1..=lines.get())
            .map(|n| {
                view! { <li class:rl-gutter-wrong=wrong == Some(n) data-line=n>{n}</li> }
            })
            .collect_view()
    };
    let go_to_problem = move |_| {
        if let Reading::Problem { at, .. } = reading.get_untracked() {
            text.with_untracked(|t| crate::api::select_in_editor("rl-spec-text", t, at.line, at.column));
        }
    };
    view! {
        <div class="rl-editor">
            <div class="rl-editor-body">
                <ol class="rl-gutter" aria-hidden="true">{gutter}</ol>
                <textarea id="rl-spec-text" class="rl-spec-text" spellcheck="false" autocomplete="off"
                    autocapitalize="off" wrap="off" aria-label="Spec, in PostgreSQL's isolation-tester format"
                    aria-describedby="rl-spec-reading"
                    aria-invalid=move || matches!(reading.get(), Reading::Problem { .. }).to_string()
                    rows=move || lines.get().to_string()
                    prop:value=move || text.get()
                    on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            </div>
            {move || match reading.get() {
                Reading::Problem { at, message } => view! {
                    <p id="rl-spec-reading" class="rl-spec-reading" data-ok="false" data-line=at.line data-column=at.column role="status">
                        <button class="rl-spec-where" on:click=go_to_problem>{format!("Line {}, column {}", at.line, at.column)}</button>
                        {format!(": {message}")}
                    </p>
                }.into_any(),
                Reading::Fine { summary } => view! {
                    <p id="rl-spec-reading" class="rl-spec-reading" data-ok="true" role="status">{summary}</p>
                }.into_any(),
            }}
        </div>
    }
}
