//! The command line: `racelab serve | run | list | crowd`.
//!
//! `run` prints exactly the tutorial's transcript on stdout and nothing else, so its output can
//! be compared line for line; the ledger diff and the verdict go to stderr.

use crate::config::{Config, ServeConfig};
use crate::db::connect_engine;
use crate::embedded::Embedded;
use crate::engine::Engine;
use crate::engine::Scenario as _;
use crate::labs;
use crate::web::{self, AppState};
use clap::{Parser, Subcommand};
use shared::ledger::{diff, render_text};
use shared::{EventKind, Ledger, Mode, Moment, Outcome, ServerMsg, Service, Verdict};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Debug, Parser)]
#[command(name = "racelab", version, about = "Watch concurrency bugs happen on real databases")]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the playground: the websocket API, the catalog, and the browser app.
    Serve {
        #[command(flatten)]
        config: Config,
        #[command(flatten)]
        serve: ServeConfig,
    },
    /// Run one scenario and print its transcript (ledger and verdict on stderr); or play a spec
    /// in PostgreSQL's isolation-tester format and print what its tester prints.
    Run {
        /// `lab/scenario`, e.g. `isolation/write-skew` (see `racelab list`); or a spec file
        /// (`FILE.spec`, or `-` for standard input).
        scenario: String,
        /// The variant; defaults to the scenario's first.
        #[arg(long)]
        variant: Option<String>,
        /// Repeat the run; for the load test, also print each strategy's min–max.
        #[arg(long, default_value_t = 1)]
        runs: u32,
        /// Print every event as a JSON line instead of the transcript.
        #[arg(long)]
        json: bool,
        /// Print why it happened on stderr: the dependency cycle between its transactions. A lab
        /// run of SQL sessions has its statements played again, in their order, as a spec, to see
        /// what each read saw; a spec has each permutation watched as it plays (which costs
        /// about half its time again, so it is asked for).
        #[arg(long)]
        why: bool,
        /// A spec run's id (its role and schema are named after it); a fresh one by default.
        /// For tests that look for what a run left behind.
        #[arg(long, hide = true, value_parser = run_id)]
        run_id: Option<String>,
        /// A spec's step limit in seconds, as the isolation tester's `PGISOLATIONTIMEOUT`: a
        /// step neither done nor waiting for a lock by then is cancelled.
        #[arg(long, env = "PGISOLATIONTIMEOUT", default_value_t = 300)]
        step_limit: u64,
        /// Where a spec plays: PostgreSQL, or MariaDB (at `MARIADB_URL`, in a database and user
        /// of its own; its SQL must be MariaDB's). By default where its `# database:` line says,
        /// else PostgreSQL. A lab's variant names its own database.
        #[arg(long, value_enum)]
        database: Option<Database>,
        #[command(flatten)]
        config: Config,
    },
    /// Record a run to one file that plays anywhere, with no racelab server behind it: a
    /// scenario's variant, or a spec (its first permutation, and every permutation's outcome).
    Record {
        /// `lab/scenario`, e.g. `isolation/write-skew`; or a spec file (`FILE.spec`).
        scenario: String,
        /// The variant (a spec's permutation: `p1`, `p2`, …); defaults to the first.
        #[arg(long)]
        variant: Option<String>,
        /// Where to write it (`-` for standard output); by default
        /// `<scenario>.<variant>.racelab.json` (`.html` with `--html`) in the current directory.
        #[arg(short, long)]
        output: Option<std::path::PathBuf>,
        /// Write one `.html` page that is the player and the recording together: it plays opened
        /// from disk and from any host, with nothing beside it.
        #[arg(long, conflicts_with = "svg")]
        html: bool,
        /// Write a picture for READMEs instead: an animated `.svg` (CSS, no script) that plays
        /// the timeline to its verdict in an `<img>`, and a still `.png` poster beside it.
        #[arg(long)]
        svg: bool,
        /// The built browser app the `--html` page carries (`trunk build --release` writes it).
        #[arg(long, env = "RACELAB_DIST", default_value = "dist")]
        dist: std::path::PathBuf,
        #[command(flatten)]
        config: Config,
    },
    /// Write what a static host serves with no racelab behind it (a blog's GitHub Pages, say):
    /// the recording player's own files (`--player DIR`: `player.html`, the app it loads, and
    /// `embed.js`, which turns `<racelab-scenario src=…>` into the player), or a site of the
    /// whole catalog (`--site DIR`: every scenario's every variant recorded on every configured
    /// PostgreSQL, an index, and the player).
    Export {
        /// Write the player into this folder (made if missing; files of the same names are
        /// replaced).
        #[arg(long, value_name = "DIR", required_unless_present = "site", conflicts_with = "site")]
        player: Option<std::path::PathBuf>,
        /// Write a site of the whole catalog into this folder.
        #[arg(long, value_name = "DIR")]
        site: Option<std::path::PathBuf>,
        /// With `--site`: only these scenarios (`isolation/write-skew`) or labs (`isolation`).
        #[arg(long, value_name = "SCENARIO", requires = "site")]
        only: Vec<String>,
        /// The built browser app (`trunk build --release` writes it here).
        #[arg(long, env = "RACELAB_DIST", default_value = "dist")]
        dist: std::path::PathBuf,
        #[command(flatten)]
        config: Config,
    },
    /// List every lab, scenario and variant.
    List,
    /// Play the anomaly atlas on the connected PostgreSQL: every classic anomaly (dirty write
    /// to the read-only transaction anomaly) at READ COMMITTED, REPEATABLE READ and
    /// SERIALIZABLE, and print what each run did, with each run's proof under `--why`.
    Atlas {
        /// Also print each cell's proof.
        #[arg(long)]
        why: bool,
        /// `mariadb`: the atlas on MariaDB at `MARIADB_URL` instead, its columns READ
        /// UNCOMMITTED to SERIALIZABLE with REPEATABLE READ's snapshot switch off and on, each
        /// cell judged from what its reads returned.
        #[arg(long, value_enum)]
        database: Option<Database>,
        #[command(flatten)]
        config: Config,
    },
    /// Check a trainer's lesson file (docs/lessons.md): every mistake named at its line, and
    /// every round that names a scenario, variant, PostgreSQL version or saved spec this
    /// racelab does not have refused by name. Prints its rounds when it holds.
    Lesson {
        /// The lesson (`*.lesson.md`).
        file: std::path::PathBuf,
        #[command(flatten)]
        config: Config,
    },
    /// Send a crowd of readers who press Run at the same moment to a racelab on this machine,
    /// and print how long their runs took (p50, p95, max), their verdicts and the runs per
    /// second. Loopback only; at most 1,000 readers and 600 s.
    Crowd {
        /// The racelab's websocket.
        #[arg(long, default_value = "ws://127.0.0.1:8080/ws")]
        url: String,
        #[arg(long, default_value_t = 200)]
        readers: usize,
        #[arg(long, default_value = "isolation/write-skew")]
        scenario: String,
        #[arg(long, default_value = "serializable")]
        variant: String,
        /// Seconds every reader waits for its run's end.
        #[arg(long, default_value_t = 120)]
        within: u64,
    },
    /// Run one child-process actor of a run (started by the engine, never by hand).
    #[command(hide = true)]
    Actor {
        /// The actor's kind (`sql-script`, `relay`, …).
        kind: String,
    },
}

