//! Configuration from the environment, with defaults that work against local services.

use shared::Service;
use std::path::PathBuf;

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/racelab";
pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379";
pub const DEFAULT_BROKERS: &str = "127.0.0.1:9092";
/// MariaDB (`MARIADB_URL`, docs/mariadb.md).
pub const DEFAULT_MARIADB_URL: &str = "mysql://root@127.0.0.1:3306";

/// Where racelab finds its services and files.
#[derive(Clone, Debug, clap::Args)]
pub struct Config {
    /// racelab's database; created on first start if missing. Runs play in schemas inside it.
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL)]
    pub database_url: String,
    /// More PostgreSQL servers runs play on besides DATABASE_URL's (comma-separated URLs): of
    /// other versions, for readers to pick ("play this on 18"), or of the same, to share the
    /// load. Each gets a racelab database of its own for its sandboxes' registry and leases.
    #[arg(long = "servers", env = "RACELAB_SERVERS", value_delimiter = ',')]
    pub servers: Vec<String>,
    /// The PostgreSQL version runs play on unless a reader picks another (a major version:
    /// `18`); by default DATABASE_URL's. Where no server of it is configured, racelab starts a
    /// private one from its installation (`/usr/lib/postgresql/18/bin`, or
    /// `.tools/postgres-18/bin`, which `scripts/postgres.sh install` makes).
    #[arg(long, env = "RACELAB_POSTGRES")]
    pub postgres: Option<u32>,
    /// PostgreSQL installations (their `bin` directories, comma-separated) to start a private
    /// server from each, beside the others: `.tools/postgres-18/bin` is PostgreSQL 18.6, the
    /// tutorials' version (`scripts/postgres.sh install`). Stopped and removed on exit.
    #[arg(long, env = "RACELAB_PRIVATE_POSTGRES", value_delimiter = ',')]
    pub private_postgres: Vec<PathBuf>,
    /// Redis, for the locks lab.
    #[arg(long, env = "REDIS_URL", default_value = DEFAULT_REDIS_URL)]
    pub redis_url: String,
    /// MariaDB (an account that may create databases and users, and grant), where the
    /// isolation lab's `mariadb-…` variants play, each run in a database of its own
    /// (docs/mariadb.md).
    #[arg(long, env = "MARIADB_URL", default_value = DEFAULT_MARIADB_URL)]
    pub mariadb_url: String,
    /// Kafka-compatible brokers (comma-separated host:port), for the outbox lab.
    #[arg(long, env = "KAFKA_BROKERS", default_value = DEFAULT_BROKERS)]
    pub kafka_brokers: String,
    /// How many PostgreSQL connections runs may hold at once, all racelab replicas on the same
    /// database together (they share it through a table of leases); by default sized from the
    /// server's max_connections.
    #[arg(long, env = "RACELAB_RUN_CONNECTIONS")]
    pub run_connections: Option<u32>,
    /// How many runs may play by themselves at once (runs played step by step wait for their
    /// readers and are not counted); the others wait in line. Past a few per core, runs only
    /// slow each other down (docs/performance.md). By default 3 per core of this machine.
    #[arg(long, env = "RACELAB_RUNS_AT_ONCE", value_parser = clap::value_parser!(u64).range(1..))]
    pub runs_at_once: Option<u64>,
    /// The `racelab` binary that child-process actors are started from; by default this very
    /// program.
    #[arg(long, env = "RACELAB_ACTOR_BINARY")]
    pub actor_binary: Option<PathBuf>,
    /// How many messages a reader may leave unread before its run is cancelled and it is told
    /// it fell behind (the longest run sends about 220).
    #[arg(long, env = "RACELAB_READER_BACKLOG", default_value_t = 1_024)]
    pub reader_backlog: usize,
    /// How many runs may wait in line at once; past it a start is refused with "busy, try
    /// again in N s" instead of waiting silently.
    #[arg(long, env = "RACELAB_MAX_QUEUE", default_value_t = 2_000)]
    pub max_queue: usize,
    /// The longest a run may last, step mode included; then it fails ("took too long") and its
    /// sandbox is cleaned.
    #[arg(long, env = "RACELAB_MAX_RUN_SECS", default_value_t = 900, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_run_secs: u64,
    /// How long one statement of a run may take (PostgreSQL's `statement_timeout`).
    #[arg(long, env = "RACELAB_STATEMENT_TIMEOUT_MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub statement_timeout_ms: u64,
    /// How long a statement of a run may wait for a lock (PostgreSQL's `lock_timeout`), outside
    /// step mode.
    #[arg(long, env = "RACELAB_LOCK_TIMEOUT_MS", default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub lock_timeout_ms: u64,
    /// How long a run's transaction may sit idle (`idle_in_transaction_session_timeout`); in step
    /// mode also how long a statement may wait, since a reader may think between two steps.
    #[arg(long, env = "RACELAB_IDLE_TIMEOUT_SECS", default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_timeout_secs: u64,
    /// Sandboxes to keep made ahead of demand, per lab readers play (0: each run makes its own
    /// when it starts).
    #[arg(long, env = "RACELAB_WARM_SANDBOXES", default_value_t = 2)]
    pub warm_sandboxes: usize,
    /// Keep a finished run's PostgreSQL sessions, reset, for the next run (`engine::kept`)
    /// instead of closing them (false: every run connects its own).
    #[arg(long, env = "RACELAB_KEEP_SESSIONS", default_value_t = true, action = clap::ArgAction::Set)]
    pub keep_sessions: bool,
    /// Runs one reader's address may have going at once, playing or waiting in line.
    #[arg(long, env = "RACELAB_RUNS_PER_CLIENT", default_value_t = 4)]
    pub runs_per_client: usize,
    /// Runs one reader's address may start in any 60 s.
    #[arg(long, env = "RACELAB_STARTS_PER_MINUTE", default_value_t = 30)]
    pub starts_per_minute: usize,
    /// Proxies whose `X-Forwarded-For` names the reader (comma-separated addresses); anyone
    /// else's header is ignored.
    #[arg(long, env = "RACELAB_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<std::net::IpAddr>,
    /// Pages of other sites allowed to open racelab's websocket (comma-separated origins like
    /// `https://blog.example`, or `*`). racelab's own pages and its embeds always are, and so
    /// are clients that send no Origin (the CLI, scripts).
    #[arg(long, env = "RACELAB_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origins: Vec<String>,
    /// Participants one training room may have (its trainer not counted).
    #[arg(long, env = "RACELAB_ROOM_PARTICIPANTS", default_value_t = 200)]
    pub room_participants: usize,
    /// Rooms one trainer's address may have open at once.
    #[arg(long, env = "RACELAB_ROOMS_PER_TRAINER", default_value_t = 5)]
    pub rooms_per_trainer: usize,
    /// Seconds a room may go without an order, a join or a run before it closes (4 hours).
    #[arg(long, env = "RACELAB_ROOM_IDLE_SECS", default_value_t = 4 * 60 * 60)]
    pub room_idle_secs: u64,
    /// Days a lesson session's results (handles and their answers) are kept before they are
    /// deleted.
    #[arg(long, env = "RACELAB_RESULTS_DAYS", default_value_t = 30)]
    pub results_days: u32,
    /// Seconds a room's run may go on with no page following the room before it is cancelled.
    #[arg(long, env = "RACELAB_ROOM_ABANDONED_SECS", default_value_t = 60)]
    pub room_abandoned_secs: u64,
    /// Start private PostgreSQL, Redis and broker processes even when system ones run (without
    /// it, only for a service that is not configured and does not answer at its default address).
    #[arg(long)]
    pub embedded: bool,
    /// Services known to be down before any probe, and why (a private one that could not start).
    #[arg(skip)]
    pub unavailable: Vec<(Service, String)>,
}

