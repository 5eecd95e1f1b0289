//! Dependency checks for `/healthz` and the catalog: is each service up right now?
//!
//! Redis and the broker are probed with a plain TCP exchange (a Redis `PING`, a Kafka
//! `ApiVersions` request),
//! so a lab that does not need them never waits on a client library, and a service that is down
//! costs at most the probe's timeout.

use crate::services::Services;
use serde::Serialize;
use shared::Service;
use shared::catalog::RoomsReach;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// How long a probe may take before the service counts as down: long enough that a machine busy
/// with a crowd of runs is not taken for one whose service is gone. Under the random-cut test
/// a Redis `PING` took more than 500 ms (5 Dec), and on 6 Dec, on a slower hour of the same
/// machine kind, both a PostgreSQL probe and a Redis `PING` took more than 2 s (two runs of
/// `tests/cuts.rs` refused a start as "down"). A service that is really gone refuses the
/// connection at once; only a hung one waits this long.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// One dependency's state.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Dependency {
    pub up: bool,
    /// The version, or why it is down.
    pub detail: String,
}

/// Every dependency's state.
#[derive(Clone, Debug, Serialize)]
pub struct Health {
    pub postgres: Dependency,
    pub redis: Dependency,
    pub kafka: Dependency,
}

impl Health {
    /// Whether `service` is up (services racelab runs itself always are).
    pub fn is_up(&self, service: Service) -> bool {
        match service {
            Service::Postgres => self.postgres.up,
            Service::Redis => self.redis.up,
            Service::Kafka => self.kafka.up,
            // Asked when a run needs it (a variant that plays on MariaDB): no lab needs it whole.
            Service::Http | Service::Process | Service::Mariadb => true,
        }
    }
}

/// Rooms travel between replicas through Redis (`web::rooms::bus`): without it, a room's
/// participants must reach the process that holds it.
pub fn rooms_reach(redis: &Dependency) -> RoomsReach {
    if redis.up {
        RoomsReach {
            across_replicas: true,
            detail: "Participants may reach any racelab replica that shares this Redis.".to_owned(),
        }
    } else {
        RoomsReach {
            across_replicas: false,
            detail: format!(
                "Redis is down ({}): a room opened now lives in this racelab process only, and its participants must reach this same process.",
                redis.detail
            ),
        }
    }
}

/// Probes Redis and the broker at once (each PostgreSQL server is asked on its own); a service
/// known to be down (its binary is missing) says why instead of "connection refused".
pub async fn redis_and_broker(services: &Services) -> (Dependency, Dependency) {
    let (redis, kafka) = tokio::join!(redis(&services.redis_url), kafka(&services.brokers));
    (
        explained(services, Service::Redis, redis),
        explained(services, Service::Kafka, kafka),
    )
}

/// `probed` as the reader should read it: a service known to be down (its binary is missing)
/// says why instead of "connection refused".
pub fn explained(services: &Services, service: Service, probed: Dependency) -> Dependency {
    match services.known_down(service) {
        Some(why) if !probed.up => Dependency {
            up: false,
            detail: why.to_owned(),
        },
        _ => probed,
    }
}

/// `PostgreSQL 15.20 (Debian …)`: shown in every run header and in `/healthz`.
pub async fn server_version<'c>(on: impl sqlx::PgExecutor<'c>) -> Result<String, sqlx::Error> {
    sqlx::query_scalar("SELECT 'PostgreSQL ' || current_setting('server_version')")
        .fetch_one(on)
        .await
}

/// The version of the server at `url`, asked as every run header asks it ([`server_version`]),
/// on the maintenance database (racelab's own may not exist before `serve` first starts); none
/// if it does not answer.
pub async fn version_at(url: &str) -> Option<String> {
    use sqlx::Connection as _;
    let options = url
        .parse::<sqlx::postgres::PgConnectOptions>()
        .ok()?
        .database("postgres");
    let connect = sqlx::PgConnection::connect_with(&options);
    let mut connection = timeout(PROBE_TIMEOUT, connect).await.ok()?.ok()?;
    let version = server_version(&mut connection).await.ok();
    let _ = connection.close().await;
    version
}

/// Drops the probes' kept connection to PostgreSQL: the next probe connects anew. After a run
/// lost its connection because the server is stopping, the kept session may not have been told
/// yet (the server signals its sessions one by one) and would answer once more; a new
/// connection is refused as soon as the stop begins.
pub async fn forget_kept_connection(services: &Services) {
    services.probe.lock().await.take();
}

