//! A server that stops answering, without closing the connection: every call ends within its
//! deadline with an error that says so (and never shows the password), a write whose reply
//! never came says its outcome is unknown, and calls go through again once the server answers.
//!
//! The server is the real test server behind a proxy of the test's own, which can stop
//! forwarding (holding what it has read, as a stalled network would) and start again.

mod common;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::{Duration, Instant};

use memory_conformance::cases::ctx;
use memory_conformance::proxy::StallingProxy;
use memory_core::{
    IdempotencyKey, Identity, IdentityMap, IfMatch, MemoryError, MemoryProvider, MemoryUpdate,
    Store, UserId,
};
use memory_redis::{RedisConfig, RedisProvider};

/// The password of the test's own ACL user: no error may show it.
const PASSWORD: &str = "hunter2-deadline";
/// How late past its deadline a call may end on a busy test machine.
const SLACK: Duration = Duration::from_secs(2);

/// `host:port` of a `redis://` URL.
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let host = rest.split('/').next().unwrap();
    if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:6379")
    }
}

/// `url` with its host and port replaced by `addr`.
fn through(url: &str, addr: SocketAddr) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (user, rest) = rest
        .rsplit_once('@')
        .map_or(("", rest), |(user, rest)| (user, rest));
    let path = rest.find('/').map_or("", |at| &rest[at..]);
    let at = if user.is_empty() { "" } else { "@" };
    format!("{scheme}://{user}{at}{addr}{path}")
}

/// An ACL user of the test's own with [`PASSWORD`], deleted when dropped.
struct AclUser {
    server: String,
    name: String,
}

impl AclUser {
    async fn create(server: &str, prefix: &str) -> Self {
        let name = format!("deadline-{prefix}");
        let mut admin = redis::Client::open(server)
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let password = format!(">{PASSWORD}");
        let () = redis::cmd("ACL")
            .arg(vec!["SETUSER", &name, "on", &password, "~*", "&*", "+@all"])
            .query_async(&mut admin)
            .await
            .unwrap();
        AclUser {
            server: server.to_owned(),
            name,
        }
    }

    /// The URL of the server through `proxy`, as this user.
    fn url_through(&self, proxy: &StallingProxy) -> String {
        let host = host_of(&self.server);
        let url = format!("redis://{}:{PASSWORD}@{host}", self.name);
        through(&url, proxy.addr())
    }
}

impl Drop for AclUser {
    fn drop(&mut self) {
        let deleted = redis::Client::open(self.server.as_str())
            .and_then(|client| client.get_connection())
            .and_then(|mut connection| {
                redis::cmd("ACL")
                    .arg(vec!["DELUSER", &self.name])
                    .exec(&mut connection)
            });
        if let Err(err) = deleted {
            eprintln!("could not delete ACL user {}: {err}", self.name);
        }
    }
}

/// A provider under a fresh prefix, connected through a fresh proxy as a fresh ACL user. Keep
/// it whole: its guards delete the keys and the user (which disconnects the provider).
struct Setup {
    provider: RedisProvider,
    proxy: StallingProxy,
    keys: common::PrefixGuard,
    _user: AclUser,
}

async fn setup(configure: impl FnOnce(RedisConfig) -> RedisConfig) -> Option<Setup> {
    let url = common::url()?;
    let prefix = common::unique_prefix();
    let user = AclUser::create(&url, &prefix).await;
    let proxy = StallingProxy::start(host_of(&url)).await;
    let config = configure(RedisConfig::new(user.url_through(&proxy)).with_prefix(&prefix));
    let provider = RedisProvider::connect(&config).await.unwrap();
    Some(Setup {
        provider,
        proxy,
        keys: common::PrefixGuard {
            url,
            cluster_nodes: Vec::new(),
            prefix,
        },
        _user: user,
    })
}

/// The error's text, its debug form and its sources', none with the password.
fn assert_no_password(err: &MemoryError) {
    let mut shown = vec![err.to_string(), format!("{err:?}")];
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        shown.push(cause.to_string());
        source = cause.source();
    }
    for text in shown {
        assert!(!text.contains(PASSWORD), "{text}");
    }
}

type Call<'a> = Pin<Box<dyn Future<Output = Result<(), MemoryError>> + 'a>>;

