//! The trainer's side of a room that runs a lesson: the plan of rounds, the open round's
//! variant, Run and Step, the leaderboard's visibility, the trainer's notes, the results, and the
//! one key a presenter's clicker needs: "next" steps the run, runs the open round, or opens the
//! next one ([`NextMove`]).

use crate::api::{RunSocket, with_token};
use crate::components::keys::on_next_keys;
use leptos::prelude::*;
use shared::Mode;
use shared::lesson::live::{Live, LiveRound};
use shared::lesson::{Lesson, Race};
use shared::run_state::RunState;

/// What the "next" key (→, Space, N, PageDown) does on the trainer's page, shown beside the
/// controls so it is never a surprise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NextMove {
    /// The stepped run's next step.
    Step,
    /// Run the open round (its picks close).
    Run(usize),
    /// Open round `n` (the first, or the one after the answered round).
    Open(usize),
}

impl NextMove {
    /// What comes next in the room: nothing while a run plays on its own, after the last round's
    /// answer, or once the room closed.
    pub fn of(live: Option<&Live>, state: &RunState) -> Option<NextMove> {
        if state.next_step.is_some() {
            return Some(NextMove::Step);
        }
        let live = live?;
        if state.is_active() || state.room_closed {
            return None;
        }
        match &live.round {
            None => (live.rounds > 0).then_some(NextMove::Open(1)),
            Some(round) if round.answer.is_none() => Some(NextMove::Run(round.number)),
            Some(round) => (round.number < live.rounds).then_some(NextMove::Open(round.number + 1)),
        }
    }

    /// The hint beside the controls.
    pub fn hint(&self) -> String {
        match self {
            NextMove::Step => "→ plays the next step".to_owned(),
            NextMove::Run(n) => format!("→ runs round {n} (the picks close)"),
            NextMove::Open(n) => format!("→ opens round {n}"),
        }
    }
}

/// The trainer's lesson: the plan of rounds (each one opens it; a later one skips those
/// between), the round's variant (changed live), Run, Step and Cancel, the leaderboard's
/// visibility, the trainer's notes, and the results.
#[component]
pub fn LessonControls(
    socket: RunSocket,
    live: Memo<Option<Live>>,
    scenarios: super::Scenarios,
    /// The session's results' secret address (`/api/results/<id>`), from the trainer's link.
    results: Option<String>,
    /// The room's code and the trainer's token (a recording round is sent over HTTP).
    room: String,
    token: String,
    closed: Signal<bool>,
) -> impl IntoView {
    let state = socket.state;
    let active = Signal::derive(move || state.with(RunState::is_active));
    let frozen = Signal::derive(move || active.get() || closed.get());
    let text = lesson_text(live);
    let opener = Opener {
        socket,
        text,
        room: StoredValue::new((room, token)),
        problem: RwSignal::new(None),
    };
    let round = Memo::new(move |_| live.with(|l| l.as_ref().and_then(|l| l.round.clone())));
    let start = move |mode: Mode| {
        if let Some(r) = round.get_untracked() {
            let postgres = r.postgres.map(|v| v.to_string()).unwrap_or_default();
            socket.start_on(&r.scenario, &r.variant, mode, &postgres);
        }
    };
    let next = Memo::new(move |_| live.with(|l| state.with(|s| NextMove::of(l.as_ref(), s))));
    on_next_keys(move || {
        let Some(next) = next.get_untracked() else { return false };
        match next {
            NextMove::Step => socket.next(),
            NextMove::Run(_) => start(Mode::Auto),
            NextMove::Open(number) => opener.open(number),
        }
        true
    });
    let shown = move || live.with(|l| l.as_ref().is_some_and(|l| l.shown));
    view! {
        <div class="rl-lesson-controls">
            {move || text.get().map(|lesson| plan(opener, lesson, round, frozen))}
            {move || opener.problem.get().map(|why| view! { <p class="rl-notice rl-lesson-problem" role="alert">{why}</p> })}
            {move || round.get().filter(|r| !opener.is_recording(r.number)).map(|r| variant_picker(socket, scenarios, r, frozen))}
            <div class="rl-controls">
                <button class="rl-run" on:click=move |_| start(Mode::Auto)
                    disabled=move || frozen.get() || round.with(Option::is_none)>"Run"</button>
                <button class="rl-step" on:click=move |_| start(Mode::Step)
                    disabled=move || frozen.get() || round.with(Option::is_none)>"Step"</button>
                {move || state.with(|s| s.next_step.is_some()).then(|| view! {
                    <button class="rl-next" on:click=move |_| socket.next()>"Next step"</button>
                })}
                {move || active.get().then(|| view! { <button class="rl-cancel" on:click=move |_| socket.cancel()>"Cancel"</button> })}
            </div>
            <p class="rl-lesson-next-key" aria-live="polite">{move || next.get().map(|n| n.hint())}</p>
            <label class="rl-lesson-show">
                <input type="checkbox" class="rl-lesson-show-box" prop:checked=shown
                    on:change=move |e| socket.leaderboard(event_target_checked(&e)) disabled=move || closed.get() />
                " Participants see the leaderboard"
            </label>
            {move || notes(text, round)}
            {results.map(|secret| view! {
                <p class="rl-lesson-results">
                    <a class="rl-lesson-summary" href=format!("/results/{secret}")>"Results of this session"</a>
                    " · "
                    <a class="rl-lesson-csv" href=format!("/api/results/{secret}/csv") download="racelab-results.csv">"Download CSV"</a>
                </p>
            })}
        </div>
    }
}

