//! Rooms for team training: a trainer drives one run at a time and every participant's page
//! follows it live.
//!
//! `POST /api/rooms` opens a room and answers its short code and a secret trainer token. On the
//! websocket, `join` with the room follows it (its current run so far, then live, see [`feed`]);
//! the trainer's `start`, `next` and `cancel` carry the room and the token and reach the room's
//! own task ([`room::drive`]), which plays the run through the engine like any other. Without
//! the token a socket only watches: participants cannot start, step or cancel anything.
//!
//! Limits, each configurable (README, "Rooms"): participants per room, rooms per trainer
//! address, and how long a room may stay idle (no order, no join, no run) before it closes.
//! Rooms live in this process: participants must reach the replica that holds their room.

pub mod feed;
pub mod follow;
pub mod room;

use super::AppState;
use super::clients;
use crate::config::Config;
use crate::engine::Engine;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{Extensions, HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use rand::Rng;
use room::Room;
use serde_json::json;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Room codes: six characters a participant can read off a projector and type, without the ones
/// that look alike (0/O, 1/I/L).
const CODE_ALPHABET: &[u8] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";
const CODE_LENGTH: usize = 6;

/// What a room may hold and how long it lives.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub participants: usize,
    pub per_trainer: usize,
    pub idle: Duration,
}

impl Limits {
    pub fn from_config(config: &Config) -> Limits {
        Limits {
            participants: config.room_participants,
            per_trainer: config.rooms_per_trainer,
            idle: Duration::from_secs(config.room_idle_secs),
        }
    }
}

/// Every open room of this process.
pub struct Rooms {
    open: Arc<Mutex<HashMap<String, Arc<Room>>>>,
    pub limits: Limits,
    engine: Arc<Engine>,
}

/// Why a room could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(
        "this address has {0} rooms open already; close one (rooms close after they idle) or ask for a higher RACELAB_ROOMS_PER_TRAINER"
    )]
    TooMany(usize),
}

impl Rooms {
    pub fn new(engine: Arc<Engine>, limits: Limits) -> Arc<Rooms> {
        Arc::new(Rooms {
            open: Arc::default(),
            limits,
            engine,
        })
    }

    fn open_rooms(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Room>>> {
        self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The room with code `id`, if it is open. Codes are read case-insensitively.
    pub fn find(&self, id: &str) -> Option<Arc<Room>> {
        self.open_rooms().get(&id.to_ascii_uppercase()).cloned()
    }

    /// Opens a room for `trainer` and starts its task; returns the room (its code is `id`) and
    /// the trainer token.
    pub fn open(&self, trainer: Option<IpAddr>) -> Result<(Arc<Room>, String), OpenError> {
        let token = secret();
        let mut open = self.open_rooms();
        if let Some(trainer) = trainer {
            let theirs = open.values().filter(|room| room.trainer == Some(trainer)).count();
            if theirs >= self.limits.per_trainer {
                return Err(OpenError::TooMany(theirs));
            }
        }
        let id = loop {
            let id = code();
            if !open.contains_key(&id) {
                break id;
            }
        };
        let (room, orders) = Room::new(id.clone(), token.clone(), trainer);
        open.insert(id.clone(), room.clone());
        drop(open);
        let (registry, engine, idle) = (self.open.clone(), self.engine.clone(), self.limits.idle);
        let driven = room.clone();
        tokio::spawn(async move {
            room::drive(driven.clone(), orders, engine, idle).await;
            // Gone from the registry first, so nobody joins a room whose feed has ended.
            registry.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
            driven.feed.close();
        });
        Ok((room, token))
    }
}

/// A fresh room code.
fn code() -> String {
    let mut rng = rand::rng();
    (0..CODE_LENGTH)
        .map(|_| char::from(CODE_ALPHABET[rng.random_range(0..CODE_ALPHABET.len())]))
        .collect()
}

/// A trainer token: 128 random bits, in hex.
fn secret() -> String {
    let bits: u128 = rand::rng().random();
    format!("{bits:032x}")
}

pub fn router(rooms: Arc<Rooms>) -> Router<AppState> {
    let for_qr = rooms.clone();
    Router::new()
        .route(
            "/api/rooms",
            post(move |headers, extensions, state| open_room(headers, extensions, state, rooms.clone())),
        )
        .route(
            "/api/rooms/{id}/qr.svg",
            get(move |headers, path| join_code(headers, path, for_qr.clone())),
        )
}

/// `GET /api/rooms/{id}/qr.svg`: the room's join link as a QR code, for the trainer's screen.
async fn join_code(headers: HeaderMap, Path(id): Path<String>, rooms: Arc<Rooms>) -> Response {
    let (Some(room), Some((origin, _))) = (rooms.find(&id), super::oembed::origin(&headers)) else {
        return (StatusCode::NOT_FOUND, format!("there is no room {id:?}")).into_response();
    };
    match qr_svg(&format!("{origin}/room/{}", room.id)) {
        Some(svg) => ([(header::CONTENT_TYPE, "image/svg+xml; charset=utf-8")], svg).into_response(),
        None => (StatusCode::INTERNAL_SERVER_ERROR, "the link is too long for a QR code").into_response(),
    }
}

/// `link` as a QR code (SVG, dark on light, with its quiet zone).
fn qr_svg(link: &str) -> Option<String> {
    let code = qrcode::QrCode::new(link.as_bytes()).ok()?;
    Some(
        code.render::<qrcode::render::svg::Color>()
            .min_dimensions(240, 240)
            .dark_color(qrcode::render::svg::Color("#1f2328"))
            .light_color(qrcode::render::svg::Color("#ffffff"))
            .build(),
    )
}

/// `POST /api/rooms`: `201 {"id": "K7QX2M", "trainer_token": "…"}`, or 429 past the cap on rooms
/// per trainer address.
async fn open_room(
    headers: HeaderMap,
    extensions: Extensions,
    State(state): State<AppState>,
    rooms: Arc<Rooms>,
) -> Response {
    let peer = extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| *peer);
    let trainer = clients::address(peer, &headers, &state.config.trusted_proxies);
    match rooms.open(trainer) {
        Ok((room, token)) => (
            StatusCode::CREATED,
            Json(json!({ "id": room.id, "trainer_token": token, "url": format!("/room/{}", room.id) })),
        )
            .into_response(),
        Err(refused) => (
            StatusCode::TOO_MANY_REQUESTS,
            Json(json!({ "error": refused.to_string() })),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_join_link_is_a_qr_code() {
        let svg = qr_svg("http://racelab.example/room/K7QX2M").expect("a QR code");
        assert!(svg.contains("<svg") && svg.contains("#1f2328"), "{svg}");
        assert!(qr_svg(&"x".repeat(10_000)).is_none(), "too long for any QR code");
    }

    #[test]
    fn codes_are_six_unambiguous_characters_and_tokens_128_bits() {
        for _ in 0..1_000 {
            let code = code();
            assert_eq!(code.len(), CODE_LENGTH);
            assert!(code.bytes().all(|c| CODE_ALPHABET.contains(&c)), "{code}");
            assert!(!code.contains(['0', 'O', '1', 'I', 'L']), "{code}");
        }
        let (a, b) = (secret(), secret());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
