//! The recording player: the player app's one page (`/embed/recording?src=…`), with no
//! framework. A recording is finished before it is opened; nothing streams and nothing is
//! asked of a server, so the page is a function of the recording and of where the reader is in
//! it ([`page`]), patched in place after each thing the reader does ([`crate::morph`]): a moment
//! travelled to, a chapter seen past, a pick. Leptos's reactive graph and view code cost the
//! player bundle more than everything it draws (docs/embedding.md, "The player bundle"). The full
//! app starts it too for `/embed/recording` (a dev build has no player app): one player.

pub mod page;

use crate::api::{fetch_text, inline_text, report_height_to_parent};
use crate::morph;
use crate::route::{EmbedOptions, Route};
use page::Run;
use std::cell::RefCell;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

thread_local! {
    /// The recording, once read, and where the reader is in it.
    static RUN: RefCell<Option<Run>> = const { RefCell::new(None) };
}

/// Draws the page the address names: a recording, or "Nothing here".
pub fn start() {
    let Some(main) = mount() else { return };
    report_height_to_parent();
    let Route::EmbedRecording { src, live, options } = Route::current() else {
        morph::patch(&main, &page::not_found(&crate::api::location().0));
        return;
    };
    morph::patch(&main, &page::loading());
    listen(&main);
    wasm_bindgen_futures::spawn_local(async move {
        match load(&src, live.as_deref(), &options).await {
            Ok(run) => {
                RUN.with_borrow_mut(|slot| *slot = Some(run));
                render();
            }
            Err(message) => morph::patch(&main, &page::failed(&message)),
        }
    });
}

/// `<div class="racelab rl-embed"><main class="rl-main">` in the body: the page's root.
fn mount() -> Option<web_sys::Element> {
    let document = web_sys::window()?.document()?;
    let root = document.create_element("div").ok()?;
    root.set_class_name("racelab rl-embed");
    let main = document.create_element("main").ok()?;
    main.set_class_name("rl-main");
    root.append_child(&main).ok()?;
    document.body()?.append_child(&root).ok()?;
    Some(main)
}

/// The recording at `src` (`#id`: inside this page, the one-file player), fetched and read; or
/// why it cannot be played.
async fn load(src: &str, live: Option<&str>, options: &EmbedOptions) -> Result<Run, String> {
    let text = match src.strip_prefix('#') {
        Some(id) => inline_text(id).ok_or_else(|| format!("this page holds no element {id}")),
        None => fetch_text(src).await,
    }
    .map_err(|why| format!("The recording at {src} could not be fetched: {why}."))?;
    Run::read(src, &text, live, &options.opening)
}

/// The page at the reader's moment, patched in; then the proof's arrows measured on it.
fn render() {
    let Some(main) = page_root() else { return };
    let Some(markup) = RUN.with_borrow(|run| run.as_ref().map(page::page)) else {
        return;
    };
    morph::patch(&main, &markup);
    draw_arrows(&main);
}

/// The page's `<main>`, where [`mount`] put it.
fn page_root() -> Option<web_sys::Element> {
    web_sys::window()?
        .document()?
        .query_selector(".racelab .rl-main")
        .ok()?
}

/// The proof's edges over the detailed timeline, measured where the cards were laid out.
fn draw_arrows(main: &web_sys::Element) {
    let Ok(Some(wrap)) = main.query_selector(".rl-timeline-wrap") else {
        return;
    };
    if let Ok(Some(old)) = wrap.query_selector(".rl-proof-arrows") {
        old.remove();
    }
    let edges = RUN.with_borrow(|run| {
        let run = run.as_ref()?;
        let proof = crate::components::proof::proof_of(&run.state)?;
        Some(crate::arrows::edges(proof, &run.state.events[..run.position()]))
    });
    let Some(edges) = edges.filter(|e| !e.is_empty()) else {
        return;
    };
    let _ = wrap.insert_adjacent_html("beforeend", &crate::arrows::over(&wrap, &edges));
}

/// What the reader does, caught once on the page (its markup is text, with no handlers of its
/// own): the scrubber's buttons and slider, a chapter's "show what happens", a pick, a big
/// table's "Show all"; and a resize, after which the arrows are measured again.
fn listen(main: &web_sys::Element) {
    let clicked = Closure::<dyn FnMut(web_sys::Event)>::new(|event: web_sys::Event| {
        crate::components::ledger_diff::show_all(event.target());
        let Some(button) = target(&event, "button") else { return };
        let class = button.class_name();
        act(|run| match class.as_str() {
            "rl-scrub-back" => run.go(shared::stepping::previous_statement(&run.state.events, run.position())),
            "rl-scrub-forward" => run.go(shared::stepping::next_statement(&run.state.events, run.position())),
            "rl-chapter-go" => {
                run.answered += 1;
                run.go(shared::stepping::next_statement(&run.state.events, run.position()));
            }
            _ => {}
        });
    });
    let moved = Closure::<dyn FnMut(web_sys::Event)>::new(|event: web_sys::Event| {
        let Some(input) = target(&event, "input").and_then(|i| i.dyn_into::<web_sys::HtmlInputElement>().ok()) else {
            return;
        };
        // The slider moves the run as it is dragged (`input`); a pick is made once (`change`,
        // as every browser fires it for a radio button). Each drawn once, not once per event.
        let value = input.value();
        match (input.class_name().as_str(), event.type_().as_str()) {
            ("rl-scrub", "input") => act(|run| run.go(value.parse().unwrap_or_else(|_| run.total()))),
            (_, "change") if input.name() == "rl-predict" => act(|run| run.picked = Some(value)),
            _ => {}
        }
    });
    let _ = main.add_event_listener_with_callback("click", clicked.as_ref().unchecked_ref());
    let _ = main.add_event_listener_with_callback("input", moved.as_ref().unchecked_ref());
    let _ = main.add_event_listener_with_callback("change", moved.as_ref().unchecked_ref());
    clicked.forget();
    moved.forget();
    let resized = Closure::<dyn FnMut()>::new(|| {
        if let Some(main) = page_root() {
            draw_arrows(&main);
        }
    });
    if let Some(window) = web_sys::window() {
        let _ = window.add_event_listener_with_callback("resize", resized.as_ref().unchecked_ref());
    }
    resized.forget();
}

/// The element of kind `tag` the event happened on (or inside).
fn target(event: &web_sys::Event, tag: &str) -> Option<web_sys::Element> {
    event
        .target()?
        .dyn_into::<web_sys::Element>()
        .ok()?
        .closest(tag)
        .ok()
        .flatten()
}

/// `change` made to the run, then the page drawn again.
fn act(change: impl FnOnce(&mut Run)) {
    let changed = RUN.with_borrow_mut(|run| run.as_mut().map(change).is_some());
    if changed {
        render();
    }
}
