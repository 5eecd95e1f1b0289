//! The registry of sandboxes (racelab's `sandboxes` table) and the sweep of what crashes left.

use super::postgres::{Label, drop_schemas};
use super::{Sandbox, SandboxError, Services, is_run_id, schema_name};
use sqlx::{PgPool, Row};
use std::time::Duration;

/// Records `sandbox`, before or together with its first namespace (in that schema's own
/// transaction, see `postgres::create_schema`).
pub(super) async fn register<'e>(db: impl sqlx::PgExecutor<'e>, sandbox: &Sandbox) -> Result<(), sqlx::Error> {
    let schemas: Vec<&str> = sandbox.schemas.iter().map(|(_, s)| s.as_str()).collect();
    let topics: Vec<&str> = sandbox.topics.iter().map(|(_, t, _)| t.as_str()).collect();
    sqlx::query(
        "INSERT INTO sandboxes (run_id, created_at, schemas, redis_prefix, topics)
         VALUES ($1, to_timestamp($2), $3, $4, $5)",
    )
    .bind(&sandbox.run_id)
    .bind(sandbox.created_unix as f64)
    .bind(&schemas)
    .bind(&sandbox.redis_prefix)
    .bind(&topics)
    .execute(db)
    .await?;
    Ok(())
}

/// Forgets a sandbox once everything in it is gone (or as its last schemas go, in the same
/// transaction, see `postgres::drop_schemas`).
pub(super) async fn unregister<'e>(db: impl sqlx::PgExecutor<'e>, run_id: &str) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM sandboxes WHERE run_id = $1")
        .bind(run_id)
        .execute(db)
        .await?;
    Ok(())
}

/// Makes a reused sandbox's row as young as a new one's (in its reset's transaction, see
/// `reset::reset_schemas`): the sweep takes sandboxes by age, and this one is starting a run.
pub(super) async fn renew<'e>(db: impl sqlx::PgExecutor<'e>, run_id: &str) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE sandboxes SET created_at = now() WHERE run_id = $1")
        .bind(run_id)
        .execute(db)
        .await?;
    Ok(())
}

/// Removes sandboxes older than `max_age` (runs a crash left behind): every namespace the
/// registry lists for them, and schemas of racelab's shape that an older version left without a
/// registry row. Younger ones may belong to runs still playing, here or on another replica, so
/// they are left alone. One stubborn sandbox never stops the others from being swept. Returns
/// how many were removed.
pub async fn sweep(services: &Services, max_age: Duration) -> Result<usize, SandboxError> {
    let rows = sqlx::query(
        "SELECT run_id, extract(epoch FROM created_at)::bigint, schemas, redis_prefix, topics FROM sandboxes
         WHERE created_at < now() - make_interval(secs => $1)",
    )
    .bind(max_age.as_secs_f64())
    .fetch_all(&services.pool)
    .await?;
    let mut removed = 0;
    // A sandbox with topics waits while the broker is down, rather than making every start wait
    // out the broker client's timeouts.
    let broker_up = crate::health::kafka(&services.brokers).await.up;
    let redis_up = crate::health::redis(&services.redis_url).await.up;
    for row in rows {
        let run_id: String = row.try_get(0)?;
        if !is_run_id(&run_id) {
            continue;
        }
        let created: i64 = row.try_get(1)?;
        let schemas: Vec<String> = row.try_get(2)?;
        let topics: Vec<String> = row.try_get(4)?;
        let sandbox = Sandbox {
            created_unix: u64::try_from(created).unwrap_or(0),
            schemas: schemas.into_iter().map(|s| (String::new(), s)).collect(),
            redis_prefix: row.try_get(3)?,
            topics: topics.into_iter().map(|t| (String::new(), t, 0)).collect(),
            run_id,
            ..Sandbox::default()
        };
        if (!sandbox.topics.is_empty() && !broker_up) || (sandbox.redis_prefix.is_some() && !redis_up) {
            tracing::info!(run = %sandbox.run_id, "a service it used is down; this sandbox waits for the next sweep");
            continue;
        }
        match sandbox.destroy(services).await {
            Ok(()) => removed += 1,
            Err(error) => tracing::warn!(run = %sandbox.run_id, %error, "could not sweep a sandbox; will try again"),
        }
    }
    removed += sweep_unregistered_schemas(&services.pool, max_age).await?;
    Ok(removed)
}

/// Schemas labelled by racelab but missing from the registry (left by a version that had none).
async fn sweep_unregistered_schemas(pool: &PgPool, max_age: Duration) -> Result<usize, SandboxError> {
    let rows = sqlx::query(
        "SELECT n.nspname::text, obj_description(n.oid, 'pg_namespace') FROM pg_namespace n
         WHERE n.nspname LIKE 'run\\_%'
           AND NOT EXISTS (SELECT 1 FROM sandboxes s WHERE n.nspname = ANY (s.schemas))",
    )
    .fetch_all(pool)
    .await?;
    let now = super::now_unix();
    let mut dropped = 0;
    for row in rows {
        let schema: String = row.try_get(0)?;
        let comment: Option<String> = row.try_get(1)?;
        let Some(label) = comment.and_then(|c| serde_json::from_str::<Label>(&c).ok()) else {
            continue;
        };
        if !is_run_id(&label.racelab_run)
            || !schema.starts_with(&schema_name(&label.racelab_run, ""))
            || now.saturating_sub(label.created_unix) < max_age.as_secs()
        {
            continue;
        }
        match drop_schemas(pool, &label.racelab_run, &[schema.as_str()], false).await {
            Ok(()) => dropped += 1,
            Err(error) => tracing::warn!(%schema, %error, "could not sweep a schema; will try again"),
        }
    }
    Ok(dropped)
}
