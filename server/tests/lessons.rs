//! Lessons from the command line (`racelab lesson FILE`), against the real PostgreSQL that keeps
//! readers' specs: the sample lesson in the repository holds; a malformed file is refused at its
//! line; a round naming a scenario, variant, version, saved spec or permutation this racelab
//! does not have is refused by name, every one of them at once.

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
         ## Fine\nspec: {spec}\npermutation: 2\n"
    );
    let path = file("wrong", &text);
    let out = lesson(&path).await;
    let _ = std::fs::remove_file(&path);
    assert_eq!(out.status.code(), Some(1));
    let said = errors(&out, &path);
    assert_eq!(said.len(), 5, "{said:?}");
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
}
