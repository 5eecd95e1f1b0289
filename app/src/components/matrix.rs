//! "Every permutation": one row per permutation, its steps in order with waits and failures
//! marked, its outcome; the permutations with the same outcome grouped and counted above. Each
//! row opens that permutation's own run where there is a server to play it (a recording's
//! matrix is only read).

use leptos::prelude::*;
use shared::run_state::RunState;
use shared::spec::PlayedStep;
use shared::spec::matrix::{self, group};

/// The permutation rows a run has reported so far: index, steps, outcome (owned: a `Memo`
/// keeps them).
fn rows(state: &RunState) -> Vec<(u32, Vec<PlayedStep>, String)> {
    matrix::rows(&state.events)
        .into_iter()
        .map(|row| (row.index, row.steps.to_vec(), row.outcome.to_owned()))
        .collect()
}

#[component]
pub fn Matrix(
    state: RwSignal<RunState>,
    /// Plays the permutation at this index; without it, rows have no "Open".
    #[prop(optional)]
    open: Option<Callback<u32>>,
) -> impl IntoView {
    let rows = Memo::new(move |_| state.with(rows));
    let groups = move || {
        rows.with(|rows| {
            group(rows.iter().map(|(i, _, outcome)| (*i as usize, outcome.as_str())))
                .into_iter()
                .map(|(outcome, members)| {
                    let count = members.len();
                    view! {
                        <li class="rl-matrix-group" data-count=count>
                            <strong>{format!("{count} × ")}</strong>
                            <span class="rl-matrix-outcome">{outcome.to_owned()}</span>
                            <span class="rl-matrix-which">{format!(" ({})", matrix::which(&members))}</span>
                        </li>
                    }
                })
                .collect_view()
        })
    };
    let body = move || {
        rows.get()
            .into_iter()
            .map(|(index, steps, outcome)| {
                let cells = steps
                    .into_iter()
                    .map(|s| {
                        let mark = s.mark();
                        view! {
                            <li class="rl-matrix-step" data-session=s.session.clone() data-waited=s.waited.to_string()
                                data-error=s.error.clone().unwrap_or_default() title=s.session.clone()>
                                {s.name.clone()}{mark}
                            </li>
                        }
                    })
                    .collect_view();
                view! {
                    <tr class="rl-matrix-row" data-index=index>
                        <th scope="row">{index + 1}</th>
                        <td><ol class="rl-matrix-steps">{cells}</ol></td>
                        <td class="rl-matrix-outcome">{outcome}</td>
                        {open.map(|open| view! {
                            <td><button class="rl-matrix-open" on:click=move |_| open.run(index)>"Open"</button></td>
                        })}
                    </tr>
                }
            })
            .collect_view()
    };
    view! {
        <section class="rl-matrix" aria-label="Every permutation">
            <ul class="rl-matrix-groups">{groups}</ul>
            <div class="rl-matrix-scroll">
                <table>
                    <thead><tr><th scope="col">"#"</th><th scope="col">"Steps, in order (waits and failures marked)"</th><th scope="col">"Outcome"</th>{open.map(|_| view! { <th></th> })}</tr></thead>
                    <tbody>{body}</tbody>
                </table>
            </div>
        </section>
    }
}
