//! Keyboard shortcuts for stepping through a run: → or Space (or N) for the next step. On the
//! scenario page and the trainer's room page, where a presenter's clicker sends exactly these
//! keys. (No key cancels: Escape is what people press to dismiss things, and cancelling a room's
//! run by accident ends it for everyone.) Keys typed into a field are left alone, and so is Space on a
//! focused control, which presses it already.

use crate::api::RunSocket;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// Listens for the stepping keys for as long as the page lives, driving `socket`'s run.
pub fn on_step_keys(socket: RunSocket) {
    let handle = window_event_listener(leptos::ev::keydown, move |event| {
        let key = event.key();
        let focused = focused_tag(&event);
        let typing = matches!(focused.as_str(), "INPUT" | "TEXTAREA" | "SELECT");
        let pressing = key == " " && matches!(focused.as_str(), "BUTTON" | "SUMMARY" | "A");
        if event.alt_key() || event.ctrl_key() || event.meta_key() || typing || pressing {
            return;
        }
        let state = socket.state;
        match key.as_str() {
            "ArrowRight" | " " | "n" | "N" if state.with_untracked(|s| s.next_step.is_some()) => {
                event.prevent_default();
                socket.next();
            }
            _ => {}
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
