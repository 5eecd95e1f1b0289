//! Lessons from the command line (`racelab lesson FILE`) and over HTTP (`POST /api/lessons`,
//! `GET /api/lessons/<id>`), against the real PostgreSQL that keeps readers' specs and trainers'
//! lessons: the sample lesson in the repository holds; a malformed file is refused at its line;
//! a round naming a scenario, variant, version, saved spec or permutation this racelab does not
//! have is refused by name, every one of them at once; a lesson that holds is kept by its
//! content and read back by its link. And the `/lessons` page in headless Chromium, at 1280 and
//! 360 px: read as typed, the server's refusals at their lines, kept for a link, each round's
//! race a link. Screenshots in `target/screenshots/`.

mod common;
#[allow(dead_code)]
#[path = "browser/harness.rs"]
mod harness;

use harness::{Browser, Readers, run_on};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Output;
use tokio::process::Command;

fn database_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/racelab".to_owned())
}

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../lessons/isolation-in-an-hour.lesson.md")
}

async fn lesson(path: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_racelab"))
        .arg("lesson")
        .arg(path)
        .output()
        .await
        .expect("racelab runs")
}

/// `text` written to a file of its own, for the command to read.
fn file(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("racelab-{}-{name}.lesson.md", std::process::id()));
    std::fs::write(&path, text).expect("a temporary file");
    path
}

/// What the command printed as errors: each line of stderr that names the file, without it.
fn errors(out: &Output, path: &Path) -> Vec<String> {
    let prefix = format!("{}: ", path.display());
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix).map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn the_sample_lesson_holds_and_lists_its_rounds() {
    let out = lesson(&sample()).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "Isolation levels in an hour: 5 rounds",
            "  1. Two managers overspend a budget",
            "  2. The same race at SERIALIZABLE",
            "  3. A lost update",
            "  4. A lost update, on MariaDB with the snapshot switch on",
            "  5. Two transfers, opposite order",
        ]
    );
}

#[tokio::test]
async fn a_malformed_lesson_is_refused_at_its_line() {
    let path = file(
        "malformed",
        "---\ntitle: Broken\n---\n\n## One\nscenario: isolation/write-skew\nvariant: serializable\nquestion: Who?\nchoice a: A\n",
    );
    let out = lesson(&path).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        errors(&out, &path),
        ["line 8: a question says how its answer is read off the run: `answer: …`"]
    );
    let _ = std::fs::remove_file(&path);
    let missing = Path::new("/nonexistent/racelab.lesson.md");
    assert_eq!(
        lesson(missing).await.status.code(),
        Some(2),
        "a file that cannot be read"
    );
}

#[tokio::test]
async fn every_round_naming_what_racelab_does_not_have_is_refused_by_name() {
    // A saved spec of two permutations, kept as /write keeps one.
    let pool = sqlx::PgPool::connect(&database_url())
        .await
        .expect("racelab's database");
    let store = racelab::store::Store::new(pool);
    // The command makes racelab's tables on first start: run it once before saving.
    assert!(lesson(&sample()).await.status.success());
    let spec = store.save_spec(shared::spec::STARTER).await.expect("the spec is kept");
    let text = format!(
        "---\ntitle: Wrong on purpose\n---\n\
         ## No such scenario\nscenario: isolation/nope\nvariant: serializable\n\
         ## No such variant\nscenario: isolation/write-skew\nvariant: chaos\n\
         ## No such version\nscenario: isolation/write-skew\nvariant: serializable\npostgres: 9\n\
         ## No such spec\nspec: 00000000000000ff\n\
         ## No such permutation\nspec: {spec}\npermutation: 7\n\
         ## Fine\nspec: {spec}\npermutation: 2\n\
         ## No such run\nrecording: /runs/never-kept-0\n"
    );
    let path = file("wrong", &text);
    let out = lesson(&path).await;
    let _ = std::fs::remove_file(&path);
    assert_eq!(out.status.code(), Some(1));
    let said = errors(&out, &path);
    assert_eq!(said.len(), 6, "{said:?}");
    assert_eq!(
        said[0],
        "line 4: \"No such scenario\": racelab has no scenario isolation/nope"
    );
    assert!(said[1].starts_with(
        "line 7: \"No such variant\": isolation/write-skew has no variant chaos (it has read-committed, "
    ));
    assert!(
        said[2].starts_with("line 10: \"No such version\": racelab plays on PostgreSQL "),
        "{}",
        said[2]
    );
    assert!(said[2].ends_with(" here, not 9"), "{}", said[2]);
    assert_eq!(
        said[3],
        "line 14: \"No such spec\": racelab keeps no spec 00000000000000ff"
    );
    assert_eq!(
        said[4],
        format!("line 16: \"No such permutation\": spec {spec} has 2 permutations, not 7")
    );
    assert_eq!(
        said[5],
        "line 22: \"No such run\": racelab keeps no run never-kept-0 to replay"
    );
}

