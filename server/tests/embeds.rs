//! What a blog platform and a link preview get from racelab: the oEmbed answer for scenario and
//! run links (and its 404 and 501), the discovery link and Open Graph tags in the pages' heads,
//! and the picture of a stored run, drawn on the server.

#![allow(clippy::too_many_lines, reason = "a test reads top to bottom as the story it checks")]

mod common;

use common::{db_slot, get, play};
use serde_json::Value;

fn oembed_path(url: &str, extra: &str) -> String {
    let mut query = reqwest::Url::parse("http://x/oembed").expect("url");
    query.query_pairs_mut().append_pair("url", url);
    format!("/oembed?{}{extra}", query.query().unwrap_or_default())
}

/// The oEmbed 1.0 spec's required fields of a `rich` answer, with their types.
fn assert_rich(answer: &Value, max_width: u64, max_height: u64) {
    assert_eq!(answer["version"], "1.0", "{answer}");
    assert_eq!(answer["type"], "rich", "{answer}");
    let html = answer["html"].as_str().expect("html is a string");
    assert!(html.starts_with("<iframe ") && html.ends_with("</iframe>"), "{html}");
    let (width, height) = (
        answer["width"].as_u64().expect("width is an integer"),
        answer["height"].as_u64().expect("height is an integer"),
    );
    assert!(width > 0 && width <= max_width, "width {width} within {max_width}");
    assert!(
        height > 0 && height <= max_height,
        "height {height} within {max_height}"
    );
    assert_eq!(answer["provider_name"], "racelab");
}

