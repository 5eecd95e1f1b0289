//! The recording player in headless Chromium: a recording kept on a plain static host of another
//! origin (as a blog's GitHub Pages keeps it) plays in `/embed/recording?src=…`, with no request
//! to racelab's API or websocket; it says it is a recording, where and when it was made; it
//! travels back with the scrubber and draws the proof the file keeps; a file
//! cut short and a file from a later format are said plainly; script in a recording's text stays
//! text. Screenshots at 680 and 360 px (`target/screenshots/`).

#![allow(clippy::too_many_lines, reason = "a test reads top to bottom as the story it checks")]

mod common;
#[allow(dead_code)]
#[path = "browser/harness.rs"]
mod harness;

use axum::Router;
use axum::http::header;
use axum::routing::get;
use harness::{Browser, run, run_alone};
use std::path::PathBuf;

/// The recording committed beside the tests: the serializable write skew on PostgreSQL 18.6.
fn fixture() -> String {
    std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/write-skew.serializable.racelab.json"),
    )
    .expect("the fixture")
}

/// Runs this build's `racelab` with `args` on the tests' PostgreSQL, and checks it succeeded;
/// what it printed on stdout.
async fn racelab(args: &[&std::ffi::OsStr]) -> String {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_racelab"))
        .args(args)
        .env(
            "DATABASE_URL",
            std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/racelab".to_owned()),
        )
        .output()
        .await
        .expect("racelab starts");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "racelab {args:?}: {said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    said
}

/// Serves `app` on a port of its own on loopback: its base URL.
async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .expect("a free port");
    let address = listener.local_addr().expect("its address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}")
}

