//! "Teach this": opens a training room for the scenario and takes the trainer there, the token
//! in the page's fragment: kept across reloads, and out of every URL the browser sends (it
//! travels only inside the trainer's websocket frames).

use crate::api::{go_to, post_json};
use leptos::prelude::*;
use shared::json::{FromJson, Json, JsonError};

/// `POST /api/rooms`'s answer.
struct Opened {
    id: String,
    trainer_token: String,
}

impl FromJson for Opened {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(Opened {
            id: json.get("id")?,
            trainer_token: json.get("trainer_token")?,
        })
    }
}

#[component]
pub fn TeachThis(scenario: String, variant: Signal<String>) -> impl IntoView {
    let failed = RwSignal::new(None::<String>);
    let opening = RwSignal::new(false);
    let open = move |_| {
        let scenario = scenario.clone();
        let variant = variant.get_untracked();
        opening.set(true);
        leptos::task::spawn_local(async move {
            match post_json::<Opened>("/api/rooms").await {
                Ok(room) => go_to(&format!(
                    "/room/{}?scenario={scenario}&variant={variant}#trainer={}",
                    room.id, room.trainer_token
                )),
                Err(message) => {
                    opening.set(false);
                    failed.set(Some(message));
                }
            }
        });
    };
    view! {
        <button class="rl-teach" on:click=open disabled=move || opening.get()
            title="Open a room: participants follow your run on their own screens">
            "Teach this"
        </button>
        {move || failed.get().map(|message| view! { <span class="rl-refused" role="alert">{message}</span> })}
    }
}
