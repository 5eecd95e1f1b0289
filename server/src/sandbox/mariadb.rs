//! A run's sandbox on MariaDB: a database of its own and a user of the same name granted that
//! database alone, bounded from outside, removed whatever happens.
//!
//! The SQL that plays here is anyone's on the internet, so nothing in it is trusted to keep a
//! bound it could lift itself. What MariaDB enforces whatever the session says:
//! - **privileges**: the user holds the table privileges on its own database only (no `FILE`,
//!   so no `LOAD_FILE`, `LOAD DATA INFILE` or `SELECT … INTO OUTFILE`; no `PROCESS`, so the
//!   process list and `information_schema` show its own threads and database only; no `SUPER`
//!   or `CONNECTION ADMIN`, so no `SET GLOBAL` and no `KILL` of another run's thread; no `CREATE
//!   USER`, `GRANT OPTION`, `EVENT` or routines, so nothing it makes runs after it or as anyone
//!   else);
//! - **connections**: `MAX_USER_CONNECTIONS`, a resource limit of the account.
//!
//! What a session could lift, racelab holds from outside, with a watchdog on its own connection
//! ([`WATCH_EVERY`]): MariaDB's per-user `MAX_STATEMENT_TIME` is only the session's default (a
//! session may `SET max_statement_time = 0`), and `innodb_lock_wait_timeout` is the session's
//! to raise, so the watchdog kills any statement of the run's past [`Bounds::statement_time`]
//! (a lock wait included); and a run's tables could fill the disk (InnoDB) or the memory
//! (`ENGINE=MEMORY`, up to a `max_heap_table_size` the session sets), so it ends every session
//! of a run whose tables pass [`Bounds::bytes`] (InnoDB's files as allocated, which
//! `INNODB_SYS_TABLESPACES` reports as they are, and the memory tables' data).
//!
//! Names: [`PREFIX`], then when it was made (Unix seconds, 8 hex digits) and 8 random ones, never
//! a run's id (a user sees its own name); [`sweep`] removes what a crash left behind by them,
//! once it is older than any run lasts (another racelab sharing the server keeps its own).

use rand::Rng;
use sqlx::mysql::{MySqlConnectOptions, MySqlConnection, MySqlPool, MySqlPoolOptions};
use sqlx::{ConnectOptions, Executor, Row};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Every run's database and user is named so, then 16 hex digits ([`sandbox_name`]).
pub const PREFIX: &str = "racelab_maria_";
/// How often the watchdog looks at a run's statements and tables.
pub const WATCH_EVERY: Duration = Duration::from_millis(100);
/// How long any of racelab's own statements on a run's sandbox waits for a lock.
const ADMIN_LOCK_WAIT: Duration = Duration::from_secs(2);
/// How many times a run's database is dropped before it is left for the sweep.
const DROP_TRIES: usize = 5;
/// The table privileges a run's user holds on its own database, and nothing else.
const PRIVILEGES: &str = "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER, \
     CREATE TEMPORARY TABLES, LOCK TABLES, CREATE VIEW, SHOW VIEW, TRIGGER, REFERENCES";

/// What a run may spend.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// The longest one statement runs, a lock wait included.
    pub statement_time: Duration,
    /// Sessions the run's user may hold at once.
    pub connections: u32,
    /// What the run's tables may hold in all, on disk and in memory.
    pub bytes: u64,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds {
            statement_time: Duration::from_secs(5),
            connections: 8,
            bytes: 64 * 1024 * 1024,
        }
    }
}

/// Why a sandbox could not be made.
#[derive(Debug, thiserror::Error)]
pub enum MariaError {
    #[error("MariaDB at {url} cannot be reached: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("could not make the run's sandbox on MariaDB: {0}")]
    Make(#[from] sqlx::Error),
}

/// A bound the watchdog held, in the words a reader is told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Overrun {
    /// A statement ran past the bound and was cancelled.
    Statement { seconds: u64 },
    /// The run's tables passed the bound: every session of the run was ended.
    Bytes { held: u64, bound: u64 },
}

impl std::fmt::Display for Overrun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Overrun::Statement { seconds } => write!(f, "a statement ran past its {seconds} s and was cancelled"),
            Overrun::Bytes { held, bound } => write!(
                f,
                "the run's tables held {held} bytes, past its {bound}: every session was ended"
            ),
        }
    }
}

