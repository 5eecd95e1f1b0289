//! `/results/{session}`: how a session of a lesson went, for its trainer (the address is the
//! secret their room gave them): each round's share of right answers, the final leaderboard, the
//! CSV, and beside it how every session of the same lesson did on each round, so the race that
//! surprises people most stands out.

use crate::api::{fetch_json, fetched};
use crate::components::error_view::{ErrorView, loading};
use leptos::prelude::*;
use shared::json::{FromJson, Json, JsonError};
use shared::lesson::live::Standing;

/// One round's figures: in this session, or across every session of the lesson.
#[derive(Clone, Debug, PartialEq)]
struct RoundFigures {
    number: usize,
    title: String,
    sessions: u64,
    answers: u64,
    right: u64,
}

impl FromJson for RoundFigures {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(RoundFigures {
            number: json.get("number")?,
            title: json.get("title")?,
            sessions: json.get("sessions")?,
            answers: json.get("answers")?,
            right: json.get("right")?,
        })
    }
}

/// `GET /api/results/{session}`.
#[derive(Clone, Debug, PartialEq)]
struct Summary {
    lesson: String,
    title: String,
    rounds: Vec<RoundFigures>,
    leaderboard: Vec<Standing>,
}

impl FromJson for Summary {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(Summary {
            lesson: json.get("lesson")?,
            title: json.get("title")?,
            rounds: json.get("rounds")?,
            leaderboard: json.get("leaderboard")?,
        })
    }
}

#[component]
pub fn ResultsPage(session: String) -> impl IntoView {
    let path = format!("/api/results/{session}");
    let summary = fetched(async move { fetch_json::<Summary>(&path).await });
    let csv = format!("/api/results/{session}/csv");
    view! {
        <article class="rl-results">
            {move || summary.get().map(|found| match found {
                Err(message) => view! { <ErrorView message=message /> }.into_any(),
                Ok(summary) => view! { <Shown summary=summary csv=csv.clone() /> }.into_any(),
            }).unwrap_or_else(|| loading("Loading the results…"))}
        </article>
    }
}

#[component]
fn Shown(summary: Summary, csv: String) -> impl IntoView {
    let lesson = summary.lesson.clone();
    let across =
        fetched(async move { fetch_json::<Vec<RoundFigures>>(&format!("/api/lessons/{lesson}/figures")).await });
    let rounds = summary.rounds.clone();
    view! {
        <h1>"Results: " {summary.title.clone()}</h1>
        <p class="rl-results-actions">
            <a class="rl-results-csv" href=csv download="racelab-results.csv">"Download the answers (CSV)"</a>
            " · "
            <a href=format!("/lessons/{}", summary.lesson)>"The lesson"</a>
        </p>
        <h2>"Each round"</h2>
        <table class="rl-results-rounds">
            <thead><tr>
                <th scope="col">"Round"</th><th scope="col">"Right, this session"</th>
                <th scope="col">"Right, every session"</th>
            </tr></thead>
            <tbody>
                {rounds.into_iter().map(|r| {
                    let everyone = move || across.get().and_then(Result::ok)
                        .and_then(|all| all.into_iter().find(|a| a.number == r.number))
                        .map(|a| share(&a))
                        .unwrap_or_default();
                    view! {
                        <tr data-number=r.number.to_string() data-answers=r.answers.to_string() data-right=r.right.to_string()>
                            <th scope="row">{format!("{}. {}", r.number, r.title)}</th>
                            <td>{share(&r)}</td>
                            <td class="rl-results-across">{everyone}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
        <h2>"Leaderboard"</h2>
        <ol class="rl-results-board">
            {summary.leaderboard.into_iter().map(|s| view! {
                <li data-handle=s.handle.clone() data-right=s.right.to_string()>
                    <strong>{s.handle.clone()}</strong> {format!(" {} right of {} answered", s.right, s.answered)}
                </li>
            }).collect_view()}
        </ol>
    }
}

/// "7 of 10 right (70%)", "not played" for a round nobody answered, and across sessions how
/// many there were.
fn share(r: &RoundFigures) -> String {
    if r.answers == 0 {
        return "not played".to_owned();
    }
    let percent = r.right * 100 / r.answers;
    let sessions = match r.sessions {
        0 | 1 => String::new(),
        n => format!(", {n} sessions"),
    };
    format!("{} of {} right ({percent}%){sessions}", r.right, r.answers)
}
