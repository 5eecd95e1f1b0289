//! `GET /oembed`: oEmbed 1.0, so a platform that resolves oEmbed turns a pasted scenario or run
//! link into the embed. Scenario pages and run pages point here with a discovery `<link>` (see
//! [`super::pages`]).
//!
//! Answers follow the spec: the `rich` type with the iframe's HTML, `width` and `height` within
//! `maxwidth`/`maxheight`; `404` for a URL that is not one of this racelab's scenario or run pages
//! (another site's, a typo, a run that does not exist); `501` for a format other than JSON.

use super::AppState;
use super::error::ApiError;
use axum::Json;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use reqwest::Url;
use serde::{Deserialize, Serialize};
use shared::markup::escape;

/// The embed's width in a blog column, and its finished height there and at a phone's width
/// (the compact timeline's limits for serializable write skew).
const COLUMN: u32 = 680;
const HEIGHT_AT_COLUMN: u32 = 1_200;
const PHONE: u32 = 360;
const HEIGHT_AT_PHONE: u32 = 1_800;

#[derive(Debug, Deserialize)]
pub struct Request {
    url: Option<String>,
    maxwidth: Option<u32>,
    maxheight: Option<u32>,
    format: Option<String>,
}

/// An oEmbed 1.0 `rich` response.
#[derive(Debug, PartialEq, Serialize)]
pub struct Answer {
    pub version: &'static str,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub title: String,
    pub provider_name: &'static str,
    pub provider_url: String,
    pub html: String,
    pub width: u32,
    pub height: u32,
    pub cache_age: u32,
}

/// Which embeddable page of this racelab a URL is.
#[derive(Debug, PartialEq)]
pub enum Page {
    /// `/lab/{lab}/{scenario}` or `/embed/{lab}/{scenario}`, with `?variant=` and
    /// `?postgres=` if given.
    Scenario {
        id: String,
        variant: Option<String>,
        postgres: Option<String>,
    },
    /// `/runs/{id}`.
    Run { id: String },
}

/// The page `url` names, if it is one of ours: same host as the request (`authority`), and a
/// scenario or run path.
pub fn page(url: &str, authority: &str) -> Option<Page> {
    let url = Url::parse(url).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let host = match url.port() {
        Some(port) => format!("{}:{port}", url.host_str()?),
        None => url.host_str()?.to_owned(),
    };
    if !host.eq_ignore_ascii_case(authority) {
        return None;
    }
    let parts: Vec<&str> = url.path_segments()?.filter(|p| !p.is_empty()).collect();
    let asked = |name: &str| url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
    let (variant, postgres) = (asked("variant"), asked("postgres"));
    match parts.as_slice() {
        ["s" | "embed", "s", ..] | ["s", _] => {
            let id = parts.last()?;
            Some(Page::Scenario {
                id: format!("spec/{id}"),
                variant,
                postgres,
            })
        }
        ["lab" | "embed", lab, scenario] => Some(Page::Scenario {
            id: format!("{lab}/{scenario}"),
            variant,
            postgres,
        }),
        ["runs", id] => Some(Page::Run { id: (*id).to_owned() }),
        _ => None,
    }
}

/// The size the embed asks for within the consumer's limits: the column width (or less), and
/// the finished height at that width, interpolated between a column's and a phone's.
pub fn size(maxwidth: Option<u32>, maxheight: Option<u32>) -> (u32, u32) {
    let width = maxwidth.map_or(COLUMN, |m| m.min(COLUMN)).max(1);
    let height = if width >= COLUMN {
        HEIGHT_AT_COLUMN
    } else if width <= PHONE {
        HEIGHT_AT_PHONE
    } else {
        let t = f64::from(COLUMN - width) / f64::from(COLUMN - PHONE);
        (f64::from(HEIGHT_AT_COLUMN) + t * f64::from(HEIGHT_AT_PHONE - HEIGHT_AT_COLUMN)).round() as u32
    };
    (width, maxheight.map_or(height, |m| height.min(m)))
}

/// The iframe for `src`, at `width` × `height`, shrinking with a narrower column.
pub fn iframe(src: &str, title: &str, width: u32, height: u32) -> String {
    format!(
        r#"<iframe src="{src}" title="{title}" width="{width}" height="{height}" style="border:0;width:100%;max-width:{width}px" loading="lazy" allow="clipboard-write"></iframe>"#,
        src = escape(src),
        title = escape(title),
    )
}

/// `http://host:port` of the request (behind a proxy, its `X-Forwarded-Proto`).
pub fn origin(headers: &HeaderMap) -> Option<(String, String)> {
    let host = headers.get("host")?.to_str().ok()?.to_owned();
    let scheme = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .filter(|s| matches!(*s, "http" | "https"))
        .unwrap_or("http");
    Some((format!("{scheme}://{host}"), host))
}

