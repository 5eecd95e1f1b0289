//! A room that runs a lesson: the round the trainer opened, its question and, after the run,
//! its answer and explanation; each participant's handle, score and the leaderboard; and the
//! trainer's plan of rounds (open, skip, play again, at another variant), Run and the results.
//!
//! A participant answers under a handle. Their tab keeps the handle and a secret seat for the
//! room (session storage), so a reload (or a lost connection) takes the handle, and its score,
//! back; another page asking for the same handle is told it is taken.

use crate::api::{Following, RunSocket};
use crate::components::predict::{Predict, pick_for};
use leptos::prelude::*;
use shared::lesson::live::{Live, LiveRound, Standing};
use shared::run_state::RunState;
use shared::{Mode, Prediction};

/// The lesson the room runs, as this page is shown it.
pub(super) fn live(state: RwSignal<RunState>) -> Memo<Option<Live>> {
    Memo::new(move |_| state.with(|s| s.lesson.clone()))
}

/// The key this browser keeps room `room`'s handle and seat under.
fn stored_key(room: &str) -> String {
    format!("racelab-seat-{room}")
}

/// This tab's storage: a reload keeps the seat, and two tabs (two people at one computer, or
/// a trainer trying the room) are two participants.
fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.session_storage().ok().flatten()
}

/// The handle and seat this browser answers room `room` under, if it has taken one.
pub(super) fn stored_seat(room: &str) -> Option<(String, String)> {
    let kept = storage()?.get_item(&stored_key(room)).ok().flatten()?;
    let (handle, seat) = kept.split_once('\n')?;
    Some((handle.to_owned(), seat.to_owned()))
}

fn store_seat(room: &str, handle: &str, seat: &str) {
    if let Some(storage) = storage() {
        let _ = storage.set_item(&stored_key(room), &format!("{handle}\n{seat}"));
    }
}

/// A new seat: 128 random bits from the browser's cryptographic generator, in hex.
fn new_seat() -> String {
    let mut bits = [0u8; 16];
    if let Some(crypto) = web_sys::window().and_then(|w| w.crypto().ok()) {
        let _ = crypto.get_random_values_with_u8_array(&mut bits);
    }
    bits.iter().map(|b| format!("{b:02x}")).collect()
}

/// A participant's way into the lesson: a handle, asked once, then kept for the room.
#[component]
pub(super) fn Seat(socket: RunSocket, room: String, handle: RwSignal<Option<String>>) -> impl IntoView {
    let state = socket.state;
    let typed = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<String>);
    // A refused handle (taken, or not a handle) comes back as the last error: the form asks again.
    Effect::new(move |_| {
        if let Some(refused) = state.with(|s| s.refused.clone())
            && handle.get_untracked().is_some()
            && !seated(state, handle)
        {
            problem.set(Some(refused));
            handle.set(None);
        }
    });
    let take = move |event: leptos::ev::SubmitEvent| {
        event.prevent_default();
        let wanted = typed.get_untracked().trim().to_owned();
        if let Some(why) = shared::lesson::live::handle_refusal(&wanted) {
            problem.set(Some(why));
            return;
        }
        problem.set(None);
        state.update(|s| s.refused = None);
        let seat = stored_seat(&room)
            .filter(|(kept, _)| *kept == wanted)
            .map_or_else(new_seat, |(_, seat)| seat);
        store_seat(&room, &wanted, &seat);
        handle.set(Some(wanted.clone()));
        socket.follow_as(Following {
            room: room.clone(),
            token: None,
            seat: Some((wanted, seat)),
        });
    };
    move || {
        (!seated(state, handle)).then(|| {
            view! {
                <form class="rl-lesson-seat" on:submit=take.clone()>
                    <label>
                        "Your handle for the leaderboard "
                        <input type="text" class="rl-lesson-handle" maxlength="24" autocomplete="nickname"
                            placeholder="e.g. ana" prop:value=move || typed.get()
                            on:input=move |e| typed.set(event_target_value(&e)) />
                    </label>
                    " "
                    <button type="submit" class="rl-lesson-join">"Join the lesson"</button>
                    <p class="rl-lesson-seat-hint">"Only your handle is kept with your answers: no name, no e-mail."</p>
                    {move || problem.get().map(|why| view! { <p class="rl-notice rl-notice--refused" role="alert">{why}</p> })}
                </form>
            }
        })
    }
}