/// `POST /api/lessons` with `text`: the status and the JSON answer.
async fn save(address: SocketAddr, text: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("http://{address}/api/lessons"))
        .body(text.to_owned())
        .send()
        .await
        .expect("POST /api/lessons");
    let status = response.status().as_u16();
    let body = response.text().await.expect("a body");
    (
        status,
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}")),
    )
}

#[tokio::test]
async fn a_lesson_is_kept_by_its_content_and_read_back_by_its_link() {
    let address = common::server().await;
    let text = std::fs::read_to_string(sample()).expect("the sample");
    let (status, saved) = save(address, &text).await;
    assert_eq!(status, 201, "{saved}");
    let id = saved["id"].as_str().expect("an id").to_owned();
    assert_eq!(id.len(), 16);
    assert_eq!(saved["title"], "Isolation levels in an hour");
    assert_eq!(saved["rounds"].as_array().map(Vec::len), Some(5));
    let (again, resaved) = save(address, &text).await;
    assert_eq!(
        (again, resaved["id"].as_str()),
        (201, Some(id.as_str())),
        "the same text, the same lesson"
    );
    let read = common::get_json(address, &format!("/api/lessons/{id}")).await;
    assert_eq!(read["text"].as_str(), Some(text.as_str()));
    assert_eq!(read["rounds"][4], "Two transfers, opposite order");
    let (missing, _, body) = common::get(address, "/api/lessons/00000000000000aa").await;
    assert_eq!(missing, 404, "{body}");
    let (not_an_id, _, _) = common::get(address, "/api/lessons/..%2Fetc").await;
    assert_eq!(not_an_id, 404);
}

