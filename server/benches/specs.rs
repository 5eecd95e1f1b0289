//! What playing a reader's spec costs: every permutation of a two-session write-skew spec
//! through racelab (`racelab::specs::play`, as `racelab run FILE.spec` plays it; and
//! `racelab::specs::play_why`, as `racelab run FILE.spec --why` plays it, each permutation
//! witnessed for its proof), beside a bare sqlx program that plays the same permutations on the
//! same server, measured side by side in one run.
//!
//! `cargo bench --bench specs [N]` (N: rounds, default 10).
//!
//! - **racelab**: the sandbox (a role and a schema in the specs database, made and removed), a
//!   control connection and one per session, and for each of the spec's 20 interleavings: the
//!   setup, the session setups (`BEGIN ISOLATION LEVEL REPEATABLE READ`), each step watched the
//!   tester's way (every 10 ms without an answer, the server is asked whether the session
//!   waits), the tester's output formatted, the teardown.
//! - **bare**: three `PgConnection`s to the same database and, for each interleaving, the same
//!   setup, session setups, steps in the same order and teardown, in a schema of its own; no
//!   watching, no output. It knows no step will wait (the spec's steps touch different rows),
//!   which racelab cannot know.
//!
//! Then a page's Run: one permutation, witnessed, with its ledger before and after and its
//! proof (`Choice::One`), beside the bare program playing that one permutation.
//!
//! Interleaved (racelab, racelab --why, bare, a page's Run, bare's one, racelab, …) after one
//! untimed round, so drift lands on all of them.

use racelab::engine::BoxFuture;
use racelab::engine::lane::Stage;
use racelab::specs::{self, Limits};
use shared::{EventKind, Service};
use sqlx::{Connection, Executor, PgConnection};
use std::sync::Arc;
use std::time::{Duration, Instant};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const ROUNDS: usize = 10;

/// Two doctors, three steps each, no permutation lines: C(6, 3) = 20 interleavings.
const SPEC: &str = "setup { CREATE TABLE doctors (name text PRIMARY KEY, on_call bool NOT NULL); \
INSERT INTO doctors VALUES ('alice', true), ('bob', true); }
teardown { DROP TABLE doctors; }
session alice
setup { BEGIN ISOLATION LEVEL REPEATABLE READ; }
step a_count { SELECT count(*) FROM doctors WHERE on_call; }
step a_leave { UPDATE doctors SET on_call = false WHERE name = 'alice'; }
step a_commit { COMMIT; }
session bob
setup { BEGIN ISOLATION LEVEL REPEATABLE READ; }
step b_count { SELECT count(*) FROM doctors WHERE on_call; }
step b_leave { UPDATE doctors SET on_call = false WHERE name = 'bob'; }
step b_commit { COMMIT; }
";

/// Counts the transcript lines racelab produced, and drops them.
#[derive(Default)]
struct Quiet(std::sync::atomic::AtomicUsize);

