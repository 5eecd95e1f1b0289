//! A private Kafka-compatible broker: the one TOOLCHAIN.md names (noida-db's Kafka service,
//! which `scripts/broker.sh install` puts in the repository's `.tools/`), when it is installed.
//! racelab never downloads it.

use super::EmbeddedError;
use super::process::{ServiceProcess, free_port};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::Command;

/// How long a fresh broker may take to accept connections.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// The broker's binary: `RACELAB_BROKER_BINARY`; `.tools/broker-venv/…/noida_db/noida-db` in the
/// working directory, the directory of racelab's binary, or one of their parents (a checkout);
/// or `noida-db` on PATH.
pub fn find() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("RACELAB_BROKER_BINARY").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let roots = [std::env::current_dir().ok(), std::env::current_exe().ok()];
    for root in roots.iter().flatten() {
        for dir in root.ancestors() {
            if let Some(found) = in_venv(&dir.join(".tools/broker-venv")) {
                return Some(found);
            }
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("noida-db"))
        .find(|candidate| candidate.is_file())
}

/// The package's own binary inside a virtualenv (not its console-script wrapper, so the pid we
/// hold is the broker's).
fn in_venv(venv: &Path) -> Option<PathBuf> {
    let lib = std::fs::read_dir(venv.join("lib")).ok()?;
    lib.flatten()
        .map(|python| python.path().join("site-packages/noida_db/noida-db"))
        .find(|binary| binary.is_file())
}

/// Starts the broker from `binary` with its data in `instance/broker`.
pub async fn start(binary: &Path, instance: &Path) -> Result<(ServiceProcess, u16), EmbeddedError> {
    let failed = |what: String| EmbeddedError::Broker(what);
    let port = free_port().map_err(|e| failed(format!("no free port: {e}")))?;
    // A fresh broker starts with no data: an instance that already has some is not ours.
    let data = instance.join("broker");
    std::fs::create_dir(&data).map_err(|e| failed(format!("cannot create {}: {e}", data.display())))?;
    Ok((start_on(binary, instance, port).await?, port))
}

/// Starts the broker on `port` with its data in `instance/broker`: again after a stop, it keeps
/// the topics it had.
pub async fn start_on(binary: &Path, instance: &Path, port: u16) -> Result<ServiceProcess, EmbeddedError> {
    let failed = |what: String| EmbeddedError::Broker(what);
    let data = instance.join("broker");
    std::fs::create_dir_all(&data).map_err(|e| failed(format!("cannot create {}: {e}", data.display())))?;
    let mut command = Command::new(binary);
    command
        .args([
            "start",
            "--only",
            "kafka",
            "--host",
            "127.0.0.1",
            "--kafka-port",
            &port.to_string(),
        ])
        .arg("--data-dir")
        .arg(&data)
        .current_dir(instance);
    let process = ServiceProcess::spawn(
        command,
        libc::SIGTERM,
        &instance.join("broker.log"),
        instance.join("broker.pid"),
    )
    .map_err(|e| failed(format!("cannot start {}: {e}", binary.display())))?;
    let address = format!("127.0.0.1:{port}");
    process
        .until_ready(READY_WITHIN, || async { crate::health::kafka(&address).await.up })
        .await
        .map_err(|why| failed(format!("the broker on port {port}: {why}")))
}
