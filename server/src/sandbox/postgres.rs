//! A run's PostgreSQL schemas: made from the lab's schema SQL, labelled with the run id and its
//! creation time, and dropped after ending every session of the run.

use super::Sandbox;
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use sqlx::{PgConnection, PgPool};
use std::time::Duration;
use tokio::time::Instant;

/// What a sandbox schema's comment records, so anyone looking at the database (and the sweep)
/// can tell racelab's own and their age.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Label {
    pub racelab_run: String,
    pub created_unix: u64,
}

/// How long cleaning a sandbox (one DROP of it, or its reset) may wait for a lock someone
/// outside the run holds on it (a reader's psql in an open transaction), and how many times a
/// DROP is tried. A reset that gives up is followed by a DROP.
pub(super) const CLEANUP_LOCK_TIMEOUT: Duration = Duration::from_secs(2);
const DROP_TRIES: usize = 3;

/// The `application_name` of `who`'s session in run `run_id` (`racelab/3fa9c0e1b2d4/bob`): how
/// anyone watching `pg_stat_activity` tells whose it is, and how cleanup finds a run's sessions.
pub fn application_name(run_id: &str, who: &str) -> String {
    format!("racelab/{run_id}/{who}")
}

/// `"run_abc"`: an identifier quoted for SQL, whatever it holds.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Runs `sql`, one or several statements (the simple query protocol), on `conn`, reading every
/// result. Boxed, on a plain connection, through `fetch_many`: sqlx's `execute` on a transaction
/// inside a boxed `Send` future trips the compiler's lifetime checks ("implementation of
/// `Executor` is not general enough").
pub(super) fn script<'a>(conn: &'a mut PgConnection, sql: &'a str) -> BoxFuture<'a, Result<(), sqlx::Error>> {
    Box::pin(async move {
        use futures_util::TryStreamExt;
        use sqlx::Executor;
        let mut results = conn.fetch_many(sql);
        while results.try_next().await?.is_some() {}
        Ok(())
    })
}

/// Creates `schema` and runs the lab's `sql` (tables and seed rows) inside it, in one
/// transaction: a schema either exists whole or not at all. With `registers`, the sandbox's
/// registry row is written in that transaction too: the row and the first schema exist
/// together or not at all, for one commit instead of two. Returns the schema's shape as made
/// (`reset::relations`), which a reset compares before it reuses the schema. Boxed: the
/// sandbox's creation awaits it inside a future that must stay `Send` and small.
pub(super) fn create_schema<'a>(
    pool: &'a PgPool,
    sandbox: &'a Sandbox,
    (schema, sql): (&'a str, &'a str),
    registers: bool,
) -> BoxFuture<'a, Result<String, sqlx::Error>> {
    Box::pin(async move {
        let label = serde_json::to_string(&Label {
            racelab_run: sandbox.run_id.clone(),
            created_unix: sandbox.created_unix,
        })
        .map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
        let quoted = quote_ident(schema);
        let prepare = format!(
            "CREATE SCHEMA {quoted}; COMMENT ON SCHEMA {quoted} IS '{}'; SET LOCAL search_path TO {quoted};",
            label.replace('\'', "''")
        );
        let mut tx = pool.begin().await?;
        if registers {
            super::sweep::register(&mut *tx, sandbox).await?;
        }
        script(&mut tx, &prepare).await?;
        if !sql.trim().is_empty() {
            script(&mut tx, sql).await?;
        }
        let shape = super::reset::relations(&mut *tx, schema).await?.shape;
        tx.commit().await?;
        Ok(shape)
    })
}

/// Ends every session of the run and drops `schemas`; with `unregisters`, deletes the run's
/// registry row in the same transaction (nothing of the sandbox is left outside PostgreSQL).
/// Safe to call twice.
///
/// The DROP waits at most [`CLEANUP_LOCK_TIMEOUT`] for its locks (someone outside the run may be
/// reading the sandbox from psql in an open transaction) and is tried a few times, ending the
/// run's sessions again before each try; a schema still there afterwards is left to the periodic
/// sweep, and the error says so. Cleanup never hangs a supervisor.
pub(super) fn drop_schemas<'a>(
    pool: &'a PgPool,
    run_id: &'a str,
    schemas: &'a [&'a str],
    unregisters: bool,
) -> BoxFuture<'a, Result<(), sqlx::Error>> {
    Box::pin(async move {
        let names: Vec<String> = schemas.iter().map(|s| quote_ident(s)).collect();
        let mut last = None;
        for _ in 0..DROP_TRIES {
            end_sessions(pool, run_id).await?;
            if names.is_empty() {
                if unregisters {
                    super::sweep::unregister(pool, run_id).await?;
                }
                return Ok(());
            }
            let drop = format!(
                "SET LOCAL lock_timeout = '{}ms'; DROP SCHEMA IF EXISTS {} CASCADE",
                CLEANUP_LOCK_TIMEOUT.as_millis(),
                names.join(", ")
            );
            let mut tx = pool.begin().await?;
            match script(&mut tx, &drop).await {
                Ok(_) => {
                    if unregisters {
                        super::sweep::unregister(&mut *tx, run_id).await?;
                    }
                    return tx.commit().await;
                }
                Err(error) => last = Some(error),
            }
        }
        Err(last.unwrap_or_else(|| sqlx::Error::Protocol("no attempt to drop the sandbox".into())))
    })
}

/// Terminates the run's backends (`racelab/<run>/…`, child processes' included) and waits (up to
/// 10 s) until they are gone, so that dropping a schema does not wait on a lock one of them still
/// holds, and no advisory lock of the run outlives it.
pub(super) async fn end_sessions(pool: &PgPool, run_id: &str) -> Result<(), sqlx::Error> {
    let pattern = application_name(run_id, "%");
    let deadline = Instant::now() + Duration::from_secs(10);
    // A terminated backend is usually gone within a millisecond or two: look again soon, then
    // less often (every run's cleanup waits on this).
    let mut pause = Duration::from_millis(1);
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
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::quote_ident;

    #[test]
    fn identifiers_are_quoted_whatever_they_hold() {
        assert_eq!(quote_ident("run_abc"), "\"run_abc\"");
        assert_eq!(quote_ident("run_a\"b"), "\"run_a\"\"b\"");
    }
}
