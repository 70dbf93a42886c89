//! Every call ends within its deadline, against a real server: a row lock another session
//! holds, and a connection that stops answering (through a proxy that stops forwarding), fail
//! the call in time with an error that says what happened and never shows the password; the
//! pool keeps working afterwards.

mod common;

use memory_core::raw::Versioned;
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use memory_conformance::cases::ctx;
use memory_conformance::proxy::StallingProxy;
use memory_core::{
    ErrorKind, Identity, IdentityMap, IfMatch, MemoryContext, MemoryError, MemoryProvider,
    MemoryUpdate, Store, UserId, sync_exactly_once,
};
use memory_postgres::{PoolMode, PostgresConfig, PostgresProvider, PostgresStore};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, Executor, PgConnection};

/// What a call may take beyond its deadline: scheduling, and the reply to the last statement.
const SLACK: Duration = Duration::from_secs(1);

fn both(text: &str) -> Vec<MemoryUpdate> {
    vec![
        MemoryUpdate::add(Store::Memory, text),
        MemoryUpdate::add(Store::User, text),
    ]
}

/// The text and version of both documents of `c`.
async fn documents(p: &PostgresProvider, c: &MemoryContext) -> Vec<(String, String)> {
    let mut documents = Vec::new();
    for store in [Store::Memory, Store::User] {
        let document = p.read(&c.document(store)).await.unwrap();
        documents.push((document.text, document.version.to_string()));
    }
    documents
}

/// Another session holds the row of `kind` locked (`SELECT ... FOR UPDATE`, then idle in its
/// transaction) while one sync writes it. With the default 64 attempts each waiting out the
/// 5 s `lock_timeout`, that call used to take over five minutes; now it gives up within its
/// deadline (2 s here) as `Contention` naming the held document, writes nothing (also the
/// unlocked document of a two-document call), and a sync after the lock is released lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_lock_held_by_another_session_ends_the_sync_within_its_deadline() {
    row_lock_ends_the_sync_within_its_deadline(PoolMode::Session).await;
}

/// The same through PgBouncer in transaction mode, where each transaction sets its timeouts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_a_transaction_pooler_a_row_lock_ends_the_sync_within_its_deadline() {
    row_lock_ends_the_sync_within_its_deadline(PoolMode::Transaction).await;
}

