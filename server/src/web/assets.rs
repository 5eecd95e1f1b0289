//! The browser app: files from `dist/` (written by `trunk build`), and `index.html` for the app's
//! own routes (`/lab/…`, `/runs/…`, `/embed/…`) so a reload or a shared link works. Trunk's
//! post-build hook leaves a `.gz` beside each wasm, JS and CSS file; browsers that accept gzip
//! get those.

use axum::Router;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use std::path::Path;
use tower_http::services::{ServeDir, ServeFile};

/// Serves `dist`, or, when the app has not been built, a page that says how to build it; and
/// `/embed.js`, the one-line loader for host pages.
pub fn service(dist: &Path) -> Router {
    let index = dist.join("index.html");
    let app = if index.is_file() {
        // `fallback`, not `not_found_service`: an app route answers 200, not 404 with a page.
        Router::new().fallback_service(ServeDir::new(dist).precompressed_gzip().fallback(ServeFile::new(index)))
    } else {
        tracing::warn!(dist = %dist.display(), "no built app found; serving the API only");
        Router::new().fallback(get(|| async { Html(NOT_BUILT) }))
    };
    app.route("/embed.js", get(embed_loader))
}

/// `<script src="https://racelab.example/embed.js" data-scenario="isolation/write-skew"
/// data-variant="serializable"></script>` puts the embed in an iframe right after the script tag
/// and resizes it whenever the embed reports its height. Host pages need nothing else.
async fn embed_loader() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], EMBED_LOADER)
}

const EMBED_LOADER: &str = r#"(function () {
  var script = document.currentScript;
  if (!script || !script.dataset.scenario) return;
  var origin = new URL(script.src).origin;
  var query = new URLSearchParams();
  ["variant", "mode", "autoplay", "theme"].forEach(function (key) {
    if (script.dataset[key]) query.set(key, script.dataset[key]);
  });
  var frame = document.createElement("iframe");
  frame.src = origin + "/embed/" + script.dataset.scenario + "?" + query.toString();
  frame.title = "racelab: " + script.dataset.scenario;
  frame.loading = "lazy";
  frame.style.cssText = "display:block;width:100%;min-height:240px;border:0";
  script.parentNode.insertBefore(frame, script.nextSibling);
  window.addEventListener("message", function (event) {
    var data = event.data;
    if (event.source === frame.contentWindow && data && data.type === "racelab:height") {
      frame.style.height = Math.ceil(data.height) + "px";
    }
  });
})();
"#;

const NOT_BUILT: &str = "<!doctype html><meta charset=utf-8><title>racelab</title>\
<h1>racelab</h1><p>The server is running, but the browser app has not been built.</p>\
<p>Build it with <code>trunk build --release</code> (see README), or use the API: \
<a href=/api/labs>/api/labs</a>, <a href=/healthz>/healthz</a>, and the websocket at <code>/ws</code>.</p>";