/// A run's database and user, watched until [`MariaSandbox::close`].
pub struct MariaSandbox {
    name: String,
    password: String,
    server: MySqlConnectOptions,
    admin: MySqlPool,
    overruns: Arc<Mutex<Vec<Overrun>>>,
    watchdog: tokio::task::JoinHandle<()>,
}

impl MariaSandbox {
    /// Makes a run's database and user on the server at `url` (an account that may create
    /// databases and users, and grant), and starts its watchdog. Whatever fails half-way is
    /// removed before the error is returned.
    pub async fn open(url: &str, bounds: Bounds) -> Result<MariaSandbox, MariaError> {
        // Two: the watchdog's, and one for making and removing.
        let (server, admin) = admin(url, 2).await?;
        let name = sandbox_name(unix_seconds(), rand::rng().random());
        let password = format!("{:032x}", rand::rng().random::<u128>());
        if let Err(error) = make(&admin, &name, &password, bounds).await {
            remove(&admin, &name).await;
            return Err(error.into());
        }
        let overruns = Arc::new(Mutex::new(Vec::new()));
        let watchdog = tokio::spawn(watch(admin.clone(), name.clone(), bounds, overruns.clone()));
        Ok(MariaSandbox {
            name,
            password,
            server,
            admin,
            overruns,
            watchdog,
        })
    }

    /// The run's database (and its user's) name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A new session of the run: its own user, in its own database.
    pub async fn connect(&self) -> Result<MySqlConnection, sqlx::Error> {
        self.session_options().connect().await
    }

    /// How a session of the run connects.
    pub fn session_options(&self) -> MySqlConnectOptions {
        self.server
            .clone()
            .username(&self.name)
            .password(&self.password)
            .database(&self.name)
    }

    /// racelab's own connections to the run's server (they may read every thread's locks:
    /// who waits for whom), never a reader's.
    pub fn racelab(&self) -> &MySqlPool {
        &self.admin
    }

