//! The three users' paths, each walked as its user would in headless Chromium against the real
//! server: a blog author who pastes an embed into a post on another site, a trainer who runs
//! round after round in a room, and a reader who steps through a run on a phone. Plus what each
//! of them leans on: time drawn to scale, links that keep their state, pages that never scroll
//! sideways at 360 px, and big runs that stay readable.
//!
//! Same harness as `browser.rs` (`browser/harness.rs`): the real router on port 0, a chromedriver
//! of each test's own, waits that poll the page (never fixed sleeps), screenshots in
//! `target/screenshots/`.

#![allow(clippy::too_many_lines, reason = "a test reads top to bottom as the story it checks")]

mod common;
// Shared with the other browser test binaries, each of which uses part of it.
#[allow(dead_code)]
#[path = "browser/harness.rs"]
mod harness;

use harness::{Browser, Host, Readers, choose_variant, run, run_with};
use serde_json::{Value as Json, json};
use std::time::Duration;

/// WebDriver's → key.
const ARROW_RIGHT: char = '\u{e014}';

/// Inside frame `index` of the page: waits for the finished run, then returns the embed page's
/// own height, its `<html>` theme attributes and its body's background.
async fn finished_embed(b: &Browser, index: u16) -> (u64, Json) {
    b.client.enter_frame(index).await.expect("enter the embed's iframe");
    b.wait_for(".rl-verdict").await;
    b.wait_for(".rl-ledger").await;
    b.settle().await;
    let inside = b
        .js(
            "const d = document.documentElement; return [d.scrollHeight, \
             { theme: d.getAttribute('data-rl-theme'), background: d.getAttribute('data-rl-background'), \
               body: getComputedStyle(document.body).backgroundColor, \
               text: getComputedStyle(document.querySelector('.racelab')).color }];",
            vec![],
        )
        .await;
    b.client.enter_parent_frame().await.expect("back to the host");
    (inside[0].as_u64().expect("a height"), inside[1].clone())
}

/// A blog author opens "Embed this", picks how the embed plays, copies the web component and
/// the iframe, and pastes both into a post on another site: each grows to the finished run's
/// height (no scrollbar inside), in the post's own colours (transparent, light text on a cream
/// page, dark on a dark one). The live preview shows exactly what is pasted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pasted_component_and_a_pasted_iframe_grow_to_the_finished_run_on_another_origin() {
    run("pasted_embeds_grow_on_another_origin", async |b| {
        b.goto("/lab/isolation/write-skew?variant=serializable").await;
        b.click(".rl-embed-code > summary").await;
        // The component first, then the iframe, then the link; each with its own Copy.
        assert_eq!(
            b.attrs(".rl-snippet", "data-kind").await,
            [Some("component".into()), Some("iframe".into()), Some("link".into())]
        );
        assert_eq!(b.count(".rl-snippet button.rl-copy").await, 3);
        // The defaults a blog wants: the host's colours, playing when scrolled into view.
        let component = b.snippet("component").await;
        assert_eq!(
            component,
            format!(
                "<racelab-scenario scenario=\"isolation/write-skew\" variant=\"serializable\" theme=\"host\" autoplay=\"visible\"></racelab-scenario>\n<script src=\"{}/embed.js\" async></script>",
                b.base
            )
        );
        // This post plays the race as it loads (the next test scrolls to one).
        b.select_label(".rl-embed-autoplay", "as soon as the page loads").await;
        let component = b.snippet("component").await;
        let iframe = b.snippet("iframe").await;
        assert!(component.contains(" autoplay></racelab-scenario>"), "{component}");
        assert!(iframe.contains("autoplay=1") && iframe.contains("theme=host"), "{iframe}");
        assert_eq!(
            b.snippet("link").await,
            format!("{}/lab/isolation/write-skew?variant=serializable", b.base)
        );
        // The live preview is the embed that will be pasted, sized by the same loader.
        let preview = b.attr("iframe.rl-embed-preview-frame", "src").await.unwrap_or_default();
        assert!(iframe.contains(&preview.replace('&', "&amp;")), "{preview} in {iframe}");
        b.wait_js(
            "the preview to grow to its finished run",
            "const f = document.querySelector('iframe.rl-embed-preview-frame'); \
             return !!f && parseFloat(f.style.height) > 900;",
            vec![],
        )
        .await;
        b.screenshot("embed-panel").await;

        // Pasted into a cream post on another site, read on a system that prefers dark colours:
        // the embed takes the post's colours, not the system's (no black box on a light blog).
        b.prefer_dark(true).await;
        let host = Host::start().await;
        host.paste(
            "rgb(250,240,230)",
            &format!("<p>A post about write skew.</p>{component}<p>And the same race as an iframe:</p>{iframe}"),
        );
        b.goto_url(&host.url()).await;
        let origin = b.js("return location.origin;", vec![]).await;
        assert_ne!(origin, json!(b.base), "the post is on another origin");
        for (index, what) in [(0, "the component's iframe"), (1, "the pasted iframe")] {
            // As a reader scrolls to it: a browser does not lay out an iframe of another origin
            // while it is out of view, so it reports its height once it is seen.
            b.js(
                "document.querySelectorAll('iframe')[arguments[0]].scrollIntoView();",
                vec![json!(index)],
            )
            .await;
            let (height, colours) = finished_embed(b, index).await;
            let shown = b
                .wait_js(
                    &format!("{what} to take its finished height"),
                    "const f = document.querySelectorAll('iframe')[arguments[0]]; const h = f.getBoundingClientRect().height; \
                     return Math.abs(h - arguments[1]) <= 2 ? h : null;",
                    vec![json!(index), json!(height)],
                )
                .await;
            println!("{what}: finished at {height} px, shown {shown} px tall");
            assert!(height > 900, "{what}: a finished run is taller than the 640 px it starts at: {height}");
            assert_eq!(
                colours,
                json!({"theme": "light", "background": "transparent", "body": "rgba(0, 0, 0, 0)", "text": "rgb(27, 31, 36)"}),
                "{what}: transparent on the cream post, in light colours (dark text)"
            );
        }
        b.screenshot("cream-post").await;

        // The same component on a dark post: dark colours, still transparent.
        host.paste("rgb(24,26,32)", &format!("<p style='color:#ddd'>A dark post.</p>{component}"));
        b.goto_url(&host.url()).await;
        let (_, colours) = finished_embed(b, 0).await;
        assert_eq!(colours["theme"], "dark", "{colours}");
        assert_eq!(colours["text"], "rgb(230, 237, 243)", "light text on the dark post: {colours}");
        assert_eq!(colours["background"], "transparent", "{colours}");
        b.screenshot("dark-post").await;
    })
    .await;
}

