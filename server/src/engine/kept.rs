//! Sessions kept between runs: the PostgreSQL sessions a finished run is done with are reset and
//! handed to the next run, instead of being closed and forked again.
//!
//! Why: on a small machine a new session is the most expensive thing a short run asks of
//! PostgreSQL. Each is a backend forked and warming its caches, about 5 ms of a core here
//! (`pgbench -C`), and write skew opens three (its monitor, alice, bob): more than its schema's
//! DDL and every statement it plays together. A crowd of readers spent most of PostgreSQL's time
//! forking; with kept sessions it spends it on the readers' transactions.
//!
//! Why it is safe: a session is kept only after `DISCARD ALL` answered on it, outside any
//! transaction (it rolls back first if it must). That puts every setting back (name, search
//! path, timeouts, isolation level), drops temporary tables, prepared statements and cursors,
//! releases session advisory locks and stops listening; the driver's statement cache is cleared
//! beside it. A session is connected under a name of no run ([`KEPT_NAME`]) and takes its run's
//! name with `SET` ([`take_on`]), so `DISCARD ALL` gives it back a name that no run's cleanup
//! terminates. Only a completed run's sessions and those its actors closed are kept; a cancelled
//! or failed run's go with its sandbox, as before. Locks, snapshots and serialization conflicts
//! belong to transactions, which all ended: the next run sees a session as new as a forked one.
//!
//! The budget: kept sessions stay inside the lease of the run that used them. A run done with its
//! sessions puts them back with its lease ([`Kept::put`]); the next run of this replica that needs
//! no more than that lease takes both and asks the database for nothing. A bundle nobody takes
//! within [`KEEP_FOR`] is closed and its lease given back; a run of this replica that finds no
//! room makes idle bundles give way first ([`super::leases::Leases::take`]), and another
//! replica's run waits at most [`KEEP_FOR`] for them.

use super::leases::Lease;
use crate::sandbox::postgres::quote_ident;
use sqlx::Executor;
use sqlx::postgres::PgConnection;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// The `application_name` of a session no run holds: one slash, so no run's pattern
/// (`racelab/<run>/%`) ever matches it.
pub const KEPT_NAME: &str = "racelab/kept";
/// How long a bundle waits for a run before it is closed and its lease given back.
pub const KEEP_FOR: Duration = Duration::from_secs(3);
/// How long resetting a session may take before it is closed instead (a loaded machine answers
/// in milliseconds; a session that does not is not worth keeping).
pub const RESET_WITHIN: Duration = Duration::from_secs(2);

/// Puts a session back as new: outside any transaction, every setting reset, nothing cached.
/// `None` (the session dropped) if it did not answer in time or failed.
pub async fn reset(mut conn: PgConnection) -> Option<PgConnection> {
    let reset = async {
        // DISCARD ALL refuses to run inside a transaction (25001) or an aborted one (25P02).
        if conn.execute("DISCARD ALL").await.is_err() {
            conn.execute("ROLLBACK").await?;
            conn.execute("DISCARD ALL").await?;
        }
        // The server forgot its prepared statements; the driver must too (closing one the
        // server no longer has is not an error).
        sqlx::Connection::clear_cached_statements(&mut conn).await
    };
    match tokio::time::timeout(RESET_WITHIN, reset).await {
        Ok(Ok(())) => Some(conn),
        _ => None,
    }
}