/// Whether this page answers under `handle` in the lesson: the room lists it (on the whole
/// leaderboard, or as the participant's own line).
fn seated(state: RwSignal<RunState>, handle: RwSignal<Option<String>>) -> bool {
    let Some(handle) = handle.get() else { return false };
    state.with(|s| {
        s.lesson
            .as_ref()
            .is_some_and(|l| l.leaderboard.iter().any(|line| line.handle == handle))
    })
}

/// The round's question as the predict panel shows it.
fn prediction_of(round: &LiveRound) -> Prediction {
    Prediction {
        question: round.question.clone(),
        choices: shared::lesson::as_choices(&round.choices),
    }
}

/// The open round: its place in the lesson, its question and choices (a participant with a
/// handle picks; the trainer's page shows them), then the answer and the explanation.
#[component]
pub(super) fn RoundPanel(
    socket: RunSocket,
    live: Memo<Option<Live>>,
    /// This page's handle (a participant's); `None` on the trainer's page and a watcher's.
    handle: Option<RwSignal<Option<String>>>,
    closed: Signal<bool>,
) -> impl IntoView {
    let state = socket.state;
    let round = Memo::new(move |_| live.with(|l| l.as_ref().and_then(|l| l.round.clone())));
    let key = move || round.with(|r| r.as_ref().map(|r| (r.number, r.variant.clone())));
    let picked = pick_for(key);
    // A round played again starts with no pick, as the room does.
    Effect::new(move |was_answered: Option<bool>| {
        let answered = round.with(|r| r.as_ref().is_some_and(|r| r.answer.is_some()));
        if was_answered == Some(true) && !answered {
            picked.set(None);
        }
        answered
    });
    let answering = move || handle.is_some_and(|h| seated(state, h));
    Effect::new(move |_| {
        if let Some(choice) = picked.get()
            && answering()
        {
            socket.predict(&choice);
        }
    });
    let revealed = Signal::derive(move || {
        round.with(|r| {
            let r = r.as_ref()?;
            Some((r.answer.clone()?, r.explain.clone().unwrap_or_default()))
        })
    });
    let locked = Signal::derive(move || {
        closed.get() || !answering() || state.with(RunState::is_active) || revealed.with(Option::is_some)
    });
    move || {
        let Some(r) = round.get() else {
            return view! { <p class="rl-lesson-waiting">"The trainer has not opened the first round yet."</p> }
                .into_any();
        };
        let of = live.with(|l| l.as_ref().map_or(0, |l| l.rounds));
        let hint = if handle.is_some() {
            "Pick what you expect; your trainer runs it, and the picks close when it starts."
        } else {
            "The room picks on their phones; Run when everyone has."
        };
        view! {
            <section class="rl-lesson-round-now" data-number=r.number.to_string()
                data-answered=r.answer.is_some().to_string()>
                <p class="rl-lesson-place">{format!("Round {} of {of}", r.number)}</p>
                <h2 class="rl-lesson-round-title">{r.title.clone()}</h2>
                <Predict prediction=prediction_of(&r) subject=Signal::stored(r.title.clone()) picked=picked
                    revealed=revealed locked=locked hint=hint />
                {verdict_for(handle, picked, &r)}
            </section>
        }
        .into_any()
    }
}

/// After the reveal, a participant's own result in one line.
fn verdict_for(
    handle: Option<RwSignal<Option<String>>>,
    picked: RwSignal<Option<String>>,
    round: &LiveRound,
) -> Option<impl IntoView + use<>> {
    let answer = round.answer.clone()?;
    handle?;
    Some(move || {
        let (class, said) = match picked.get() {
            Some(p) if p == answer => ("rl-lesson-result rl-lesson-result--right", "Right: one point."),
            Some(_) => ("rl-lesson-result rl-lesson-result--wrong", "Not this time."),
            None => ("rl-lesson-result", "You did not answer this round."),
        };
        view! { <p class=class role="status">{said}</p> }
    })
}

