//! The app's scenario and run pages, with what a link preview reads in their `<head>`: the
//! title, the oEmbed discovery link (see [`super::oembed`]), and Open Graph tags whose image is
//! the picture of a run (see [`super::picture`]). The page itself is the built app's
//! `index.html`; the app draws the rest. `/runs/{id}.svg` is that picture, `/runs/{id}.png` the
//! same drawn as PNG (see [`super::png`]).

use super::AppState;
use super::error::ApiError;
use super::oembed::origin;
use super::picture;
use super::png;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use reqwest::Url;
use shared::markup::escape;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// What a link preview of one page shows.
#[derive(Debug, PartialEq)]
pub struct Preview {
    pub title: String,
    pub description: String,
    /// The page's own address (`og:url`, and what the oEmbed link asks about).
    pub url: String,
    /// The picture of a run, if there is one to show.
    pub image: Option<String>,
}

pub fn router(dist: PathBuf) -> Router<AppState> {
    let dist = Arc::new(dist);
    let for_runs = dist.clone();
    let for_specs = dist.clone();
    let for_embeds = dist.clone();
    Router::new()
        .route(
            "/lab/{lab}/{scenario}",
            get(move |state, headers, path, query| scenario_page(state, headers, path, query, dist.clone())),
        )
        .route(
            "/runs/{id}",
            get(move |state, headers, path| run_page_or_picture(state, headers, path, for_runs.clone())),
        )
        .route(
            "/s/{id}",
            get(move |state, path| spec_page(state, path, for_specs.clone())),
        )
        .route(
            "/embed/runs/{id}",
            get(move |state, path, uri| embedded_run(state, path, uri, for_embeds.clone())),
        )
}

/// A stored run in an iframe: the embed app's page, but the full app's for a run of a reader's
/// spec, whose every-permutation matrix the embed app leaves out (a lookup of the run's
/// scenario, not its events). A store that does not answer leaves it to the embed app.
async fn embedded_run(State(state): State<AppState>, Path(id): Path<String>, uri: Uri, dist: Arc<PathBuf>) -> Response {
    let spec = match state.engine.store.scenario_of(&id).await {
        Ok(scenario) => scenario.is_some_and(|s| s.starts_with("spec/")),
        Err(error) => {
            tracing::warn!(%error, "could not read the run store");
            false
        }
    };
    super::assets::embed_page_in(&dist, uri, spec).await
}

/// A saved spec's page; under a 404 when no spec has the id (the app says so).
async fn spec_page(State(state): State<AppState>, Path(id): Path<String>, dist: Arc<PathBuf>) -> Response {
    match state.engine.store.load_spec(&id).await {
        Ok(Some(_)) => app_page(&dist, None).await,
        Ok(None) => missing_page(&dist).await,
        Err(error) => {
            tracing::warn!(%error, "could not read the spec store");
            ApiError::Unavailable("the spec store is not answering".into()).into_response()
        }
    }
}

async fn scenario_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path((lab, scenario)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
    dist: Arc<PathBuf>,
) -> Response {
    let id = format!("{lab}/{scenario}");
    let Some(found) = crate::labs::find(&id) else {
        // An unknown scenario: the app's page says so, under a 404, as for a run nobody stored.
        return missing_page(&dist).await;
    };
    let Some((origin, _)) = origin(&headers) else {
        // No host to name in a preview: the page alone.
        return app_page(&dist, None).await;
    };
    let info = crate::engine::Scenario::info(found);
    let variant = query
        .get("variant")
        .filter(|v| info.variant(v).is_some())
        .cloned()
        .unwrap_or_else(|| info.variants[0].id.clone());
    let latest = state.engine.store.latest(&id, &variant).await.ok().flatten();
    let mut url = Url::parse(&format!("{origin}/lab/{id}")).expect("an origin and a path make a URL");
    url.query_pairs_mut().append_pair("variant", &variant);
    let preview = Preview {
        title: format!("{} ({variant})", info.title),
        description: info.hook.clone(),
        url: url.to_string(),
        image: latest.map(|run| picture_url(&origin, &run)),
    };
    app_page(&dist, Some((&origin, &preview))).await
}

async fn run_page_or_picture(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    dist: Arc<PathBuf>,
) -> Response {
    let (id, picture) = if let Some(id) = id.strip_suffix(".svg") {
        (id.to_owned(), Some(Picture::Svg))
    } else if let Some(id) = id.strip_suffix(".png") {
        (id.to_owned(), Some(Picture::Png))
    } else {
        (id, None)
    };
    let run = match state.engine.store.load(&id).await {
        Ok(run) => run,
        Err(error) => {
            tracing::warn!(%error, "could not read the run store");
            return ApiError::Unavailable("the run store is not answering".into()).into_response();
        }
    };
    // A finished run never changes.
    let forever = (header::CACHE_CONTROL, "public, max-age=31536000, immutable");
    match (run, picture) {
        (Some(run), Some(Picture::Svg)) => (
            [(header::CONTENT_TYPE, "image/svg+xml; charset=utf-8"), forever],
            picture::draw(&run),
        )
            .into_response(),
        (Some(run), Some(Picture::Png)) => match png::render(picture::draw(&run)).await {
            Ok(png) => ([(header::CONTENT_TYPE, "image/png"), forever], png).into_response(),
            Err(error @ png::PngError::NoFonts) => ApiError::Unavailable(error.to_string()).into_response(),
            Err(error) => {
                tracing::error!(%error, run = %id, "could not draw a run as PNG");
                ApiError::Internal(error.to_string()).into_response()
            }
        },
        (None, Some(_)) => ApiError::NotFound(format!("no finished run has the id {id:?}")).into_response(),
        // No such run: the app's page says so, under a 404 (a link checker, a crawler and a
        // browser's history all learn that the link is dead).
        (None, None) => missing_page(&dist).await,
        (run, None) => {
            let preview = run.zip(origin(&headers)).map(|(run, (origin, _))| {
                let state = shared::run_state::RunState::replay(run.id.clone(), run.events.clone());
                let title = state
                    .header()
                    .map_or(run.scenario.clone(), |(title, _)| title.to_owned());
                let verdict = state.verdict();
                (
                    origin.clone(),
                    Preview {
                        title: format!(
                            "{title} ({}): {}",
                            run.variant,
                            verdict.map_or("no verdict", |v| v.label())
                        ),
                        description: verdict.map_or_else(String::new, |v| v.headline.clone()),
                        url: format!("{origin}/runs/{id}"),
                        image: Some(picture_url(&origin, &id)),
                    },
                )
            });
            app_page(&dist, preview.as_ref().map(|(origin, p)| (origin.as_str(), p))).await
        }
    }
}

