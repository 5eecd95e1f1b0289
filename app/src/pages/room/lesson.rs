//! A room that runs a lesson, as every page shows it: the round the trainer opened, its question
//! and, after the run, its answer and explanation; each participant's handle, score and the
//! leaderboard. The trainer's controls are [`super::lesson_controls`].
//!
//! A participant answers under a handle. Their tab keeps the handle and a secret seat for the
//! room (session storage), so a reload (or a lost connection) takes the handle, its score and
//! the open round's pick back; another page asking for the same handle is told it is taken.

use crate::api::{Following, RunSocket};
use crate::components::predict::{Predict, pick_for};
use leptos::prelude::*;
use shared::Prediction;
use shared::lesson::live::{Live, LiveRound, Standing};
use shared::run_state::RunState;

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
    // What the room counted for this page: its pick, shown again after a reload; after the
    // reveal, the pick that was scored (one that did not reach the room before the run is not).
    let counted = Memo::new(move |_| {
        let me = handle.and_then(|h| h.get())?;
        live.with(|l| l.as_ref()?.pick_of(&me).map(str::to_owned))
    });
    let from_room = StoredValue::new(false);
    Effect::new(move |_| {
        let counted = counted.get();
        let answered = round.with(|r| r.as_ref().is_some_and(|r| r.answer.is_some()));
        let mine = picked.get_untracked();
        if (answered || mine.is_none()) && mine != counted {
            from_room.set_value(true);
            picked.set(counted);
        }
    });
    Effect::new(move |_| {
        let choice = picked.get();
        // The room's own word is not sent back (it would restart the pick's clock).
        if from_room.get_value() {
            from_room.set_value(false);
            return;
        }
        if let Some(choice) = choice
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