/// Probes PostgreSQL (its version) on racelab's probe session. A session lost since the last
/// probe (PostgreSQL restarted) is replaced and asked again, so a server that is back is seen up.
pub async fn postgres(services: &Services) -> Dependency {
    let asked = async {
        let mut probe = services.probe.lock().await;
        if let Some(conn) = probe.as_mut()
            && let Ok(version) = server_version(&mut *conn).await
        {
            return Ok(version);
        }
        *probe = None;
        let options = services.pool.connect_options().as_ref().clone();
        let conn = probe.insert(sqlx::ConnectOptions::connect(&options.application_name("racelab/probe")).await?);
        let version = server_version(&mut *conn).await;
        if version.is_err() {
            *probe = None;
        }
        version
    };
    version_within_the_probe_time(asked).await
}

/// A server asked its version (`asked`), as a dependency: up with the version it gave, or down
/// with why, or with "no answer in time" past [`PROBE_TIMEOUT`].
async fn version_within_the_probe_time(asked: impl Future<Output = Result<String, sqlx::Error>>) -> Dependency {
    match timeout(PROBE_TIMEOUT, asked).await {
        Ok(Ok(version)) => Dependency {
            up: true,
            detail: version,
        },
        Ok(Err(error)) => Dependency {
            up: false,
            detail: error.to_string(),
        },
        Err(_) => Dependency {
            up: false,
            detail: "no answer in time".into(),
        },
    }
}

/// Probes MariaDB at `url`: a session of its own, asked its version. No lab needs it yet, so it
/// counts toward no status (docs/mariadb.md).
pub async fn mariadb(url: &str) -> Dependency {
    let asked = async {
        use sqlx::Connection;
        let mut conn = sqlx::mysql::MySqlConnection::connect(url).await?;
        let version: String = sqlx::query_scalar("SELECT VERSION()").fetch_one(&mut conn).await?;
        let _ = conn.close().await;
        Ok::<_, sqlx::Error>(mariadb_version(&version))
    };
    version_within_the_probe_time(asked).await
}

/// `MariaDB 10.11.19` from `10.11.19-MariaDB-0+deb12u1`, as `SELECT VERSION()` says it (a MySQL
/// server says only its number: `MySQL 8.4.3`).
pub fn mariadb_version(version: &str) -> String {
    let number = version.split('-').next().unwrap_or(version);
    let name = if version.contains("MariaDB") {
        "MariaDB"
    } else {
        "MySQL"
    };
    format!("{name} {number}")
}

/// Probes Redis at `url` with a plain `PING`.
pub async fn redis(url: &str) -> Dependency {
    let address = host_port(url, 6379);
    let probe = async {
        let mut stream = TcpStream::connect(&address).await?;
        stream.write_all(b"PING\r\n").await?;
        let mut reply = [0u8; 64];
        let n = stream.read(&mut reply).await?;
        Ok::<String, std::io::Error>(String::from_utf8_lossy(&reply[..n]).trim().to_owned())
    };
    match timeout(PROBE_TIMEOUT, probe).await {
        // `-NOAUTH` still means a Redis is listening; the lab's client will authenticate.
        Ok(Ok(reply)) if reply == "+PONG" || reply.starts_with("-NOAUTH") => Dependency {
            up: true,
            detail: format!("Redis at {address}"),
        },
        Ok(Ok(reply)) => Dependency {
            up: false,
            detail: format!("{address} answered {reply:?} to PING"),
        },
        Ok(Err(error)) => Dependency {
            up: false,
            detail: format!("{address}: {error}"),
        },
        Err(_) => Dependency {
            up: false,
            detail: format!("{address}: no answer in time"),
        },
    }
}

/// The version Redis reports (`INFO server`'s `redis_version`), as `Redis 7.0.15`; none if it
/// does not answer within the probe's time.
pub async fn redis_version(client: &::redis::Client) -> Option<String> {
    let ask = async {
        let mut connection = client.get_multiplexed_async_connection().await.ok()?;
        let info: String = ::redis::cmd("INFO")
            .arg("server")
            .query_async(&mut connection)
            .await
            .ok()?;
        info.lines()
            .find_map(|line| line.strip_prefix("redis_version:"))
            .map(|version| format!("Redis {}", version.trim()))
    };
    timeout(PROBE_TIMEOUT, ask).await.ok().flatten()
}

