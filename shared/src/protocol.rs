//! The websocket protocol between the browser and the server.
//!
//! Every frame is a JSON object with a protocol version `v` and a `type`. The client starts a run,
//! advances it in step mode, or cancels it; the server answers with its place in the queue, the
//! run's events, errors and the end. An error frame never closes the socket.
//!
//! Rooms (team training): a socket sends `join` with a `room` to follow that room's runs (the
//! frames of its current run so far, then the rest live, plus `room` frames with how many
//! follow); the trainer's `start`, `next` and `cancel` carry the `room` and its `token`.

use crate::json::quote;
use crate::{Event, Outcome};
use serde::{Deserialize, Serialize};

/// The protocol version this build speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// How a run advances.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Play to the end at once.
    #[default]
    Auto,
    /// Pause before each step until the client sends `next`.
    Step,
}

/// Client → server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMsg {
    Start {
        /// `lab/scenario`, e.g. `isolation/write-skew`.
        scenario: String,
        variant: String,
        #[serde(default)]
        mode: Mode,
        /// The PostgreSQL version to play on (a major version, `"18"`); none: the server's
        /// first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        postgres: Option<String>,
    },
    /// Step mode: play exactly one more step.
    Next,
    /// Stop the run and clean its sandbox.
    Cancel,
    /// Follow the frame's `room`: its current run so far, then live (with the `token`, as its
    /// trainer). In a room that runs a lesson, a participant answers as `handle`, and `seat` (a
    /// secret its page keeps) takes the same handle, and its score, back after a reload.
    Join {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        handle: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seat: Option<String>,
    },
    /// The trainer's: the room's next run will be `scenario` at `variant`; participants predict
    /// its outcome (a new question clears the tally).
    Ask { scenario: String, variant: String },
    /// A follower's prediction for the room's question: one of its scenario's choices.
    Predict { choice: String },
    /// The trainer's, in a room that runs a lesson: round `number` (1-based) is next, at its
    /// own variant or at `variant` (the trainer changed it live). Going back repeats a round;
    /// going past one skips it.
    Round {
        number: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        variant: Option<String>,
    },
    /// The trainer's: whether participants see the whole leaderboard (or only their own line).
    Leaderboard { shown: bool },
}

/// A client frame: the message plus the protocol version it was written for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClientFrame {
    pub v: u32,
    #[serde(flatten)]
    pub msg: ClientMsg,
    /// The room a `join` follows, or that a trainer's `start`, `next` or `cancel` drives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<String>,
    /// The room's trainer token (`POST /api/rooms` answers it): only its holder drives the room.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

impl From<ClientMsg> for ClientFrame {
    /// A frame of this protocol version, for this socket's own run.
    fn from(msg: ClientMsg) -> Self {
        ClientFrame {
            v: PROTOCOL_VERSION,
            msg,
            room: None,
            token: None,
        }
    }
}

impl Mode {
    /// The mode's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Step => "step",
        }
    }
}

impl ClientFrame {
    /// The same frame, for `room` (and, from its trainer, with its `token`).
    pub fn in_room(self, room: &str, token: Option<&str>) -> Self {
        ClientFrame {
            room: Some(room.to_owned()),
            token: token.map(str::to_owned),
            ..self
        }
    }