/// `autoplay="visible"`: a race far down a post starts when the reader scrolls to it, not while
/// they read the top.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embed_that_plays_when_seen_waits_for_the_reader_to_scroll_to_it() {
    run("an_embed_plays_when_seen", async |b| {
        let host = Host::start().await;
        host.paste(
            "white",
            &format!(
                "<p>The top of a long post.</p><div style='height:1400px'></div>\
                 <racelab-scenario scenario='isolation/lost-update' variant='read-committed' autoplay='visible'></racelab-scenario>\
                 <script src='{}/embed.js' async></script>",
                b.base
            ),
        );
        b.goto_url(&host.url()).await;
        // Loaded (below the fold, near enough for a lazy iframe to load), not playing.
        b.wait_for("racelab-scenario iframe").await;
        b.client.enter_frame(0).await.expect("the embed");
        b.wait_for(".rl-run:not([disabled])").await;
        // The browser has told this frame's observers that it is out of view (an observer of the
        // test's own gets the same first answer the embed's got).
        b.js(
            "window.seenByTest = null; new IntersectionObserver(es => { window.seenByTest = es[0].isIntersecting; }).observe(document.body);",
            vec![],
        )
        .await;
        assert_eq!(
            b.wait_js("the frame's first answer", "return window.seenByTest === null ? null : [window.seenByTest];", vec![]).await,
            json!([false]),
            "the embed is below the fold"
        );
        assert_eq!(
            b.attr(".rl-status", "data-state").await.as_deref(),
            Some("idle"),
            "not played while the reader is at the top of the post"
        );
        b.client.enter_parent_frame().await.expect("the post");
        b.js("document.querySelector('racelab-scenario').scrollIntoView();", vec![]).await;
        b.client.enter_frame(0).await.expect("the embed");
        b.wait_for(".rl-verdict").await;
        assert_eq!(b.attr(".rl-verdict", "data-kind").await.as_deref(), Some("reproduced"));
        b.client.enter_parent_frame().await.expect("the post");
    })
    .await;
}

/// Whether every choice of the participant's question can be picked, and none is marked.
async fn fresh_question(b: &Browser, title: &str, variant: &str) {
    let names = format!("{title} at {variant}");
    b.wait_js(
        &format!("the question about {names}"),
        "const s = document.querySelector('.rl-predict-subject');          return !!s && s.textContent.startsWith(arguments[0]) && s.textContent.endsWith(' at ' + arguments[1]);",
        vec![json!(title), json!(variant)],
    )
    .await;
    let state = b
        .js(
            "const inputs = [...document.querySelectorAll('label.rl-choice input')]; \
             return { enabled: inputs.filter(i => !i.disabled).length, checked: inputs.filter(i => i.checked).length, \
                      inputs: inputs.length, marked: document.querySelectorAll('label.rl-choice[data-right]').length, \
                      why: document.querySelectorAll('.rl-reveal-why').length, cards: document.querySelectorAll('.rl-card, .rl-line').length, \
                      verdict: document.querySelectorAll('.rl-verdict').length, hint: document.querySelector('.rl-predict-hint')?.textContent ?? '' };",
            vec![],
        )
        .await;
    assert_eq!(
        state["enabled"], state["inputs"],
        "{names}: every choice can be picked: {state}"
    );
    assert!(state["inputs"].as_u64().unwrap_or(0) >= 3, "{state}");
    assert_eq!(
        (
            &state["checked"],
            &state["marked"],
            &state["why"],
            &state["cards"],
            &state["verdict"]
        ),
        (&json!(0), &json!(0), &json!(0), &json!(0), &json!(0)),
        "{names}: no pick, no mark, no explanation, no last round's run: {state}"
    );
    assert!(
        state["hint"]
            .as_str()
            .is_some_and(|h| h.contains("your trainer runs it")),
        "the hint does not ask a participant to run it: {state}"
    );
}