/// Opens the lesson's rounds: a recording at another site is read by this page and sent to the
/// room (racelab itself fetches nothing); any other round is asked of the room.
#[derive(Clone, Copy)]
struct Opener {
    socket: RunSocket,
    text: RwSignal<Option<Lesson>>,
    /// The room's code and the trainer's token.
    room: StoredValue<(String, String)>,
    /// Why the last round could not be sent, until the next is opened.
    problem: RwSignal<Option<String>>,
}

impl Opener {
    /// The recording round `number` plays, where it is at another site.
    fn elsewhere(self, number: usize) -> Option<String> {
        self.text
            .with_untracked(|text| match &text.as_ref()?.round(number)?.race {
                Race::Recording { src } if shared::lesson::kept_run(src).is_none() => Some(src.clone()),
                _ => None,
            })
    }

    /// Whether round `number` plays a recording (at one variant: the recorded one).
    fn is_recording(self, number: usize) -> bool {
        self.text.with(|text| {
            text.as_ref()
                .and_then(|t| t.round(number))
                .is_some_and(|r| matches!(r.race, Race::Recording { .. }))
        })
    }

    fn open(self, number: usize) {
        self.problem.set(None);
        let Some(src) = self.elsewhere(number) else {
            self.socket.round(number, None);
            return;
        };
        let (room, token) = self.room.get_value();
        let problem = self.problem;
        leptos::task::spawn_local(async move {
            if let Err(why) = send_recording(&room, &token, number, &src).await {
                problem.set(Some(why));
            }
        });
    }
}

/// Reads round `number`'s recording at `src` and sends it to `room` as its trainer.
async fn send_recording(room: &str, token: &str, number: usize, src: &str) -> Result<(), String> {
    let file = crate::pages::alone::recording_text(src).await?;
    let path = format!("/api/rooms/{room}/rounds/{number}/recording");
    with_token("PUT", &path, token, Some(&file)).await
}

/// The lesson's text, read once the room says which lesson it runs (for the plan and the notes).
fn lesson_text(live: Memo<Option<Live>>) -> RwSignal<Option<Lesson>> {
    let text = RwSignal::new(None);
    let id = Memo::new(move |_| live.with(|l| l.as_ref().map(|l| l.lesson.clone())));
    Effect::new(move |_| {
        let Some(id) = id.get() else { return };
        leptos::task::spawn_local(async move {
            if let Ok(kept) = crate::api::fetch_json::<super::super::lessons::Kept>(&format!("/api/lessons/{id}")).await
                && let Ok(lesson) = shared::lesson::parse(&kept.text)
            {
                text.set(Some(lesson));
            }
        });
    });
    text
}