    /// The frame as serde writes it, written by hand so the browser app carries no serde
    /// (see [`crate::json`]).
    pub fn to_json(&self) -> String {
        // Members as (name, text) pairs, written by one loop: smaller in the browser's bundle
        // than a format string per message.
        let (kind, members): (&str, Vec<(&str, Member)>) = match &self.msg {
            ClientMsg::Start {
                scenario,
                variant,
                mode,
                ..
            } => (
                "start",
                vec![
                    ("scenario", Member::Text(scenario)),
                    ("variant", Member::Text(variant)),
                    ("mode", Member::Text(mode.name())),
                ],
            ),
            ClientMsg::Next => ("next", vec![]),
            ClientMsg::Cancel => ("cancel", vec![]),
            ClientMsg::Join { handle, seat } => (
                "join",
                [("handle", handle), ("seat", seat)]
                    .into_iter()
                    .filter_map(|(name, value)| Some((name, Member::Text(value.as_deref()?))))
                    .collect(),
            ),
            ClientMsg::Ask { scenario, variant } => (
                "ask",
                vec![("scenario", Member::Text(scenario)), ("variant", Member::Text(variant))],
            ),
            ClientMsg::Predict { choice } => ("predict", vec![("choice", Member::Text(choice))]),
            ClientMsg::Round { number, variant } => (
                "round",
                std::iter::once(("number", Member::Raw(number.to_string())))
                    .chain(variant.as_deref().map(|v| ("variant", Member::Text(v))))
                    .collect(),
            ),
            ClientMsg::Leaderboard { shown } => ("leaderboard", vec![("shown", Member::Raw(shown.to_string()))]),
        };
        let mut json = format!(r#"{{"v":{},"type":"{kind}""#, self.v);
        // Members written only when present: a start's version, a room and its token.
        let postgres = match &self.msg {
            ClientMsg::Start { postgres, .. } => postgres,
            _ => &None,
        };
        let room = [("postgres", postgres), ("room", &self.room), ("token", &self.token)];
        let room = room
            .iter()
            .filter_map(|(name, value)| Some((*name, Member::Text(value.as_deref()?))));
        for (name, value) in members.into_iter().chain(room) {
            json.push_str(",\"");
            json.push_str(name);
            json.push_str("\":");
            match value {
                Member::Text(text) => json.push_str(&quote(text)),
                Member::Raw(raw) => json.push_str(&raw),
            }
        }
        json.push('}');
        json
    }
}

/// A member's value in a hand-written frame: text (quoted) or a number or boolean (as written).
enum Member<'a> {
    Text(&'a str),
    Raw(String),
}

/// Why the server refused a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Not JSON, or not a message this protocol knows.
    BadFrame,
    /// A protocol version this server does not speak.
    BadVersion,
    UnknownScenario,
    /// A variant the scenario does not have, or a PostgreSQL version no server plays.
    UnknownVariant,
    /// A run is already going on this socket (or in the room the frame drives).
    Busy,
    /// `next` or `cancel` with no run going.
    NoRun,
    /// `next` on a run started in auto mode.
    NotStepMode,
    /// Step mode for a scenario that cannot be stepped (the load test, the deadlock).
    NotSteppable,
    /// A service the scenario needs (Redis, the broker) is down: the run was refused before
    /// it queued.
    ServiceDown,
    /// The server is stopping: no new run starts.
    ShuttingDown,
    /// The line of waiting runs is full: try again in the seconds the message says.
    QueueFull,
    /// This reader's address has as many runs going, or has started as many this minute, as one
    /// reader may.
    TooMany,
    /// The reader left too many messages unread: its run was cancelled and cleaned.
    TooSlow,
    /// `join` or a trainer's command named a room that does not exist (or has expired).
    UnknownRoom,
    /// A command for a room without its trainer token, or with another: only the trainer drives
    /// a room.
    BadToken,
    /// The room has as many participants as one room may.
    RoomFull,
    /// This socket follows a room, so it starts nothing of its own.
    InRoom,
    /// Another participant in the room answers under this handle: pick another.
    HandleTaken,
}

/// Server → client.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMsg {
    /// The run waits for a free slot; `position` 1 means next in line.
    Queued {
        position: usize,
    },
    /// The run left the queue and has its id; its events follow (the first is `run_started`).
    Started {
        run_id: String,
    },
    Event {
        event: Event,
    },
    Error {
        code: ErrorCode,
        message: String,
    },
    /// The run ended; its events are stored under `run_id` for replay.
    Done {
        run_id: String,
        outcome: Outcome,
    },
    /// The room this socket follows: sent when it joins and whenever the number of participants
    /// (followers without the trainer token) or the question (`asked`: scenario and variant of the
    /// next run) changes.
    Room {
        room: String,
        participants: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        asked: Option<(String, String)>,
    },
    /// How many predicted each choice (counts, never names): live to the trainer, and to everyone
    /// once the run revealed the answer (`revealed`).
    Tally {
        counts: Vec<(String, usize)>,
        revealed: bool,
    },
    /// The lesson a room runs: its round, the round's question (after the run, its answer and
    /// explanation) and the leaderboard; sent when the page joins and whenever it changes.
    Lesson(crate::lesson::live::Live),
}