pub async fn handler(
    State(state): State<AppState>,
    headers: HeaderMap,
    request: Result<Query<Request>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Answer>, ApiError> {
    let Query(request) = request?;
    if request.format.as_deref().is_some_and(|f| f != "json") {
        return Err(ApiError::NotImplemented("racelab answers oEmbed in JSON only".into()));
    }
    let Some(url) = request.url.as_deref() else {
        return Err(ApiError::BadRequest("oEmbed needs a url parameter".into()));
    };
    let Some((origin, authority)) = origin(&headers) else {
        return Err(ApiError::BadRequest("no Host header".into()));
    };
    let not_found = || Err(ApiError::NotFound("not a racelab scenario or run page".into()));
    let (width, height) = size(request.maxwidth, request.maxheight);
    let (title, src) = match page(url, &authority) {
        None => return not_found(),
        Some(Page::Scenario { id, variant, postgres }) => {
            let Ok(scenario) = crate::control::scenario_for(&id, &state.engine.store).await else {
                return not_found();
            };
            let info = scenario.info();
            let variant = match variant {
                Some(v) if info.variant(&v).is_some() => v,
                Some(_) => return not_found(),
                None => info.variants[0].id.clone(),
            };
            let path = shared::pages::embed_page(&id);
            let mut src = Url::parse(&format!("{origin}{path}")).expect("an origin and a path make a URL");
            src.query_pairs_mut().append_pair("variant", &variant);
            // A page on another version embeds on it, and its title says so.
            let played = match crate::control::postgres_version(postgres.as_deref()).map_err(ApiError::BadRequest)? {
                None => variant,
                Some(major) => {
                    state
                        .engine
                        .plays(major)
                        .map_err(|e| ApiError::NotFound(e.to_string()))?;
                    src.query_pairs_mut().append_pair("postgres", &major.to_string());
                    format!("{variant}, PostgreSQL {major}")
                }
            };
            (format!("{} ({played})", info.title), src.to_string())
        }
        Some(Page::Run { id }) => match state.engine.store.load(&id).await {
            Ok(Some(run)) => {
                let title = crate::labs::find(&run.scenario)
                    .map(|s| crate::engine::Scenario::info(s).title)
                    .unwrap_or_else(|| run.scenario.clone());
                (
                    format!("{title} ({}), run {id}", run.variant),
                    format!("{origin}/embed/runs/{id}"),
                )
            }
            Ok(None) => return not_found(),
            Err(error) => {
                tracing::warn!(%error, "oEmbed could not read the run store");
                return Err(ApiError::Unavailable("the run store is not answering".into()));
            }
        },
    };
    Ok(Json(Answer {
        version: "1.0",
        kind: "rich",
        html: iframe(&src, &format!("racelab: {title}"), width, height),
        title,
        provider_name: "racelab",
        provider_url: format!("{origin}/"),
        width,
        height,
        cache_age: 3_600,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_scenario_and_run_pages_are_embeddable_and_nothing_else() {
        let host = "racelab.example:8080";
        assert_eq!(
            page(
                "http://racelab.example:8080/lab/isolation/write-skew?variant=serializable",
                host
            ),
            Some(Page::Scenario {
                id: "isolation/write-skew".into(),
                variant: Some("serializable".into()),
                postgres: None
            })
        );
        assert_eq!(
            page("https://racelab.example:8080/runs/0123456789ab", host),
            Some(Page::Run {
                id: "0123456789ab".into()
            })
        );
        assert_eq!(
            page("http://racelab.example:8080/s/0123456789abcdef?variant=p2", host),
            Some(Page::Scenario {
                id: "spec/0123456789abcdef".into(),
                variant: Some("p2".into()),
                postgres: None
            })
        );
        assert_eq!(
            page("http://racelab.example:8080/embed/s/0123456789abcdef", host),
            Some(Page::Scenario {
                id: "spec/0123456789abcdef".into(),
                variant: None,
                postgres: None
            })
        );
        assert_eq!(
            page(
                "http://racelab.example:8080/embed/locks/fencing?postgres=18&variant=fenced",
                host
            ),
            Some(Page::Scenario {
                id: "locks/fencing".into(),
                variant: Some("fenced".into()),
                postgres: Some("18".into())
            })
        );
        assert_eq!(page("http://elsewhere.example/lab/isolation/write-skew", host), None);
        assert_eq!(page("http://racelab.example:8080/lab/isolation", host), None);
        assert_eq!(page("http://racelab.example:8080/api/labs", host), None);
        assert_eq!(page("ftp://racelab.example:8080/runs/x", host), None);
        assert_eq!(page("not a url", host), None);
    }

    #[test]
    fn the_size_stays_within_the_consumers_limits() {
        assert_eq!(size(None, None), (680, 1_200));
        assert_eq!(size(Some(1_000), None), (680, 1_200));
        assert_eq!(size(Some(360), None), (360, 1_800));
        assert_eq!(size(Some(520), None), (520, 1_500));
        assert_eq!(size(Some(680), Some(400)), (680, 400));
    }

    #[test]
    fn the_iframe_escapes_what_it_quotes() {
        let html = iframe("http://h/embed/a/b?variant=x&y", "racelab: \"quoted\"", 680, 1_200);
        assert!(html.contains(r#"src="http://h/embed/a/b?variant=x&amp;y""#), "{html}");
        assert!(html.contains(r#"title="racelab: &quot;quoted&quot;""#), "{html}");
    }
}
