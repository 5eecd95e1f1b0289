//! The browser app: files from `dist/` (written by `trunk build`), and `index.html` for the app's
//! own routes (`/lab/…`, `/runs/…`, `/embed/…`) so a reload or a shared link works.

use axum::Router;
use axum::response::Html;
use axum::routing::get;
use std::path::Path;
use tower_http::services::{ServeDir, ServeFile};

/// Serves `dist`, or, when the app has not been built, a page that says how to build it.
pub fn service(dist: &Path) -> Router {
    let index = dist.join("index.html");
    if index.is_file() {
        Router::new().fallback_service(ServeDir::new(dist).not_found_service(ServeFile::new(index)))
    } else {
        tracing::warn!(dist = %dist.display(), "no built app found; serving the API only");
        Router::new().fallback(get(|| async { Html(NOT_BUILT) }))
    }
}

const NOT_BUILT: &str = "<!doctype html><meta charset=utf-8><title>racelab</title>\
<h1>racelab</h1><p>The server is running, but the browser app has not been built.</p>\
<p>Build it with <code>trunk build --release</code> (see README), or use the API: \
<a href=/api/labs>/api/labs</a>, <a href=/healthz>/healthz</a>, and the websocket at <code>/ws</code>.</p>";
