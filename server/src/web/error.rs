//! The one error type at the HTTP edge. Each variant says what status it answers with; internal
//! errors are logged in full and the client gets a plain message.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ApiError {
    /// 404: no such run, scenario or page.
    #[error("{0}")]
    NotFound(String),
    /// 500: the database failed; the log has the details.
    #[error("database error")]
    Database(#[from] sqlx::Error),
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = match &self {
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Database(error) => {
                tracing::error!(%error, "database error while answering a request");
                StatusCode::INTERNAL_SERVER_ERROR
            }
        };
        (status, Json(json!({ "error": self.to_string() }))).into_response()
    }
}
