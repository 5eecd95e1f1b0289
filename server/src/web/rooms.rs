//! Rooms over HTTP: `POST /api/rooms` opens one, `GET /api/rooms` says where rooms reach,
//! `GET /api/rooms/{id}` whether one is open, `DELETE /api/rooms/{id}` closes one,
//! `GET /api/rooms/{id}/qr.svg` draws its join link, and `PUT /api/rooms/{id}/rounds/{n}/recording`
//! sends a lesson's recording round the file its trainer's page read. The rooms themselves (holder, mirrors, feed,
//! question) are `crate::rooms`; this is only their HTTP edge.

use super::AppState;
use super::error::ApiError;
use crate::clients;
use crate::rooms::{Rooms, room};
use axum::extract::rejection::StringRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{Extensions, HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use serde_json::json;
use shared::{ErrorCode, ServerMsg};
use std::sync::Arc;

pub fn router(rooms: Arc<Rooms>) -> Router<AppState> {
    let (for_qr, for_close, for_status) = (rooms.clone(), rooms.clone(), rooms.clone());
    let for_recording = rooms.clone();
    Router::new()
        .route(
            "/api/rooms",
            post(move |headers, extensions, state, body| open_room(headers, extensions, state, rooms.clone(), body))
                .get(reach),
        )
        .route(
            "/api/rooms/{id}",
            delete(move |headers, path| close_room(headers, path, for_close.clone()))
                .get(move |path| room_status(path, for_status.clone())),
        )
        .route(
            "/api/rooms/{id}/qr.svg",
            get(move |headers, path| join_code(headers, path, for_qr.clone())),
        )
        .route(
            "/api/rooms/{id}/rounds/{number}/recording",
            put(move |headers, path, body| send_recording(headers, path, for_recording.clone(), body))
                .layer(DefaultBodyLimit::max(RECORDING_BODY_LIMIT)),
        )
}

/// `GET /api/rooms`: whether a room opened now reaches every replica (through Redis) or lives in
/// this process only, and why; the trainer's page says so.
async fn reach(State(state): State<AppState>) -> Json<shared::catalog::RoomsReach> {
    let redis = crate::health::redis(&state.engine.services().redis_url).await;
    let redis = crate::health::explained(state.engine.services(), shared::Service::Redis, redis);
    Json(crate::health::rooms_reach(&redis))
}

/// `GET /api/rooms/{id}`: `{"id"}` while the room is open (here or on another replica), 404
/// once it closed. A trainer's page lists the rooms it opened that are still open; asking makes
/// no mirror of a room held elsewhere (see [`Rooms::is_open`]).
async fn room_status(Path(id): Path<String>, rooms: Arc<Rooms>) -> Result<Json<serde_json::Value>, ApiError> {
    let id = id.to_ascii_uppercase();
    if rooms.is_open(&id).await {
        Ok(Json(json!({ "id": id })))
    } else {
        Err(no_room(&id))
    }
}

/// The answer about a room that is not open (any more).
fn no_room(id: &str) -> ApiError {
    ApiError::NotFound(format!("there is no room {id:?}"))
}

/// `DELETE /api/rooms/{id}` with `Authorization: Bearer <trainer token>`: the trainer closes the
/// room (its run, if one goes, ends first). 204, or 404 for a room that is not open, 403 without
/// its token.
async fn close_room(headers: HeaderMap, Path(id): Path<String>, rooms: Arc<Rooms>) -> Result<StatusCode, ApiError> {
    let room = rooms.find(&id).await.ok_or_else(|| no_room(&id))?;
    trainer_only(&headers, &room, "closes it")?;
    // A run still going ends first (its `done` reaches the followers), then the room closes.
    let _ = room.order(room::Order::Cancel).await;
    room.close();
    Ok(StatusCode::NO_CONTENT)
}

/// Refused (403) unless the request carries `room`'s trainer token (`Authorization: Bearer
/// <token>`); `does` says what only the trainer does.
fn trainer_only(headers: &HeaderMap, room: &room::Room, does: &str) -> Result<(), ApiError> {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match room.is_trainer(token) {
        true => Ok(()),
        false => Err(ApiError::Forbidden(format!(
            "only the room's trainer {does} (Authorization: Bearer <token>)"
        ))),
    }
}

/// The most a recording sent to a room may weigh. A lesson's race is seconds of statements (a
/// write skew's recording is tens of KB); the bus between replicas carries it whole.
pub const RECORDING_BODY_LIMIT: usize = 4 << 20;

/// `PUT /api/rooms/{id}/rounds/{number}/recording`, with `Authorization: Bearer <trainer token>`
/// and a recording (`*.racelab.json`) as the body: round `number` of the room's lesson, a
/// recording at another site (which racelab does not fetch: the trainer's page reads it), opens
/// playing it. 204; 400 for a file that is no recording or a round that is none, 403 without the
/// token, 404 for no such room, 409 while the room's run goes, 413 past 4 MB.
async fn send_recording(
    headers: HeaderMap,
    Path((id, number)): Path<(String, usize)>,
    rooms: Arc<Rooms>,
    text: Result<String, StringRejection>,
) -> Result<StatusCode, ApiError> {
    let room = rooms.find(&id).await.ok_or_else(|| no_room(&id))?;
    trainer_only(&headers, &room, "sends its rounds")?;
    let recording = text?.into();
    match room.order(room::Order::Recording { number, recording }).await {
        None => Ok(StatusCode::NO_CONTENT),
        Some(ServerMsg::Error { code, message }) => Err(match code {
            ErrorCode::Busy => ApiError::Conflict(message),
            ErrorCode::UnknownRoom => ApiError::NotFound(message),
            ErrorCode::ServiceDown => ApiError::Unavailable(message),
            _ => ApiError::BadRequest(message),
        }),
        Some(other) => Err(ApiError::Internal(format!("the room answered {other:?}"))),
    }
}

/// The lesson a `POST /api/rooms` body asks for: none for an empty body; 400 for a body that
/// is not `{"lesson": "<id>"}`.
fn opening(body: &[u8]) -> Result<Option<String>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    serde_json::from_slice::<Opening>(body)
        .map(|opening| opening.lesson)
        .map_err(|e| ApiError::BadRequest(format!("a room opens with no body or {{\"lesson\": \"<id>\"}}: {e}")))
}

