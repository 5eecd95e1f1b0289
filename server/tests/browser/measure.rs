//! The playground's speed as a reader feels it, measured in the real browser: from a click on
//! Run to the first card and to the verdict, and the embed's first paint. Shared by the browser
//! test that prints it and by `cargo bench --bench ui_latency`.

use crate::harness::{Browser, choose_variant};
use serde_json::Value as Json;

const WRITE_SKEW: &str = "/lab/isolation/write-skew";

/// Measures once; returns the lines to print.
pub async fn run_latency_and_embed_paint(b: &Browser) -> Vec<String> {
    let mut lines = Vec::new();
    b.goto(WRITE_SKEW).await;
    b.wait_for("button.rl-run").await;
    choose_variant(b, "serializable").await;
    b.wait_js(
        "button.rl-run to be enabled",
        "const e = document.querySelector('button.rl-run'); return !!e && !e.disabled;",
        vec![],
    )
    .await;
    // Measured inside the page: click, then a MutationObserver notes the first card and the
    // verdict; resolves with both times in ms after the click.
    let times = b
        .client
        .execute_async(
            r#"const done = arguments[arguments.length - 1];
               const t0 = performance.now();
               let card = null;
               const look = () => {
                 if (card === null && document.querySelector('.rl-card')) card = performance.now() - t0;
                 if (card !== null && document.querySelector('.rl-verdict')) {
                   observer.disconnect();
                   done([card, performance.now() - t0]);
                 }
               };
               const observer = new MutationObserver(look);
               observer.observe(document.body, { childList: true, subtree: true, attributes: true });
               document.querySelector('button.rl-run').click();
               look();"#,
            vec![],
        )
        .await
        .expect("the run to show a card and a verdict within the script timeout");
    let ms = |v: &Json| v.as_f64().unwrap_or(f64::NAN);
    lines.push(format!(
        "click .rl-run → first .rl-card: {:.0} ms; → .rl-verdict: {:.0} ms (serializable write skew)",
        ms(&times[0]),
        ms(&times[1])
    ));
    b.screenshot("run").await;

    b.goto("/embed/isolation/write-skew?variant=serializable").await;
    let paint = b
        .wait_js(
            "first-contentful-paint of the embed",
            "const e = performance.getEntriesByName('first-contentful-paint')[0]; return e ? e.startTime : null;",
            vec![],
        )
        .await;
    let mounted = b
        .client
        .execute_async(
            r#"const done = arguments[arguments.length - 1];
               const ready = () => document.querySelector('.racelab.rl-embed button, .racelab.rl-embed .rl-timeline');
               if (ready()) { done(performance.now()); return; }
               const observer = new MutationObserver(() => {
                 if (ready()) { observer.disconnect(); done(performance.now()); }
               });
               observer.observe(document.documentElement, { childList: true, subtree: true });"#,
            vec![],
        )
        .await
        .expect("the embed to mount");
    let wasm = b
        .js(
            "const r = performance.getEntriesByType('resource').find(r => r.name.endsWith('.wasm')); \
             return r ? [r.transferSize, r.decodedBodySize, r.duration] : null;",
            vec![],
        )
        .await;
    lines.push(format!(
        "embed page: first-contentful-paint {:.0} ms, app mounted (controls in the DOM) {:.0} ms after navigation start; \
         wasm [transfer bytes, decoded bytes, fetch ms] = {wasm}",
        ms(&paint),
        ms(&mounted)
    ));
    b.screenshot("embed").await;
    lines
}
