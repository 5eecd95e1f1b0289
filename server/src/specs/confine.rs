//! Where a spec runs: a database of its own, and per run a role with nothing but its own schema.
//!
//! A spec is SQL from anyone on the internet. Its sessions log in as a role made for the run
//! (`racelab_spec_<run>`): no superuser, no CREATEDB or CREATEROLE, no membership in any other
//! role, CONNECT and TEMPORARY on the specs database alone, owner of one schema that is its
//! search path. So it cannot read or change racelab's tables or the labs' sandboxes (another
//! database), nor another run (another role's schema), nor run programs or read files on the
//! server, create extensions (that needs CREATE on the database), set superuser-only settings,
//! see other sessions' queries in `pg_stat_activity`, or signal backends not its own. Its
//! settings bound what it can spend: a statement, lock and idle timeout, a temporary-file limit.
//! One superuser setting is granted, `deadlock_timeout`, as PostgreSQL's own deadlock specs set
//! it: it only changes how soon the role's own waits look for a cycle (PostgreSQL 15 onwards,
//! `GRANT SET ON PARAMETER`).
//!
//! The specs get a database apart from racelab's own because advisory locks, `LISTEN` channels
//! and `pg_stat_activity`'s database filter are per database: a spec must not be able to take
//! a lab's advisory lock key or hear a lab's notifications.
//!
//! When the run ends, whatever happened, [`Confined::close`] terminates the role's backends,
//! rolls back any transaction it prepared (`PREPARE TRANSACTION` outlives its session), drops
//! everything the role owns and the role itself. [`sweep`] does the same for roles a crash left.

use crate::sandbox::postgres::quote_ident;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_postgres::{Client, NoTls};

/// The database every spec runs in.
pub const DATABASE: &str = "racelab_specs";
/// Every run's role starts so; the sweep finds leftovers by it.
const ROLE_PREFIX: &str = "racelab_spec_";

/// What a run's role may spend.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    pub statement_timeout: Duration,
    pub lock_timeout: Duration,
    pub idle_timeout: Duration,
    pub temp_file_limit_kb: u64,
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

/// A run's role and schema, alive until [`Confined::close`], or until dropped: a run the reader
/// cancelled is dropped mid-play, and its sandbox is removed on a task of its own.
pub struct Confined {
    /// `None` once closed.
    admin: Option<Client>,
    pub role: String,
    pub schema: String,
    sessions: tokio_postgres::Config,
}

/// Connects as racelab's own user to `dbname`.
async fn admin(url: &str, dbname: &str) -> Result<Client, ConfineError> {
    let unreachable = |reason: String| ConfineError::Unreachable {
        url: crate::health::host_port(url, 5432),
        reason,
    };
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|e: tokio_postgres::Error| unreachable(e.to_string()))?;
    config.dbname(dbname);
    config.application_name("racelab/specs");
    config.connect_timeout(Duration::from_secs(5));
    let (client, connection) = config.connect(NoTls).await.map_err(|e| unreachable(describe(&e)))?;
    tokio::spawn(connection);
    Ok(client)
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

