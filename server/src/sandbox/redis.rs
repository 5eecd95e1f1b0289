//! A run's Redis keys: everything under its prefix, removed with SCAN + UNLINK (UNLINK frees the
//! memory in the background, so cleaning a big run never stalls the server other readers use).

use redis::AsyncCommands as _;
use std::time::Duration;

/// How long a cleanup may wait to connect or for one reply.
const TIMEOUT: Duration = Duration::from_secs(2);

/// Opens a connection for racelab's own housekeeping, with short timeouts.
pub async fn connect(client: &redis::Client) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(TIMEOUT)
        .set_response_timeout(TIMEOUT);
    client.get_multiplexed_async_connection_with_config(&config).await
}

/// Removes every key under `prefix` (which holds no glob characters: it is made from a run id).
/// Returns how many were removed.
pub async fn unlink_prefix(client: &redis::Client, prefix: &str) -> redis::RedisResult<u64> {
    let mut conn = connect(client).await?;
    let pattern = format!("{prefix}*");
    let mut cursor: u64 = 0;
    let mut removed = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(500)
            .query_async(&mut conn)
            .await?;
        if !keys.is_empty() {
            removed += conn.unlink::<_, u64>(&keys).await?;
        }
        if next == 0 {
            return Ok(removed);
        }
        cursor = next;
    }
}