/// A finished run as `GET /api/runs/{id}` returns it: enough to replay it exactly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredRun {
    pub id: String,
    pub scenario: String,
    pub variant: String,
    pub outcome: Outcome,
    pub events: Vec<Event>,
}

impl StoredRun {
    /// The server its header names (`PostgreSQL 18.6 on …`), where it played on one.
    pub fn server(&self) -> Option<&str> {
        self.events.iter().find_map(|e| match &e.kind {
            crate::EventKind::RunStarted { server, .. } => Some(server.as_str()),
            _ => None,
        })
    }
}

/// A server frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerFrame {
    pub v: u32,
    #[serde(flatten)]
    pub msg: ServerMsg,
}

impl From<ServerMsg> for ServerFrame {
    fn from(msg: ServerMsg) -> Self {
        ServerFrame {
            v: PROTOCOL_VERSION,
            msg,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_frame_parses_with_default_mode() {
        let frame: ClientFrame = serde_json::from_str(
            r#"{"v":1,"type":"start","scenario":"isolation/write-skew","variant":"serializable"}"#,
        )
        .expect("parse");
        assert_eq!(
            frame.msg,
            ClientMsg::Start {
                scenario: "isolation/write-skew".into(),
                variant: "serializable".into(),
                mode: Mode::Auto,
                postgres: None,
            }
        );
    }

    #[test]
    fn room_and_token_sit_beside_the_message() {
        let frame: ClientFrame =
            serde_json::from_str(r#"{"v":1,"type":"next","room":"K7QX2M","token":"t0k"}"#).expect("parse");
        assert_eq!(frame, ClientFrame::from(ClientMsg::Next).in_room("K7QX2M", Some("t0k")));
    }

    #[test]
    fn unknown_type_is_rejected() {
        assert!(serde_json::from_str::<ClientFrame>(r#"{"v":1,"type":"explode"}"#).is_err());
    }

    #[test]
    fn client_frames_are_written_as_serde_writes_them() {
        let frames = [
            ClientMsg::Start {
                scenario: "isolation/write-skew".into(),
                variant: "a \"quoted\"\\ name\n".into(),
                mode: Mode::Step,
                postgres: None,
            },
            ClientMsg::Start {
                scenario: "locks/lease".into(),
                variant: "fenced".into(),
                mode: Mode::Auto,
                postgres: Some("18".into()),
            },
            ClientMsg::Next,
            ClientMsg::Cancel,
            ClientMsg::Join {
                handle: None,
                seat: None,
            },
            ClientMsg::Join {
                handle: Some("ana \"k\"".into()),
                seat: Some("5eat".into()),
            },
            ClientMsg::Round {
                number: 3,
                variant: None,
            },
            ClientMsg::Round {
                number: 12,
                variant: Some("serializable".into()),
            },
            ClientMsg::Leaderboard { shown: false },
            ClientMsg::Ask {
                scenario: "isolation/write-skew".into(),
                variant: "serializable".into(),
            },
            ClientMsg::Predict {
                choice: "bob-40001".into(),
            },
        ];
        for msg in frames {
            let solo = ClientFrame::from(msg);
            let follower = solo.clone().in_room("K7QX2M", None);
            let trainer = solo.clone().in_room("K7QX2M", Some("a \"secret\""));
            for frame in [solo, follower, trainer] {
                let ours: serde_json::Value = serde_json::from_str(&frame.to_json()).expect("JSON");
                assert_eq!(ours, serde_json::to_value(&frame).expect("serde writes it"));
                let back: ClientFrame = serde_json::from_str(&frame.to_json()).expect("serde reads ours");
                assert_eq!(back, frame);
            }
        }
    }

    #[test]
    fn server_frames_carry_version_and_type() {
        let json = serde_json::to_value(ServerFrame::from(ServerMsg::Queued { position: 3 })).expect("serialise");
        assert_eq!(json, serde_json::json!({"v": 1, "type": "queued", "position": 3}));
    }
}
