//! The browser app: files from `dist/` (written by `trunk build`), and `index.html` for the app's
//! own pages (`/lab/…`, `/runs/…`, `/embed/…`) so a reload or a shared link works; any other
//! path is a 404. Trunk's
//! post-build hook leaves a `.gz` beside each wasm, JS and CSS file; browsers that accept gzip
//! get those.

use axum::Router;
use axum::handler::HandlerWithoutStateExt;
use axum::http::{StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use shared::pages::Page;
use std::path::{Path, PathBuf};
use tower_http::services::ServeDir;

/// Serves `dist`, or, when the app has not been built, a page that says how to build it; the
/// embed app at `/embed/…`; and `/embed.js`, the one-line loader for host pages.
pub fn service(dist: &Path) -> Router {
    let built = dist.to_path_buf();
    let index = dist.join("index.html");
    let app = if index.is_file() {
        let built = dist.to_path_buf();
        let page = move |uri: Uri| {
            let built = built.clone();
            async move { super::pages::app_page_under(&built, status_at(uri.path())).await }
        };
        Router::new().fallback_service(ServeDir::new(dist).precompressed_gzip().fallback(page.into_service()))
    } else {
        tracing::warn!(dist = %dist.display(), "no built app found; serving the API only");
        Router::new().fallback(get(|| async { Html(NOT_BUILT) }))
    };
    app.route("/embed.js", get(embed_loader)).route(
        "/embed/{*rest}",
        get(move |uri: Uri| {
            let built = built.clone();
            async move { embed_page_in(&built, uri, false).await }
        }),
    )
}

/// The status the app's page goes under for a path no file of the build answers: 200 for the
/// app's own pages ([`Page::at`], the list the app draws from), 404 for any other path (the app
/// says there is no such page, and a link checker, a crawler and the browser's history learn it
/// is dead).
fn status_at(path: &str) -> StatusCode {
    match Page::at(path) {
        Some(_) => StatusCode::OK,
        None => StatusCode::NOT_FOUND,
    }
}

/// The player app's folder in a build, and the path its page names its files under (Trunk's
/// `--public-url` for it in scripts/trunk-post-build.sh).
pub const PLAYER_APP: (&str, &str) = ("player-app", "/player-app/");

/// The pages an iframe at `/embed/…` may be given, each built by a release build
/// (docs/embedding.md, "The embed bundle" and "The player bundle").
struct EmbedPages {
    /// The embed app: only the live embeds, a third lighter than the full app.
    embed: PathBuf,
    /// The player app: only a recording's page.
    player: PathBuf,
    /// The full app, which draws both the same.
    full: PathBuf,
}

/// The page of the iframe at `uri` (under `/embed/`), from the build in `dist`: see
/// [`embed_page`]; with `full`, the full app's whatever the address (a stored run of a reader's
/// spec, whose matrix the embed app leaves out).
pub async fn embed_page_in(dist: &Path, uri: Uri, full: bool) -> Response {
    let pages = EmbedPages {
        embed: dist.join("embed-app/index.html"),
        player: dist.join(PLAYER_APP.0).join("index.html"),
        full: dist.join("index.html"),
    };
    embed_page(pages, uri, full).await
}

/// An iframe's page: the player app for a recording (`/embed/recording`), the embed app for the
/// rest, or the full app when a build made neither (a `trunk serve` dev build), and for what the
/// embed app leaves out to stay small: the question of a live embed with `predict=1`, a
/// reader's spec (`/embed/s/…`), whose every-permutation matrix plays in the embed too, a
/// lesson taken alone (`/embed/lessons/…`: its parser, questions and scoring), and whatever the
/// caller says needs it (`full`).
async fn embed_page(pages: EmbedPages, uri: Uri, full: bool) -> Response {
    let predicts = uri.query().is_some_and(|query| {
        query
            .split('&')
            .any(|pair| pair == "predict=1" || pair == "predict=true")
    });
    let whole = matches!(Page::at(uri.path()), Some(Page::EmbedSpec(_) | Page::EmbedLesson(_)));
    let candidates = match uri.path() == super::headers::RECORDING_PLAYER {
        true => vec![pages.player, pages.full],
        false if full || predicts || whole => vec![pages.full],
        false => vec![pages.embed, pages.full],
    };
    // An address under /embed/ that is no embed still gets the app, which says so, under a 404.
    let status = status_at(uri.path());
    for page in candidates {
        if let Ok(html) = tokio::fs::read_to_string(page).await {
            return (status, [(header::CACHE_CONTROL, "no-cache")], Html(html)).into_response();
        }
    }
    Html(NOT_BUILT).into_response()
}

/// `/embed.js`, the loader a host page includes once (`embed.js` beside this file says what it
/// does): `<racelab-scenario>` elements become iframes, every racelab iframe on the page takes
/// the height its embed reports, and an embed with `theme=host` is told the host's colours.
async fn embed_loader() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            // Host pages load it on every view: a short cache, revalidated.
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        EMBED_LOADER,
    )
}

/// The loader's text (also written beside an exported player: [`crate::export`]).
pub const EMBED_LOADER: &str = include_str!("embed.js");

pub(super) const NOT_BUILT: &str = "<!doctype html><meta charset=utf-8><title>racelab</title>\
<h1>racelab</h1><p>The server is running, but the browser app has not been built.</p>\
<p>Build it with <code>trunk build --release</code> (see README), or use the API: \
<a href=/api/labs>/api/labs</a>, <a href=/healthz>/healthz</a>, and the websocket at <code>/ws</code>.</p>";