/// A trainer's session: three rounds in one room with a change of scenario between them. Each
/// new question resets every participant's choices, marks and explanation (even on a page
/// reloaded after a reveal) and names its scenario and variant; picks lock once the run starts;
/// the trainer's tally counts them and marks the right answer after the reveal; presenter mode
/// steps with the keyboard; closing asks first, then ends everything on every page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_rounds_in_one_room() {
    run("three_rounds_in_one_room", async |b| {
        b.goto("/lab/isolation/write-skew?variant=serializable").await;
        b.click("button.rl-teach").await;
        b.wait_for(".rl-room[data-trainer=\"true\"] .rl-room-controls button.rl-run").await;
        let room = b.attr(".rl-room", "data-room").await.expect("a room code");
        let trainer = b.client.window().await.expect("the trainer's window");
        let participant = b.client.new_window(false).await.expect("a window").handle;
        b.client.switch_to_window(participant.clone()).await.expect("switch");
        b.goto(&format!("/room/{room}")).await;

        let rounds = [
            ("isolation/write-skew", "serializable", "Write skew", "SERIALIZABLE", "both-commit", "bob-40001"),
            ("isolation/lost-update", "read-committed", "Lost update", "READ COMMITTED", "both-add", "bob-erases"),
            ("isolation/write-skew", "read-committed", "Write skew", "READ COMMITTED", "both-commit", "both-commit"),
        ];
        for (round, (scenario, variant, title, label, pick, right)) in rounds.into_iter().enumerate() {
            let round = round + 1;
            if round > 1 {
                // The trainer settles on the next scenario and variant: the next question.
                b.client.switch_to_window(trainer.clone()).await.expect("switch");
                b.select("select.rl-room-scenario", scenario).await;
                choose_variant(b, variant).await;
                b.wait_js(
                    "the trainer's page to name the new question",
                    "const q = document.querySelector('.rl-room-question'); return !!q && q.textContent.includes(arguments[0]) && q.textContent.includes(arguments[1]);",
                    vec![json!(title), json!(label)],
                )
                .await;
                b.client.switch_to_window(participant.clone()).await.expect("switch");
                if round == 2 {
                    // A participant who reloads after a reveal gets the new round too.
                    b.client.refresh().await.expect("reload");
                }
            }
            fresh_question(b, title, label).await;
            b.click(&format!("label.rl-choice[data-choice=\"{pick}\"] input")).await;
            b.client.switch_to_window(trainer.clone()).await.expect("switch");
            b.wait_for(&format!(".rl-tally li[data-choice=\"{pick}\"][data-count=\"1\"]")).await;

            // The trainer steps (in presenter mode from round 2, with the keyboard).
            if round == 2 {
                b.click("button.rl-presenter-toggle").await;
                b.wait_for(".rl-room.rl-presenter").await;
            }
            b.click("button.rl-step").await;
            b.wait_for(".rl-next-step").await;
            b.client.switch_to_window(participant.clone()).await.expect("switch");
            b.wait_for(".rl-next-step").await;
            assert_eq!(
                b.js("return [...document.querySelectorAll('label.rl-choice input')].every(i => i.disabled);", vec![]).await,
                json!(true),
                "round {round}: picks are locked while the steps show what happens"
            );
            b.client.switch_to_window(trainer.clone()).await.expect("switch");
            for _ in 0..60 {
                if b.count(".rl-verdict").await > 0 {
                    break;
                }
                let before = b.count(".rl-timeline .rl-card").await;
                if round == 1 {
                    b.click("button.rl-next").await;
                } else {
                    b.wait_for("button.rl-next:not([disabled])").await;
                    b.press(ARROW_RIGHT).await;
                }
                b.wait_js(
                    "the step to land",
                    "const next = document.querySelector('button.rl-next'); \
                     return document.querySelector('.rl-verdict') !== null \
                         || (document.querySelectorAll('.rl-timeline .rl-card').length > arguments[0] && next && !next.disabled);",
                    vec![json!(before)],
                )
                .await;
            }
            b.wait_for(&format!(".rl-tally[data-revealed=\"true\"] li[data-choice=\"{right}\"][data-right=\"true\"]"))
                .await;
            assert_eq!(b.count(".rl-tally li[data-right=\"true\"]").await, 1, "round {round}: one right answer marked");
            b.screenshot(&format!("trainer-round-{round}")).await;
            b.client.switch_to_window(participant.clone()).await.expect("switch");
            b.wait_for(&format!("label.rl-choice[data-choice=\"{right}\"][data-right=\"true\"]")).await;
            assert_eq!(
                b.attr("label.rl-choice[data-picked=\"true\"]", "data-choice").await.as_deref(),
                Some(pick)
            );
            assert!(b.text("p.rl-reveal-why").await.is_some_and(|w| w.len() > 20));
            b.screenshot(&format!("participant-round-{round}")).await;
        }

        // Closing asks first; keeping it open changes nothing.
        b.client.switch_to_window(trainer.clone()).await.expect("switch");
        b.click("button.rl-room-close").await;
        b.wait_for(".rl-room-close-confirm").await;
        b.click("button.rl-room-close-no").await;
        b.wait_for("button.rl-room-close").await;
        assert_eq!(b.attr(".rl-room", "data-closed").await.as_deref(), Some("false"));
        b.click("button.rl-room-close").await;
        b.click("button.rl-room-close-yes").await;
        b.wait_for(".rl-room[data-closed=\"true\"] .rl-room-ended").await;
        assert_eq!(
            b.js("return [...document.querySelectorAll('.rl-room-controls button, .rl-room-controls select')].every(e => e.disabled);", vec![]).await,
            json!(true),
            "the trainer's controls are dead once the room closed"
        );
        b.client.switch_to_window(participant.clone()).await.expect("switch");
        b.wait_for(".rl-room[data-closed=\"true\"] .rl-room-ended").await;
        assert_eq!(
            b.js("return [...document.querySelectorAll('label.rl-choice input')].every(i => i.disabled);", vec![]).await,
            json!(true),
            "a closed room's choices cannot be clicked"
        );
        b.screenshot("participant-closed").await;
    })
    .await;
}