impl Cli {
    /// Runs the command. Every command that plays specs runs within [`with_services`], which
    /// drops the spare databases they left in this process's pools before it returns.
    pub async fn execute(self) -> ExitCode {
        match self.command {
            Command::List => print_list(),
            Command::Export {
                player,
                site,
                only,
                dist,
                config,
            } => match (player, site) {
                (Some(player), _) => export_player(&dist, &player),
                (None, Some(site)) => export_site(&dist, &site, &only, config).await,
                (None, None) => ExitCode::from(2),
            },
            Command::Run {
                scenario,
                variant,
                runs,
                json,
                why,
                run_id,
                step_limit,
                database,
                config,
            } => {
                let spec = scenario == "-" || scenario.ends_with(".spec");
                match (spec, database) {
                    (true, _) => run_spec(scenario, (run_id, database), step_limit, (json, why), config).await,
                    (false, None | Some(Database::Postgresql)) => {
                        run_lab(&scenario, variant, (runs, json, why), config).await
                    }
                    (false, Some(Database::Mariadb)) => {
                        eprintln!(
                            "racelab: --database is for specs: a lab scenario plays where its variant says (`--variant mariadb-…`, see `racelab list`)"
                        );
                        ExitCode::from(2)
                    }
                }
            }
            Command::Record {
                scenario,
                variant,
                output,
                html,
                svg,
                dist,
                config,
            } => match form_of(html, svg, dist) {
                Ok(form) => record(scenario, variant, Written { output, form }, config).await,
                Err(code) => code,
            },
            Command::Atlas { why, database, config } => atlas_on(database, why, config).await,
            Command::Lesson { file, config } => {
                with_services(config, &[Service::Postgres], |config| check_lesson(file, config)).await
            }
            Command::Serve { config, serve } => {
                let needs = [Service::Postgres, Service::Redis, Service::Kafka, Service::Mariadb];
                with_services(config, &needs, |config| serve_http(config, serve)).await
            }
            Command::Actor { kind } => crate::engine::child::main(labs::CHILD_KINDS, &kind).await,
            Command::Crowd {
                url,
                readers,
                scenario,
                variant,
                within,
            } => {
                crowd(crate::crowd::Crowd {
                    url,
                    readers,
                    scenario,
                    variant,
                    within: std::time::Duration::from_secs(within),
                })
                .await
            }
        }
    }
}

/// `racelab run FILE.spec` (or `-`): the spec read, then played where `database` says (else its
/// `# database:` line): [`spec_run`] with PostgreSQL, as run `run_id` (a fresh one by default),
/// or [`spec_run_on_mariadb`]; each step limited to `step_limit` seconds.
async fn run_spec(
    path: String,
    (run_id, database): (Option<String>, Option<Database>),
    step_limit: u64,
    (json, why): (bool, bool),
    config: Config,
) -> ExitCode {
    let limits = crate::specs::Limits::command_line(std::time::Duration::from_secs(step_limit));
    let spec = match read_spec(&path, &limits) {
        Ok(spec) => spec,
        Err(code) => return code,
    };
    for name in spec.unused_steps() {
        eprintln!("unused step name: {name}");
    }
    let on_mariadb = match database {
        Some(database) => database == Database::Mariadb,
        None => spec.database == shared::spec::Database::Mariadb,
    };
    if on_mariadb {
        // MariaDB alone: a private one if none answers, and no PostgreSQL.
        return with_services(config, &[Service::Mariadb], |config| async move {
            spec_run_on_mariadb(&spec, &limits, (json, why), &config).await
        })
        .await;
    }
    let run_id = run_id.unwrap_or_else(crate::sandbox::new_run_id);
    with_services(config, &[Service::Postgres], |config| async move {
        spec_run(&spec, &run_id, &limits, json, why, config).await
    })
    .await
}

/// Where `racelab run FILE.spec` plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Database {
    Postgresql,
    Mariadb,
}

/// `racelab run FILE.spec --database mariadb`: the spec played on the MariaDB at `MARIADB_URL`,
/// in a database and user of its own, printed as the tester prints it (MariaDB's errors as its
/// client prints them). With `why`, each permutation's proof, saying what racelab cannot see
/// there. What a killed command left there is swept first (older than a run may be).
async fn spec_run_on_mariadb(
    spec: &shared::spec::Spec,
    limits: &crate::specs::Limits,
    (json, why): (bool, bool),
    config: &Config,
) -> ExitCode {
    let url = config.mariadb_url.clone();
    if let Err(error) = crate::sandbox::mariadb::sweep(&url, SPEC_SWEEP_AGE).await {
        tracing::debug!(%error, "no sweep of old MariaDB sandboxes");
    }
    let stage: Arc<dyn crate::engine::lane::Stage> = Arc::new(Printing { json });
    let lanes = move |name: &str, quiet: bool| crate::engine::Lane::new(name, stage.clone(), quiet);
    let choice = crate::specs::Choice::All { why };
    let played = crate::specs::play_on_mariadb(&url, spec, limits, choice, &lanes, interrupted()).await;
    match played {
        Ok(played) => {
            for permutation in &played {
                print_checks_and_proof(permutation);
            }
            if !played.is_empty() && spec.checks.is_empty() {
                eprintln!("no check stated (add `# check: <SQL>` lines for a verdict)");
            }
            ExitCode::SUCCESS
        }
        Err(crate::specs::SpecError::Interrupted) => {
            eprintln!("racelab: interrupted; the spec's sandbox is removed");
            ExitCode::from(130)
        }
        Err(error) => {
            eprintln!("{error}");
            ExitCode::FAILURE
        }
    }
}

/// `racelab run lab/scenario`: plays `name`'s `variant` (its first by default) `runs` times,
/// with the services it needs. Fails (2) on a name that is no scenario.
async fn run_lab(
    name: &str,
    variant: Option<String>,
    (runs, json, why): (u32, bool, bool),
    config: Config,
) -> ExitCode {
    let Some(scenario) = labs::find(name) else {
        eprintln!("racelab: unknown scenario {name:?}. Known scenarios:\n{}", list());
        return ExitCode::from(2);
    };
    let variant = variant.unwrap_or_else(|| scenario.variants[0].0.to_owned());
    // Only the services this scenario needs (the isolation lab starts no Redis), and the
    // engine's PostgreSQL.
    let mut needs = scenario.budget(&variant).services();
    needs.push(Service::Postgres);
    with_services(config, &needs, |config| run(scenario, variant, runs, json, why, config)).await
}

