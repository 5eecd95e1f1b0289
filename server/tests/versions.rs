//! Picking the PostgreSQL version, in headless Chromium against the real server on the machine's
//! PostgreSQL and PostgreSQL 18.6: the scenario page's picker, its address, the run's "played
//! on", and the same variant on both versions side by side with a line that says whether their
//! transcripts agree. Screenshots in `target/screenshots/`.

mod common;
#[allow(dead_code)]
#[path = "browser/harness.rs"]
mod harness;

use harness::{Browser, Readers, run_on};
use std::time::Duration;

/// The server a stored run's header names, read through the API from its permalink
/// (`/runs/<id>`).
async fn stored_server(b: &Browser, run: &str) -> serde_json::Value {
    b.js(
        "return fetch('/api' + arguments[0]).then(r => r.json()).then(r => r.events[0].server);",
        vec![serde_json::json!(run)],
    )
    .await
}

/// The run on the page finished, and says where it played.
async fn played_on(b: &Browser, panel: &str) -> String {
    b.wait_for_within(&format!("{panel} .rl-verdict"), Duration::from_secs(30))
        .await;
    b.wait_for(&format!("{panel} .rl-played-on")).await;
    b.text(&format!("{panel} .rl-played-on")).await.unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_picks_postgresql_18_and_compares_it_with_the_machines() {
    let engine = common::versions::engine_with_18().await;
    let home = engine.default_postgres();
    run_on("versions", Readers::Anonymous, Some(engine), async |b| {
        b.goto("/lab/isolation/write-skew?variant=serializable").await;
        b.wait_for(".rl-version select").await;
        let options = b.texts(".rl-version option").await;
        assert_eq!(options.len(), 2, "{options:?}");
        assert!(options[0].starts_with(&format!("PostgreSQL {home}.")), "{options:?}");
        assert_eq!(options[1], "PostgreSQL 18.6");

        // Played on the machine's first, as the picker says.
        b.click(".rl-run").await;
        let first = played_on(b, ".rl-run-panel").await;
        assert!(first.starts_with(&format!("played on PostgreSQL {home}.")), "{first}");

        // Then on 18: the address keeps the choice, and the run says where it played.
        b.select(".rl-version select", "18").await;
        b.wait_js(
            "the address names the version",
            "return location.search.includes('postgres=18');",
            vec![],
        )
        .await;
        b.click(".rl-run").await;
        b.wait_js(
            "the run plays on 18",
            "const p = document.querySelector('.rl-played-on'); return p && p.textContent === 'played on PostgreSQL 18.6';",
            vec![],
        )
        .await;
        played_on(b, ".rl-run-panel").await;
        b.screenshot("scenario-18").await;
        b.set_viewport(360, 800).await;
        assert!(!b.scrolls_sideways().await, "the picker fits a phone");
        b.screenshot("scenario-18-360").await;
        b.reset_viewport().await;

        // The same variant on both versions, side by side.
        let href = b.attr(".rl-compare-versions", "href").await.unwrap_or_default();
        assert_eq!(
            href,
            format!("/lab/isolation/write-skew/compare?variant=serializable&versions={home},18")
        );
        b.click(".rl-compare-versions").await;
        b.wait_for(".rl-compare-col[data-postgres=\"18\"]").await;
        let home_col = format!(".rl-compare-col[data-postgres=\"{home}\"]");
        let on_home = played_on(b, &home_col).await;
        let on_18 = played_on(b, ".rl-compare-col[data-postgres=\"18\"]").await;
        assert!(on_home.starts_with(&format!("played on PostgreSQL {home}.")), "{on_home}");
        assert_eq!(on_18, "played on PostgreSQL 18.6");
        b.wait_for_within(".rl-versions-agree, .rl-versions-differ", Duration::from_secs(30))
            .await;
        // Write skew's transcript is the tutorial's on both (tests/isolation.rs): the page says
        // they agree.
        assert_eq!(
            b.text(".rl-versions-agree").await.as_deref(),
            Some("The transcripts are the same on every version.")
        );
        assert_eq!(b.count(".rl-versions-differ").await, 0);
        b.screenshot("compare-15-18").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_atlas_shows_a_column_per_version() {
    let engine = common::versions::engine_with_18().await;
    let home = engine.default_postgres();
    run_on("versions-atlas", Readers::Anonymous, Some(engine), async |b| {
        b.goto("/atlas").await;
        b.wait_for_within(".rl-atlas-matrix", Duration::from_secs(90)).await;
        // The API says what it cannot do, in JSON.
        let refused = b
            .js(
                "return Promise.all(['17', 'x'].map(v => fetch('/api/atlas?postgres=' + v)
                   .then(r => r.json().then(j => [r.status, j.error]))));",
                vec![],
            )
            .await;
        assert_eq!(
            refused,
            serde_json::json!([
                [
                    404,
                    format!("no PostgreSQL 17 server here; runs play on PostgreSQL {home} or 18")
                ],
                [400, "postgres must be a major version such as 18, not \"x\""]
            ])
        );

        assert_eq!(b.attr(".rl-atlas-matrix", "data-versions").await.as_deref(), Some("2"));
        let heads = b.texts(".rl-atlas-versions th").await;
        assert_eq!(heads.len(), 6, "each level's two versions: {heads:?}");
        assert!(heads[0].starts_with(&format!("PostgreSQL {home}.")), "{heads:?}");
        assert_eq!(heads[1], "PostgreSQL 18.6");
        let cells = shared::atlas::ENTRIES.len() * shared::atlas::LEVELS.len();
        assert_eq!(b.count(".rl-atlas-cell[data-postgres=\"18\"]").await, cells as u64);
        assert_eq!(
            b.count(&format!(".rl-atlas-cell[data-postgres=\"{home}\"]")).await,
            cells as u64
        );
        // Every cell on 18 opens a run that played there.
        let run = b
            .attr(
                "tr[data-entry=\"g2-item\"] td[data-level=\"REPEATABLE READ\"][data-postgres=\"18\"] .rl-atlas-run",
                "href",
            )
            .await
            .unwrap_or_default();
        let stored = stored_server(b, &run).await;
        assert_eq!(stored, serde_json::json!("PostgreSQL 18.6"));
        // Both versions agree with the documentation (tests/atlas.rs), so with each other.
        assert_eq!(b.count(".rl-atlas-cell[data-differs=\"true\"]").await, 0);
        b.screenshot("desktop").await;
        b.set_viewport(360, 800).await;
        assert!(!b.scrolls_sideways().await, "the atlas's cards fit a phone");
        b.screenshot("360").await;
    })
    .await;
}

/// A blog author on the page at PostgreSQL 18 opens "Embed this": the snippets name 18 (and
/// nothing when they pick the first version, every embed's default). Pasted into a post on
/// another site, the embed says it plays on 18, and its run played there. An embed asking for
/// a version no server plays says so instead of playing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blog_author_embeds_the_race_on_postgresql_18() {
    let engine = common::versions::engine_with_18().await;
    let home = engine.default_postgres();
    run_on("versions-embed", Readers::Anonymous, Some(engine), async |b| {
        b.goto("/lab/isolation/write-skew?variant=serializable&postgres=18").await;
        b.click(".rl-embed-code > summary").await;
        b.wait_for(".rl-embed-postgres").await;
        let options = b.texts(".rl-embed-postgres option").await;
        assert_eq!(options.len(), 2, "{options:?}");
        assert_eq!(options[1], "PostgreSQL 18.6");
        assert_eq!(
            b.js("return document.querySelector('.rl-embed-postgres').value;", vec![]).await,
            serde_json::json!("18"),
            "the page's version is the embed's"
        );
        let component = b.snippet("component").await;
        assert!(
            component.starts_with(
                "<racelab-scenario scenario=\"isolation/write-skew\" variant=\"serializable\" theme=\"host\" autoplay=\"visible\" postgres=\"18\"></racelab-scenario>"
            ),
            "{component}"
        );
        assert!(b.snippet("iframe").await.contains("&amp;postgres=18\""));
        assert_eq!(
            b.snippet("link").await,
            format!("{}/lab/isolation/write-skew?variant=serializable&postgres=18", b.base)
        );
        // The first version goes unnamed: an embed plays on it unless told otherwise.
        b.select(".rl-embed-postgres", &home.to_string()).await;
        assert!(!b.snippet("component").await.contains("postgres"));
        b.select(".rl-embed-postgres", "18").await;
        b.select_label(".rl-embed-autoplay", "as soon as the page loads").await;
        let component = b.snippet("component").await;
        b.screenshot("embed-panel-18").await;
        b.set_viewport(360, 800).await;
        assert!(!b.scrolls_sideways().await, "the embed panel fits a phone");
        b.screenshot("embed-panel-18-360").await;
        b.reset_viewport().await;

        let host = harness::Host::start().await;
        host.paste("white", &format!("<p>A post about PostgreSQL 18.</p>{component}"));
        b.goto_url(&host.url()).await;
        b.wait_for("racelab-scenario iframe").await;
        b.client.enter_frame(0).await.expect("the embed");
        b.wait_for_within(".rl-verdict", Duration::from_secs(30)).await;
        assert_eq!(
            b.text(".rl-embed-by").await.as_deref(),
            Some("· racelab on PostgreSQL 18"),
            "the embed says where it plays"
        );
        let run = b.attr(".rl-permalink", "href").await.unwrap_or_default();
        let server = stored_server(b, &run).await;
        assert_eq!(server, serde_json::json!("PostgreSQL 18.6"), "run {run}");
        b.screenshot("embed-18").await;
        b.client.enter_parent_frame().await.expect("the post");

        // A version no server plays: a clear refusal, no run.
        b.goto("/embed/isolation/write-skew?variant=serializable&postgres=17&autoplay=1").await;
        b.wait_for(".rl-status .rl-refused").await;
        let refused = b.text(".rl-status .rl-refused").await.unwrap_or_default();
        assert!(
            refused.contains(&format!("no PostgreSQL 17 server here; runs play on PostgreSQL {home} or 18")),
            "{refused}"
        );
        assert_eq!(b.count(".rl-verdict").await, 0);
    })
    .await;
}

/// A trainer on the page at PostgreSQL 18 opens a room: its runs play on 18 until the trainer
/// picks another version there, and both the trainer's page and a participant's say where each
/// run played.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trainer_plays_the_rooms_race_on_postgresql_18() {
    let engine = common::versions::engine_with_18().await;
    let home = engine.default_postgres();
    run_on("versions-room", Readers::Anonymous, Some(engine), async |b| {
        b.goto("/lab/isolation/write-skew?variant=serializable&postgres=18")
            .await;
        b.click("button.rl-teach").await;
        b.wait_for(".rl-room[data-trainer=\"true\"] .rl-room-controls .rl-version select")
            .await;
        assert_eq!(
            b.js(
                "return document.querySelector('.rl-room-controls .rl-version select').value;",
                vec![]
            )
            .await,
            serde_json::json!("18"),
            "the room starts on the page's version"
        );
        assert!(
            b.js("return location.search;", vec![])
                .await
                .as_str()
                .unwrap_or_default()
                .contains("postgres=18"),
            "a reload keeps it"
        );
        let room = b.attr(".rl-room", "data-room").await.expect("a room code");
        let trainer = b.client.window().await.expect("the trainer's window");
        let participant = b.client.new_window(false).await.expect("a window").handle;
        b.client.switch_to_window(participant.clone()).await.expect("switch");
        b.goto(&format!("/room/{room}")).await;
        b.wait_for(".rl-room[data-trainer=\"false\"]").await;
        assert_eq!(b.count(".rl-version").await, 0, "only the trainer picks");

        // On 18 as opened, then on the first version, picked in the room.
        for (pick, wanted) in [
            (None, "played on PostgreSQL 18.6".to_owned()),
            (Some(home), format!("played on PostgreSQL {home}.")),
        ] {
            b.client.switch_to_window(trainer.clone()).await.expect("switch");
            if let Some(version) = pick {
                b.select(".rl-room-controls .rl-version select", &version.to_string()).await;
            }
            b.click(".rl-room-controls button.rl-run").await;
            for (window, who) in [(trainer.clone(), "trainer"), (participant.clone(), "participant")] {
                b.client.switch_to_window(window).await.expect("switch");
                b.wait_js(
                    &format!("the {who}'s page to say where the run played"),
                    "const p = document.querySelector('.rl-room .rl-played-on'); \
                     return !!p && p.textContent.startsWith(arguments[0]) && !!document.querySelector('.rl-room .rl-verdict');",
                    vec![serde_json::json!(wanted)],
                )
                .await;
                b.screenshot(&format!("room-{}-{who}", pick.unwrap_or(18))).await;
                b.set_viewport(360, 800).await;
                assert!(!b.scrolls_sideways().await, "the {who}'s page fits a phone");
                b.reset_viewport().await;
            }
        }
        // Closed as a trainer closes it: nothing of the room is left in Redis.
        b.client.switch_to_window(trainer.clone()).await.expect("switch");
        b.click("button.rl-room-close").await;
        b.click("button.rl-room-close-yes").await;
        b.wait_for(".rl-room[data-closed=\"true\"] .rl-room-ended").await;
    })
    .await;
}
