//! Predict, then run: the scenario's question and its choices, picked before the run; once the
//! run reveals what happened (its `reveal` event), the right choice is marked, the reader's pick
//! too, and a sentence says why.

use leptos::prelude::*;
use shared::Prediction;
use shared::catalog::database_of;
use shared::run_state::RunState;

/// The panel's part in predicting: the question (when the scenario asks and the page wants it),
/// and whether a run must still wait for the reader's pick. A new variant is a new question,
/// offering the choices of the database it plays on ([`Prediction::on`]).
pub fn asked(
    prediction: Option<Prediction>,
    variant: RwSignal<String>,
    variant_label: Signal<String>,
    state: RwSignal<RunState>,
    active: Signal<bool>,
) -> (Option<impl IntoView>, Signal<bool>) {
    let picked = pick_for(move || variant.get());
    let asks = prediction.is_some();
    let revealed = revealed(state);
    let database = Memo::new(move |_| variant.with(|v| database_of(v)));
    let view = prediction.map(|prediction| {
        move || {
            view! {
                <Predict prediction=prediction.on(database.get()) subject=variant_label picked=picked
                    revealed=revealed locked=active hint="Pick what you expect, then run it." />
            }
        }
    });
    (view, Signal::derive(move || asks && picked.with(Option::is_none)))
}

/// The reader's pick for the question `question` names, cleared whenever it names another one.
pub fn pick_for<Q: PartialEq + Clone + 'static>(question: impl Fn() -> Q + 'static) -> RwSignal<Option<String>> {
    let picked = RwSignal::new(None::<String>);
    Effect::new(move |previous: Option<Q>| {
        let now = question();
        if previous.is_some_and(|p| p != now) {
            picked.set(None);
        }
        now
    });
    picked
}

/// The run's answer, once it revealed one: the right choice and why.
pub fn revealed(state: RwSignal<RunState>) -> Signal<Option<(String, String)>> {
    Signal::derive(move || state.with(|s| s.revealed().map(|(c, w)| (c.to_owned(), w.to_owned()))))
}

/// What a choice says once the run has `revealed` its answer: right and picked, right, or
/// picked and wrong; nothing before (the player's question says the same).
pub fn mark(is_right: bool, is_picked: bool, revealed: bool) -> &'static str {
    match (is_right, is_picked, revealed) {
        (true, true, _) => "✓ you expected this, and it happened",
        (true, false, _) => "✓ this happened",
        (false, true, true) => "✗ you expected this",
        _ => "",
    }
}

#[component]
pub fn Predict(
    prediction: Prediction,
    /// What the question is about, named in it: the variant (`SERIALIZABLE`), or in a room the
    /// scenario and the variant, so a reader never answers for the wrong one.
    subject: Signal<String>,
    /// What to do before the answer comes (on a scenario page: pick, then run; in a room: pick,
    /// the trainer runs it).
    hint: &'static str,
    /// The reader's choice, by id.
    picked: RwSignal<Option<String>>,
    /// The run's answer: the right choice's id and why.
    revealed: Signal<Option<(String, String)>>,
    /// While a run plays, the pick stays as it is.
    locked: Signal<bool>,
) -> impl IntoView {
    let right = Memo::new(move |_| revealed.with(|r| r.as_ref().map(|(choice, _)| choice.clone())));
    let choices = prediction
        .choices
        .into_iter()
        .map(|choice| {
            let id = choice.id.clone();
            let is_picked = Memo::new({
                let id = id.clone();
                move |_| picked.with(|p| p.as_deref() == Some(id.as_str()))
            });
            let is_right = Memo::new({
                let id = id.clone();
                move |_| right.with(|r| r.as_deref() == Some(id.as_str()))
            });
            let mark = move || mark(is_right.get(), is_picked.get(), right.with(Option::is_some));
            view! {
                <label
                    class="rl-choice"
                    data-choice=id.clone()
                    data-picked=move || is_picked.get().to_string()
                    data-right=move || right.with(Option::is_some).then(|| is_right.get().to_string())
                >
                    <input
                        type="radio"
                        name="rl-predict"
                        value=id.clone()
                        prop:checked=move || is_picked.get()
                        disabled=move || locked.get()
                        on:change={
                            let id = id.clone();
                            move |_| picked.set(Some(id.clone()))
                        }
                    />
                    <span class="rl-choice-label">{choice.label}</span>
                    <span class="rl-choice-mark">{mark}</span>
                </label>
            }
        })
        .collect_view();
    view! {
        <fieldset class="rl-predict">
            <legend>
                "Predict, then run: "
                <span class="rl-predict-subject">{move || subject.get()}</span>
                " — " {prediction.question}
            </legend>
            {choices}
            {move || revealed.get().map(|(_, why)| view! { <p class="rl-reveal-why">{why}</p> })}
            {move || (picked.with(Option::is_none) && revealed.with(Option::is_none) && !locked.get()).then(|| view! {
                <p class="rl-predict-hint">{hint}</p>
            })}
        </fieldset>
    }
}
