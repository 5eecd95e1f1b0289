//! Sandboxes of every kind: a run with two schemas, Redis keys, a topic and a consumer group gets
//! all of them, and the sweep removes each kind once it is older than a run may live, while a
//! younger sandbox (a run still playing, maybe on another replica) is kept.

mod common;

use common::{Leftovers, broker_names_of, inspector, leftovers, redis_keys_of};
use racelab::sandbox::{Sandbox, Spec, new_run_id, sweep};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use std::time::Duration;

const SPEC: Spec = Spec {
    schemas: &[
        ("payments", "CREATE TABLE payments (id text PRIMARY KEY)"),
        ("notifier", "CREATE TABLE receipts (id text PRIMARY KEY)"),
    ],
    redis: true,
    topics: &[("payments", 3)],
};

/// Leaves what a crashed run would: a Redis key, and a consumer group with a committed offset.
async fn leave_behind(run_id: &str) {
    let client = redis::Client::open(common::config().redis_url.as_str()).expect("Redis URL");
    let mut conn = client.get_multiplexed_async_connection().await.expect("Redis");
    let _: () = redis::cmd("SET")
        .arg(format!("racelab:{run_id}:wallet:42:balance"))
        .arg(100)
        .query_async(&mut conn)
        .await
        .expect("SET");
    let brokers = common::config().kafka_brokers;
    let (group, topic) = (
        format!("racelab.{run_id}.notifier"),
        format!("racelab.{run_id}.payments"),
    );
    tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", &brokers)
            .set("group.id", &group)
            .set("enable.auto.commit", "false")
            .create()
            .expect("a consumer");
        let mut offsets = rdkafka::TopicPartitionList::new();
        offsets
            .add_partition_offset(&topic, 0, rdkafka::Offset::Offset(0))
            .expect("an offset");
        consumer
            .commit(&offsets, CommitMode::Sync)
            .expect("commit makes the group");
    })
    .await
    .expect("join");
}

#[tokio::test]
async fn every_namespace_is_made_and_the_sweep_removes_old_ones_of_each_kind() {
    let _slot = common::db_slot().await;
    let engine = common::engine().await;
    let services = engine.services().clone();
    let (old, young) = (new_run_id(), new_run_id());
    let old_box = Sandbox::create(&services, &old, &SPEC).await.expect("old sandbox");
    let young_box = Sandbox::create(&services, &young, &SPEC).await.expect("young sandbox");
    leave_behind(&old).await;
    leave_behind(&young).await;

    let mut conn = inspector().await;
    let made = leftovers(&mut conn, &old, true).await;
    assert_eq!(
        (made.schemas, made.registry, made.keys, made.topics, made.groups),
        (2, 1, 1, 1, 1),
        "two schemas, a registry row, a key, a topic and a group: {made:?}"
    );
    let partitions = common::partitions_of(old_box.topic("payments").expect("a topic")).await;
    assert_eq!(partitions, 3, "the topic has the tutorial's partition count");

    // Age the first one past the limit, as if its racelab had crashed a day ago.
    sqlx::query("UPDATE sandboxes SET created_at = now() - interval '1 day' WHERE run_id = $1")
        .bind(&old)
        .execute(&mut conn)
        .await
        .expect("age it");
    let removed = sweep(&services, Duration::from_secs(3600)).await.expect("sweep");
    assert!(removed >= 1);
    assert_eq!(
        leftovers(&mut conn, &old, true).await,
        Leftovers::NONE,
        "the old sandbox is gone"
    );
    let kept = leftovers(&mut conn, &young, true).await;
    assert_eq!(
        (kept.schemas, kept.keys, kept.topics, kept.groups),
        (2, 1, 1, 1),
        "the young one stays"
    );

    young_box.destroy(&services).await.expect("destroy");
    assert_eq!(leftovers(&mut conn, &young, true).await, Leftovers::NONE);
    assert_eq!(redis_keys_of(&young).await, 0);
    assert_eq!(broker_names_of(&young).await, (vec![], vec![]));
    drop(old_box);
}

/// A sandbox only in PostgreSQL: one schema, nothing in Redis or the broker.
const SCHEMA_ONLY: Spec = Spec {
    schemas: &[("", "CREATE TABLE teams (id text PRIMARY KEY)")],
    redis: false,
    topics: &[],
};

/// A lab whose SQL fails halfway: the table is made, then made again.
const FAILS_HALFWAY: Spec = Spec {
    schemas: &[(
        "",
        "CREATE TABLE teams (id text PRIMARY KEY); CREATE TABLE teams (id text)",
    )],
    redis: false,
    topics: &[],
};

#[tokio::test]
async fn a_schema_and_its_registry_row_come_and_go_together() {
    let _slot = common::db_slot().await;
    let engine = common::engine().await;
    let services = engine.services().clone();
    let mut conn = inspector().await;

    let run = new_run_id();
    let sandbox = Sandbox::create(&services, &run, &SCHEMA_ONLY).await.expect("sandbox");
    let made = leftovers(&mut conn, &run, false).await;
    assert_eq!((made.schemas, made.registry), (1, 1), "a schema and its row: {made:?}");
    sandbox.destroy(&services).await.expect("destroy");
    assert_eq!(leftovers(&mut conn, &run, false).await, Leftovers::NONE, "both gone");
    sandbox.destroy(&services).await.expect("destroying twice is harmless");

    let failed = new_run_id();
    let error = Sandbox::create(&services, &failed, &FAILS_HALFWAY)
        .await
        .expect_err("the lab's SQL fails");
    assert!(error.to_string().contains("already exists"), "{error}");
    assert_eq!(
        leftovers(&mut conn, &failed, false).await,
        Leftovers::NONE,
        "neither the half-made schema nor its row"
    );
}

/// When the catalog was last vacuumed by hand (not by autovacuum), as PostgreSQL counts it.
async fn last_vacuum(pool: &sqlx::PgPool) -> Option<f64> {
    sqlx::query_scalar(
        "SELECT extract(epoch FROM last_vacuum)::float8 FROM pg_stat_sys_tables \
         WHERE relid = 'pg_catalog.pg_class'::regclass",
    )
    .fetch_one(pool)
    .await
    .expect("pg_stat_sys_tables")
}

#[tokio::test]
async fn the_catalog_runs_churn_is_vacuumed_by_racelab_itself() {
    let engine = common::engine().await;
    let pool = &engine.services().pool;
    // Churn: a sandbox made and destroyed, as a run does.
    const TABLES: Spec = Spec {
        schemas: &[("budget", "CREATE TABLE teams (id text PRIMARY KEY, spent int NOT NULL)")],
        redis: false,
        topics: &[],
    };
    let sandbox = Sandbox::create(engine.services(), &new_run_id(), &TABLES)
        .await
        .expect("a sandbox");
    sandbox.destroy(engine.services()).await.expect("destroyed");
    let before = last_vacuum(pool).await;
    racelab::sandbox::vacuum::vacuum(pool)
        .await
        .expect("racelab may vacuum its database's catalogs");
    let after = last_vacuum(pool).await;
    assert!(
        after.is_some() && after > before,
        "pg_class vacuumed by hand: {before:?} → {after:?}"
    );
    assert!(racelab::sandbox::vacuum::CHURNED.contains("pg_catalog.pg_namespace"));
}
