//! The identity-map contract (`CONTRACT.md`, "Identity map") as one async fn per rule.
//!
//! Each case takes handles on one fresh, empty map. Several handles on the same map (provider
//! values on one root, pools or clients on one schema or prefix) show that the rules hold
//! across them: the single-caller cases use the first and check through the last, the
//! concurrent ones spread their tasks over all of them. A backend's test file stamps them with
//! [`crate::identity_map_suite!`].

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

use memory_core::{Identity, IdentityMap, MemoryError, UserId};

/// Handles on one fresh map, with whatever keeps its namespace alive (a temp dir, a schema
/// guard).
pub struct Maps {
    handles: Vec<Arc<dyn IdentityMap>>,
    _guard: Option<Box<dyn Any + Send>>,
}

impl Maps {
    /// Handles on one empty map; at least one.
    ///
    /// # Panics
    /// When `handles` is empty.
    pub fn new(handles: Vec<Arc<dyn IdentityMap>>) -> Self {
        assert!(!handles.is_empty(), "the identity cases need a map");
        Maps {
            handles,
            _guard: None,
        }
    }

    /// Keeps `guard` alive until the test ends, then drops it.
    pub fn with_guard(mut self, guard: impl Any + Send) -> Self {
        self._guard = Some(Box::new(guard));
        self
    }

    /// The handles, all on the same map.
    pub fn handles(&self) -> &[Arc<dyn IdentityMap>] {
        &self.handles
    }
}

/// What an identity-map `setup` fn returns: [`Maps`], or `Option<Maps>` where `None` skips the
/// test because the server it needs is not available.
pub trait IntoMaps {
    /// The maps, or `None` to skip.
    fn into_maps(self) -> Option<Maps>;
}

impl IntoMaps for Maps {
    fn into_maps(self) -> Option<Maps> {
        Some(self)
    }
}

impl IntoMaps for Option<Maps> {
    fn into_maps(self) -> Option<Maps> {
        self
    }
}

fn id(text: &str) -> Identity {
    text.parse().expect("a valid identity")
}

fn user(name: &str) -> UserId {
    UserId::new(name).expect("a valid user id")
}

fn first(maps: &[Arc<dyn IdentityMap>]) -> &dyn IdentityMap {
    &*maps[0]
}

fn last(maps: &[Arc<dyn IdentityMap>]) -> &dyn IdentityMap {
    &*maps[maps.len() - 1]
}

async fn all(map: &dyn IdentityMap) -> Vec<(Identity, UserId)> {
    map.identities().await.expect("identities")
}

/// An empty map resolves nothing and lists nothing.
pub async fn unknown_identities_resolve_to_none(maps: &[Arc<dyn IdentityMap>]) {
    let map = first(maps);
    assert_eq!(map.resolve(&id("telegram:12345")).await.unwrap(), None);
    assert!(all(map).await.is_empty(), "resolving creates nothing");
}

/// A link resolves, through every handle, for exactly its identity: the same platform user id
/// on another platform is another identity. Platform user ids keep every character.
pub async fn linked_identities_resolve_everywhere(maps: &[Arc<dyn IdentityMap>]) {
    let grace = user("grace");
    let odd = [
        "telegram:12345",
        "matrix:@grace:example.org",
        r#"mail:"Grace H." <grace@example.org> \ {"x": 1}"#,
        "slack:Grâce 🐚",
    ];
    for identity in odd {
        let previous = first(maps)
            .link(&id(identity), &grace, false)
            .await
            .unwrap();
        assert_eq!(previous, None, "{identity} was not linked before");
    }
    for map in maps {
        for identity in odd {
            assert_eq!(
                map.resolve(&id(identity)).await.unwrap(),
                Some(grace.clone()),
                "{identity}"
            );
        }
        assert_eq!(map.resolve(&id("slack:12345")).await.unwrap(), None);
        assert_eq!(map.resolve(&id("telegram:1234")).await.unwrap(), None);
    }
}

/// Linking an identity to the user it already has returns that user and changes nothing,
/// with or without `relink`.
pub async fn relinking_to_the_same_user_changes_nothing(maps: &[Arc<dyn IdentityMap>]) {
    let (identity, grace) = (id("telegram:12345"), user("grace"));
    first(maps).link(&identity, &grace, false).await.unwrap();
    let before = all(last(maps)).await;
    for relink in [false, true] {
        let previous = last(maps).link(&identity, &grace, relink).await.unwrap();
        assert_eq!(previous, Some(grace.clone()), "relink: {relink}");
    }
    assert_eq!(all(first(maps)).await, before);
}

