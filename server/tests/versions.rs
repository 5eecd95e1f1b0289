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
