//! The watch over a spec run's memory and disk, while it plays.
//!
//! PostgreSQL lets any role raise the settings that size its memory (`work_mem`,
//! `hash_mem_multiplier`, `maintenance_work_mem`, `temp_buffers`: a plain `SET`, or a function's
//! `SET` clause, or dynamic SQL) and has no quota on a database's size; `temp_file_limit`, which a
//! run cannot raise, covers sorts' and hashes' spill files but not temporary tables. So what a
//! run holds is measured instead, every [`EVERY`]:
//! - **memory**: each of the run's backends (parallel workers too) by its private anonymous
//!   memory (`RssAnon` in `/proc/<pid>/status`: what `work_mem` and `temp_buffers` allocate,
//!   not the shared buffers every backend maps). Past [`MEMORY_PER_BACKEND`] its statement is
//!   cancelled; a backend still past it a second later is terminated. Only where PostgreSQL runs
//!   on racelab's own machine (the backend's process is there, and says it serves the run's
//!   database); elsewhere memory is not watched, and the docs say so.
//! - **disk**: the run's database (`pg_database_size`, its tables and its temporary tables
//!   alike) past [`DISK_ABOVE_START`] more than it held when the run began: every backend of
//!   the run is terminated, and the run ends.
//!
//! - **CPU**: PostgreSQL has no CPU quota, so each of the run's backends on racelab's machine
//!   that keeps a core busy between two looks ([`DEMOTE_AT`]) is given a lower priority
//!   ([`lower_priority`]): where the cores are contended, everything else (lab runs' backends,
//!   racelab itself) gets about ten times its share.
//!
//! What it stops, it says on the run's transcript, in a line of its own (`racelab: …`).

use crate::engine::Lane;
use shared::EventKind;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_postgres::Client;

/// How often the run is measured. A hash join can allocate about 1 GB a second on this machine,
/// so a backend is stopped within about 50 MB of its bound.
pub const EVERY: Duration = Duration::from_millis(50);
/// Private memory one backend of a run may hold.
pub const MEMORY_PER_BACKEND: u64 = 256 << 20;
/// How much a run's database may grow while it plays (the same as `temp_file_limit`).
pub const DISK_ABOVE_START: i64 = 64 << 20;
/// A backend of a spec run that used this much CPU between two looks ([`EVERY`] apart: most of a
/// core) is given a lower priority. A reader's statements take milliseconds each: a backend
/// demoted at once answered every statement later on a busy machine (measured: 20 permutations
/// of a write skew 11 ms slower, 172 against 161 ms); one demoted only after 200 ms of CPU in
/// all had the time to slow a crowd beside it (p95 1.84× alone). One that keeps a core busy is
/// demoted within two looks.
pub const DEMOTE_AT: Duration = Duration::from_millis(30);

/// The CPU time process `pid` has used (user and system, `/proc/<pid>/stat`).
fn cpu_time(pid: i32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // utime and stime are the 14th and 15th fields, the 12th and 13th after the parenthesis.
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf only reads its integer argument.
    let per_second = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
        .ok()
        .filter(|t| *t > 0)?;
    Some(Duration::from_millis(ticks * 1000 / per_second))
}

/// The niceness a spec run's backends are given.
pub const NICENESS: i32 = 10;
/// The CPU weight of the control group readers' backends are moved to, where racelab may make
/// one: a tenth of everyone else's (cgroup v2's `cpu.weight` default is 100; v1's `cpu.shares`
/// 1024, so 102 there).
pub const READERS_CPU_WEIGHT: u32 = 10;
/// The control group's name, under the CPU controller's root.
const READERS_GROUP: &str = "racelab-readers";

/// Lowers the priority of process `pid`, a PostgreSQL backend of a spec run on this machine: its
/// niceness to [`NICENESS`], and, where racelab may make a control group, moves it into
/// [`READERS_GROUP`]. Niceness alone orders a process only among its own *autogroup* (Linux
/// gives each session one, and them equal shares): PostgreSQL's backends share one, racelab has
/// another, so a spec burning a core took half of racelab's time in a crowd (measured, benign
/// p95 2.5× alone). A control group of its own, weighted low, is outside every autogroup. Where
/// racelab may do neither (not root, not PostgreSQL's user), the backend keeps its priority.
fn lower_priority(pid: i32) {
    let Ok(id) = libc::id_t::try_from(pid) else { return };
    // SAFETY: setpriority only reads its three integer arguments; an unknown pid or a refusal
    // is an error return, which is ignored (the backend keeps its priority).
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, id, NICENESS);
    }
    if let Some(procs) = readers_group() {
        let _ = std::fs::write(procs, pid.to_string());
    }
}

