//! Where a spec runs: a database of its own, taken from a pool of ready ones, that only the run's
//! own role may connect to.
//!
//! A spec is SQL from anyone on the internet. Each run plays in a database made for runs
//! (`racelab_spec_<random>`), as a role of the same name: no superuser, no CREATEDB or
//! CREATEROLE, CONNECT and TEMPORARY on that database alone, CREATE in its `public` schema.
//! A database of its own, not a schema in a shared one, because so much of PostgreSQL is per
//! database: `LISTEN`/`NOTIFY` channels, advisory locks, the catalogs (another run's function
//! bodies, view definitions, comments, column defaults), the objects one could lock by oid, and
//! names (`public.x` reads as in the isolation tester). What stays shared is the cluster's own
//! catalogs (roles, databases), and there a run can only read: the names it sees there are
//! random, and name no run (a run's id is how its stored transcript is fetched).
//!
//! Every run database is a copy of one template ([`TEMPLATE`]) holding an event trigger that
//! refuses any grant, policy or default privilege naming a role other than the run's own: such a
//! grant would tie another run's role to this database, and that run could not drop its role
//! until this one ends.
//!
//! The pool: making a database costs a copy of the template (about 60 ms here) and dropping one a
//! checkpoint (1.2 to 1.8 s), so a finished run's database is not dropped but reset
//! ([`Confined::close`]): its backends terminated, any prepared transaction rolled back,
//! everything the role owns there dropped, the role's settings, password and memberships put
//! back, and it goes back to the pool, ready for the next run on that server. The reset runs
//! after the run has returned, on racelab's cleanup thread ([`settle`] waits for it): a reader
//! does not wait for it, and it is not cut short when the run's task ends. After
//! [`MAX_USES`] runs, or when a reset fails, it is dropped and a new one made when needed.
//!
//! Cleanup cannot be held: every statement racelab runs for a run has a lock timeout, and while
//! a cleanup waits for a lock, a watchdog terminates the backends that hold it if they belong to
//! readers' roles (a run that is over, or the run that holds the lock on purpose). So no run's
//! duration or leftovers depend on another run.

use crate::sandbox::postgres::quote_ident;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_postgres::{Client, NoTls};

/// Every run database, and its role, is named so, then 16 random hex digits; the sweep finds
/// leftovers by it.
pub const PREFIX: &str = "racelab_spec_";
/// The database every run database is copied from (its name does not start with [`PREFIX`]).
pub const TEMPLATE: &str = "racelab_template_spec_v3";
/// The templates earlier racelabs made, removed once [`TEMPLATE`] is made.
const EARLIER_TEMPLATES: [&str; 2] = ["racelab_template_spec_v1", "racelab_template_spec_v2"];
/// The role every run's role is a member of: it holds `SET` on `deadlock_timeout`, once, so runs
/// do not each rewrite that parameter's one shared catalog row.
pub const READERS: &str = "racelab_reader";
/// A database is reset for this many runs, then dropped (its catalogs churn with every run).
pub const MAX_USES: u32 = 100;
/// The most ready databases one server's pool keeps; a database returned to a full pool is
/// dropped.
pub const MAX_READY: usize = 32;
/// Temporary files one session may write (`temp_file_limit`, a setting a run cannot raise).
pub const TEMP_FILE_LIMIT_KB: u64 = 64 * 1024;
/// How long any cleanup statement waits for a lock, at most. The watchdog ends a reader's
/// backend that holds one far sooner ([`WATCHDOG_EVERY`]); this bounds a wait on anything else.
pub const CLEANUP_LOCK_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a take with no ready database waits for one being reset, before it makes one.
const WAIT_FOR_RESET: Duration = Duration::from_secs(2);
/// How often a cleanup in progress is looked at for readers' backends that block it.
const WATCHDOG_EVERY: Duration = Duration::from_millis(20);

/// The template's contents:
/// - `public`, open to create in (its owner is the database's, racelab);
/// - the guard against grants to other roles. It runs after every DDL command of the run's role
///   (but `CREATE TRIGGER`: a trigger records no role),
///   inside its transaction, so a refused grant is rolled back with the statement; it reads
///   `pg_shdepend`, where PostgreSQL records every reference from this database to a role. The
///   run's role has the database's name;
/// - the witness's functions ([`super::witness::WITNESS_SQL`]), which the run's role may call
///   but not replace.
///
/// Every function is racelab's (the run's role owns none of them) and fixed to `pg_catalog`, so
/// nothing a run defines can stand in for what they call. `racelab` is usable by everyone (a
/// grant to `PUBLIC` records no role, so the guard does not see it).
const TEMPLATE_SQL: &str = "
GRANT CREATE ON SCHEMA public TO PUBLIC;
CREATE SCHEMA racelab;
GRANT USAGE ON SCHEMA racelab TO PUBLIC;
CREATE FUNCTION racelab.no_other_roles() RETURNS event_trigger LANGUAGE plpgsql
SET search_path = pg_catalog AS $guard$
BEGIN
  -- A trigger names no role (and the witness puts one on every table a setup makes).
  IF TG_TAG OPERATOR(pg_catalog.=) 'CREATE TRIGGER' THEN
    RETURN;
  END IF;
  IF EXISTS (
    SELECT 1 FROM pg_catalog.pg_shdepend d JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) d.refobjid
    WHERE d.dbid OPERATOR(pg_catalog.=) (SELECT oid FROM pg_catalog.pg_database
                                          WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
      AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_authid'::pg_catalog.regclass
      AND r.rolname OPERATOR(pg_catalog.<>) pg_catalog.current_database()
      AND NOT r.rolsuper)
  THEN
    RAISE EXCEPTION 'a spec may grant to no role but its own' USING ERRCODE = '42501';
  END IF;
