use super::*;

#[test]
fn debug_never_prints_the_password() {
    let shown = format!(
        "{:?}",
        RedisConfig::new("redis://agent:hunter2@cache:6379/0")
    );
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("redis://agent:***@cache:6379/0"), "{shown}");
}

#[test]
fn a_bad_url_is_a_config_error_naming_the_problem_without_the_password() {
    for url in [
        "http://agent:hunter2@cache:6379",
        "redis://agent:hunter2@cache:port",
    ] {
        let err = RedisConfig::new(url).client().unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, MemoryError::Config { .. }), "{err:?}");
        assert!(message.contains("invalid Redis URL"), "{message}");
        assert!(!message.contains("hunter2"), "{message}");
    }
}

#[test]
fn a_deadline_out_of_range_is_a_config_error() {
    for deadline_ms in [0, MAX_DEADLINE_MS + 1, u64::MAX] {
        let config = RedisConfig {
            deadline_ms,
            ..RedisConfig::new("redis://cache")
        };
        let err = config.validate().unwrap_err();
        assert!(matches!(err, MemoryError::Config { .. }), "{err:?}");
        assert!(err.to_string().contains("deadline_ms"), "{err}");
    }
    for deadline_ms in [1, MAX_DEADLINE_MS] {
        RedisConfig {
            deadline_ms,
            ..RedisConfig::new("redis://cache")
        }
        .validate()
        .unwrap();
    }
}

#[test]
fn a_cluster_is_named_by_its_seed_nodes_alone_on_database_0() {
    let config: RedisConfig = serde_json::from_str(
        r#"{"cluster_nodes": ["redis://agent:hunter2@a:7000", "redis://agent:hunter2@b:7001"]}"#,
    )
    .unwrap();
    config.validate().unwrap();
    config.cluster_client(Duration::from_secs(1)).unwrap();
    assert_eq!(config.server().unwrap(), "redis://a:7000,b:7001 (cluster)");
    let shown = format!("{config:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("redis://agent:***@a:7000"), "{shown}");

    let refused = |config: RedisConfig, says: &str| {
        let err = config
            .validate()
            .and_then(|()| config.cluster_client(Duration::from_secs(1)).map(drop))
            .unwrap_err();
        assert!(matches!(err, MemoryError::Config { .. }), "{err:?}");
        let message = err.to_string();
        assert!(message.contains(says), "{message}");
        assert!(!message.contains("hunter2"), "{message}");
    };
    refused(RedisConfig::new(""), "give url (one server), cluster_nodes");
    refused(
        RedisConfig {
            cluster_nodes: vec!["redis://b:7001".to_owned()],
            ..RedisConfig::new("redis://a:6379")
        },
        "more than one of url, cluster_nodes and sentinel",
    );
    refused(
        RedisConfig::cluster(["redis://agent:hunter2@a:7000/3"]),
        "has only database 0; remove /3",
    );
    refused(
        RedisConfig::cluster(["redis://agent:hunter2@a:port"]),
        "invalid Redis URL",
    );
}

#[test]
fn sentinel_names_the_sentinels_and_the_master_and_hides_its_password() {
    let config: RedisConfig = serde_json::from_str(
        r#"{"sentinel": {"nodes": ["redis://s1:26379", "redis://s2:26379"],
                "master_name": "mymaster", "password": "hunter2"},
                "wait_replicas": 1, "wait_timeout_ms": 500}"#,
    )
    .unwrap();
    config.validate().unwrap();
    let sentinel = config.sentinel.as_ref().unwrap();
    sentinel.client().unwrap();
    assert_eq!(
        config.server().unwrap(),
        "redis://s1:26379,s2:26379 (sentinel, master mymaster)"
    );
    let shown = format!("{config:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(shown.contains("wait_replicas: 1"), "{shown}");

    let Err(err) = SentinelConfig::new(Vec::<String>::new(), "mymaster").client() else {
        panic!("a sentinel set without sentinels");
    };
    assert!(err.to_string().contains("sentinel needs nodes"), "{err}");
    for wait_timeout_ms in [0, 10_000, 20_000] {
        let err = RedisConfig {
            wait_replicas: 1,
            wait_timeout_ms,
            ..config.clone()
        }
        .validate()
        .unwrap_err();
        assert!(err.to_string().contains("wait_timeout_ms"), "{err}");
    }
    let both = RedisConfig {
        url: "redis://a:6379".to_owned(),
        ..config
    };
    let err = both.validate().unwrap_err();
    assert!(err.to_string().contains("more than one of"), "{err}");
}

#[test]
fn defaults_fill_everything_but_the_url() {
    let config: RedisConfig = serde_json::from_str(r#"{"url": "redis://cache"}"#).unwrap();
    assert_eq!(config.prefix, "agent-memory");
    assert_eq!(config.response_timeout(), Duration::from_secs(5));
    assert_eq!(config.deadline(), memory_core::raw::DEFAULT_DEADLINE);
    assert_eq!(config.deadline_ms, 10_000);
    config.validate().unwrap();
    let set: RedisConfig =
        serde_json::from_str(r#"{"url": "redis://cache", "deadline_ms": 2500}"#).unwrap();
    assert_eq!(set.deadline(), Duration::from_millis(2500));
    assert!(format!("{set:?}").contains("deadline_ms: 2500"), "{set:?}");
    assert_eq!(config.history, Retention::default());
    let kept: RedisConfig = serde_json::from_str(
        r#"{"url": "redis://cache", "history": {"keep": 3, "max_age_days": 2}}"#,
    )
    .unwrap();
    assert_eq!(
        kept.history,
        Retention::keep(3).with_max_age(Duration::from_secs(2 * 86_400))
    );
    let unknown = serde_json::from_str::<RedisConfig>(r#"{"url": "x", "db": 3}"#);
    assert!(unknown.unwrap_err().to_string().contains("db"));
}
