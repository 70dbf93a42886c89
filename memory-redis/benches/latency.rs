//! Latency of `prefetch` and of a one-add `sync` against a real server, printed as
//! percentiles: `cargo bench -p memory-redis`. The server is `MEMORY_TEST_REDIS_URL` (default:
//! the local one), under a key prefix of its own that is deleted at the end.

use memory_redis::{RedisConfig, RedisProvider};
use redis::AsyncCommands;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url =
        std::env::var("MEMORY_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let prefix = format!("bench-{}", std::process::id());
    let memory = RedisProvider::connect(&RedisConfig::new(&url).with_prefix(&prefix)).await?;
    let measured = memory_conformance::latency::print_prefetch_and_sync_latency(
        "memory-redis",
        &memory,
        1_000,
    )
    .await;
    let mut connection = memory.connection().clone();
    let keys: Vec<String> = connection.keys(format!("{{{prefix}}}:*")).await?;
    if !keys.is_empty() {
        let () = connection.del(keys).await?;
    }
    Ok(measured?)
}