END
$guard$;
CREATE EVENT TRIGGER racelab_no_other_roles ON ddl_command_end EXECUTE FUNCTION racelab.no_other_roles();
";

/// What a run's sessions may spend (each a setting of the sessions' own, given at connect: a
/// spec may change them, and the player's step limit still holds).
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    pub statement_timeout: Duration,
    pub lock_timeout: Duration,
    pub idle_timeout: Duration,
    /// Sessions the role may open: the spec's and the control connection.
    pub connections: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    #[error("PostgreSQL at {url} cannot be reached: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("could not make the spec's sandbox: {0}")]
    Make(String),
}

/// A driver error in words: the server's message, or the cause under tokio-postgres's own
/// one-word summary ("db error", "error connecting to server").
pub fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_owned();
    }
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

fn make_error(e: tokio_postgres::Error) -> ConfineError {
    ConfineError::Make(describe(&e))
}

fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn random_hex(digits: usize) -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..digits)
        .map(|_| format!("{:x}", rng.random_range(0..16u8)))
        .collect()
}

/// Connects as racelab's own user to `dbname`, every statement under a lock timeout, and
/// `pg_catalog` the only schema it looks in (it may run in a run's database, among whatever the
/// run defined). The connection is made on the cleanup runtime ([`CLEANUP`]), not the
/// caller's: a socket belongs to the runtime it was opened on, and a kept connection opened on
/// a run's runtime (a test's) died with it, under whoever used it next ("connection closed").
async fn admin(url: &str, dbname: &str) -> Result<(Client, i32), ConfineError> {
    let Some(handle) = CLEANUP.as_ref() else {
        return connect_admin(url, dbname).await;
    };
    let (url, dbname) = (url.to_owned(), dbname.to_owned());
    handle
        .spawn(async move { connect_admin(&url, &dbname).await })
        .await
        .unwrap_or_else(|e| Err(ConfineError::Make(format!("racelab's connection was not made: {e}"))))
}

async fn connect_admin(url: &str, dbname: &str) -> Result<(Client, i32), ConfineError> {
    let unreachable = |reason: String| ConfineError::Unreachable {
        url: crate::health::host_port(url, 5432),
        reason,
    };
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|e: tokio_postgres::Error| unreachable(e.to_string()))?;
    config.dbname(dbname);
    config.application_name("racelab/specs");
    config.options(format!(
        "-c lock_timeout={} -c statement_timeout=30000 -c search_path=pg_catalog",
        CLEANUP_LOCK_TIMEOUT.as_millis()
    ));
    config.connect_timeout(Duration::from_secs(5));
    let (client, connection) = config.connect(NoTls).await.map_err(|e| unreachable(describe(&e)))?;
    tokio::spawn(connection);
    let pid = client
        .query_one("SELECT pg_catalog.pg_backend_pid()", &[])
        .await
        .map_err(make_error)?
        .get(0);
    Ok((client, pid))
}

/// One ready database (and its role, of the same name).
#[derive(Clone, Debug)]
struct Ready {
    name: String,
    password: String,
    /// Runs played in it so far.
    uses: u32,
}

/// One server's ready databases.
struct Pool {
    url: String,
    ready: Mutex<Vec<Ready>>,
    /// A connection to the maintenance database, made again when it closes (a test's runtime
    /// ends, the server restarts).
    admin: tokio::sync::Mutex<Option<(Arc<Client>, i32)>>,
    /// A second one, for the watchdog over what the first waits on.
    watchdog: tokio::sync::Mutex<Option<(Arc<Client>, i32)>>,
    /// A third, for resets: a reset waits for backends to end (up to a second each), and a
    /// take must not queue behind it on the first.
    resetter: tokio::sync::Mutex<Option<(Arc<Client>, i32)>>,
    /// The template and the readers' role exist on this server.
    prepared: tokio::sync::OnceCell<()>,
}

