//! Connecting to racelab's own database: create it if missing, migrate it, sweep old sandboxes.

use crate::config::Config;
use crate::engine::leases::Leases;
use crate::engine::run::Reach;
use crate::engine::warm::Warm;
use crate::engine::{Admission, Capacity, Engine, Limits};
use crate::sandbox::{self, Services};
use crate::store::Store;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool};
use std::str::FromStr;
use std::time::Duration;
use thiserror::Error;

/// Why the engine could not start.
#[derive(Debug, Error)]
pub enum StartupError {
    #[error("DATABASE_URL is not a PostgreSQL URL: {0}")]
    BadUrl(sqlx::Error),
    #[error("cannot reach PostgreSQL at {url}: {source}")]
    Unreachable { url: String, source: sqlx::Error },
    #[error("cannot migrate racelab's tables: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("REDIS_URL is not a Redis URL: {0}")]
    BadRedisUrl(redis::RedisError),
    #[error("cannot find racelab's own binary for child-process actors: {0}")]
    NoBinary(std::io::Error),
    #[error("cannot sweep old sandboxes: {0}")]
    Sweep(#[from] sandbox::SandboxError),
}

/// Connections the server keeps for itself (its pool) and leaves spare, out of max_connections.
const ADMIN_POOL: u32 = 5;
const SPARE: u32 = 5;

/// Connects the engine: database, migrations, a sweep of sandboxes older than a run may live,
/// and the run cap sized to PostgreSQL's max_connections.
pub async fn connect_engine(config: &Config) -> Result<Engine, StartupError> {
    let options = PgConnectOptions::from_str(&config.database_url).map_err(StartupError::BadUrl)?;
    // The database named in the URL, or `racelab`: created if missing, and used for everything.
    let name = options.get_database().unwrap_or("racelab").to_owned();
    let options = options.database(&name);
    ensure_database(&options, &config.database_url).await?;
    let pool = PgPoolOptions::new()
        .max_connections(ADMIN_POOL)
        .acquire_timeout(Duration::from_secs(10))
        // READ COMMITTED whatever the database's default: `take_connection_lease` reads the
        // leases after taking its lock, which only sees the others' at this level. (The space is
        // escaped: PostgreSQL splits its startup options on whitespace.)
        .connect_with(
            options
                .clone()
                .application_name("racelab/server")
                .options([("default_transaction_isolation", r"read\ committed")]),
        )
        .await
        .map_err(|source| StartupError::Unreachable {
            url: crate::config::redact(&config.database_url),
            source,
        })?;
    sqlx::migrate!("../migrations").run(&pool).await?;
    let limits = Limits {
        statement_timeout: Duration::from_millis(config.statement_timeout_ms),
        lock_timeout: Duration::from_millis(config.lock_timeout_ms),
        idle_in_transaction_timeout: Duration::from_secs(config.idle_timeout_secs),
        max_duration: Duration::from_secs(config.max_run_secs),
        reader_backlog: config.reader_backlog,
        max_queue: config.max_queue,
        ..Limits::default()
    };
    let services = Services {
        pool: pool.clone(),
        redis: redis::Client::open(config.redis_url.as_str()).map_err(StartupError::BadRedisUrl)?,
        redis_url: config.redis_url.clone(),
        brokers: config.kafka_brokers.clone(),
        unavailable: config.unavailable.clone(),
        probe: Default::default(),
    };
    let swept = sandbox::sweep(&services, limits.sweep_age()).await?;
    if swept > 0 {
        tracing::info!(swept, "removed sandboxes left behind by an earlier crash");
    }
    let capacity = Capacity {
        postgres: match config.run_connections {
            Some(n) => n,
            None => run_capacity(&pool).await?,
        },
        ..Capacity::default()
    };
    let server_version = crate::health::server_version(&pool).await?;
    let actor_binary = match &config.actor_binary {
        Some(path) => path.clone(),
        None => std::env::current_exe().map_err(StartupError::NoBinary)?,
    };
    let actor_options = options.options([
        ("statement_timeout", millis(limits.statement_timeout)),
        ("lock_timeout", millis(limits.lock_timeout)),
        (
            "idle_in_transaction_session_timeout",
            millis(limits.idle_in_transaction_timeout),
        ),
    ]);
    // The run connections are every replica's on this database, not this process's alone.
    let leases = Leases::new(pool.clone(), capacity.postgres, config.keep_sessions);
    let warm = Warm::new(services.clone(), config.warm_sandboxes);
    Ok(Engine {
        store: Store::new(pool),
        reach: Reach {
            options: actor_options,
            settings: Vec::new(),
            services,
            actor_binary,
            database_url: config.database_url.clone(),
        },
        admission: Admission::new(capacity, Some(leases)).playing_at_most(runs_at_once(config)),
        limits,
        server_version,
        live: Default::default(),
        pace: Default::default(),
        warm,
        probes: Default::default(),
        metrics: Default::default(),
    })
}

/// Runs that play by themselves at once: as configured, or 3 per core of this machine (where
/// PostgreSQL usually runs too; measured in docs/performance.md).
fn runs_at_once(config: &Config) -> usize {
    match config.runs_at_once {
        // Past what a semaphore can count, it means "no limit" anyway.
        Some(n) => usize::try_from(n)
            .unwrap_or(usize::MAX)
            .min(tokio::sync::Semaphore::MAX_PERMITS),
        None => 3 * std::thread::available_parallelism().map_or(2, std::num::NonZero::get),
    }
}

/// Connections runs may share: max_connections less the superuser reserve, the server's own
/// pool and a spare few (for psql, monitoring, a second replica's startup).
async fn run_capacity(pool: &PgPool) -> Result<u32, sqlx::Error> {
    let (max, reserved): (String, String) =
        sqlx::query_as("SELECT current_setting('max_connections'), current_setting('superuser_reserved_connections')")
            .fetch_one(pool)
            .await?;
    let max: u32 = max.parse().unwrap_or(100);
    let reserved: u32 = reserved.parse().unwrap_or(3);
    Ok(max.saturating_sub(reserved + ADMIN_POOL + SPARE).max(4))
}

/// Creates the database named in the URL if it does not exist, connecting to `postgres` to do so.
async fn ensure_database(options: &PgConnectOptions, url: &str) -> Result<(), StartupError> {
    let name = options.get_database().unwrap_or("racelab").to_owned();
    match options.connect().await {
        Ok(conn) => {
            let _ = conn.close().await;
            return Ok(());
        }
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("3D000") => {}
        Err(source) => {
            return Err(StartupError::Unreachable {
                url: crate::config::redact(url),
                source,
            });
        }
    }
    let mut admin =
        options
            .clone()
            .database("postgres")
            .connect()
            .await
            .map_err(|source| StartupError::Unreachable {
                url: crate::config::redact(url),
                source,
            })?;
    let create = format!("CREATE DATABASE \"{}\"", name.replace('"', "\"\""));
    match sqlx::raw_sql(&create).execute(&mut admin).await {
        Ok(_) => tracing::info!(database = %name, "created racelab's database"),
        // Another process created it first: 42P04 if it had finished, 23505 (on
        // pg_database_datname_index) if both were creating it at the same moment.
        Err(sqlx::Error::Database(e)) if matches!(e.code().as_deref(), Some("42P04" | "23505")) => {}
        Err(e) => return Err(e.into()),
    }
    let _ = admin.close().await;
    Ok(())
}

fn millis(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}
