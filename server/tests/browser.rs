//! End-to-end tests of the browser app in headless Chromium, against the real server.
//!
//! Why: the app's unit tests check its pure parts (routes, the run state folded from frames), and
//! the websocket tests check the protocol; only a real browser shows that the built wasm bundle
//! mounts, talks to `/ws`, and renders what app/README.md's DOM contract promises — and the
//! screenshots in `target/screenshots/` show what a reader would see.
//!
//! Each test starts the real router in-process on port 0 serving `dist/` (build the app first:
//! scripts/test builds it), its own chromedriver and a fresh Chromium profile, and cleans all of
//! that up even when it fails (see `browser/harness.rs`). Runs play on the real PostgreSQL at
//! `DATABASE_URL`. Waits poll the DOM every 50 ms for at most 20 s; no test sleeps for a fixed time.
//! `measure_run_latency_and_embed_first_paint` asserts nothing: it prints timings and appends
//! them to `target/screenshots/measurements.txt`.

#![allow(clippy::too_many_lines, reason = "a test reads top to bottom as the story it checks")]

mod common;
// Shared with the other browser test binaries, each of which uses part of it.
#[allow(dead_code)]
#[path = "browser/harness.rs"]
mod harness;
#[path = "browser/measure.rs"]
mod measure;

use harness::{Browser, HOST_ELEMENTS_ROUTE, HOST_ROUTES, choose_variant, record_measurement, run};
use serde_json::json;
use std::time::{Duration, Instant};

const WRITE_SKEW: &str = "/lab/isolation/write-skew";
const VARIANTS: [&str; 3] = ["read-committed", "repeatable-read", "serializable"];

/// How long the load test (16 workers × 400 approvals × 5 strategies) may take to draw its chart.
const LOAD_TEST_TIMEOUT: Duration = Duration::from_secs(180);

/// Waits until the run whose transcript starts with `first_line` is over (verdict shown, status
/// no longer idle, queued or running); returns the final `.rl-status[data-state]`.
async fn wait_until_run_over(b: &Browser, first_line: &str) -> String {
    let state = b
        .wait_js(
            &format!("the run `{first_line}` to end with a verdict"),
            r#"const pre = document.querySelector('details.rl-transcript pre');
               const status = document.querySelector('.rl-status');
               if (!pre || !status || !document.querySelector('.rl-verdict')) return null;
               if (pre.textContent.split('\n')[0] !== arguments[0]) return null;
               const state = status.getAttribute('data-state');
               return ['idle', 'queued', 'running', 'paused'].includes(state) ? null : state;"#,
            vec![json!(first_line)],
        )
        .await;
    state.as_str().expect("a state").to_owned()
}