/// The `cgroup.procs` file of [`READERS_GROUP`], made once (cgroup v2, else v1's `cpu`
/// hierarchy); `None` where this machine does not let racelab make it.
fn readers_group() -> Option<&'static std::path::Path> {
    static GROUP: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    GROUP
        .get_or_init(|| {
            let v2 = std::path::Path::new("/sys/fs/cgroup");
            let controllers = std::fs::read_to_string(v2.join("cgroup.controllers")).unwrap_or_default();
            let (dir, weight_file, weight) = if controllers.split_whitespace().any(|c| c == "cpu") {
                let _ = std::fs::write(v2.join("cgroup.subtree_control"), "+cpu");
                (v2.join(READERS_GROUP), "cpu.weight", READERS_CPU_WEIGHT)
            } else {
                (
                    std::path::Path::new("/sys/fs/cgroup/cpu").join(READERS_GROUP),
                    "cpu.shares",
                    READERS_CPU_WEIGHT * 1024 / 100,
                )
            };
            if !dir.is_dir() {
                std::fs::create_dir(&dir).ok()?;
            }
            std::fs::write(dir.join(weight_file), weight.to_string()).ok()?;
            Some(dir.join("cgroup.procs"))
        })
        .as_deref()
}

/// Disk is measured every this many looks: every one (a walk of the run's database directory,
/// about a millisecond; a temporary table of 240 MB fills in 0.2 s here).
const DISK_EVERY: u32 = 1;

/// A backend's private anonymous memory, in bytes, if its process is on this machine and serves
/// `database` (a pid on another machine names some other process here, or none).
pub fn private_memory(pid: i32, database: &str) -> Option<u64> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let title = String::from_utf8_lossy(&cmdline);
    if !title.starts_with("postgres") || !title.contains(database) {
        return None;
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    rss_anon(&status)
}

