//! Latency of `prefetch` and of a one-add `sync` against a real server, printed as
//! percentiles: `cargo bench -p agent-memory-redis`. Two providers run side by side, history on (the
//! default retention) and off, their calls interleaved so that whatever else loads the machine
//! loads both alike, to show what recording revisions costs. The server is
//! `MEMORY_TEST_REDIS_URL` (default: the local one), under key prefixes of their own that are
//! deleted at the end.

use memory_conformance::latency::print_history_cost;
use memory_core::Retention;
use memory_redis::{RedisConfig, RedisProvider};
use redis::AsyncCommands;

const SAMPLES: usize = 1_000;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url =
        std::env::var("MEMORY_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let mut providers = Vec::new();
    for (history, tag) in [(Retention::default(), "on"), (Retention::OFF, "off")] {
        let prefix = format!("bench-{}-{tag}", std::process::id());
        let config = RedisConfig {
            history,
            ..RedisConfig::new(&url).with_prefix(&prefix)
        };
        providers.push((RedisProvider::connect(&config).await?, prefix));
    }
    let measured =
        print_history_cost("memory-redis", &providers[0].0, &providers[1].0, SAMPLES).await;
    for (memory, prefix) in &providers {
        let mut connection = memory.store().connection().clone();
        let keys: Vec<String> = connection.keys(format!("{{{prefix}}}:*")).await?;
        if !keys.is_empty() {
            let () = connection.del(keys).await?;
        }
    }
    Ok(measured?)
}