/// A trainer at the cap of open rooms: "Teach this" says so in a message (not raw text in the
/// controls row), and lists the rooms this browser opened that are still open, each a link back
/// to its trainer page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_room_is_said_plainly_and_open_rooms_can_be_reopened() {
    // Served as `racelab serve` serves: the trainer's address has a cap.
    run_with("refused_room_and_open_rooms", Readers::ByAddress, async |b| {
        let cap = common::config().rooms_per_trainer;
        b.goto("/lab/isolation/write-skew").await;
        for opened in 1..=cap {
            b.click("button.rl-teach").await;
            b.wait_for(".rl-room[data-trainer=\"true\"]").await;
            b.goto("/lab/isolation/write-skew").await;
            b.wait_js(
                &format!("{opened} open rooms listed"),
                "return document.querySelectorAll('a.rl-my-room').length === arguments[0];",
                vec![json!(opened)],
            )
            .await;
        }
        b.click("button.rl-teach").await;
        b.wait_for(".rl-notice--refused").await;
        let said = b.text(".rl-notice--refused").await.unwrap_or_default();
        assert!(
            said.starts_with("No room opened.") && said.contains("rooms open already"),
            "{said}"
        );
        assert!(
            !said.contains("/api/rooms") && !said.contains("429"),
            "no raw request text: {said}"
        );
        assert_eq!(
            b.js(
                "return getComputedStyle(document.querySelector('.rl-notice--refused')).borderInlineStartWidth;",
                vec![]
            )
            .await,
            json!("4px"),
            "said in a box"
        );
        b.screenshot("refused").await;
        // Each listed room leads back to its trainer page.
        let link = b.attr("a.rl-my-room", "href").await.expect("a room link");
        assert!(link.contains("#trainer="), "{link}");
        b.goto(&link).await;
        b.wait_for(".rl-room[data-trainer=\"true\"] button.rl-room-close").await;
        // The rooms close, as a trainer would close them (each with its own token).
        b.goto("/lab/isolation/write-skew").await;
        b.wait_js(
            "the open rooms listed",
            "return document.querySelectorAll('a.rl-my-room').length === arguments[0];",
            vec![json!(cap)],
        )
        .await;
        let links: Vec<Option<String>> = b.attrs("a.rl-my-room", "href").await;
        let http = reqwest::Client::new();
        for link in links.into_iter().flatten() {
            let (path, token) = link.split_once("#trainer=").expect("a trainer link");
            let room = path.trim_start_matches("/room/").split('?').next().unwrap_or_default();
            let closed = http
                .delete(format!("{}/api/rooms/{room}", b.base))
                .bearer_auth(token)
                .send()
                .await
                .expect("an answer");
            assert_eq!(closed.status(), 204, "{room}");
        }
    })
    .await;
}

/// Whether the element `selector` is wholly inside the window.
async fn in_view(b: &Browser, selector: &str) -> bool {
    b.js(
        "const e = document.querySelector(arguments[0]); if (!e) return false; const r = e.getBoundingClientRect(); \
         return r.top >= -1 && r.bottom <= window.innerHeight + 1;",
        vec![json!(selector)],
    )
    .await
        == json!(true)
}

