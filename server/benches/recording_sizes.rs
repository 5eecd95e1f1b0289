//! What a recording and its player weigh, as a static host sends them (gzip, as `gzip -9`
//! writes it), beside the goals: a write skew's recording at most 8 KB, the player
//! within the embed's 150,000 bytes. Sizes, not times: nothing here is noisy, but they move
//! with every change to the format and the app, so they are measured where the other figures
//! are (docs/performance.md).
//!
//! `cargo bench --bench recording_sizes` (needs `dist/`, built by `trunk build --release`).
//!
//! - **the recording**: `tests/fixtures/write-skew.serializable.racelab.json`, the serializable
//!   write skew as `racelab record` wrote it, and the same run as this build writes it again
//!   (its events and proof re-serialized: the format's size today, not the day it was made);
//! - **the player app**: the wasm and JS `dist/player-app/index.html` names, which
//!   `/embed/recording`, `racelab export --player` and the one-file page carry;
//! - **the embed app**: the wasm and JS `dist/embed-app/index.html` names, whose budget it is;
//! - **the full app**: the wasm and JS `dist/index.html` names, which played recordings before the
//!   player app;
//! - **the one-file page** (`racelab record --html`): the fixture inside the player, as one
//!   `.html`, raw (what a disk or a host without compression holds) and gzip (goal 200 KB).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const RECORDING_GOAL: usize = 8 * 1024;
const PLAYER_GOAL: usize = 150_000;
/// 200 KB, read as 200,000 bytes (the stricter of the two readings of "KB").
const ONE_FILE_GOAL: usize = 200_000;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `bytes` as `gzip -9` compresses them: its length.
fn gzipped(bytes: &[u8]) -> Result<usize, BoxError> {
    let mut gzip = Command::new("gzip")
        .args(["-9", "-c"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    // Written from a thread of its own: gzip's output is read as it comes, or a large input
    // would fill both pipes and each side wait on the other.
    let mut input = gzip.stdin.take().ok_or("gzip's input")?;
    let bytes = bytes.to_vec();
    let writer = std::thread::spawn(move || input.write_all(&bytes));
    let compressed = gzip.wait_with_output()?.stdout.len();
    writer.join().map_err(|_| "the writer thread panicked")??;
    Ok(compressed)
}

/// The `.js` and `.wasm` files an app's `index.html` in `dir` names under `prefix`, and what
/// their `.gz` files (what the server sends) weigh in all.
fn app_gzip(dir: &Path, prefix: &str) -> Result<(Vec<String>, u64), BoxError> {
    let index = std::fs::read_to_string(dir.join("index.html"))
        .map_err(|e| format!("{}: {e} (trunk build --release first)", dir.display()))?;
    let mut files: Vec<String> = index
        .split(['"', '\'', '(', ')', ' '])
        .filter_map(|word| word.strip_prefix(prefix))
        .filter(|file| file.ends_with(".js") || file.ends_with(".wasm"))
        .map(str::to_owned)
        .collect();
    files.sort_unstable();
    files.dedup();
    let mut total = 0;
    for file in &files {
        total += std::fs::metadata(dir.join(format!("{file}.gz")))?.len();
    }
    Ok((files, total))
}

fn main() -> Result<(), BoxError> {
    let fixture = workspace().join("server/tests/fixtures/write-skew.serializable.racelab.json");
    let text = std::fs::read_to_string(&fixture)?;
    let recording = shared::recording::read(&text).map_err(|e| e.to_string())?;
    let again = serde_json::to_string(&recording)?;
    let pretty = serde_json::to_string_pretty(&recording)?;
    println!(
        "a write skew's recording (serializable, {} events):",
        recording.run.events.len()
    );
    for (what, bytes) in [
        ("as committed", text.as_bytes()),
        ("as this build writes it, compact", again.as_bytes()),
        (
            "as this build writes it, pretty (racelab record, Download recording)",
            pretty.as_bytes(),
        ),
    ] {
        let gz = gzipped(bytes)?;
        println!(
            "  {what}: {} bytes, {gz} gzip ({:.0} % of the {RECORDING_GOAL}-byte goal)",
            bytes.len(),
            100.0 * gz as f64 / RECORDING_GOAL as f64
        );
    }
    let dist = workspace().join("dist");
    let (folder, prefix) = racelab::export::PLAYER_APP;
    let (files, player) = app_gzip(&dist.join(folder), prefix)?;
    println!(
        "the player app: {player} bytes gzip ({:.2}× the embed's {PLAYER_GOAL}): {files:?}",
        player as f64 / PLAYER_GOAL as f64
    );
    let (files, embed) = app_gzip(&dist.join("embed-app"), "/embed-app/")?;
    println!(
        "the embed app: {embed} bytes gzip ({:.1} % of {PLAYER_GOAL}): {files:?}",
        100.0 * embed as f64 / PLAYER_GOAL as f64
    );
    let (files, full) = app_gzip(&dist, "/")?;
    println!(
        "the full app: {full} bytes gzip ({:.2}× the embed's budget): {files:?}",
        full as f64 / PLAYER_GOAL as f64
    );
    let page = racelab::export::one_file(&dist, &text, &recording.scenario.title)?;
    let gz = gzipped(page.as_bytes())?;
    println!(
        "the one-file page (racelab record --html, the fixture inside): {} bytes, {gz} gzip ({:.2}× the {ONE_FILE_GOAL}-byte goal)",
        page.len(),
        gz as f64 / ONE_FILE_GOAL as f64
    );
    Ok(())
}