/// A link to another user is `IdentityTaken`, naming both users, and changes nothing; with
/// `relink` it moves the identity and returns the user it had.
pub async fn a_taken_identity_moves_only_with_relink(maps: &[Arc<dyn IdentityMap>]) {
    let (identity, grace, ada) = (id("telegram:12345"), user("grace"), user("ada"));
    first(maps).link(&identity, &grace, false).await.unwrap();
    let before = all(first(maps)).await;

    let err = last(maps).link(&identity, &ada, false).await.unwrap_err();
    assert!(
        matches!(&err, MemoryError::IdentityTaken { identity: named, linked_to, requested }
            if *named == identity.to_string() && *linked_to == grace && *requested == ada),
        "{err:?}"
    );
    assert_eq!(
        first(maps).resolve(&identity).await.unwrap(),
        Some(grace.clone())
    );
    assert_eq!(
        all(first(maps)).await,
        before,
        "a refused link writes nothing"
    );

    let previous = last(maps).link(&identity, &ada, true).await.unwrap();
    assert_eq!(
        previous,
        Some(grace),
        "relink returns the user it moved from"
    );
    assert_eq!(first(maps).resolve(&identity).await.unwrap(), Some(ada));
}

/// `identities` lists every link once, sorted by identity: by platform, then platform user
/// id, comparing bytes (not a locale's collation).
pub async fn identities_are_sorted_and_complete(maps: &[Arc<dyn IdentityMap>]) {
    let links = [
        ("telegram:b", "u1"),
        ("slack:a", "u2"),
        ("telegram:B", "u3"),
        ("telegram:a", "u1"),
        ("Telegram:a", "u4"),
        ("slack:_x", "u5"),
        ("telegram:a b", "u6"),
        ("slack-2:a", "u7"),
    ];
    for (i, (identity, name)) in links.iter().enumerate() {
        maps[i % maps.len()]
            .link(&id(identity), &user(name), false)
            .await
            .unwrap();
    }
    // The contract's order, written out rather than taken from `Identity`'s own `Ord` (the one
    // every backend sorts with): platforms first ("slack" before "slack-2", though '-' sorts
    // before ':' in the whole string), bytes not collation ('T' < 's' < 't', '_' < 'a'), and a
    // platform user id before the longer ids it is a prefix of.
    let expected: Vec<(Identity, UserId)> = [
        ("Telegram:a", "u4"),
        ("slack:_x", "u5"),
        ("slack:a", "u2"),
        ("slack-2:a", "u7"),
        ("telegram:B", "u3"),
        ("telegram:a", "u1"),
        ("telegram:a b", "u6"),
        ("telegram:b", "u1"),
    ]
    .iter()
    .map(|(identity, name)| (id(identity), user(name)))
    .collect();
    assert_eq!(expected.len(), links.len(), "every link is listed once");
    for map in maps {
        assert_eq!(all(&**map).await, expected);
    }
}

/// 16 tasks spread over the handles link 16 different identities at once: every link is kept
/// (a read-modify-write without a lock would lose some).
pub async fn concurrent_links_lose_nothing(maps: &[Arc<dyn IdentityMap>]) {
    const TASKS: usize = 16;
    let tasks: Vec<_> = (0..TASKS)
        .map(|i| {
            let map = Arc::clone(&maps[i % maps.len()]);
            tokio::spawn(async move {
                map.link(&id(&format!("chat:{i}")), &user(&format!("u{i}")), false)
                    .await
            })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.expect("task").expect("link"), None);
    }
    let expected: Vec<(Identity, UserId)> = (0..TASKS)
        .map(|i| (id(&format!("chat:{i}")), user(&format!("u{i}"))))
        .collect::<BTreeMap<_, _>>()
        .into_iter()
        .collect();
    assert_eq!(all(first(maps)).await, expected);
}