/// The two pictures of a run.
enum Picture {
    Svg,
    Png,
}

/// The picture a link preview shows: the PNG (platforms ignore an SVG `og:image`), or the SVG on
/// a server without fonts to draw the PNG with.
fn picture_url(origin: &str, run: &str) -> String {
    let kind = if png::available() { "png" } else { "svg" };
    format!("{origin}/runs/{run}.{kind}")
}

/// The app's page under `status`: what it draws for a path the server knows is missing (a run,
/// a scenario, a spec or a page nobody has) says so, and the 404 tells a link checker too.
pub(super) async fn app_page_under(dist: &std::path::Path, status: StatusCode) -> Response {
    let mut page = app_page(dist, None).await;
    *page.status_mut() = status;
    page
}

/// [`app_page_under`] a 404.
async fn missing_page(dist: &std::path::Path) -> Response {
    app_page_under(dist, StatusCode::NOT_FOUND).await
}

/// The app's `index.html` with `preview`'s tags in its head; or the page saying the app has not
/// been built. Read on each request, without blocking the runtime: a `trunk build` while the
/// server runs changes the files it names.
async fn app_page(dist: &std::path::Path, preview: Option<(&str, &Preview)>) -> Response {
    let Ok(index) = tokio::fs::read_to_string(dist.join("index.html")).await else {
        return Html(super::assets::NOT_BUILT).into_response();
    };
    let page = match preview {
        Some((origin, preview)) => with_preview(&index, origin, preview),
        None => index,
    };
    ([(header::CACHE_CONTROL, "no-cache")], Html(page)).into_response()
}

/// `index` with the page's title, its oEmbed discovery link and its Open Graph tags.
pub fn with_preview(index: &str, origin: &str, preview: &Preview) -> String {
    let mut oembed = Url::parse(&format!("{origin}/oembed")).expect("an origin makes a URL");
    oembed
        .query_pairs_mut()
        .append_pair("url", &preview.url)
        .append_pair("format", "json");
    let title = escape(&preview.title);
    let mut tags = format!(
        concat!(
            r#"<link rel="alternate" type="application/json+oembed" href="{oembed}" title="{title}" />"#,
            r#"<meta property="og:type" content="website" />"#,
            r#"<meta property="og:site_name" content="racelab" />"#,
            r#"<meta property="og:title" content="{title}" />"#,
            r#"<meta property="og:description" content="{description}" />"#,
            r#"<meta property="og:url" content="{url}" />"#,
        ),
        oembed = escape(oembed.as_str()),
        title = title,
        description = escape(&preview.description),
        url = escape(&preview.url),
    );
    if let Some(image) = &preview.image {
        tags.push_str(&format!(
            r#"<meta property="og:image" content="{image}" /><meta name="twitter:card" content="summary_large_image" />"#,
            image = escape(image)
        ));
    }
    let titled = index.replacen(
        "<title>racelab</title>",
        &format!("<title>{title} · racelab</title>"),
        1,
    );
    match titled.find("</head>") {
        Some(at) => format!("{}{tags}\n{}", &titled[..at], &titled[at..]),
        None => titled,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_carries_the_discovery_link_and_the_preview() {
        let index = "<html><head><title>racelab</title></head><body></body></html>";
        let preview = Preview {
            title: "Two managers overspend \"a budget\"".into(),
            description: "Both check, both insert.".into(),
            url: "http://h:1/lab/isolation/write-skew?variant=serializable".into(),
            image: Some("http://h:1/runs/0123456789ab.svg".into()),
        };
        let page = with_preview(index, "http://h:1", &preview);
        assert!(page.contains(r#"<link rel="alternate" type="application/json+oembed" href="http://h:1/oembed?url=http%3A%2F%2Fh%3A1%2Flab%2Fisolation%2Fwrite-skew%3Fvariant%3Dserializable&amp;format=json""#), "{page}");
        assert!(page.contains(r#"<meta property="og:image" content="http://h:1/runs/0123456789ab.svg" />"#));
        assert!(page.contains("<title>Two managers overspend &quot;a budget&quot; · racelab</title>"));
        assert!(page.find("og:title").unwrap() < page.find("</head>").unwrap());
    }
}