/// The specs database, made if it is not there yet, with nothing granted to PUBLIC (said once,
/// by whoever makes it: every change to the database's privileges rewrites its one catalog row,
/// which concurrent runs would fight over).
async fn ensure_database(url: &str) -> Result<Client, ConfineError> {
    // The maintenance database: racelab's own may not be made yet (the CLI makes none).
    let main = admin(url, "postgres").await?;
    let exists = main
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&DATABASE])
        .await
        .map_err(make_error)?
        .is_some();
    let mut made = false;
    if !exists {
        match main
            .batch_execute(&format!("CREATE DATABASE {}", quote_ident(DATABASE)))
            .await
        {
            Ok(()) => made = true,
            // Made meanwhile by another run: 42P04 if it had finished, 23505 (on
            // pg_database_datname_index) if both were making it at the same moment (the first
            // runs on a fresh server, as the atlas's 39 do).
            Err(e)
                if e.code() == Some(&tokio_postgres::error::SqlState::DUPLICATE_DATABASE)
                    || e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) => {}
            Err(e) => return Err(make_error(e)),
        }
    }
    let specs = admin(url, DATABASE).await?;
    // Made by a run that has not closed it yet (its default privileges, NULL, still let PUBLIC
    // in): this run closes it too before it goes on.
    let still_open = !made
        && main
            .query_one(
                "SELECT datacl IS NULL FROM pg_database WHERE datname = $1",
                &[&DATABASE],
            )
            .await
            .map_err(make_error)?
            .get::<_, bool>(0);
    if made || still_open {
        let close = format!(
            "REVOKE ALL ON DATABASE {} FROM PUBLIC; REVOKE ALL ON SCHEMA public FROM PUBLIC;",
            quote_ident(DATABASE)
        );
        retrying(&specs, &close).await.map_err(make_error)?;
    }
    Ok(specs)
}

/// Runs `sql` (one implicit transaction), again if it lost a race for a shared catalog row
/// ("tuple concurrently updated": two runs granting on the one database or parameter at once).
async fn retrying(client: &Client, sql: &str) -> Result<(), tokio_postgres::Error> {
    let mut tries = 0;
    loop {
        match client.batch_execute(sql).await {
            Err(e) if tries < 20 && e.as_db_error().is_some_and(|db| db.message().contains("concurrently")) => {
                tries += 1;
                let pause = {
                    use rand::Rng;
                    rand::rng().random_range(1..=10u64 * tries)
                };
                tokio::time::sleep(Duration::from_millis(pause)).await;
            }
            other => return other,
        }
    }
}

fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl Confined {
    /// Makes run `run_id`'s role and schema on the PostgreSQL at `url` (racelab's own database
    /// URL, whose user may create roles and databases).
    pub async fn open(url: &str, run_id: &str, bounds: Bounds) -> Result<Confined, ConfineError> {
        let admin = ensure_database(url).await?;
        let role = format!("{ROLE_PREFIX}{run_id}");
        let schema = format!("spec_{run_id}");
        let password: String = {
            use rand::Rng;
            let mut rng = rand::rng();
            (0..32).map(|_| format!("{:x}", rng.random_range(0..16u8))).collect()
        };
        let (r, s, d) = (quote_ident(&role), quote_ident(&schema), quote_ident(DATABASE));
        let ms = |d: Duration| d.as_millis();
        let make = format!(
            "CREATE ROLE {r} LOGIN PASSWORD '{password}' NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT \
               NOREPLICATION NOBYPASSRLS CONNECTION LIMIT {connections};
             COMMENT ON ROLE {r} IS 'racelab spec run {run_id}, made {made}';
             GRANT CONNECT, TEMPORARY ON DATABASE {d} TO {r};
             GRANT SET ON PARAMETER deadlock_timeout TO {r};
             CREATE SCHEMA {s} AUTHORIZATION {r};
             ALTER ROLE {r} IN DATABASE {d} SET search_path = {s};
             ALTER ROLE {r} IN DATABASE {d} SET statement_timeout = {statement};
             ALTER ROLE {r} IN DATABASE {d} SET lock_timeout = {lock};
             ALTER ROLE {r} IN DATABASE {d} SET idle_in_transaction_session_timeout = {idle};
             ALTER ROLE {r} IN DATABASE {d} SET temp_file_limit = '{temp}kB';",
            connections = bounds.connections,
            made = now_unix(),
            statement = ms(bounds.statement_timeout),
            lock = ms(bounds.lock_timeout),
            idle = ms(bounds.idle_timeout),
            temp = bounds.temp_file_limit_kb,
        );
        let mut sessions: tokio_postgres::Config = url
            .parse()
            .map_err(|e: tokio_postgres::Error| ConfineError::Make(e.to_string()))?;
        sessions.dbname(DATABASE).user(&role).password(password.as_bytes());
        sessions.connect_timeout(Duration::from_secs(5));
        let confined = Confined {
            admin: Some(admin),
            role,
            schema,
            sessions,
        };
        let made = match &confined.admin {
            Some(admin) => retrying(admin, &make).await,
            None => Ok(()),
        };
        if let Err(error) = made {
            let error = make_error(error);
            confined.close().await;
            return Err(error);
        }
        Ok(confined)
    }

    /// How a session of the run connects (as the run's role), named `racelab/<run>/<who>` in
    /// `pg_stat_activity`.
    pub fn session_config(&self, run_id: &str, who: &str) -> tokio_postgres::Config {
        let mut config = self.sessions.clone();
        config.application_name(crate::sandbox::postgres::application_name(run_id, who));
        config
    }

    /// Ends the run's sessions and removes everything it made. Never fails: what cannot be
    /// removed now is left to [`sweep`], and logged.
    pub async fn close(mut self) {
        if let Some(admin) = self.admin.take() {
            removed(&admin, &self.role).await;
        }
    }
}

