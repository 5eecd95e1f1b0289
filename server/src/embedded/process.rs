//! A service process racelab started for itself: it dies with racelab, and stops politely.

use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::{Child, Command};

/// How long a private service may take to stop after its stop signal before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// A free TCP port on loopback, for a service that is about to bind it.
pub fn free_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// Makes the child receive `signal` when racelab dies, however it dies (Linux's
/// `PR_SET_PDEATHSIG`), so no private service outlives the process that started it.
///
/// The signal follows the thread that spawned the child, not the process: spawn from a thread
/// that lives as long as racelab (the main thread, or a runtime worker).
pub fn die_with_parent(command: &mut Command, signal: i32) {
    // SAFETY: prctl is async-signal-safe, and the closure touches nothing else between fork
    // and exec. std runs it after any uid/gid change, which would otherwise clear the setting.
    unsafe {
        command.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, signal);
            Ok(())
        });
    }
}

/// A running private service.
pub struct ServiceProcess {
    pub child: Child,
    /// The signal that asks it to stop cleanly (PostgreSQL: SIGINT, a fast shutdown).
    stop_signal: i32,
    /// Where its pid is written, so a later start can stop it if racelab crashed.
    pid_file: PathBuf,
    /// Where its stdout and stderr go: what a failed start is explained with.
    log: PathBuf,
}

impl ServiceProcess {
    /// Spawns `command` with stdout and stderr into `log`, its pid recorded in `pid_file`.
    pub fn spawn(mut command: Command, stop_signal: i32, log: &Path, pid_file: PathBuf) -> std::io::Result<Self> {
        let out = std::fs::File::create(log)?;
        command
            .stdout(out.try_clone()?)
            .stderr(out)
            .stdin(std::process::Stdio::null());
        die_with_parent(&mut command, stop_signal);
        let child = command.spawn()?;
        if let Some(pid) = child.id() {
            std::fs::write(&pid_file, super::instance::ProcessMark::of(pid).to_string())?;
        }
        Ok(ServiceProcess {
            child,
            stop_signal,
            pid_file,
            log: log.to_path_buf(),
        })
    }

    /// Polls `answers` until it says the service is up, and returns the process; if the process
    /// exits first, or `within` passes, stops it and returns why, with what it logged.
    pub async fn until_ready<F, Fut>(mut self, within: Duration, answers: F) -> Result<ServiceProcess, String>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if answers().await {
                return Ok(self);
            }
            let exited = self.exited();
            if exited || tokio::time::Instant::now() >= deadline {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                self.stop().await;
                let why = if exited {
                    "it exited".to_owned()
                } else {
                    format!("it did not answer within {} s", within.as_secs())
                };
                return Err(format!("{why}; its log:\n{}", log.trim()));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Whether it has exited already (a failed start).
    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends the stop signal, waits up to [`STOP_GRACE`], then kills it.
    pub async fn stop(mut self) {
        if let Some(pid) = self.child.id() {
            // SAFETY: a plain kill(2) of our own child, which has not been reaped yet.
            unsafe {
                libc::kill(pid as i32, self.stop_signal);
            }
        }
        if tokio::time::timeout(STOP_GRACE, self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
        let _ = std::fs::remove_file(&self.pid_file);
    }
}
