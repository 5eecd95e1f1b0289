//! A private `redis-server`: the playground's when none runs, and a run's own when a scenario
//! must stall Redis itself (see `Run::private_redis`).

use super::EmbeddedError;
use super::process::{ServiceProcess, free_port};
use std::path::Path;
use std::time::Duration;
use tokio::process::Command;

/// How long a fresh `redis-server` may take to answer `PING`.
const READY_WITHIN: Duration = Duration::from_secs(5);

/// `redis-server` on `127.0.0.1:<port>`, keeping nothing on disk.
pub fn command(port: u16) -> Command {
    let mut command = Command::new("redis-server");
    command.args([
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
    ]);
    command
}

/// Waits until Redis at `url` answers `PING`; false if it never does in time.
pub async fn answers_soon(url: &str) -> bool {
    let deadline = tokio::time::Instant::now() + READY_WITHIN;
    while tokio::time::Instant::now() < deadline {
        if crate::health::redis(url).await.up {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// Whether a `redis-server` can be started here.
pub fn installed() -> bool {
    std::process::Command::new("redis-server")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Starts the playground's private Redis; returns it with its port.
pub async fn start(instance: &Path) -> Result<(ServiceProcess, u16), EmbeddedError> {
    let port = free_port().map_err(|e| EmbeddedError::Redis(format!("no free port: {e}")))?;
    Ok((start_on(instance, port).await?, port))
}

/// Starts a private Redis on `port` (again, after a restart: it comes back empty).
pub async fn start_on(instance: &Path, port: u16) -> Result<ServiceProcess, EmbeddedError> {
    let failed = |what: String| EmbeddedError::Redis(what);
    let mut command = command(port);
    command.current_dir(instance);
    let process = ServiceProcess::spawn(
        command,
        libc::SIGTERM,
        &instance.join("redis.log"),
        instance.join("redis.pid"),
    )
    .map_err(|e| failed(format!("cannot start redis-server: {e}")))?;
    let url = format!("redis://127.0.0.1:{port}");
    process
        .until_ready(READY_WITHIN, || async { crate::health::redis(&url).await.up })
        .await
        .map_err(|why| failed(format!("redis-server on port {port}: {why}")))
}