/// Each `host:port` of a comma-separated list of brokers (`KAFKA_BROKERS`), blanks left out.
fn each_broker(brokers: &str) -> impl Iterator<Item = &str> {
    brokers.split(',').map(str::trim).filter(|b| !b.is_empty())
}

/// What the first broker that answers speaks, as a recording's stamp names it (`Kafka protocol
/// Produce v9/Fetch v13`: [`crate::services::kafka_wire::protocol_named`]); none if none
/// answers within the probe's time.
pub async fn broker_version(brokers: &str) -> Option<String> {
    for broker in each_broker(brokers) {
        if let Ok(Ok(apis)) = timeout(PROBE_TIMEOUT, crate::services::kafka_wire::api_versions(broker)).await {
            return crate::services::kafka_wire::protocol_named(&apis);
        }
    }
    None
}

/// Probes the brokers with a request (`ApiVersions`): a broker that is stopped (`SIGSTOP`),
/// wedged or paused still completes a TCP handshake (the kernel accepts it), so a connect alone
/// would call it up.
pub async fn kafka(brokers: &str) -> Dependency {
    let mut reasons = Vec::new();
    for broker in each_broker(brokers) {
        match timeout(PROBE_TIMEOUT, crate::services::kafka_wire::answers(broker)).await {
            Ok(Ok(())) => {
                return Dependency {
                    up: true,
                    detail: format!("broker at {broker}"),
                };
            }
            Ok(Err(error)) => reasons.push(format!("{broker}: {error}")),
            Err(_) => reasons.push(format!("{broker}: no answer in time")),
        }
    }
    Dependency {
        up: false,
        detail: if reasons.is_empty() {
            "no brokers configured".into()
        } else {
            reasons.join("; ")
        },
    }
}

/// `redis://user:pw@host:6380/0` → `host:6380`; a missing port gets `default_port`.
pub fn host_port(url: &str, default_port: u16) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let host = rest.split('/').next().unwrap_or(rest);
    if host
        .rsplit_once(':')
        .is_some_and(|(_, port)| port.parse::<u16>().is_ok())
    {
        host.to_owned()
    } else {
        format!("{host}:{default_port}")
    }
}

#[cfg(test)]
mod tests {
    use super::{Dependency, host_port, mariadb_version, rooms_reach};

    #[test]
    fn rooms_reach_other_replicas_only_through_redis() {
        let up = Dependency {
            up: true,
            detail: "Redis 7.0.15".into(),
        };
        assert!(rooms_reach(&up).across_replicas);
        let down = Dependency {
            up: false,
            detail: "connection refused".into(),
        };
        let reach = rooms_reach(&down);
        assert!(!reach.across_replicas);
        assert!(
            reach.detail.contains("this racelab process only") && reach.detail.contains("connection refused"),
            "{}",
            reach.detail
        );
    }

    #[test]
    fn a_version_says_which_server_it_is() {
        assert_eq!(mariadb_version("10.11.19-MariaDB-0+deb12u1"), "MariaDB 10.11.19");
        assert_eq!(mariadb_version("11.8.2-MariaDB"), "MariaDB 11.8.2");
        assert_eq!(mariadb_version("8.4.3"), "MySQL 8.4.3");
    }

    #[tokio::test]
    async fn a_mariadb_that_does_not_answer_is_down_with_why() {
        let down = super::mariadb("mysql://root@127.0.0.1:9").await;
        assert!(!down.up);
        assert!(!down.detail.is_empty());
    }

    #[test]
    fn redis_urls_become_addresses() {
        assert_eq!(host_port("redis://127.0.0.1:6379", 6379), "127.0.0.1:6379");
        assert_eq!(host_port("redis://:secret@cache:6380/2", 6379), "cache:6380");
        assert_eq!(host_port("redis://cache", 6379), "cache:6379");
    }

    #[tokio::test]
    async fn a_closed_port_is_down_with_a_reason() {
        // Port 1 on loopback is never a broker here.
        let dep = super::kafka("127.0.0.1:1").await;
        assert!(!dep.up);
        assert!(dep.detail.contains("127.0.0.1:1"), "{}", dep.detail);
    }
}