async fn row_lock_ends_the_sync_within_its_deadline(mode: PoolMode) {
    let Some((_, schema)) = common::provider_on(mode).await else {
        return;
    };
    let deadline = Duration::from_secs(2);
    let config = PostgresConfig {
        migrate: false,
        max_connections: 2,
        deadline_ms: 2_000,
        pool_mode: mode,
        ..PostgresConfig::new(&schema.url).with_schema(&schema.guard.schema)
    };
    let configured = Arc::new(PostgresProvider::connect(&config).await.unwrap());
    let c = ctx("ada", "u1");
    configured
        .sync(&c, &both("old"), &IfMatch::NONE)
        .await
        .unwrap();
    let mut cases = vec![
        (
            "one document",
            configured.clone(),
            vec![MemoryUpdate::add(Store::Memory, "new")],
            "personality_memory",
        ),
        // The memory row is free and written first; the user row is the one held.
        (
            "both documents",
            configured.clone(),
            both("new"),
            "user_profile",
        ),
    ];
    if mode == PoolMode::Session {
        // A pool of the application's own, whose connections have no lock_timeout at all.
        let pool = PgPoolOptions::new()
            .max_connections(2)
            .connect(&schema.url)
            .await
            .unwrap();
        let own_pool =
            Versioned::new(PostgresStore::from_pool(pool, &schema.guard.schema).unwrap())
                .with_deadline(deadline);
        let own_pool = Arc::new(own_pool);
        cases.push((
            "a pool without lock_timeout",
            own_pool,
            vec![MemoryUpdate::add(Store::Memory, "new")],
            "personality_memory",
        ));
    }
    let rounds = cases.len();

    for (case, p, updates, locked) in cases {
        let p = &*p;
        let before = documents(p, &c).await;
        let mut blocker = PgConnection::connect(&schema.guard.url).await.unwrap();
        blocker.execute("BEGIN").await.unwrap();
        blocker
            .execute(
                format!(
                    "SELECT 1 FROM \"{}\".memory_documents WHERE kind = '{locked}' FOR UPDATE",
                    schema.guard.schema
                )
                .as_str(),
            )
            .await
            .unwrap();

        let started = Instant::now();
        let outcome = p.sync(&c, &updates, &IfMatch::NONE).await;
        let took = started.elapsed();
        println!("{case}: a sync blocked by a row lock ended after {took:?}: {outcome:?}");
        let err = outcome.expect_err("the row stays locked past the deadline");
        assert!(took <= deadline + SLACK, "{case}: took {took:?}");
        // Another writer has the document (CONTRACT.md: Contention when retries run out or
        // the deadline passes while others hold it); the server answered all along, so it is
        // not Unavailable, and nothing was written, so the outcome is known.
        // It names the document whose row is held, not the call's first.
        let held = match locked {
            "user_profile" => c.document(Store::User),
            _ => c.document(Store::Memory),
        };
        assert!(
            matches!(&err, MemoryError::Contention { document, .. } if *document == held),
            "{case}: a held row is Contention on {held}: {err:?}"
        );
        assert_eq!(err.kind(), ErrorKind::Busy, "{case}");
        assert_eq!(
            documents(p, &c).await,
            before,
            "{case}: nothing was written"
        );

        // Sent as the CLI, the tools and the service send it (keyed, resent on Busy), it ends
        // within the same deadline: the send used it up, so it is not sent again (it used to
        // be sent three times, each with a deadline of its own).
        let started = Instant::now();
        let outcome = sync_exactly_once(p, &c, &updates, &IfMatch::NONE).await;
        let took = started.elapsed();
        assert!(
            took <= deadline + SLACK,
            "{case}: sent exactly once, took {took:?}"
        );
        assert!(
            matches!(&outcome, Err(MemoryError::Contention { document, .. }) if *document == held),
            "{case}: sent exactly once, Contention on {held}: {outcome:?}"
        );

        blocker.execute("ROLLBACK").await.unwrap();
        let report = p.sync(&c, &updates, &IfMatch::NONE).await;
        assert!(
            report.is_ok(),
            "{case}: lands once the lock is gone: {report:?}"
        );
    }
    let memory = configured.read(&c.document(Store::Memory)).await.unwrap();
    assert_eq!(memory.text, format!("old\n{}", "\nnew\n".repeat(rounds)));
}

/// The test server's URL pointed at `proxy`, with a password in it (the test server trusts
/// local connections, so any will do) unless it has one: returned too, to look for in errors.
fn through(url: &str, proxy: SocketAddr) -> (String, String) {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (user_info, server) = rest.rsplit_once('@').unwrap_or(("", rest));
    let (user, password) = user_info
        .split_once(':')
        .unwrap_or((user_info, "hunter2-in-the-url"));
    let path = &server[server.find(['/', '?']).unwrap_or(server.len())..];
    (
        format!("{scheme}://{user}:{password}@{proxy}{path}"),
        password.to_owned(),
    )
}

/// The calls of the contract that talk to the server.
const CALLS: [&str; 8] = [
    "sync",
    "read",
    "prefetch",
    "list",
    "resolve",
    "link",
    "unlink",
    "identities",
];