/// The rounds, each with its button: "Open" (a later one skips those between), "Play again" for
/// the open one once answered, and for the open one its variant, changed live.
fn plan(opener: Opener, lesson: Lesson, round: Memo<Option<LiveRound>>, frozen: Signal<bool>) -> impl IntoView {
    let rounds = lesson
        .rounds
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let number = i + 1;
            let current = move || round.with(|o| o.as_ref().is_some_and(|o| o.number == number));
            let answered = move || round.with(|o| o.as_ref().is_some_and(|o| o.number == number && o.answer.is_some()));
            let label = move || match (current(), answered()) {
                (true, true) => "Play again",
                (true, false) => "Open",
                (false, _) => "Open",
            };
            view! {
                <li class="rl-lesson-plan-round" data-number=number.to_string()
                    aria-current=move || current().then_some("step")>
                    <span class="rl-lesson-plan-title">{r.title.clone()}</span>
                    " "
                    <button class="rl-lesson-open" on:click=move |_| opener.open(number)
                        disabled=move || frozen.get() || (current() && !answered())>{label}</button>
                </li>
            }
        })
        .collect_view();
    view! { <ol class="rl-lesson-plan" aria-label="Rounds">{rounds}</ol> }
}

/// The open round's variant, which the trainer may change live ("and now at SERIALIZABLE"): a new
/// variant opens the round afresh, with the question it asks there.
fn variant_picker(
    socket: RunSocket,
    scenarios: super::Scenarios,
    round: LiveRound,
    frozen: Signal<bool>,
) -> impl IntoView {
    let variants = scenarios
        .find(&round.scenario)
        .map(|info| info.variants)
        .unwrap_or_default();
    let number = round.number;
    let options = variants
        .into_iter()
        .map(|v| {
            let selected = v.id == round.variant;
            view! { <option value=v.id.clone() selected=selected>{v.label}</option> }
        })
        .collect_view();
    view! {
        <label class="rl-lesson-variant">
            "Play this round at "
            <select class="rl-lesson-variant-pick" disabled=move || frozen.get()
                on:change=move |e| socket.round(number, Some(&event_target_value(&e)))>
                {options}
            </select>
        </label>
    }
}

/// The trainer's notes for the open round, from the lesson's text.
fn notes(text: RwSignal<Option<Lesson>>, round: Memo<Option<LiveRound>>) -> Option<impl IntoView + use<>> {
    let number = round.with(|r| r.as_ref().map(|r| r.number))?;
    let notes = text.with(|t| t.as_ref()?.round(number).map(|r| r.notes.clone()))?;
    (!notes.is_empty()).then(|| {
        view! {
            <aside class="rl-lesson-notes" aria-label="Your notes">
                <strong>"Your notes: "</strong>
                {notes.into_iter().map(|n| view! { <p>{n}</p> }).collect_view()}
            </aside>
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::run_state::{NextStep, Phase};

    fn lesson(round: Option<(usize, bool)>) -> Live {
        Live {
            rounds: 3,
            round: round.map(|(number, answered)| LiveRound {
                number,
                answer: answered.then(|| "bob".to_owned()),
                ..LiveRound::default()
            }),
            ..Live::default()
        }
    }

    #[test]
    fn next_opens_the_first_round_runs_it_then_opens_the_one_after_until_the_last() {
        let idle = RunState::default();
        let next = |round| NextMove::of(Some(&lesson(round)), &idle);
        assert_eq!(next(None), Some(NextMove::Open(1)));
        assert_eq!(next(Some((1, false))), Some(NextMove::Run(1)));
        assert_eq!(next(Some((1, true))), Some(NextMove::Open(2)));
        assert_eq!(next(Some((3, false))), Some(NextMove::Run(3)));
        assert_eq!(next(Some((3, true))), None, "after the last round's answer");
        assert_eq!(NextMove::of(None, &idle), None, "no lesson");
    }

    #[test]
    fn next_steps_a_stepped_run_and_waits_for_one_that_plays_by_itself() {
        let round = lesson(Some((2, false)));
        let stepping = RunState {
            phase: Phase::Running,
            next_step: Some(NextStep {
                actor: "alice".to_owned(),
                service: shared::catalog::Service::default(),
                step: "SELECT".to_owned(),
            }),
            ..RunState::default()
        };
        assert_eq!(NextMove::of(Some(&round), &stepping), Some(NextMove::Step));
        let playing = RunState {
            phase: Phase::Running,
            ..RunState::default()
        };
        assert_eq!(NextMove::of(Some(&round), &playing), None);
        let closed = RunState {
            room_closed: true,
            ..RunState::default()
        };
        assert_eq!(NextMove::of(Some(&round), &closed), None);
    }
}
