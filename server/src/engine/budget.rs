//! Budgets: what a run *holds* in each shared service, as opposed to how many lanes it shows.
//!
//! Fifty Redis actors are fifty lanes, fifty Redis connections and one PostgreSQL session (the
//! monitor); an HTTP API with a pool of five is one lane and five PostgreSQL connections; a relay
//! in a child process is one lane, one child process, one PostgreSQL session and one broker
//! client. Admission counts budgets, never lanes.

use shared::Service;

/// What one run of a variant holds at most, per service. The run's monitor session is not
/// counted in `postgres`: every run has exactly one, and [`Budget::sessions`] adds it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    /// PostgreSQL connections: actors, the pools of servers the run starts, child processes'
    /// sessions.
    pub postgres: u32,
    /// Redis connections.
    pub redis: u32,
    /// Broker clients (producers, consumers, admin probes).
    pub broker: u32,
    /// Child processes alive at once.
    pub processes: u32,
    /// MariaDB sessions (actors and the run's own reader of its ledger; racelab's two
    /// connections per sandbox are not counted).
    pub mariadb: u32,
    /// A service the run needs to itself (one that pauses Redis must not stall other readers'
    /// runs): it is admitted only when no other run holds any of it, and holds all of it.
    pub exclusive: Option<Service>,
}

impl Budget {
    /// `n` PostgreSQL connections and nothing else.
    pub const fn postgres(n: u32) -> Budget {
        Budget {
            postgres: n,
            redis: 0,
            broker: 0,
            processes: 0,
            mariadb: 0,
            exclusive: None,
        }
    }

    /// Adds `n` MariaDB sessions.
    pub const fn and_mariadb(self, n: u32) -> Budget {
        Budget {
            mariadb: self.mariadb + n,
            ..self
        }
    }

    /// Adds `n` Redis connections.
    pub const fn and_redis(self, n: u32) -> Budget {
        Budget {
            redis: self.redis + n,
            ..self
        }
    }

    /// Adds `n` broker clients.
    pub const fn and_broker(self, n: u32) -> Budget {
        Budget {
            broker: self.broker + n,
            ..self
        }
    }

    /// Adds `n` child processes.
    pub const fn and_processes(self, n: u32) -> Budget {
        Budget {
            processes: self.processes + n,
            ..self
        }
    }

    /// Asks for `service` to itself.
    pub const fn exclusive(self, service: Service) -> Budget {
        Budget {
            exclusive: Some(service),
            ..self
        }
    }

    /// PostgreSQL sessions a run of this budget holds at most: its own, and its monitor.
    pub const fn sessions(&self) -> u32 {
        self.postgres + 1
    }

    /// How many of `service` this budget holds.
    pub fn of(&self, service: Service) -> u32 {
        pick(
            service,
            [self.postgres, self.redis, self.broker, self.processes, self.mariadb],
        )
    }

    /// The shared services this budget touches (what must be up for the run to start).
    pub fn services(&self) -> Vec<Service> {
        // Every run holds one PostgreSQL session (its monitor), but a run on MariaDB plays
        // nothing there: it is not one of the services that run needs.
        let mut services = Vec::new();
        if self.postgres > 0 || self.mariadb == 0 {
            services.push(Service::Postgres);
        }
        if self.redis > 0 || self.exclusive == Some(Service::Redis) {
            services.push(Service::Redis);
        }
        if self.broker > 0 || self.exclusive == Some(Service::Kafka) {
            services.push(Service::Kafka);
        }
        if self.mariadb > 0 {
            services.push(Service::Mariadb);
        }
        services
    }
}

/// How much of each service all runs together may hold: the admission's pools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capacity {
    pub postgres: u32,
    pub redis: u32,
    pub broker: u32,
    pub processes: u32,
    pub mariadb: u32,
}

impl Default for Capacity {
    /// PostgreSQL is sized from the server at startup; the others are generous for one machine:
    /// Redis allows 10,000 clients by default, a broker a few hundred, and every child process
    /// is a whole `racelab` binary; MariaDB allows 151 connections by default, and each run
    /// also holds two of racelab's own.
    fn default() -> Self {
        Capacity {
            postgres: 90,
            redis: 1_000,
            broker: 100,
            processes: 16,
            mariadb: 48,
        }
    }
}

impl Capacity {
    /// The pool of `service`.
    pub fn of(&self, service: Service) -> u32 {
        pick(
            service,
            [self.postgres, self.redis, self.broker, self.processes, self.mariadb],
        )
    }
}

/// The count of `service` among `[postgres, redis, broker, processes, mariadb]` (HTTP servers
/// are the run's own and cost nothing shared).
fn pick(service: Service, [postgres, redis, broker, processes, mariadb]: [u32; 5]) -> u32 {
    match service {
        Service::Mariadb => mariadb,
        Service::Postgres => postgres,
        Service::Redis => redis,
        Service::Kafka => broker,
        Service::Process => processes,
        Service::Http => 0,
    }
}

/// The services admission pools, in the one order every run takes them (so two runs can never
/// each hold what the other waits for).
pub const POOLED: [Service; 5] = [
    Service::Postgres,
    Service::Redis,
    Service::Kafka,
    Service::Process,
    Service::Mariadb,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_names_the_services_it_needs() {
        let locks = Budget::postgres(0).and_redis(50);
        assert_eq!(locks.services(), vec![Service::Postgres, Service::Redis]);
        assert_eq!(locks.of(Service::Postgres), 0);
        assert_eq!(locks.of(Service::Redis), 50);
        let outbox = Budget::postgres(3).and_broker(2).and_processes(2);
        assert_eq!(outbox.services(), vec![Service::Postgres, Service::Kafka]);
        assert_eq!(outbox.of(Service::Process), 2);
        // A race on MariaDB holds only the run's monitor on PostgreSQL: MariaDB is what it needs.
        let on_mariadb = Budget::postgres(0).and_mariadb(3);
        assert_eq!(on_mariadb.services(), vec![Service::Mariadb]);
        assert_eq!(on_mariadb.of(Service::Mariadb), 3);
        assert_eq!(on_mariadb.sessions(), 1);
    }
}