/// What `racelab record` writes: a page of the built app in `dist` (`html`), a picture (`svg`),
/// or the recording itself; or, for a page with no built app, the exit code.
fn form_of(html: bool, svg: bool, dist: std::path::PathBuf) -> Result<Form, ExitCode> {
    // Refused before anything is played, not after.
    if html && !dist.join("index.html").is_file() {
        eprintln!("racelab: {}", crate::export::ExportError::NotBuilt(dist));
        return Err(ExitCode::FAILURE);
    }
    Ok(match (html, svg) {
        (true, _) => Form::Html(dist),
        (false, true) => Form::Picture,
        (false, false) => Form::Recording,
    })
}

/// Where a spec run's events go on the command line: its transcript lines to stdout as they
/// come (the tester's output, byte for byte), or every event as a JSON line.
struct Printing {
    json: bool,
}

impl crate::engine::lane::Stage for Printing {
    fn emit(&self, kind: EventKind) {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = match (&kind, self.json) {
            (_, true) => serde_json::to_string(&kind).map_or(Ok(()), |line| writeln!(out, "{line}")),
            (EventKind::Say { line, .. }, false) => writeln!(out, "{line}"),
            _ => Ok(()),
        };
    }

    fn gate<'a>(&'a self, _: &'a str, _: Service, _: &'a str) -> crate::engine::BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

/// Spec sandboxes older than this with no session are a killed command's: swept.
const SPEC_SWEEP_AGE: std::time::Duration = std::time::Duration::from_secs(3_600);

/// Ctrl-C or SIGTERM.
async fn interrupted() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

/// A run id given on the command line: lowercase letters and digits, as racelab makes them.
fn run_id(text: &str) -> Result<String, String> {
    let fits =
        !text.is_empty() && text.len() <= 32 && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if fits {
        Ok(text.to_owned())
    } else {
        Err("a run id is 1 to 32 lowercase letters and digits".to_owned())
    }
}

/// The server a command's specs play on (of `--postgres`'s version), with what a killed
/// `racelab run` left there swept first (roles no session uses, older than a run may be).
async fn specs_server(config: &Config) -> Result<String, ExitCode> {
    let url = config.url_of_version().await.map_err(|error| {
        eprintln!("racelab: {error}");
        ExitCode::FAILURE
    })?;
    if let Err(error) = crate::specs::confine::sweep(&url, SPEC_SWEEP_AGE).await {
        tracing::debug!(%error, "no sweep of old spec sandboxes");
    }
    Ok(url)
}

/// `racelab run FILE.spec`: plays the spec as PostgreSQL's isolation tester would, on the
/// configured PostgreSQL (in a sandbox database and role of its own), and prints what the
/// tester prints on stdout; its warnings, its `# check:` verdicts and any refusal on stderr.
/// Fails (1) where the tester would stop, and (2) on a spec that cannot be read. With `why`,
/// each permutation's proof follows its checks on stderr.
async fn spec_run(
    spec: &shared::spec::Spec,
    run_id: &str,
    limits: &crate::specs::Limits,
    json: bool,
    why: bool,
    config: Config,
) -> ExitCode {
    let url = match specs_server(&config).await {
        Ok(url) => url,
        Err(code) => return code,
    };
    let stage = Arc::new(Printing { json });
    let playing: crate::engine::BoxFuture<'_, _> = match why {
        true => Box::pin(crate::specs::play_why(&url, run_id, spec, limits, stage)),
        false => Box::pin(crate::specs::play(&url, run_id, spec, limits, stage)),
    };
    let played = tokio::select! {
        played = playing => played,
        () = interrupted() => {
            // The play is dropped mid-step; its sandbox goes before the command exits.
            crate::specs::confine::remove_run(&url, run_id).await;
            eprintln!("racelab: interrupted; the spec's sandbox is removed");
            return ExitCode::from(130);
        }
    };
    match played {
        Ok(played) => {
            for permutation in &played {
                print_checks_and_proof(permutation);
            }
            if !played.is_empty() && spec.checks.is_empty() {
                eprintln!("no check stated (add `# check: <SQL>` lines for a verdict)");
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("{error}");
            ExitCode::FAILURE
        }
    }
}

/// The spec at `path` (`-`: standard input), read within `limits`; or why not on stderr, and
/// the exit code: 2 for a file that cannot be read, 1 for a spec that is not valid.
fn read_spec(path: &str, limits: &crate::specs::Limits) -> Result<shared::spec::Spec, ExitCode> {
    let text = if path == "-" {
        let mut text = String::new();
        match std::io::Read::read_to_string(&mut std::io::stdin(), &mut text) {
            Ok(_) => Ok(text),
            Err(e) => Err(e),
        }
    } else {
        std::fs::read_to_string(path)
    };
    let text = match text {
        Ok(text) => text,
        Err(error) => {
            eprintln!("racelab: cannot read {path}: {error}");
            return Err(ExitCode::from(2));
        }
    };
    crate::specs::read(&text, limits).map_err(|error| {
        eprintln!("racelab: {path}: {error}");
        ExitCode::FAILURE
    })
}

/// One played permutation's `# check:` verdicts and, with `--why`, its proof, on stderr.
fn print_checks_and_proof(permutation: &crate::specs::Played) {
    for check in &permutation.checks {
        let verdict = match check.held {
            Some(true) => "held",
            Some(false) => "broken",
            None => "not a yes or no",
        };
        eprintln!(
            "check {verdict} after {}: {} → {}",
            permutation.steps.join(" "),
            check.sql,
            check.answer
        );
    }
    if let Some(proof) = &permutation.proof {
        let found = proof
            .anomaly
            .map_or_else(|| "no cycle".to_owned(), |a| format!("{} ({})", a.name(), a.class()));
        eprintln!("why, after {}: {found}", permutation.steps.join(" "));
        for line in &proof.lines {
            eprintln!("  {line}");
        }
    }
}

