//! Why it happened, in headless Chromium against the real server: the anomaly atlas's matrix
//! (every cell a run of this server's, opening its run and its spec) at desktop width and at
//! 360 px, and one proof drawn: write skew at REPEATABLE READ, replayed from its atlas cell and
//! played live from its spec. Screenshots in `target/screenshots/`.

mod common;
#[allow(dead_code)]
#[path = "browser/harness.rs"]
mod harness;

use harness::{Browser, run};
use serde_json::json;
use std::time::Duration;

const WRITE_SKEW_RR: &str = "tr[data-entry=\"g2-item\"] td[data-level=\"REPEATABLE READ\"]";

/// The proof panel of the run on the page: a write skew, its two anti-dependencies drawn as
/// dotted arrows on the cycle, between alice's and bob's lanes.
async fn shows_the_write_skew_proof(b: &Browser) {
    b.wait_for_within(".rl-proof", Duration::from_secs(30)).await;
    assert_eq!(b.attr(".rl-proof", "data-kind").await.as_deref(), Some("cycle"));
    let headline = b.text(".rl-proof-headline").await.unwrap_or_default();
    assert!(headline.starts_with("write skew (G2-item)"), "{headline}");
    let lines = b.texts(".rl-proof-lines li").await;
    assert_eq!(
        lines,
        [
            "alice read test 2 = 20, which bob then replaced with 21, so alice comes before bob.",
            "However, bob read test 1 = 10, which alice then replaced with 11, so bob comes before alice.",
            "No order of one-at-a-time runs explains this: write skew (G2-item).",
        ]
    );
    assert_eq!(
        b.count(".rl-proof .rl-proof-edge[data-dep=\"rw\"][data-cycle=\"true\"]")
            .await,
        2
    );
    assert_eq!(b.texts(".rl-proof-lane").await, ["alice", "bob"]);
    let dashes = b
        .js(
            "return [...document.querySelectorAll('.rl-proof .rl-proof-edge[data-cycle=\"true\"] line')]\
             .map(l => l.getAttribute('stroke-dasharray'));",
            vec![],
        )
        .await;
    assert_eq!(dashes, json!(["2 4", "2 4"]), "anti-dependencies are dotted");
}

#[tokio::test]
async fn the_atlas_shows_each_cell_as_this_server_played_it_and_a_write_skew_proof_is_drawn() {
    run("atlas", async |b: &Browser| {
        b.set_viewport(1280, 900).await;
        b.goto("/atlas").await;
        b.wait_for_within(".rl-atlas-matrix", Duration::from_secs(60)).await;
        assert_eq!(b.count("tr.rl-atlas-row").await, shared::atlas::ENTRIES.len() as u64);
        assert_eq!(b.count("td.rl-atlas-cell").await, 39);
        let observed = b.text(".rl-atlas-observed").await.unwrap_or_default();
        assert!(observed.starts_with("Observed on PostgreSQL 1"), "{observed}");
        // Cells say what happened in words, not colour alone.
        assert_eq!(b.attr(WRITE_SKEW_RR, "data-kind").await.as_deref(), Some("allowed"));
        let words = b
            .text(&format!("{WRITE_SKEW_RR} .rl-atlas-run"))
            .await
            .unwrap_or_default();
        assert!(words.contains("allowed"), "{words}");
        let serializable = "tr[data-entry=\"g2-item\"] td[data-level=\"SERIALIZABLE\"]";
        assert_eq!(b.attr(serializable, "data-kind").await.as_deref(), Some("refused"));
        assert!(b.text(serializable).await.unwrap_or_default().contains("error 40001"));
        let dirty = "tr[data-entry=\"g1a\"] td[data-kind=\"allowed\"]";
        assert_eq!(b.count(dirty).await, 0, "no level shows an aborted read");
        assert!(!b.scrolls_sideways().await);
        b.screenshot("atlas-desktop").await;

        b.set_viewport(360, 740).await;
        b.settle().await;
        assert!(!b.scrolls_sideways().await, "the atlas fits 360 px");
        b.screenshot("atlas-360").await;

        // The cell opens its run: the replay draws why.
        let run = b
            .attr(&format!("{WRITE_SKEW_RR} .rl-atlas-run"), "href")
            .await
            .expect("a run link");
        let spec = b
            .attr(&format!("{WRITE_SKEW_RR} .rl-atlas-spec"), "href")
            .await
            .expect("a spec link");
        assert!(run.starts_with("/runs/") && spec.starts_with("/s/"), "{run} {spec}");
        b.set_viewport(1280, 900).await;
        b.goto(&run).await;
        shows_the_write_skew_proof(b).await;
        // And over the timeline itself: an arrow from each check's card to the other's update,
        // across the lanes.
        b.wait_for(".rl-proof-arrows .rl-proof-edge").await;
        assert_eq!(b.count(".rl-proof-arrows .rl-proof-edge[data-dep=\"rw\"][data-cycle=\"true\"]").await, 2);
        let across = b
            .js(
                "return [...document.querySelectorAll('.rl-proof-arrows .rl-proof-edge line')]\
                 .map(l => Math.abs(l.x1.baseVal.value - l.x2.baseVal.value) > 20 && l.y2.baseVal.value > l.y1.baseVal.value);",
                vec![],
            )
            .await;
        let coordinates = b
            .js(
                "return [...document.querySelectorAll('.rl-proof-arrows .rl-proof-edge line')]\
                 .map(l => [l.x1.baseVal.value, l.y1.baseVal.value, l.x2.baseVal.value, l.y2.baseVal.value]);",
                vec![],
            )
            .await;
        assert_eq!(across, json!([true, true]), "each arrow crosses to the other lane, downwards in time: {coordinates}");
        assert!(!b.scrolls_sideways().await);
        b.screenshot("proof-replay").await;
        b.set_viewport(360, 740).await;
        b.settle().await;
        assert!(
            !b.scrolls_sideways().await,
            "the proof scrolls inside its figure, not the page"
        );
        b.screenshot("proof-360").await;

        // Its spec, played live: the same proof.
        b.set_viewport(1280, 900).await;
        b.goto(&spec).await;
        b.wait_for(".rl-spec-saved button.rl-run").await;
        b.click(".rl-spec-saved button.rl-run").await;
        b.wait_for_within(".rl-verdict", Duration::from_secs(30)).await;
        shows_the_write_skew_proof(b).await;
        b.screenshot("proof-live").await;
    })
    .await;
}