impl Drop for Confined {
    fn drop(&mut self) {
        let Some(admin) = self.admin.take() else { return };
        let role = std::mem::take(&mut self.role);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { removed(&admin, &role).await });
        }
    }
}

/// [`remove`], logging what could not be removed yet (the sweep will).
async fn removed(admin: &Client, role: &str) {
    if let Err(error) = remove(admin, role).await {
        tracing::warn!(
            "spec run role {role} not removed yet ({}); the sweep will",
            describe(&error)
        );
    }
}

/// Terminates `role`'s backends, rolls back its prepared transactions, drops what it owns and
/// the role.
async fn remove(admin: &Client, role: &str) -> Result<(), tokio_postgres::Error> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left: i64 = admin
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE usename = $1 AND pid <> pg_backend_pid()",
                &[&role],
            )
            .await?
            .get(0);
        if left == 0 || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for row in admin
        .query("SELECT gid FROM pg_prepared_xacts WHERE owner = $1", &[&role])
        .await?
    {
        let gid: String = row.get(0);
        admin
            .batch_execute(&format!("ROLLBACK PREPARED '{}'", gid.replace('\'', "''")))
            .await?;
    }
    let exists = admin
        .query_opt("SELECT 1 FROM pg_roles WHERE rolname = $1", &[&role])
        .await?
        .is_some();
    if exists {
        let r = quote_ident(role);
        retrying(admin, &format!("DROP OWNED BY {r} CASCADE; DROP ROLE {r};")).await?;
    }
    Ok(())
}

/// Removes run `run_id`'s sandbox, whatever is left of it (a command interrupted mid-run).
pub async fn remove_run(url: &str, run_id: &str) {
    match admin(url, DATABASE).await {
        Ok(admin) => removed(&admin, &format!("{ROLE_PREFIX}{run_id}")).await,
        Err(error) => tracing::warn!(%error, "spec run {run_id} not removed yet; the sweep will"),
    }
}

/// Removes spec roles that no session uses and that were made more than `older_than` ago: what
/// a killed racelab left behind. Returns how many.
pub async fn sweep(url: &str, older_than: Duration) -> Result<usize, ConfineError> {
    let admin = ensure_database(url).await?;
    let rows = admin
        .query(
            "SELECT r.rolname, coalesce(shobj_description(r.oid, 'pg_authid'), '') FROM pg_roles r \
             WHERE r.rolname LIKE $1 \
               AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.usename = r.rolname)",
            &[&format!("{ROLE_PREFIX}%")],
        )
        .await
        .map_err(make_error)?;
    let cutoff = now_unix().saturating_sub(older_than.as_secs());
    let mut removed = 0;
    for row in rows {
        let (role, comment): (String, String) = (row.get(0), row.get(1));
        let made: u64 = comment.rsplit(' ').next().and_then(|t| t.parse().ok()).unwrap_or(0);
        if made <= cutoff {
            remove(&admin, &role).await.map_err(make_error)?;
            removed += 1;
        }
    }
    Ok(removed)
}
