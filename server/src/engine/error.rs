//! Errors inside a run. A database error is data to show (a 40001 is the lesson, not a crash);
//! an engine error ends the run with a clear message.

use thiserror::Error;

/// SQLSTATE of a serialization failure.
pub const SERIALIZATION_FAILURE: &str = "40001";
/// SQLSTATE of a detected deadlock.
pub const DEADLOCK_DETECTED: &str = "40P01";

/// An error PostgreSQL returned for a statement.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("SQLSTATE {sqlstate}: {message}")]
pub struct DbError {
    pub sqlstate: String,
    /// The primary message, without DETAIL or HINT (that is what the tutorials print).
    pub message: String,
}

impl DbError {
    /// 40001 and 40P01: the errors a whole-transaction retry is meant for.
    pub fn is_retryable(&self) -> bool {
        self.sqlstate == SERIALIZATION_FAILURE || self.sqlstate == DEADLOCK_DETECTED
    }
}

/// Why a step did not produce a result.
#[derive(Debug, Error)]
pub enum StepError {
    /// The database refused the statement.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The actor's connection to `service` is gone (terminated, network, cancelled run).
    #[error("{actor}'s {} connection was lost: {reason}", service.label())]
    Lost {
        actor: String,
        service: shared::Service,
        reason: String,
    },
    /// The result did not have the shape the scenario expects (a bug in a scenario).
    #[error("unexpected result: {0}")]
    Shape(String),
    /// Redis answered with an error (`ERR unknown command 'delex'`): data to show, like a
    /// SQLSTATE.
    #[error("{message}")]
    Redis { code: String, message: String },
    /// No answer within the caller's own deadline; the service may still be working on it.
    #[error("{actor} got no answer within {after_ms} ms")]
    Timeout { actor: String, after_ms: u64 },
    /// The broker or its client refused (`UnknownTopicOrPartition`, a delivery timeout).
    #[error("broker: {0}")]
    Broker(String),
    /// MariaDB refused the statement, as the mysql client prints it: `ERROR 1020 (HY000):
    /// Record has changed since last read in table 'teams'`. Data to show, like a SQLSTATE.
    #[error("ERROR {number} ({sqlstate}): {message}")]
    Mariadb {
        number: u16,
        sqlstate: String,
        message: String,
    },
}

impl StepError {
    /// MariaDB's error number, if MariaDB refused the statement (`1213`, `1020`, `1205`).
    pub fn mariadb_number(&self) -> Option<u16> {
        match self {
            StepError::Mariadb { number, .. } => Some(*number),
            _ => None,
        }
    }

    /// The database error inside, if this is one that a retry would handle.
    pub fn retryable(&self) -> Option<&DbError> {
        match self {
            StepError::Db(e) if e.is_retryable() => Some(e),
            _ => None,
        }
    }
}

/// Why a run could not be played to its end.
#[derive(Debug, Error)]
pub enum RunError {
    #[error(transparent)]
    Step(#[from] StepError),
    /// A step that should have waited for a lock finished at once.
    #[error("{0} was expected to wait for a lock, but its step finished without waiting")]
    NeverBlocked(String),
    /// A step that should have waited for a lock neither waited nor finished in time.
    #[error("{actor} never blocked within {timeout_ms} ms")]
    BlockTimeout { actor: String, timeout_ms: u64 },
    /// A connection could not be opened or a sandbox query failed.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// The run hit its maximum duration.
    #[error("the run took longer than its limit of {0} s")]
    TooLong(u64),
    /// A child process could not be started, or its pipe broke.
    #[error("process {actor}: {reason}")]
    Process { actor: String, reason: String },
    /// A service the run needs stopped answering while it played (the supervisor watches the
    /// ones whose clients would otherwise wait in silence: see `Engine::watch_services`).
    #[error("{} stopped answering during this run ({detail}); the run was stopped, because what it would show depends on the outage. Run it again once {} is back", service.label(), service.label())]
    ServiceLost { service: shared::Service, detail: String },
    #[error("{0}")]
    Other(String),
}

impl RunError {
    /// What a reader is told when this ends their run. A database error that says the server is
    /// going away (SQLSTATE class 57, operator intervention; class 08, connection exception) and
    /// a connection that cannot be made are named for what they are: PostgreSQL, not the
    /// scenario, failed the run.
    pub fn for_reader(&self) -> String {
        match self {
            RunError::Step(StepError::Db(db)) if db.sqlstate.starts_with("57") || db.sqlstate.starts_with("08") => {
                format!("PostgreSQL stopped serving this run: {db}")
            }
            RunError::Database(
                error @ (sqlx::Error::Io(_)
                | sqlx::Error::PoolTimedOut
                | sqlx::Error::Tls(_)
                | sqlx::Error::Protocol(_)),
            ) => format!("PostgreSQL could not be reached: {error}"),
            other => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_going_away_is_named_for_the_reader() {
        let shutdown = RunError::Step(StepError::Db(DbError {
            sqlstate: "57P01".into(),
            message: "terminating connection due to administrator command".into(),
        }));
        assert_eq!(
            shutdown.for_reader(),
            "PostgreSQL stopped serving this run: SQLSTATE 57P01: terminating connection due to administrator command"
        );
        let unreachable = RunError::Database(sqlx::Error::Io(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )));
        assert!(
            unreachable
                .for_reader()
                .starts_with("PostgreSQL could not be reached: "),
            "{}",
            unreachable.for_reader()
        );
        let lesson = RunError::Step(StepError::Db(DbError {
            sqlstate: SERIALIZATION_FAILURE.into(),
            message: "could not serialize access".into(),
        }));
        assert_eq!(
            lesson.for_reader(),
            "SQLSTATE 40001: could not serialize access",
            "a lesson is not a fault"
        );
        let lost = StepError::Lost {
            actor: "A".into(),
            service: shared::Service::Redis,
            reason: "broken pipe".into(),
        };
        assert_eq!(lost.to_string(), "A's Redis connection was lost: broken pipe");
    }
}