type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// A kept connection to the maintenance database and its backend's pid, made again when it has
/// closed (a test's runtime ends, the server restarts).
async fn kept(
    slot: &tokio::sync::Mutex<Option<(Arc<Client>, i32)>>,
    url: &str,
) -> Result<(Arc<Client>, i32), ConfineError> {
    let mut kept = slot.lock().await;
    if let Some((client, pid)) = kept.as_ref().filter(|(c, _)| !c.is_closed()) {
        return Ok((client.clone(), *pid));
    }
    let (client, pid) = admin(url, "postgres").await?;
    let client = Arc::new(client);
    *kept = Some((client.clone(), pid));
    Ok((client, pid))
}

/// The pools, one per server URL.
static POOLS: LazyLock<Mutex<HashMap<String, Arc<Pool>>>> = LazyLock::new(Default::default);
/// The databases this process holds (ready or in a run): its own sweep leaves them alone.
static HELD: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Default::default);
/// Which database each recent run played in, and as which of its uses (for `remove_run` and the
/// tests); the oldest are forgotten past [`REMEMBERED`].
static RUNS: LazyLock<Mutex<VecDeque<(String, RunPlace)>>> = LazyLock::new(Default::default);
const REMEMBERED: usize = 4096;
/// Each database's uses so far, by name.
static USES: LazyLock<Mutex<HashMap<String, u32>>> = LazyLock::new(Default::default);
/// The databases whose reset failed, so they were dropped instead (the newest
/// [`REMEMBERED`]): what tells a cleanup that a reader's backend held from one it went through.
static NOT_RESET: LazyLock<Mutex<VecDeque<String>>> = LazyLock::new(Default::default);

/// The runtime racelab's cleanup runs on: a thread of its own, so that a database's reset, and
/// racelab's own connections, outlive the run's task (a reader who closed the tab) and, in
/// tests, the test's runtime. `None` where no thread could be started: the caller's runtime
/// then serves.
static CLEANUP: LazyLock<Option<tokio::runtime::Handle>> = LazyLock::new(|| {
    let (tx, rx) = std::sync::mpsc::channel();
    let started = std::thread::Builder::new()
        .name("racelab-cleanup".to_owned())
        .spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                return;
            };
            let _ = tx.send(runtime.handle().clone());
            runtime.block_on(std::future::pending::<()>());
        });
    let handle = started.ok().and_then(|_| rx.recv().ok());
    if handle.is_some() {
        // SAFETY: atexit only stores the address of a function that takes and returns nothing.
        unsafe { libc::atexit(settle_at_exit) };
    }
    handle
});

/// Runs `work` on the cleanup runtime ([`CLEANUP`]), or on the caller's.
fn spawn_for_cleanup<F>(work: F)
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    match CLEANUP.as_ref() {
        Some(handle) => drop(handle.spawn(work)),
        None => drop(tokio::spawn(work)),
    }
}

/// The databases being reset ([`Pool::give_back_later`]), each with its server's URL, and a
/// wake-up for whoever waits for one to be done (it is back in its pool's `ready` by then).
static RESETTING: LazyLock<Mutex<HashMap<String, String>>> = LazyLock::new(Default::default);
static RESET_DONE: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Waits until no reset is under way: a finished run's database is reset after the run has
/// returned, so a command about to exit waits here first. Bounded by the resets' own bounds
/// (each statement's lock timeout, the watchdog).
pub async fn settle() {
    wait_for_resets(|resetting| resetting.is_empty()).await;
}

/// Waits until database `name` is not being reset: a test about to look for what a run left.
pub async fn reset_done(name: &str) {
    wait_for_resets(|resetting| !resetting.contains_key(name)).await;
}

async fn wait_for_resets(done: impl Fn(&HashMap<String, String>) -> bool) {
    loop {
        let woken = RESET_DONE.notified();
        if done(&lock(&RESETTING)) {
            return;
        }
        // A reset that ends between the look and the wait still wakes this one
        // (`notify_waiters` reaches a `Notified` made before it); the look is repeated anyway.
        let _ = tokio::time::timeout(Duration::from_millis(100), woken).await;
    }
}