/// `racelab export --player DIR`: the player's files, then what to paste, on stdout.
fn export_player(dist: &std::path::Path, dir: &std::path::Path) -> ExitCode {
    match crate::export::player(dist, dir) {
        Ok(exported) => {
            let at = dir
                .file_name()
                .map_or_else(|| ".".into(), |name| name.to_string_lossy());
            println!(
                "wrote the player into {}: {} ({} bytes)",
                dir.display(),
                exported.files.join(", "),
                exported.bytes
            );
            println!(
                "serve that folder beside your pages (as /{at}, say), put a recording beside a page, and paste:\n"
            );
            print!("{}", crate::export::snippet(&format!("/{at}")));
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("racelab: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `racelab export --site DIR`: every scenario's every variant (but the load tests, whose
/// thousands of requests are the point of watching live) and the anomaly atlas, recorded on
/// every PostgreSQL racelab plays on, under `DIR/runs/`; the player under `DIR/racelab/`; an
/// index and an atlas page. A race that cannot be recorded (its service down, say) is listed
/// with the reason, and the rest go on. `only` narrows it to scenarios, labs or `atlas`.
async fn export_site(dist: &std::path::Path, dir: &std::path::Path, only: &[String], config: Config) -> ExitCode {
    let chosen: Vec<&'static labs::ScenarioDef> = labs::LABS
        .iter()
        .flat_map(|lab| lab.scenarios.iter().copied())
        .filter(|s| !s.workload)
        .filter(|s| only.is_empty() || only.iter().any(|o| s.id == o || s.id.starts_with(&format!("{o}/"))))
        .collect();
    let atlas = only.is_empty() || only.iter().any(|o| o == "atlas");
    if chosen.is_empty() && !atlas {
        eprintln!(
            "racelab: no scenario is {only:?} (nor `atlas`). Known scenarios:\n{}",
            list()
        );
        return ExitCode::from(2);
    }
    let runs = dir.join(crate::export::SITE_RUNS);
    let prepared = crate::export::player(dist, &dir.join(crate::export::SITE_PLAYER))
        .map_err(|e| e.to_string())
        .and_then(|_| std::fs::create_dir_all(&runs).map_err(|e| format!("cannot make {}: {e}", runs.display())));
    if let Err(error) = prepared {
        eprintln!("racelab: {error}");
        return ExitCode::FAILURE;
    }
    let mut needs: Vec<Service> = vec![Service::Postgres];
    for scenario in &chosen {
        for (variant, _, _) in scenario.variants {
            needs.extend(scenario.budget(variant).services());
        }
    }
    needs.sort_by_key(|s| s.label());
    needs.dedup();
    with_services(config, &needs, |mut config| async move {
        let engine = match command_engine(&mut config).await {
            Ok(engine) => engine,
            Err(code) => return code,
        };
        let began = std::time::Instant::now();
        let entries = record_site(&engine, &chosen, &runs).await;
        let cells = match atlas {
            true => record_atlas(&engine, &runs).await,
            false => Vec::new(),
        };
        engine
            .close(std::time::Duration::from_secs(5), std::time::Duration::from_secs(30))
            .await;
        let made = entries.iter().filter(|e| e.made.is_ok()).count() + cells.iter().filter(|c| c.made.is_ok()).count();
        let when = format!(
            "{made} recordings, made by racelab {} in {:.1} s.",
            env!("CARGO_PKG_VERSION"),
            began.elapsed().as_secs_f64()
        );
        let mut pages = vec![("index.html", crate::export::site_index(&entries, atlas, &when))];
        if atlas {
            pages.push((crate::export::SITE_ATLAS, crate::export::atlas_page(&cells, &when)));
        }
        for (name, page) in pages {
            if let Err(error) = std::fs::write(dir.join(name), page) {
                eprintln!("racelab: cannot write {}: {error}", dir.join(name).display());
                return ExitCode::FAILURE;
            }
        }
        println!(
            "wrote {} ({when}); serve that folder and open its index.html",
            dir.display()
        );
        match made {
            0 => ExitCode::FAILURE,
            _ => ExitCode::SUCCESS,
        }
    })
    .await
}

/// Every entry of the atlas at every level, on each PostgreSQL version `engine` plays on,
/// recorded as a spec into `runs` and judged from its own run.
async fn record_atlas(engine: &Arc<crate::engine::Engine>, runs: &std::path::Path) -> Vec<crate::export::AtlasCell> {
    let versions = engine.versions();
    let several = versions.len() > 1;
    let mut cells = Vec::new();
    for major in versions {
        for entry in &shared::atlas::ENTRIES {
            for level in shared::atlas::LEVELS {
                let postgres = Some(major).filter(|_| several);
                let made = crate::recording::record(
                    engine,
                    crate::recording::Source::Spec(entry.spec(level)),
                    None,
                    postgres,
                    None,
                )
                .await
                .map_err(|error| error.to_string())
                .and_then(|recording| {
                    let level_name = level.to_lowercase().replace(' ', "-");
                    let file = format!("atlas-{}.{level_name}{}.racelab.json", entry.id, on_version(postgres));
                    keep_in(runs, &file, &recording)?;
                    Ok((crate::export::judged(entry, &recording), file))
                });
                match &made {
                    Ok((cell, _)) => eprintln!("racelab: atlas {} at {level}: {}", entry.id, cell.label()),
                    Err(why) => eprintln!("racelab: atlas {} at {level}: not recorded: {why}", entry.id),
                }
                cells.push(crate::export::AtlasCell {
                    entry,
                    level,
                    postgres,
                    made,
                });
            }
        }
    }
    cells
}

/// Records each of `chosen`'s variants on each PostgreSQL version `engine` plays on (once, where
/// the variant needs no PostgreSQL or there is one version) into `runs`, saying each on stderr.
async fn record_site(
    engine: &Arc<crate::engine::Engine>,
    chosen: &[&'static labs::ScenarioDef],
    runs: &std::path::Path,
) -> Vec<crate::export::SiteEntry> {
    let versions = engine.versions();
    let mut entries = Vec::new();
    for scenario in chosen {
        let lab = labs::LABS
            .iter()
            .find(|lab| scenario.id.starts_with(&format!("{}/", lab.id)))
            .map_or_else(String::new, |lab| lab.title.to_owned());
        for (variant, label, about) in scenario.variants {
            // A variant on MariaDB plays once, whatever PostgreSQL versions there are.
            let on_each = versions.len() > 1
                && shared::catalog::database_of(variant) == Service::Postgres
                && scenario.budget(variant).services().contains(&Service::Postgres);
            let plays_on: Vec<Option<u32>> = match on_each {
                true => versions.iter().copied().map(Some).collect(),
                false => vec![None],
            };
            for postgres in plays_on {
                let proof_on = engine.url_of(postgres.unwrap_or_else(|| engine.default_postgres()));
                let made = crate::recording::record(
                    engine,
                    crate::recording::Source::Lab(scenario),
                    Some(variant),
                    postgres,
                    proof_on.as_deref(),
                )
                .await
                .map_err(|error| error.to_string())
                .and_then(|recording| {
                    let file = crate::recording::default_file_name(scenario.id, variant)
                        .replace(".racelab.json", &format!("{}.racelab.json", on_version(postgres)));
                    keep_in(runs, &file, &recording)?;
                    Ok((file, recording.stamp.line()))
                });
                match &made {
                    Ok((file, _)) => eprintln!("racelab: {} {variant}: {file}", scenario.id),
                    Err(why) => eprintln!("racelab: {} {variant}: not recorded: {why}", scenario.id),
                }
                entries.push(crate::export::SiteEntry {
                    lab: lab.clone(),
                    scenario: scenario.id.to_owned(),
                    title: scenario.title.to_owned(),
                    hook: scenario.hook.to_owned(),
                    variant: (*label).to_owned(),
                    about: (*about).to_owned(),
                    postgres: postgres.filter(|_| on_each),
                    made,
                });
            }
        }
    }
    entries
}

/// What a site's recording's file name says of the PostgreSQL it played on (`.pg18`), where the
/// site has several.
fn on_version(postgres: Option<u32>) -> String {
    postgres.map_or_else(String::new, |m| format!(".pg{m}"))
}

/// Writes `recording` into a site's `runs` as `file`.
fn keep_in(runs: &std::path::Path, file: &str, recording: &shared::recording::Recording) -> Result<(), String> {
    let text = serde_json::to_string(recording).map_err(|e| e.to_string())?;
    std::fs::write(runs.join(file), text).map_err(|e| format!("cannot write {file}: {e}"))
}

/// A lab run's proof, on stderr (or why there is none).
async fn print_why(url: &str, scenario: &str, variant: &str, events: &[shared::Event]) {
    let text = match crate::control::spec_of_lab_run(scenario, variant, events) {
        Ok(text) => text,
        Err(why_not) => {
            eprintln!("why: racelab cannot play this run again as a spec: {why_not}");
            return;
        }
    };
    match crate::specs::prove(url, &text).await {
        Ok(Some(proof)) => {
            let found = proof
                .anomaly
                .map_or_else(|| "no cycle".to_owned(), |a| format!("{} ({})", a.name(), a.class()));
            eprintln!("why: {found}");
            for line in &proof.lines {
                eprintln!("  {line}");
            }
        }
        Ok(None) => eprintln!("why: none of this run's tables has a primary key to tell rows apart by"),
        Err(error) => eprintln!("why: {error}"),
    }
}

/// Where and how `racelab record` writes what it recorded.
struct Written {
    /// The file (`-`: standard output); a name of its own by default.
    output: Option<std::path::PathBuf>,
    form: Form,
}

/// What `racelab record` writes.
enum Form {
    /// The recording itself (`.racelab.json`).
    Recording,
    /// One page with the player inside, from the built app in this folder (`.html`).
    Html(std::path::PathBuf),
    /// An animated picture (`.svg`) and a still poster beside it (`.png`).
    Picture,
}

/// `racelab record`: plays the scenario (or spec) with the services it needs and writes its
/// recording; says where on stderr. Fails (2) on a name or file that does not exist, (1) when
/// the run cannot be played or did not complete.
async fn record(scenario: String, variant: Option<String>, written: Written, config: Config) -> ExitCode {
    let (source, needs) = if scenario.ends_with(".spec") {
        match std::fs::read_to_string(&scenario) {
            Ok(text) => (crate::recording::Source::Spec(text), vec![Service::Postgres]),
            Err(error) => {
                eprintln!("racelab: cannot read {scenario}: {error}");
                return ExitCode::from(2);
            }
        }
    } else {
        let Some(found) = labs::find(&scenario) else {
            eprintln!("racelab: unknown scenario {scenario:?}. Known scenarios:\n{}", list());
            return ExitCode::from(2);
        };
        let variant = variant.clone().unwrap_or_else(|| found.variants[0].0.to_owned());
        let mut needs = found.budget(&variant).services();
        // The engine's, wherever the run plays.
        needs.push(Service::Postgres);
        (crate::recording::Source::Lab(found), needs)
    };
    with_services(config, &needs, |mut config| async move {
        let engine = match command_engine(&mut config).await {
            Ok(engine) => engine,
            Err(code) => return code,
        };
        let proof_on = config.url_of_version().await.ok();
        let made = crate::recording::record(
            &engine,
            source,
            variant.as_deref(),
            config.postgres,
            proof_on.as_deref(),
        )
        .await;
        engine
            .close(std::time::Duration::from_secs(5), std::time::Duration::from_secs(30))
            .await;
        let recording = match made {
            Ok(recording) => recording,
            Err(error) => {
                eprintln!("racelab: {error}");
                return ExitCode::FAILURE;
            }
        };
        write_recording(&recording, &scenario, written).await
    })
    .await
}

/// Writes `recording` as told (standard output for `-`, a name of its own by default).
async fn write_recording(recording: &shared::recording::Recording, scenario: &str, written: Written) -> ExitCode {
    let name = crate::recording::default_file_name(scenario, &recording.stamp.variant);
    let made = match &written.form {
        Form::Recording => serde_json::to_string(recording)
            .map(|text| (text, name))
            .map_err(|e| format!("the recording cannot be written as JSON: {e}")),
        Form::Html(dist) => serde_json::to_string(recording)
            .map_err(|e| e.to_string())
            .and_then(|json| crate::export::one_file(dist, &json, &recording.scenario.title).map_err(|e| e.to_string()))
            .map(|page| (page, name.replace(".racelab.json", ".html"))),
        Form::Picture => Ok((
            crate::web::picture::draw_with(&recording.run_to_play(), crate::web::picture::Motion::Played),
            name.replace(".racelab.json", ".svg"),
        )),
    };
    let (text, name) = match made {
        Ok(made) => made,
        Err(error) => {
            eprintln!("racelab: {error}");
            return ExitCode::FAILURE;
        }
    };
    let path = written.output.unwrap_or_else(|| name.into());
    if path.as_os_str() == "-" {
        println!("{text}");
        return ExitCode::SUCCESS;
    }
    if let Err(error) = std::fs::write(&path, text) {
        eprintln!("racelab: cannot write {}: {error}", path.display());
        return ExitCode::FAILURE;
    }
    eprintln!("racelab: {} written ({})", path.display(), recording.stamp.line());
    match written.form {
        Form::Picture => write_poster(recording, &path.with_extension("png")).await,
        _ => ExitCode::SUCCESS,
    }
}

/// The still picture of `recording` as PNG at `path`: a README's poster, and what a host that
/// will not show SVG shows.
async fn write_poster(recording: &shared::recording::Recording, path: &std::path::Path) -> ExitCode {
    let still = crate::web::picture::draw(&recording.run_to_play());
    match crate::web::png::render(still).await {
        Ok(png) => match std::fs::write(path, png) {
            Ok(()) => {
                eprintln!("racelab: {} written (its poster)", path.display());
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("racelab: cannot write {}: {error}", path.display());
                ExitCode::FAILURE
            }
        },
        Err(error) => {
            eprintln!("racelab: no poster: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `racelab atlas`: the matrix on stdout; fails when a run could not be played.
/// `racelab atlas`, on PostgreSQL or (`--database mariadb`) on MariaDB, with the service it needs.
async fn atlas_on(database: Option<Database>, why: bool, config: Config) -> ExitCode {
    match database {
        Some(Database::Mariadb) => {
            with_services(config, &[Service::Mariadb], |config| atlas_on_mariadb(why, config)).await
        }
        _ => with_services(config, &[Service::Postgres], |config| atlas(why, config)).await,
    }
}

/// `racelab lesson FILE`: the lesson's rounds, or what is wrong with it (exit 1); a file that
/// cannot be read, 2.
async fn check_lesson(file: std::path::PathBuf, mut config: Config) -> ExitCode {
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("racelab: cannot read {}: {error}", file.display());
            return ExitCode::from(2);
        }
    };
    let engine = match command_engine(&mut config).await {
        Ok(engine) => engine,
        Err(code) => return code,
    };
    match crate::lessons::check(&engine, &text).await {
        Ok(lesson) => {
            println!("{}: {} rounds", lesson.title, lesson.rounds.len());
            for (i, round) in lesson.rounds.iter().enumerate() {
                println!("{:>3}. {}", i + 1, round.title);
            }
            ExitCode::SUCCESS
        }
        Err(errors) => {
            for error in errors {
                eprintln!("{}: {error}", file.display());
            }
            ExitCode::FAILURE
        }
    }
}

/// `racelab atlas --database mariadb`: the matrix on MariaDB, each cell's proof with `why`.
async fn atlas_on_mariadb(why: bool, config: Config) -> ExitCode {
    let limits = crate::specs::Limits::command_line(std::time::Duration::from_secs(10));
    let observing = crate::specs::atlas::observe_mariadb(&config.mariadb_url, &limits);
    print_atlas(observing, |atlas| print_proofs(atlas, why)).await
}

async fn atlas(why: bool, config: Config) -> ExitCode {
    let url = match specs_server(&config).await {
        Ok(url) => url,
        Err(code) => return code,
    };
    let limits = crate::specs::Limits::command_line(std::time::Duration::from_secs(10));
    print_atlas(crate::specs::atlas::observe(&url, &limits), |atlas| {
        print_proofs(atlas, why)
    })
    .await
}

/// Each cell's proof, where `why` asks for them.
fn print_proofs(atlas: &crate::specs::atlas::Atlas, why: bool) {
    if !why {
        return;
    }
    for cell in &atlas.cells {
        let Some(proof) = &cell.proof else { continue };
        println!("\n{} at {}: {}", cell.entry.name, cell.level, cell.cell.sentence());
        for line in &proof.lines {
            println!("  {line}");
        }
    }
}

/// Prints the atlas `observing` plays, then what `after` adds (each cell's proof); Ctrl-C
/// stops it (130).
async fn print_atlas(
    observing: impl std::future::Future<Output = Result<crate::specs::atlas::Atlas, crate::specs::SpecError>>,
    after: impl FnOnce(&crate::specs::atlas::Atlas),
) -> ExitCode {
    let observed = tokio::select! {
        observed = observing => observed,
        () = interrupted() => {
            eprintln!("racelab: interrupted; the sweep removes the run it was playing");
            return ExitCode::from(130);
        }
    };
    match observed {
        Ok(atlas) => {
            print!("{}", crate::specs::atlas::render(&atlas));
            after(&atlas);
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("racelab: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `racelab crowd`: the summary on stdout; fails unless every reader's run ended.
async fn crowd(crowd: crate::crowd::Crowd) -> ExitCode {
    // The server's side, read from its /metrics before, every 200 ms during, and after.
    let client = reqwest::Client::new();
    let metrics = crate::crowd::metrics_url(&crowd.url);
    let before = match &metrics {
        Some(url) => crate::crowd::scrape(&client, url).await,
        None => None,
    };
    let (done_tx, mut done_rx) = tokio::sync::oneshot::channel::<()>();
    let sampling = {
        let (client, metrics) = (client.clone(), metrics.clone());
        tokio::spawn(async move {
            let mut during = Vec::new();
            while let Some(url) = &metrics {
                tokio::select! {
                    _ = &mut done_rx => break,
                    () = tokio::time::sleep(std::time::Duration::from_millis(200)) => {}
                }
                during.extend(crate::crowd::scrape(&client, url).await);
            }
            during
        })
    };
    let gathered = crowd.gather().await;
    let _ = done_tx.send(());
    let during = sampling.await.unwrap_or_default();
    let after = match &metrics {
        Some(url) => crate::crowd::scrape(&client, url).await,
        None => None,
    };
    match gathered {
        Ok((seen, wall)) => {
            let summary = crate::crowd::Summary::of(&seen, wall);
            println!("{summary}");
            match (before, after) {
                (Some(before), Some(after)) => {
                    println!("{}", crate::crowd::ServerSide::between(&before, &during, &after));
                }
                _ => println!("server (/metrics): did not answer"),
            }
            if summary.lost == 0 && summary.refused.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("racelab: {error}");
            ExitCode::from(2)
        }
    }
}

/// `racelab list`: the catalog on stdout.
fn print_list() -> ExitCode {
    print!("{}", list());
    ExitCode::SUCCESS
}

/// The catalog as text: each lab, its scenarios, their variants.
pub fn list() -> String {
    let mut out = String::new();
    for lab in labs::catalog() {
        let services: Vec<&str> = lab.services.iter().map(|s| s.label()).collect();
        out.push_str(&format!("{} — {} (needs {})\n", lab.id, lab.title, services.join(", ")));
        for scenario in &lab.scenarios {
            out.push_str(&format!("  {:<40} {}\n", scenario.id, scenario.hook));
            for variant in &scenario.variants {
                out.push_str(&format!("      --variant {:<22} {}\n", variant.id, variant.description));
            }
        }
    }
    out
}

/// Runs `command` with every service it needs: the configured ones, or private ones started
/// for it (see [`crate::embedded`]), which are stopped when it returns.
async fn with_services<F, Fut>(mut config: Config, needs: &[Service], command: F) -> ExitCode
where
    F: FnOnce(Config) -> Fut,
    Fut: std::future::Future<Output = ExitCode>,
{
    let provided = Embedded::provide(&mut config, needs).await;
    for (service, why) in &config.unavailable {
        tracing::warn!("{}: down: {why}; {}", service.label(), crate::labs::needed_by(*service));
    }
    let embedded = match provided {
        Ok(embedded) => embedded,
        Err(error) => {
            eprintln!("racelab: {error}");
            return ExitCode::FAILURE;
        }
    };
    let code = command(config).await;
    // The spare databases readers' specs left in this process's pools (`specs::confine`), as
    // nothing after the command will use them; their resets finish first, and on a private
    // server before it stops.
    crate::specs::confine::drain().await;
    embedded.stop().await;
    code
}

async fn run(
    scenario: &'static labs::ScenarioDef,
    variant: String,
    runs: u32,
    json: bool,
    why: bool,
    mut config: Config,
) -> ExitCode {
    let engine = match command_engine(&mut config).await {
        Ok(engine) => engine,
        Err(code) => return code,
    };
    // A proof plays the run again on a server of the run's version (MariaDB's on MariaDB).
    let why_on = match (why, shared::catalog::database_of(&variant)) {
        (false, _) => None,
        (true, Service::Mariadb) => Some(config.mariadb_url.clone()),
        (true, _) => config.url_of_version().await.ok(),
    };
    let played = async {
        let mut finals = Vec::new();
        for _ in 0..runs.max(1) {
            let why = why_on.as_deref();
            finals.push(run_once(&engine, scenario, &variant, json, why).await?);
        }
        if runs > 1
            && let Some(summary) = scenario.summarize(&finals)
        {
            print!("{summary}");
        }
        Ok(ExitCode::SUCCESS)
    };
    let code = played.await.unwrap_or_else(|code| code);
    // A run says done before its sandbox goes: the command ends once it has gone, and its
    // connections' lease with it.
    engine
        .close(std::time::Duration::from_secs(5), std::time::Duration::from_secs(30))
        .await;
    code
}

/// The engine of a command: its runs one after another, so nothing is made ahead and nothing
/// is left behind (no ready sandbox, no kept session). Says why on stderr when it cannot start.
async fn command_engine(config: &mut Config) -> Result<Arc<Engine>, ExitCode> {
    config.warm_sandboxes = 0;
    config.keep_sessions = false;
    connect_engine(config).await.map(Arc::new).map_err(|error| {
        eprintln!("racelab: {error}");
        ExitCode::FAILURE
    })
}

/// Plays one run to its end; returns its final ledger. With `why` (the database's URL), also
/// prints why it happened.
async fn run_once(
    engine: &Arc<Engine>,
    scenario: &'static labs::ScenarioDef,
    variant: &str,
    json: bool,
    why: Option<&str>,
) -> Result<Ledger, ExitCode> {
    let mut events = Vec::new();
    let mut handle = match engine.start(scenario, variant, Mode::Auto).await {
        Ok(handle) => handle,
        Err(error) => {
            eprintln!("racelab: {error}");
            return Err(ExitCode::from(2));
        }
    };
    let mut findings = Findings::default();
    let mut interrupted = false;
    loop {
        let update = tokio::select! {
            update = handle.updates.recv() => update,
            // Ctrl-C cancels the run and still waits for its cleanup (its sandbox is dropped).
            _ = tokio::signal::ctrl_c(), if !interrupted => {
                interrupted = true;
                eprintln!("racelab: cancelling the run and cleaning its sandbox…");
                handle.cancel();
                continue;
            }
        };
        let Some(update) = update else { break };
        match update {
            ServerMsg::Queued { position } => eprintln!("(queued: place {position} in line)"),
            ServerMsg::Event { event } => {
                if json {
                    println!("{}", serde_json::to_string(&event).unwrap_or_default());
                }
                if why.is_some() {
                    events.push(event.clone());
                }
                findings.note(event.kind, json);
            }
            ServerMsg::Done { outcome, .. } => {
                findings.print();
                if let (Some(url), Outcome::Completed) = (why, &outcome) {
                    print_why(url, scenario.id, variant, &events).await;
                }
                return findings.final_ledger(outcome);
            }
            // A room's status never reaches a run played from the command line.
            ServerMsg::Started { .. }
            | ServerMsg::Error { .. }
            | ServerMsg::Room { .. }
            | ServerMsg::Tally { .. }
            | ServerMsg::Lesson(_) => {}
        }
    }
    eprintln!("racelab: the run ended without a result");
    Err(ExitCode::FAILURE)
}

/// What a run played on the command line shows at its end: its ledgers and its verdict.
#[derive(Default)]
struct Findings {
    before: Option<Ledger>,
    after: Option<Ledger>,
    expected: Option<Ledger>,
    verdict: Option<Verdict>,
}

impl Findings {
    /// Keeps what `kind` says of the ledgers and the verdict; a transcript line goes to stdout
    /// at once (unless every event goes out as `json`).
    fn note(&mut self, kind: EventKind, json: bool) {
        match kind {
            EventKind::Say { line, .. } if !json => println!("{line}"),
            EventKind::Ledger {
                moment: Moment::Before,
                ledger,
            } => self.before = Some(ledger),
            EventKind::Ledger {
                moment: Moment::After,
                ledger,
            } => self.after = Some(ledger),
            EventKind::Ledger {
                moment: Moment::Expected,
                ledger,
            } => self.expected = Some(ledger),
            EventKind::Verdict { verdict: v } => self.verdict = Some(v),
            _ => {}
        }
    }

    /// The ledger's diffs (before → after, and against a correct system) and the verdict with
    /// its checks, on stderr.
    fn print(&self) {
        if let (Some(before), Some(after)) = (&self.before, &self.after) {
            eprintln!("\nledger, before → after:\n{}", render_text(&diff(before, after)));
            if let Some(expected) = &self.expected {
                eprintln!(
                    "against a correct system (expected → what happened):\n{}",
                    render_text(&diff(expected, &after.restricted_to(expected)))
                );
            }
        }
        if let Some(verdict) = &self.verdict {
            eprintln!(
                "verdict: {} — {}\n  {}",
                verdict.label(),
                verdict.headline,
                verdict.reason
            );
            for check in &verdict.checks {
                eprintln!(
                    "  [{}] {} (got {})",
                    if check.holds { "ok" } else { "broken" },
                    check.rule,
                    check.actual
                );
            }
        }
    }

    /// The run's final ledger if it completed; else the exit code (a failure says why).
    fn final_ledger(self, outcome: Outcome) -> Result<Ledger, ExitCode> {
        match outcome {
            Outcome::Completed => Ok(self.after.unwrap_or_default()),
            Outcome::Failed { message } => {
                eprintln!("racelab: the run failed: {message}");
                Err(ExitCode::FAILURE)
            }
            Outcome::Cancelled => Err(ExitCode::FAILURE),
        }
    }
}

async fn serve_http(config: Config, serve: ServeConfig) -> ExitCode {
    let engine = match connect_engine(&config).await {
        Ok(engine) => Arc::new(engine),
        Err(error) => {
            eprintln!("racelab: {error}");
            return ExitCode::FAILURE;
        }
    };
    // The catalog racelab's runs churn is vacuumed when it is idle (autovacuum may be off).
    tokio::spawn(vacuum_when_idle(engine.clone()));
    // Sandboxes a crash or a hard stop left behind are swept now and then, not only at startup;
    // readers' specs' roles too (at startup as well: they are not in the engine's registry).
    // Each server's, as each keeps its own.
    tokio::spawn(sweep_now_and_then(engine.clone(), config.runs_per_client));
    tokio::spawn(forget_old_results(engine.clone(), config.results_days));
    let state = AppState::new(engine.clone(), Arc::new(config));
    let sockets = state.sockets.clone();
    let (app, rooms) = web::app(state, &serve.dist);
    let address = match listen_address(&serve) {
        Ok(address) => address,
        Err(code) => return code,
    };
    let listener = match web::listen(address).await {
        Ok((listener, _)) => listener,
        Err(error) => {
            eprintln!("racelab: cannot listen on {address}: {error}");
            return ExitCode::FAILURE;
        }
    };
    let stop = stop_signal();
    tracing::info!("racelab is ready: {}", reader_url(address));
    let (stopping_tx, mut stopping) = tokio::sync::watch::channel(false);
    // Peers' addresses reach the handlers (the per-reader caps count by them).
    let app = app.into_make_service_with_connect_info::<std::net::SocketAddr>();
    let served = axum::serve(listener, app).with_graceful_shutdown(async move {
        stop.await;
        tracing::info!(
            "stopping: no new runs; the runs in flight finish (8 s at most), then every sandbox is cleaned…"
        );
        let _ = stopping_tx.send(true);
    });
    // Open websockets do not hold the shutdown up for long: the runs behind them are cancelled
    // and cleaned below whatever the sockets do.
    let code = tokio::select! {
        served = served => match served {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("racelab: server error: {error}");
                ExitCode::FAILURE
            }
        },
        () = async {
            let _ = stopping.wait_for(|stopping| *stopping).await;
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        } => ExitCode::SUCCESS,
    };
    close_everything(&engine, &rooms, &sockets).await;
    code
}

/// What a stopping server closes before it exits: its runs (every sandbox destroyed), then its
/// rooms and its websockets, each given a moment to say its last word.
async fn close_everything(engine: &Engine, rooms: &crate::rooms::Rooms, sockets: &web::ws::Sockets) {
    // Runs in flight finish if they can within 8 s (inside `docker stop`'s 10 s), then the rest
    // are cancelled; either way every sandbox is destroyed before exit.
    let left = engine
        .close(std::time::Duration::from_secs(8), std::time::Duration::from_secs(20))
        .await;
    if left > 0 {
        tracing::warn!(
            left,
            "runs still cleaning up at exit; the next start's sweep removes their sandboxes"
        );
    }
    // Each room publishes its run's end and closes; each socket delivers its last frame (`done`)
    // and closes with 1001 before the process ends, so no page loses the end of its run to a
    // reset connection.
    rooms.close_all(std::time::Duration::from_secs(2)).await;
    let open = sockets.close_all(std::time::Duration::from_secs(2)).await;
    if open > 0 {
        tracing::warn!(open, "websockets still open at exit");
    }
}

/// Vacuums the catalog of every server whenever racelab has been idle long enough since the
/// runs that churned it (see [`crate::sandbox::vacuum::due`]): a look every 10 s, forever.
async fn vacuum_when_idle(quiet: Arc<Engine>) {
    let (mut vacuumed_at, mut last) = (0u64, quiet.activity());
    let mut idle_since = std::time::Instant::now();
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(10)).await;
        let now = quiet.activity();
        if now != last || now.0 > 0 {
            (last, idle_since) = (now, std::time::Instant::now());
            continue;
        }
        if crate::sandbox::vacuum::due(idle_since.elapsed(), now.1 - vacuumed_at) {
            for (server, services) in quiet.services_of() {
                match crate::sandbox::vacuum::vacuum(&services.pool).await {
                    Ok(()) => {
                        tracing::info!(
                            runs = now.1 - vacuumed_at,
                            %server,
                            "vacuumed the catalog the runs churned"
                        )
                    }
                    Err(error) => tracing::warn!(%error, %server, "could not vacuum the catalog"),
                }
            }
            vacuumed_at = now.1;
        }
    }
}

/// Warms each server's pool of readers' spec databases (for `runs_per_client` runs at once),
/// then sweeps what crashes left behind: readers' spec sandboxes, and every 300 s the runs'
/// sandboxes older than a run may live.
async fn sweep_now_and_then(sweeper: Arc<Engine>, runs_per_client: usize) {
    let max_age = sweeper.limits().sweep_age();
    // Each server's pool of readers' spec databases, warmed for one reader's runs at once.
    for url in sweeper.server_urls() {
        if let Err(error) = crate::specs::confine::warm(&url, runs_per_client).await {
            tracing::warn!(%error, "no ready databases for readers' specs yet");
        }
    }
    loop {
        for url in sweeper.server_urls() {
            let server = crate::health::host_port(&url, 5432);
            match crate::specs::confine::sweep(&url, max_age).await {
                Ok(0) => {}
                Ok(swept) => tracing::info!(swept, server, "removed readers' spec sandboxes left behind"),
                Err(error) => tracing::warn!(%error, server, "sweep of readers' spec sandboxes failed"),
            }
        }
        tokio::time::sleep(std::time::Duration::from_secs(300)).await;
        for (server, services) in sweeper.services_of() {
            if let Err(error) = crate::sandbox::sweep(&services, max_age).await {
                tracing::warn!(%error, %server, "periodic sweep of old sandboxes failed");
            }
        }
    }
}

/// Deletes lesson sessions' answers older than `days`, now and every hour: results name
/// participants (by handle), and are kept only as long as the trainer was told.
async fn forget_old_results(engine: Arc<Engine>, days: u32) {
    loop {
        match engine.store.forget_answers(days).await {
            Ok(0) => {}
            Ok(forgotten) => tracing::info!(forgotten, days, "deleted lesson answers past their time"),
            Err(error) => tracing::warn!(%error, "could not delete lesson answers past their time"),
        }
        tokio::time::sleep(std::time::Duration::from_secs(60 * 60)).await;
    }
}

/// The address `serve` asks racelab to listen on; a bind that is no IP address is refused (2).
fn listen_address(serve: &ServeConfig) -> Result<std::net::SocketAddr, ExitCode> {
    match serve.bind.parse::<std::net::IpAddr>() {
        Ok(ip) => Ok(std::net::SocketAddr::new(ip, serve.port)),
        Err(_) => {
            eprintln!(
                "racelab: RACELAB_BIND must be an IP address (like 0.0.0.0 or ::), not {:?}",
                serve.bind
            );
            Err(ExitCode::from(2))
        }
    }
}

/// Ctrl-C or SIGTERM (what `docker stop`, systemd and test harnesses send). The handlers are
/// installed when this is called, not when it is first awaited: a signal that arrives the moment
/// racelab says it is ready must stop it cleanly, not kill it.
fn stop_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).ok();
    let mut interrupt = signal(SignalKind::interrupt()).ok();
    async move {
        tokio::select! {
            () = received(terminate.as_mut()) => {}
            () = received(interrupt.as_mut()) => {}
        }
    }
}

/// Resolves when `signal` arrives; never, if its handler could not be installed.
async fn received(signal: Option<&mut tokio::signal::unix::Signal>) {
    match signal {
        Some(signal) => {
            signal.recv().await;
        }
        None => std::future::pending().await,
    }
}

/// The address a reader opens: `localhost` for a wildcard or loopback bind.
fn reader_url(address: std::net::SocketAddr) -> String {
    let ip = address.ip();
    if ip.is_unspecified() || ip.is_loopback() {
        format!("http://localhost:{}", address.port())
    } else {
        format!("http://{address}")
    }
}
