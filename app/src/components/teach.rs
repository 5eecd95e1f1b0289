//! "Teach this": opens a training room for the scenario and takes the trainer there, the token
//! in the page's fragment: kept across reloads, and out of every URL the browser sends (it
//! travels only inside the trainer's websocket frames).
//!
//! The rooms a trainer opened are remembered in this browser (`localStorage`, never sent
//! anywhere), so the trainer who closed the tab can find them again: the panel lists those still
//! open, each a link back to its trainer page. A refusal (too many rooms open) says so in a
//! message beside them, not in raw text.

use crate::api::{fetch_found, go_to, post_json};
use leptos::prelude::*;
use shared::json::{FromJson, Json, JsonError};

/// Where the trainer's rooms are remembered.
const STORED: &str = "racelab.rooms";

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

/// `GET /api/rooms/{id}`'s answer (a 404 once the room has closed).
struct StillOpen;

impl FromJson for StillOpen {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        json.get::<String>("id").map(|_| StillOpen)
    }
}

/// A room this browser opened: its code, its token, and what it was opened for.
#[derive(Clone, Debug, PartialEq)]
struct Remembered {
    id: String,
    token: String,
    scenario: String,
}

impl Remembered {
    fn link(&self) -> String {
        format!("/room/{}?scenario={}#trainer={}", self.id, self.scenario, self.token)
    }
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// The rooms remembered, newest first: one `id token scenario` per line.
fn remembered() -> Vec<Remembered> {
    let text = storage()
        .and_then(|s| s.get_item(STORED).ok().flatten())
        .unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut words = line.split(' ');
            Some(Remembered {
                id: words.next()?.to_owned(),
                token: words.next()?.to_owned(),
                scenario: words.next()?.to_owned(),
            })
        })
        .collect()
}

fn remember(rooms: &[Remembered]) {
    let text: Vec<String> = rooms
        .iter()
        .map(|r| format!("{} {} {}", r.id, r.token, r.scenario))
        .collect();
    if let Some(storage) = storage() {
        let _ = storage.set_item(STORED, &text.join("\n"));
    }
}

#[component]
pub fn TeachThis(
    scenario: String,
    variant: Signal<String>,
    /// The PostgreSQL version picked on the page (empty: the first): the room's to start with.
    version: Signal<String>,
) -> impl IntoView {
    let failed = RwSignal::new(None::<String>);
    let opening = RwSignal::new(false);
    // The rooms this browser opened that the server says are still open.
    let open_rooms = RwSignal::new(Vec::<Remembered>::new());
    leptos::task::spawn_local(async move { open_rooms.set(still_open().await) });
    let open = move |_| {
        let scenario = scenario.clone();
        let (variant, version) = (variant.get_untracked(), version.get_untracked());
        opening.set(true);
        failed.set(None);
        leptos::task::spawn_local(async move {
            match open_room(&scenario, &variant, &version).await {
                Ok(trainer_page) => go_to(&trainer_page),
                Err(message) => {
                    opening.set(false);
                    failed.set(Some(message));
                }
            }
        });
    };
    view! {
        <span class="rl-teach-group">
            <button class="rl-teach" on:click=open disabled=move || opening.get()
                title="Open a room: participants follow your run on their own screens">
                "Teach this"
            </button>
            {my_rooms(open_rooms)}
        </span>
        {move || failed.get().map(|message| view! {
            <p class="rl-notice rl-notice--refused" role="alert">
                <strong>"No room opened. "</strong>{message}
                {(!open_rooms.with(Vec::is_empty)).then_some(" Your open rooms are listed beside the button.")}
            </p>
        })}
    }
}

/// The rooms remembered here that are still open; the closed ones are forgotten.
async fn still_open() -> Vec<Remembered> {
    let mut closed = Vec::new();
    let mut open = Vec::new();
    for room in remembered() {
        // Forgotten only when the server says it has no such room: a server that did not
        // answer this time must not cost the trainer their token.
        match fetch_found::<StillOpen>(&format!("/api/rooms/{}", room.id)).await {
            Ok(None) => closed.push(room.id),
            Ok(Some(StillOpen)) => open.push(room),
            Err(_) => {}
        }
    }
    // Read again: a room opened meanwhile (in another tab) is kept.
    let kept: Vec<Remembered> = remembered().into_iter().filter(|r| !closed.contains(&r.id)).collect();
    remember(&kept);
    open
}

/// Opens a room for `scenario` and remembers it (newest first); its trainer page, or why not.
async fn open_room(scenario: &str, variant: &str, version: &str) -> Result<String, String> {
    let room = post_json::<Opened>("/api/rooms").await?;
    let mut rooms = remembered();
    rooms.insert(
        0,
        Remembered {
            id: room.id.clone(),
            token: room.trainer_token.clone(),
            scenario: scenario.to_owned(),
        },
    );
    remember(&rooms);
    Ok(trainer_page(&room, scenario, variant, version))
}

/// Where the trainer goes: the room with the page's scenario, variant and version (none named:
/// the first), the token in the fragment.
fn trainer_page(room: &Opened, scenario: &str, variant: &str, version: &str) -> String {
    let postgres = if version.is_empty() {
        String::new()
    } else {
        format!("&postgres={version}")
    };
    format!(
        "/room/{}?scenario={scenario}&variant={variant}{postgres}#trainer={}",
        room.id, room.trainer_token
    )
}

/// "Your open rooms", beside the button while there are any: each a link to its trainer page.
fn my_rooms(open_rooms: RwSignal<Vec<Remembered>>) -> impl IntoView {
    move || {
        (!open_rooms.with(Vec::is_empty)).then(|| {
            view! {
                <details class="rl-my-rooms">
                    <summary>{move || format!("Your open rooms ({})", open_rooms.with(Vec::len))}</summary>
                    <ul>
                        {move || open_rooms.get().into_iter().map(|room| view! {
                            <li><a class="rl-my-room" data-room=room.id.clone() href=room.link()>
                                {format!("Room {} · {}", room.id, room.scenario)}
                            </a></li>
                        }).collect_view()}
                    </ul>
                </details>
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trainer_page_names_a_version_only_when_one_was_picked() {
        let room = Opened {
            id: "K7Q2".to_owned(),
            trainer_token: "t0k3n".to_owned(),
        };
        assert_eq!(
            trainer_page(&room, "isolation/write-skew", "serializable", ""),
            "/room/K7Q2?scenario=isolation/write-skew&variant=serializable#trainer=t0k3n"
        );
        assert_eq!(
            trainer_page(&room, "isolation/write-skew", "serializable", "15"),
            "/room/K7Q2?scenario=isolation/write-skew&variant=serializable&postgres=15#trainer=t0k3n"
        );
    }
}