/// Registered once the cleanup runtime runs: a process that exits (a command, a test binary)
/// with resets under way waits for them, up to 10 s, rather than leave databases open.
extern "C" fn settle_at_exit() {
    let Some(handle) = CLEANUP.as_ref() else { return };
    if lock(&RESETTING).is_empty() {
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    handle.spawn(async move {
        let _ = tokio::time::timeout(Duration::from_secs(10), settle()).await;
        let _ = tx.send(());
    });
    let _ = rx.recv_timeout(Duration::from_secs(11));
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Where a run played: its database (and role) and which use of it the run was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunPlace {
    pub database: String,
    pub use_number: u32,
}

impl RunPlace {
    /// Whether the database has been taken by a later run since: it was reset to be (a database
    /// is only handed out again once clean).
    pub fn taken_again(&self) -> bool {
        lock(&USES).get(&self.database).is_some_and(|n| *n > self.use_number)
    }
}

/// Whether database `name`'s reset failed (in this process, recently): it was dropped instead.
pub fn reset_failed(name: &str) -> bool {
    lock(&NOT_RESET).iter().any(|failed| failed == name)
}

/// Where run `run_id` played, if this process played it recently.
pub fn place_of(run_id: &str) -> Option<RunPlace> {
    lock(&RUNS)
        .iter()
        .rev()
        .find(|(id, _)| id == run_id)
        .map(|(_, p)| p.clone())
}

fn pool(url: &str) -> Arc<Pool> {
    lock(&POOLS)
        .entry(url.to_owned())
        .or_insert_with(|| {
            Arc::new(Pool {
                url: url.to_owned(),
                ready: Mutex::new(Vec::new()),
                admin: tokio::sync::Mutex::new(None),
                watchdog: tokio::sync::Mutex::new(None),
                resetter: tokio::sync::Mutex::new(None),
                prepared: tokio::sync::OnceCell::new(),
            })
        })
        .clone()
}

impl Pool {
    async fn admin(&self) -> Result<Arc<Client>, ConfineError> {
        Ok(kept(&self.admin, &self.url).await?.0)
    }

    /// Runs `work` on the pool's connection, with the watchdog ([`unheld`]) on its second.
    async fn unheld<T>(
        &self,
        work: impl FnOnce(Arc<Client>) -> BoxFuture<'static, Result<T, tokio_postgres::Error>>,
    ) -> Result<T, ConfineError> {
        let (admin, pid) = kept(&self.admin, &self.url).await?;
        let (watch, _) = kept(&self.watchdog, &self.url).await?;
        unheld(&watch, pid, work(admin)).await.map_err(make_error)
    }

    /// The template and the readers' role, made once per server (under an advisory lock, as
    /// another racelab may be making them at the same moment).
    async fn prepare(&self) -> Result<(), ConfineError> {
        self.prepared
            .get_or_try_init(|| async {
                let (main, _) = admin(&self.url, "postgres").await?;
                main.batch_execute("SELECT pg_catalog.pg_advisory_lock(7262, 1)")
                    .await
                    .map_err(make_error)?;
                let made = make_template(&self.url, &main).await;
                // The lock goes with the session anyway; unlocking is only sooner.
                let _ = main
                    .batch_execute("SELECT pg_catalog.pg_advisory_unlock(7262, 1)")
                    .await;
                made
            })
            .await
            .map(|_| ())
    }

    /// A new ready database: the role, then the copy of the template, then its privileges.
    async fn make(&self) -> Result<Ready, ConfineError> {
        self.prepare().await?;
        let admin = self.admin().await?;
        let ready = Ready {
            name: format!("{PREFIX}{}", random_hex(16)),
            password: random_hex(32),
            uses: 0,
        };
        lock(&HELD).insert(ready.name.clone());
        let n = quote_ident(&ready.name);
        let made = async {
            admin
                .batch_execute(&format!(
                    "CREATE ROLE {n} LOGIN PASSWORD '{p}' NOSUPERUSER NOCREATEDB NOCREATEROLE INHERIT \
                       NOREPLICATION NOBYPASSRLS CONNECTION LIMIT 0 IN ROLE {READERS};
                     COMMENT ON ROLE {n} IS 'racelab spec database, made {t}'",
                    p = ready.password,
                    t = now_unix()
                ))
                .await?;
            admin
                .batch_execute(&format!("CREATE DATABASE {n} TEMPLATE {}", quote_ident(TEMPLATE)))
                .await?;
            admin
                .batch_execute(&format!(
                    "REVOKE ALL ON DATABASE {n} FROM PUBLIC; GRANT CONNECT, TEMPORARY ON DATABASE {n} TO {n};
                     ALTER ROLE {n} IN DATABASE {n} SET temp_file_limit = '{TEMP_FILE_LIMIT_KB}kB'"
                ))
                .await
        }
        .await;
        if let Err(error) = made {
            drop_database(&self.url, &ready.name).await;
            lock(&HELD).remove(&ready.name);
            return Err(make_error(error));
        }
        Ok(ready)
    }

    /// A ready database for a run of `connections` sessions: one from the pool, or a new one.
    /// Taking it opens it to its role's logins (a ready database takes none) and stamps it.
    /// Returns it with the number of this use of it (counted before it is opened, so that a
    /// look at a run's database knows whether another run has it now).
    async fn take(&self, connections: usize) -> Result<(Ready, u32), ConfineError> {
        for _ in 0..3 {
            let popped = self.pop_ready().await;
            let ready = match popped {
                Some(ready) => ready,
                None => self.make().await?,
            };
            let use_number = {
                let mut uses = lock(&USES);
                let n = uses.entry(ready.name.clone()).or_insert(0);
                *n += 1;
                *n
            };
            let sql = format!(
                "ALTER ROLE {n} CONNECTION LIMIT {connections};
                 COMMENT ON ROLE {n} IS 'racelab spec database, taken {t}'",
                n = quote_ident(&ready.name),
                t = now_unix()
            );
            let opened = self
                .unheld(move |admin| Box::pin(async move { admin.batch_execute(&sql).await }))
                .await;
            match opened {
                Ok(()) => return Ok((ready, use_number)),
                Err(error) => {
                    // Swept meanwhile by another racelab (it was idle past the sweep's age), or
                    // held by something no watchdog may end: the next one, or a new one.
                    tracing::warn!("spec database {} not taken ({error}); passed over", ready.name);
                    let pool = pool(&self.url);
                    tokio::spawn(async move { pool.give_back(ready, false).await });
                }
            }
        }
        Err(ConfineError::Make("no ready database could be taken".to_owned()))
    }

    /// A ready database, or, when none is ready but one is being reset, that one once it is
    /// back (within [`WAIT_FOR_RESET`]): a reset takes milliseconds, a new database a copy of
    /// the template, which a burst of runs would each pay. `None`: make a new one.
    async fn pop_ready(&self) -> Option<Ready> {
        let ready_or_none_coming = |resetting: &HashMap<String, String>| {
            !lock(&self.ready).is_empty() || !resetting.values().any(|url| *url == self.url)
        };
        let _ = tokio::time::timeout(WAIT_FOR_RESET, wait_for_resets(ready_or_none_coming)).await;
        lock(&self.ready).pop()
    }

    /// [`Pool::give_back`] on the cleanup runtime: the run that used `ready` is over and need
    /// not wait for its reset; [`settle`] waits for it, and a take finding no ready database
    /// waits for it a little ([`Pool::pop_ready`]).
    fn give_back_later(self: Arc<Self>, ready: Ready) {
        lock(&RESETTING).insert(ready.name.clone(), self.url.clone());
        spawn_for_cleanup(async move {
            let name = ready.name.clone();
            self.give_back(ready, true).await;
            lock(&RESETTING).remove(&name);
            RESET_DONE.notify_waiters();
        });
    }

    /// Puts `ready` back as it was made, and in the pool; drops it if it cannot be, if it has
    /// served its runs, if the pool is full, or when `keep` is false.
    async fn give_back(&self, mut ready: Ready, keep: bool) {
        ready.uses += 1;
        let keep = keep && ready.uses < MAX_USES && lock(&self.ready).len() < MAX_READY;
        let reset = if keep { reset(self, &ready).await } else { Ok(()) };
        match reset {
            Ok(()) if keep => lock(&self.ready).push(ready),
            outcome => {
                if let Err(error) = outcome {
                    tracing::warn!("spec database {} not reset ({error}); dropped instead", ready.name);
                    let mut failed = lock(&NOT_RESET);
                    failed.push_back(ready.name.clone());
                    if failed.len() > REMEMBERED {
                        failed.pop_front();
                    }
                }
                drop_database(&self.url, &ready.name).await;
                lock(&HELD).remove(&ready.name);
            }
        }
    }
}

/// Makes [`TEMPLATE`] and [`READERS`] where they are missing. The template is built under a
/// name of its own and renamed once complete, so a racelab killed half-way leaves no template
/// that lacks its guard.
async fn make_template(url: &str, main: &Client) -> Result<(), ConfineError> {
    let has_readers = main
        .query_opt("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1", &[&READERS])
        .await
        .map_err(make_error)?
        .is_some();
    if !has_readers {
        main.batch_execute(&format!(
            "CREATE ROLE {r} NOLOGIN; GRANT SET ON PARAMETER deadlock_timeout TO {r}",
            r = quote_ident(READERS)
        ))
        .await
        .map_err(make_error)?;
    }
    let exists = main
        .query_opt("SELECT 1 FROM pg_catalog.pg_database WHERE datname = $1", &[&TEMPLATE])
        .await
        .map_err(make_error)?
        .is_some();
    if exists {
        return Ok(());
    }
    remove_earlier_templates(main).await;
    let building = format!("{TEMPLATE}_building");
    let b = quote_ident(&building);
    main.batch_execute(&format!("DROP DATABASE IF EXISTS {b} WITH (FORCE)"))
        .await
        .map_err(make_error)?;
    main.batch_execute(&format!("CREATE DATABASE {b} TEMPLATE template0"))
        .await
        .map_err(make_error)?;
    {
        let (inside, _) = admin(url, &building).await?;
        inside
            .batch_execute(&format!("{TEMPLATE_SQL}{}", super::witness::WITNESS_SQL))
            .await
            .map_err(make_error)?;
    }
    main.batch_execute(&format!(
        "ALTER DATABASE {b} RENAME TO {t}; ALTER DATABASE {t} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false",
        t = quote_ident(TEMPLATE)
    ))
    .await
    .map_err(make_error)
}

/// Removes the templates earlier racelabs made ([`EARLIER_TEMPLATES`]), if nothing is being
/// copied from them; one still in use is left, and logged.
async fn remove_earlier_templates(main: &Client) {
    for earlier in EARLIER_TEMPLATES {
        let e = quote_ident(earlier);
        // DROP DATABASE cannot share a query with another statement.
        let mut removed = main
            .batch_execute(&format!(
                "DO $$ BEGIN IF EXISTS (SELECT FROM pg_catalog.pg_database WHERE datname OPERATOR(pg_catalog.=) '{earlier}') \
                 THEN ALTER DATABASE {e} IS_TEMPLATE false; END IF; END $$"
            ))
            .await;
        if removed.is_ok() {
            removed = main.batch_execute(&format!("DROP DATABASE IF EXISTS {e}")).await;
        }
        if let Err(error) = removed {
            tracing::warn!(template = earlier, error = %describe(&error), "an earlier template is left");
        }
    }
}

/// Runs `work` (on the session whose backend is `pid`) while a watchdog, on `watch`, terminates
/// every reader's backend that blocks it: the runs that hold a cleanup's locks are over, or are
/// holding them on purpose.
async fn unheld<T>(watch: &Client, pid: i32, work: impl std::future::Future<Output = T>) -> T {
    let work = std::pin::pin!(work);
    let mut work = work;
    loop {
        tokio::select! {
            done = &mut work => return done,
            () = tokio::time::sleep(WATCHDOG_EVERY) => {}
        }
        let ended = watch
            .query(
                "SELECT pg_catalog.pg_terminate_backend(a.pid) FROM pg_catalog.pg_stat_activity a \
                 WHERE a.pid OPERATOR(pg_catalog.=) ANY (pg_catalog.pg_blocking_pids($1)) \
                   AND a.usename OPERATOR(pg_catalog.~~) 'racelab\\_spec\\_%'",
                &[&pid],
            )
            .await;
        if let Ok(rows) = ended
            && !rows.is_empty()
        {
            tracing::info!(
                blockers = rows.len(),
                "ended readers' backends that held a cleanup's lock"
            );
        }
    }
}

/// Terminates every backend in database `name` or of its role but `spare` (racelab's own in it),
/// until none is left: each termination waits (up to 1 s) for its backend to be gone, and what
/// is still there is looked at again, for at most 5 s.
async fn end_sessions(admin: &Client, name: &str, spare: i32) -> Result<(), tokio_postgres::Error> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let left: i64 = admin
            .query_one(
                "SELECT count(pg_catalog.pg_terminate_backend(pid, 1000)) FROM pg_catalog.pg_stat_activity \
                 WHERE (datname OPERATOR(pg_catalog.=) $1 OR usename OPERATOR(pg_catalog.=) $1) \
                   AND pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid() AND pid OPERATOR(pg_catalog.<>) $2",
                &[&name, &spare],
            )
            .await?
            .get(0);
        if left == 0 || tokio::time::Instant::now() >= deadline {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Resets `ready` after a run: no session, no prepared transaction, nothing owned by its role,
/// no membership but [`READERS`], the role's settings and password as made, closed to logins.
async fn reset(pool: &Pool, ready: &Ready) -> Result<(), ConfineError> {
    let main = kept(&pool.resetter, &pool.url).await?.0;
    let n = quote_ident(&ready.name);
    let (inside, pid) = admin(&pool.url, &ready.name).await?;
    let work = async {
        inside
            .batch_execute(&format!("ALTER ROLE {n} CONNECTION LIMIT 0"))
            .await?;
        end_sessions(&main, &ready.name, pid).await?;
        for row in inside
            .query(
                "SELECT gid FROM pg_catalog.pg_prepared_xacts WHERE database OPERATOR(pg_catalog.=) $1",
                &[&ready.name],
            )
            .await?
        {
            let gid: String = row.get(0);
            inside
                .batch_execute(&format!("ROLLBACK PREPARED '{}'", gid.replace('\'', "''")))
                .await?;
        }
        let memberships = inside
            .query(
                "SELECT g.rolname, m.rolname FROM pg_catalog.pg_auth_members a \
                 JOIN pg_catalog.pg_roles g ON g.oid OPERATOR(pg_catalog.=) a.roleid \
                 JOIN pg_catalog.pg_roles m ON m.oid OPERATOR(pg_catalog.=) a.member \
                 WHERE (g.rolname OPERATOR(pg_catalog.=) $1 OR m.rolname OPERATOR(pg_catalog.=) $1) \
                   AND g.rolname OPERATOR(pg_catalog.<>) $2",
                &[&ready.name, &READERS],
            )
            .await?;
        let mut sql = format!("DROP OWNED BY {n};");
        for row in memberships {
            let (group, member): (String, String) = (row.get(0), row.get(1));
            sql.push_str(&format!(
                "REVOKE {} FROM {};",
                quote_ident(&group),
                quote_ident(&member)
            ));
        }
        sql.push_str(&format!(
            "GRANT CONNECT, TEMPORARY ON DATABASE {n} TO {n};
             ALTER ROLE {n} RESET ALL; ALTER ROLE {n} IN DATABASE {n} RESET ALL;
             ALTER ROLE {n} IN DATABASE {n} SET temp_file_limit = '{TEMP_FILE_LIMIT_KB}kB';
             ALTER ROLE {n} PASSWORD '{p}';
             COMMENT ON ROLE {n} IS 'racelab spec database, ready {t}'",
            p = ready.password,
            t = now_unix()
        ));
        inside.batch_execute(&sql).await
    };
    let reset = unheld(&main, pid, work).await.map_err(make_error);
    // racelab's own session in it goes too, before the database is handed out again.
    drop(inside);
    end_sessions(&main, &ready.name, 0).await.map_err(make_error)?;
    reset
}

/// Drops database `name` and its role, ending whoever is in it; what cannot be dropped now is
/// logged, and left to the sweep.
async fn drop_database(url: &str, name: &str) {
    let dropped = async {
        let (main, pid) = admin(url, "postgres").await?;
        let (watch, _) = admin(url, "postgres").await?;
        let n = quote_ident(name);
        let work = async {
            main.batch_execute(&format!("DROP DATABASE IF EXISTS {n} WITH (FORCE)"))
                .await?;
            let role = main
                .query_opt("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1", &[&name])
                .await?;
            if role.is_some() {
                end_sessions(&main, name, pid).await?;
                main.batch_execute(&format!("DROP OWNED BY {n}; DROP ROLE {n}")).await?;
            }
            Ok::<(), tokio_postgres::Error>(())
        };
        unheld(&watch, pid, work).await.map_err(make_error)
    };
    if let Err(error) = dropped.await {
        tracing::warn!("spec database {name} not dropped yet ({error}); the sweep will");
    }
}

/// A run's database, its own until [`Confined::close`], or until dropped: a run the reader
/// cancelled is dropped mid-play, and its database is reset on a task of its own.
pub struct Confined {
    pool: Arc<Pool>,
    /// `None` once closed.
    ready: Option<Ready>,
    sessions: tokio_postgres::Config,
    /// The part of the database's name after [`PREFIX`]: names the run's sessions.
    token: String,
    /// The watch over the run's memory and disk, while it plays.
    watch: Option<tokio::task::JoinHandle<()>>,
    /// Why the watch ended the run, if it did.
    ended: Arc<Mutex<Option<String>>>,
}

impl Confined {
    /// Takes a database for run `run_id` on the PostgreSQL at `url` (racelab's own database
    /// URL, whose user may create roles and databases).
    pub async fn open(url: &str, run_id: &str, bounds: Bounds) -> Result<Confined, ConfineError> {
        let mut sessions: tokio_postgres::Config = url
            .parse()
            .map_err(|e: tokio_postgres::Error| ConfineError::Make(e.to_string()))?;
        let pool = pool(url);
        let (ready, use_number) = pool.take(bounds.connections).await?;
        {
            let mut runs = lock(&RUNS);
            if runs.len() >= REMEMBERED {
                runs.pop_front();
            }
            runs.push_back((
                run_id.to_owned(),
                RunPlace {
                    database: ready.name.clone(),
                    use_number,
                },
            ));
        }
        let ms = |d: Duration| d.as_millis();
        sessions
            .dbname(&ready.name)
            .user(&ready.name)
            .password(ready.password.as_bytes())
            .options(format!(
                "-c statement_timeout={} -c lock_timeout={} -c idle_in_transaction_session_timeout={}",
                ms(bounds.statement_timeout),
                ms(bounds.lock_timeout),
                ms(bounds.idle_timeout)
            ))
            .connect_timeout(Duration::from_secs(5));
        Ok(Confined {
            pool,
            token: ready.name.trim_start_matches(PREFIX).to_owned(),
            ready: Some(ready),
            sessions,
            watch: None,
            ended: Arc::default(),
        })
    }

    /// The run's database (and role) name.
    pub fn database(&self) -> &str {
        self.ready.as_ref().map_or("", |r| r.name.as_str())
    }

    /// How a session of the run connects (as the run's role), named `racelab/<token>/<who>` in
    /// `pg_stat_activity`: the token is the database's, which every role can see anyway; the
    /// run's id appears nowhere.
    pub fn session_config(&self, who: &str) -> tokio_postgres::Config {
        let mut config = self.sessions.clone();
        config.application_name(crate::sandbox::postgres::application_name(&self.token, who));
        config
    }

    /// Watches the run's memory and disk while it plays ([`super::watch`]), telling `lane` what
    /// it stopped.
    /// The watch has a connection of its own, made on the run's task: a pool's kept one may
    /// belong to a runtime that ends first (each test has its own).
    pub fn watch(&mut self, lane: crate::engine::Lane) {
        let Some(ready) = &self.ready else { return };
        let (url, database, ended) = (self.pool.url.clone(), ready.name.clone(), self.ended.clone());
        self.watch = Some(tokio::spawn(async move {
            match admin(&url, "postgres").await {
                Ok((client, _)) => super::watch::watch(Arc::new(client), database, lane, ended).await,
                Err(error) => tracing::warn!(%error, "a spec run's memory and disk are not watched"),
            }
        }));
    }

    /// Why the watch over the run's memory and disk ended it, if it did.
    pub fn ended_by_watch(&self) -> Option<String> {
        lock(&self.ended).clone()
    }

    /// Ends the run: its sessions are ended and its database put back as made, after the run
    /// has returned (the reader need not wait for it; [`settle`] does). Never fails: what cannot
    /// be reset is dropped, and what cannot be dropped now is left to [`sweep`], and logged.
    pub fn close(self) {
        drop(self);
    }
}

/// A run the reader cancelled is dropped mid-play: its database is reset as a closed one is.
impl Drop for Confined {
    fn drop(&mut self) {
        if let Some(watch) = self.watch.take() {
            watch.abort();
        }
        if let Some(ready) = self.ready.take() {
            self.pool.clone().give_back_later(ready);
        }
    }
}

/// Makes ready databases on the server at `url` until its pool holds `count`: a server warms
/// its pools as it starts, so that its first readers' specs do not each wait for a database to
/// be copied (nor copy several at once while other readers' runs write).
pub async fn warm(url: &str, count: usize) -> Result<(), ConfineError> {
    let pool = pool(url);
    while lock(&pool.ready).len() < count.min(MAX_READY) {
        let ready = pool.make().await?;
        lock(&pool.ready).push(ready);
    }
    Ok(())
}

/// How long a ready database may stand idle before any racelab's sweep drops it.
pub const READY_AGE: Duration = Duration::from_secs(600);

/// Drops every ready database this process's pools hold, once the resets under way are done: a
/// command about to exit (or a server on its way down) keeps none for runs that will not come.
pub async fn drain() {
    settle().await;
    let pools: Vec<Arc<Pool>> = lock(&POOLS).values().cloned().collect();
    for pool in pools {
        let ready: Vec<Ready> = std::mem::take(&mut *lock(&pool.ready));
        for spare in ready {
            drop_database(&pool.url, &spare.name).await;
            lock(&HELD).remove(&spare.name);
        }
    }
}

/// Removes what is left of run `run_id`'s database (a command interrupted mid-run): the dropped
/// play has handed it back already, or is handing it back; this makes sure, by dropping it.
pub async fn remove_run(url: &str, run_id: &str) {
    settle().await;
    if let Some(place) = place_of(run_id).filter(|p| !p.taken_again()) {
        lock(&pool(url).ready).retain(|r| r.name != place.database);
        drop_database(url, &place.database).await;
        lock(&HELD).remove(&place.database);
    }
}

/// Drops run databases (and roles) no session uses, that no pool of this process holds, made or
/// taken more than `older_than` ago, or ready and idle for [`READY_AGE`]: what a killed racelab
/// left behind, and the spares of one that stopped (a racelab that is still up and finds a spare
/// gone passes over it). Returns how many.
pub async fn sweep(url: &str, older_than: Duration) -> Result<usize, ConfineError> {
    let (main, _) = admin(url, "postgres").await?;
    let rows = main
        .query(
            "SELECT n.name, coalesce(pg_catalog.shobj_description(r.oid, 'pg_authid'), '') \
             FROM (SELECT rolname AS name FROM pg_catalog.pg_roles UNION SELECT datname FROM pg_catalog.pg_database) n \
             LEFT JOIN pg_catalog.pg_roles r ON r.rolname OPERATOR(pg_catalog.=) n.name \
             WHERE n.name OPERATOR(pg_catalog.~~) 'racelab\\_spec\\_%' \
               AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity a \
                               WHERE a.usename OPERATOR(pg_catalog.=) n.name OR a.datname OPERATOR(pg_catalog.=) n.name)",
            &[],
        )
        .await
        .map_err(make_error)?;
    let cutoff = now_unix().saturating_sub(older_than.as_secs());
    let mut removed = 0;
    for row in rows {
        let (name, comment): (String, String) = (row.get(0), row.get(1));
        if lock(&HELD).contains(&name) {
            continue;
        }
        // A database without its role (a make cut short) has no stamp: it is swept at once. A
        // ready one is another racelab's spare, or a stopped one's: swept once idle a while.
        let stamped: u64 = comment.rsplit(' ').next().and_then(|t| t.parse().ok()).unwrap_or(0);
        let ready = comment.contains(", ready ");
        if stamped <= cutoff || (ready && stamped <= now_unix().saturating_sub(READY_AGE.as_secs())) {
            drop_database(url, &name).await;
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_random_and_never_the_run_id() {
        let a = random_hex(16);
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, random_hex(16));
        assert!(!TEMPLATE.starts_with(PREFIX) && !READERS.starts_with(PREFIX));
    }

    #[test]
    fn a_place_is_taken_again_only_by_a_later_use() {
        lock(&USES).insert("racelab_spec_test".to_owned(), 3);
        let place = |use_number| RunPlace {
            database: "racelab_spec_test".to_owned(),
            use_number,
        };
        assert!(place(2).taken_again());
        assert!(!place(3).taken_again());
    }
}
