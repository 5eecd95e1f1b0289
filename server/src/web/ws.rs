//! `GET /ws`: the run protocol (see `shared::protocol`).
//!
//! One run at a time per socket. Every client frame is answered or acted on; a frame that cannot
//! be understood gets an `error` frame and the socket stays open. When the socket closes (the
//! reader closed the tab), the run handle is dropped, which cancels the run: its supervisor ends
//! the run's sessions and drops its sandbox.

use super::AppState;
use super::clients::{self, Caps, Clients, Slot};
use crate::engine::{RunHandle, StartError};
use crate::labs;
use axum::Router;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, State};
use axum::http::{Extensions, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use shared::{ClientFrame, ClientMsg, ErrorCode, Mode, PROTOCOL_VERSION, ServerFrame, ServerMsg};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

/// Client frames are small; anything bigger is not ours.
const MAX_FRAME: usize = 64 * 1024;

pub fn router(config: &crate::config::Config) -> Router<AppState> {
    let clients = Clients::new(Caps {
        runs: config.runs_per_client,
        starts_per_minute: config.starts_per_minute,
    });
    Router::new().route(
        "/ws",
        get(move |ws, headers, extensions, state| upgrade(ws, headers, extensions, state, clients.clone())),
    )
}

/// Who is reading, for the per-reader caps: `None` when the server was not told peers'
/// addresses (served without connect info, as in some tests), and then no caps apply.
struct Reader {
    address: Option<IpAddr>,
    clients: Arc<Clients>,
}

/// The close code for a frame over the limit (RFC 6455: "message too big").
const TOO_BIG: u16 = 1009;

async fn upgrade(
    ws: WebSocketUpgrade,
    headers: HeaderMap,
    extensions: Extensions,
    State(state): State<AppState>,
    clients: Arc<Clients>,
) -> Response {
    let peer = extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| *peer);
    let reader = Reader {
        address: clients::address(peer, &headers, &state.config.trusted_proxies),
        clients,
    };
    let origin = headers.get("origin").and_then(|v| v.to_str().ok());
    let host = headers.get("host").and_then(|v| v.to_str().ok());
    if !origin_allowed(origin, host, &state.config.allowed_origins) {
        return (
            StatusCode::FORBIDDEN,
            "this page's origin may not open racelab's websocket (RACELAB_ALLOWED_ORIGINS)",
        )
            .into_response();
    }
    // Both limits: tungstenite reads a whole frame before it checks the message size.
    ws.max_message_size(MAX_FRAME)
        .max_frame_size(MAX_FRAME)
        .on_upgrade(move |socket| serve(socket, state, reader))
}

async fn serve(mut socket: WebSocket, state: AppState, reader: Reader) {
    let mut run: Option<RunHandle> = None;
    // The run's place in its reader's count, released when the run is.
    let mut slot: Option<Slot> = None;
    loop {
        tokio::select! {
            incoming = socket.recv() => {
                let reply = match incoming {
                    Some(Err(e)) if too_big(&e) => {
                        // The rest of the frame is never read: say why, then hang up.
                        let reason = format!("frames are at most {} KiB", MAX_FRAME / 1024);
                        let close = CloseFrame { code: TOO_BIG, reason: reason.into() };
                        let _ = socket.send(Message::Close(Some(close))).await;
                        break;
                    }
                    None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break,
                    Some(Ok(Message::Text(text))) => act(text.as_str(), &mut run, &mut slot, &state, &reader).await,
                    Some(Ok(Message::Binary(_))) => Some(error(ErrorCode::BadFrame, "frames are JSON text, not binary")),
                    Some(Ok(_)) => None, // ping and pong are answered by axum
                };
                if let Some(reply) = reply
                    && !send(&mut socket, reply).await
                {
                    break;
                }
            }
            update = next_update(&mut run) => {
                let Some(update) = update else {
                    // The run's messages ended without `done`: this reader fell too far behind.
                    if run.as_ref().is_some_and(RunHandle::fell_behind) {
                        let told = error(ErrorCode::TooSlow, "this page fell too far behind the run's messages, so the run was cancelled and cleaned up; run it again");
                        let _ = send(&mut socket, told).await;
                        break;
                    }
                    run = None;
                    slot = None;
                    continue;
                };
                let finished = matches!(update, ServerMsg::Done { .. });
                if finished {
                    // The reader's place frees before it hears `done`, so its next start fits.
                    slot = None;
                }
                if !send(&mut socket, update).await {
                    break;
                }
                if finished {
                    run = None;
                }
            }
        }
    }
    // Dropping the handle cancels a run still going; the supervisor cleans its sandbox.
    drop(run);
    drop(slot);
}