/// The leaderboard, best first; a participant whose trainer hides it sees their own line.
#[component]
pub(super) fn Leaderboard(live: Memo<Option<Live>>, handle: Option<RwSignal<Option<String>>>) -> impl IntoView {
    move || {
        let lesson = live.get()?;
        let mine = handle.and_then(|h| h.get());
        if lesson.leaderboard.is_empty() {
            return None;
        }
        let whole = handle.is_none() || lesson.shown;
        let title = match (whole, handle.is_none(), lesson.shown) {
            (true, true, false) => "Leaderboard (hidden from participants)",
            (true, _, _) => "Leaderboard",
            (false, ..) => "Your score",
        };
        let rows = lesson
            .leaderboard
            .iter()
            .enumerate()
            .map(|(place, line)| row(place, line, mine.as_deref()))
            .collect_view();
        Some(view! {
            <section class="rl-leaderboard" data-shown=lesson.shown.to_string()>
                <h2>{title}</h2>
                <table>
                    <thead><tr><th scope="col">"#"</th><th scope="col">"Handle"</th><th scope="col">"Right"</th><th scope="col">"Time"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </section>
        })
    }
}

fn row(place: usize, line: &Standing, mine: Option<&str>) -> impl IntoView + use<> {
    let own = mine == Some(line.handle.as_str());
    let seconds = format!("{:.1} s", line.millis as f64 / 1000.0);
    view! {
        <tr data-handle=line.handle.clone() data-right=line.right.to_string() class:rl-leaderboard-mine=own>
            <td>{place + 1}</td>
            <th scope="row">{line.handle.clone()}</th>
            <td>{format!("{} of {}", line.right, line.answered)}</td>
            <td>{seconds}</td>
        </tr>
    }
}

/// The trainer's lesson: the plan of rounds (each one opens it; a later one skips those
/// between), the round's variant (changed live), Run, Step and Cancel, the leaderboard's
/// visibility, the trainer's notes, and the results.
#[component]
pub(super) fn LessonControls(
    socket: RunSocket,
    live: Memo<Option<Live>>,
    scenarios: super::Scenarios,
    /// The session's results' secret address (`/api/results/<id>`), from the trainer's link.
    results: Option<String>,
    closed: Signal<bool>,
) -> impl IntoView {
    let state = socket.state;
    let active = Signal::derive(move || state.with(RunState::is_active));
    let frozen = Signal::derive(move || active.get() || closed.get());
    let text = lesson_text(live);
    let round = Memo::new(move |_| live.with(|l| l.as_ref().and_then(|l| l.round.clone())));
    let start = move |mode: Mode| {
        if let Some(r) = round.get_untracked() {
            let postgres = r.postgres.map(|v| v.to_string()).unwrap_or_default();
            socket.start_on(&r.scenario, &r.variant, mode, &postgres);
        }
    };
    let shown = move || live.with(|l| l.as_ref().is_some_and(|l| l.shown));
    view! {
        <div class="rl-lesson-controls">
            {move || text.get().map(|lesson| plan(socket, lesson, round, frozen))}
            {move || round.get().map(|r| variant_picker(socket, scenarios, r, frozen))}
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

/// The lesson's text, read once the room says which lesson it runs (for the plan and the notes).
fn lesson_text(live: Memo<Option<Live>>) -> RwSignal<Option<shared::lesson::Lesson>> {
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
fn plan(
    socket: RunSocket,
    lesson: shared::lesson::Lesson,
    round: Memo<Option<LiveRound>>,
    frozen: Signal<bool>,
) -> impl IntoView {
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
                    <button class="rl-lesson-open" on:click=move |_| socket.round(number, None)
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
fn notes(
    text: RwSignal<Option<shared::lesson::Lesson>>,
    round: Memo<Option<LiveRound>>,
) -> Option<impl IntoView + use<>> {
    let number = round.with(|r| r.as_ref().map(|r| r.number))?;
    let notes = text.with(|t| t.as_ref()?.rounds.get(number - 1).map(|r| r.notes.clone()))?;
    (!notes.is_empty()).then(|| {
        view! {
            <aside class="rl-lesson-notes" aria-label="Your notes">
                <strong>"Your notes: "</strong>
                {notes.into_iter().map(|n| view! { <p>{n}</p> }).collect_view()}
            </aside>
        }
    })
}