/// With the proxy stalled, each call fails at its deadline (1 s, well before the 5 s response
/// timeout that bounded calls before), saying so and naming no password: the sync
/// `OutcomeUnknown` (its first command is its write, planned from the writer's view of the
/// document), the others `Unavailable`; the stalled sync lands at most once; once the proxy
/// forwards again the same provider works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_answering_fails_each_call_within_the_deadline() {
    let Some(setup) = setup(|config| RedisConfig {
        deadline_ms: 1000,
        ..config
    })
    .await
    else {
        return;
    };
    let (p, proxy) = (&setup.provider, &setup.proxy);
    let c = ctx("ada", "u1");
    let add = |text: &str| [MemoryUpdate::add(Store::Memory, text)];
    p.sync(&c, &add("before"), &IfMatch::NONE).await.unwrap();
    let identity: Identity = "telegram:1".parse().unwrap();
    let grace = UserId::new("grace").unwrap();
    let other: Identity = "telegram:2".parse().unwrap();
    p.link(&other, &grace, false).await.unwrap();

    proxy.stall();
    let calls: Vec<(&str, Call<'_>)> = vec![
        (
            "sync",
            Box::pin(async { p.sync(&c, &add("during"), &IfMatch::NONE).await.map(drop) }),
        ),
        (
            "read",
            Box::pin(async { p.read(&c.document(Store::Memory)).await.map(drop) }),
        ),
        (
            "prefetch",
            Box::pin(async { p.prefetch(&c).await.map(drop) }),
        ),
        ("list", Box::pin(async { p.list().await.map(drop) })),
        (
            "resolve",
            Box::pin(async { p.resolve(&identity).await.map(drop) }),
        ),
        (
            "identities",
            Box::pin(async { p.identities().await.map(drop) }),
        ),
        (
            "link",
            Box::pin(async { p.link(&identity, &grace, false).await.map(drop) }),
        ),
        (
            "unlink",
            Box::pin(async { p.unlink(&other).await.map(drop) }),
        ),
    ];
    for (name, call) in calls {
        let started = Instant::now();
        let err = call.await.expect_err(name);
        let elapsed = started.elapsed();
        assert!(
            elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(1) + SLACK,
            "{name} ended after {elapsed:?}"
        );
        let sent_unanswered = name == "sync";
        assert!(
            match &err {
                MemoryError::OutcomeUnknown { .. } => sent_unanswered,
                MemoryError::Unavailable { .. } => !sent_unanswered,
                _ => false,
            },
            "{name}: {err:?}"
        );
        let message = err.to_string();
        assert!(message.contains("deadline of 1000 ms"), "{name}: {message}");
        assert_no_password(&err);
        if name == "link" {
            assert!(message.contains("linking again is safe"), "{message}");
        }
        if name == "unlink" {
            assert!(message.contains("unlinking again is safe"), "{message}");
        }
    }

    proxy.resume();
    p.sync(&c, &add("after"), &IfMatch::NONE)
        .await
        .expect("the server answers again");
    // The stalled write, delivered when the proxy resumed, landed before "after" or lost its
    // race to it: once or not at all.
    let text = p.read(&c.document(Store::Memory)).await.unwrap().text;
    assert!(
        ["before\n\nafter\n", "before\n\nduring\n\nafter\n"].contains(&text.as_str()),
        "{text:?}"
    );
    // The stalled link may have landed once the proxy forwarded it; linking again is fine
    // either way.
    p.link(&identity, &grace, false)
        .await
        .expect("linking again is safe");
    assert_eq!(p.resolve(&identity).await.unwrap(), Some(grace));
    // The stalled unlink too: unlinking again leaves the identity unlinked either way.
    p.unlink(&other).await.expect("unlinking again is safe");
    assert_eq!(p.resolve(&other).await.unwrap(), None);
}

/// A response timeout shorter than the deadline ends a call first, as `Unavailable`.
#[tokio::test]
async fn a_response_timeout_shorter_than_the_deadline_ends_the_call_first() {
    let Some(setup) = setup(|config| RedisConfig {
        response_timeout_ms: 200,
        deadline_ms: 5000,
        ..config
    })
    .await
    else {
        return;
    };
    let (p, proxy) = (&setup.provider, &setup.proxy);
    let document = ctx("ada", "u1").document(Store::User);
    p.read(&document).await.unwrap();
    proxy.stall();
    let started = Instant::now();
    let err = p.read(&document).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(200) + SLACK);
    assert!(matches!(err, MemoryError::Unavailable { .. }), "{err:?}");
    assert_no_password(&err);
    proxy.resume();
    p.read(&document).await.expect("the server answers again");
}

/// The write reaches the server but its reply never comes back, nor that of the read that
/// would show it landed: `OutcomeUnknown`, within the deadline. The write did land; the same
/// call repeated with its idempotency key then reports it without applying it twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_whose_reply_never_comes_is_outcome_unknown_and_a_keyed_retry_applies_once() {
    let Some(setup) = setup(|config| RedisConfig {
        response_timeout_ms: 300,
        deadline_ms: 3000,
        ..config
    })
    .await
    else {
        return;
    };
    let (p, proxy, keys) = (&setup.provider, &setup.proxy, &setup.keys);
    let c = ctx("ada", "u1");
    let document = c.document(Store::Memory);
    // Loads the write script into the server's cache, so the write is one request.
    p.sync(
        &c,
        &[MemoryUpdate::add(Store::Memory, "first")],
        &IfMatch::NONE,
    )
    .await
    .unwrap();

    let keyed = c
        .clone()
        .with_idempotency_key(IdempotencyKey::new("turn-7").unwrap());
    let add = [MemoryUpdate::add(Store::Memory, "once")];
    // Only the write script is sent the index key.
    proxy.hold_replies_from_request_with(p.store().index_key().as_bytes());
    let started = Instant::now();
    let err = p.sync(&keyed, &add, &IfMatch::NONE).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3) + SLACK);
    assert!(
        matches!(&err, MemoryError::OutcomeUnknown { document: d, .. } if *d == document),
        "{err:?}"
    );
    assert_no_password(&err);

    proxy.resume();
    let direct = RedisProvider::connect(&RedisConfig::new(&keys.url).with_prefix(&keys.prefix))
        .await
        .unwrap();
    let landed = direct.read(&document).await.unwrap();
    assert_eq!(landed.text, "first\n\nonce\n", "the write had landed");
    let again = p.sync(&keyed, &add, &IfMatch::NONE).await.unwrap();
    assert_eq!(again.documents[0].version_after, landed.version);
    assert_eq!(
        direct.read(&document).await.unwrap().text,
        "first\n\nonce\n",
        "applied once"
    );
}

/// A deadline of 0 or past a day is refused when connecting, before any connection is tried.
#[tokio::test]
async fn deadlines_out_of_range_are_refused() {
    for deadline_ms in [0, memory_redis::MAX_DEADLINE_MS + 1, u64::MAX] {
        let config = RedisConfig {
            deadline_ms,
            ..RedisConfig::new("redis://agent:hunter2@127.0.0.1:1")
        };
        let err = RedisProvider::connect(&config).await.unwrap_err();
        assert!(
            matches!(err, MemoryError::Config { .. }),
            "{deadline_ms}: {err:?}"
        );
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }
}