/// A reader on a phone steps a run to its end: after every step, the Next button and the new
/// card are both on screen (sticky controls, the new card scrolled to), the keyboard steps too,
/// and the status names the service the paused step goes to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_on_a_phone_steps_to_the_end_with_the_next_step_in_view() {
    run("stepping_on_a_phone", async |b| {
        b.set_viewport(360, 640).await;
        b.goto("/lab/isolation/write-skew?variant=serializable").await;
        // The toggle is drawn once the scenario has loaded: read it then, not before.
        b.wait_for("button.rl-view-compact").await;
        assert_eq!(
            b.attr("button.rl-view-compact", "aria-pressed").await.as_deref(),
            Some("true"),
            "a phone gets the compact view"
        );
        b.click("button.rl-step").await;
        b.wait_for("button.rl-next:not([disabled])").await;
        let paused = b.text(".rl-status").await.unwrap_or_default();
        assert!(paused.contains("Paused before") && paused.contains("PostgreSQL"), "{paused}");
        assert_eq!(b.attr(".rl-status", "data-state").await.as_deref(), Some("paused"));
        let mut steps = 0;
        while b.count(".rl-verdict").await == 0 {
            steps += 1;
            assert!(steps < 60, "the run ends");
            let rows = b.count(".rl-compact-row").await;
            if steps % 2 == 0 {
                b.press(ARROW_RIGHT).await;
            } else {
                b.click("button.rl-next").await;
            }
            b.wait_js(
                "the step to land",
                "const next = document.querySelector('button.rl-next'); \
                 return document.querySelector('.rl-verdict') !== null \
                     || (document.querySelectorAll('.rl-compact-row').length > arguments[0] && next && !next.disabled);",
                vec![json!(rows)],
            )
            .await;
            if b.count(".rl-verdict").await > 0 {
                break;
            }
            // Scrolling follows in the next frame: wait for it, then look. The newest row is
            // below the deck that sticks at the top, not under it.
            b.wait_js(
                "the newest row to be scrolled into view, below the deck",
                "const rows = document.querySelectorAll('.rl-compact-row'); const r = rows[rows.length - 1].getBoundingClientRect(); \
                 const deck = document.querySelector('.rl-deck').getBoundingClientRect(); \
                 return r.bottom <= window.innerHeight + 1 && r.top >= deck.bottom - 1;",
                vec![],
            )
            .await;
            assert!(in_view(b, "button.rl-next").await, "step {steps}: Next is on screen");
            if steps == 6 {
                b.screenshot("step-6").await;
            }
        }
        b.wait_js(
            "the verdict to be scrolled into view",
            "const r = document.querySelector('.rl-verdict').getBoundingClientRect(); return r.top < window.innerHeight && r.bottom > 0;",
            vec![],
        )
        .await;
        println!("stepped to the end in {steps} steps");
        assert!(steps > 10, "{steps}");
        b.screenshot("done").await;

        // On Redis, the status names Redis.
        b.goto("/lab/locks/redis-cli").await;
        b.click("button.rl-step").await;
        b.wait_js(
            "a step on Redis",
            "const s = document.querySelector('.rl-status'); if (!s || s.dataset.state !== 'paused') return false; \
             if (s.textContent.includes('Redis')) return true; \
             const n = document.querySelector('button.rl-next'); if (n && !n.disabled) n.click(); return false;",
            vec![],
        )
        .await;
        b.click("button.rl-cancel").await;
        b.wait_for(".rl-status[data-state=\"cancelled\"]").await;
    })
    .await;
}

/// The narrowest a lane of the compact timeline may be, in CSS px: a dozen characters of its
/// monospace line, `COMMIT ✓` whole, a lane's name on one line.
const READABLE_LANE: f64 = 96.0;

/// The width of the compact timeline's narrowest lane head, if one is drawn.
async fn narrowest_lane(b: &Browser) -> Option<f64> {
    b.js(
        "const w = [...document.querySelectorAll('.rl-compact .rl-lane-head')].map(h => h.getBoundingClientRect().width); \
         return w.length ? Math.min(...w) : null;",
        vec![],
    )
    .await
    .as_f64()
}

/// Presses Run on the scenario page open now (`what` names it) and waits, up to `within`, for the
/// run to end, as done or failed.
async fn run_to_its_end(b: &Browser, what: &str, within: Duration) {
    b.wait_for("button.rl-run:not([disabled])").await;
    b.click("button.rl-run").await;
    b.wait_js_for(
        &format!("{what} to finish"),
        within,
        "const s = document.querySelector('.rl-status'); return !!s && ['done', 'failed'].includes(s.dataset.state);",
        vec![],
    )
    .await;
    b.settle().await;
}

/// Runs of four, five and more lanes on a phone (two relays, the chaos run, a load test): every
/// lane of the compact timeline keeps a readable width, and the timeline scrolls sideways
/// inside itself while the page does not; each lane's name stays on one line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_lanes_stay_readable_on_a_phone() {
    run("many_lanes_360", async |b| {
        b.set_viewport(360, 740).await;
        for id in ["outbox/two-relays", "outbox/chaos", "isolation/load-test"] {
            b.goto(&format!("/lab/{id}")).await;
            run_to_its_end(b, id, Duration::from_secs(240)).await;
            b.screenshot(&id.replace('/', "-")).await;
            let page = "const d = document.documentElement; return d.scrollWidth > d.clientWidth;";
            assert_eq!(
                b.js(page, vec![]).await,
                json!(false),
                "{id}: the page never scrolls sideways"
            );
            let Some(narrowest) = narrowest_lane(b).await else {
                // A load test draws progress and a chart, not lanes: nothing to squeeze.
                assert!(id.ends_with("load-test"), "{id} draws a timeline");
                continue;
            };
            assert!(narrowest >= READABLE_LANE, "{id}: a lane {narrowest} px wide");
            let lanes = b.count(".rl-compact .rl-lane-head").await;
            let broken = b
                .js(
                    "return [...document.querySelectorAll('.rl-compact .rl-lane-name')] \
                     .filter(n => n.getBoundingClientRect().height > 1.5 * parseFloat(getComputedStyle(n).lineHeight) \
                                  || n.scrollWidth > n.clientWidth + 1) \
                     .map(n => n.textContent);",
                    vec![],
                )
                .await;
            assert_eq!(broken, json!([]), "{id}: lane names on one line");
            let scrolls = "const t = document.querySelector('.rl-compact'); return t.scrollWidth > t.clientWidth;";
            assert_eq!(
                b.js(scrolls, vec![]).await,
                json!(lanes > 3),
                "{id}: {lanes} lanes scroll inside the timeline"
            );
        }
    })
    .await;
}

