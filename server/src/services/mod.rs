//! The services racelab plays on (PostgreSQL, Redis, a Kafka-compatible broker), at the bottom of
//! the layers: where they are and racelab's own handles on them ([`Services`]), and the one wire
//! conversation the broker's clients do not offer ([`kafka_wire`]). Everything above is handed a
//! `Services`; asking whether one is up is `crate::health`'s, one probe per service.

pub mod kafka_wire;

use sqlx::PgPool;

/// Where the shared services are, for creating and removing namespaces.
#[derive(Clone)]
pub struct Services {
    /// racelab's own pool (sandbox DDL, the registry).
    pub pool: PgPool,
    pub redis: ::redis::Client,
    /// Where `redis` points, for health probes and messages.
    pub redis_url: String,
    /// `host:port[,host:port…]`.
    pub brokers: String,
    /// Where MariaDB is (`MARIADB_URL`): an account that may create databases and users.
    pub mariadb_url: String,
    /// Services known to be down, and why (see [`crate::config::Config::down`]).
    pub unavailable: Vec<(shared::Service, String)>,
    /// racelab's own session for asking whether PostgreSQL answers (`health::postgres`): under
    /// load every connection of `pool` may be busy for seconds (a DROP waiting for its locks),
    /// which says nothing about PostgreSQL itself.
    pub probe: std::sync::Arc<tokio::sync::Mutex<Option<sqlx::postgres::PgConnection>>>,
}

impl Services {
    /// Why `service` is known to be down without probing it, if it is.
    pub fn known_down(&self, service: shared::Service) -> Option<&str> {
        self.unavailable
            .iter()
            .find(|(s, _)| *s == service)
            .map(|(_, why)| why.as_str())
    }
}