async fn call(p: &PostgresProvider, name: &str) -> Result<(), MemoryError> {
    let c = ctx("ada", "u1");
    let identity: Identity = "telegram:1".parse().unwrap();
    let user = UserId::new("u1").unwrap();
    match name {
        "sync" => {
            let updates = [MemoryUpdate::add(Store::Memory, "during the stall")];
            p.sync(&c, &updates, &IfMatch::NONE).await.map(drop)
        }
        "read" => p.read(&c.document(Store::Memory)).await.map(drop),
        "prefetch" => p.prefetch(&c).await.map(drop),
        "list" => p.list().await.map(drop),
        "resolve" => p.resolve(&identity).await.map(drop),
        "link" => p.link(&identity, &user, false).await.map(drop),
        "unlink" => p.unlink(&identity).await.map(drop),
        "identities" => p.identities().await.map(drop),
        _ => unreachable!("{name}"),
    }
}

/// `name` on `p` fails within `deadline` and the slack, as `Unavailable` or `OutcomeUnknown`
/// naming the deadline, and shows `password` nowhere (message, debug form, sources).
async fn assert_fails_in_time(
    p: &PostgresProvider,
    name: &str,
    deadline: Duration,
    password: &str,
) {
    let started = Instant::now();
    let outcome = call(p, name).await;
    let took = started.elapsed();
    println!("{name} on a stalled connection ended after {took:?}: {outcome:?}");
    let err = outcome.expect_err("nothing answers");
    assert!(took <= deadline + SLACK, "{name}: took {took:?}");
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Unavailable | ErrorKind::OutcomeUnknown
        ),
        "{name}: {err:?}"
    );
    assert!(err.to_string().contains("deadline"), "{name}: {err}");
    assert_no_password(&err, password);
}

fn assert_no_password(err: &MemoryError, password: &str) {
    let mut shown = format!("{err} {err:?}");
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        shown += &format!(" {cause} {cause:?}");
        source = cause.source();
    }
    assert!(!shown.contains(password), "{shown}");
}