/// No page scrolls sideways at 360 px: every scenario page of every lab, before its run and after
/// it (each in the compact view a phone gets), then the catalog, a compare page, a permalink and
/// a room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_page_scrolls_sideways_at_360_px() {
    run("no_page_scrolls_sideways_at_360", async |b| {
        b.set_viewport(360, 800).await;
        let catalog = reqwest::get(format!("{}/api/labs", b.base))
            .await
            .expect("the catalog")
            .text()
            .await
            .expect("its text");
        let labs: Json = serde_json::from_str(&catalog).expect("its JSON");
        let scenarios: Vec<(String, bool)> = labs
            .as_array()
            .expect("labs")
            .iter()
            .flat_map(|lab| lab["scenarios"].as_array().cloned().unwrap_or_default())
            .map(|s| (s["id"].as_str().unwrap_or_default().to_owned(), s["workload"] == json!(true)))
            .collect();
        assert!(scenarios.len() >= 40, "{}", scenarios.len());
        let wide = "const d = document.documentElement; return d.scrollWidth > d.clientWidth ? [d.scrollWidth, d.clientWidth] : null;";
        let mut walked = Vec::new();
        for (id, workload) in &scenarios {
            b.goto(&format!("/lab/{id}")).await;
            b.wait_for("button.rl-run:not([disabled])").await;
            assert_eq!(b.js(wide, vec![]).await, Json::Null, "{id} scrolls sideways before its run");
            if !workload {
                assert_eq!(b.attr("button.rl-view-compact", "aria-pressed").await.as_deref(), Some("true"), "{id}");
            }
            run_to_its_end(b, id, Duration::from_secs(240)).await;
            assert_eq!(b.attr(".rl-status", "data-state").await.as_deref(), Some("done"), "{id}");
            let overflow = b.js(wide, vec![]).await;
            if overflow != Json::Null {
                b.screenshot(&id.replace('/', "-")).await;
            }
            assert_eq!(overflow, Json::Null, "{id} scrolls sideways after its run");
            let narrow = narrowest_lane(b).await;
            assert!(narrow.is_none_or(|px| px >= READABLE_LANE), "{id}: a lane {narrow:?} px wide");
            walked.push(id.clone());
        }
        println!("walked {} scenario pages at 360 px", walked.len());

        // And the other pages a phone reaches: the catalog, a compare page, the permalink of the
        // last run, a room (as its participant, compact by default there too).
        let permalink = b.attr(".rl-permalink", "href").await.expect("a permalink");
        b.click("button.rl-teach").await;
        b.wait_for(".rl-room[data-trainer=\"true\"]").await;
        let room = b.attr(".rl-room", "data-room").await.expect("a room");
        for (page, ready) in [
            ("/".to_owned(), "section.rl-lab"),
            ("/lab/isolation/write-skew/compare".to_owned(), ".rl-compare-col .rl-verdict"),
            (permalink, ".rl-replay .rl-verdict"),
            (format!("/room/{room}"), ".rl-room-follow"),
        ] {
            b.goto(&page).await;
            b.wait_for_within(ready, Duration::from_secs(60)).await;
            b.settle().await;
            assert_eq!(b.js(wide, vec![]).await, Json::Null, "{page} scrolls sideways");
            if page.starts_with("/runs/") || page.starts_with("/room/") {
                assert_eq!(b.attr("button.rl-view-compact", "aria-pressed").await.as_deref(), Some("true"), "{page}");
            }
        }
        let closed = reqwest::Client::new()
            .delete(format!("{}/api/rooms/{room}", b.base))
            .bearer_auth(
                b.js("return localStorage.getItem('racelab.rooms').split(' ')[1];", vec![])
                    .await
                    .as_str()
                    .unwrap_or_default(),
            )
            .send()
            .await
            .expect("an answer");
        assert_eq!(closed.status(), 204);
    })
    .await;
}