impl Config {
    /// Every PostgreSQL server's URL: DATABASE_URL's first.
    pub fn server_urls(&self) -> impl Iterator<Item = &str> {
        // An empty entry (`RACELAB_SERVERS=""` in a manifest) names no server.
        let more = self.servers.iter().map(|u| u.trim()).filter(|u| !u.is_empty());
        std::iter::once(self.database_url.as_str()).chain(more)
    }

    /// The URL of the first server of the version runs play on (`--postgres`, else
    /// DATABASE_URL's): where a spec, the atlas and a proof play, outside the engine.
    pub async fn url_of_version(&self) -> Result<String, shared::versions::NoSuchVersion> {
        let Some(wanted) = self.postgres else {
            return Ok(self.database_url.clone());
        };
        let mut have = Vec::new();
        for url in self.server_urls() {
            let major = crate::health::version_at(url)
                .await
                .and_then(|v| shared::versions::major_of(&v));
            if major == Some(wanted) {
                return Ok(url.to_owned());
            }
            have.extend(major.filter(|m| !have.contains(m)));
        }
        Err(shared::versions::NoSuchVersion { asked: wanted, have })
    }

    /// The configuration `racelab` itself would read here (its environment, else the defaults),
    /// for programs that drive the engine directly: tests and benchmarks.
    pub fn from_env() -> Result<Config, clap::Error> {
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            config: Config,
        }
        <Only as clap::Parser>::try_parse_from(["racelab"]).map(|only| only.config)
    }

    /// Records that `service` is down for a reason a probe could not tell (its binary is missing).
    pub fn down(&mut self, service: Service, why: String) {
        self.unavailable.push((service, why));
    }
}

/// Options of `racelab serve`.
#[derive(Clone, Debug, clap::Args)]
pub struct ServeConfig {
    #[arg(long, env = "PORT", default_value_t = 8080)]
    pub port: u16,
    /// Address to listen on (`--listen` too). Every interface by default, as a container
    /// needs; `cargo xtask play` passes 127.0.0.1 unless told otherwise.
    #[arg(long, visible_alias = "listen", env = "RACELAB_BIND", default_value = "0.0.0.0")]
    pub bind: String,
    /// The built browser app (`trunk build` writes it here).
    #[arg(long, env = "RACELAB_DIST", default_value = "dist")]
    pub dist: PathBuf,
}

/// The URL without its password, for error messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{}{user}@{}", &url[..scheme + 3], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(redact("postgres://app:secret@db:5432/x"), "postgres://app@db:5432/x");
        assert_eq!(
            redact("postgres://postgres@127.0.0.1/racelab"),
            "postgres://postgres@127.0.0.1/racelab"
        );
    }
}
