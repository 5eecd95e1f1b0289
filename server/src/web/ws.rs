//! `GET /ws`: the run protocol (see `shared::protocol`).
//!
//! One run at a time per socket. Every client frame is answered or acted on; a frame that cannot
//! be understood gets an `error` frame and the socket stays open. When the socket closes (the
//! reader closed the tab), the run handle is dropped, which cancels the run: its supervisor ends
//! the run's sessions and drops its sandbox.
//!
//! A socket may instead follow a room (`join`), and a trainer's frames may drive one (see
//! [`crate::rooms`]): then the run is the room's, and closing the socket only stops following.

use super::AppState;
use crate::clients::{self, Caps, Clients, Slot};
use crate::control::{Refusal, cancel_run, error, next_update, scenario_for, start_refusal, step_run};
use crate::engine::RunHandle;
use crate::engine::signal::raised;
use crate::rooms::Rooms;
use crate::rooms::follow::{Follower, Outgoing};
use crate::rooms::room::{Order, Room};
use axum::Router;
use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::{Extensions, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use shared::{ClientFrame, ClientMsg, ErrorCode, PROTOCOL_VERSION, ServerFrame, ServerMsg};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::watch;

/// At most this many of a run's updates are written at once (see `serve`).
const BATCH: usize = 64;
/// Client frames are small; anything bigger is not ours.
const MAX_FRAME: usize = 64 * 1024;
/// How much tungstenite reads from a socket at a time. Its default (128 KiB) is zeroed before
/// *every* read, also the many that find nothing yet: measured, that was a fifth of the
/// server's CPU in a crowd of 200 readers. A reader's frames are a few hundred bytes; a bigger
/// one (up to [`MAX_FRAME`]) is read in several pieces.
pub const READ_BUFFER: usize = 4 * 1024;

pub fn router(config: &crate::config::Config, rooms: Arc<Rooms>) -> Router<AppState> {
    let clients = Clients::new(Caps {
        runs: config.runs_per_client,
        starts_per_minute: config.starts_per_minute,
    });
    Router::new().route(
        "/ws",
        get(move |ws, headers, extensions, state| {
            upgrade(ws, headers, extensions, state, clients.clone(), rooms.clone())
        }),
    )
}

/// Who is reading, for the per-reader caps: `None` when the server was not told peers'
/// addresses (served without connect info, as in some tests), and then no caps apply.
struct Reader {
    address: Option<IpAddr>,
    clients: Arc<Clients>,
    rooms: Arc<Rooms>,
}

impl Reader {
    /// A new run's place in this reader's count (none when peers' addresses are unknown), or the
    /// `too_many` refusal: the same for a run of the socket's own and a room's run its trainer
    /// starts.
    fn admit(&self) -> Result<Option<Slot>, Refusal> {
        let Some(address) = self.address else { return Ok(None) };
        self.clients
            .admit(address, Instant::now())
            .map(Some)
            .map_err(|refused| Refusal {
                code: ErrorCode::TooMany,
                message: refused.message(),
            })
    }
}

/// The close code for a frame over the limit (RFC 6455: "message too big").
const TOO_BIG: u16 = 1009;
/// The close code for a server that is stopping (RFC 6455: "going away").
const GOING_AWAY: u16 = 1001;

/// The websockets a server has open, so that a stopping server lets each deliver its last frames
/// and close before the process exits. Part of the application's state (one per router).
#[derive(Debug)]
pub struct Sockets {
    /// How many are open.
    open: watch::Sender<usize>,
    /// Raised by [`Sockets::close_all`]: every socket whose run has ended closes.
    goodbye: watch::Sender<bool>,
}

impl Default for Sockets {
    fn default() -> Sockets {
        Sockets {
            open: watch::Sender::new(0),
            goodbye: watch::Sender::new(false),
        }
    }
}

impl Sockets {
    /// How many websockets are open: readers connected to this process.
    pub fn open(&self) -> usize {
        *self.open.borrow()
    }

    /// Closes every websocket (1001, "racelab is stopping"), each once its own run has sent its
    /// last frame and the room it follows has closed, and waits for them at most `within`;
    /// returns how many are still open. For a server that has drained its engine and closed its
    /// rooms and is about to exit: until then, sockets stay open and a start is refused with
    /// `shutting_down`.
    pub async fn close_all(&self, within: std::time::Duration) -> usize {
        self.goodbye.send_replace(true);
        let mut open = self.open.subscribe();
        let _ = tokio::time::timeout(within, open.wait_for(|n| *n == 0)).await;
        *open.borrow()
    }
}

/// One open socket, counted while it lives.
struct Open(Arc<Sockets>);

impl Open {
    fn new(sockets: Arc<Sockets>) -> Open {
        sockets.open.send_modify(|n| *n += 1);
        Open(sockets)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.send_modify(|n| *n -= 1);
    }
}

async fn upgrade(
    ws: WebSocketUpgrade,
    headers: HeaderMap,
    extensions: Extensions,
    State(state): State<AppState>,
    clients: Arc<Clients>,
    rooms: Arc<Rooms>,
) -> Response {
    let reader = Reader {
        address: clients::reader_address(&extensions, &headers, &state.config.trusted_proxies),
        clients,
        rooms,
    };
    let origin = headers.get("origin").and_then(|v| v.to_str().ok());
    let host = headers.get("host").and_then(|v| v.to_str().ok());
    if !origin_allowed(origin, host, &state.config.allowed_origins) {
        return super::error::ApiError::Forbidden(
            "this page's origin may not open racelab's websocket (RACELAB_ALLOWED_ORIGINS)".into(),
        )
        .into_response();
    }
    // Both limits: tungstenite reads a whole frame before it checks the message size.
    ws.max_message_size(MAX_FRAME)
        .max_frame_size(MAX_FRAME)
        .read_buffer_size(READ_BUFFER)
        .on_upgrade(move |socket| serve(socket, state, reader))
}

/// What one socket is doing: its own run, or following a room (never both).
#[derive(Default)]
struct Socket {
    run: Option<RunHandle>,
    /// The run's place in its reader's count, released when the run is.
    slot: Option<Slot>,
    following: Option<Follower>,
}

async fn serve(mut socket: WebSocket, state: AppState, reader: Reader) {
    let _open = Open::new(state.sockets.clone());
    let mut this = Socket::default();
    let mut goodbye = state.sockets.goodbye.subscribe();
    loop {
        let open = tokio::select! {
            incoming = socket.recv() => answer(&mut socket, incoming, &mut this, (&state, &reader)).await,
            update = next_update(this.run.as_mut()) => deliver(&mut socket, update, &mut this).await,
            // The server is about to exit: a socket whose run has ended (or that had none), and
            // whose room has closed, says so and closes, after its last frame.
            () = raised(&mut goodbye), if this.run.is_none() && this.following.is_none() => {
                let close = CloseFrame { code: GOING_AWAY, reason: "racelab is stopping".into() };
                let _ = socket.send(Message::Close(Some(close))).await;
                false
            }
            outgoing = next_in_room(&mut this.following) => match outgoing {
                Outgoing::Frame(frame) => socket.send(Message::Text(frame.as_ref().into())).await.is_ok(),
                Outgoing::Message(message) => send(&mut socket, *message).await,
                Outgoing::Ended(why) => {
                    this.following = None;
                    send(&mut socket, *why).await
                }
            },
        };
        if !open {
            break;
        }
    }
    // Dropping the handle cancels a run still going; the supervisor cleans its sandbox. A room's
    // run is the room's: this socket only stops following it.
    drop(this);
}

/// Answers what the reader sent (`incoming`): a frame acted on, or refused; returns whether the
/// socket stays open (not once the reader hung up, or sent a frame over the limit).
async fn answer(
    socket: &mut WebSocket,
    incoming: Option<Result<Message, axum::Error>>,
    this: &mut Socket,
    (state, reader): (&AppState, &Reader),
) -> bool {
    let reply = match incoming {
        Some(Err(e)) if too_big(&e) => {
            // The rest of the frame is never read: say why, then hang up.
            let reason = format!("frames are at most {} KiB", MAX_FRAME / 1024);
            let close = CloseFrame {
                code: TOO_BIG,
                reason: reason.into(),
            };
            let _ = socket.send(Message::Close(Some(close))).await;
            return false;
        }
        None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return false,
        Some(Ok(Message::Text(text))) => act(text.as_str(), this, state, reader).await,
        Some(Ok(Message::Binary(_))) => Some(error(ErrorCode::BadFrame, "frames are JSON text, not binary")),
        Some(Ok(_)) => None, // ping and pong are answered by axum
    };
    match reply {
        Some(reply) => send(socket, reply).await,
        None => true,
    }
}

/// Sends the run's `update` to the reader, with the updates already waiting behind it; returns
/// whether the socket stays open.
async fn deliver(socket: &mut WebSocket, update: Option<ServerMsg>, this: &mut Socket) -> bool {
    let Some(update) = update else {
        // The run's messages ended without `done`: this reader fell too far behind.
        if this.run.as_ref().is_some_and(RunHandle::fell_behind) {
            let told = error(
                ErrorCode::TooSlow,
                "this page fell too far behind the run's messages, so the run was cancelled and cleaned up; run it again",
            );
            let _ = send(socket, told).await;
            return false;
        }
        this.run = None;
        this.slot = None;
        return true;
    };
    let batch = with_those_waiting(update, this.run.as_mut());
    let finished = matches!(batch.last(), Some(ServerMsg::Done { .. }));
    if finished {
        // The reader's place frees before it hears `done`, so its next start fits.
        this.slot = None;
    }
    if !send_all(socket, batch).await {
        return false;
    }
    if finished {
        this.run = None;
    }
    true
}

/// `update` and the updates already waiting behind it on `run`, up to [`BATCH`] and never past
/// `done`. They go out in one write: a run's events come in bursts, and each write is a system
/// call here and a wake-up at the reader.
fn with_those_waiting(update: ServerMsg, run: Option<&mut RunHandle>) -> Vec<ServerMsg> {
    let mut batch = vec![update];
    if let Some(run) = run {
        while batch.len() < BATCH && !matches!(batch.last(), Some(ServerMsg::Done { .. })) {
            match run.updates.try_recv() {
                Ok(update) => batch.push(update),
                Err(_) => break,
            }
        }
    }
    batch
}

/// Acts on one client frame; returns the immediate reply, if any.
async fn act(text: &str, this: &mut Socket, state: &AppState, reader: &Reader) -> Option<ServerMsg> {
    let frame = match parse(text) {
        Ok(frame) => frame,
        Err((code, message)) => return Some(error(code, &message)),
    };
    if let Some(room) = &frame.room {
        return in_room(room, frame.token.as_deref(), frame.msg, this, reader).await;
    }
    if let Some(following) = &this.following {
        return Some(error(
            ErrorCode::InRoom,
            &format!(
                "this page follows room {}: only its trainer's frames (with the room and its token) drive it",
                following.room().id
            ),
        ));
    }
    match frame.msg {
        ClientMsg::Start {
            scenario,
            variant,
            mode,
            postgres,
        } => {
            if this.run.is_some() {
                return Some(error(
                    ErrorCode::Busy,
                    "a run is already going on this socket; cancel it or wait for done",
                ));
            }
            let def = match scenario_for(&scenario, &state.engine.store).await {
                Ok(def) => def,
                Err(refusal) => return Some(refusal.into()),
            };
            let place = match reader.admit() {
                Ok(place) => place,
                Err(refusal) => return Some(refusal.into()),
            };
            let postgres = match crate::control::postgres_of_start(postgres.as_deref()) {
                Ok(postgres) => postgres,
                Err(refusal) => return Some(refusal.into()),
            };
            match state.engine.start_on(def, &variant, mode, postgres).await {
                Ok(handle) => {
                    this.run = Some(handle);
                    this.slot = place;
                    None
                }
                Err(refused) => Some(start_refusal(&refused)),
            }
        }
        ClientMsg::Next => step_run(this.run.as_ref()),
        ClientMsg::Cancel => cancel_run(this.run.as_ref()),
        ClientMsg::Join { .. } => Some(error(ErrorCode::BadFrame, "join needs the \"room\" to follow")),
        ClientMsg::Ask { .. } | ClientMsg::Predict { .. } | ClientMsg::Round { .. } | ClientMsg::Leaderboard { .. } => {
            Some(error(
                ErrorCode::BadFrame,
                "ask, predict, round and leaderboard are for rooms: they need the \"room\"",
            ))
        }
    }
}

/// A frame naming a room: `join` follows it (as its trainer with the right token); `start`,
/// `next` and `cancel` drive it, with its token only.
async fn in_room(
    id: &str,
    token: Option<&str>,
    msg: ClientMsg,
    this: &mut Socket,
    reader: &Reader,
) -> Option<ServerMsg> {
    let Some(room) = reader.rooms.find(id).await else {
        return Some(error(
            ErrorCode::UnknownRoom,
            &format!("there is no room {id:?} (it may have closed after it idled)"),
        ));
    };
    let trainer = room.is_trainer(token);
    if token.is_some() && !trainer {
        return Some(error(ErrorCode::BadToken, "that is not this room's trainer token"));
    }
    let order = match msg {
        // Any page following the room predicts; its pick counts under its place in the room.
        ClientMsg::Predict { choice } => {
            let Some(follower) = this.following.as_ref().filter(|f| Arc::ptr_eq(f.room(), &room)) else {
                return Some(error(ErrorCode::BadFrame, "join the room before predicting"));
            };
            return room
                .predict(follower.id(), follower.handle(), &choice)
                .err()
                .map(ServerMsg::from);
        }
        ClientMsg::Join { handle, seat } => {
            if this.run.is_some() {
                return Some(error(
                    ErrorCode::Busy,
                    "a run is going on this socket; cancel it before following a room",
                ));
            }
            let handle = match seated(&room, handle, seat.as_deref()).await {
                Ok(handle) => handle,
                Err(refusal) => return Some(refusal),
            };
            // Following another room, or the same one again, gives the old place up first.
            this.following = None;
            return match Follower::join(room, trainer, reader.rooms.limits.participants, handle) {
                Ok(follower) => {
                    this.following = Some(follower);
                    None
                }
                Err(refusal) => Some(refusal.into()),
            };
        }
        _ if !trainer => {
            return Some(error(
                ErrorCode::BadToken,
                "only the room's trainer starts, steps or cancels its runs (their frames carry its token)",
            ));
        }
        // A room's run plays on the version its trainer picked, as a reader's does.
        ClientMsg::Start {
            scenario,
            variant,
            mode,
            postgres,
        } => {
            let postgres = match crate::control::postgres_of_start(postgres.as_deref()) {
                Ok(postgres) => postgres,
                Err(refusal) => return Some(refusal.into()),
            };
            // A room's runs count against its trainer's address like any reader's.
            let slot = match reader.admit() {
                Ok(slot) => slot,
                Err(refusal) => return Some(refusal.into()),
            };
            Order::Start {
                scenario,
                variant,
                mode,
                postgres,
                slot,
            }
        }
        ClientMsg::Ask { scenario, variant } => Order::Ask { scenario, variant },
        ClientMsg::Round { number, variant } => Order::Round { number, variant },
        ClientMsg::Leaderboard { shown } => Order::Leaderboard { shown },
        ClientMsg::Next => Order::Next,
        ClientMsg::Cancel => Order::Cancel,
    };
    room.order(order).await
}

/// The handle a joining page answers under, seated by the room (on whichever replica holds it):
/// none without one; refused when it is no handle, comes without a seat, or another page holds
/// it.
async fn seated(room: &Room, handle: Option<String>, seat: Option<&str>) -> Result<Option<String>, ServerMsg> {
    let Some(handle) = handle else { return Ok(None) };
    if let Some(why) = shared::lesson::live::handle_refusal(&handle) {
        return Err(error(ErrorCode::BadFrame, &why));
    }
    let handle = handle.trim().to_owned();
    let seat = seat.filter(|s| (16..=128).contains(&s.len())).ok_or_else(|| {
        error(
            ErrorCode::BadFrame,
            "a handle comes with its \"seat\": a secret of 16 to 128 characters the page keeps, so a reload takes the handle back",
        )
    })?;
    let seat = crate::rooms::room::token_hash(seat);
    match room
        .order(Order::Seat {
            handle: handle.clone(),
            seat,
        })
        .await
    {
        None => Ok(Some(handle)),
        Some(refusal) => Err(refusal),
    }
}

/// Parses a client frame, telling a wrong protocol version from a malformed frame.
fn parse(text: &str) -> Result<ClientFrame, (ErrorCode, String)> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| (ErrorCode::BadFrame, format!("not JSON: {e}")))?;
    match value.get("v").and_then(serde_json::Value::as_u64) {
        Some(v) if v == u64::from(PROTOCOL_VERSION) => {}
        Some(v) => {
            let message = format!("protocol version {v} is not supported; this server speaks {PROTOCOL_VERSION}");
            return Err((ErrorCode::BadVersion, message));
        }
        None => {
            return Err((
                ErrorCode::BadFrame,
                "every frame needs a protocol version \"v\"".to_owned(),
            ));
        }
    }
    serde_json::from_value(value).map_err(|e| (ErrorCode::BadFrame, format!("not a frame this protocol knows: {e}")))
}