/// 8 tasks spread over the handles link one identity to 8 different users at once, without
/// `relink`: exactly one succeeds, every other gets `IdentityTaken` naming the winner, and the
/// map holds the winner's link alone.
pub async fn concurrent_links_of_one_identity_have_one_winner(maps: &[Arc<dyn IdentityMap>]) {
    let identity = id("chat:shared");
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (map, identity) = (Arc::clone(&maps[i % maps.len()]), identity.clone());
            tokio::spawn(async move { map.link(&identity, &user(&format!("u{i}")), false).await })
        })
        .collect();
    let mut winners = Vec::new();
    let mut taken_by = Vec::new();
    for (i, task) in tasks.into_iter().enumerate() {
        match task.await.expect("task") {
            Ok(None) => winners.push(user(&format!("u{i}"))),
            Err(MemoryError::IdentityTaken { linked_to, .. }) => taken_by.push(linked_to),
            other => panic!("expected a first link or IdentityTaken, got {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    let winner = winners.remove(0);
    assert!(
        taken_by.iter().all(|u| *u == winner),
        "the refusals name the winner {winner}: {taken_by:?}"
    );
    assert_eq!(all(last(maps)).await, vec![(identity, winner)]);
}

/// `unlink` returns the user the identity was linked to; then it resolves to none, through
/// every handle, `identities` no longer lists it, and every other link is as it was.
pub async fn unlink_returns_the_user_and_removes_only_its_link(maps: &[Arc<dyn IdentityMap>]) {
    let (identity, grace, ada) = (id("telegram:12345"), user("grace"), user("ada"));
    let others = [
        (id("slack:12345"), grace.clone()),
        (id("telegram:1234"), ada.clone()),
        (id("telegram:123456"), grace.clone()),
    ];
    first(maps).link(&identity, &grace, false).await.unwrap();
    for (other, owner) in &others {
        first(maps).link(other, owner, false).await.unwrap();
    }

    assert_eq!(
        last(maps).unlink(&identity).await.unwrap(),
        Some(grace),
        "unlink returns the user it was linked to"
    );
    let expected: Vec<(Identity, UserId)> = others
        .iter()
        .cloned()
        .collect::<BTreeMap<_, _>>()
        .into_iter()
        .collect();
    for map in maps {
        assert_eq!(map.resolve(&identity).await.unwrap(), None);
        for (other, owner) in &others {
            assert_eq!(
                map.resolve(other).await.unwrap().as_ref(),
                Some(owner),
                "{other}"
            );
        }
        assert_eq!(all(&**map).await, expected);
    }
}

/// Unlinking an identity that is not linked returns none and changes nothing, on an empty map
/// and beside other links, however often it is repeated.
pub async fn unlinking_an_identity_not_linked_changes_nothing(maps: &[Arc<dyn IdentityMap>]) {
    let absent = id("telegram:12345");
    assert_eq!(first(maps).unlink(&absent).await.unwrap(), None);
    assert!(
        all(last(maps)).await.is_empty(),
        "unlinking creates nothing"
    );

    first(maps)
        .link(&id("slack:12345"), &user("grace"), false)
        .await
        .unwrap();
    first(maps)
        .link(&id("telegram:1234"), &user("ada"), false)
        .await
        .unwrap();
    let before = all(first(maps)).await;
    for map in maps {
        assert_eq!(map.unlink(&absent).await.unwrap(), None);
        assert_eq!(map.unlink(&absent).await.unwrap(), None);
    }
    assert_eq!(all(last(maps)).await, before);
}

/// Once unlinked, an identity is free: a link to another user, without `relink`, succeeds and
/// returns none, as a first link does.
pub async fn an_unlinked_identity_links_to_anyone_without_relink(maps: &[Arc<dyn IdentityMap>]) {
    let (identity, grace, ada) = (id("telegram:12345"), user("grace"), user("ada"));
    first(maps).link(&identity, &grace, false).await.unwrap();
    assert_eq!(first(maps).unlink(&identity).await.unwrap(), Some(grace));

    let previous = last(maps).link(&identity, &ada, false).await.unwrap();
    assert_eq!(previous, None, "an unlinked identity is linked to no one");
    for map in maps {
        assert_eq!(map.resolve(&identity).await.unwrap(), Some(ada.clone()));
    }
    assert_eq!(all(first(maps)).await, vec![(identity, ada)]);
}

/// 8 tasks spread over the handles unlink one linked identity at once: exactly one gets the
/// user it was linked to, every other gets none (a read then a delete without a lock would
/// give it to several), and the map holds the other links alone.
pub async fn concurrent_unlinks_of_one_identity_have_one_winner(maps: &[Arc<dyn IdentityMap>]) {
    let (identity, bystander, grace) = (id("chat:shared"), id("chat:other"), user("grace"));
    first(maps).link(&identity, &grace, false).await.unwrap();
    first(maps).link(&bystander, &grace, false).await.unwrap();
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (map, identity) = (Arc::clone(&maps[i % maps.len()]), identity.clone());
            tokio::spawn(async move { map.unlink(&identity).await })
        })
        .collect();
    let mut winners = 0;
    for task in tasks {
        if let Some(user) = task.await.expect("task").expect("unlink") {
            assert_eq!(user, grace, "an unlink returns the user it removed");
            winners += 1;
        }
    }
    assert_eq!(winners, 1, "exactly one unlink removes the link");
    assert_eq!(all(last(maps)).await, vec![(bystander, grace)]);
}
