//! The identity map: which user a platform's account is.
//!
//! An agent reached over several platforms sees one person under several platform ids. The map
//! resolves `(platform, platform user id)` to the one [`UserId`] whose `USER.md` the agent reads,
//! so what it learnt on one platform is known on the others.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::MemoryError;
use crate::id::validate::validate;
use crate::id::{IdKind, UserId};

/// The longest platform user id accepted, in bytes.
pub const MAX_PLATFORM_USER_LEN: usize = 256;

/// One account on one platform: `telegram:12345`, `slack:U024BE7LH`.
///
/// The platform follows the id rule (`^[A-Za-z0-9_-]{1,64}$`), so `:` separates the two parts
/// unambiguously; the platform's user id may hold anything printable (emails, `@a:matrix.org`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "IdentityParts")]
pub struct Identity {
    platform: String,
    platform_user: String,
}

#[derive(Deserialize)]
struct IdentityParts {
    platform: String,
    platform_user: String,
}

impl TryFrom<IdentityParts> for Identity {
    type Error = MemoryError;
    fn try_from(parts: IdentityParts) -> Result<Self, Self::Error> {
        Identity::new(parts.platform, parts.platform_user)
    }
}

impl Identity {
    /// Validates both parts.
    ///
    /// # Errors
    /// [`MemoryError::InvalidId`] of kind [`IdKind::Platform`] or [`IdKind::PlatformUser`].
    pub fn new(
        platform: impl Into<String>,
        platform_user: impl Into<String>,
    ) -> Result<Self, MemoryError> {
        let (platform, platform_user) = (platform.into(), platform_user.into());
        validate(IdKind::Platform, &platform)?;
        let reason = if platform_user.is_empty() {
            Some("it is empty".to_owned())
        } else if platform_user.len() > MAX_PLATFORM_USER_LEN {
            Some(format!("it is {} bytes long", platform_user.len()))
        } else if let Some(bad) = platform_user.chars().find(|c| c.is_control()) {
            Some(format!("it contains {bad:?}"))
        } else if platform_user.trim() != platform_user {
            Some("it has leading or trailing whitespace".to_owned())
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(MemoryError::InvalidId {
                kind: IdKind::PlatformUser,
                value: platform_user,
                reason,
            });
        }
        Ok(Identity {
            platform,
            platform_user,
        })
    }

    /// The platform.
    pub fn platform(&self) -> &str {
        &self.platform
    }

    /// The platform's own id for the user.
    pub fn platform_user(&self) -> &str {
        &self.platform_user
    }

    /// Whether linking this identity to `user` changes the map that now links it to `current`:
    /// `Ok(false)` when it is already linked to `user`.
    ///
    /// # Errors
    /// [`MemoryError::IdentityTaken`] when it is linked to another user and `relink` is false.
    pub fn check_link(
        &self,
        current: Option<&UserId>,
        user: &UserId,
        relink: bool,
    ) -> Result<bool, MemoryError> {
        match current {
            Some(current) if current == user => Ok(false),
            Some(current) if !relink => Err(MemoryError::IdentityTaken {
                identity: self.to_string(),
                linked_to: current.clone(),
                requested: user.clone(),
            }),
            _ => Ok(true),
        }
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.platform, self.platform_user)
    }
}

impl std::str::FromStr for Identity {
    type Err = MemoryError;
    /// Parses `platform:platform-user-id` (the user id may itself contain `:`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (platform, platform_user) = s.split_once(':').unwrap_or((s, ""));
        Identity::new(platform, platform_user)
    }
}