/// Statement cards now: (all, those whose SQL is not a BEGIN).
async fn statement_counts(b: &Browser) -> (u64, u64) {
    let counts = b
        .js(
            r#"const cards = Array.from(document.querySelectorAll('.rl-card[data-kind="statement"]'));
               const begins = cards.filter(c => {
                 const sql = c.querySelector('code.rl-sql');
                 return !!sql && /^(BEGIN|START TRANSACTION)\b/i.test(sql.textContent.trim());
               }).length;
               return [cards.length, cards.length - begins];"#,
            vec![],
        )
        .await;
    (
        counts[0].as_u64().expect("a count"),
        counts[1].as_u64().expect("a count"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_skew_each_variant() {
    run("write_skew_each_variant", async |b| {
        b.goto(WRITE_SKEW).await;
        b.wait_for(".rl-scenario[data-scenario=\"isolation/write-skew\"]").await;
        for variant in VARIANTS {
            choose_variant(b, variant).await;
            b.click("button.rl-run").await;
            let first_line = format!("--- write skew, {variant} ---");
            let state = wait_until_run_over(b, &first_line).await;
            b.screenshot(variant).await;
            assert_eq!(state, "done", "{variant}: .rl-status[data-state]");

            let lanes = b.attrs(".rl-timeline .rl-lane-head", "data-lane").await;
            assert_eq!(
                lanes,
                [Some("alice".to_owned()), Some("bob".to_owned())],
                "{variant}: one .rl-lane-head per actor"
            );
            let transcript = b.text("details.rl-transcript pre").await.expect("the transcript");
            assert_eq!(transcript.lines().next(), Some(first_line.as_str()));

            let total = ".rl-total[data-table=\"expenses\"]";
            let actual = b.text(&format!("{total} .rl-total-actual")).await;
            let expected = b.text(&format!("{total} .rl-total-expected")).await;
            let verdict = b.attr(".rl-verdict", "data-kind").await;
            if variant == "serializable" {
                let bob_errors = b.texts(".rl-card.rl-card--error[data-lane=\"bob\"] .rl-sqlstate").await;
                assert!(
                    bob_errors.iter().any(|s| s == "40001"),
                    "serializable: a failed card in bob's lane with SQLSTATE 40001; got {bob_errors:?}"
                );
                assert_eq!(verdict.as_deref(), Some("prevented"), "serializable: verdict");
                assert_eq!(actual.as_deref(), Some("$3,000"), "serializable: total approved");
                if expected == actual {
                    assert!(
                        !b.has_class(total, "rl-total--differs").await,
                        "serializable: actual = expected, yet .rl-total--differs"
                    );
                }
            } else {
                assert_eq!(verdict.as_deref(), Some("reproduced"), "{variant}: verdict");
                assert_eq!(actual.as_deref(), Some("$6,000"), "{variant}: total approved");
                assert_eq!(expected.as_deref(), Some("$3,000"), "{variant}: expected total");
                assert!(
                    b.has_class(total, "rl-total--differs").await,
                    "{variant}: .rl-total lacks .rl-total--differs"
                );
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_mode_advances_one_step_per_click() {
    run("step_mode_advances_one_step_per_click", async |b| {
        b.goto(WRITE_SKEW).await;
        choose_variant(b, "serializable").await;
        b.click("button.rl-step").await;
        b.wait_for(".rl-next-step").await;
        b.screenshot("first-step").await;
        let (n0, _) = statement_counts(b).await;
        println!("statement cards before the first Next: {n0}");

        for click in 1..=3 {
            let (total, others) = statement_counts(b).await;
            b.click("button.rl-next").await;
            // Settled: the statement is in, and the page again shows what comes next.
            b.wait_js(
                &format!("Next #{click} to add a statement card"),
                r#"const cards = Array.from(document.querySelectorAll('.rl-card[data-kind="statement"]'));
                   const others = cards.filter(c => {
                     const sql = c.querySelector('code.rl-sql');
                     return !(!!sql && /^(BEGIN|START TRANSACTION)\b/i.test(sql.textContent.trim()));
                   }).length;
                   return others !== arguments[0] && document.querySelector('.rl-next-step') !== null;"#,
                vec![json!(others)],
            )
            .await;
            let (total_after, others_after) = statement_counts(b).await;
            assert_eq!(
                others_after,
                others + 1,
                "Next #{click}: exactly one more non-BEGIN statement card"
            );
            assert!(
                (1..=2).contains(&(total_after - total)),
                "Next #{click}: {total} → {total_after} statement cards (one statement, perhaps with its BEGIN)"
            );
        }
        b.screenshot("after-3-steps").await;

        b.click("button.rl-cancel").await;
        b.wait_for(".rl-status[data-state=\"cancelled\"]").await;
    })
    .await;
}

/// The host page's look, to compare with the reference page's.
const HOST_LOOK: &str = r#"const look = e => {
    const s = getComputedStyle(e);
    return [s.fontFamily, s.fontSize, s.lineHeight, s.color, s.backgroundColor, s.margin, s.padding].join(' | ');
  };
  return { html: look(document.documentElement), body: look(document.body), p: look(document.getElementById('ref')) };"#;

/// The finished serializable write skew in the embed (compact by default) must fit a blog
/// column: at most this tall at each width (time gaps aside), and never wider than it. At 680
/// px, no taller than it was (1,183) before captions moved into their speaker's lane, where
/// bob's 40001 message wraps in half the width (1,237 then; 1,178 since the captions' smaller
/// type, one-line lane heads and the ledger's tighter ends). At 360 px that half is 150 px wide:
/// 1,617 before the move, 1,763 after, 1,694 since.
const EMBED_LIMITS: [(u32, u64); 2] = [(680, 1_183), (360, 1_700)];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compact_embed_fits_a_blog_column_and_the_full_page_toggles_it() {
    run("the_compact_embed_fits_a_blog_column_and_the_full_page_toggles_it", async |b| {
        for (width, limit) in EMBED_LIMITS {
            b.set_viewport(width, 900).await;
            b.goto("/embed/isolation/write-skew?variant=serializable&autoplay=1").await;
            b.wait_for(".rl-verdict").await;
            b.wait_for(".rl-ledger").await;
            b.settle().await;
            assert!(b.count(".rl-compact .rl-compact-row").await > 10, "the embed draws the compact timeline");
            assert_eq!(b.count(".rl-timeline").await, 0, "and not the detailed one");
            assert_eq!(
                b.js("return performance.getEntriesByType('resource').map(e => new URL(e.name).pathname).filter(p => p.endsWith('.wasm'));", vec![]).await
                    .as_array()
                    .map(|wasm| wasm.iter().all(|p| p.as_str().is_some_and(|p| p.starts_with("/embed-app/"))) && wasm.len() == 1),
                Some(true),
                "the embed loads the embed app's wasm, and only that"
            );
            // Bob's 40001 is a mark on his line, his retry's commit too.
            assert_eq!(
                b.js("return [...document.querySelectorAll('.rl-line[data-tone=failed] .rl-line-outcome')].map(e => e.textContent);", vec![]).await,
                serde_json::json!(["40001"])
            );
            assert_eq!(b.count(".rl-mark[data-tone=commit]").await, 2);
            // The time drawn to scale (gaps where 30 ms or more passed, and their legend) is as
            // tall as the machine was slow, so the layout's limit is on the rest.
            let [height, time, scroll_width, client_width]: [u64; 4] = serde_json::from_value(
                b.js(
                    "const d = document.documentElement;                      const gaps = [...document.querySelectorAll('.rl-compact-row')]                        .map(r => { const f = r.querySelector('.rl-gap-fill'); return f ? f.getBoundingClientRect().height : 0; }).reduce((a, b) => a + b, 0);                      const legend = document.querySelector('.rl-time-legend');                      const legendHeight = legend ? legend.getBoundingClientRect().height + 4 : 0;                      return [d.scrollHeight, Math.ceil(gaps + legendHeight), d.scrollWidth, d.clientWidth];",
                    vec![],
                )
                .await,
            )
            .expect("four numbers");
            let layout = height - time;
            println!("finished compact embed at {width} px: {height} px tall, {time} px of it time gaps (limit {limit} for the rest)");
            record_measurement(&format!(
                "compact embed, serializable write skew, {width} px wide: {height} px tall, {time} px of it time gaps"
            ));
            b.screenshot(&format!("embed-{width}")).await;
            assert!(layout <= limit, "{layout} px tall without the time gaps at {width} px wide; the limit is {limit}");
            assert!(scroll_width <= client_width, "the page scrolls sideways at {width} px: {scroll_width} > {client_width}");
            // A line opens to its whole card: the full SQL and its parameters.
            b.click(".rl-compact-cell[data-lane=bob] .rl-line > summary").await;
            b.wait_for(".rl-line[open] .rl-card .rl-sql").await;
        }
        // The finished run, embedded as a run (what oEmbed gives for a run link): the same race,
        // compact, replayed from its stored events.
        let permalink = b.attr(".rl-permalink", "href").await.expect("a permalink");
        b.goto(&format!("/embed{permalink}")).await;
        b.wait_for(".racelab.rl-embed .rl-replay .rl-verdict").await;
        assert!(b.count(".rl-compact .rl-compact-row").await > 10, "the embedded run is compact");
        assert_eq!(b.count(".rl-line[data-tone=failed]").await, 1, "bob's 40001 is in the replay too");
        b.screenshot("embedded-run-360").await;
        b.reset_viewport().await;

        // The full page keeps the detailed timeline, and toggles to the compact one and back.
        b.goto("/lab/isolation/write-skew?variant=serializable").await;
        b.wait_for("button.rl-run:not([disabled])").await;
        b.click("button.rl-run").await;
        b.wait_for(".rl-verdict").await;
        assert!(b.count(".rl-timeline .rl-row").await > 10);
        b.click("button.rl-view-compact").await;
        b.wait_for(".rl-compact .rl-compact-row").await;
        assert_eq!(b.count(".rl-timeline").await, 0);
        b.screenshot("page-compact").await;
        b.click("button.rl-view-detailed").await;
        b.wait_for(".rl-timeline .rl-row").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_racelab_scenario_elements_on_one_page_each_run_and_resize() {
    run(
        "two_racelab_scenario_elements_on_one_page_each_run_and_resize",
        async |b| {
            b.goto(HOST_ELEMENTS_ROUTE).await;
            let expected = [
                (
                    "first",
                    "/embed/isolation/write-skew?",
                    "variant=serializable",
                    "prevented",
                ),
                (
                    "second",
                    "/embed/isolation/lost-update?",
                    "variant=read-committed",
                    "reproduced",
                ),
            ];
            for (index, (id, path, variant, verdict)) in expected.into_iter().enumerate() {
                // The iframes load lazily, as a long post's should: bring each into view first.
                let src = b
                    .wait_js(
                        "the element to insert its iframe",
                        "const e = document.getElementById(arguments[0]); e.scrollIntoView(); \
                     const f = e.querySelector('iframe'); return f ? f.src : null;",
                        vec![id.into()],
                    )
                    .await;
                let src = src.as_str().unwrap_or_default();
                assert!(
                    src.contains(path) && src.contains(variant) && src.contains("autoplay=1"),
                    "{id}: {src}"
                );
                b.client
                    .enter_frame(index as u16)
                    .await
                    .expect("enter the element's iframe");
                b.wait_for(".rl-verdict").await;
                assert_eq!(
                    b.attr(".rl-verdict", "data-kind").await.as_deref(),
                    Some(verdict),
                    "{id}'s own run"
                );
                b.client.enter_parent_frame().await.expect("back to the host");
            }
            // Each iframe takes its own embed's finished height, not the other's.
            let heights = b
                .wait_js(
                    "each iframe sized to its own embed's height",
                    "const fs = [...document.querySelectorAll('racelab-scenario > iframe')];\
                 const hs = fs.map(f => [parseFloat(f.style.height), f.contentDocument.documentElement.scrollHeight]);\
                 return hs.length === 2 && hs.every(([set, content]) => Math.abs(set - content) <= 2) ? hs : null;",
                    vec![],
                )
                .await;
            println!("two elements: [set, content] heights = {heights}");
            assert_ne!(
                heights[0][0], heights[1][0],
                "two different races, two heights: {heights}"
            );
            b.screenshot("two-elements").await;
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embed_in_iframe_reports_height() {
    run("embed_in_iframe_reports_height", async |b| {
        let (reference, iframe_host, script_host) = HOST_ROUTES;
        b.goto(reference).await;
        let reference_look = b.js(HOST_LOOK, vec![]).await;

        // A pasted iframe: the embed autoplays and reports its height to the host.
        b.goto(iframe_host).await;
        let height = b
            .wait_js(
                "a racelab:height message above 100 px",
                "const h = Number(document.getElementById('h').textContent); return h > 100 ? h : null;",
                vec![],
            )
            .await;
        println!("first reported embed height: {height}");
        b.client.enter_frame(0).await.expect("enter the embed's iframe");
        b.wait_for(".racelab.rl-embed").await;
        b.wait_for(".rl-verdict").await;
        assert_eq!(
            b.attr(".rl-verdict", "data-kind").await.as_deref(),
            Some("prevented"),
            "the autoplayed serializable run's verdict"
        );
        b.client.enter_parent_frame().await.expect("back to the host");
        let heights = b.js("return window.reportedHeights;", vec![]).await;
        println!("heights reported until the verdict: {heights}");
        assert_eq!(
            b.js(HOST_LOOK, vec![]).await,
            reference_look,
            "the iframe changed the host's look"
        );
        b.screenshot("iframe-1280").await;

        b.set_viewport(360, 900).await;
        b.client.enter_frame(0).await.expect("enter the embed's iframe");
        let overflow = b
            .js(
                "const d = document.documentElement; return [d.scrollWidth, d.clientWidth];",
                vec![],
            )
            .await;
        b.client.enter_parent_frame().await.expect("back to the host");
        b.screenshot("iframe-360").await;
        let heights = b.js("return window.reportedHeights;", vec![]).await;
        println!("heights reported until the 360 px screenshot: {heights}");
        assert!(
            overflow[0].as_u64() <= overflow[1].as_u64(),
            "the embed scrolls sideways in a 360 px iframe: [scrollWidth, clientWidth] = {overflow}"
        );
        b.reset_viewport().await;

        // The one-line loader inserts the iframe itself, and sizes it.
        b.goto(script_host).await;
        let src = b
            .wait_js(
                "embed.js to insert an iframe",
                "const f = document.querySelector('iframe'); return f ? f.src : null;",
                vec![],
            )
            .await;
        let src = src.as_str().expect("the iframe's src");
        assert!(
            src.contains("/embed/isolation/write-skew") && src.contains("variant=serializable"),
            "embed.js inserted an iframe for {src}"
        );
        b.client.enter_frame(0).await.expect("enter the loader's iframe");
        b.wait_for(".racelab.rl-embed").await;
        b.client.enter_parent_frame().await.expect("back to the host");
        let loader_height = b
            .wait_js(
                "embed.js to set its iframe's height from a reported height (> 100 px)",
                // The inline style height, not the box: a CSS min-height alone would pass that.
                "const f = document.querySelector('iframe'); const h = f ? parseFloat(f.style.height) : NaN; \
                 return h > 100 ? h : null;",
                vec![],
            )
            .await;
        println!("iframe height set by embed.js: {loader_height}");
        assert_eq!(
            b.js(HOST_LOOK, vec![]).await,
            reference_look,
            "embed.js changed the host's look"
        );
        b.screenshot("script-loader").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_shows_three_columns() {
    run("compare_shows_three_columns", async |b| {
        b.goto(&format!("{WRITE_SKEW}/compare")).await;
        b.wait_js(
            "three .rl-compare-col",
            "return document.querySelectorAll('.rl-compare .rl-compare-col').length === 3;",
            vec![],
        )
        .await;
        let mut columns = b.attrs(".rl-compare .rl-compare-col", "data-variant").await;
        columns.sort();
        assert_eq!(columns, VARIANTS.map(|v| Some(v.to_owned())), "one column per variant");
        if b.count("button.rl-run").await > 0 {
            b.click("button.rl-run").await;
        }
        b.wait_js(
            "a verdict in each column",
            "return Array.from(document.querySelectorAll('.rl-compare .rl-compare-col')).every(c => c.querySelector('.rl-verdict') !== null);",
            vec![],
        )
        .await;
        b.screenshot("verdicts").await;
        for (variant, kind) in [
            ("read-committed", "reproduced"),
            ("repeatable-read", "reproduced"),
            ("serializable", "prevented"),
        ] {
            let verdict = format!(".rl-compare-col[data-variant=\"{variant}\"] .rl-verdict");
            assert_eq!(b.attr(&verdict, "data-kind").await.as_deref(), Some(kind), "{variant}");
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_test_shows_progress_then_chart() {
    run("load_test_shows_progress_then_chart", async |b| {
        b.goto("/lab/isolation/load-test").await;
        b.wait_for(".rl-scenario[data-scenario=\"isolation/load-test\"]").await;
        let started = Instant::now();
        b.click("button.rl-run").await;
        b.wait_for(".rl-progress progress").await;
        println!("progress shown after {:?}", started.elapsed());
        b.screenshot("progress").await;
        b.wait_js_for(
            "a chart with 5 .rl-chart-group",
            LOAD_TEST_TIMEOUT,
            "return document.querySelectorAll('.rl-chart .rl-chart-group').length === 5;",
            vec![],
        )
        .await;
        println!("chart shown after {:?}", started.elapsed());
        b.screenshot("chart").await;
        let strategies = b.attrs(".rl-chart .rl-chart-group", "data-strategy").await;
        println!("chart groups: {strategies:?}");
        assert!(
            strategies.iter().all(|s| s.as_deref().is_some_and(|s| !s.is_empty())),
            "every .rl-chart-group names its strategy: {strategies:?}"
        );
        for metric in ["over_budget", "approved", "retries", "most_attempts", "gave_up"] {
            let bars = b
                .count(&format!(".rl-chart .rl-chart-group .rl-bar[data-metric=\"{metric}\"]"))
                .await;
            assert_eq!(bars, 5, "one {metric} bar per strategy");
        }
        // Its permalink draws the same progress and chart (not an empty timeline).
        b.wait_for(".rl-permalink").await;
        let permalink = b.attr(".rl-permalink", "href").await.expect("a permalink");
        b.goto(&permalink).await;
        b.wait_for(".rl-replay .rl-chart").await;
        assert_eq!(b.count(".rl-replay .rl-chart .rl-chart-group").await, 5);
        assert_eq!(b.count(".rl-replay .rl-progress progress").await, 1);
        b.screenshot("permalink").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_and_replay() {
    run("catalog_and_replay", async |b| {
        b.goto("/").await;
        let lab = "section.rl-lab[data-lab=\"isolation\"]";
        b.wait_for(lab).await;
        let links = b.attrs(&format!("{lab} a.rl-scenario-link"), "href").await;
        let link = links
            .iter()
            .flatten()
            .find(|href| href.trim_end_matches('/').ends_with(WRITE_SKEW))
            .unwrap_or_else(|| panic!("an a.rl-scenario-link to {WRITE_SKEW} in the isolation lab; got {links:?}"))
            .clone();
        let services = b.attrs(".rl-service", "data-service").await;
        println!("services shown: {services:?}");
        b.screenshot("catalog").await;

        b.click(&format!("{lab} a.rl-scenario-link[href=\"{link}\"]")).await;
        b.wait_for(".rl-scenario[data-scenario=\"isolation/write-skew\"]").await;
        b.click("button.rl-run").await;
        b.wait_for(".rl-verdict").await;
        b.wait_for("a.rl-permalink").await;
        let verdict = b.attr(".rl-verdict", "data-kind").await;
        let transcript = b.text("details.rl-transcript pre").await;
        b.screenshot("run").await;
        let path = b
            .js(
                "return new URL(document.querySelector('a.rl-permalink').getAttribute('href'), location.href).pathname;",
                vec![],
            )
            .await;
        let path = path.as_str().expect("the permalink's path").to_owned();
        let run_id = path
            .strip_prefix("/runs/")
            .filter(|id| !id.is_empty() && !id.contains('/'))
            .unwrap_or_else(|| panic!("a.rl-permalink points to /runs/<id>, not {path}"))
            .to_owned();

        b.goto(&path).await;
        b.wait_for(&format!(".rl-replay[data-run-id=\"{run_id}\"]")).await;
        b.wait_for(".rl-verdict").await;
        b.screenshot("replay").await;
        assert_eq!(b.attr(".rl-verdict", "data-kind").await, verdict, "the replay's verdict");
        if let Some(transcript) = transcript {
            let replayed = b.text("details.rl-transcript pre").await;
            assert_eq!(replayed.as_deref(), Some(transcript.as_str()), "the replay's transcript");
        }
    })
    .await;
}

/// Not a check: prints how quickly a run shows up and how quickly the embed paints (also
/// `cargo bench --bench ui_latency`, which repeats it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn measure_run_latency_and_embed_first_paint() {
    run("measure_run_latency_and_embed_first_paint", async |b| {
        for line in measure::run_latency_and_embed_paint(b).await {
            record_measurement(&line);
        }
    })
    .await;
}

/// The embed's budget: the wasm and JS an embed page loads (dist/embed-app/, as its index.html
/// names them) weigh at most 150 KB gzip, as the server sends them. Read from the build these
/// tests drive, so a change that makes the embed heavier fails here, with the sizes.
#[test]
fn the_embed_app_fits_its_150_kb_budget() {
    within_the_embed_budget("embed-app");
}

/// The player (dist/player-app/: `/embed/recording`, `racelab export --player`, the one-file
/// page) goes into the same iframes and blog posts as an embed, within the same budget.
#[test]
fn the_player_app_fits_the_embeds_150_kb_budget() {
    within_the_embed_budget("player-app");
}

/// The wasm and JS `dist/<app>/index.html` loads, gzip as the server sends them, at most the
/// embed's 150,000 bytes.
fn within_the_embed_budget(app: &str) {
    const BUDGET: u64 = 150_000;
    let dir = harness::dist().join(app);
    let index = std::fs::read_to_string(dir.join("index.html"))
        .unwrap_or_else(|e| panic!("dist/{app}/index.html: `trunk build --release` builds it too: {e}"));
    let prefix = format!("/{app}/");
    let mut loaded: Vec<&str> = index
        .split(['"', '\'', '(', ')', ' '])
        .filter_map(|word| word.strip_prefix(prefix.as_str()))
        .filter(|file| file.ends_with(".js") || file.ends_with(".wasm"))
        .collect();
    loaded.sort_unstable();
    loaded.dedup();
    assert_eq!(loaded.len(), 2, "one script and one wasm module: {loaded:?}");
    let sizes: Vec<(String, u64)> = loaded
        .iter()
        .map(|file| {
            let gzip = dir.join(format!("{file}.gz"));
            let size = std::fs::metadata(&gzip)
                .unwrap_or_else(|e| panic!("{}: {e}", gzip.display()))
                .len();
            (file.to_string(), size)
        })
        .collect();
    let total: u64 = sizes.iter().map(|(_, size)| size).sum();
    println!("the {app}, gzip: {sizes:?}, {total} bytes in all (budget {BUDGET})");
    assert!(
        total <= BUDGET,
        "the {app} is {total} bytes gzip, over its {BUDGET}: {sizes:?}"
    );
}

/// A Redis command, HTTP requests (one that times out, one answered 409), a broker message and a
/// child process that crashes and restarts: each drawn as its own kind of card, from a real run's
/// stored events, replayed at its permalink.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_service_is_drawn_as_its_own_kind_of_card() {
    let played = common::play_def(&common::engine().await, &common::every_service::EVERY_SERVICE, "only").await;
    assert_eq!(played.outcome, shared::Outcome::Completed, "{:?}", played.outcome);
    run("every_service_is_drawn_as_its_own_kind_of_card", async |b| {
        b.goto(&format!("/runs/{}", played.run_id)).await;
        b.wait_for(".rl-replay .rl-card[data-kind=\"process\"]").await;
        for service in ["redis", "http", "kafka", "postgres"] {
            let cards = b
                .count(&format!(
                    ".rl-card[data-kind=\"statement\"][data-service=\"{service}\"]"
                ))
                .await;
            assert!(cards >= 1, "no {service} card");
        }
        let badges = b.texts(".rl-service-badge").await;
        for label in ["Redis", "HTTP", "Kafka", "SQL"] {
            assert!(badges.iter().any(|t| t == label), "no {label} badge in {badges:?}");
        }
        let kinds = b.attrs(".rl-sqlstate", "data-error-kind").await;
        assert!(
            kinds.contains(&Some("timeout".into())),
            "the phone's timeout is badged: {kinds:?}"
        );
        assert_eq!(
            b.count(".rl-card[data-kind=\"process\"]").await,
            2,
            "a start and a restart"
        );
        assert_eq!(b.count(".rl-card[data-kind=\"crash\"]").await, 2);
        let headers = b.texts(".rl-headers").await;
        assert!(
            headers.iter().any(|h| h.contains("Idempotency-Key: order-7731")),
            "{headers:?}"
        );
        assert!(headers.iter().any(|h| h.contains("retry-after: 1")), "{headers:?}");
        assert!(
            b.count(".rl-card--error[data-service=\"http\"]").await >= 2,
            "the timeout and the 409 are shown as errors"
        );
        assert!(
            b.texts(".rl-message-place").await.iter().any(|p| p == "p1@0"),
            "pay_001 on p1"
        );
        b.screenshot("every-service").await;
        b.set_viewport(360, 900).await;
        b.screenshot("every-service-360").await;
        b.reset_viewport().await;
    })
    .await;
}

/// A run that did not complete says why at the top of its replay, in the failure's colours: here
/// a double charge held to a one-second limit (it needs about two), so the engine stops it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_says_why_on_its_replay() {
    let mut config = common::config();
    config.max_run_secs = 1;
    let engine = std::sync::Arc::new(racelab::db::connect_engine(&config).await.expect("the engine"));
    let played = common::play(&engine, "idempotency/double-charge", "naive").await;
    let shared::Outcome::Failed { message } = &played.outcome else {
        panic!("held to 1 s, the double charge fails: {:?}", played.outcome);
    };
    assert_eq!(message, "the run took longer than its limit of 1 s");
    run("a_failed_run_says_why_on_its_replay", async |b| {
        b.goto(&format!("/runs/{}", played.run_id)).await;
        b.wait_for(".rl-replay .rl-status[data-state=\"failed\"]").await;
        assert_eq!(
            b.text(".rl-replay .rl-status").await.as_deref(),
            Some("This run failed: the run took longer than its limit of 1 s")
        );
        assert!(
            b.count(".rl-replay .rl-card").await > 0,
            "the timeline up to the stop is drawn"
        );
        b.screenshot("replay-failed").await;
    })
    .await;
    engine.close(Duration::from_secs(5), Duration::from_secs(5)).await;
}

/// The fencing scenario in both variants: A's stale write refused (or landing), the wallet row's
/// fence kept at 34 (or taken back to 33), each lane drawing its Redis and SQL steps apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_shows_the_stale_write_refused_or_landing() {
    run("fencing_shows_the_stale_write_refused_or_landing", async |b| {
        b.goto("/lab/locks/fencing").await;
        b.wait_for(".rl-scenario[data-scenario=\"locks/fencing\"]").await;
        for (variant, fence, verdict) in [("fence", 34, "prevented"), ("no-fence", 33, "reproduced")] {
            choose_variant(b, variant).await;
            b.click("button.rl-run").await;
            let last = format!("final: balance=90 fence={fence} (two spends of 10 were attempted)");
            b.wait_js(
                &format!("the {variant} run to end with `{last}`"),
                r#"const pre = document.querySelector('details.rl-transcript pre');
                   const v = document.querySelector('.rl-verdict');
                   return !!pre && !!v && pre.textContent.trim().endsWith(arguments[0]);"#,
                vec![json!(last)],
            )
            .await;
            assert_eq!(
                b.attr(".rl-verdict", "data-kind").await.as_deref(),
                Some(verdict),
                "{variant}"
            );
            let lanes = b.attrs(".rl-timeline .rl-lane-head", "data-lane").await;
            assert_eq!(lanes, [Some("A".to_owned()), Some("B".to_owned())], "{variant}");
            for lane in ["A", "B"] {
                for service in ["redis", "postgres"] {
                    let cards = b
                        .count(&format!(".rl-card[data-lane=\"{lane}\"][data-service=\"{service}\"]"))
                        .await;
                    assert!(cards >= 1, "{variant}: {lane} has no {service} step");
                }
            }
            // A's 100 ms lease runs out during its 250 ms pause: marked in A's lane, not B's.
            let labels = b.texts(".rl-cell[data-lane=\"A\"] .rl-lease-label").await;
            assert!(
                labels
                    .iter()
                    .any(|l| l.starts_with("holds lock:{wallet:42}") && l.ends_with("fence 33")),
                "{variant}: A's lease is labelled: {labels:?}"
            );
            assert!(
                b.count(".rl-cell[data-lane=\"A\"] .rl-lease-expired").await >= 1,
                "{variant}: A's lease is seen to expire"
            );
            assert!(
                b.count(".rl-cell--lease[data-lane=\"B\"]").await >= 1,
                "{variant}: B's band"
            );
            let wallet = b
                .texts("table.rl-ledger-table[data-table=\"wallets\"] tr[data-change=\"changed\"] td")
                .await;
            assert!(
                wallet.iter().any(|cell| cell.contains(&fence.to_string())),
                "{variant}: the wallet row shows fence {fence}: {wallet:?}"
            );
            b.screenshot(variant).await;
        }
        b.set_viewport(360, 900).await;
        b.screenshot("no-fence-360").await;
        b.reset_viewport().await;
    })
    .await;
}

/// Fifty callers behind the hand-rolled lock: three lanes, and a strip of all fifty in which
/// every one is seen to take the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_callers_show_as_three_lanes_and_a_strip_of_fifty() {
    run("fifty_callers_show_as_three_lanes_and_a_strip_of_fifty", async |b| {
        b.goto("/lab/locks/hand-lock").await;
        b.wait_for(".rl-scenario[data-scenario=\"locks/hand-lock\"]").await;
        b.click("button.rl-run").await;
        b.wait_js(
            "the hand-lock run to end",
            r#"const pre = document.querySelector('details.rl-transcript pre');
               return !!pre && !!document.querySelector('.rl-verdict')
                 && pre.textContent.trim() === 'accepted=10 balance=0 expected=0 OK';"#,
            vec![],
        )
        .await;
        assert_eq!(b.count(".rl-timeline .rl-lane-head").await, 3);
        assert_eq!(b.count(".rl-crowd .rl-crowd-member").await, 50);
        assert_eq!(
            b.count(".rl-crowd .rl-crowd-member--took").await,
            50,
            "each took the lock in turn"
        );
        assert_eq!(
            b.count(".rl-crowd .rl-crowd-member--holds").await,
            0,
            "nobody holds it at the end"
        );
        assert_eq!(
            b.text(".rl-crowd-summary").await.as_deref(),
            Some("50 callers; 50 took the lock")
        );
        assert!(b.count(".rl-cell--lease").await >= 1, "the visible holders' bands");
        b.screenshot("hand-lock").await;
        b.set_viewport(360, 900).await;
        b.screenshot("hand-lock-360").await;
        b.reset_viewport().await;
    })
    .await;
}

/// Work that outlives the lease: without a watchdog every lease is seen to run out under its
/// holder and every release to find it gone; with one, its refreshes are marked instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_marks_leases_running_out_and_refreshes() {
    run("ttl_marks_leases_running_out_and_refreshes", async |b| {
        b.goto("/lab/locks/ttl").await;
        b.wait_for(".rl-scenario[data-scenario=\"locks/ttl\"]").await;
        // How each variant's check line ends (the no-watchdog balance is up to timing).
        for (variant, line_ends) in [
            ("no-watchdog", "expected=50 BROKEN"),
            ("watchdog", "balance=50 expected=50 OK"),
        ] {
            choose_variant(b, variant).await;
            b.click("button.rl-run").await;
            b.wait_js_for(
                &format!("the {variant} run to end"),
                Duration::from_secs(30),
                r#"const pre = document.querySelector('details.rl-transcript pre');
                   return !!pre && !!document.querySelector('.rl-verdict')
                     && pre.textContent.split('\n')[0].endsWith(arguments[0])
                     && document.querySelector('.rl-status').getAttribute('data-state') === 'done';"#,
                vec![json!(line_ends)],
            )
            .await;
            assert_eq!(
                b.count(".rl-timeline .rl-lane-head").await,
                5,
                "{variant}: five callers, five lanes"
            );
            let lost = b.count(".rl-lease-change[data-change=\"lost\"]").await;
            let refreshed = b.count(".rl-lease-change[data-change=\"refreshed\"]").await;
            let expired = b.count(".rl-lease-expired").await;
            if variant == "no-watchdog" {
                assert!(expired >= 1 && lost >= 1, "{variant}: expired {expired}, lost {lost}");
                assert_eq!(refreshed, 0, "{variant}");
            } else {
                assert!(refreshed >= 1, "{variant}: the watchdog's refreshes are marked");
                assert_eq!((expired, lost), (0, 0), "{variant}: no lease ran out");
            }
            b.screenshot(variant).await;
        }
    })
    .await;
}

/// The idempotency load test draws like a scenario, not a free-running workload: its one shown
/// copy's lane (the shop's notes for the other 149 left out), both ledgers against a correct system's thirty charges, and the verdict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_idempotency_load_test_shows_its_ledgers() {
    run("the_idempotency_load_test_shows_its_ledgers", async |b| {
        b.goto("/lab/idempotency/load-test").await;
        b.wait_for(".rl-scenario[data-scenario=\"idempotency/load-test\"]")
            .await;
        b.click("button.rl-run").await;
        // 150 requests, some waiting out a 3 s first timeout: longer than the usual wait.
        b.wait_for_within(".rl-verdict", Duration::from_secs(60)).await;
        let lanes = b.attrs(".rl-timeline .rl-lane-head", "data-lane").await;
        assert_eq!(lanes, [Some("payment 1 copy 1".to_owned())], "one copy shown");
        // The copy's attempts (its requests; each line it prints is a note beside them): at
        // most three told 409, then its answer.
        let attempts = b
            .count(".rl-card[data-lane=\"payment 1 copy 1\"][data-service=\"http\"]")
            .await;
        assert!((1..=4).contains(&attempts), "{attempts} attempts drawn");
        assert_eq!(
            b.count(".rl-card[data-lane=\"shop\"]").await,
            0,
            "the crowd is not drawn"
        );
        for table in ["charges", "card_charges", "charges per ledger"] {
            let selector = format!("table.rl-ledger-table[data-table=\"{table}\"]");
            assert_eq!(b.count(&selector).await, 1, "the {table} ledger is drawn");
        }
        assert_eq!(b.attr(".rl-verdict", "data-kind").await.as_deref(), Some("prevented"));
        b.screenshot("idempotency-load-test").await;
        b.set_viewport(360, 900).await;
        b.screenshot("idempotency-load-test-360").await;
        b.reset_viewport().await;
    })
    .await;
}

/// The atomic claim: the phone's three attempts as HTTP cards (a timeout, a 409 with its
/// Retry-After, a replayed 201), the shop's and the provider's notes, and both ledgers agreeing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_claim_shows_a_timeout_a_409_and_a_replay() {
    run("the_claim_shows_a_timeout_a_409_and_a_replay", async |b| {
        b.goto("/lab/idempotency/claim").await;
        b.wait_for(".rl-scenario[data-scenario=\"idempotency/claim\"]").await;
        b.click("button.rl-run").await;
        b.wait_js(
            "the claim run to end",
            r#"const pre = document.querySelector('details.rl-transcript pre');
               return !!pre && !!document.querySelector('.rl-verdict')
                 && pre.textContent.trim().endsWith('(replayed)');"#,
            vec![],
        )
        .await;
        let lanes = b.attrs(".rl-timeline .rl-lane-head", "data-lane").await;
        assert_eq!(
            lanes,
            [
                Some("phone".to_owned()),
                Some("shop".to_owned()),
                Some("provider".to_owned())
            ]
        );
        assert_eq!(b.count(".rl-card[data-lane=\"phone\"][data-service=\"http\"]").await, 3);
        let badges = b
            .attrs(".rl-card[data-lane=\"phone\"] .rl-sqlstate", "data-error-kind")
            .await;
        assert_eq!(badges, [Some("timeout".to_owned())], "the first attempt timed out");
        let headers = b.texts(".rl-card[data-lane=\"phone\"] .rl-headers").await;
        assert!(headers.iter().any(|h| h.contains("retry-after: 1")), "{headers:?}");
        assert!(
            headers.iter().any(|h| h.contains("idempotent-replayed: true")),
            "{headers:?}"
        );
        assert!(b.count(".rl-card[data-lane=\"shop\"][data-kind=\"note\"]").await >= 2);
        assert_eq!(b.attr(".rl-verdict", "data-kind").await.as_deref(), Some("prevented"));
        b.screenshot("claim").await;
        b.set_viewport(360, 900).await;
        b.screenshot("claim-360").await;
        b.reset_viewport().await;
    })
    .await;
}

/// The naive double charge: the phone's timeout (badged) and its second, successful request, the
/// shop recording two payments and the provider two charges after the phone hung up, and the
/// verdict that the bug was reproduced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_double_charge_shows_a_timeout_and_two_charges() {
    run("the_double_charge_shows_a_timeout_and_two_charges", async |b| {
        b.goto("/lab/idempotency/double-charge").await;
        b.wait_for(".rl-scenario[data-scenario=\"idempotency/double-charge\"]")
            .await;
        b.click("button.rl-run").await;
        b.wait_for_within(".rl-verdict", Duration::from_secs(30)).await;
        assert_eq!(b.count(".rl-card[data-lane=\"phone\"][data-service=\"http\"]").await, 2);
        let badges = b
            .attrs(".rl-card[data-lane=\"phone\"] .rl-sqlstate", "data-error-kind")
            .await;
        assert_eq!(badges, [Some("timeout".to_owned())], "only the first attempt timed out");
        let arrows = b.texts(".rl-card[data-lane=\"phone\"] .rl-http-to").await;
        assert_eq!(arrows, ["→ shop", "→ shop"], "each request points at the shop's lane");
        let recorded = b.texts(".rl-card[data-lane=\"shop\"][data-kind=\"note\"]").await;
        assert_eq!(
            recorded.iter().filter(|n| n.contains("recorded payment")).count(),
            2,
            "{recorded:?}"
        );
        let charged = b.texts(".rl-card[data-lane=\"provider\"][data-kind=\"note\"]").await;
        assert_eq!(
            charged.iter().filter(|n| n.contains("charged")).count(),
            2,
            "{charged:?}"
        );
        assert_eq!(b.attr(".rl-verdict", "data-kind").await.as_deref(), Some("reproduced"));
        assert_eq!(
            b.count("table.rl-ledger-table[data-table=\"charges per ledger\"]")
                .await,
            1
        );
        b.screenshot("double-charge").await;
        b.set_viewport(360, 900).await;
        b.screenshot("double-charge-360").await;
        b.reset_viewport().await;
    })
    .await;
}

/// The crash: the shop API's process started, killed at after_charge (marked as a crash), and
/// started again as a new process; the phone's EOF; the psql lane's query of the stuck key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_crash_marks_the_kill_and_the_restart() {
    run("the_crash_marks_the_kill_and_the_restart", async |b| {
        b.goto("/lab/idempotency/crash").await;
        b.wait_for(".rl-scenario[data-scenario=\"idempotency/crash\"]").await;
        choose_variant(b, "no-lease").await;
        b.click("button.rl-run").await;
        b.wait_for_within(".rl-verdict", Duration::from_secs(30)).await;
        let lanes = b.attrs(".rl-timeline .rl-lane-head", "data-lane").await;
        assert_eq!(lanes, ["phone", "shop", "provider", "psql"].map(|l| Some(l.to_owned())),);
        assert_eq!(b.count(".rl-card[data-lane=\"shop\"][data-kind=\"crash\"]").await, 1);
        assert_eq!(b.count(".rl-card[data-lane=\"shop\"][data-kind=\"process\"]").await, 2);
        let phone = b.texts(".rl-card[data-lane=\"phone\"] .rl-error-message").await;
        assert!(phone.iter().any(|t| t.ends_with("EOF")), "{phone:?}");
        assert_eq!(b.attr(".rl-verdict", "data-kind").await.as_deref(), Some("reproduced"));
        b.screenshot("crash-no-lease").await;
        b.set_viewport(360, 900).await;
        b.screenshot("crash-no-lease-360").await;
        b.reset_viewport().await;
    })
    .await;
}

/// The relay killed after producing: its crash marked in its lane, its restart as a new process,
/// the psql and offsets lanes, and the topic's six messages in the ledger, the repeats marked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_crash_shows_the_kill_the_restart_and_the_repeats() {
    run(
        "the_relay_crash_shows_the_kill_the_restart_and_the_repeats",
        async |b| {
            b.goto("/lab/outbox/relay-crash").await;
            b.wait_for(".rl-scenario[data-scenario=\"outbox/relay-crash\"]").await;
            b.click("button.rl-run").await;
            b.wait_for_within(".rl-verdict", Duration::from_secs(60)).await;
            let lanes = b.attrs(".rl-timeline .rl-lane-head", "data-lane").await;
            assert_eq!(
                lanes,
                ["relay", "psql", "kafka-get-offsets"].map(|l| Some(l.to_owned()))
            );
            assert_eq!(b.count(".rl-card[data-lane=\"relay\"][data-kind=\"crash\"]").await, 1);
            assert_eq!(b.count(".rl-card[data-lane=\"relay\"][data-kind=\"process\"]").await, 2);
            // Six produce steps: the batch, and the batch again.
            assert_eq!(
                b.count(".rl-card[data-lane=\"relay\"][data-service=\"kafka\"]").await,
                6
            );
            let copies = b.texts("table.rl-ledger-table[data-table=\"messages\"] tbody tr").await;
            assert_eq!(copies.len(), 6, "{copies:?}");
            assert_eq!(copies.iter().filter(|r| r.contains("repeat")).count(), 3, "{copies:?}");
            assert_eq!(b.attr(".rl-verdict", "data-kind").await.as_deref(), Some("reproduced"));
            b.screenshot("relay-crash").await;
            b.set_viewport(360, 900).await;
            b.screenshot("relay-crash-360").await;
            b.reset_viewport().await;
        },
    )
    .await;
}

/// The chaos test draws its progress and the drain over time, with the processes it killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chaos_run_draws_its_progress_and_the_drain() {
    run("the_chaos_run_draws_its_progress_and_the_drain", async |b| {
        b.goto("/lab/outbox/chaos").await;
        b.wait_for(".rl-scenario[data-scenario=\"outbox/chaos\"]").await;
        choose_variant(b, "200").await;
        b.click("button.rl-run").await;
        b.wait_for_within(".rl-verdict", Duration::from_secs(120)).await;
        let labels = b.texts(".rl-progress-label").await;
        assert_eq!(
            labels,
            ["400 of 400 events published", "400 of 400 events processed"],
            "both counts drained"
        );
        assert_eq!(b.count("figure.rl-drain polyline.rl-drain-line").await, 2);
        let legend = b.texts(".rl-drain-legend-crash").await;
        let crashes = b.count(".rl-timeline .rl-card[data-kind=\"crash\"]").await;
        assert_eq!(
            legend,
            [match crashes {
                1 => "1 process killed (red lines)".to_owned(),
                n => format!("{n} processes killed (red lines)"),
            }],
            "every crash on the timeline is a mark on the chart"
        );
        assert_eq!(b.attr(".rl-verdict", "data-kind").await.as_deref(), Some("prevented"));
        // Hundreds of rows: each big table shows what differs from a correct system and a
        // summary, the rest behind "Show all" (the page was 300,000 px tall with every row).
        let folds = b.texts(".rl-ledger .rl-fold").await;
        assert!(!folds.is_empty(), "the big tables are folded");
        // 200 payments (the variant): each folded table holds at least one row per payment.
        let sizes: Vec<u64> = folds
            .iter()
            .filter_map(|f| f.split(" rows;").next()?.replace(',', "").parse().ok())
            .collect();
        assert_eq!(sizes.len(), folds.len(), "each summary starts with its size: {folds:?}");
        assert!(sizes.iter().all(|&n| n >= 200), "{folds:?}");
        let shown = "return [...document.querySelectorAll('.rl-ledger table.rl-ledger-table')].map(t =>                      [...t.querySelectorAll('tbody tr')].filter(r => r.getBoundingClientRect().height > 0).length);";
        let rows: Vec<u64> = serde_json::from_value(b.js(shown, vec![]).await).expect("counts");
        assert!(rows.iter().all(|&n| n <= 25), "every table shows a few rows at first: {rows:?}");
        let height = b.js("return document.documentElement.scrollHeight;", vec![]).await;
        assert!(height.as_u64().is_some_and(|h| h < 20_000), "a chaos run's page is {height} px tall");
        b.click(".rl-ledger .rl-fold button.rl-show-all").await;
        let all: Vec<u64> = serde_json::from_value(b.js(shown, vec![]).await).expect("counts");
        assert!(all.iter().any(|&n| n >= 200), "Show all shows every row: {all:?}");
        // The ledger is written as text: its one handler, on the section, turns the button too.
        assert_eq!(b.texts(".rl-ledger .rl-fold button.rl-show-all").await.first().map(String::as_str), Some("Show fewer"));
        b.click(".rl-ledger .rl-fold button.rl-show-all").await;
        let again: Vec<u64> = serde_json::from_value(b.js(shown, vec![]).await).expect("counts");
        assert_eq!(again, rows, "Show fewer folds the table back");
        b.screenshot("chaos").await;
        b.set_viewport(360, 900).await;
        b.screenshot("chaos-360").await;
        b.reset_viewport().await;
        // Its permalink draws the same progress and drain.
        let permalink = b.attr(".rl-permalink", "href").await.expect("a permalink");
        b.goto(&permalink).await;
        b.wait_for(".rl-replay figure.rl-drain").await;
        assert_eq!(b.texts(".rl-replay .rl-progress-label").await, labels, "the permalink's progress");
        assert_eq!(b.count(".rl-replay figure.rl-drain polyline.rl-drain-line").await, 2);
        b.screenshot("chaos-permalink").await;
    })
    .await;
}

/// How many cards the page's timeline has (statements, commits, errors: every step adds one).
async fn cards(b: &Browser) -> u64 {
    b.count(".rl-timeline .rl-card").await
}

/// Waits until this page's timeline has `cards` cards (a follower catching up).
async fn until_cards(b: &Browser, who: &str, cards: u64) {
    b.wait_js(
        &format!("{who} to show {cards} cards"),
        "return document.querySelectorAll('.rl-timeline .rl-card').length === arguments[0];",
        vec![json!(cards)],
    )
    .await;
}

/// A training room, from "Teach this" on a scenario page: two participants' pages follow the
/// trainer's stepped serializable write skew step by step; a third joins after step 4 through a
/// second racelab process (sharing PostgreSQL and Redis) and shows steps 1–4 at once, then the
/// rest (too late to pick: picks close when the run starts); the trainer's page counts them,
/// tallies the two predictions made before the run, and shows the join link,
/// its QR code and that the room reaches every replica; every page ends with the same transcript
/// and verdict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trainer_steps_a_room_and_its_participants_follow() {
    run("a_trainer_steps_a_room_and_its_participants_follow", async |b| {
        b.goto("/lab/isolation/write-skew?variant=serializable").await;
        b.click("button.rl-teach").await;
        b.wait_for(".rl-room[data-trainer=\"true\"] .rl-room-controls button.rl-step").await;
        let room = b.attr(".rl-room", "data-room").await.expect("a room code");
        let link = b.attr("a.rl-room-link", "href").await.expect("a join link");
        assert!(link.ends_with(&format!("/room/{room}")), "{link}");
        assert_eq!(
            b.attr(".rl-room-controls .rl-variant[aria-pressed=\"true\"]", "data-variant").await.as_deref(),
            Some("serializable"),
            "the room starts with the scenario and variant it was opened from"
        );
        b.wait_js(
            "the QR code to load",
            "const qr = document.querySelector('img.rl-room-qr'); return qr && qr.complete && qr.naturalWidth > 0;",
            vec![],
        )
        .await;
        b.wait_for(".rl-room-reach[data-across=\"true\"]").await;
        let trainer = b.client.window().await.expect("the trainer's window");

        // Two participants join before the run.
        let mut pages = Vec::new();
        for i in 1..=2 {
            let page = b.client.new_window(false).await.expect("a window").handle;
            b.client.switch_to_window(page.clone()).await.expect("switch");
            b.goto(&format!("/room/{room}")).await;
            b.wait_for(".rl-room[data-trainer=\"false\"] .rl-room-follow").await;
            assert_eq!(b.count("button.rl-run, button.rl-step, button.rl-next").await, 0, "participant {i} has no controls");
            pages.push(page);
        }
        b.client.switch_to_window(trainer.clone()).await.expect("switch");
        b.wait_for(".rl-room-participants[data-count=\"2\"]").await;

        // Predict, then run: each participant picks; the trainer's page counts them (never names).
        for (page, choice) in pages.iter().zip(["both-commit", "bob-40001"]) {
            b.client.switch_to_window(page.clone()).await.expect("switch");
            b.click(&format!("label.rl-choice[data-choice=\"{choice}\"] input")).await;
            assert_eq!(b.count(".rl-tally").await, 0, "participants see no counts before the reveal");
        }
        b.client.switch_to_window(trainer.clone()).await.expect("switch");
        b.wait_for(".rl-tally li[data-choice=\"both-commit\"][data-count=\"1\"]").await;
        b.wait_for(".rl-tally li[data-choice=\"bob-40001\"][data-count=\"1\"]").await;
        b.screenshot("trainer-tally-before-run").await;

        b.click("button.rl-step").await;
        b.wait_for("button.rl-next").await;
        for step in 1..=4 {
            let before = cards(b).await;
            b.click("button.rl-next").await;
            b.wait_js(
                &format!("step {step} to land on the trainer's page"),
                "return document.querySelectorAll('.rl-timeline .rl-card').length > arguments[0]
                     && !document.querySelector('button.rl-next').disabled;",
                vec![json!(before)],
            )
            .await;
            let shown = cards(b).await;
            for (i, page) in pages.iter().enumerate() {
                b.client.switch_to_window(page.clone()).await.expect("switch");
                until_cards(b, &format!("participant {} after step {step}", i + 1), shown).await;
            }
            b.client.switch_to_window(trainer.clone()).await.expect("switch");
        }
        let shown = cards(b).await;
        let next = b.text(".rl-next-step").await;
        b.screenshot("trainer-after-4-steps").await;

        // A third joins now, through a second racelab process on another port (as behind a load
        // balancer; the two share PostgreSQL and Redis): steps 1–4 at once, and what comes next.
        let (mut second, elsewhere) = common::racelab_process(&harness::dist()).await;
        let late = b.client.new_window(false).await.expect("a window").handle;
        b.client.switch_to_window(late.clone()).await.expect("switch");
        let url = format!("http://{elsewhere}/room/{room}");
        b.client.goto(&url).await.unwrap_or_else(|e| panic!("open {url}: {e}"));
        until_cards(b, "the late participant", shown).await;
        assert_eq!(b.text(".rl-next-step").await, next, "the late participant sees what comes next");
        // The run has started: picks are closed, for the late participant too.
        b.wait_for("label.rl-choice[data-choice=\"bob-40001\"] input").await;
        assert_eq!(
            b.js("return [...document.querySelectorAll('label.rl-choice input')].every(i => i.disabled);", vec![]).await,
            json!(true),
            "a participant who joins mid-run cannot pick any more"
        );
        b.screenshot("late-participant-after-4-steps").await;
        pages.push(late);
        b.client.switch_to_window(trainer.clone()).await.expect("switch");
        b.wait_for(".rl-room-participants[data-count=\"3\"]").await;

        // The trainer steps to the end.
        for _ in 0..40 {
            if b.count(".rl-verdict").await > 0 {
                break;
            }
            let before = cards(b).await;
            b.click("button.rl-next").await;
            b.wait_js(
                "the next step to land",
                "const next = document.querySelector('button.rl-next');
                 return document.querySelector('.rl-verdict') !== null
                     || (document.querySelectorAll('.rl-timeline .rl-card').length > arguments[0] && next && !next.disabled);",
                vec![json!(before)],
            )
            .await;
        }
        b.wait_for(".rl-verdict").await;
        let transcript = "return document.querySelector('details.rl-transcript pre').textContent;";
        let (told, verdict) = (b.js(transcript, vec![]).await, b.text(".rl-verdict").await);
        assert!(told.as_str().is_some_and(|t| t.starts_with("--- write skew, serializable ---")), "{told}");
        b.screenshot("trainer-done").await;
        for (i, page) in pages.iter().enumerate() {
            b.client.switch_to_window(page.clone()).await.expect("switch");
            b.wait_for(".rl-verdict").await;
            assert_eq!(b.js(transcript, vec![]).await, told, "participant {}'s transcript", i + 1);
            assert_eq!(b.text(".rl-verdict").await, verdict, "participant {}'s verdict", i + 1);
            // After the reveal: the right answer marked, and everyone's counts.
            b.wait_for("label.rl-choice[data-choice=\"bob-40001\"][data-right=\"true\"]").await;
            b.wait_for(".rl-tally[data-revealed=\"true\"] li[data-choice=\"bob-40001\"][data-count=\"1\"]").await;
            if i == 2 {
                b.screenshot("late-participant-done").await;
            }
        }

        // The trainer closes the room (and confirms); every page following it is told.
        b.client.switch_to_window(trainer.clone()).await.expect("switch");
        b.click("button.rl-room-close").await;
        b.click("button.rl-room-close-yes").await;
        b.wait_for(".rl-room[data-closed=\"true\"] .rl-room-ended").await;
        assert_eq!(
            b.text(".rl-room-participants").await.as_deref(),
            Some("Nobody follows: the room is closed"),
            "no count of people who followed a room that is gone"
        );
        b.client.switch_to_window(pages[0].clone()).await.expect("switch");
        for page in [&pages[0], &pages[2]] {
            b.client.switch_to_window(page.clone()).await.expect("switch");
            b.wait_js(
                "the participants here and on the other process to hear the room closed",
                "const r = document.querySelector('.rl-status .rl-refused'); return !!r && r.textContent.includes('has closed');",
                vec![],
            )
            .await;
        }
        // The second process stops as `docker stop` would stop it.
        let pid = second.id().expect("running") as i32;
        // SAFETY: kill(2) of our own child.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        let stopped = tokio::time::timeout(Duration::from_secs(30), second.wait()).await;
        assert!(stopped.is_ok_and(|s| s.is_ok_and(|s| s.success())), "the second process stops cleanly");
    })
    .await;
}

/// Predict, then run (`?predict=1`): Run waits for a pick; the reader expects both commits, the
/// serializable run cancels Bob's instead, and the page marks the right choice, the wrong pick,
/// and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn predict_then_run_marks_the_right_choice_and_says_why() {
    run("predict_then_run_marks_the_right_choice_and_says_why", async |b| {
        b.goto("/lab/isolation/write-skew?variant=serializable&predict=1").await;
        b.wait_for("fieldset.rl-predict label.rl-choice[data-choice=\"bob-40001\"]")
            .await;
        // Write skew's four outcomes on PostgreSQL, and MariaDB's deadlock.
        assert_eq!(b.count("label.rl-choice").await, 5);
        assert_eq!(
            b.js("return document.querySelector('button.rl-run').disabled;", vec![])
                .await,
            json!(true),
            "Run waits for a pick"
        );
        b.click("label.rl-choice[data-choice=\"both-commit\"] input").await;
        b.click("button.rl-run").await;
        b.wait_for("label.rl-choice[data-right=\"true\"]").await;
        assert_eq!(
            b.attr("label.rl-choice[data-right=\"true\"]", "data-choice")
                .await
                .as_deref(),
            Some("bob-40001"),
            "what the serializable run did"
        );
        assert_eq!(
            b.attr("label.rl-choice[data-picked=\"true\"]", "data-right")
                .await
                .as_deref(),
            Some("false"),
            "the reader's pick is marked wrong"
        );
        let why = b.text("p.rl-reveal-why").await.unwrap_or_default();
        assert!(why.contains("Bob"), "{why}");
        b.screenshot("revealed").await;
        // An embed asks too, with predict=1 (served the full app).
        b.goto("/embed/isolation/write-skew?variant=read-committed&predict=1")
            .await;
        b.wait_for(".rl-embed fieldset.rl-predict").await;
    })
    .await;
}

/// Every lab asks: one scenario of each of the other three, a pick, a run, and the right choice
/// marked with its reason. (Which choice is right is each lab's test file's business; here, that
/// the page shows the one the run revealed.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_other_labs_ask_too() {
    run("the_other_labs_ask_too", async |b| {
        for (page, pick, right) in [
            (
                "/lab/locks/fencing?variant=fence&predict=1",
                "a-overwrites",
                "a-refused",
            ),
            (
                "/lab/outbox/dual-write?variant=publish-first&predict=1",
                "neither",
                "phantom-event",
            ),
            (
                "/lab/idempotency/stale-release?variant=unguarded&predict=1",
                "one-charge",
                "charged-twice",
            ),
        ] {
            b.goto(page).await;
            b.wait_for(&format!("fieldset.rl-predict label.rl-choice[data-choice=\"{pick}\"]"))
                .await;
            b.click(&format!("label.rl-choice[data-choice=\"{pick}\"] input")).await;
            b.click("button.rl-run").await;
            b.wait_for("label.rl-choice[data-right=\"true\"]").await;
            assert_eq!(
                b.attr("label.rl-choice[data-right=\"true\"]", "data-choice")
                    .await
                    .as_deref(),
                Some(right),
                "{page}"
            );
            let why = b.text("p.rl-reveal-why").await.unwrap_or_default();
            assert!(why.len() > 40, "{page}: {why}");
            let lab = page.split('/').nth(2).unwrap_or("lab");
            b.screenshot(&format!("{lab}-revealed")).await;
        }
    })
    .await;
}

/// No page panics. The harness fails every browser test whose pages logged a panic (a
/// `RuntimeError` from the wasm); this one goes where a reader goes: the catalog, every
/// scenario's page, the atlas, /write with its sample spec saved and run, and a room whose
/// trainer runs the write skew in the detailed view while a participant follows in the compact
/// view the address names (`?view=compact`, which a room honours as every page does), then
/// switches to the detailed one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_page_panics_across_the_catalog_the_rooms_and_write() {
    run("no_page_panics", async |b| {
        b.set_viewport(1280, 900).await;
        b.goto("/").await;
        b.wait_for("a.rl-scenario-link").await;
        let scenarios: Vec<String> = b
            .attrs("a.rl-scenario-link", "href")
            .await
            .into_iter()
            .flatten()
            .collect();
        assert!(scenarios.len() >= 10, "every lab's scenarios: {scenarios:?}");
        for scenario in &scenarios {
            b.goto(scenario).await;
            b.wait_for("button.rl-run").await;
            assert_eq!(b.page_errors().await, Vec::<String>::new(), "{scenario}");
        }
        b.goto("/atlas").await;
        b.wait_for(".rl-atlas").await;

        b.goto("/write").await;
        b.wait_for("button.rl-spec-save:not([disabled])").await;
        b.click("button.rl-spec-save").await;
        b.wait_for(".rl-spec-saved label.rl-choice[data-choice=\"kept\"]").await;
        // "Save and run": it runs once the reader has picked.
        b.click(".rl-spec-saved label.rl-choice[data-choice=\"kept\"]").await;
        b.wait_for(".rl-spec-saved .rl-verdict").await;
        assert_eq!(b.page_errors().await, Vec::<String>::new(), "/write");

        b.goto("/lab/isolation/write-skew?variant=serializable").await;
        b.click("button.rl-teach").await;
        b.wait_for(".rl-room[data-trainer=\"true\"] .rl-room-controls button.rl-run")
            .await;
        let room = b.attr(".rl-room", "data-room").await.expect("a room code");
        assert_eq!(
            b.attr(".rl-view-detailed", "aria-pressed").await.as_deref(),
            Some("true"),
            "the trainer's wide page is detailed"
        );
        let trainer = b.client.window().await.expect("the trainer's window");
        let participant = b.client.new_window(false).await.expect("a window").handle;
        b.client.switch_to_window(participant.clone()).await.expect("switch");
        b.goto(&format!("/room/{room}?view=compact")).await;
        b.wait_for(".rl-room[data-trainer=\"false\"] .rl-room-follow").await;
        assert_eq!(
            b.attr(".rl-view-compact", "aria-pressed").await.as_deref(),
            Some("true"),
            "the room opens in the view its address names"
        );
        b.client.switch_to_window(trainer.clone()).await.expect("switch");
        b.click(".rl-room-controls button.rl-run").await;
        b.wait_for(".rl-verdict").await;
        b.client.switch_to_window(participant).await.expect("switch");
        b.wait_for(".rl-verdict").await;
        b.click(".rl-view-detailed").await;
        b.wait_for(".rl-timeline .rl-card").await;
        b.settle().await;
        b.client.switch_to_window(trainer).await.expect("switch");
        assert_eq!(b.page_errors().await, Vec::<String>::new(), "the room");
    })
    .await;
}

/// A reader's spec goes wherever a scenario goes, every permutation included: its page keeps
/// the permutation its link names (`?variant=every`), its embed plays every permutation as the
/// matrix and opens a row in place, the permalink of that run (and that run in an iframe) draws
/// the matrix, and a room playing a lab scenario switches to the spec from a pasted link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_goes_wherever_a_scenario_goes() {
    run("spec_everywhere", async |b| {
        let id = harness::save_spec(b, shared::spec::STARTER).await;
        let matrix_rows = |n: usize| async move {
            b.wait_js(
                "the matrix's rows",
                "return document.querySelectorAll(arguments[0]).length === arguments[1];",
                vec![json!(".rl-matrix-row"), json!(n)],
            )
            .await;
        };

        // Its page keeps "every permutation" from its link, and plays it as the matrix.
        b.goto(&format!("/s/{id}?variant=every")).await;
        b.wait_for(".rl-spec-saved .rl-run-panel[data-variant=\"every\"]").await;
        b.settle().await;
        let search = b.js("return location.search;", vec![]).await;
        assert!(search.as_str().is_some_and(|q| q.contains("variant=every")), "{search}");
        b.click(".rl-spec-saved button.rl-run").await;
        matrix_rows(2).await;
        b.wait_for("a.rl-permalink").await;
        let permalink = b
            .js(
                "return new URL(document.querySelector('a.rl-permalink').href).pathname;",
                vec![],
            )
            .await;
        let permalink = permalink.as_str().expect("the permalink").to_owned();

        // Its permalink: the matrix as played, from the stored run.
        b.goto(&permalink).await;
        b.wait_for(".rl-replay .rl-matrix").await;
        matrix_rows(2).await;
        assert_eq!(
            b.text(".rl-matrix-heading").await.as_deref(),
            Some("Every permutation, as played")
        );
        let outcomes = b.texts(".rl-matrix-row .rl-matrix-outcome").await;
        assert!(
            outcomes[0].contains("broken") && outcomes[1].contains("checks held"),
            "{outcomes:?}"
        );
        // Its lanes stayed quiet: no timeline, scrubber, transcript, view or recording to
        // download, only the matrix.
        let noise = ".rl-replay :is(.rl-scrubber, .rl-compact, .rl-timeline, details.rl-transcript, .rl-controls)";
        assert_eq!(b.count(noise).await, 0, "a matrix run draws its matrix alone");
        b.screenshot("permalink").await;
        // The same run in an iframe (what oEmbed gives for its link): the matrix too.
        b.goto(&format!("/embed{permalink}")).await;
        b.wait_for(".rl-replay .rl-matrix").await;
        matrix_rows(2).await;

        // Its embed, at a blog's column width: every permutation, and a row opened in place.
        b.set_viewport(680, 900).await;
        b.goto(&format!("/embed/s/{id}?variant=every")).await;
        b.click("button.rl-run").await;
        matrix_rows(2).await;
        b.screenshot("embed-every").await;
        harness::open_permutation(b, 1, "prevented").await;
        let title = b.attr(".rl-embed-title a", "href").await;
        assert_eq!(
            title,
            Some(format!("/s/{id}")),
            "the embed's title leads to the spec's page"
        );
        b.reset_viewport().await;

        // A room playing a lab scenario switches to the spec from its pasted link.
        b.goto("/lab/isolation/write-skew").await;
        b.click("button.rl-teach").await;
        b.wait_for(".rl-room[data-trainer=\"true\"] .rl-room-spec-link").await;
        let link = format!("{}/s/{id}?variant=p2", b.base);
        b.js(
            "const i = document.querySelector('.rl-room-spec-link'); i.value = arguments[0]; \
             i.dispatchEvent(new Event('input', {bubbles: true}));",
            vec![json!(link)],
        )
        .await;
        b.click("button.rl-room-spec-play").await;
        b.wait_js(
            "the spec chosen",
            "return document.querySelector('select.rl-room-scenario').value === arguments[0];",
            vec![json!(format!("spec/{id}"))],
        )
        .await;
        b.wait_for(".rl-room-controls .rl-variant[data-variant=\"p2\"][aria-pressed=\"true\"]")
            .await;
        assert_eq!(
            b.text(".rl-room-scenario-title").await.as_deref(),
            Some("Two managers overspend a budget (write skew)")
        );
        b.screenshot("room-spec").await;
        // A link that names no spec says so.
        b.js(
            "const i = document.querySelector('.rl-room-spec-link'); i.value = 'https://example.com/lab/x'; \
             i.dispatchEvent(new Event('input', {bubbles: true}));",
            vec![],
        )
        .await;
        b.click("button.rl-room-spec-play").await;
        b.wait_for(".rl-room-spec [role=\"alert\"]").await;
    })
    .await;
}

/// "Teach this" on a reader's spec: the trainer's room names the spec (its title in the heading
/// and the scenario list), offers its permutations as the variants and Step; a participant is
/// asked the spec's question, told what plays once it does, and follows the run to its verdict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_is_taught_in_a_room_by_its_title_with_its_permutations() {
    run("spec_room", async |b| {
        let id = harness::save_spec(b, shared::spec::STARTER).await;
        let title = "Two managers overspend a budget (write skew)";
        b.goto(&format!("/s/{id}")).await;
        b.wait_for(".rl-spec-saved button.rl-teach").await;
        b.click(".rl-spec-saved button.rl-teach").await;
        b.wait_for(".rl-room[data-trainer=\"true\"] .rl-room-controls .rl-variant")
            .await;
        let room = b.attr(".rl-room", "data-room").await.expect("a room code");
        assert_eq!(b.text(".rl-room-scenario-title").await.as_deref(), Some(title));
        let selected = "const s = document.querySelector('select.rl-room-scenario'); \
                        return [s.value, s.selectedOptions[0].textContent];";
        assert_eq!(b.js(selected, vec![]).await, json!([format!("spec/{id}"), title]));
        let variants: Vec<String> = b
            .attrs(".rl-room-controls .rl-variant", "data-variant")
            .await
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(variants, ["p1", "p2", "every"], "the spec's permutations");
        assert_eq!(
            b.attr(".rl-room-controls button.rl-step", "disabled").await,
            None,
            "Step"
        );
        b.screenshot("trainer").await;

        let trainer = b.client.window().await.expect("the trainer's window");
        let participant = b.client.new_window(false).await.expect("a window").handle;
        b.client.switch_to_window(participant.clone()).await.expect("switch");
        b.goto(&format!("/room/{room}")).await;
        b.wait_for(".rl-room[data-trainer=\"false\"] .rl-room-follow").await;
        // The spec's own question and choices (the starter's `# choice` lines).
        b.wait_for(".rl-predict label.rl-choice[data-choice=\"kept\"]").await;
        let choices = b.attrs(".rl-predict label.rl-choice", "data-choice").await;
        assert_eq!(choices, [Some("overspent".to_owned()), Some("kept".to_owned())]);
        b.click(".rl-predict label.rl-choice[data-choice=\"kept\"]").await;
        b.client.switch_to_window(trainer.clone()).await.expect("switch");
        b.wait_js(
            "the trainer's tally to count the pick",
            "const e = document.querySelector('.rl-tally li[data-choice=\"kept\"]'); return !!e && e.dataset.count === '1';",
            vec![],
        )
        .await;
        b.click(".rl-room-controls button.rl-run").await;
        b.wait_for(".rl-verdict").await;
        b.client.switch_to_window(participant).await.expect("switch");
        b.wait_for(".rl-verdict").await;
        b.wait_for(".rl-room-scenario-title").await;
        assert_eq!(
            b.text(".rl-room-scenario-title").await.as_deref(),
            Some(title),
            "told what plays"
        );
        assert!(
            b.count(".rl-timeline .rl-card, .rl-compact .rl-line").await >= 6,
            "the run followed"
        );
        b.screenshot("participant").await;
    })
    .await;
}