#[tokio::test]
async fn a_finished_deadlock_travels_back_by_keyboard_to_the_cycle_postgresql_broke() {
    run("travel", async |b: &Browser| {
        b.set_viewport(1280, 900).await;
        b.goto("/lab/isolation/deadlock?variant=opposite-order").await;
        b.wait_for("button.rl-run:not([disabled])").await;
        // No Step for a race PostgreSQL's own timing decides, and the page says why.
        assert_eq!(b.count("button.rl-step").await, 0);
        let why = b.text(".rl-no-step").await.unwrap_or_default();
        assert!(why.starts_with("No Step here: what happens depends on timing"), "{why}");
        b.click("button.rl-run").await;
        b.wait_for_within(".rl-verdict", Duration::from_secs(30)).await;
        b.wait_for(".rl-scrub").await;
        // At the end, the deadlock is over and said.
        let broken = b.text(".rl-wait-broken").await.unwrap_or_default();
        assert!(broken.contains("by cancelling alice with 40P01"), "{broken}");
        assert_eq!(b.count(".rl-wait-cycle").await, 0);
        let cards_at_end = b.count(".rl-timeline .rl-card").await;
        b.screenshot("deadlock-end").await;

        // Back, one event at a time with ←, to where both wait for each other.
        b.js("document.querySelector('.rl-scrub').focus(); return true;", vec![])
            .await;
        let mut presses = 0;
        while b.count(".rl-wait-cycle").await == 0 {
            b.press('\u{e012}').await;
            presses += 1;
            assert!(presses < 200, "the cycle never showed travelling back");
        }
        let cycle = b.text(".rl-wait-cycle").await.unwrap_or_default();
        assert!(cycle.starts_with("Deadlock forming: "), "{cycle}");
        assert!(
            cycle.contains("alice → bob → alice") || cycle.contains("bob → alice → bob"),
            "{cycle}"
        );
        assert_eq!(b.count(".rl-wait-edge").await, 2, "two waits, one each way");
        let on = b.texts(".rl-wait-on").await;
        assert!(on.iter().all(|o| o.contains("row lock")), "{on:?}");
        assert_eq!(b.count(".rl-wait-broken").await, 0, "not broken yet at this moment");
        assert!(
            b.count(".rl-timeline .rl-card").await < cards_at_end,
            "the timeline shows that moment"
        );
        let moment = b.text(".rl-scrub-moment").await.unwrap_or_default();
        assert!(moment.starts_with("event ") && moment.contains("wait"), "{moment}");
        b.screenshot("deadlock-forming").await;

        // Forward again with →: the cancel.
        b.press('\u{e014}').await;
        b.press('\u{e014}').await;
        b.press('\u{e014}').await;
        b.wait_for(".rl-wait-broken").await;

        b.set_viewport(360, 740).await;
        b.settle().await;
        assert!(!b.scrolls_sideways().await, "the scrubber and the waits fit 360 px");
        b.screenshot("deadlock-360").await;
    })
    .await;
}

#[tokio::test]
async fn the_isolation_labs_write_skew_at_repeatable_read_says_why_when_asked() {
    run("labwhy", async |b: &Browser| {
        b.set_viewport(1280, 900).await;
        b.goto("/lab/isolation/write-skew?variant=repeatable-read").await;
        b.wait_for("button.rl-run:not([disabled])").await;
        b.click("button.rl-run").await;
        b.wait_for_within(".rl-verdict", Duration::from_secs(30)).await;
        b.wait_for("button.rl-why").await;
        b.click("button.rl-why").await;
        b.wait_for_within(".rl-proof", Duration::from_secs(30)).await;
        let headline = b.text(".rl-proof-headline").await.unwrap_or_default();
        assert!(headline.starts_with("write skew on a predicate (G2)"), "{headline}");
        assert_eq!(
            b.count(".rl-proof .rl-proof-edge[data-dep=\"rw\"][data-cycle=\"true\"]")
                .await,
            2
        );
        let lines = b.texts(".rl-proof-lines li").await;
        assert!(
            lines[0].starts_with("alice's read did not see bob's insert"),
            "{lines:?}"
        );
        b.screenshot("lab-proof").await;
        // Asked once, kept while the reader travels: back a statement, and to the end again.
        b.click(".rl-scrub-back").await;
        assert_eq!(b.count(".rl-proof").await, 1, "why stays as the scrubber moves");
        b.scrub_to_end().await;
        assert_eq!(b.count(".rl-proof").await, 1, "and at the end");
        assert_eq!(b.count("button.rl-why").await, 0, "never asked again");
    })
    .await;
}
