//! What runs left on the MariaDB at `MARIADB_URL`.

use sqlx::Connection;

/// The run databases and users (`racelab_maria_…`) on MariaDB now: every run's sandbox there,
/// a lab's, a spec's or one waiting on a shelf.
pub async fn sandboxes_on_mariadb() -> (i64, i64) {
    let url = std::env::var("MARIADB_URL").unwrap_or_else(|_| racelab::config::DEFAULT_MARIADB_URL.to_owned());
    let mut conn = sqlx::mysql::MySqlConnection::connect(&url).await.expect("MariaDB");
    let databases: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'racelab\\_maria\\_%'",
    )
    .fetch_one(&mut conn)
    .await
    .expect("databases");
    let users: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM mysql.user WHERE User LIKE 'racelab\\_maria\\_%'")
        .fetch_one(&mut conn)
        .await
        .expect("users");
    (databases, users)
}
