//! Connecting to racelab's own database: create it if missing, migrate it, sweep old sandboxes.

mod migrations;

use crate::config::Config;
use crate::engine::leases::Leases;
use crate::engine::run::Reach;
use crate::engine::servers::{Connect, JOIN_TIMEOUT, Joining, Server, Servers, Waiting, named_twice};
use crate::engine::warm::Warm;
use crate::engine::{Admission, Capacity, Engine, Limits};
use crate::sandbox::{self, Services};
use crate::store::Store;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;

/// Why the engine could not start.
#[derive(Debug, Error)]
pub enum StartupError {
    #[error("DATABASE_URL is not a PostgreSQL URL: {0}")]
    BadUrl(sqlx::Error),
    #[error("cannot reach PostgreSQL at {url}: {source}")]
    Unreachable { url: String, source: sqlx::Error },
    #[error("PostgreSQL at {url} did not answer in {} s", after.as_secs())]
    NoAnswer { url: String, after: Duration },
    #[error("cannot migrate racelab's tables: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("REDIS_URL is not a Redis URL: {0}")]
    BadRedisUrl(redis::RedisError),
    #[error("cannot find racelab's own binary for child-process actors: {0}")]
    NoBinary(std::io::Error),
    #[error(transparent)]
    NoVersion(#[from] crate::engine::servers::NoSuchVersion),
    #[error("cannot sweep old sandboxes: {0}")]
    Sweep(#[from] sandbox::SandboxError),
}

/// Connections the server keeps for itself (its pool) and leaves spare, out of max_connections.
const ADMIN_POOL: u32 = 5;
const SPARE: u32 = 5;

/// Connects the engine: every server's database (created and migrated if missing), a sweep of
/// sandboxes older than a run may live, and each server's run budget sized to its
/// max_connections. The first server must answer (racelab's store is in its database); another
/// that does not answer waits outside the rotation and joins when it does
/// ([`crate::engine::servers`]).
pub async fn connect_engine(config: &Config) -> Result<Engine, StartupError> {
    let limits = limits_of(config);
    let actor_binary = match &config.actor_binary {
        Some(path) => path.clone(),
        None => std::env::current_exe().map_err(StartupError::NoBinary)?,
    };
    let redis = redis::Client::open(config.redis_url.as_str()).map_err(StartupError::BadRedisUrl)?;
    let urls: Vec<&str> = config.server_urls().collect();
    let connected = connect_servers(&urls, config, &limits, (&redis, &actor_binary)).await;
    let mut servers = Vec::new();
    let mut waiting = Vec::new();
    let mut slots = Vec::new();
    for (place, (url, connected)) in urls.iter().zip(connected).enumerate() {
        let (server, budget, leases) = match connected {
            Ok(joining) => joining,
            Err(error @ (StartupError::Unreachable { .. } | StartupError::NoAnswer { .. })) if place > 0 => {
                let name = crate::health::host_port(url, 5432);
                tracing::warn!(server = %name, "{error}; runs play on the other servers, and on this one once it answers");
                waiting.push(Waiting {
                    url: (*url).to_owned(),
                    name,
                    why: error.to_string(),
                });
                continue;
            }
            Err(error) => return Err(error),
        };
        if named_twice(&servers, &server) {
            continue;
        }
        tracing::info!(server = %server.name, version = %server.version, connections = budget, "runs play here");
        servers.push(Arc::new(server));
        slots.push((budget, Some(leases)));
    }
    if let Some(asked) = config.postgres
        && let Err(missing) = crate::engine::servers::of_major(&servers, Some(asked))
    {
        // The version asked for may be a waiting server's.
        if waiting.is_empty() {
            return Err(missing.into());
        }
        tracing::warn!("{missing}: runs on PostgreSQL {asked} wait for a server that has not answered yet");
    }
    sweep_mariadb(config.mariadb_url.clone(), limits.sweep_age());
    let store = Store::new(servers[0].reach.services.pool.clone());
    let connect = (!waiting.is_empty()).then(|| joining_later(config, &limits, &redis, &actor_binary));
    Ok(Engine {
        default_postgres: config.postgres,
        servers: Servers::new(servers, waiting, connect),
        store,
        admission: Admission::on_servers(slots, Capacity::default()).playing_at_most(runs_at_once(config)),
        limits,
        live: Default::default(),
        pace: Default::default(),
        probes: Default::default(),
        metrics: Default::default(),
        mariadb_version: Default::default(),
        mariadb_shelf: crate::engine::mariadb::Shelf::new(config.mariadb_url.clone(), config.warm_sandboxes),
    })
}

/// Removes, on its own task, the MariaDB sandboxes an earlier crash left (older than any run
/// lasts): racelab starts whether MariaDB answers or not, and only its MariaDB variants wait
/// for it.
fn sweep_mariadb(url: String, older_than: Duration) {
    tokio::spawn(async move {
        match crate::sandbox::mariadb::sweep(&url, older_than).await {
            Ok(0) => {}
            Ok(swept) => tracing::info!(swept, "removed MariaDB sandboxes left behind by an earlier crash"),
            Err(error) => tracing::debug!(%error, "MariaDB was not swept"),
        }
    });
}

/// The limits every run is held to, as configured.
fn limits_of(config: &Config) -> Limits {
    Limits {
        statement_timeout: Duration::from_millis(config.statement_timeout_ms),
        lock_timeout: Duration::from_millis(config.lock_timeout_ms),
        idle_in_transaction_timeout: Duration::from_secs(config.idle_timeout_secs),
        max_duration: Duration::from_secs(config.max_run_secs),
        reader_backlog: config.reader_backlog,
        max_queue: config.max_queue,
        ..Limits::default()
    }
}

/// Connects every server at `urls` at once, each answer in the servers' order. The home server
/// may take as long as it takes; another that does not answer within [`JOIN_TIMEOUT`] is
/// [`StartupError::NoAnswer`], and joins later.
async fn connect_servers(
    urls: &[&str],
    config: &Config,
    limits: &Limits,
    (redis, actor_binary): (&redis::Client, &std::path::Path),
) -> Vec<Result<(Server, u32, Arc<Leases>), StartupError>> {
    futures_util::future::join_all(urls.iter().enumerate().map(|(place, url)| {
        let connecting = connect_server(url, config, limits, (redis, actor_binary));
        async move {
            match place {
                // The home server: racelab cannot start without it, however long it takes.
                0 => connecting.await,
                _ => tokio::time::timeout(JOIN_TIMEOUT, connecting)
                    .await
                    .unwrap_or_else(|_| {
                        Err(StartupError::NoAnswer {
                            url: crate::config::redact(url),
                            after: JOIN_TIMEOUT,
                        })
                    }),
            }
        }
    }))
    .await
}

/// How a server down when racelab started is reached when it answers: as at the start.
fn joining_later(config: &Config, limits: &Limits, redis: &redis::Client, actor_binary: &std::path::Path) -> Connect {
    let (config, limits, redis, actor_binary) = (
        config.clone(),
        limits.clone(),
        redis.clone(),
        actor_binary.to_path_buf(),
    );
    Box::new(move |url: String| {
        Box::pin(join_server(
            url,
            config.clone(),
            limits.clone(),
            redis.clone(),
            actor_binary.clone(),
        ))
    })
}

/// [`connect_server`] on values it owns: a future that is `Send` for the task that joins it
/// (over borrowed ones, sqlx's executors make the compiler ask for every lifetime at once).
async fn join_server(
    url: String,
    config: Config,
    limits: Limits,
    redis: redis::Client,
    actor_binary: std::path::PathBuf,
) -> Result<Joining, String> {
    connect_server(&url, &config, &limits, (&redis, &actor_binary))
        .await
        .map(|(server, budget, leases)| Joining { server, budget, leases })
        .map_err(|error| error.to_string())
}

/// Connects one server at `url`: its racelab database, migrated and swept; how runs reach it;
/// its run budget and the leases replicas share it through.
async fn connect_server(
    url: &str,
    config: &Config,
    limits: &Limits,
    (redis, actor_binary): (&redis::Client, &std::path::Path),
) -> Result<(Server, u32, Arc<Leases>), StartupError> {
    let options = PgConnectOptions::from_str(url).map_err(StartupError::BadUrl)?;
    // The database named in the URL, or `racelab`: created if missing, and used for everything.
    let name = options.get_database().unwrap_or("racelab").to_owned();
    let options = options.database(&name);
    ensure_database(&options, url).await?;
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
            url: crate::config::redact(url),
            source,
        })?;
    migrations::migrator().run(&pool).await?;
    let services = Services {
        pool: pool.clone(),
        redis: redis.clone(),
        redis_url: config.redis_url.clone(),
        brokers: config.kafka_brokers.clone(),
        mariadb_url: config.mariadb_url.clone(),
        unavailable: config.unavailable.clone(),
        probe: Default::default(),
    };
    let swept = sandbox::sweep(&services, limits.sweep_age()).await?;
    let server_name = crate::health::host_port(url, 5432);
    if swept > 0 {
        tracing::info!(swept, server = %server_name, "removed sandboxes left behind by an earlier crash");
    }
    let budget = match config.run_connections {
        Some(n) => n,
        None => run_capacity(&pool).await?,
    };
    let version = crate::health::server_version(&pool).await?;
    let actor_options = options.options([
        ("statement_timeout", millis(limits.statement_timeout)),
        ("lock_timeout", millis(limits.lock_timeout)),
        (
            "idle_in_transaction_session_timeout",
            millis(limits.idle_in_transaction_timeout),
        ),
    ]);
    // The run connections are every replica's on this server, not this process's alone.
    let leases = Leases::new(pool, budget, config.keep_sessions);
    let warm = Warm::new(services.clone(), config.warm_sandboxes, runs_at_once(config));
    let reach = Reach {
        options: actor_options,
        settings: Vec::new(),
        services,
        actor_binary: actor_binary.to_path_buf(),
        database_url: url.to_owned(),
        // The engine's one shelf, given to each run that may take from it.
        mariadb_shelf: None,
        mariadb_sessions: 0,
    };
    Ok((Server::new(server_name, version, reach, warm), budget, leases))
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
    // Through the executor's own (boxed) future: `raw_sql(…).execute(&mut admin)` makes this
    // future not provably `Send`, which the task that joins a server later needs.
    match sqlx::Executor::execute(&mut admin, create.as_str()).await {
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