/// A static host of another origin serving `files` by name, readable from any page
/// (`Access-Control-Allow-Origin: *`, as GitHub Pages sends); its base URL.
async fn static_host(files: Vec<(&'static str, String)>) -> String {
    let mut app = Router::new();
    for (name, body) in files {
        app = app.route(
            &format!("/{name}"),
            get(move || {
                let body = body.clone();
                async move {
                    (
                        [
                            (header::CONTENT_TYPE, "application/json"),
                            (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
                        ],
                        body,
                    )
                }
            }),
        );
    }
    // A missing file is a 404 the page may read, as on GitHub Pages.
    let app = app.fallback(|| async {
        (
            axum::http::StatusCode::NOT_FOUND,
            [(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")],
            "not here",
        )
    });
    serve(app).await
}

/// A host that serves the file but does not let other sites read it (no
/// `Access-Control-Allow-Origin`); its base URL.
async fn closed_host(name: &'static str, body: String) -> String {
    let app = Router::new().route(&format!("/{name}"), get(move || async move { body }));
    serve(app).await
}

/// What the page asked of racelab's own server besides its app's files: API calls and sockets.
async fn asked_of_racelab(b: &Browser) -> Vec<String> {
    let names = b
        .js(
            "return performance.getEntriesByType('resource').map(e => e.name)\
               .filter(n => n.startsWith(location.origin) && (n.includes('/api/') || n.includes('/ws')));",
            vec![],
        )
        .await;
    serde_json::from_value(names).expect("a list of names")
}

/// What the player says of the file at `src`, which it cannot play.
async fn said_for(b: &Browser, src: &str) -> String {
    b.goto(&format!("/embed/recording?src={src}")).await;
    b.wait_for(".rl-error").await;
    b.text(".rl-error").await.unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_on_another_origin_plays_with_no_racelab_behind_it() {
    let recording = fixture();
    let later = recording.replacen("\"version\":1", "\"version\":2", 1);
    let cut = recording[..recording.len() / 2].to_owned();
    let hostile = recording
        .replace(
            "Write skew: two managers overspend a budget",
            "<img src=x onerror=\\\"window.pwned=1\\\"><script>window.pwned=2</script>",
        )
        .replace(
            "--- write skew, serializable ---",
            "<b>--- write skew, serializable ---</b>",
        );
    let closed = closed_host("ws.racelab.json", recording.clone()).await;
    let host = static_host(vec![
        ("ws.racelab.json", recording),
        ("later.racelab.json", later),
        ("cut.racelab.json", cut),
        ("hostile.racelab.json", hostile),
    ])
    .await;
    run("recording_player", async |b: &Browser| {
        b.set_viewport(680, 900).await;
        b.goto(&format!("/embed/recording?src={host}/ws.racelab.json")).await;
        b.wait_for(".rl-verdict").await;
        assert_eq!(b.attr(".rl-verdict", "data-kind").await.as_deref(), Some("prevented"));
        assert_eq!(
            b.text(".rl-recorded").await.as_deref(),
            Some("recorded on PostgreSQL 18.6, 6 Dec 2026"),
            "it says it is a recording, and where and when"
        );
        assert_eq!(
            b.text(".rl-recording-title").await.as_deref(),
            Some("Write skew: two managers overspend a budget")
        );
        // The race as it ran: alice's and bob's lanes, bob's 40001, the ledger after.
        let lanes = b.attrs("[data-lane]", "data-lane").await;
        assert!(
            lanes.iter().flatten().any(|a| a == "alice") && lanes.iter().flatten().any(|a| a == "bob"),
            "{lanes:?}"
        );
        let page = b.text("main").await.unwrap_or_default();
        assert!(page.contains("40001"), "bob's refused commit, with its SQLSTATE");
        // Why it happened, from the file: the cycle bob's commit would have closed.
        b.wait_for(".rl-proof").await;
        assert_eq!(b.count("button.rl-why").await, 0, "nothing to ask a server");
        let proof = b.text(".rl-proof").await.unwrap_or_default();
        assert!(proof.contains("SQLSTATE 40001"), "{proof}");
        assert_eq!(
            asked_of_racelab(b).await,
            Vec::<String>::new(),
            "no request to racelab's API or socket"
        );
        assert_eq!(
            b.count("a.rl-run-live").await,
            0,
            "no server named, nothing to run live"
        );
        assert!(!b.scrolls_sideways().await, "it fits 680 px");
        b.screenshot("recording-680").await;
        b.set_viewport(360, 740).await;
        b.settle().await;
        assert!(!b.scrolls_sideways().await, "it fits 360 px");
        b.screenshot("recording-360").await;
        b.set_viewport(680, 900).await;

        // Its author names a racelab to run it live on; an address that is not a server's is
        // no link.
        b.goto(&format!(
            "/embed/recording?src={host}/ws.racelab.json&live=https://racelab.example/"
        ))
        .await;
        b.wait_for("a.rl-run-live").await;
        assert_eq!(
            b.attr("a.rl-run-live", "href").await.as_deref(),
            Some("https://racelab.example/lab/isolation/write-skew?variant=serializable")
        );
        b.goto(&format!(
            "/embed/recording?src={host}/ws.racelab.json&live=javascript:window.pwned=3"
        ))
        .await;
        b.wait_for(".rl-verdict").await;
        assert_eq!(b.count("a.rl-run-live").await, 0, "a script is not a server");

        // The detailed view, travelled back in time with the scrubber's ←.
        b.goto(&format!("/embed/recording?src={host}/ws.racelab.json&view=detailed"))
            .await;
        b.wait_for(".rl-verdict").await;
        b.wait_for(".rl-scrub").await;
        let at_end = b.count(".rl-timeline .rl-card").await;
        assert!(at_end >= 8, "every statement drawn: {at_end} cards");
        b.js("document.querySelector('.rl-scrub').focus(); return true;", vec![])
            .await;
        // The last events (the ledger, the verdict, the lines said) draw no card: back until one
        // goes, at most every event.
        let mut presses = 0;
        while b.count(".rl-timeline .rl-card").await == at_end {
            b.press('\u{e012}').await;
            presses += 1;
            assert!(presses < 60, "travelling back never took a card away");
        }
        let moment = b.text(".rl-scrub-moment").await.unwrap_or_default();
        assert!(moment.starts_with("event "), "{moment}");
        b.screenshot("recording-scrubbed").await;
        assert_eq!(
            asked_of_racelab(b).await,
            Vec::<String>::new(),
            "still nothing asked of racelab"
        );

        // A file from a later racelab, one cut short, one missing, one its host keeps from
        // other sites: each said in the embed's box.
        let said = said_for(b, &format!("{host}/later.racelab.json")).await;
        assert!(
            said.contains("this recording is in format 2, made by a later racelab"),
            "{said}"
        );
        let said = said_for(b, &format!("{host}/cut.racelab.json")).await;
        assert!(said.contains("this file is not a whole recording"), "{said}");
        b.screenshot("recording-cut").await;
        let said = said_for(b, &format!("{host}/missing.racelab.json")).await;
        assert!(
            said.contains("could not be fetched: the server answered HTTP 404"),
            "{said}"
        );
        let said = said_for(b, &format!("{closed}/ws.racelab.json")).await;
        assert!(said.contains("Access-Control-Allow-Origin"), "{said}");

        // Script in its text is text.
        b.goto(&format!("/embed/recording?src={host}/hostile.racelab.json"))
            .await;
        b.wait_for(".rl-verdict").await;
        let title = b.text(".rl-recording-title").await.unwrap_or_default();
        assert!(title.starts_with("<img src=x onerror="), "{title}");
        assert_eq!(
            b.count(".rl-main img, .rl-main script").await,
            0,
            "no element made from its text"
        );
        assert_eq!(
            b.js("return window.pwned === undefined;", vec![]).await,
            serde_json::json!(true)
        );
        b.screenshot("recording-hostile").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_finished_on_its_page_downloads_as_a_recording_that_plays_elsewhere() {
    run("recording_download", async |b: &Browser| {
        b.set_viewport(1280, 900).await;
        b.goto("/lab/isolation/write-skew?variant=serializable").await;
        b.wait_for("button.rl-run").await;
        assert_eq!(b.count("a.rl-download").await, 0, "nothing to download before a run");
        b.click("button.rl-run").await;
        b.wait_for(".rl-verdict").await;
        b.wait_for("a.rl-download").await;
        let href = b.attr("a.rl-download", "href").await.unwrap_or_default();
        assert!(href.starts_with("/api/runs/") && href.ends_with("/recording"), "{href}");
        assert!(
            b.attr("a.rl-download", "download").await.is_some(),
            "saved as a file, not opened"
        );
        b.screenshot("download-1280").await;
        // What the browser saves, asked as the link asks it.
        let saved = b
            .js(
                "return fetch(arguments[0]).then(r => r.text());",
                vec![serde_json::json!(href)],
            )
            .await;
        let saved = saved.as_str().unwrap_or_default().to_owned();
        let recorded = shared::recording::read(&saved).expect("the saved file is a recording");
        assert_eq!(
            Some(recorded.run.id.as_str()),
            href.strip_prefix("/api/runs/")
                .and_then(|r| r.strip_suffix("/recording"))
        );
        // The run's permalink offers the same file.
        b.goto(&format!("/runs/{}", recorded.run.id)).await;
        b.wait_for("a.rl-download").await;
        assert_eq!(b.attr("a.rl-download", "href").await.as_deref(), Some(href.as_str()));

        // Kept on another site, it plays there as it ran here.
        let host = static_host(vec![("mine.racelab.json", saved)]).await;
        b.set_viewport(680, 900).await;
        b.goto(&format!("/embed/recording?src={host}/mine.racelab.json")).await;
        b.wait_for(".rl-verdict").await;
        assert_eq!(b.attr(".rl-verdict", "data-kind").await.as_deref(), Some("prevented"));
        let recorded_on = b.text(".rl-recorded").await.unwrap_or_default();
        assert!(recorded_on.starts_with("recorded on PostgreSQL "), "{recorded_on}");
        let page = b.text("main").await.unwrap_or_default();
        assert!(page.contains("40001"), "bob's refused commit, with its SQLSTATE");
        b.screenshot("downloaded-played-680").await;
    })
    .await;
}

/// Two doctors at SERIALIZABLE, three steps each, no permutation listed: C(6, 3) = 20
/// interleavings, some of which PostgreSQL refuses with 40001.
const DOCTORS: &str = "setup { CREATE TABLE doctors (name text PRIMARY KEY, on_call bool NOT NULL);
  INSERT INTO doctors VALUES ('alice', true), ('bob', true); }
teardown { DROP TABLE doctors; }
session alice
setup { BEGIN ISOLATION LEVEL SERIALIZABLE; }
step a_count { SELECT count(*) FROM doctors WHERE on_call; }
step a_leave { UPDATE doctors SET on_call = false WHERE name = 'alice'; }
step a_commit { COMMIT; }
session bob
setup { BEGIN ISOLATION LEVEL SERIALIZABLE; }
step b_count { SELECT count(*) FROM doctors WHERE on_call; }
step b_leave { UPDATE doctors SET on_call = false WHERE name = 'bob'; }
step b_commit { COMMIT; }
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_specs_recording_draws_its_every_permutation_matrix_from_the_file() {
    let dir = std::env::temp_dir().join(format!("racelab-matrix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a folder");
    let spec = dir.join("doctors.spec");
    std::fs::write(&spec, DOCTORS).expect("the spec written");
    let out = dir.join("doctors.racelab.json");
    racelab(&["record".as_ref(), spec.as_os_str(), "-o".as_ref(), out.as_os_str()]).await;
    let text = std::fs::read_to_string(&out).expect("the recording");
    let _ = std::fs::remove_dir_all(&dir);
    let host = static_host(vec![("doctors.racelab.json", text)]).await;
    run("recording_matrix", async |b: &Browser| {
        b.set_viewport(680, 900).await;
        b.goto(&format!(
            "/embed/recording?src={host}/doctors.racelab.json&view=detailed"
        ))
        .await;
        b.wait_for(".rl-verdict").await;
        b.wait_for(".rl-matrix").await;
        assert_eq!(b.count(".rl-matrix-row").await, 20, "every interleaving, one row each");
        assert_eq!(b.count(".rl-matrix-open").await, 0, "no server to play a row on");
        let refused = b.attrs(".rl-matrix-step", "data-error").await;
        assert!(
            refused.iter().flatten().any(|code| code == "40001"),
            "SERIALIZABLE refused some interleavings: {refused:?}"
        );
        assert_eq!(
            asked_of_racelab(b).await,
            Vec::<String>::new(),
            "no request to racelab's API or socket"
        );
        assert!(!b.scrolls_sideways().await, "it fits 680 px");
        b.screenshot("matrix-680").await;
    })
    .await;
}

/// A folder served as a plain static host would serve it (files by path, `index.html` for a
/// folder, nothing else): its base URL.
async fn static_site(root: PathBuf) -> String {
    let app = Router::new().fallback_service(tower_http::services::ServeDir::new(root));
    serve(app).await
}

/// Every origin the current page and its frames fetched anything from.
async fn origins_asked(b: &Browser) -> Vec<String> {
    let names = b
        .js(
            "return [...new Set(performance.getEntriesByType('resource').map(e => new URL(e.name).origin))];",
            vec![],
        )
        .await;
    serde_json::from_value(names).expect("a list of origins")
}

/// A blog's folder, `name`, with the player exported into `racelab/` by `racelab export
/// --player` (what it printed is checked), and the committed recording at
/// `posts/ws.racelab.json`.
async fn exported_site(name: &str) -> PathBuf {
    let site = std::env::temp_dir().join(format!("racelab-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&site);
    std::fs::create_dir_all(site.join("posts")).expect("the site's folders");
    let player = site.join("racelab");
    let dist = harness::dist();
    let said = racelab(&[
        "export".as_ref(),
        "--player".as_ref(),
        player.as_os_str(),
        "--dist".as_ref(),
        dist.as_os_str(),
    ])
    .await;
    assert!(
        said.contains("<script src=\"/racelab/embed.js\" async></script>"),
        "it says what to paste: {said}"
    );
    for name in ["player.html", "embed.js"] {
        assert!(site.join("racelab").join(name).is_file(), "{name} written");
    }
    // The player app's wasm, not the full app's: the one a recording needs, and lighter.
    let wasm_of = |dir: &std::path::Path| {
        std::fs::read_dir(dir)
            .expect("a folder")
            .filter_map(Result::ok)
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with("_bg.wasm"))
            .collect::<Vec<_>>()
    };
    let (folder, _) = racelab::export::PLAYER_APP;
    assert_eq!(wasm_of(&player), wasm_of(&dist.join(folder)), "the player app went out");
    std::fs::write(site.join("posts/ws.racelab.json"), fixture()).expect("the recording");
    site
}

/// `racelab export --player`, hosted by a blog's static server with no racelab running
/// anywhere: the post's `<racelab-scenario src=…>` becomes the exported player, which plays the
/// recording beside the post, reports its height, and asks nothing of any other origin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exported_player_plays_a_recording_on_a_static_host_with_no_racelab_server() {
    let site = exported_site("export-site").await;
    std::fs::write(
        site.join("posts/write-skew.html"),
        "<!doctype html><meta charset=utf-8><title>Write skew</title>\
         <body style=\"max-width:680px;margin:0 auto;font:16px serif\">\
         <h1>Two managers, one budget</h1><p>Here it is, as it ran:</p>\
         <script src=\"/racelab/embed.js\" async></script>\
         <racelab-scenario src=\"ws.racelab.json\"></racelab-scenario><p>The end.</p></body>",
    )
    .expect("the post");
    let host = static_site(site.clone()).await;
    run_alone("exported_player", async |b: &Browser| {
        b.set_viewport(680, 900).await;
        b.goto_url(&format!("{host}/posts/write-skew.html")).await;
        b.wait_for("racelab-scenario iframe").await;
        let frame = b.attr("racelab-scenario iframe", "src").await.unwrap_or_default();
        assert_eq!(
            frame,
            format!(
                "{host}/racelab/player.html?src={}",
                urlencode(&format!("{host}/posts/ws.racelab.json"))
            )
        );
        b.client.enter_frame(0).await.expect("enter the player's iframe");
        b.wait_for(".rl-verdict").await;
        assert_eq!(b.attr(".rl-verdict", "data-kind").await.as_deref(), Some("prevented"));
        assert_eq!(
            b.text(".rl-recorded").await.as_deref(),
            Some("recorded on PostgreSQL 18.6, 6 Dec 2026")
        );
        let page = b.text("main").await.unwrap_or_default();
        assert!(page.contains("40001"), "bob's refused commit, with its SQLSTATE");
        b.wait_for(".rl-proof").await;
        assert_eq!(
            origins_asked(b).await,
            vec![host.clone()],
            "the player asked only its host"
        );
        b.client.enter_parent_frame().await.expect("back to the post");
        // The iframe takes the height the player reports: the verdict is not cut off.
        let height = b
            .wait_js(
                "the player's height",
                "const f = document.querySelector('racelab-scenario iframe'); \
                 return f.getBoundingClientRect().height > 400 && f.getBoundingClientRect().height;",
                vec![],
            )
            .await;
        assert!(height.as_f64().unwrap_or_default() > 400.0, "{height}");
        assert_eq!(
            origins_asked(b).await,
            vec![host.clone()],
            "the post asked only its host"
        );
        b.screenshot("post-680").await;
        b.set_viewport(360, 740).await;
        b.settle().await;
        assert!(!b.scrolls_sideways().await, "the post fits 360 px");
        b.screenshot("post-360").await;

        // The player alone, as an iframe pasted where a host strips scripts.
        b.goto_url(&format!("{host}/racelab/player.html?src=../posts/ws.racelab.json"))
            .await;
        b.wait_for(".rl-verdict").await;
        assert_eq!(b.attr(".rl-verdict", "data-kind").await.as_deref(), Some("prevented"));
    })
    .await;
    let _ = std::fs::remove_dir_all(&site);
}

/// `text` as `URLSearchParams` writes a value.
fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// `racelab record --html`: one page, the player and a race recorded just now on this machine's
/// PostgreSQL, that plays opened from disk (where a page may fetch nothing) and as an iframe on
/// a static host (where a host strips scripts from the post itself), asking nothing of any
/// server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_html_file_plays_from_disk_and_as_an_iframe_with_nothing_beside_it() {
    let site = std::env::temp_dir().join(format!("racelab-one-file-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&site);
    std::fs::create_dir_all(&site).expect("a folder");
    let page = site.join("write-skew.html");
    let dist = harness::dist();
    racelab(&[
        "record".as_ref(),
        "isolation/write-skew".as_ref(),
        "--variant".as_ref(),
        "serializable".as_ref(),
        "--html".as_ref(),
        "-o".as_ref(),
        page.as_os_str(),
        "--dist".as_ref(),
        dist.as_os_str(),
    ])
    .await;
    let html = std::fs::read_to_string(&page).expect("the page written");
    assert!(html.contains("<title>Write skew: two managers overspend a budget · racelab</title>"));
    std::fs::write(
        site.join("post.html"),
        "<!doctype html><meta charset=utf-8><title>A post</title><body style=\"max-width:680px;margin:0 auto\">\
         <p>As it ran:</p><iframe src=\"write-skew.html\" title=\"racelab\" style=\"width:100%;height:900px;border:0\"></iframe></body>",
    )
    .expect("the post");
    let host = static_site(site.clone()).await;
    run_alone("one_file", async |b: &Browser| {
        b.set_viewport(680, 900).await;
        b.goto_url(&format!("file://{}", page.display())).await;
        b.wait_for(".rl-verdict").await;
        assert_eq!(b.attr(".rl-verdict", "data-kind").await.as_deref(), Some("prevented"));
        let recorded_on = b.text(".rl-recorded").await.unwrap_or_default();
        assert!(recorded_on.starts_with("recorded on PostgreSQL "), "{recorded_on}");
        let lanes = b.attrs("[data-lane]", "data-lane").await;
        assert!(
            lanes.iter().flatten().any(|a| a == "alice") && lanes.iter().flatten().any(|a| a == "bob"),
            "{lanes:?}"
        );
        let text = b.text("main").await.unwrap_or_default();
        assert!(text.contains("40001"), "bob's refused commit, with its SQLSTATE");
        b.wait_for(".rl-proof").await;
        let fetched = b
            .js(
                "return performance.getEntriesByType('resource').map(e => e.name)\
                   .filter(n => !n.startsWith('data:') && !n.startsWith('blob:'));",
                vec![],
            )
            .await;
        assert_eq!(
            fetched,
            serde_json::json!([]),
            "nothing fetched from disk or any server"
        );
        assert!(!b.scrolls_sideways().await, "it fits 680 px");
        b.screenshot("file-680").await;
        b.set_viewport(360, 740).await;
        b.settle().await;
        assert!(!b.scrolls_sideways().await, "it fits 360 px");
        b.screenshot("file-360").await;

        // Pasted as an iframe in a post on a static host.
        b.set_viewport(680, 900).await;
        b.goto_url(&format!("{host}/post.html")).await;
        b.wait_for("iframe").await;
        b.client.enter_frame(0).await.expect("enter the iframe");
        b.wait_for(".rl-verdict").await;
        assert_eq!(b.attr(".rl-verdict", "data-kind").await.as_deref(), Some("prevented"));
        b.client.enter_parent_frame().await.expect("back to the post");
        assert_eq!(origins_asked(b).await, vec![host.clone()], "only the post's host");
        b.screenshot("iframe-680").await;
    })
    .await;
    let _ = std::fs::remove_dir_all(&site);
}

/// A live embed on a blog that hosts the exported player names its racelab and a recording to
/// fall back to: with the racelab up, the race plays live there; with it gone, the recording
/// plays instead, offering "Run it live" on that racelab for when it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_embed_falls_back_to_its_recording_when_its_racelab_does_not_answer() {
    let site = exported_site("fallback-site").await;
    let gone = format!("http://127.0.0.1:{}", harness::free_port());
    run("live_fallback", async |b: &Browser| {
        let embed = |server: &str| {
            format!(
                "<racelab-scenario scenario=\"isolation/write-skew\" variant=\"serializable\" \
                 server=\"{server}\" fallback=\"ws.racelab.json\" autoplay></racelab-scenario>"
            )
        };
        std::fs::write(
            site.join("posts/live.html"),
            format!(
                "<!doctype html><meta charset=utf-8><title>Live</title><body style=\"max-width:680px;margin:0 auto\">\
                 <script src=\"/racelab/embed.js\" async></script><h2>Up</h2>{}<h2>Gone</h2>{}</body>",
                embed(&b.base),
                embed(&gone)
            ),
        )
        .expect("the post");
        let host = static_site(site.clone()).await;
        b.set_viewport(680, 900).await;
        b.goto_url(&format!("{host}/posts/live.html")).await;
        let srcs = b
            .wait_js(
                "both embeds' frames",
                "const f = [...document.querySelectorAll('racelab-scenario iframe')].map(f => f.src); \
                 return f.length === 2 && f;",
                vec![],
            )
            .await;
        let srcs: Vec<String> = serde_json::from_value(srcs).expect("two addresses");
        assert_eq!(
            srcs[0],
            format!("{}/embed/isolation/write-skew?variant=serializable&autoplay=1", b.base),
            "the racelab that answers plays it live"
        );
        assert_eq!(
            srcs[1],
            format!(
                "{host}/racelab/player.html?variant=serializable&autoplay=1&src={}&live={}",
                urlencode(&format!("{host}/posts/ws.racelab.json")),
                urlencode(&gone)
            ),
            "the racelab that does not answer: its recording"
        );
        // Both report their heights: the live one from its racelab's origin.
        b.wait_js(
            "both frames sized to their runs",
            "return [...document.querySelectorAll('racelab-scenario iframe')]\
               .every(f => f.getBoundingClientRect().height > 400);",
            vec![],
        )
        .await;
        b.client.enter_frame(0).await.expect("the live embed");
        b.wait_for(".rl-verdict").await;
        assert_eq!(b.attr(".rl-verdict", "data-kind").await.as_deref(), Some("prevented"));
        b.client.enter_parent_frame().await.expect("back to the post");
        b.client.enter_frame(1).await.expect("the fallback");
        b.wait_for(".rl-verdict").await;
        assert_eq!(b.attr(".rl-verdict", "data-kind").await.as_deref(), Some("prevented"));
        assert_eq!(
            b.attr("a.rl-run-live", "href").await,
            Some(format!("{gone}/lab/isolation/write-skew?variant=serializable")),
            "run it live, there, when it is back"
        );
        b.client.enter_parent_frame().await.expect("back to the post");
        b.screenshot("post-680").await;
        b.set_viewport(360, 740).await;
        b.settle().await;
        assert!(!b.scrolls_sideways().await, "the post and both embeds fit 360 px");
        b.screenshot("post-360").await;
    })
    .await;
    let _ = std::fs::remove_dir_all(&site);
}

/// `racelab export --site`, for the isolation lab and the atlas, served by a plain static file
/// server with no racelab running: its index lists every variant of every scenario (but the
/// load test), from the catalog's own constants, and each link plays its race to its verdict;
/// its atlas page has every entry at every level, judged as PostgreSQL's documentation says
/// where it is strict (SERIALIZABLE allows none, nothing allows a dirty write or read), each
/// cell opening its run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exported_site_browses_from_its_index_to_every_race_and_plays_each() {
    let site = std::env::temp_dir().join(format!("racelab-site-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&site);
    let dist = harness::dist();
    racelab(&[
        "export".as_ref(),
        "--site".as_ref(),
        site.as_os_str(),
        "--only".as_ref(),
        "isolation".as_ref(),
        "--only".as_ref(),
        "atlas".as_ref(),
        "--dist".as_ref(),
        dist.as_os_str(),
    ])
    .await;
    let expected: Vec<String> = racelab::labs::LABS
        .iter()
        .flat_map(|lab| lab.scenarios.iter())
        .filter(|s| s.id.starts_with("isolation/") && !s.workload)
        .flat_map(|s| s.variants.iter().map(|(_, label, _)| (*label).to_owned()))
        .collect();
    let host = static_site(site.clone()).await;
    run_alone("exported_site", async |b: &Browser| {
        b.set_viewport(680, 900).await;
        b.goto_url(&format!("{host}/index.html")).await;
        b.wait_for("a.race").await;
        let labels = b.texts("a.race").await;
        assert_eq!(
            labels, expected,
            "every variant of every scenario, in the catalog's order"
        );
        assert_eq!(b.count("li.missing").await, 0, "nothing failed to record");
        b.screenshot("index-680").await;
        let links: Vec<String> = serde_json::from_value(
            b.js(
                "return [...document.querySelectorAll('a.race')].map(a => a.href);",
                vec![],
            )
            .await,
        )
        .expect("the links");
        for link in &links {
            b.goto_url(link).await;
            b.wait_for(".rl-verdict").await;
            let recorded = b.text(".rl-recorded").await.unwrap_or_default();
            // A race on MariaDB names MariaDB alone: it played nothing on PostgreSQL.
            let on = match link.contains(".mariadb-") {
                true => "recorded on MariaDB ",
                false => "recorded on PostgreSQL ",
            };
            assert!(
                recorded.starts_with(on) && !recorded.contains(" and "),
                "{link}: {recorded}"
            );
            assert_eq!(
                origins_asked(b).await,
                vec![host.clone()],
                "{link}: only the site's host"
            );
        }
        b.screenshot("last-race-680").await;

        b.goto_url(&format!("{host}/index.html")).await;
        b.click("a.atlas").await;
        b.wait_for("a.cell").await;
        let entries = shared::atlas::ENTRIES.len();
        assert_eq!(b.count("table tr").await, entries as u64 + 1, "a row an entry");
        assert_eq!(b.count("a.cell").await, (entries * shared::atlas::LEVELS.len()) as u64);
        let allowed = |column: usize| format!("table tr td:nth-child({}).allowed", column + 2);
        assert_eq!(b.count(&allowed(2)).await, 0, "SERIALIZABLE allows none");
        assert!(b.count(&allowed(0)).await >= 6, "READ COMMITTED allows the most");
        for dirty in ["g0", "g1a", "g1b", "g1c"] {
            let row = shared::atlas::ENTRIES
                .iter()
                .position(|e| e.id == dirty)
                .expect("an entry");
            let cells = format!("table tr:nth-child({}) td.allowed", row + 2);
            assert_eq!(b.count(&cells).await, 0, "{dirty}: never allowed");
        }
        b.screenshot("atlas-680").await;
        b.set_viewport(360, 740).await;
        b.settle().await;
        assert!(!b.scrolls_sideways().await, "the atlas fits 360 px");
        b.screenshot("atlas-360").await;
        b.goto_url(&format!("{host}/index.html")).await;
        b.wait_for("a.race").await;
        assert!(!b.scrolls_sideways().await, "the index fits 360 px");
        b.screenshot("index-360").await;
        b.goto_url(&format!("{host}/atlas.html")).await;
        b.wait_for("a.cell").await;
        b.set_viewport(680, 900).await;
        // A cell opens its run: write skew at REPEATABLE READ, allowed, with why.
        let row = shared::atlas::ENTRIES
            .iter()
            .position(|e| e.id == "g2-item")
            .expect("write skew");
        b.click(&format!("table tr:nth-child({}) td:nth-child(3) a", row + 2))
            .await;
        b.wait_for(".rl-proof").await;
        let proof = b.text(".rl-proof").await.unwrap_or_default();
        assert!(proof.contains("write skew"), "{proof}");
        assert_eq!(origins_asked(b).await, vec![host.clone()], "only the site's host");
    })
    .await;
    let _ = std::fs::remove_dir_all(&site);
}

/// `racelab record --svg`: the animated picture and its poster, as a README shows them: each an
/// `<img>` on a page of a plain static host, drawn at its size, the picture with no script.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_picture_and_its_poster_show_as_images() {
    let site = std::env::temp_dir().join(format!("racelab-picture-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&site);
    std::fs::create_dir_all(&site).expect("a folder");
    let svg = site.join("write-skew.svg");
    racelab(&[
        "record".as_ref(),
        "isolation/write-skew".as_ref(),
        "--variant".as_ref(),
        "serializable".as_ref(),
        "--svg".as_ref(),
        "-o".as_ref(),
        svg.as_os_str(),
    ])
    .await;
    let picture = std::fs::read_to_string(&svg).expect("the picture");
    assert!(
        picture.contains("@keyframes") && !picture.contains("<script"),
        "CSS, no script"
    );
    let poster = std::fs::read(site.join("write-skew.png")).expect("the poster beside it");
    assert!(poster.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    std::fs::write(
        site.join("README.html"),
        "<!doctype html><meta charset=utf-8><title>README</title><body style=\"max-width:900px\">\
         <h1>Write skew</h1><img id=moving src=\"write-skew.svg\" alt=\"the race\" style=\"width:100%\">\
         <img id=poster src=\"write-skew.png\" alt=\"its poster\" style=\"width:100%\"></body>",
    )
    .expect("the page");
    let host = static_site(site.clone()).await;
    run_alone("picture", async |b: &Browser| {
        b.set_viewport(900, 900).await;
        b.goto_url(&format!("{host}/README.html")).await;
        let sizes = b
            .wait_js(
                "both images drawn",
                "const i = [...document.images]; \
                 return i.every(x => x.complete && x.naturalWidth > 0) && i.map(x => x.naturalWidth);",
                vec![],
            )
            .await;
        assert_eq!(sizes, serde_json::json!([1200, 1200]), "each at its own width");
        b.screenshot("playing").await;
        // Every step and the verdict in: 48 events' worth of steps at 0.45 s each at most.
        tokio::time::sleep(std::time::Duration::from_secs(12)).await;
        b.screenshot("played").await;
    })
    .await;
    let _ = std::fs::remove_dir_all(&site);
}

/// `predict=1` on a recording: the scenario's question comes first and the race waits for the
/// reader's pick (the answer is in the file from the start, and stays hidden); once picked, the
/// race shows, and the choice the run revealed is marked right, with why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_asks_its_question_before_it_shows_the_race() {
    let revealed = shared::recording::read(&fixture())
        .expect("the fixture reads")
        .run
        .events
        .iter()
        .find_map(|e| match &e.kind {
            shared::EventKind::Reveal { choice, .. } => Some(choice.clone()),
            _ => None,
        })
        .expect("the fixture's run revealed its answer");
    let site = exported_site("predict-site").await;
    let host = static_site(site.clone()).await;
    run_alone("recording_predict", async |b: &Browser| {
        b.set_viewport(680, 900).await;
        b.goto_url(&format!(
            "{host}/racelab/player.html?src=../posts/ws.racelab.json&predict=1"
        ))
        .await;
        b.wait_for(".rl-predict").await;
        let choices = b.attrs(".rl-choice", "data-choice").await;
        assert!(choices.len() >= 2, "{choices:?}");
        assert_eq!(b.count(".rl-verdict").await, 0, "the race waits for the pick");
        assert_eq!(b.count("[data-right]").await, 0, "the answer is not shown yet");
        b.screenshot("asked-680").await;
        let wrong = choices
            .iter()
            .flatten()
            .find(|c| **c != revealed)
            .expect("a choice that is not the answer")
            .clone();
        b.click(&format!(".rl-choice[data-choice=\"{wrong}\"] input")).await;
        b.wait_for(".rl-verdict").await;
        assert_eq!(
            b.attr(&format!(".rl-choice[data-choice=\"{revealed}\"]"), "data-right")
                .await
                .as_deref(),
            Some("true"),
            "the run's answer is marked"
        );
        assert_eq!(
            b.attr(&format!(".rl-choice[data-choice=\"{wrong}\"]"), "data-right")
                .await
                .as_deref(),
            Some("false")
        );
        assert!(b.count(".rl-reveal-why").await == 1, "and why");
        b.screenshot("revealed-680").await;
    })
    .await;
    let _ = std::fs::remove_dir_all(&site);
}

/// `mode=step` on a recording: the race starts before its first event, and the reader steps it
/// forward a statement at a time (each press plays one step and what it led to, and stops before
/// the next) to its verdict, and back again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_in_step_mode_starts_before_its_first_event_and_steps_to_its_verdict() {
    let played = shared::recording::read(&fixture())
        .expect("the fixture reads")
        .events_to_play();
    let events = played.len();
    let site = exported_site("step-site").await;
    let host = static_site(site.clone()).await;
    run_alone("recording_step", async |b: &Browser| {
        b.set_viewport(680, 900).await;
        b.goto_url(&format!(
            "{host}/racelab/player.html?src=../posts/ws.racelab.json&mode=step&view=detailed"
        ))
        .await;
        b.wait_for(".rl-scrub-moment").await;
        assert_eq!(b.attr(".rl-scrub-moment", "data-at").await.as_deref(), Some("0"));
        assert_eq!(
            b.text(".rl-scrub-moment").await.as_deref(),
            Some("before the first event")
        );
        assert_eq!(b.count(".rl-timeline .rl-card").await, 0, "nothing has happened yet");
        assert_eq!(b.count(".rl-verdict").await, 0);
        assert_eq!(b.count(".rl-proof").await, 0, "why is kept for the end");
        b.screenshot("start-680").await;
        let mut cards = 0;
        let mut at = 0;
        let mut stops = vec![0];
        while b.count(".rl-verdict").await == 0 {
            b.click(".rl-scrub-forward").await;
            let now = moment(b).await;
            assert!(
                one_statement(&played, at, now),
                "one press, one statement: from {at} to {now} of {events}"
            );
            let drawn = b.count(".rl-timeline .rl-card").await;
            assert!(
                drawn > cards,
                "each press draws the statement's card: {cards} then {drawn}"
            );
            (at, cards) = (now, drawn);
            stops.push(now);
            assert!(stops.len() <= events, "the verdict within the file's {events} events");
        }
        assert!(cards >= 8, "every statement drawn on the way: {cards}");
        while b.count(".rl-proof").await == 0 {
            assert!(
                b.attr(".rl-scrub-forward", "disabled").await.is_none(),
                "why, at the end"
            );
            b.click(".rl-scrub-forward").await;
        }
        b.screenshot("stepped-680").await;
        // Back, a statement at a time, through the same stops.
        let end = moment(b).await;
        if stops.last() != Some(&end) {
            stops.push(end);
        }
        for stop in stops.iter().rev().skip(1) {
            b.click(".rl-scrub-back").await;
            assert_eq!(moment(b).await, *stop, "back the way it came");
        }
        assert!(b.attr(".rl-scrub-back", "disabled").await.is_some(), "at the start");
    })
    .await;
    let _ = std::fs::remove_dir_all(&site);
}

/// The player patches its page as the reader travels, rather than drawing it afresh: a line the
/// reader opened, the transcript they unfolded and the button they pressed stay as they were,
/// and the proof's arrows are drawn on the detailed lanes between the steps played by then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_reader_opened_stays_open_and_focused_as_they_travel() {
    let host = static_host(vec![("ws.racelab.json", fixture())]).await;
    run("recording_kept", async |b: &Browser| {
        b.set_viewport(680, 900).await;
        b.goto(&format!("/embed/recording?src={host}/ws.racelab.json&mode=step"))
            .await;
        b.wait_for(".rl-scrub-forward").await;
        b.click(".rl-scrub-forward").await;
        b.wait_for("details.rl-line summary").await;
        b.click("details.rl-line summary").await;
        b.click(".rl-transcript summary").await;
        let opened = "return [...document.querySelectorAll('details.rl-line')].map(d => d.open);";
        assert_eq!(b.js(opened, vec![]).await, serde_json::json!([true]));
        let mut lines = 1;
        while b.attr(".rl-scrub-forward", "disabled").await.is_none() {
            b.click(".rl-scrub-forward").await;
            let now = b.js(opened, vec![]).await;
            let now = now.as_array().cloned().unwrap_or_default();
            assert!(now.len() >= lines, "a press never takes a line away: {now:?}");
            assert_eq!(
                now.first(),
                Some(&serde_json::json!(true)),
                "the line opened stays open"
            );
            assert!(
                now.iter().skip(1).all(|open| open == &serde_json::json!(false)),
                "and only it: {now:?}"
            );
            lines = now.len();
            assert_eq!(
                b.count(".rl-transcript[open]").await,
                1,
                "the transcript stays unfolded"
            );
            let focused = b.js("return document.activeElement.className;", vec![]).await;
            if b.attr(".rl-scrub-forward", "disabled").await.is_none() {
                assert_eq!(
                    focused,
                    serde_json::json!("rl-scrub-forward"),
                    "the focus stays where it was"
                );
            }
        }
        assert!(lines >= 8, "every statement's line: {lines}");

        // Detailed: the proof's arrows between the cards of the steps the cycle joins, none
        // before those steps have played.
        b.goto(&format!("/embed/recording?src={host}/ws.racelab.json&view=detailed"))
            .await;
        b.wait_for(".rl-proof-arrows .rl-proof-edge").await;
        let cycle = ".rl-timeline-wrap .rl-proof-arrows .rl-proof-edge[data-dep=\"rw\"][data-cycle=\"true\"]";
        assert_eq!(b.count(cycle).await, 2, "alice's and bob's rw edges");
        let inside = b
            .js(
                "const wrap = document.querySelector('.rl-timeline-wrap').getBoundingClientRect(); \
                 return [...document.querySelectorAll('.rl-timeline-wrap .rl-proof-edge line')].every(l => { \
                 const r = l.getBoundingClientRect(); \
                 return r.left >= wrap.left - 1 && r.right <= wrap.right + 1 && r.top >= wrap.top - 1 \
                 && r.bottom <= wrap.bottom + 1; });",
                vec![],
            )
            .await;
        assert_eq!(inside, serde_json::json!(true), "every arrow on the lanes");
        b.screenshot("arrows-680").await;
        b.js("document.querySelector('.rl-scrub').focus(); return true;", vec![])
            .await;
        b.press('\u{e011}').await;
        assert_eq!(moment(b).await, 0, "Home: the start");
        assert_eq!(b.count(".rl-proof-arrows").await, 0, "no step played, no arrow");
    })
    .await;
}

/// The moment the scrubber shows: how many events have happened.
async fn moment(b: &Browser) -> usize {
    b.attr(".rl-scrub-moment", "data-at")
        .await
        .and_then(|at| at.parse().ok())
        .unwrap_or(usize::MAX)
}

/// Whether going from moment `from` to `to` plays exactly one statement of `events`: one step
/// with what it led to, stopping before the next step (or at the end).
fn one_statement(events: &[shared::Event], from: usize, to: usize) -> bool {
    let is_step = |e: &shared::Event| matches!(e.kind, shared::EventKind::Step { .. });
    to > from
        && to <= events.len()
        && events[from..to].iter().filter(|e| is_step(e)).count() == 1
        && events.get(to).is_none_or(is_step)
}

/// Types `text` into the input `selector` names, as a reader would (its `input` event fired).
async fn type_into(b: &Browser, selector: &str, text: &str) {
    b.js(
        "const i = document.querySelector(arguments[0]); i.value = arguments[1]; \
         i.dispatchEvent(new Event('input', { bubbles: true })); return true;",
        vec![serde_json::json!(selector), serde_json::json!(text)],
    )
    .await;
}

/// An author marks two steps of a finished write skew as chapters, each with a caption (one
/// with HTML in it); the downloaded recording, on a static host with no racelab, starts before
/// its first event and stops before each marked step: the caption is shown (as text), neither a
/// step nor the slider goes past it until the reader asks to see what happens, and then the
/// race plays on to its verdict and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chapters_marked_on_a_finished_run_stop_its_recording_and_ask_the_reader() {
    let site = exported_site("chapters-site").await;
    let mut saved = String::new();
    let mut marked: Vec<u64> = Vec::new();
    run("chapters_marked", async |b: &Browser| {
        b.set_viewport(1280, 900).await;
        b.goto("/lab/isolation/write-skew?variant=serializable").await;
        b.wait_for("button.rl-run").await;
        b.click("button.rl-run").await;
        b.wait_for(".rl-verdict").await;
        b.wait_for("details.rl-chapters").await;
        b.click("details.rl-chapters > summary").await;
        let seqs: Vec<u64> = b
            .attrs(".rl-chapter-step", "data-seq")
            .await
            .into_iter()
            .filter_map(|s| s?.parse().ok())
            .collect();
        assert!(seqs.len() >= 6, "every step of the run to mark: {seqs:?}");
        // bob's first read, and the last step (bob's refused commit).
        marked = vec![seqs[2], seqs[seqs.len() - 1]];
        for (seq, caption) in marked.iter().zip([
            "<b>alice</b> sums what is approved so far: what will she see?",
            "bob's retry commits: will it go through?",
        ]) {
            let step = format!(".rl-chapter-step[data-seq=\"{seq}\"]");
            assert!(
                b.attr(&format!("{step} .rl-chapter-caption"), "hidden").await.is_some(),
                "no caption unmarked"
            );
            b.click(&format!("{step} .rl-chapter-mark")).await;
            assert_eq!(b.attr(&format!("{step} .rl-chapter-caption"), "hidden").await, None);
            type_into(b, &format!("{step} .rl-chapter-caption"), caption).await;
        }
        // Unticked and ticked again, a step keeps its caption.
        let first = format!(".rl-chapter-step[data-seq=\"{}\"]", marked[0]);
        b.click(&format!("{first} .rl-chapter-mark")).await;
        let unticked = b.attr("a.rl-download", "href").await.unwrap_or_default();
        assert!(!unticked.contains(&format!("chapter={}%3A", marked[0])), "{unticked}");
        b.click(&format!("{first} .rl-chapter-mark")).await;
        let kept = b
            .js(
                "return document.querySelector(arguments[0]).value;",
                vec![serde_json::json!(format!("{first} .rl-chapter-caption"))],
            )
            .await;
        assert_eq!(
            kept.as_str(),
            Some("<b>alice</b> sums what is approved so far: what will she see?")
        );
        // A step marked with no caption is said to be left out, and is.
        assert_eq!(b.count(".rl-chapter-note").await, 0);
        b.click(&format!(".rl-chapter-step[data-seq=\"{}\"] .rl-chapter-mark", seqs[0]))
            .await;
        assert_eq!(
            b.text(".rl-chapter-note").await.as_deref(),
            Some("One marked step has no caption yet: the download leaves it out.")
        );
        let href = b.attr("a.rl-download", "href").await.unwrap_or_default();
        assert!(href.contains(&format!("?chapter={}%3A", marked[0])), "{href}");
        b.screenshot("marking-1280").await;
        let text = b
            .js(
                "return fetch(arguments[0]).then(r => r.text());",
                vec![serde_json::json!(href)],
            )
            .await;
        saved = text.as_str().unwrap_or_default().to_owned();
    })
    .await;
    let recorded = shared::recording::read(&saved).expect("the download is a recording");
    let chapters: Vec<u64> = recorded.chapters.iter().map(|c| c.at).collect();
    assert_eq!(chapters, marked);
    std::fs::write(site.join("posts/chapters.racelab.json"), &saved).expect("the recording");
    let host = static_site(site.clone()).await;
    let pauses = shared::chapters::Pauses::of(&recorded.chapters, &recorded.events_to_play());
    run_alone("chapters_played", async |b: &Browser| {
        b.set_viewport(680, 900).await;
        b.goto_url(&format!(
            "{host}/racelab/player.html?src=../posts/chapters.racelab.json&view=detailed"
        ))
        .await;
        b.wait_for(".rl-scrub-moment").await;
        assert_eq!(
            b.attr(".rl-scrub-moment", "data-at").await.as_deref(),
            Some("0"),
            "from the start"
        );
        for (n, (pause, caption)) in pauses.0.iter().enumerate() {
            while b.count(".rl-chapter").await == 0 {
                assert!(
                    b.attr(".rl-scrub-forward", "disabled").await.is_none(),
                    "chapter {n} before the end"
                );
                b.click(".rl-scrub-forward").await;
            }
            assert_eq!(
                b.attr(".rl-scrub-moment", "data-at").await,
                Some(pause.to_string()),
                "before its step"
            );
            assert_eq!(
                b.text(".rl-chapter-count").await,
                Some(format!("Chapter {} of 2: what happens next?", n + 1))
            );
            assert_eq!(
                b.text(".rl-chapter-text").await.as_deref(),
                Some(caption.as_str()),
                "as text"
            );
            assert_eq!(b.count(".rl-chapter-text b").await, 0, "no markup from the file");
            assert!(
                b.attr(".rl-scrub-forward", "disabled").await.is_some(),
                "no step past it"
            );
            // Nor the slider: dragged to the end, it stays at the chapter.
            b.scrub_to_end().await;
            assert_eq!(b.attr(".rl-scrub-moment", "data-at").await, Some(pause.to_string()));
            assert_eq!(
                b.count(".rl-verdict").await,
                0,
                "the end is not shown before its chapters"
            );
            if n == 0 {
                b.screenshot("chapter-680").await;
                b.set_viewport(360, 740).await;
                b.settle().await;
                assert!(!b.scrolls_sideways().await, "the chapter fits 360 px");
                b.screenshot("chapter-360").await;
                b.set_viewport(680, 900).await;
            }
            b.click(".rl-chapter-go").await;
            let played = moment(b).await;
            assert!(
                one_statement(&recorded.events_to_play(), *pause, played),
                "its statement plays: from {pause} to {played}"
            );
            assert_eq!(b.count(".rl-chapter").await, 0);
        }
        while b.count(".rl-proof").await == 0 {
            assert!(b.attr(".rl-scrub-forward", "disabled").await.is_none(), "on to the end");
            b.click(".rl-scrub-forward").await;
        }
        assert_eq!(b.attr(".rl-verdict", "data-kind").await.as_deref(), Some("prevented"));
        assert_eq!(
            b.js("return window.pwned === undefined;", vec![]).await,
            serde_json::json!(true)
        );
    })
    .await;
    let _ = std::fs::remove_dir_all(&site);
}
