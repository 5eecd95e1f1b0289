//! Keyboard shortcuts for "what comes next": → or Space (or N, or PageDown, which a presenter's
//! clicker sends) for the next step of a run, on the scenario page and the trainer's room page;
//! in a room that runs a lesson, the same keys also run the open round and open the next one.
//! (No key cancels: Escape is what people press to dismiss things, and cancelling a room's run by
//! accident ends it for everyone.) Keys typed into a field are left alone, and so is Space on a
//! focused control, which presses it already.

use crate::api::RunSocket;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// Listens for the stepping keys for as long as the page lives, driving `socket`'s run.
pub fn on_step_keys(socket: RunSocket) {
    on_next_keys(move || {
        let stepping = socket.state.with_untracked(|s| s.next_step.is_some());
        if stepping {
            socket.next();
        }
        stepping
    });
}

/// Listens for the "next" keys for as long as the page lives: each press calls `next`, which
/// does what comes next and says whether there was anything (the key's default, a scroll for
/// Space, is kept when there was not).
pub fn on_next_keys(next: impl Fn() -> bool + 'static) {
    let handle = window_event_listener(leptos::ev::keydown, move |event| {
        let key = event.key();
        let focused = focused_tag(&event);
        let typing = matches!(focused.as_str(), "INPUT" | "TEXTAREA" | "SELECT");
        let pressing = key == " " && matches!(focused.as_str(), "BUTTON" | "SUMMARY" | "A");
        if event.alt_key() || event.ctrl_key() || event.meta_key() || typing || pressing {
            return;
        }
        if matches!(key.as_str(), "ArrowRight" | " " | "n" | "N" | "PageDown") && next() {
            event.prevent_default();
        }
    });
    on_cleanup(move || handle.remove());
}

/// The tag of the element the key goes to (`BUTTON`, `INPUT`; `BODY` when nothing has focus).
fn focused_tag(event: &web_sys::KeyboardEvent) -> String {
    event
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .map(|e| e.tag_name())
        .unwrap_or_default()
}
