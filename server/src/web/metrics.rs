//! `GET /metrics`: Prometheus's text format (0.0.4). The engine's counters and gauges
//! ([`crate::engine::metrics`]), then this process's readers (open websockets) and rooms.

use super::AppState;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use std::sync::Arc;

pub async fn handler(State(state): State<AppState>, rooms: Arc<crate::rooms::Rooms>) -> impl IntoResponse {
    let mut out = String::new();
    state.engine.metrics(&mut out);
    let gauge = crate::engine::metrics::gauge;
    gauge(
        &mut out,
        "racelab_readers_connected",
        "Readers connected: websockets open on this process.",
        &[("", state.sockets.open() as f64)],
    );
    gauge(
        &mut out,
        "racelab_rooms_open",
        "Training rooms this process holds open.",
        &[("", rooms.open_here() as f64)],
    );
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        out,
    )
}