/// Time you can see: in fencing, A's 250 ms pause under a 100 ms lease is a gap drawn to scale
/// (1 px for every 5 ms), labelled with the time it stands for; the lease says its 100 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_and_a_lease_show_their_real_lengths() {
    const PAUSE_MS: u64 = 250; // locks/fencing's PAUSE
    const TTL_MS: u64 = 100; // and its TTL
    run("time_to_scale", async |b| {
        for view in ["detailed", "compact"] {
            b.goto(&format!("/lab/locks/fencing?variant=fence&view={view}")).await;
            b.click("button.rl-run").await;
            b.wait_for(".rl-verdict").await;
            let gaps = b
                .js(
                    "return [...document.querySelectorAll('.rl-gap-label')].map(l => { \
                       const row = l.parentElement; const fill = row.querySelector('.rl-gap-fill'); \
                       return [Number(l.dataset.ms), fill.getBoundingClientRect().height, l.textContent]; });",
                    vec![],
                )
                .await;
            let gaps: Vec<(u64, f64, String)> = serde_json::from_value(gaps).expect("gaps");
            let (ms, px, label) = gaps.iter().max_by_key(|(ms, _, _)| *ms).cloned().expect("a gap");
            println!("{view}: gaps {gaps:?}");
            assert!(
                (PAUSE_MS..PAUSE_MS + 1_000).contains(&ms),
                "{view}: the pause is {ms} ms"
            );
            assert!(
                (px - (ms / 5) as f64).abs() <= 1.0,
                "{view}: {ms} ms drawn {px} px tall, 1 px per 5 ms"
            );
            assert_eq!(label, format!("+{ms} ms"));
            // A shorter gap is as tall as its label (20 px, 100 ms), so the label never lies over
            // the lines around it.
            for (ms, px, label) in &gaps {
                let wanted = (*ms as f64 / 5.0).clamp(20.0, 200.0);
                assert!(
                    (px - wanted).abs() <= 1.0,
                    "{view}: {label} drawn {px} px tall, not {wanted}"
                );
            }
            let legend = b.text(".rl-time-legend").await.unwrap_or_default();
            assert!(legend.contains("1 px for every 5 ms"), "{legend}");
            if view == "detailed" {
                // Labelled where it was taken, with what is left of its TTL by then.
                let lease = b.text(".rl-lease-label").await.unwrap_or_default();
                let left: u64 = lease
                    .split(" ms left")
                    .next()
                    .and_then(|l| l.rsplit(' ').next())
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_default();
                assert!((TTL_MS - 20..=TTL_MS).contains(&left), "{lease}");
                assert!(
                    b.count(".rl-lease-expired").await >= 1,
                    "A's lease ran out in the pause"
                );
            }
            b.screenshot(view).await;
        }
    })
    .await;
}

/// Links keep state: the scenario page's variant, view and pace are in its address and survive
/// a reload; a permalink names its scenario and variant, says what the scenario shows, toggles
/// the view and links to the run's pictures; a run that does not exist is a 404 that says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_keep_their_state_and_permalinks_say_what_they_are() {
    run("links_keep_state", async |b| {
        b.goto("/lab/isolation/write-skew").await;
        choose_variant(b, "repeatable-read").await;
        b.click("button.rl-view-compact").await;
        b.click("button.rl-step").await;
        b.wait_for("button.rl-next:not([disabled])").await;
        let url = b.js("return location.search;", vec![]).await;
        assert_eq!(url, json!("?variant=repeatable-read&view=compact&mode=step"));
        b.click("button.rl-cancel").await;
        b.client.refresh().await.expect("reload");
        b.wait_for("button.rl-run:not([disabled])").await;
        assert_eq!(
            b.attr(".rl-variant[aria-pressed=\"true\"]", "data-variant").await.as_deref(),
            Some("repeatable-read")
        );
        assert_eq!(b.attr("button.rl-view-compact", "aria-pressed").await.as_deref(), Some("true"));
        assert!(b.has_class("button.rl-step", "rl-primary").await, "stepping is what the reader did last");

        // A permalink.
        b.click("button.rl-run").await;
        b.wait_for(".rl-permalink").await;
        let permalink = b.attr(".rl-permalink", "href").await.expect("a permalink");
        b.goto(&permalink).await;
        b.wait_for(".rl-replay .rl-verdict").await;
        b.wait_js(
            "the heading to name the variant",
            "const h = document.querySelector('.rl-replay h1'); return !!h && h.textContent.includes('REPEATABLE READ');",
            vec![],
        )
        .await;
        let heading = b.text(".rl-replay h1").await.unwrap_or_default();
        assert!(heading.starts_with("Write skew"), "{heading}");
        assert!(b.text(".rl-replay .rl-hook").await.is_some_and(|h| h.contains("$5,000")));
        b.click("button.rl-view-compact").await;
        b.wait_for(".rl-replay .rl-compact .rl-compact-row").await;
        for kind in ["svg", "png"] {
            let href = b.attr(&format!("a.rl-picture-link[data-kind=\"{kind}\"]"), "href").await.expect("a picture link");
            let picture = reqwest::get(format!("{}{href}", b.base)).await.expect("the picture");
            assert!(picture.status().is_success() || (kind == "png" && picture.status() == 503), "{href}: {}", picture.status());
        }
        b.screenshot("permalink").await;

        // No such run.
        let missing = reqwest::get(format!("{}/runs/000000000000", b.base)).await.expect("an answer");
        assert_eq!(missing.status(), 404);
        b.goto("/runs/000000000000").await;
        b.wait_for(".rl-not-found[data-run-id=\"000000000000\"]").await;
        assert_eq!(b.text(".rl-not-found h1").await.as_deref(), Some("No such run"));
        assert_eq!(b.count(".rl-error").await, 0, "not 'Something went wrong'");
    })
    .await;
}

