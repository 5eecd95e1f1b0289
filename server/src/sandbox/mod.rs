//! Sandboxes: every run plays in its own PostgreSQL schema, so a thousand readers can run the same
//! scenario at once without seeing each other's rows, locks or predicate locks.
//!
//! A sandbox is the schema `run_<id>`, made from the lab's schema SQL and carrying a comment with
//! the run id and its creation time. [`Sandbox::destroy`] ends every session of the run (an actor
//! may be stuck waiting on a lock, or idle in a transaction) and drops the schema; the server calls
//! it on success, failure, cancel and disconnect alike. [`sweep`] removes what a crash left behind.
//! Redis key prefixes and Kafka topics will join the sandbox with the labs that use them.

use crate::engine::BoxFuture;
use crate::engine::actor::execute;
use crate::engine::run::application_name;
use serde::{Deserialize, Serialize};
use sqlx::{PgPool, Row};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// What a sandbox schema's comment records, so a sweep can tell racelab's own and their age.
#[derive(Debug, Serialize, Deserialize)]
struct Label {
    racelab_run: String,
    created_unix: u64,
}

/// One run's schema.
#[derive(Clone, Debug)]
pub struct Sandbox {
    pub run_id: String,
    pub schema: String,
}

/// The schema name of a run.
pub fn schema_of(run_id: &str) -> String {
    format!("run_{run_id}")
}

/// A new random run id: 12 hex digits, safe inside identifiers and application names.
pub fn new_run_id() -> String {
    format!("{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff)
}

impl Sandbox {
    /// Creates the run's schema (boxed for the same reason as `engine::actor::execute`) and runs the lab's schema SQL (tables and seed rows) inside it.
    /// All in one transaction: a sandbox either exists whole or not at all.
    pub fn create<'a>(
        pool: &'a PgPool,
        run_id: &'a str,
        lab_sql: &'a str,
    ) -> BoxFuture<'a, Result<Sandbox, sqlx::Error>> {
        Box::pin(Self::create_inner(pool, run_id, lab_sql))
    }

    async fn create_inner(pool: &PgPool, run_id: &str, lab_sql: &str) -> Result<Sandbox, sqlx::Error> {
        let schema = schema_of(run_id);
        let label = serde_json::to_string(&Label {
            racelab_run: run_id.to_owned(),
            created_unix: now_unix(),
        })
        .map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
        let mut tx = pool.begin().await?;
        let prepare = format!(
            "CREATE SCHEMA {schema}; COMMENT ON SCHEMA {schema} IS '{}'; SET LOCAL search_path TO {schema};",
            label.replace('\'', "''")
        );
        execute(&mut tx, &prepare, &[]).await?;
        execute(&mut tx, lab_sql, &[]).await?;
        tx.commit().await?;
        Ok(Sandbox {
            run_id: run_id.to_owned(),
            schema,
        })
    }

    /// Ends every session of the run and drops its schema. Safe to call twice.
    ///
    /// The DROP waits at most [`DROP_LOCK_TIMEOUT`] for its locks (someone outside the run may be
    /// reading the sandbox from psql in an open transaction) and is tried a few times, ending the
    /// run's sessions again before each try; a schema still there afterwards is left to the
    /// periodic sweep, and the error says so. Cleanup never hangs a supervisor.
    pub fn destroy<'a>(&'a self, pool: &'a PgPool) -> BoxFuture<'a, Result<(), sqlx::Error>> {
        Box::pin(async move {
            let drop = format!(
                "SET LOCAL lock_timeout = '{}ms'; DROP SCHEMA IF EXISTS {} CASCADE",
                DROP_LOCK_TIMEOUT.as_millis(),
                quote_ident(&self.schema)
            );
            let mut last = None;
            for _ in 0..DROP_TRIES {
                end_sessions(pool, &self.run_id).await?;
                let mut tx = pool.begin().await?;
                match execute(&mut tx, &drop, &[]).await {
                    Ok(_) => return tx.commit().await,
                    Err(error) => last = Some(error),
                }
            }
            Err(last.unwrap_or_else(|| sqlx::Error::Protocol("no attempt to drop the sandbox".into())))
        })
    }
}

/// How long one DROP of a sandbox may wait for its locks, and how many times it is tried.
const DROP_LOCK_TIMEOUT: Duration = Duration::from_secs(2);
const DROP_TRIES: usize = 3;

/// `"run_abc"`: an identifier quoted for SQL, whatever it holds.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Whether `id` has the shape [`new_run_id`] gives (12 hex digits): anything else found in the
/// database is not one of ours, and never goes near SQL.
fn is_run_id(id: &str) -> bool {
    id.len() == 12 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Terminates the run's backends (`racelab/<run>/…`) and waits (up to 10 s) until they are gone,
/// so that dropping the schema does not wait on a lock one of them still holds; if some are still
/// there after that, the DROP's own lock timeout and retries take over.
async fn end_sessions(pool: &PgPool, run_id: &str) -> Result<(), sqlx::Error> {
    let pattern = application_name(run_id, "%");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left: i64 = sqlx::query_scalar(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
             WHERE application_name LIKE $1 AND pid <> pg_backend_pid()",
        )
        .bind(&pattern)
        .fetch_one(pool)
        .await?;
        if left == 0 || Instant::now() >= deadline {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Drops sandboxes older than `max_age` (runs a crash left behind). Younger ones may belong to
/// runs still playing, here or on another replica, so they are left alone. Returns how many
/// were dropped.
pub async fn sweep(pool: &PgPool, max_age: Duration) -> Result<usize, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT nspname::text, obj_description(oid, 'pg_namespace') FROM pg_namespace
         WHERE nspname LIKE 'run\\_%'",
    )
    .fetch_all(pool)
    .await?;
    let now = now_unix();
    let mut dropped = 0;
    for row in rows {
        let schema: String = row.try_get(0)?;
        let comment: Option<String> = row.try_get(1)?;
        let Some(label) = comment.and_then(|c| serde_json::from_str::<Label>(&c).ok()) else {
            continue;
        };
        if !is_run_id(&label.racelab_run)
            || schema != schema_of(&label.racelab_run)
            || now.saturating_sub(label.created_unix) < max_age.as_secs()
        {
            continue;
        }
        // One stubborn sandbox must not stop the others from being swept, nor the server starting.
        match (Sandbox {
            run_id: label.racelab_run,
            schema: schema.clone(),
        })
        .destroy(pool)
        .await
        {
            Ok(()) => dropped += 1,
            Err(error) => tracing::warn!(%schema, %error, "could not sweep a sandbox; will try again"),
        }
    }
    Ok(dropped)
}

fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_run_ids_are_trusted() {
        assert!(is_run_id(&new_run_id()));
        assert!(!is_run_id("%"));
        assert!(!is_run_id("abc; DROP x"));
        assert_eq!(quote_ident("run_a\"b"), "\"run_a\"\"b\"");
    }

    #[test]
    fn run_ids_make_safe_schema_names() {
        let id = new_run_id();
        assert_eq!(id.len(), 12);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(schema_of("abc"), "run_abc");
    }
}
