//! What a reader waits for, measured in real headless Chromium against the real server and
//! PostgreSQL: click Run → first timeline card → verdict, and the embed's first paint. Not a test:
//! it prints figures (several rounds, one line each) for comparing builds on the same machine.
//!
//! `cargo bench --bench ui_latency [ROUNDS]` (default 3). Needs the app built into `dist/` and
//! Chromium with chromedriver (`scripts/install-ui-tools.sh`, then `trunk build --release`).

#[path = "../tests/common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "../tests/browser/harness.rs"]
mod harness;
#[path = "../tests/browser/measure.rs"]
mod measure;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .and_then(|a| a.parse().ok())
        .unwrap_or(3);
    println!("racelab UI latency, {rounds} round(s), loopback, headless Chromium");
    for round in 1..=rounds {
        harness::run("bench_ui_latency", async |b| {
            for line in measure::run_latency_and_embed_paint(b).await {
                println!("round {round}: {line}");
            }
        })
        .await;
    }
}
