//! A private PostgreSQL: `initdb` into the instance directory, then `postgres` on a free
//! loopback port, tuned for a playground (no fsync: its data is thrown away on exit).

use super::EmbeddedError;
use super::instance::service_user;
use super::process::{ServiceProcess, free_port};
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::Command;

/// How long a fresh cluster may take to accept connections.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// A running private PostgreSQL.
pub struct PrivatePostgres {
    pub process: ServiceProcess,
    pub port: u16,
    pub data: PathBuf,
    /// `postgres (PostgreSQL) 15.19`
    pub version: String,
}

impl PrivatePostgres {
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/racelab", self.port)
    }
}

/// The directory holding `initdb` and `postgres`: on PATH, or the newest Debian-style
/// `/usr/lib/postgresql/<major>/bin`, or the project's PostgreSQL 18.
pub fn find_binaries() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default();
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let major = entry.file_name().to_str()?.parse().ok()?;
            Some((major, entry.path().join("bin")))
        })
        .collect();
    debian.sort();
    on_path
        .into_iter()
        .chain(debian.into_iter().rev().map(|(_, dir)| dir))
        // Where no PostgreSQL is installed, the project's own (`scripts/postgres.sh install`).
        .chain(installation(18))
        .find(|dir| is_executable(&dir.join("initdb")) && is_executable(&dir.join("postgres")))
}

/// An installation of PostgreSQL `major` (its `bin` directory): the system's
/// (`/usr/lib/postgresql/<major>/bin`), or the project's (`.tools/postgres-<major>/bin`, which
/// `scripts/postgres.sh install` makes), looked for from the current directory and from this
/// program's (a build under `target/` sits two or three levels below the project).
pub fn installation(major: u32) -> Option<PathBuf> {
    let tools = PathBuf::from(".tools").join(format!("postgres-{major}")).join("bin");
    let beside_program = std::env::current_exe()
        .ok()
        .into_iter()
        .flat_map(|exe| {
            exe.ancestors()
                .skip(1)
                .take(4)
                .map(Path::to_path_buf)
                .collect::<Vec<_>>()
        })
        .map(|dir| dir.join(&tools));
    let here = std::env::current_dir().ok().map(|dir| dir.join(&tools));
    std::iter::once(PathBuf::from(format!("/usr/lib/postgresql/{major}/bin")))
        .chain(here)
        .chain(beside_program)
        .find(|dir| is_executable(&dir.join("initdb")) && is_executable(&dir.join("postgres")))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Creates a cluster in `instance/postgres` and starts it; returns once it accepts connections.
pub async fn start(bin: &Path, instance: &Path) -> Result<PrivatePostgres, EmbeddedError> {
    let failed = |what: String| EmbeddedError::Postgres(what);
    let data = instance.join("postgres");
    std::fs::create_dir(&data).map_err(|e| failed(format!("cannot create {}: {e}", data.display())))?;
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| failed(format!("cannot protect {}: {e}", data.display())))?;
    let user = service_user();
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(&data, Some(uid), Some(gid))
            .map_err(|e| failed(format!("cannot hand {} to the postgres user: {e}", data.display())))?;
    }
    let as_service_user = |command: &mut Command| {
        if let Some((uid, gid)) = user {
            command.uid(uid).gid(gid);
        }
        // Never the caller's directory, which the postgres user may not enter.
        command.current_dir(instance);
    };

    let mut initdb = Command::new(bin.join("initdb"));
    initdb
        .arg("--pgdata")
        .arg(&data)
        .args([
            "--username=postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--no-locale",
            "--no-sync",
        ])
        .kill_on_drop(true);
    as_service_user(&mut initdb);
    let output = initdb
        .output()
        .await
        .map_err(|e| failed(format!("cannot run {}: {e}", bin.join("initdb").display())))?;
    if !output.status.success() {
        return Err(failed(format!(
            "initdb failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let version = Command::new(bin.join("postgres"))
        .arg("--version")
        .output()
        .await
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();

    let port = free_port().map_err(|e| failed(format!("no free port: {e}")))?;
    let process = launch(bin, instance, &data, port).await?;
    Ok(PrivatePostgres {
        process,
        port,
        data,
        version,
    })
}

/// A private PostgreSQL stopped with its data kept, to be started again as it was.
pub struct StoppedPostgres {
    pub port: u16,
    pub data: PathBuf,
    pub version: String,
}

impl PrivatePostgres {
    /// Stops the server as an operator's restart begins (a fast shutdown: every session is
    /// ended), keeping its data.
    pub async fn stop_keeping_data(self) -> StoppedPostgres {
        self.process.stop().await;
        StoppedPostgres {
            port: self.port,
            data: self.data,
            version: self.version,
        }
    }
}

impl StoppedPostgres {
    /// Starts it again on the same data and port; returns once it accepts connections.
    pub async fn start(self, bin: &Path) -> Result<PrivatePostgres, EmbeddedError> {
        let instance = self.data.parent().unwrap_or(&self.data).to_path_buf();
        let process = launch(bin, &instance, &self.data, self.port).await?;
        Ok(PrivatePostgres {
            process,
            port: self.port,
            data: self.data,
            version: self.version,
        })
    }
}

/// Starts `postgres` on the cluster in `data`, listening on `port`; returns once it accepts
/// connections.
async fn launch(bin: &Path, instance: &Path, data: &Path, port: u16) -> Result<ServiceProcess, EmbeddedError> {
    let failed = |what: String| EmbeddedError::Postgres(what);
    let user = service_user();
    let mut postgres = Command::new(bin.join("postgres"));
    postgres.arg("-D").arg(data).arg("-p").arg(port.to_string());
    for setting in [
        "listen_addresses=127.0.0.1".to_owned(),
        format!("unix_socket_directories={}", data.display()),
        // A playground's data is thrown away on exit: durability would only slow it down.
        "fsync=off".into(),
        "synchronous_commit=off".into(),
        "full_page_writes=off".into(),
        // The labs open many sessions at once (fifty callers, a crowd of relays).
        "max_connections=200".into(),
    ] {
        postgres.arg("-c").arg(setting);
    }
    if let Some((uid, gid)) = user {
        postgres.uid(uid).gid(gid);
    }
    postgres.current_dir(instance);
    let process = ServiceProcess::spawn(
        postgres,
        // A fast shutdown: sessions are ended, the cluster stops at once.
        libc::SIGINT,
        &instance.join("postgres.log"),
        instance.join("postgres.pid"),
    )
    .map_err(|e| failed(format!("cannot start postgres: {e}")))?;

    let options = PgConnectOptions::new()
        .host("127.0.0.1")
        .port(port)
        .username("postgres")
        .database("postgres");
    let accepts = || async {
        match options.connect().await {
            Ok(conn) => {
                let _ = conn.close().await;
                true
            }
            Err(_) => false,
        }
    };
    process
        .until_ready(READY_WITHIN, accepts)
        .await
        .map_err(|why| failed(format!("postgres on port {port}: {why}")))
}
