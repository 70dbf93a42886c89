//! On a Redis Cluster, what the conformance suite cannot show: a resharding that moves the
//! prefix's slot to another master under a connected provider.

mod common;

use std::time::Duration;

use common::Topology;
use memory_conformance::cases::ctx;
use memory_core::{ErrorKind, IfMatch, MemoryProvider, MemoryUpdate, Store};

/// One master as `CLUSTER NODES` lists it.
struct Master {
    id: String,
    host: String,
    port: u16,
    slots: Vec<(u16, u16)>,
}

fn masters(node: &str) -> Vec<Master> {
    let mut connection = redis::Client::open(node).unwrap().get_connection().unwrap();
    let nodes: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query(&mut connection)
        .unwrap();
    nodes
        .lines()
        .filter(|line| line.contains("master"))
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let address = fields[1].split('@').next().unwrap();
            let (host, port) = address.rsplit_once(':').unwrap();
            let slots = fields[8..]
                .iter()
                .filter(|range| !range.starts_with('['))
                .map(|range| match range.split_once('-') {
                    Some((from, to)) => (from.parse().unwrap(), to.parse().unwrap()),
                    None => (range.parse().unwrap(), range.parse().unwrap()),
                })
                .collect();
            Master {
                id: fields[0].to_owned(),
                host: host.to_owned(),
                port: port.parse().unwrap(),
                slots,
            }
        })
        .collect()
}

fn on(master: &Master) -> redis::Connection {
    redis::Client::open(format!("redis://{}:{}", master.host, master.port))
        .unwrap()
        .get_connection()
        .unwrap()
}

/// Moves `slot`, with its keys, from the master that owns it to another, as
/// `redis-cli --cluster reshard` does; returns the new owner's address.
fn move_slot(seed: &str, slot: u16) -> (String, u16) {
    let masters = masters(seed);
    let owns = |master: &&Master| {
        master
            .slots
            .iter()
            .any(|(from, to)| (*from..=*to).contains(&slot))
    };
    let source = masters.iter().find(owns).unwrap();
    let target = masters.iter().find(|master| !owns(master)).unwrap();
    let setslot = |master: &Master, how: &str, id: &str| {
        let () = redis::cmd("CLUSTER")
            .arg(&["SETSLOT", &slot.to_string(), how, id])
            .query(&mut on(master))
            .unwrap();
    };
    setslot(target, "IMPORTING", &source.id);
    setslot(source, "MIGRATING", &target.id);
    let keys: Vec<String> = redis::cmd("CLUSTER")
        .arg("GETKEYSINSLOT")
        .arg(slot)
        .arg(1000)
        .query(&mut on(source))
        .unwrap();
    if !keys.is_empty() {
        let () = redis::cmd("MIGRATE")
            .arg(&target.host)
            .arg(target.port)
            .arg("")
            .arg(0)
            .arg(5000)
            .arg("KEYS")
            .arg(&keys)
            .query(&mut on(source))
            .unwrap();
    }
    for master in &masters {
        setslot(master, "NODE", &target.id);
    }
    (target.host.clone(), target.port)
}

#[tokio::test]
async fn calls_follow_the_prefixs_slot_to_another_master() {
    let Some((provider, keys)) = common::provider_on(Topology::Cluster, |config| config).await
    else {
        return;
    };
    let c = ctx("ada", "u1");
    let add = |text: &str| [MemoryUpdate::add(Store::Memory, text)];
    provider
        .sync(&c, &add("before the move"), &IfMatch::NONE)
        .await
        .unwrap();
    let seed = keys.cluster_nodes[0].clone();
    let slot: u16 = {
        let mut connection = redis::Client::open(seed.as_str())
            .unwrap()
            .get_connection()
            .unwrap();
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(format!("{{{}}}", keys.prefix))
            .query(&mut connection)
            .unwrap()
    };
    let (host, port) = tokio::task::spawn_blocking(move || move_slot(&seed, slot))
        .await
        .unwrap();

    // The provider's slot map is stale: a call may fail on the redirect, with a kind that is
    // retried, and the next goes to the new owner.
    let after = add("after the move");
    let retryable = [ErrorKind::Unavailable];
    let failures =
        common::sync_until_it_lands(&provider, &c, &after, &retryable, Duration::from_secs(10))
            .await;
    println!("{failures} calls failed after the move");
    assert!(failures <= 2, "{failures} calls failed after the move");
    let text = provider
        .read(&c.document(Store::Memory))
        .await
        .unwrap()
        .text;
    assert_eq!(text, "before the move\n\nafter the move\n");
    let key = provider.store().key(&c.document(Store::Memory));
    let mut owner = redis::Client::open(format!("redis://{host}:{port}"))
        .unwrap()
        .get_connection()
        .unwrap();
    let content: String = redis::cmd("HGET")
        .arg(&key)
        .arg("content")
        .query(&mut owner)
        .unwrap();
    assert_eq!(content, text, "the document is on the new owner");
}