/// `GET /api/rooms/{id}/qr.svg`: the room's join link as a QR code, for the trainer's screen.
async fn join_code(headers: HeaderMap, Path(id): Path<String>, rooms: Arc<Rooms>) -> Result<Response, ApiError> {
    let (Some(room), Some((origin, _))) = (rooms.find(&id).await, super::oembed::origin(&headers)) else {
        return Err(no_room(&id));
    };
    let svg = qr_svg(&format!("{origin}/room/{}", room.id))
        .ok_or_else(|| ApiError::Internal("the link is too long for a QR code".into()))?;
    Ok(([(header::CONTENT_TYPE, "image/svg+xml; charset=utf-8")], svg).into_response())
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

/// What `POST /api/rooms` may ask for: a room that runs a saved lesson.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Opening {
    lesson: Option<String>,
}

/// `POST /api/rooms`: `201 {"id": "K7QX2M", "trainer_token": "…"}`, or 429 past the cap on rooms
/// per trainer address. With `{"lesson": "<id>"}`, the room runs that lesson round by round, and
/// the answer adds where its results will be read (`results`: a secret address, since results
/// name participants).
async fn open_room(
    headers: HeaderMap,
    extensions: Extensions,
    State(state): State<AppState>,
    rooms: Arc<Rooms>,
    body: axum::body::Bytes,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    // A page on another site may not open rooms in its visitors' names (and spend their quota).
    if !super::ws::origin_allowed(
        headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()),
        headers.get(header::HOST).and_then(|v| v.to_str().ok()),
        &state.config.allowed_origins,
    ) {
        return Err(ApiError::Forbidden(
            "this page's origin may not open racelab rooms".into(),
        ));
    }
    let session = match opening(&body)? {
        Some(lesson) => {
            let (_, read) = super::lessons::kept(&state, &lesson).await?;
            Some(crate::rooms::lesson::Session::new(lesson, read, crate::rooms::secret()))
        }
        None => None,
    };
    let trainer = clients::reader_address(&extensions, &headers, &state.config.trusted_proxies);
    let (room, token) = rooms
        .open(trainer, session)
        .await
        .map_err(|refused| ApiError::TooMany(refused.to_string()))?;
    let mut opened = json!({ "id": room.id, "trainer_token": token, "url": format!("/room/{}", room.id) });
    if let Some((results, lesson)) = room.results() {
        opened["lesson"] = json!(lesson);
        opened["results"] = json!(format!("/api/results/{results}"));
    }
    Ok((StatusCode::CREATED, Json(opened)))
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
}