/// Sends one frame; false when the socket is gone.
async fn send(socket: &mut WebSocket, msg: ServerMsg) -> bool {
    send_all(socket, vec![msg]).await
}

/// Sends `msgs` in order, written together: false once the socket is gone.
async fn send_all(socket: &mut WebSocket, msgs: Vec<ServerMsg>) -> bool {
    use futures_util::SinkExt;
    for msg in msgs {
        match serde_json::to_string(&ServerFrame::from(msg)) {
            Ok(json) => {
                if socket.feed(Message::Text(json.into())).await.is_err() {
                    return false;
                }
            }
            Err(e) => tracing::error!(error = %e, "could not serialise a server frame"),
        }
    }
    socket.flush().await.is_ok()
}

/// The next thing to send from the room this socket follows; never resolves when it follows none.
async fn next_in_room(following: &mut Option<Follower>) -> Outgoing {
    match following {
        Some(follower) => follower.next().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_of((code, _): (ErrorCode, String)) -> ErrorCode {
        code
    }

    #[test]
    fn malformed_frames_are_told_apart() {
        assert_eq!(code_of(parse("{oops").unwrap_err()), ErrorCode::BadFrame);
        assert_eq!(code_of(parse(r#"{"type":"next"}"#).unwrap_err()), ErrorCode::BadFrame);
        assert_eq!(
            code_of(parse(r#"{"v":9,"type":"next"}"#).unwrap_err()),
            ErrorCode::BadVersion
        );
        assert_eq!(
            code_of(parse(r#"{"v":1,"type":"fly"}"#).unwrap_err()),
            ErrorCode::BadFrame
        );
        assert!(parse(r#"{"v":1,"type":"next"}"#).is_ok());
    }
}

/// Whether a socket error is a frame over the size limit.
fn too_big(error: &axum::Error) -> bool {
    matches!(
        std::error::Error::source(error).and_then(|inner| inner.downcast_ref::<tungstenite::Error>()),
        Some(tungstenite::Error::Capacity(_))
    )
}

/// A browser page may open the socket if it is racelab's own (its origin names the host the
/// request came to) or an allowed one; a client that sends no Origin is not a page.
pub(super) fn origin_allowed(origin: Option<&str>, host: Option<&str>, allowed: &[String]) -> bool {
    let Some(origin) = origin else { return true };
    let authority = origin.split_once("://").map_or(origin, |(_, rest)| rest);
    host.is_some_and(|host| authority.eq_ignore_ascii_case(host))
        || allowed
            .iter()
            .any(|a| a == "*" || a.trim_end_matches('/').eq_ignore_ascii_case(origin))
}

#[cfg(test)]
mod origin_tests {
    use super::origin_allowed;

    #[test]
    fn racelabs_own_pages_and_allowed_sites_may_open_the_socket() {
        let blog = vec!["https://blog.example".to_owned()];
        assert!(
            origin_allowed(None, Some("racelab.example"), &[]),
            "a script sends no Origin"
        );
        assert!(origin_allowed(
            Some("https://racelab.example:8080"),
            Some("racelab.example:8080"),
            &[]
        ));
        assert!(!origin_allowed(
            Some("https://evil.example"),
            Some("racelab.example"),
            &blog
        ));
        assert!(origin_allowed(
            Some("https://blog.example"),
            Some("racelab.example"),
            &blog
        ));
        assert!(origin_allowed(
            Some("https://any.example"),
            Some("racelab.example"),
            &["*".to_owned()]
        ));
        assert!(!origin_allowed(Some("null"), Some("racelab.example"), &blog));
    }
}