#[tokio::test]
async fn a_lesson_that_does_not_hold_is_refused_with_every_mistake_and_kept_nowhere() {
    let address = common::server().await;
    let malformed = "---\ntitle: Broken\n---\n\n## One\nscenario: isolation/write-skew\nvariant: serializable\nquestion: Who?\nchoice a: A\n";
    let (status, refused) = save(address, malformed).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(
        refused["error"],
        "the lesson does not hold: line 8: a question says how its answer is read off the run: `answer: …`"
    );
    assert_eq!(refused["mistakes"][0]["line"], 8);
    let unknown =
        "---\ntitle: Unknown\n---\n## A\nscenario: isolation/nope\nvariant: v\n## B\nspec: 00000000000000ff\n";
    let (status, refused) = save(address, unknown).await;
    assert_eq!(status, 400, "{refused}");
    let lines: Vec<u64> = refused["mistakes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["line"].as_u64())
        .collect();
    assert_eq!(lines, [4, 7]);
    assert!(
        refused["error"].as_str().is_some_and(|e| e.ends_with("(and 1 more)")),
        "{refused}"
    );
    // Nothing of either was kept: their ids name no lesson.
    let id = racelab::store::spec_id(unknown);
    let (missing, _, _) = common::get(address, &format!("/api/lessons/{id}")).await;
    assert_eq!(missing, 404);
    // A body past the limit is refused before it is read.
    let (too_large, refused) = save(address, &"x".repeat(80 * 1024)).await;
    assert_eq!(too_large, 413, "{refused}");
}

/// Puts `text` in the lesson's editor as a reader's typing would (its `input` event fired).
async fn type_lesson(b: &Browser, text: &str) {
    b.js(
        "const t = document.querySelector('#rl-lesson-text'); t.value = arguments[0]; \
         t.dispatchEvent(new Event('input', { bubbles: true })); return true;",
        vec![json!(text)],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trainer_writes_a_lesson_sees_its_mistakes_at_their_lines_and_keeps_it() {
    run_on("lessons", Readers::Anonymous, None, async |b| {
        // From the catalog, as a trainer finds it.
        b.goto("/").await;
        b.wait_for("a[href=\"/lessons\"]").await;
        b.click("a[href=\"/lessons\"]").await;
        b.wait_for(".rl-lesson-reading[data-ok=\"true\"]").await;
        let reading = b.text(".rl-lesson-reading").await.unwrap_or_default();
        assert_eq!(reading, "Reads as \"Isolation levels in an hour\": 5 rounds.");
        assert_eq!(b.count("li.rl-lesson-round").await, 5);
        assert_eq!(
            b.attr("li.rl-lesson-round a.rl-lesson-race", "href").await.as_deref(),
            Some("/lab/isolation/write-skew?variant=read-committed&predict=1")
        );

        // A mistake as it is typed: named at its line, and nothing to keep.
        let sample = std::fs::read_to_string(sample()).expect("the sample");
        type_lesson(b, &sample.replace("answer: failed 40001", "answer: who knows")).await;
        b.wait_for(".rl-lesson-reading[data-ok=\"false\"]").await;
        let reading = b.text(".rl-lesson-reading").await.unwrap_or_default();
        assert!(
            reading.starts_with("line 22: an answer is derived from the run"),
            "{reading}"
        );
        assert_eq!(b.attr(".rl-lesson-keep", "disabled").await.as_deref(), Some(""));
        b.screenshot("mistake-typed").await;

        // What only the server knows, at its line once kept is asked for.
        let unknown = format!("{sample}\n## Not here\nscenario: isolation/nope\nvariant: serializable\n");
        type_lesson(b, &unknown).await;
        b.wait_for(".rl-lesson-reading[data-ok=\"true\"]").await;
        b.click(".rl-lesson-keep").await;
        b.wait_for(".rl-lesson-refused li").await;
        let refused = b.texts(".rl-lesson-refused li").await;
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(
            refused[0].ends_with("\"Not here\": racelab has no scenario isolation/nope"),
            "{refused:?}"
        );
        assert_eq!(
            b.attr(".rl-lesson-refused li", "data-line").await.as_deref(),
            Some("47")
        );
        b.screenshot("refused").await;

        // Fixed and kept: its link, and the page at it.
        type_lesson(b, &sample).await;
        b.wait_js(
            "the refusal goes with the text it was for",
            "return !document.querySelector('.rl-lesson-refused');",
            vec![],
        )
        .await;
        b.click(".rl-lesson-keep").await;
        b.wait_for(".rl-lesson-link a").await;
        let path = b.js("return location.pathname;", vec![]).await;
        let href = b.attr(".rl-lesson-link a", "href").await.unwrap_or_default();
        assert_eq!(path.as_str(), Some(href.as_str()));
        assert!(
            href.starts_with("/lessons/") && href.len() == "/lessons/".len() + 16,
            "{href}"
        );
        assert_eq!(b.text(".rl-lesson-keep").await.as_deref(), Some("Kept"));
        b.goto(&href).await;
        b.wait_for(".rl-lesson-link").await;
        assert_eq!(b.count("li.rl-lesson-round").await, 5, "the kept lesson, from its link");
        b.screenshot("kept").await;
        b.set_viewport(360, 800).await;
        assert!(!b.scrolls_sideways().await, "the lesson fits a phone");
        b.screenshot("kept-360").await;
        b.reset_viewport().await;
    })
    .await;
}