/// Acts on one client frame; returns the immediate reply, if any.
async fn act(
    text: &str,
    run: &mut Option<RunHandle>,
    slot: &mut Option<Slot>,
    state: &AppState,
    reader: &Reader,
) -> Option<ServerMsg> {
    let frame = match parse(text) {
        Ok(frame) => frame,
        Err((code, message)) => return Some(error(code, &message)),
    };
    match frame.msg {
        ClientMsg::Start {
            scenario,
            variant,
            mode,
        } => {
            if run.is_some() {
                return Some(error(
                    ErrorCode::Busy,
                    "a run is already going on this socket; cancel it or wait for done",
                ));
            }
            let Some(def) = labs::find(&scenario) else {
                let known: Vec<&str> = labs::LABS
                    .iter()
                    .flat_map(|l| l.scenarios.iter().map(|s| s.id))
                    .collect();
                return Some(error(
                    ErrorCode::UnknownScenario,
                    &format!("unknown scenario {scenario:?}; known: {}", known.join(", ")),
                ));
            };
            let place = match reader.address {
                Some(address) => match reader.clients.admit(address, Instant::now()) {
                    Ok(place) => Some(place),
                    Err(refusal) => return Some(error(ErrorCode::TooMany, &refusal.message())),
                },
                None => None,
            };
            match state.engine.start(def, &variant, mode).await {
                Ok(handle) => {
                    *run = Some(handle);
                    *slot = place;
                    None
                }
                Err(refused) => Some(error(code_of_refusal(&refused), &refused.to_string())),
            }
        }
        ClientMsg::Next => match run {
            None => Some(error(ErrorCode::NoRun, "no run is going on this socket")),
            Some(handle) if handle.mode != Mode::Step => Some(error(
                ErrorCode::NotStepMode,
                "this run plays by itself; start it with mode \"step\" to step it",
            )),
            Some(handle) => {
                handle.next();
                None
            }
        },
        ClientMsg::Cancel => match run {
            None => Some(error(ErrorCode::NoRun, "no run is going on this socket")),
            Some(handle) => {
                handle.cancel();
                None
            }
        },
    }
}

/// The error code a refused start is answered with.
fn code_of_refusal(refused: &StartError) -> ErrorCode {
    match refused {
        StartError::UnknownVariant { .. } => ErrorCode::UnknownVariant,
        StartError::NotSteppable(_) => ErrorCode::NotSteppable,
        StartError::ServiceDown { .. } => ErrorCode::ServiceDown,
        StartError::ShuttingDown => ErrorCode::ShuttingDown,
        StartError::QueueFull { .. } => ErrorCode::QueueFull,
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

fn error(code: ErrorCode, message: &str) -> ServerMsg {
    ServerMsg::Error {
        code,
        message: message.to_owned(),
    }
}

/// Sends one frame; false when the socket is gone.
async fn send(socket: &mut WebSocket, msg: ServerMsg) -> bool {
    match serde_json::to_string(&ServerFrame::from(msg)) {
        Ok(json) => socket.send(Message::Text(json.into())).await.is_ok(),
        Err(e) => {
            tracing::error!(error = %e, "could not serialise a server frame");
            true
        }
    }
}

/// The next update of the run on this socket; never resolves when there is none.
async fn next_update(run: &mut Option<RunHandle>) -> Option<ServerMsg> {
    match run {
        Some(handle) => handle.updates.recv().await,
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
fn origin_allowed(origin: Option<&str>, host: Option<&str>, allowed: &[String]) -> bool {
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
