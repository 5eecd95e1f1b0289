//! Where private services keep their data: one directory per racelab process, under a base
//! directory in the machine's temp dir (`$TMPDIR/racelab-embedded-<uid>/<pid>/`), removed when
//! racelab stops. If racelab was killed, its services died with it (see
//! [`super::process::die_with_parent`]) but the directory stayed: the next start removes it, and
//! stops anything of it that still runs.

use std::fmt;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A directory with no owner yet is being set up by a racelab that is starting right now; only
/// after this long does it count as left behind.
const UNOWNED_GRACE: Duration = Duration::from_secs(60);

/// This racelab's directory for its private services.
pub struct Instance {
    pub dir: PathBuf,
}

impl Instance {
    /// Removes what crashed racelabs left under `base`, then creates this process's directory.
    /// Returns it and how many left-behind directories were removed.
    pub fn create(base: &Path) -> io::Result<(Instance, usize)> {
        std::fs::create_dir_all(base)?;
        // PostgreSQL may run as another user (see `service_user`): it must reach its data dir.
        std::fs::set_permissions(base, std::fs::Permissions::from_mode(0o755))?;
        let removed = sweep(base)?;
        let dir = base.join(std::process::id().to_string());
        if dir.exists() {
            // A directory of a dead process whose pid we now have.
            std::fs::remove_dir_all(&dir)?;
        }
        std::fs::create_dir(&dir)?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
        std::fs::write(dir.join("owner"), ProcessMark::of(std::process::id()).to_string())?;
        Ok((Instance { dir }, removed))
    }

    /// Removes the directory and everything in it (the services must be stopped first).
    pub fn remove(self) {
        if let Err(error) = std::fs::remove_dir_all(&self.dir) {
            tracing::warn!(dir = %self.dir.display(), %error, "could not remove the private services' data");
        }
    }
}

/// The base directory: `RACELAB_EMBEDDED_DIR`, or one per user in the temp dir.
pub fn base_dir() -> PathBuf {
    match std::env::var_os("RACELAB_EMBEDDED_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        // SAFETY: geteuid cannot fail.
        _ => std::env::temp_dir().join(format!("racelab-embedded-{}", unsafe { libc::geteuid() })),
    }
}

/// Removes every directory under `base` whose racelab is gone, stopping its leftover processes.
fn sweep(base: &Path) -> io::Result<usize> {
    let mut removed = 0;
    for entry in std::fs::read_dir(base)? {
        let dir = entry?.path();
        if !dir.is_dir() {
            continue;
        }
        let owner = std::fs::read_to_string(dir.join("owner"))
            .ok()
            .and_then(|text| ProcessMark::parse(&text));
        let left_behind = match owner {
            Some(owner) => !owner.alive(),
            None => std::fs::metadata(&dir)
                .and_then(|m| m.modified())
                .map(|modified| modified.elapsed().unwrap_or_default() > UNOWNED_GRACE)
                .unwrap_or(true),
        };
        if !left_behind {
            continue;
        }
        stop_leftovers(&dir);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => removed += 1,
            Err(error) => tracing::warn!(dir = %dir.display(), %error, "could not remove a crashed racelab's data"),
        }
    }
    Ok(removed)
}

/// Kills the processes recorded in `dir/*.pid` that still run (normally none: they die with
/// their racelab).
fn stop_leftovers(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "pid") {
            continue;
        }
        let Some(mark) = std::fs::read_to_string(&path).ok().and_then(|t| ProcessMark::parse(&t)) else {
            continue;
        };
        if mark.alive() {
            tracing::info!(pid = mark.pid, file = %path.display(), "stopping a service a crashed racelab left running");
            // SAFETY: kill(2); the mark's start time makes sure the pid was not reused.
            unsafe {
                libc::kill(mark.pid as i32, libc::SIGKILL);
            }
            for _ in 0..50 {
                if !mark.alive() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// The user a private PostgreSQL runs as, `(uid, gid)`, or `None` for racelab's own. PostgreSQL
/// refuses to run as root, so as root it runs as the `postgres` user (or `nobody`).
pub fn service_user() -> Option<(u32, u32)> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    ["postgres", "nobody"].into_iter().find_map(|name| {
        let name = std::ffi::CString::new(name).ok()?;
        // SAFETY: getpwnam returns null or a pointer to a static record we read at once.
        let entry = unsafe { libc::getpwnam(name.as_ptr()) };
        if entry.is_null() {
            return None;
        }
        // SAFETY: non-null, just returned by getpwnam.
        let entry = unsafe { &*entry };
        Some((entry.pw_uid, entry.pw_gid))
    })
}

/// A process, named so that a reused pid is never mistaken for it: its pid and its start time
/// (clock ticks after boot, field 22 of `/proc/<pid>/stat`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProcessMark {
    pid: u32,
    started: u64,
}

impl ProcessMark {
    pub fn of(pid: u32) -> ProcessMark {
        ProcessMark {
            pid,
            started: start_time(pid).unwrap_or(0),
        }
    }

    pub fn parse(text: &str) -> Option<ProcessMark> {
        let mut parts = text.split_whitespace();
        Some(ProcessMark {
            pid: parts.next()?.parse().ok()?,
            started: parts.next()?.parse().ok()?,
        })
    }

    /// Whether this very process still runs.
    pub fn alive(&self) -> bool {
        start_time(self.pid) == Some(self.started)
    }
}

impl fmt::Display for ProcessMark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.pid, self.started)
    }
}

fn start_time(pid: u32) -> Option<u64> {
    parse_start_time(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Field 22 of a `/proc/<pid>/stat` line. The command name (field 2) may hold spaces and
/// parentheses, so fields are counted from the last `)`.
fn parse_start_time(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After the name: state is field 3, so start time (22) is the 20th.
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_is_counted_past_a_name_with_spaces_and_parentheses() {
        let stat = "4242 (we ird) (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_start_time(stat), Some(987654));
        assert_eq!(parse_start_time("garbage"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_reused_pid_is_not() {
        let me = ProcessMark::of(std::process::id());
        assert!(me.alive());
        assert_eq!(ProcessMark::parse(&me.to_string()), Some(me));
        let reused = ProcessMark {
            started: me.started + 1,
            ..me
        };
        assert!(!reused.alive());
    }

    #[test]
    fn a_crashed_racelabs_directory_is_removed_and_a_living_ones_kept() {
        let base = std::env::temp_dir().join(format!("racelab-instance-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("dead")).unwrap();
        let dead = ProcessMark {
            started: ProcessMark::of(std::process::id()).started + 1,
            pid: std::process::id(),
        };
        std::fs::write(base.join("dead/owner"), dead.to_string()).unwrap();
        std::fs::create_dir_all(base.join("living")).unwrap();
        std::fs::write(base.join("living/owner"), ProcessMark::of(1).to_string()).unwrap();
        std::fs::create_dir_all(base.join("starting")).unwrap();

        let (instance, removed) = Instance::create(&base).unwrap();
        assert_eq!(removed, 1);
        assert!(!base.join("dead").exists());
        assert!(base.join("living").exists() && base.join("starting").exists());
        assert!(instance.dir.join("owner").exists());
        instance.remove();
        std::fs::remove_dir_all(&base).unwrap();
    }
}
