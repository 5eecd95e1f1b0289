//! A private `mariadbd`, for a machine whose MariaDB does not answer at `MARIADB_URL` (or with
//! `--embedded`): started from the machine's own binaries, never downloaded. Its data directory
//! is made by `mariadb-install-db` under the instance's directory, its `root` has no password
//! (as the default `MARIADB_URL`'s), and it listens on a free loopback port only; stopped and
//! removed on exit with the other private services.

use super::EmbeddedError;
use super::process::{ServiceProcess, free_port};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::Command;

/// How long a fresh `mariadbd` may take to answer (it answered in 0.2 s here).
const READY_WITHIN: Duration = Duration::from_secs(30);

/// Where a distribution puts the server and the tool that makes its data directory.
const SERVER_DIRS: [&str; 4] = ["/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/mysql/bin"];
const TOOL_DIRS: [&str; 3] = ["/usr/bin", "/usr/local/bin", "/usr/local/mysql/scripts"];

/// The installed `mariadbd` and `mariadb-install-db`, if both are on PATH or where a
/// distribution puts them.
pub fn find() -> Option<(PathBuf, PathBuf)> {
    Some((
        find_one("mariadbd", &SERVER_DIRS)?,
        find_one("mariadb-install-db", &TOOL_DIRS)?,
    ))
}

fn find_one(name: &str, dirs: &[&str]) -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain(dirs.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// `mysql://root@127.0.0.1:<port>`: a private server's URL.
pub fn url(port: u16) -> String {
    format!("mysql://root@127.0.0.1:{port}")
}

/// Makes a data directory under `instance` and starts `mariadbd` on a free port; returns it
/// with its port.
pub async fn start(
    (server, install_db): &(PathBuf, PathBuf),
    instance: &Path,
) -> Result<(ServiceProcess, u16), EmbeddedError> {
    let failed = |what: String| EmbeddedError::Mariadb(what);
    let data = instance.join("mariadb");
    let user = as_user();
    let made = Command::new(install_db)
        .arg("--no-defaults")
        .arg(format!("--datadir={}", data.display()))
        .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
        .arg(format!("--user={user}"))
        .current_dir(instance)
        .output()
        .await
        .map_err(|e| failed(format!("cannot run {}: {e}", install_db.display())))?;
    if !made.status.success() {
        let said = String::from_utf8_lossy(&made.stderr);
        return Err(failed(format!(
            "{} failed: {}",
            install_db.display(),
            said.lines().last().unwrap_or("no reason given")
        )));
    }
    let port = free_port().map_err(|e| failed(format!("no free port: {e}")))?;
    let mut command = Command::new(server);
    command
        .arg("--no-defaults")
        .arg(format!("--datadir={}", data.display()))
        .arg(format!("--port={port}"))
        .arg("--bind-address=127.0.0.1")
        .arg(format!("--socket={}", instance.join("mariadb.sock").display()))
        .arg(format!("--pid-file={}", instance.join("mariadbd.pid").display()))
        .arg(format!("--user={user}"))
        // A playground's: no binary log, a small buffer pool, the machine's default otherwise.
        .args(["--skip-log-bin", "--innodb-buffer-pool-size=64M"])
        .current_dir(instance);
    let process = ServiceProcess::spawn(
        command,
        libc::SIGTERM,
        &instance.join("mariadb.log"),
        instance.join("mariadb.racelab.pid"),
    )
    .map_err(|e| failed(format!("cannot start {}: {e}", server.display())))?;
    let url = url(port);
    let process = process
        .until_ready(READY_WITHIN, || async { crate::health::mariadb(&url).await.up })
        .await
        .map_err(|why| failed(format!("mariadbd on port {port}: {why}")))?;
    Ok((process, port))
}

/// The user the server runs as: this process's (`mariadbd` refuses to run as root unless told
/// `--user=root`).
fn as_user() -> String {
    // SAFETY: `geteuid` has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        "root".to_owned()
    } else {
        std::env::var("USER").unwrap_or_else(|_| "nobody".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_server_is_reached_as_root_on_loopback() {
        assert_eq!(url(39306), "mysql://root@127.0.0.1:39306");
    }
}
