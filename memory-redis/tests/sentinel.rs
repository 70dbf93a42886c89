//! Redis Sentinel: the provider finds the master through the sentinels and follows a failover,
//! and with `wait_replicas` a write (or a replayed one) is acknowledged only once that many
//! replicas have it. Against a master, a replica and three sentinels of the test's own.

mod common;

use std::time::Duration;

use memory_conformance::cases::ctx;
use memory_conformance::sentinel::{MASTER_NAME, RedisSentinelSet};
use memory_core::{
    ErrorKind, IdempotencyKey, IfMatch, MemoryError, MemoryProvider, MemoryUpdate, Store,
};
use memory_redis::{RedisConfig, RedisProvider, SentinelConfig};

fn config(set: &RedisSentinelSet, prefix: &str) -> RedisConfig {
    RedisConfig {
        connect_timeout_ms: 1_000,
        response_timeout_ms: 1_000,
        deadline_ms: 3_000,
        ..RedisConfig::sentinel(SentinelConfig::new(set.sentinel_urls(), MASTER_NAME))
            .with_prefix(prefix)
    }
}

/// The content of document key `key` on the server at `port`, as `redis-cli` reads it there.
fn content_on(port: u16, key: &str) -> String {
    let out = std::process::Command::new("redis-cli")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "HGET",
            key,
            "content",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

async fn start() -> Option<RedisSentinelSet> {
    tokio::task::spawn_blocking(RedisSentinelSet::start)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_finds_the_master_through_the_sentinels_and_follows_a_failover() {
    let Some(set) = start().await else {
        return;
    };
    let set = std::sync::Arc::new(set);
    let prefix = common::unique_prefix();
    let provider = RedisProvider::connect(&RedisConfig {
        wait_replicas: 1,
        ..config(&set, &prefix)
    })
    .await
    .unwrap();
    let c = ctx("ada", "u1");
    let add = |text: &str| [MemoryUpdate::add(Store::Memory, text)];
    provider
        .sync(&c, &add("before the failover"), &IfMatch::NONE)
        .await
        .unwrap();
    let key = provider.store().key(&c.document(Store::Memory));
    let old = set.master_port();
    assert!(content_on(old, &key).contains("before the failover"));

    let new = tokio::task::spawn_blocking({
        let set = set.clone();
        move || set.fail_over()
    })
    .await
    .unwrap();
    assert_ne!(new, old);

    // The first call may meet the dead connection; each failure is one to retry, and the
    // provider finds the new master by itself.
    let retryable = [ErrorKind::Unavailable, ErrorKind::Busy];
    let after = add("after the failover");
    common::sync_until_it_lands(&provider, &c, &after, &retryable, Duration::from_secs(20)).await;
    let text = provider
        .read(&c.document(Store::Memory))
        .await
        .unwrap()
        .text;
    assert!(text.contains("before the failover"), "{text}");
    assert!(text.contains("after the failover"), "{text}");
    assert_eq!(text.matches("after the failover").count(), 1, "{text}");
    assert!(content_on(new, &key).contains("after the failover"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_is_acknowledged_once_its_replicas_have_it() {
    let Some(set) = start().await else {
        return;
    };
    let prefix = common::unique_prefix();
    let replica = {
        let master = set.master_port();
        set.ports()
            .into_iter()
            .find(|port| *port != master)
            .unwrap()
    };
    let waiting_for = |replicas| RedisConfig {
        wait_replicas: replicas,
        wait_timeout_ms: 300,
        ..config(&set, &prefix)
    };
    let one = RedisProvider::connect(&waiting_for(1)).await.unwrap();
    let c = ctx("ada", "u1");
    one.sync(
        &c,
        &[MemoryUpdate::add(Store::Memory, "on the replica")],
        &IfMatch::NONE,
    )
    .await
    .unwrap();
    let key = one.store().key(&c.document(Store::Memory));
    assert!(
        content_on(replica, &key).contains("on the replica"),
        "acknowledged, so on the replica at once"
    );

    // Two replicas asked for, one there: the master has the write, but it is not
    // acknowledged; repeating it with its key replays it and still waits.
    let two = RedisProvider::connect(&waiting_for(2)).await.unwrap();
    let keyed = c
        .clone()
        .with_idempotency_key(IdempotencyKey::new("turn-1").unwrap());
    let update = [MemoryUpdate::add(Store::Memory, "one replica short")];
    for attempt in ["the write", "its replay"] {
        let err = two.sync(&keyed, &update, &IfMatch::NONE).await.unwrap_err();
        assert!(
            matches!(err, MemoryError::OutcomeUnknown { .. }),
            "{attempt}: {err:?}"
        );
        let message = err.to_string();
        assert!(
            message.contains("1 of the 2 replicas"),
            "{attempt}: {message}"
        );
    }
    let text = one.read(&c.document(Store::Memory)).await.unwrap().text;
    assert_eq!(text.matches("one replica short").count(), 1, "{text}");
    // With one replica asked for, the replay is acknowledged.
    let report = one.sync(&keyed, &update, &IfMatch::NONE).await.unwrap();
    assert!(report.documents.iter().all(|d| d.replayed), "{report:?}");
}

/// No sentinel answers: `Unavailable` naming the sentinels, without their password.
#[tokio::test]
async fn unreachable_sentinels_are_unavailable_without_the_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = RedisConfig {
        connect_timeout_ms: 300,
        ..RedisConfig::sentinel(SentinelConfig::new(
            [format!("redis://agent:hunter2@127.0.0.1:{port}")],
            MASTER_NAME,
        ))
    };
    let err = RedisProvider::connect(&config).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err:?}");
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(
        shown.contains(&format!(
            "127.0.0.1:{port} (sentinel, master {MASTER_NAME})"
        )),
        "{shown}"
    );
}
