//! The startup sweep: sandboxes a crash left behind are dropped once older than a run may live;
//! younger ones (a run still playing, maybe on another replica) are kept.

mod common;

use racelab::sandbox::{Sandbox, new_run_id, sweep};
use std::time::Duration;

#[tokio::test]
async fn sweep_drops_old_sandboxes_and_keeps_young_ones() {
    let engine = common::engine().await;
    let pool = sqlx::PgPool::connect(&common::config().database_url)
        .await
        .expect("pool");
    let (old, young) = (new_run_id(), new_run_id());
    let schema = racelab::labs::isolation::SCHEMA;
    let old_box = Sandbox::create(&pool, &old, schema).await.expect("old sandbox");
    let young_box = Sandbox::create(&pool, &young, schema).await.expect("young sandbox");
    // Age the first one by rewriting its label to a day ago.
    let day_ago = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
        - 86_400;
    let label = format!(r#"{{"racelab_run":"{old}","created_unix":{day_ago}}}"#);
    sqlx::raw_sql(&format!("COMMENT ON SCHEMA {} IS '{label}'", old_box.schema))
        .execute(&pool)
        .await
        .expect("comment");
    let dropped = sweep(&pool, Duration::from_secs(3600)).await.expect("sweep");
    assert!(dropped >= 1);
    let mut inspector = common::inspector().await;
    assert_eq!(
        common::leftovers(&mut inspector, &old).await.0,
        0,
        "the old sandbox is gone"
    );
    assert_eq!(
        common::leftovers(&mut inspector, &young).await.0,
        1,
        "the young one stays"
    );
    young_box.destroy(&pool).await.expect("destroy");
    assert_eq!(common::leftovers(&mut inspector, &young).await.0, 0);
    drop(engine);
}
