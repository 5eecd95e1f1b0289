//! Vacuuming the catalog racelab churns. Every run creates a schema with tables and drops it
//! (a reader's spec a role too): about 12 KB of dead catalog rows a run. Autovacuum reclaims
//! them where it runs; on a server where it is off, they would pile up for good. So when racelab
//! has been idle a while after enough runs, it vacuums the catalogs its runs touch, itself.

use sqlx::PgPool;
use std::time::Duration;

/// The catalogs of racelab's database that runs churn (not the shared ones, `pg_authid` and
/// `pg_shdepend`, which only a superuser may vacuum).
pub const CHURNED: &str = "pg_catalog.pg_class, pg_catalog.pg_attribute, pg_catalog.pg_type, \
     pg_catalog.pg_depend, pg_catalog.pg_namespace, pg_catalog.pg_constraint, pg_catalog.pg_index, \
     pg_catalog.pg_attrdef, pg_catalog.pg_sequence, pg_catalog.pg_trigger, pg_catalog.pg_proc";

/// Idle this long (no run playing, none finished) before vacuuming: a vacuum never competes
/// with readers.
pub const IDLE: Duration = Duration::from_secs(30);

/// Runs since the last vacuum that make one worth it (about 600 KB of dead rows).
pub const RUNS: u64 = 50;

/// Whether to vacuum now: idle for `idle`, with `runs` finished since the last vacuum.
pub fn due(idle: Duration, runs: u64) -> bool {
    idle >= IDLE && runs >= RUNS
}

/// Vacuums [`CHURNED`] (outside any transaction, as VACUUM must be).
pub async fn vacuum(pool: &PgPool) -> Result<(), sqlx::Error> {
    sqlx::raw_sql(&format!("VACUUM {CHURNED}"))
        .execute(pool)
        .await
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vacuum_waits_for_quiet_and_for_enough_runs() {
        assert!(!due(Duration::from_secs(5), 500), "not while readers play");
        assert!(!due(Duration::from_secs(300), 3), "not for a handful of runs");
        assert!(due(IDLE, RUNS));
    }
}