/// The compact view puts what bob says in bob's lane, not alice's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_captions_sit_in_their_speakers_lane() {
    run("captions_in_their_lane", async |b| {
        b.goto("/lab/isolation/write-skew?variant=serializable&view=compact").await;
        b.click("button.rl-run").await;
        b.wait_for(".rl-verdict").await;
        let placed = b
            .js(
                "return [...document.querySelectorAll('.rl-caption')].map(c => { \
                   const lane = document.querySelector(`.rl-compact .rl-lane-head[data-lane=\"${c.dataset.lane}\"]`); \
                   return [c.dataset.lane, Math.round(c.getBoundingClientRect().left - lane.getBoundingClientRect().left)]; });",
                vec![],
            )
            .await;
        let placed: Vec<(String, i64)> = serde_json::from_value(placed).expect("captions");
        assert!(placed.iter().any(|(lane, _)| lane == "bob"), "{placed:?}");
        for (lane, offset) in &placed {
            assert!(offset.abs() <= 2, "{lane}'s caption starts {offset} px from {lane}'s lane");
        }
    })
    .await;
}

/// axe-core's WCAG 2 A and AA rules find nothing serious or critical on the pages readers reach:
/// the catalog, /write, /atlas, an embed, and finished runs of the write skew and of two relays
/// (five lanes), in the detailed view at 1280 px and the compact one at 360 px. A timeline that
/// scrolls sideways can be scrolled by keyboard (`scrollable-region-focusable`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn axe_finds_nothing_serious_on_the_readers_pages() {
    run("axe", async |b| {
        for (page, ready) in [
            ("/", "section.rl-lab"),
            ("/write", ".rl-spec-reading"),
            ("/atlas", ".rl-atlas"),
            ("/embed/isolation/write-skew", "button.rl-run"),
        ] {
            b.goto(page).await;
            b.wait_for(ready).await;
            assert_eq!(b.accessibility_violations().await, Vec::<String>::new(), "{page}");
        }
        for (width, view) in [(1280, "detailed"), (360, "compact")] {
            b.set_viewport(width, 800).await;
            for id in ["isolation/write-skew", "outbox/two-relays"] {
                b.goto(&format!("/lab/{id}?view={view}")).await;
                run_to_its_end(b, id, Duration::from_secs(120)).await;
                assert_eq!(
                    b.attr(".rl-status", "data-state").await.as_deref(),
                    Some("done"),
                    "{id}"
                );
                let found = b.accessibility_violations().await;
                assert_eq!(found, Vec::<String>::new(), "{id} at {width} px ({view})");
            }
        }
    })
    .await;
}

/// Stepping on a phone: the pinned deck (Run, Step, Next, Cancel, the view, whose step is next)
/// leaves most of the window to the run, and each step shows whose it is, though the lane
/// heads scrolled away long ago; in the detailed view too. The run's other controls come back
/// when it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stepping_on_a_phone_leaves_the_window_to_the_run_and_names_each_step() {
    run("stepping_360", async |b| {
        b.set_viewport(360, 740).await;
        for view in ["compact", "detailed"] {
            b.goto(&format!("/lab/isolation/write-skew?variant=serializable&view={view}"))
                .await;
            b.wait_for("button.rl-step:not([disabled])").await;
            b.click("button.rl-step").await;
            for _ in 0..4 {
                b.wait_for("button.rl-next:not([disabled])").await;
                b.click("button.rl-next").await;
            }
            b.wait_for("button.rl-next:not([disabled])").await;
            b.settle().await;
            let deck = b
                .js(
                    "return document.querySelector('.rl-deck').getBoundingClientRect().height;",
                    vec![],
                )
                .await
                .as_f64()
                .unwrap_or(f64::MAX);
            b.screenshot(&format!("{view}-stepping")).await;
            assert!(deck <= 740.0 / 3.0, "{view}: the deck takes {deck} px of 740");
            // The newest step's name, drawn with it.
            let names = b
                .js(
                    "const steps = [...document.querySelectorAll(arguments[0])]; \
                     return steps.map(s => [s.dataset.lane, getComputedStyle(s, '::before').content]);",
                    vec![json!(match view {
                        "compact" => ".rl-compact .rl-line",
                        _ => ".rl-timeline .rl-card",
                    })],
                )
                .await;
            let names = names.as_array().cloned().unwrap_or_default();
            assert!(names.len() >= 4, "{view}: four steps drawn: {names:?}");
            for pair in &names {
                let lane = pair[0].as_str().unwrap_or_default();
                assert!(["alice", "bob"].contains(&lane), "{view}: {pair}");
                assert_eq!(pair[1], json!(format!("\"{lane}\"")), "{view}: its name with it");
            }
            assert_eq!(b.count(".rl-deck .rl-controls .rl-teach").await, 1);
            assert_eq!(
                b.js(
                    "return getComputedStyle(document.querySelector('.rl-deck .rl-teach-group')).display;",
                    vec![]
                )
                .await,
                json!("none"),
                "{view}: nothing but stepping in the deck while stepping"
            );
            b.click("button.rl-cancel").await;
            b.wait_for(".rl-status[data-state=\"cancelled\"]").await;
            assert_ne!(
                b.js(
                    "return getComputedStyle(document.querySelector('.rl-deck .rl-teach-group')).display;",
                    vec![]
                )
                .await,
                json!("none"),
                "{view}: back when the run ends"
            );
        }
    })
    .await;
}
