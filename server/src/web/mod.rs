//! The HTTP server: one module and one `router()` per area, merged here.
//!
//! - [`ws`]: `GET /ws`, the websocket that starts, steps and cancels runs.
//! - [`api`]: `GET /api/labs` (the catalog with service status), `GET /api/runs/{id}`.
//! - [`health`]: `GET /healthz`.
//! - [`rooms`]: rooms over HTTP (`POST /api/rooms`, …); the rooms themselves are `crate::rooms`.
//! - [`pages`]: scenario and run pages with their link previews; `/runs/{id}.svg`, the picture
//!   of a run ([`picture`]), and `/runs/{id}.png`, the same as PNG ([`png`]).
//! - [`oembed`]: `GET /oembed`, so a pasted link becomes the embed.
//! - [`assets`]: the built browser app from `dist/`, with its client-side routes.
//! - [`error`]: the one error type at the HTTP edge.

pub mod api;
pub mod assets;
pub mod atlas;
pub mod error;
pub mod headers;
pub mod health;
pub mod lessons;
pub mod metrics;
pub mod oembed;
pub mod pages;
pub mod picture;
pub mod png;
pub mod rooms;
pub mod ws;

use crate::config::Config;
use crate::engine::Engine;
use axum::Router;
use std::path::Path;
use std::sync::Arc;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub engine: Arc<Engine>,
    pub config: Arc<Config>,
    /// The websockets open on this server, which a stopping server closes.
    pub sockets: Arc<ws::Sockets>,
    /// The anomaly atlas's last observation (`GET /api/atlas`).
    pub atlas: Arc<atlas::Kept>,
}

impl AppState {
    pub fn new(engine: Arc<Engine>, config: Arc<Config>) -> AppState {
        AppState {
            engine,
            config,
            sockets: Arc::default(),
            atlas: Arc::default(),
        }
    }
}

/// The whole server: API areas plus the app served from `dist`.
/// The listener racelab serves on: every accepted connection sends its frames at once
/// (`TCP_NODELAY`). A run streams many small frames; with Nagle's algorithm each waited for the
/// reader's delayed ACK, about 40 ms, which doubled the time from Run to done on loopback.
pub type Listener = axum::serve::TapIo<tokio::net::TcpListener, fn(&mut tokio::net::TcpStream)>;

/// Binds `address` for [`Listener`]; returns it with the address it got (for port 0).
pub async fn listen(address: std::net::SocketAddr) -> std::io::Result<(Listener, std::net::SocketAddr)> {
    use axum::serve::ListenerExt as _;
    let listener = tokio::net::TcpListener::bind(address).await?;
    let bound = listener.local_addr()?;
    let no_delay: fn(&mut tokio::net::TcpStream) = |stream| {
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY on a connection");
        }
    };
    Ok((listener.tap_io(no_delay), bound))
}

pub fn router(state: AppState, dist: &Path) -> Router {
    app(state, dist).0
}

/// [`router`], and its training rooms, which a stopping server closes (see `racelab serve`).
pub fn app(state: AppState, dist: &Path) -> (Router, Arc<crate::rooms::Rooms>) {
    let rooms = crate::rooms::Rooms::new(state.engine.clone(), crate::rooms::Limits::from_config(&state.config));
    // Find the fonts for pictures now, not in the first request for one.
    tokio::task::spawn_blocking(png::available);
    let router = Router::new()
        .merge(ws::router(&state.config, rooms.clone()))
        .merge(rooms::router(rooms.clone()))
        .merge(api::router())
        .merge(lessons::router())
        .merge(health::router())
        .merge(pages::router(dist.to_path_buf()))
        .route("/oembed", axum::routing::get(oembed::handler))
        .route("/api/atlas", axum::routing::get(atlas::handler))
        .route("/metrics", {
            let rooms = rooms.clone();
            axum::routing::get(move |state| metrics::handler(state, rooms.clone()))
        })
        .with_state(state)
        .fallback_service(assets::service(dist))
        .layer(axum::middleware::from_fn(headers::secure));
    (router, rooms)
}
