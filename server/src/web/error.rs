//! The one error type at the HTTP edge. Every `/api`, `/oembed`, picture and room failure is one
//! of these, answered with its status and one JSON shape, `{"error": "<a sentence>"}`, which the
//! app shows as it is. Each variant says its status; internal errors are logged in full and the
//! client gets a plain message. (The websocket has its own error frames; pages keep their HTML.)

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ApiError {
    /// 400: the request lacks what it needs (oEmbed without a `url`).
    #[error("{0}")]
    BadRequest(String),
    /// 400: a lesson that does not hold, every mistake at its line: the sentence names the
    /// first, and `mistakes` lists each (`{"line": 8, "message": "…"}`) for an editor to mark.
    #[error("{}", lesson_sentence(.0))]
    Lesson(Vec<shared::lesson::LessonError>),
    /// 403: not this client's to do (another site's page, a room without its trainer's token).
    #[error("{0}")]
    Forbidden(String),
    /// 404: no such run, scenario, room or page.
    #[error("{0}")]
    NotFound(String),
    /// 409: not now (a room's run still goes).
    #[error("{0}")]
    Conflict(String),
    /// 413: a request body past its route's limit (a spec of more than 96 KB).
    #[error("{0}")]
    TooLarge(String),
    /// 429: past a per-reader cap (rooms per trainer).
    #[error("{0}")]
    TooMany(String),
    /// 501: asked in a way racelab does not answer (oEmbed in XML).
    #[error("{0}")]
    NotImplemented(String),
    /// 503: a service it needs is not answering now (the run store, fonts for a PNG).
    #[error("{0}")]
    Unavailable(String),
    /// 500: something failed on our side; the log has the details, the client the sentence.
    #[error("{0}")]
    Internal(String),
    /// 500: the database failed; the log has the details.
    #[error("database error")]
    Database(#[from] sqlx::Error),
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) | ApiError::Lesson(_) => StatusCode::BAD_REQUEST,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::TooMany(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::NotImplemented(_) => StatusCode::NOT_IMPLEMENTED,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) | ApiError::Database(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match &self {
            ApiError::Database(error) => tracing::error!(%error, "database error while answering a request"),
            ApiError::Internal(message) => tracing::error!(%message, "internal error while answering a request"),
            _ => {}
        }
        let mut body = json!({ "error": self.to_string() });
        if let ApiError::Lesson(mistakes) = &self {
            let listed: Vec<serde_json::Value> = mistakes
                .iter()
                .map(|m| json!({ "line": m.line, "message": m.message }))
                .collect();
            body["mistakes"] = listed.into();
        }
        (self.status(), Json(body)).into_response()
    }
}

/// A lesson's mistakes in one sentence: the first, and how many more.
fn lesson_sentence(mistakes: &[shared::lesson::LessonError]) -> String {
    match mistakes {
        [] => "the lesson does not hold".to_owned(),
        [one] => format!("the lesson does not hold: {one}"),
        [first, rest @ ..] => format!("the lesson does not hold: {first} (and {} more)", rest.len()),
    }
}

/// A query string that does not read as its handler's (`maxwidth=wide` on oEmbed): a 400 in the
/// one JSON shape, not axum's plain text. Handlers take `Result<Query<T>, QueryRejection>` and
/// `?` it.
impl From<axum::extract::rejection::QueryRejection> for ApiError {
    fn from(rejection: axum::extract::rejection::QueryRejection) -> ApiError {
        ApiError::BadRequest(format!("the query string does not read: {}", rejection.body_text()))
    }
}

/// A text body that cannot be had: past its route's limit (413) or not UTF-8 (400), in the one
/// JSON shape.
impl From<axum::extract::rejection::StringRejection> for ApiError {
    fn from(rejection: axum::extract::rejection::StringRejection) -> ApiError {
        let said = rejection.body_text();
        match rejection.status() {
            StatusCode::PAYLOAD_TOO_LARGE => ApiError::TooLarge(said),
            _ => ApiError::BadRequest(said),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_failure_is_its_status_and_one_json_shape() {
        for (error, status) in [
            (ApiError::BadRequest("oEmbed needs a url parameter".into()), 400),
            (ApiError::Forbidden("not yours".into()), 403),
            (ApiError::NotFound("there is no room \"K7QX2M\"".into()), 404),
            (ApiError::Conflict("the room's run is still going".into()), 409),
            (ApiError::TooLarge("too long".into()), 413),
            (ApiError::TooMany("too many rooms".into()), 429),
            (ApiError::NotImplemented("JSON only".into()), 501),
            (ApiError::Unavailable("the run store is not answering".into()), 503),
            (ApiError::Internal("no QR code".into()), 500),
        ] {
            let said = error.to_string();
            let response = error.into_response();
            assert_eq!(response.status().as_u16(), status);
            let body = axum::body::to_bytes(response.into_body(), 4096).await.expect("a body");
            let body: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
            assert_eq!(body, json!({ "error": said }));
        }
    }
}