#[tokio::test]
async fn oembed_answers_for_our_scenario_and_run_links_and_refuses_the_rest() {
    let _slot = db_slot().await;
    let engine = common::engine().await;
    let run = play(&engine, "isolation/write-skew", "serializable").await;
    let address = common::server().await;
    let site = format!("http://{address}");

    let (status, kind, body) = get(
        address,
        &oembed_path(
            &format!("{site}/lab/isolation/write-skew?variant=serializable"),
            "&format=json",
        ),
    )
    .await;
    assert_eq!((status, kind.as_str()), (200, "application/json"), "{body}");
    let answer: Value = serde_json::from_str(&body).expect("JSON");
    assert_rich(&answer, 680, 1_200);
    let html = answer["html"].as_str().unwrap_or_default();
    assert!(
        html.contains(&format!(
            r#"src="{site}/embed/isolation/write-skew?variant=serializable""#
        )),
        "{html}"
    );

    // A page on a version this racelab plays embeds on it, and says so.
    let home = engine.default_postgres();
    let (status, _, body) = get(
        address,
        &oembed_path(
            &format!("{site}/lab/isolation/write-skew?variant=serializable&postgres={home}"),
            "",
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        answer["title"],
        format!("Write skew: two managers overspend a budget (serializable, PostgreSQL {home})")
    );
    let html = answer["html"].as_str().unwrap_or_default();
    assert!(
        html.contains(&format!(
            r#"src="{site}/embed/isolation/write-skew?variant=serializable&amp;postgres={home}""#
        )),
        "{html}"
    );

    // A narrow column and a short one: the answer stays inside both.
    let (_, _, body) = get(
        address,
        &oembed_path(
            &format!("{site}/lab/isolation/write-skew"),
            "&maxwidth=360&maxheight=900",
        ),
    )
    .await;
    assert_rich(&serde_json::from_str(&body).expect("JSON"), 360, 900);

    let (status, _, body) = get(address, &oembed_path(&format!("{site}/runs/{}", run.run_id), "")).await;
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).expect("JSON");
    assert_rich(&answer, 680, 1_200);
    assert!(
        answer["html"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!(r#"src="{site}/embed/runs/{}""#, run.run_id)),
        "{answer}"
    );

    for (url, extra, expected) in [
        ("http://elsewhere.example/lab/isolation/write-skew".to_owned(), "", 404),
        (format!("{site}/lab/isolation/no-such-scenario"), "", 404),
        (format!("{site}/lab/isolation/write-skew?variant=nope"), "", 404),
        (format!("{site}/lab/isolation/write-skew?postgres=99"), "", 404),
        (format!("{site}/embed/isolation/write-skew?postgres=eighteen"), "", 400),
        (format!("{site}/runs/000000000000"), "", 404),
        (format!("{site}/api/labs"), "", 404),
        (format!("{site}/lab/isolation/write-skew"), "&format=xml", 501),
        // A query that does not read: racelab's JSON error, not axum's plain text.
        (format!("{site}/lab/isolation/write-skew"), "&maxwidth=wide", 400),
    ] {
        let (status, kind, body) = get(address, &oembed_path(&url, extra)).await;
        assert_eq!(status, expected, "{url}{extra}: {body}");
        assert_json_error(&kind, &body);
    }
    // Every other failure at the HTTP edge answers in the same shape.
    for (path, expected) in [
        ("/oembed".to_owned(), 400),
        ("/api/nope".to_owned(), 404),
        ("/api/runs/000000000000".to_owned(), 404),
        ("/api/scenarios/isolation/nope".to_owned(), 404),
        ("/api/rooms/ZZZZZZ".to_owned(), 404),
        ("/api/rooms/ZZZZZZ/qr.svg".to_owned(), 404),
        ("/runs/000000000000.svg".to_owned(), 404),
    ] {
        let (status, kind, body) = get(address, &path).await;
        assert_eq!(status, expected, "{path}: {body}");
        assert_json_error(&kind, &body);
    }
}

/// A failure's body: `{"error": "<a sentence>"}`, as JSON.
fn assert_json_error(kind: &str, body: &str) {
    assert_eq!(kind, "application/json", "{body}");
    let error: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    let said = error["error"].as_str().unwrap_or_default();
    assert!(
        said.len() > 10 && error.as_object().is_some_and(|o| o.len() == 1),
        "{body}"
    );
}

#[tokio::test]
async fn the_picture_of_a_stored_run_names_each_lane_and_the_verdict() {
    let _slot = db_slot().await;
    let engine = common::engine().await;
    let run = play(&engine, "isolation/write-skew", "read-committed").await;
    let address = common::server().await;

    let (status, kind, svg) = get(address, &format!("/runs/{}.svg", run.run_id)).await;
    assert_eq!((status, kind.as_str()), (200, "image/svg+xml; charset=utf-8"));
    let document = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("the SVG parses: {e}\n{svg}"));
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let texts: Vec<&str> = document
        .descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect();
    let said = |wanted: &str| texts.iter().any(|t| t.contains(wanted));
    for lane in ["alice", "bob"] {
        assert!(said(lane), "lane {lane} named in {texts:?}");
    }
    let verdict = run.verdict();
    assert_eq!(verdict.label(), "bug reproduced");
    assert!(
        said("bug reproduced") && said(&verdict.headline),
        "the verdict in {texts:?}"
    );
    // Both commits are on the picture: this is the race that overspent.
    assert_eq!(texts.iter().filter(|t| **t == "COMMIT").count(), 2, "{texts:?}");

    let (status, _, _) = get(address, "/runs/000000000000.svg").await;
    assert_eq!(status, 404);

    // The same picture as PNG, for previews that show only raster images: as wide as the SVG,
    // with the lanes' words on it (dark pixels on white), and cached for good.
    let response = reqwest::get(format!("http://{address}/runs/{}.png", run.run_id))
        .await
        .expect("GET the PNG");
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers()["content-type"], "image/png");
    assert!(
        response.headers()["cache-control"]
            .to_str()
            .is_ok_and(|c| c.contains("immutable"))
    );
    let png = response.bytes().await.expect("a body");
    let pixmap = resvg::tiny_skia::Pixmap::decode_png(&png).expect("a PNG");
    assert_eq!(pixmap.width(), 1200);
    let svg_height: f32 = root
        .attribute("height")
        .and_then(|h| h.parse().ok())
        .expect("the SVG's height");
    assert_eq!(pixmap.height(), svg_height.ceil() as u32);
    let dark = pixmap
        .pixels()
        .iter()
        .filter(|p| p.red() < 100 && p.green() < 100)
        .count();
    assert!(dark > 2_000, "only {dark} dark pixels: is the text drawn?");
    let (status, _, _) = get(address, "/runs/000000000000.png").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn scenario_and_run_pages_carry_the_discovery_link_and_the_preview() {
    let _slot = db_slot().await;
    let dist = std::env::temp_dir().join(format!("racelab-embeds-dist-{}", std::process::id()));
    std::fs::create_dir_all(&dist).expect("a dist dir");
    std::fs::write(
        dist.join("index.html"),
        "<!doctype html><html><head><title>racelab</title></head><body></body></html>",
    )
    .expect("an index");
    let engine = common::engine().await;
    let run = play(&engine, "isolation/write-skew", "serializable").await;
    let address = common::server_with_dist(&dist).await;

    let (status, _, page) = get(address, "/lab/isolation/write-skew?variant=serializable").await;
    assert_eq!(status, 200);
    let link = page
        .split("<link ")
        .find(|tag| tag.contains(r#"type="application/json+oembed""#))
        .unwrap_or_else(|| panic!("a discovery link in {page}"));
    let href = link
        .split(r#"href=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("href")
        .replace("&amp;", "&");
    let path = href
        .strip_prefix(&format!("http://{address}"))
        .expect("our own oEmbed endpoint");
    let (status, _, body) = get(address, path).await;
    assert_eq!(status, 200, "{href}: {body}");
    assert_rich(&serde_json::from_str(&body).expect("JSON"), 680, 1_200);
    // The scenario's newest run is its preview picture (ours, or a newer one of another test).
    assert!(page.contains(r#"<meta property="og:image" content="http://"#), "{page}");

    let (_, _, page) = get(address, &format!("/runs/{}", run.run_id)).await;
    // The PNG: this machine has the fonts (scripts/install-ui-tools.sh installs them).
    let image = format!(
        r#"<meta property="og:image" content="http://{address}/runs/{}.png" />"#,
        run.run_id
    );
    assert!(page.contains(&image), "{page}");
    assert!(page.contains("bug prevented"), "the verdict in the title: {page}");

    // A scenario that does not exist: the app's page (which says so), under a 404.
    let (status, kind, page) = get(address, "/lab/isolation/no-such-scenario").await;
    assert_eq!((status, kind.as_str()), (404, "text/html; charset=utf-8"), "{page}");
    assert!(!page.contains("og:title"), "nothing to preview: {page}");
    let _ = std::fs::remove_dir_all(&dist);
}

/// An iframe at `/embed/…` gets the embed app (dist/embed-app/, the lean build), a recording the
/// player app (dist/player-app/), a spec or a lesson and every other page the full app; a build without them (a dev
/// build) serves the full app for embeds and recordings too.
#[tokio::test]
async fn embeds_get_the_embed_app_recordings_the_player_and_pages_the_full_app() {
    let dist = std::env::temp_dir().join(format!("racelab-embed-dist-{}", std::process::id()));
    for (folder, app) in [("embed-app", "the embed app"), ("player-app", "the player app")] {
        std::fs::create_dir_all(dist.join(folder)).expect("a temporary dist");
        std::fs::write(
            dist.join(folder).join("index.html"),
            format!("<html><body>{app}</body></html>"),
        )
        .expect("write");
    }
    std::fs::write(dist.join("index.html"), "<html><body>the full app</body></html>").expect("write");
    let address = common::server_with_dist(&dist).await;
    let recording = "/embed/recording?src=https%3A%2F%2Fblog.example%2Fws.racelab.json&predict=1";
    let (status, _, body) = get(address, recording).await;
    assert_eq!(status, 200);
    assert!(body.contains("the player app"), "a recording: {body}");
    let (_, _, body) = get(address, "/embed/isolation/write-skew?predict=1").await;
    assert!(body.contains("the full app"), "a live embed that asks first: {body}");
    // What the embed app leaves out: a reader's spec (its matrix), a lesson taken alone.
    for path in ["/embed/s/0123456789abcdef", "/embed/lessons/0123456789abcdef"] {
        let (status, _, body) = get(address, path).await;
        assert_eq!(status, 200, "{path}");
        assert!(body.contains("the full app"), "{path}: {body}");
    }
    for path in [
        "/embed/isolation/write-skew?variant=serializable&autoplay=1",
        "/embed/runs/r1",
        "/embed/nope/nope",
    ] {
        let (status, kind, body) = get(address, path).await;
        assert_eq!((status, kind.as_str()), (200, "text/html; charset=utf-8"), "{path}");
        assert!(body.contains("the embed app"), "{path}: {body}");
    }
    // The app's pages; a run nobody stored, and a path that is no page, are the app's page
    // saying so, under a 404.
    for (path, wanted) in [
        ("/", 200),
        ("/lab/isolation/write-skew", 200),
        ("/lab/isolation/write-skew/compare", 200),
        ("/write", 200),
        ("/atlas", 200),
        ("/room/K7Q2", 200),
        ("/runs/r1", 404),
        ("/nope", 404),
        ("/lab/isolation", 404),
        ("/runs/r1/more", 404),
        ("/write/more", 404),
    ] {
        let (status, kind, body) = get(address, path).await;
        assert_eq!(status, wanted, "{path}");
        assert!(kind.starts_with("text/html"), "{path}: {kind}");
        assert!(body.contains("the full app"), "{path}: {body}");
    }
    let (status, _, body) = get(address, "/embed/a/b/c").await;
    assert_eq!(status, 404, "no such embed");
    assert!(body.contains("the embed app"), "{body}");
    std::fs::remove_dir_all(dist.join("embed-app")).expect("remove the embed app");
    std::fs::remove_dir_all(dist.join("player-app")).expect("remove the player app");
    let (_, _, body) = get(address, "/embed/isolation/write-skew").await;
    assert!(body.contains("the full app"), "without an embed app: {body}");
    let (_, _, body) = get(address, recording).await;
    assert!(body.contains("the full app"), "without a player app: {body}");
    std::fs::remove_dir_all(&dist).expect("clean up");
}