/// Where identities are linked to users. Every storage backend implements it beside its
/// documents, so the map lives with the deployment's default provider.
///
/// # Behavior
/// - Concurrent links of different identities are all kept (no lost update), across processes
///   for the backends that allow several.
/// - A link never silently moves an identity from one user to another.
/// - Links and unlinks are atomic across tasks, processes and hosts.
#[async_trait]
pub trait IdentityMap: Send + Sync {
    /// The user `identity` is linked to, if any.
    async fn resolve(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError>;

    /// Links `identity` to `user` and returns the user it was linked to before, if any.
    ///
    /// # Behavior
    /// - Linking to the user it already has writes nothing.
    /// - Linked to another user: [`MemoryError::IdentityTaken`] and nothing written, unless
    ///   `relink` is set, which moves it.
    async fn link(
        &self,
        identity: &Identity,
        user: &UserId,
        relink: bool,
    ) -> Result<Option<UserId>, MemoryError>;

    /// Removes the link of `identity` and returns the user it was linked to, or `None` when it
    /// was not linked (nothing written then).
    ///
    /// # Behavior
    /// - Atomic across tasks, processes and hosts, like [`IdentityMap::link`]: of concurrent
    ///   unlinks of one identity, exactly one returns the user, the others `None`.
    /// - Unlinking an identity not linked writes nothing and returns `None`.
    /// - Other links are untouched; the identity can then be linked to any user without
    ///   `relink`.
    async fn unlink(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError>;

    /// Every link, sorted by identity.
    async fn identities(&self) -> Result<Vec<(Identity, UserId)>, MemoryError>;
}

/// The identity map in a mutex: for tests and for the reference provider's deployments.
#[derive(Debug, Default)]
pub struct InMemoryIdentityMap {
    links: Mutex<BTreeMap<Identity, UserId>>,
}

impl InMemoryIdentityMap {
    fn links(&self) -> std::sync::MutexGuard<'_, BTreeMap<Identity, UserId>> {
        self.links
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl IdentityMap for InMemoryIdentityMap {
    async fn resolve(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        Ok(self.links().get(identity).cloned())
    }

    async fn link(
        &self,
        identity: &Identity,
        user: &UserId,
        relink: bool,
    ) -> Result<Option<UserId>, MemoryError> {
        let mut links = self.links();
        let previous = links.get(identity).cloned();
        if identity.check_link(previous.as_ref(), user, relink)? {
            links.insert(identity.clone(), user.clone());
        }
        Ok(previous)
    }

    async fn unlink(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        Ok(self.links().remove(identity))
    }

    async fn identities(&self) -> Result<Vec<(Identity, UserId)>, MemoryError> {
        Ok(self
            .links()
            .iter()
            .map(|(identity, user)| (identity.clone(), user.clone()))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_platform_then_anything() {
        let id: Identity = "matrix:@ada:example.org".parse().unwrap();
        assert_eq!(id.platform(), "matrix");
        assert_eq!(id.platform_user(), "@ada:example.org");
        assert_eq!(id.to_string(), "matrix:@ada:example.org");
    }

    #[test]
    fn refuses_bad_parts_naming_which() {
        for (text, kind) in [
            ("no-colon", IdKind::PlatformUser),
            ("tele gram:1", IdKind::Platform),
            (":1", IdKind::Platform),
            ("slack: 1", IdKind::PlatformUser),
            ("slack:a\nb", IdKind::PlatformUser),
        ] {
            let err = text.parse::<Identity>().unwrap_err();
            assert!(
                matches!(&err, MemoryError::InvalidId { kind: k, .. } if *k == kind),
                "{text:?}: {err}"
            );
            assert!(err.to_string().contains(kind.rule()), "{err}");
        }
        let long = format!("slack:{}", "x".repeat(MAX_PLATFORM_USER_LEN + 1));
        assert!(long.parse::<Identity>().is_err());
        let json = r#"{"platform":"a/b","platform_user":"1"}"#;
        assert!(serde_json::from_str::<Identity>(json).is_err());
    }

    #[test]
    fn check_link_never_moves_silently() {
        let id: Identity = "slack:U1".parse().unwrap();
        let (ada, bob) = (UserId::new("ada").unwrap(), UserId::new("bob").unwrap());
        assert!(id.check_link(None, &ada, false).unwrap());
        assert!(!id.check_link(Some(&ada), &ada, false).unwrap());
        let err = id.check_link(Some(&ada), &bob, false).unwrap_err();
        assert!(
            matches!(&err, MemoryError::IdentityTaken { linked_to, requested, .. } if *linked_to == ada && *requested == bob),
            "{err}"
        );
        assert!(id.check_link(Some(&ada), &bob, true).unwrap());
    }

    #[tokio::test]
    async fn unlink_removes_only_its_identity() {
        let map = InMemoryIdentityMap::default();
        let (slack, telegram): (Identity, Identity) =
            ("slack:U1".parse().unwrap(), "telegram:1".parse().unwrap());
        let (ada, bob) = (UserId::new("ada").unwrap(), UserId::new("bob").unwrap());
        map.link(&slack, &ada, false).await.unwrap();
        map.link(&telegram, &ada, false).await.unwrap();
        assert_eq!(map.unlink(&slack).await.unwrap(), Some(ada.clone()));
        assert_eq!(map.resolve(&slack).await.unwrap(), None);
        assert_eq!(map.unlink(&slack).await.unwrap(), None);
        assert_eq!(
            map.identities().await.unwrap(),
            vec![(telegram, ada.clone())]
        );
        assert_eq!(map.link(&slack, &bob, false).await.unwrap(), None);
        assert_eq!(map.resolve(&slack).await.unwrap(), Some(bob));
    }
}