impl Stage for Quiet {
    fn emit(&self, kind: EventKind) {
        if matches!(kind, EventKind::Say { .. }) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
    fn gate<'a>(&'a self, _: &'a str, _: Service, _: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

fn database_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/racelab".to_owned())
}

/// The bare program's database: racelab's own, on the same server as the run databases.
fn bare_url() -> String {
    database_url()
}

/// One round through racelab; with `why`, each permutation's proof too (and every one of the
/// 20 must have one: the spec's table has a key).
async fn racelab_round(spec: &shared::spec::Spec, limits: &Limits, round: usize, why: bool) -> Result<usize, BoxError> {
    let stage = Arc::new(Quiet::default());
    let (url, id) = (database_url(), format!("bench{round}{}", if why { "why" } else { "" }));
    let played = match why {
        true => specs::play_why(&url, &id, spec, limits, stage.clone()).await?,
        false => specs::play(&url, &id, spec, limits, stage.clone()).await?,
    };
    assert_eq!(played.len(), 20);
    let proofs = played.iter().filter(|p| p.proof.is_some()).count();
    assert_eq!(proofs, if why { 20 } else { 0 }, "proofs with why = {why}");
    Ok(stage.0.load(std::sync::atomic::Ordering::Relaxed))
}

/// A page's Run: the first permutation, witnessed, its ledgers and proof told.
async fn page_round(spec: &shared::spec::Spec, limits: &Limits, round: usize) -> Result<(), BoxError> {
    let stage: Arc<dyn Stage> = Arc::new(Quiet::default());
    let lane = move |name: &str, quiet: bool| racelab::engine::Lane::new(name, stage.clone(), quiet);
    let id = format!("bench{round}page");
    let played = specs::play_on(&database_url(), &id, spec, limits, specs::Choice::One(0), &lane).await?;
    assert_eq!(played.len(), 1);
    Ok(())
}

async fn bare_round(spec: &shared::spec::Spec, round: usize, orders: usize) -> Result<(), BoxError> {
    let url = bare_url();
    let schema = format!("bench_spec_{round}");
    let mut control = PgConnection::connect(&url).await?;
    control
        .execute(format!("DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}").as_str())
        .await?;
    let path = format!("SET search_path = {schema}");
    control.execute(path.as_str()).await?;
    let mut sessions = Vec::new();
    for _ in &spec.sessions {
        let mut conn = PgConnection::connect(&url).await?;
        conn.execute(path.as_str()).await?;
        sessions.push(conn);
    }
    for order in shared::spec::all_permutations(spec, usize::MAX)
        .into_iter()
        .take(orders)
    {
        for setup in &spec.setup {
            control.execute(setup.as_str()).await?;
        }
        for (i, session) in spec.sessions.iter().enumerate() {
            if let Some(setup) = &session.setup {
                sessions[i].execute(setup.as_str()).await?;
            }
        }
        for name in &order {
            let (i, step) = spec.step(name).ok_or("a step of the spec")?;
            sessions[i].execute(step.sql.as_str()).await?;
        }
        if let Some(teardown) = &spec.teardown {
            control.execute(teardown.as_str()).await?;
        }
    }
    for conn in sessions {
        conn.close().await?;
    }
    control
        .execute(format!("DROP SCHEMA {schema} CASCADE").as_str())
        .await?;
    control.close().await?;
    Ok(())
}

fn median(mut ms: Vec<f64>) -> f64 {
    ms.sort_by(f64::total_cmp);
    match ms.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => ms[n / 2],
        n => (ms[n / 2 - 1] + ms[n / 2]) / 2.0,
    }
}

fn main() -> Result<(), BoxError> {
    let rounds = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .map(|a| a.parse::<usize>())
        .transpose()?
        .unwrap_or(ROUNDS)
        .max(1);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let spec = specs::read(SPEC, &Limits::default())?;
        let limits = Limits::command_line(Duration::from_secs(300));
        let (mut ours, mut why, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
        let (mut page, mut bare_one) = (Vec::new(), Vec::new());
        let mut lines = 0;
        let ms = |began: Instant| began.elapsed().as_secs_f64() * 1e3;
        for round in 0..=rounds {
            let began = Instant::now();
            lines = racelab_round(&spec, &limits, round, false).await?;
            let racelab = ms(began);
            let began = Instant::now();
            racelab_round(&spec, &limits, round, true).await?;
            let racelab_why = ms(began);
            let began = Instant::now();
            bare_round(&spec, round, usize::MAX).await?;
            let bare = ms(began);
            let began = Instant::now();
            page_round(&spec, &limits, round).await?;
            let one = ms(began);
            let began = Instant::now();
            bare_round(&spec, round, 1).await?;
            let bare_first = ms(began);
            if round > 0 {
                ours.push(racelab);
                why.push(racelab_why);
                theirs.push(bare);
                page.push(one);
                bare_one.push(bare_first);
            }
        }
        let (ours, why, theirs) = (median(ours), median(why), median(theirs));
        let (page, bare_one) = (median(page), median(bare_one));
        println!("every permutation (20) of a two-session write-skew spec, {rounds} rounds, medians:");
        println!("  racelab run (sandbox, watching, the tester's {lines} output lines): {ours:.1} ms");
        println!("  racelab run --why (each permutation witnessed, 20 proofs):   {why:.1} ms");
        println!("  bare sqlx, the same statements in the same orders:            {theirs:.1} ms");
        println!(
            "  racelab / bare: {:.2}×   racelab --why / bare: {:.2}×",
            ours / theirs,
            why / theirs
        );
        println!("one permutation, as a page's Run plays it (witnessed, its ledgers and proof):");
        println!(
            "  racelab: {page:.1} ms   bare sqlx, that permutation: {bare_one:.1} ms   racelab / bare: {:.2}×",
            page / bare_one
        );
        Ok(())
    })
}