/// Waits until the pool of `p` holds an idle connection, sqlx's tests of it on release done.
async fn until_idle(p: &PostgresProvider) {
    let started = Instant::now();
    while p.store().pool().num_idle() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "never back in the pool"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A connection that stops answering after it was acquired (the proxy in between stops
/// forwarding, closing nothing) used to hang the call forever. Now every call fails within
/// its deadline (1 s here) as `Unavailable` or `OutcomeUnknown`, with no password in sight,
/// and the pool keeps working: the stalled connection is closed rather than returned to the
/// pool, where sqlx would test it with no time bound and hold its pool slot for good, so the
/// next call works on a new connection while the old one stays stalled. The same for a
/// connection that stalls as it goes back to the pool, and for `connect` itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_connection_fails_the_call_within_its_deadline_and_is_not_reused() {
    let Some((direct, schema)) = common::provider().await else {
        return;
    };
    let deadline = Duration::from_secs(1);
    let upstream = PgConnectOptions::from_str(&schema.url).unwrap();
    let proxy =
        StallingProxy::start(format!("{}:{}", upstream.get_host(), upstream.get_port())).await;
    let (url, password) = through(&schema.url, proxy.addr());
    // One connection, so every call below runs on the one the proxy stalls.
    let config = PostgresConfig {
        migrate: false,
        max_connections: 1,
        deadline_ms: 1_000,
        ..PostgresConfig::new(&url).with_schema(&schema.schema)
    };
    let p = PostgresProvider::connect(&config).await.unwrap();
    let c = ctx("ada", "u1");
    p.sync(&c, &both("before"), &IfMatch::NONE).await.unwrap();

    for name in CALLS {
        // The connection answers a call, and is back in the pool; then it stalls under the
        // next call's first statement (a connection idle so briefly is not pinged first).
        proxy.resume();
        p.list().await.unwrap();
        until_idle(&p).await;
        proxy.stall_after(0);
        assert_fails_in_time(&p, name, deadline, &password).await;
    }

    // That connection stays stalled; new ones get through, if the pool has room for them.
    proxy.let_new_through();
    let report = p.sync(&c, &both("after"), &IfMatch::NONE).await;
    assert!(
        report.is_ok(),
        "the stalled connection was not kept: {report:?}"
    );

    // A connection that answers a call and then stalls, as it is tested on its way back to
    // the pool: closed within the deadline, and the calls after it get a new one. (The
    // statement is prepared by then, so the call is one read: the query.)
    p.list().await.unwrap();
    until_idle(&p).await;
    proxy.stall_after(1);
    p.list().await.unwrap();
    proxy.let_new_through();
    let started = Instant::now();
    loop {
        match p.list().await {
            Ok(_) => break,
            Err(err) => assert!(
                started.elapsed() < 2 * deadline + SLACK,
                "the pool did not recover: {err:?}"
            ),
        }
    }
    println!(
        "the pool recovered from a stall on release after {:?}",
        started.elapsed()
    );

    // The stalled sync's first statement is its write (planned from the writer's view of the
    // document, without a read): sent, and held by the stalled path, which delivers it when it
    // resumes, after the call said OutcomeUnknown. Nothing else of the stalled calls landed,
    // and nothing twice.
    let memory = [
        ("before\n\nafter\n".to_owned(), "2".to_owned()),
        (
            "before\n\nduring the stall\n\nafter\n".to_owned(),
            "3".to_owned(),
        ),
    ];
    let documents = documents(&direct, &c).await;
    assert!(memory.contains(&documents[0]), "{documents:?}");
    assert_eq!(
        documents[1],
        ("before\n\nafter\n".to_owned(), "2".to_owned()),
        "nothing of the stalled calls landed"
    );

    // No connection at all: `connect` is `Unavailable` within its connect timeout (and the
    // second more it allows a TCP connect), without the password.
    proxy.stall();
    let started = Instant::now();
    let connecting = PostgresConfig {
        connect_timeout_ms: 500,
        ..config.clone()
    };
    let err = PostgresProvider::connect(&connecting).await.unwrap_err();
    assert!(
        started.elapsed() <= Duration::from_millis(1_500) + SLACK,
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(err, MemoryError::Unavailable { .. }), "{err:?}");
    assert_no_password(&err, &password);

    proxy.resume();
    let report = p.sync(&c, &both("resumed"), &IfMatch::NONE).await;
    assert!(report.is_ok(), "works once the path is back: {report:?}");
}

/// Nothing listens at the address (`127.0.0.1:1` refuses at once): `connect`, which the first
/// call of a lazily connected provider waits for, fails as soon as the refusal comes back, as
/// `Unavailable` (the contract's kind for a backend it cannot reach, which a retry may fix)
/// naming the address and the refusal. It used to wait out the connect timeout while sqlx's
/// pool retried, and then say only "pool timed out while waiting for an open connection":
/// `memory sync` took 15.6 s whatever `deadline_ms` said (three sends, each waiting the 5 s
/// connect timeout), and 60.6 s with `connect_timeout_ms = 20000`.
#[tokio::test]
async fn a_refused_connection_fails_at_once_naming_the_address_and_the_refusal() {
    for connect_timeout_ms in [5_000, 20_000] {
        let config = PostgresConfig {
            deadline_ms: 300,
            connect_timeout_ms,
            ..PostgresConfig::new("postgres://agent:hunter2@127.0.0.1:1/memory")
        };
        let started = Instant::now();
        let err = PostgresProvider::connect(&config)
            .await
            .expect_err("nothing listens there");
        let took = started.elapsed();
        println!("refused, connect_timeout_ms {connect_timeout_ms}: {took:?}: {err}");
        // Well above the 300 ms deadline, far below any connect timeout.
        assert!(took < Duration::from_secs(2), "took {took:?}");
        assert_eq!(err.kind(), ErrorKind::Unavailable, "{err:?}");
        let message = err.to_string();
        assert!(
            message.contains("127.0.0.1:1"),
            "names the address: {message}"
        );
        assert!(
            message.to_lowercase().contains("refused"),
            "names the refusal: {message}"
        );
        assert_no_password(&err, "hunter2");
    }
}

/// A server that never answers (a blackholed address, or a proxy that accepts and stalls):
/// `connect` ends within the deadline when it is shorter than the connect timeout, as
/// `Unavailable` saying that no connection came in that time; it used to wait the whole connect
/// timeout (and a second more).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_fails_the_connect_within_the_deadline() {
    let Some(url) = common::url() else {
        return;
    };
    let upstream = PgConnectOptions::from_str(&url).unwrap();
    let proxy =
        StallingProxy::start(format!("{}:{}", upstream.get_host(), upstream.get_port())).await;
    proxy.stall();
    let (url, password) = through(&url, proxy.addr());
    let config = PostgresConfig {
        deadline_ms: 500,
        connect_timeout_ms: 5_000,
        ..PostgresConfig::new(&url)
    };
    let started = Instant::now();
    let err = PostgresProvider::connect(&config)
        .await
        .expect_err("nothing answers");
    let took = started.elapsed();
    println!("stalled: {took:?}: {err}");
    assert!(took <= Duration::from_millis(500) + SLACK, "took {took:?}");
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains(&proxy.addr().to_string()) && message.contains("no connection within"),
        "{message}"
    );
    assert_no_password(&err, &password);
}