/// Gives a session its run's name, schema and `settings` (step mode's longer waits), in one
/// round trip. Kept sessions and new ones alike take their run this way.
pub async fn take_on(
    conn: &mut PgConnection,
    name: &str,
    schema: &str,
    settings: &[(&'static str, String)],
) -> Result<(), sqlx::Error> {
    conn.execute(sqlx::raw_sql(&take_on_sql(name, schema, settings)))
        .await
        .map(|_| ())
}

/// The `SET`s of [`take_on`].
fn take_on_sql(name: &str, schema: &str, settings: &[(&'static str, String)]) -> String {
    let mut sql = format!(
        "SET application_name TO {}; SET search_path TO {}",
        quote_literal(name),
        quote_ident(schema)
    );
    for (setting, value) in settings {
        sql.push_str(&format!("; SET {setting} TO {}", quote_literal(value)));
    }
    sql
}

/// `'it''s'`: a string literal for SQL.
fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Sessions kept with the lease that covers them.
pub struct Bundle {
    id: u64,
    pub lease: Lease,
    pub sessions: Vec<PgConnection>,
}

impl Bundle {
    /// Sessions and their lease, not kept (to end them).
    pub fn new(lease: Lease, sessions: Vec<PgConnection>) -> Bundle {
        Bundle { id: 0, lease, sessions }
    }

    /// Closes the sessions and gives the lease back.
    pub async fn end(self) {
        futures_util::future::join_all(self.sessions.into_iter().map(sqlx::Connection::close)).await;
        self.lease.give_back().await;
    }
}

/// The bundles of one replica, waiting for its next runs.
pub struct Kept {
    bundles: Mutex<Vec<Bundle>>,
    next_id: AtomicU64,
    /// The engine is closing: nothing is kept any more.
    closed: AtomicBool,
}

impl Kept {
    /// Keeping bundles, or (`keep` false) never keeping any.
    pub fn new(keep: bool) -> Kept {
        Kept {
            bundles: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(0),
            closed: AtomicBool::new(!keep),
        }
    }

    fn bundles(&self) -> std::sync::MutexGuard<'_, Vec<Bundle>> {
        self.bundles.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `sessions` under `lease`; returns the bundle's id (to end it after [`KEEP_FOR`]),
    /// or both back if nothing is kept any more.
    pub fn put(&self, lease: Lease, sessions: Vec<PgConnection>) -> Result<u64, (Lease, Vec<PgConnection>)> {
        let mut bundles = self.bundles();
        if self.closed.load(Ordering::SeqCst) {
            return Err((lease, sessions));
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        bundles.push(Bundle { id, lease, sessions });
        Ok(id)
    }

    /// The bundle with the smallest lease that covers `connections`, if one is kept.
    pub fn take(&self, connections: u32) -> Option<Bundle> {
        let mut bundles = self.bundles();
        let best = bundles
            .iter()
            .enumerate()
            .filter(|(_, b)| b.lease.connections() >= connections)
            .min_by_key(|(_, b)| b.lease.connections())
            .map(|(i, _)| i)?;
        Some(bundles.swap_remove(best))
    }

    /// The bundle `id`, if no run took it.
    pub fn remove(&self, id: u64) -> Option<Bundle> {
        let mut bundles = self.bundles();
        let at = bundles.iter().position(|b| b.id == id)?;
        Some(bundles.swap_remove(at))
    }

    /// The oldest bundle, to give way to a run that found no room.
    pub fn oldest(&self) -> Option<Bundle> {
        let mut bundles = self.bundles();
        let at = bundles.iter().enumerate().min_by_key(|(_, b)| b.id).map(|(i, _)| i)?;
        Some(bundles.remove(at))
    }

    /// Every bundle, and nothing kept from now on.
    pub fn close(&self) -> Vec<Bundle> {
        let mut bundles = self.bundles();
        self.closed.store(true, Ordering::SeqCst);
        std::mem::take(&mut *bundles)
    }

    /// Whether sessions are kept (not switched off, the engine not closing).
    pub fn open(&self) -> bool {
        !self.closed.load(Ordering::SeqCst)
    }

    /// How many sessions are kept now.
    pub fn sessions(&self) -> usize {
        self.bundles().iter().map(|b| b.sessions.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_takes_its_run_in_one_statement_list() {
        assert_eq!(
            take_on_sql("racelab/3fa9/alice", "run_3fa9_isolation", &[]),
            "SET application_name TO 'racelab/3fa9/alice'; SET search_path TO \"run_3fa9_isolation\""
        );
        assert_eq!(
            take_on_sql("racelab/x/o'brien", "s", &[("lock_timeout", "600000ms".into())]),
            "SET application_name TO 'racelab/x/o''brien'; SET search_path TO \"s\"; SET lock_timeout TO '600000ms'"
        );
    }

    #[test]
    fn the_kept_name_is_no_run_s() {
        let pattern = crate::sandbox::application_name("3fa9", "%");
        assert!(!KEPT_NAME.starts_with(pattern.trim_end_matches('%')));
        assert_eq!(KEPT_NAME.matches('/').count(), 1);
    }
}
