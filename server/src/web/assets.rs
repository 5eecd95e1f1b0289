//! The browser app: files from `dist/` (written by `trunk build`), and `index.html` for the app's
//! own routes (`/lab/…`, `/runs/…`, `/embed/…`) so a reload or a shared link works. Trunk's
//! post-build hook leaves a `.gz` beside each wasm, JS and CSS file; browsers that accept gzip
//! get those.

use axum::Router;
use axum::http::{Uri, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use std::path::{Path, PathBuf};
use tower_http::services::{ServeDir, ServeFile};

/// Serves `dist`, or, when the app has not been built, a page that says how to build it; the
/// embed app at `/embed/…`; and `/embed.js`, the one-line loader for host pages.
pub fn service(dist: &Path) -> Router {
    let embed_app = [dist.join("embed-app/index.html"), dist.join("index.html")];
    let index = dist.join("index.html");
    let app = if index.is_file() {
        // `fallback`, not `not_found_service`: an app route answers 200, not 404 with a page.
        Router::new().fallback_service(ServeDir::new(dist).precompressed_gzip().fallback(ServeFile::new(index)))
    } else {
        tracing::warn!(dist = %dist.display(), "no built app found; serving the API only");
        Router::new().fallback(get(|| async { Html(NOT_BUILT) }))
    };
    app.route("/embed.js", get(embed_loader)).route(
        "/embed/{*rest}",
        get(move |uri: Uri| embed_page(embed_app.clone(), uri)),
    )
}

/// An iframe's page: the embed app (`dist/embed-app/`, built with only the embed pages, a third
/// lighter than the full app: README, "The embed bundle"), or the full app, which draws embeds
/// the same: when a build made no embed app (a `trunk serve` dev build), and for the opt-in
/// features the embed app leaves out to stay small (`predict=1`).
async fn embed_page(candidates: [PathBuf; 2], uri: Uri) -> Response {
    let wants_full_app = uri.query().is_some_and(|query| {
        query
            .split('&')
            .any(|pair| pair == "predict=1" || pair == "predict=true")
    });
    let candidates = if wants_full_app {
        &candidates[1..]
    } else {
        &candidates[..]
    };
    for page in candidates {
        if let Ok(html) = tokio::fs::read_to_string(page).await {
            return ([(header::CACHE_CONTROL, "no-cache")], Html(html)).into_response();
        }
    }
    Html(NOT_BUILT).into_response()
}

/// `embed.js` defines `<racelab-scenario>`: an author writes
/// `<racelab-scenario scenario="isolation/write-skew" variant="serializable"></racelab-scenario>`
/// (plus `mode`, `theme`, `autoplay`, `view`) and one `<script src="https://racelab.example/embed.js">`
/// anywhere on the page; each element inserts its own iframe and resizes it whenever its embed
/// reports its height. The older one-tag form, `<script src=…/embed.js data-scenario=…>`, still
/// works: it becomes an element right after the script.
async fn embed_loader() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], EMBED_LOADER)
}

const EMBED_LOADER: &str = r#"(function () {
  var script = document.currentScript;
  var origin = new URL(script ? script.src : location.href).origin;
  var OPTIONS = ["variant", "mode", "theme", "autoplay", "view"];

  if (!window.customElements.get("racelab-scenario")) {
    class RacelabScenario extends HTMLElement {
      static get observedAttributes() { return ["scenario"].concat(OPTIONS); }
      connectedCallback() { this.render(); }
      attributeChangedCallback() { if (this.isConnected) this.render(); }
      render() {
        var scenario = this.getAttribute("scenario");
        if (!scenario) return;
        var query = new URLSearchParams();
        var element = this;
        OPTIONS.forEach(function (name) {
          if (!element.hasAttribute(name)) return;
          var value = element.getAttribute(name);
          // `autoplay` is a boolean attribute: present (even empty) means on.
          query.set(name, name === "autoplay" && (value === "" || value === "autoplay") ? "1" : value);
        });
        var src = origin + "/embed/" + scenario + "?" + query.toString();
        if (!this.frame) {
          this.frame = document.createElement("iframe");
          this.frame.loading = "lazy";
          this.frame.style.cssText = "display:block;width:100%;min-height:240px;border:0";
          this.style.display = "block";
          this.appendChild(this.frame);
        }
        if (this.frame.getAttribute("src") !== src) {
          this.frame.setAttribute("src", src);
          this.frame.title = "racelab: " + scenario;
        }
      }
    }
    window.customElements.define("racelab-scenario", RacelabScenario);
    // One listener for every element: each embed's height goes to its own iframe only.
    window.addEventListener("message", function (event) {
      var data = event.data;
      if (!data || data.type !== "racelab:height" || !(data.height > 0)) return;
      document.querySelectorAll("racelab-scenario").forEach(function (element) {
        if (element.frame && event.source === element.frame.contentWindow) {
          element.frame.style.height = Math.ceil(data.height) + "px";
        }
      });
    });
  }

  if (script && script.dataset.scenario) {
    var element = document.createElement("racelab-scenario");
    element.setAttribute("scenario", script.dataset.scenario);
    OPTIONS.forEach(function (name) {
      if (script.dataset[name]) element.setAttribute(name, script.dataset[name]);
    });
    script.parentNode.insertBefore(element, script.nextSibling);
  }
})();
"#;

pub(super) const NOT_BUILT: &str = "<!doctype html><meta charset=utf-8><title>racelab</title>\
<h1>racelab</h1><p>The server is running, but the browser app has not been built.</p>\
<p>Build it with <code>trunk build --release</code> (see README), or use the API: \
<a href=/api/labs>/api/labs</a>, <a href=/healthz>/healthz</a>, and the websocket at <code>/ws</code>.</p>";