/// A forwarding proxy to `upstream` on a loopback port, and the tasks that run it: aborting
/// them closes the port (a connect is refused) and every connection through it.
async fn forwarding_proxy(
    upstream: String,
) -> (
    SocketAddr,
    Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let tasks = Arc::new(std::sync::Mutex::new(Vec::new()));
    let accepting = tokio::spawn({
        let tasks = tasks.clone();
        async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let forwarding = tokio::spawn(async move {
                    if let Ok(mut server) = tokio::net::TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                tasks.lock().unwrap().push(forwarding);
            }
        }
    });
    tasks.lock().unwrap().push(accepting);
    (addr, tasks)
}

/// The server goes away after `connect` (its port refuses connections, its connections are
/// cut): each call still ends within its deadline, and once the pool has no connection left
/// the call says why, naming the address and the refusal, where it used to say only "pool
/// timed out while waiting for an open connection".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_gone_after_connect_fails_calls_naming_the_address_and_the_refusal() {
    let Some((_, schema)) = common::provider().await else {
        return;
    };
    let upstream = PgConnectOptions::from_str(&schema.url).unwrap();
    let (proxy, tasks) =
        forwarding_proxy(format!("{}:{}", upstream.get_host(), upstream.get_port())).await;
    let (url, password) = through(&schema.url, proxy);
    let deadline = Duration::from_secs(2);
    let config = PostgresConfig {
        migrate: false,
        max_connections: 1,
        connect_timeout_ms: 300,
        deadline_ms: 2_000,
        ..PostgresConfig::new(&url).with_schema(&schema.schema)
    };
    let p = PostgresProvider::connect(&config).await.unwrap();
    p.list().await.unwrap();

    for task in tasks.lock().unwrap().drain(..) {
        task.abort();
    }
    let mut last = None;
    for _ in 0..5 {
        let started = Instant::now();
        let err = p.list().await.expect_err("the server is gone");
        let took = started.elapsed();
        println!("a call with the server gone ended after {took:?}: {err}");
        assert!(took <= deadline + SLACK, "took {took:?}");
        assert_eq!(err.kind(), ErrorKind::Unavailable, "{err:?}");
        assert_no_password(&err, &password);
        let message = err.to_string();
        if message.to_lowercase().contains("refused") {
            last = Some(message);
            break;
        }
        // The first call may meet the cut connection; it is not reused.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let message = last.expect("a call names the refusal once no connection is left");
    assert!(
        message.contains(&proxy.to_string()),
        "names the address: {message}"
    );
}