    /// Ends every session of the run's user but the one on thread `keep` (the run's own, which
    /// resets the sandbox for the next run), and waits until they are gone: a killed session's
    /// rollback would otherwise still hold its rows.
    pub async fn end_sessions_but(&self, keep: u64) -> Result<(), sqlx::Error> {
        let others = "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ? AND ID <> ?";
        for _ in 0..100 {
            let ids: Vec<i64> = sqlx::query_scalar(others)
                .bind(&self.name)
                .bind(keep)
                .fetch_all(&self.admin)
                .await?;
            if ids.is_empty() {
                return Ok(());
            }
            for id in ids {
                // It may have ended since: that is what we wanted.
                let _ = self.admin.execute(format!("KILL CONNECTION {id}").as_str()).await;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        Err(sqlx::Error::Protocol("the run's sessions did not end".into()))
    }

    /// The bounds the watchdog held so far.
    pub fn overruns(&self) -> Vec<Overrun> {
        self.overruns.lock().map(|o| o.clone()).unwrap_or_default()
    }

    /// Ends every session of the run, then removes its user and database.
    pub async fn close(self) {
        self.watchdog.abort();
        remove(&self.admin, &self.name).await;
        self.admin.close().await;
    }
}

/// A sandbox dropped without [`MariaSandbox::close`] (its task cancelled or panicking) is left
/// for the [`sweep`], but its watchdog stops with it: left running, it would ask the server
/// about a run nobody holds every [`WATCH_EVERY`], for as long as racelab runs.
impl Drop for MariaSandbox {
    fn drop(&mut self) {
        self.watchdog.abort();
    }
}

/// racelab's own connections to the server at `url` (at most `connections`), each waiting at
/// most [`ADMIN_LOCK_WAIT`] for any lock: a run's session holding one cannot hold up its cleanup.
async fn admin(url: &str, connections: u32) -> Result<(MySqlConnectOptions, MySqlPool), MariaError> {
    let unreachable = |e: sqlx::Error| MariaError::Unreachable {
        url: url.to_owned(),
        reason: e.to_string(),
    };
    let server = MySqlConnectOptions::from_str(url).map_err(unreachable)?;
    let pool = MySqlPoolOptions::new()
        .max_connections(connections)
        .acquire_timeout(Duration::from_secs(5))
        .after_connect(|conn, _| {
            Box::pin(async move {
                let wait = ADMIN_LOCK_WAIT.as_secs();
                let bounded = format!("SET SESSION lock_wait_timeout = {wait}, innodb_lock_wait_timeout = {wait}");
                conn.execute(bounded.as_str()).await.map(|_| ())
            })
        })
        .connect_with(server.clone())
        .await
        .map_err(unreachable)?;
    Ok((server, pool))
}

/// The database, then the user with its limits, then its one grant.
async fn make(admin: &MySqlPool, name: &str, password: &str, bounds: Bounds) -> Result<(), sqlx::Error> {
    admin.execute(format!("CREATE DATABASE `{name}`").as_str()).await?;
    let seconds = bounds.statement_time.as_secs_f64();
    let connections = bounds.connections;
    admin
        .execute(
            format!(
                "CREATE USER '{name}'@'%' IDENTIFIED BY '{password}' \
                 WITH MAX_USER_CONNECTIONS {connections} MAX_STATEMENT_TIME {seconds}"
            )
            .as_str(),
        )
        .await?;
    admin
        .execute(format!("GRANT {PRIVILEGES} ON `{name}`.* TO '{name}'@'%'").as_str())
        .await?;
    Ok(())
}

/// Ends the user's sessions, drops the user (no new session can start) and the database. Each
/// step whatever the one before did: a half-made sandbox is removed as well as a whole one.
async fn remove(admin: &MySqlPool, name: &str) {
    end_sessions(admin, name, "CONNECTION").await;
    if let Err(error) = admin
        .execute(format!("DROP USER IF EXISTS '{name}'@'%'").as_str())
        .await
    {
        tracing::warn!(sandbox = name, %error, "MariaDB: the run's user is left for the sweep");
    }
    // A session ended a moment ago may still hold a lock the drop waits for (rolling back what
    // it wrote): each try waits ADMIN_LOCK_WAIT, and ends whatever session is there again.
    for tries_left in (0..DROP_TRIES).rev() {
        end_sessions(admin, name, "CONNECTION").await;
        match admin
            .execute(format!("DROP DATABASE IF EXISTS `{name}`").as_str())
            .await
        {
            Ok(_) => return,
            Err(error) if tries_left == 0 => {
                tracing::warn!(sandbox = name, %error, "MariaDB: the run's database is left for the sweep");
            }
            Err(_) => {}
        }
    }
}

/// `KILL <what>` (`QUERY` or `CONNECTION`) for every thread of the user `name`, but racelab's.
async fn end_sessions(admin: &MySqlPool, name: &str, what: &str) -> usize {
    let ids: Vec<i64> = sqlx::query_scalar("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ?")
        .bind(name)
        .fetch_all(admin)
        .await
        .unwrap_or_default();
    for id in &ids {
        // The thread may have ended since: that is what we wanted.
        let _ = admin.execute(format!("KILL {what} {id}").as_str()).await;
    }
    ids.len()
}

/// The watchdog: at every turn, cancels the run's statements past their time, and ends the run's
/// sessions when its tables pass their bytes.
async fn watch(admin: MySqlPool, name: String, bounds: Bounds, overruns: Arc<Mutex<Vec<Overrun>>>) {
    let mut every = tokio::time::interval(WATCH_EVERY);
    let limit_ms = bounds.statement_time.as_millis() as f64;
    loop {
        every.tick().await;
        let long: Vec<i64> = sqlx::query_scalar(
            "SELECT ID FROM information_schema.PROCESSLIST \
             WHERE USER = ? AND COMMAND NOT IN ('Sleep', 'Killed') AND TIME_MS > ?",
        )
        .bind(&name)
        .bind(limit_ms)
        .fetch_all(&admin)
        .await
        .unwrap_or_default();
        // Each overrun is noted before its statement is cancelled: whoever reads the error the
        // run's session gets finds the reason already there.
        for id in long {
            note(
                &overruns,
                Overrun::Statement {
                    seconds: bounds.statement_time.as_secs(),
                },
            );
            let _ = admin.execute(format!("KILL QUERY {id}").as_str()).await;
        }
        let held = held_bytes(&admin, &name).await;
        if held > bounds.bytes {
            note(
                &overruns,
                Overrun::Bytes {
                    held,
                    bound: bounds.bytes,
                },
            );
            end_sessions(&admin, &name, "CONNECTION").await;
        }
    }
}

/// Records an overrun, the first of each kind (the watchdog sees a table past its bytes at
/// every turn until its sessions are gone).
fn note(overruns: &Mutex<Vec<Overrun>>, overrun: Overrun) {
    let kind = std::mem::discriminant(&overrun);
    if let Ok(mut seen) = overruns.lock()
        && !seen.iter().any(|o| std::mem::discriminant(o) == kind)
    {
        seen.push(overrun);
    }
}

/// What the run's tables hold: InnoDB's files as allocated, and the memory tables' data.
async fn held_bytes(admin: &MySqlPool, name: &str) -> u64 {
    let files: Option<i64> = sqlx::query_scalar(
        "SELECT CAST(COALESCE(SUM(ALLOCATED_SIZE), 0) AS SIGNED) FROM information_schema.INNODB_SYS_TABLESPACES \
         WHERE NAME LIKE CONCAT(?, '/%')",
    )
    .bind(name)
    .fetch_one(admin)
    .await
    .ok();
    let memory: Option<i64> = sqlx::query_scalar(
        "SELECT CAST(COALESCE(SUM(DATA_LENGTH + INDEX_LENGTH), 0) AS SIGNED) FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = ? AND ENGINE = 'MEMORY'",
    )
    .bind(name)
    .fetch_one(admin)
    .await
    .ok();
    [files, memory]
        .into_iter()
        .flatten()
        .map(|b| u64::try_from(b).unwrap_or(0))
        .sum()
}

/// Removes every run's database and user on the server at `url` made more than `older_than`
/// ago: what a crash left behind (no run lasts that long). Returns how many it removed.
pub async fn sweep(url: &str, older_than: Duration) -> Result<usize, MariaError> {
    let (_, admin) = admin(url, 1).await?;
    let pattern = format!("{}%", PREFIX.replace('_', "\\_"));
    let mut names = Vec::new();
    for listing in [
        "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE ?",
        // A binary column: read as text, or every user would be skipped as undecodable.
        "SELECT CONVERT(User USING utf8mb4) FROM mysql.user WHERE User LIKE ?",
    ] {
        let rows = sqlx::query(listing).bind(&pattern).fetch_all(&admin).await?;
        names.extend(rows.iter().filter_map(|row| row.try_get::<String, _>(0).ok()));
    }
    names.sort();
    names.dedup();
    let before = unix_seconds().saturating_sub(older_than.as_secs());
    names.retain(|n| made_at(n).is_some_and(|made| made < before));
    for name in &names {
        remove(&admin, name).await;
    }
    admin.close().await;
    Ok(names.len())
}

/// A sandbox's name: [`PREFIX`], when it was made and a random part, 8 hex digits each.
fn sandbox_name(made: u64, random: u32) -> String {
    // Seconds as 32 bits: they last until 2106.
    format!("{PREFIX}{:08x}{random:08x}", made as u32)
}

/// When the sandbox named `name` was made (Unix seconds), if it is a name [`sandbox_name`]
/// makes (so a name [`sweep`] puts in SQL is always one of these).
fn made_at(name: &str) -> Option<u64> {
    let hex = name.strip_prefix(PREFIX)?;
    if hex.len() != 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex.get(..8)?, 16).ok()
}

fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_says_when_it_was_made_and_only_a_sandboxs_own_names_are_read() {
        let name = sandbox_name(1_796_601_600, 0xdead_beef);
        assert_eq!(name, "racelab_maria_6b15f700deadbeef");
        assert_eq!(made_at(&name), Some(1_796_601_600));
        assert_eq!(made_at("racelab_maria_0123456789abcde"), None);
        assert_eq!(made_at("racelab_maria_0123456789abcdeg"), None);
        assert_eq!(made_at("racelab_maria_x`; DROP DATABASE mysql; --"), None);
        assert_eq!(made_at("racelab"), None);
    }

    #[test]
    fn an_overrun_says_which_bound_held() {
        assert_eq!(
            Overrun::Statement { seconds: 5 }.to_string(),
            "a statement ran past its 5 s and was cancelled"
        );
        assert_eq!(
            Overrun::Bytes { held: 70, bound: 64 }.to_string(),
            "the run's tables held 70 bytes, past its 64: every session was ended"
        );
    }
}