/// `RssAnon` from a `/proc/<pid>/status` text, in bytes.
fn rss_anon(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("RssAnon:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `bytes` in words: `1,074 MB`.
pub fn megabytes(bytes: u64) -> String {
    let mb = bytes / (1 << 20);
    let text = mb.to_string();
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i > 0 && (text.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    format!("{out} MB")
}

/// Watches database `database`'s backends from `admin` (racelab's own connection) until
/// aborted, saying on `lane` what it stopped; a run it ends, it says why in `ended`.
pub async fn watch(admin: Arc<Client>, database: String, lane: Lane, ended: Arc<std::sync::Mutex<Option<String>>>) {
    let Some(start) = database_size(&admin, &database).await else {
        return;
    };
    let mut backends = Backends::default();
    let mut look = 0u32;
    loop {
        tokio::time::sleep(EVERY).await;
        look += 1;
        if look.is_multiple_of(DISK_EVERY)
            && let Some(now) = database_size(&admin, &database).await
            && now - start > DISK_ABOVE_START
        {
            let why = format!(
                "the run's database grew by {}, more than {}: its sessions are ended",
                megabytes(u64::try_from(now - start).unwrap_or(0)),
                megabytes(u64::try_from(DISK_ABOVE_START).unwrap_or(0))
            );
            say(&lane, format!("racelab: {why}"));
            *ended.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(why);
            let _ = admin
                .query(
                    "SELECT pg_catalog.pg_terminate_backend(pid) FROM pg_catalog.pg_stat_activity \
                     WHERE datname OPERATOR(pg_catalog.=) $1",
                    &[&database],
                )
                .await;
            return;
        }
        let Ok(rows) = admin
            .query(
                "SELECT pid, coalesce(leader_pid, pid), coalesce(application_name, '') \
                 FROM pg_catalog.pg_stat_activity WHERE datname OPERATOR(pg_catalog.=) $1",
                &[&database],
            )
            .await
        else {
            continue;
        };
        backends.look_at(rows, (&admin, &database), &lane).await;
    }
}

/// `database`'s size on disk, in bytes; none if `admin` could not ask.
async fn database_size(admin: &Client, database: &str) -> Option<i64> {
    admin
        .query_one("SELECT pg_catalog.pg_database_size($1)", &[&database])
        .await
        .ok()
        .map(|row| row.get::<_, i64>(0))
}

/// What the watch remembers of a run's backends from one look to the next.
#[derive(Default)]
struct Backends {
    /// Backends cancelled for their memory, and when: one still past the bound a second later
    /// is ended (a cancelled statement frees its memory at once).
    over: HashMap<i32, Instant>,
    niced: std::collections::HashSet<i32>,
    /// Each backend's CPU time at the last look.
    cpu_seen: HashMap<i32, Duration>,
}

impl Backends {
    /// One look at the run's backends (`rows`: pid, leader pid, application name): each that
    /// kept a core busy is demoted, and each past its memory bound is cancelled, then ended.
    async fn look_at(&mut self, rows: Vec<tokio_postgres::Row>, (admin, database): (&Client, &str), lane: &Lane) {
        let mut still_over = HashMap::new();
        for row in rows {
            let (pid, leader, name): (i32, i32, String) = (row.get(0), row.get(1), row.get(2));
            let memory = private_memory(pid, database);
            if let (Some(_), Some(used)) = (memory, cpu_time(pid)) {
                let before = self.cpu_seen.insert(pid, used).unwrap_or(used);
                if used.saturating_sub(before) >= DEMOTE_AT && self.niced.insert(pid) {
                    lower_priority(pid);
                }
            }
            let Some(held) = memory.filter(|m| *m > MEMORY_PER_BACKEND) else {
                continue;
            };
            let who = name.rsplit('/').next().unwrap_or("a session").to_owned();
            let since = self.over.get(&pid).copied();
            let (verb, function) = match since {
                None => ("its statement is cancelled", "pg_cancel_backend"),
                Some(at) if at.elapsed() >= Duration::from_secs(1) => ("it is ended", "pg_terminate_backend"),
                Some(at) => {
                    still_over.insert(pid, at);
                    continue;
                }
            };
            say(
                lane,
                format!(
                    "racelab: {who} held {} of memory, more than {}: {verb}",
                    megabytes(held),
                    megabytes(MEMORY_PER_BACKEND)
                ),
            );
            let _ = admin
                .query(&format!("SELECT pg_catalog.{function}($1)"), &[&leader])
                .await;
            still_over.insert(pid, since.unwrap_or_else(Instant::now));
        }
        self.over = still_over;
    }
}

/// A line of racelab's own on the run's transcript.
fn say(lane: &Lane, line: String) {
    lane.emit(EventKind::Say { actor: None, line });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_memory_is_read_from_rss_anon() {
        let status = "Name:\tpostgres\nVmRSS:\t  300000 kB\nRssAnon:\t    2048 kB\nRssShmem:\t  290000 kB\n";
        assert_eq!(rss_anon(status), Some(2048 * 1024));
        assert_eq!(rss_anon("Name:\tx\n"), None);
    }

    #[test]
    fn megabytes_are_grouped_by_thousands() {
        assert_eq!(megabytes(1_126_170_624), "1,074 MB");
        assert_eq!(megabytes(256 << 20), "256 MB");
        assert_eq!(megabytes(0), "0 MB");
    }

    #[test]
    fn a_process_that_serves_no_such_database_is_not_measured() {
        let me = i32::try_from(std::process::id()).unwrap_or(0);
        assert_eq!(private_memory(me, "racelab_spec_0000"), None);
    }
}

#[cfg(test)]
mod cpu_tests {
    use super::*;

    /// Spinning shows up in the process's CPU time. (Not "300 ms of spinning is 200 ms of CPU":
    /// on a busy 2-core machine the thread may get less than that of the wall clock; it spins
    /// until the stat says so, for at most 20 s.)
    #[test]
    fn a_process_cpu_time_is_read_from_its_stat() {
        let me = i32::try_from(std::process::id()).unwrap_or(0);
        let spent = cpu_time(me).expect("this process's CPU time");
        let start = std::time::Instant::now();
        let mut after = spent;
        let mut x = 0u64;
        while after < spent + Duration::from_millis(200) && start.elapsed() < Duration::from_secs(20) {
            for _ in 0..1_000_000 {
                x = x.wrapping_add(std::hint::black_box(1));
            }
            after = cpu_time(me).expect("again");
        }
        assert!(x > 0);
        assert!(after >= spent + Duration::from_millis(200), "{spent:?} then {after:?}");
    }
}
