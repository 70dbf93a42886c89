//! One provider for every store that keeps a version counter per document: the store supplies
//! the calls that touch storage ([`VersionedStore`]), [`Versioned`] the rest of the contract
//! (writes through [`CasWriter`], events, deadlines, retention, history views, receipts,
//! `list`'s order, the identity map's order).

use std::future::Future;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;

use crate::{
    CasWriter, CompareAndSwap, DEFAULT_DEADLINE, Document, DocumentId, EventBus, Fetched,
    IdempotencyKey, Identity, IdentityMap, IfMatch, LONGEST_DEADLINE, MemoryContext, MemoryError,
    MemoryProvider, MemoryUpdate, PersonalityId, Prefetch, Purged, Receipts, Retention, Revision,
    Store, Subscription, Surface, SyncReport, UserId, Version, history_view, kept_revisions,
    sha256_hex,
};

/// A document's history as a store read it: what [`VersionedStore::history`] returns.
#[derive(Debug, Clone)]
pub struct StoredHistory {
    /// The document as it is now, with its history's tip, read in the same snapshot as
    /// `recorded` (so a hand edit since the tip shows).
    pub current: Fetched,
    /// The newest revisions stored, newest first: at least the `limit` asked for where there
    /// are that many. Revisions a write has not pruned yet may be among them; [`Versioned`]
    /// leaves out what the retention no longer keeps.
    pub recorded: Vec<Revision>,
    /// The store's clock at the read (the server's, where there is one), for the age rule.
    pub now: SystemTime,
    /// Where the revisions are kept (a table, a key), as a `Corrupt` error names a revision
    /// that cannot be rebuilt: `<location>#<number>`.
    pub location: String,
}

/// The calls that touch storage, for a store with a version counter per document. Together
/// with [`CompareAndSwap`] (one snapshot read, one conditional write, and a hold where the
/// store can), this is all a backend writes; [`Versioned`] makes it a [`MemoryProvider`].
#[async_trait]
pub trait VersionedStore: CompareAndSwap {
    /// Where the documents are, for messages: a URL without credentials, a key prefix.
    fn location(&self) -> String;

    /// `ids` as they are now, in order: one consistent read, without receipts or history.
    /// The default reads them with [`CompareAndSwap::fetch`].
    async fn read(&self, ids: &[DocumentId]) -> Result<Vec<Document>, MemoryError> {
        Ok(self
            .fetch(ids, false)
            .await?
            .into_iter()
            .map(|fetched| fetched.document)
            .collect())
    }

    /// Every document stored (written at least once, even if cleared since), in any order.
    /// Whatever stored is not a document of the layout is left out.
    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError>;

    /// `document` and its newest `limit` (at least 1) stored revisions, in one snapshot.
    /// A stored revision that is not ours (a hand edit of the store) is
    /// [`MemoryError::Corrupt`]; [`StoredRevision::check`] checks the fields.
    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<StoredHistory, MemoryError>;

    /// Erases `document`, its receipts and its history in one atomic step, leaving a tombstone
    /// ([`Revision::tombstone`]) where [`Retention::leaves_tombstone`] says, stored in the same
    /// step.
    /// A write racing the purge either lands before it (and is erased) or finds the
    /// document never written.
    async fn purge(
        &self,
        document: &DocumentId,
        surface: Surface,
        retention: &Retention,
    ) -> Result<Purged, MemoryError>;
}

/// A store built from its configuration, for [`Versioned::connect`].
#[async_trait]
pub trait Connect: VersionedStore + Sized {
    /// What the store is built from.
    type Config: Sync;

    /// Connects (and prepares the storage where the configuration asks), and returns the
    /// store with the settings its provider runs with.
    async fn connect(config: &Self::Config) -> Result<(Self, Settings), MemoryError>;
}

/// How a [`Versioned`] provider runs: what a backend's configuration sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Compare-and-swap attempts per call before [`MemoryError::Contention`] (at least 1).
    pub max_attempts: u32,
    /// How long one call may take in all.
    pub deadline: Duration,
    /// How much of each document's history writes keep.
    pub retention: Retention,
}

/// The attempts per call unless set otherwise: enough for a few dozen writers on one
/// document, which take turns once they have lost a race.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 64;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            deadline: DEFAULT_DEADLINE,
            retention: Retention::default(),
        }
    }
}

/// The memory contract on a [`VersionedStore`]. Every call ends within the deadline (see
/// [`Versioned::with_deadline`]); `sync` retries lost races through [`CasWriter`]; history is
/// what the retention keeps, with a hand edit not yet recorded at its head.
pub struct Versioned<S> {
    store: S,
    writer: CasWriter,
    events: EventBus,
    settings: Settings,
}

impl<S> std::fmt::Debug for Versioned<S>
where
    S: VersionedStore,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Versioned")
            .field("location", &self.store.location())
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl<S: VersionedStore> Versioned<S> {
    /// A provider on `store` with the default [`Settings`].
    pub fn new(store: S) -> Self {
        Versioned {
            store,
            writer: CasWriter::new(DEFAULT_MAX_ATTEMPTS),
            events: EventBus::new(),
            settings: Settings::default(),
        }
    }

    /// Connects a store with `config` (see [`Connect`]) and runs it with the settings the
    /// configuration gives.
    ///
    /// # Errors
    /// Whatever the store's `connect` fails with.
    pub async fn connect(config: &S::Config) -> Result<Self, MemoryError>
    where
        S: Connect,
    {
        let (store, settings) = S::connect(config).await?;
        Ok(Versioned::new(store).with_settings(settings))
    }

    /// Sets every setting at once.
    pub fn with_settings(self, settings: Settings) -> Self {
        self.with_max_attempts(settings.max_attempts)
            .with_deadline(settings.deadline)
            .with_retention(settings.retention)
    }

    /// Sets how many compare-and-swap attempts a `sync` makes before `Contention` (at least 1).
    pub fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.writer = self.writer.with_max_attempts(max_attempts);
        self.settings.max_attempts = self.writer.max_attempts();
        self
    }

    /// Sets how long one call may take in all: reads, lock waits, retries and writes; kept
    /// between 1 ms and [`LONGEST_DEADLINE`].
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        let deadline = deadline.clamp(Duration::from_millis(1), LONGEST_DEADLINE);
        self.writer = self.writer.with_deadline(deadline);
        self.settings.deadline = deadline;
        self
    }

    /// Sets how much of each document's history writes keep; [`Retention::OFF`] records none.
    pub fn with_retention(mut self, retention: Retention) -> Self {
        self.writer = self.writer.with_retention(retention);
        self.settings.retention = retention;
        self
    }

    /// The settings it runs with.
    pub fn settings(&self) -> Settings {
        self.settings
    }

    /// The store, for what only it offers (its pool, its keys).
    pub fn store(&self) -> &S {
        &self.store
    }

    /// `call` bounded by the deadline: past it, `Unavailable` naming `what`, and `after` (what
    /// the caller should know of a write that may have landed) at the end of the message.
    async fn within_deadline<T>(
        &self,
        what: impl FnOnce() -> String,
        after: &str,
        call: impl Future<Output = Result<T, MemoryError>>,
    ) -> Result<T, MemoryError> {
        match tokio::time::timeout(self.settings.deadline, call).await {
            Ok(result) => result,
            Err(_) => Err(MemoryError::Unavailable {
                what: what(),
                message: format!(
                    "no reply within the call's deadline of {} ms{after}",
                    self.settings.deadline.as_millis()
                ),
                source: None,
            }),
        }
    }

    /// `ids` read in one step, exactly one document each.
    async fn read_all(&self, ids: &[DocumentId]) -> Result<Vec<Document>, MemoryError> {
        let documents = self.store.read(ids).await?;
        if documents.len() == ids.len() {
            Ok(documents)
        } else {
            Err(MemoryError::Unavailable {
                what: self.store.location(),
                message: format!(
                    "asked for {} documents, the store answered with {}",
                    ids.len(),
                    documents.len()
                ),
                source: None,
            })
        }
    }
}

#[async_trait]
impl<S: VersionedStore> MemoryProvider for Versioned<S> {
    async fn prefetch(&self, ctx: &MemoryContext) -> Result<Prefetch, MemoryError> {
        let ids = [ctx.document(Store::Memory), ctx.document(Store::User)];
        let documents = self
            .within_deadline(
                || format!("{} and {}", ids[0], ids[1]),
                "",
                self.read_all(&ids),
            )
            .await?;
        Ok(Prefetch::from_documents(ctx, &documents[0], &documents[1]))
    }

    async fn sync(
        &self,
        ctx: &MemoryContext,
        updates: &[MemoryUpdate],
        if_match: &IfMatch,
    ) -> Result<SyncReport, MemoryError> {
        self.writer
            .sync(&self.store, &self.events, ctx, updates, if_match)
            .await
    }

    async fn read(&self, document: &DocumentId) -> Result<Document, MemoryError> {
        let ids = std::slice::from_ref(document);
        let mut documents = self
            .within_deadline(|| document.to_string(), "", self.read_all(ids))
            .await?;
        Ok(documents.remove(0))
    }

    async fn receipts(&self, document: &DocumentId) -> Result<Receipts, MemoryError> {
        let fetched = self.within_deadline(
            || document.to_string(),
            "",
            self.store.fetch(std::slice::from_ref(document), true),
        );
        let fetched = fetched.await?;
        let fetched = fetched.first().ok_or_else(|| MemoryError::Unavailable {
            what: document.to_string(),
            message: "the store answered with no document".to_owned(),
            source: None,
        })?;
        Receipts::parse(&fetched.document.location, fetched.receipts.as_deref())
    }

    async fn list(&self) -> Result<Vec<DocumentId>, MemoryError> {
        let mut ids = self
            .within_deadline(|| self.store.location(), "", self.store.list())
            .await?;
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    async fn history(
        &self,
        document: &DocumentId,
        limit: usize,
    ) -> Result<Vec<Revision>, MemoryError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let read = |limit| {
            self.within_deadline(
                || document.to_string(),
                "",
                self.store.history(document, limit),
            )
        };
        let mut stored = read(limit).await?;
        // The oldest read is a change whose base is older still: read back to it.
        if limit != usize::MAX
            && stored
                .recorded
                .last()
                .is_some_and(|oldest| !oldest.stands_alone())
        {
            stored = read(usize::MAX).await?;
        }
        let StoredHistory {
            current,
            recorded,
            now,
            location,
        } = stored;
        if let Some(pair) = recorded
            .windows(2)
            .find(|pair| pair[0].number <= pair[1].number)
        {
            return Err(MemoryError::Corrupt {
                location: location.clone(),
                reason: format!(
                    "its history has revision {} after revision {}: numbers must fall, newest first",
                    pair[1].number, pair[0].number
                ),
            });
        }
        let retention = self.settings.retention;
        let kept = kept_revisions(recorded, current.tip.number, now, &retention, &location)?;
        Ok(history_view(
            kept,
            &current.tip,
            &current.document,
            limit,
            now,
            &retention,
        ))
    }

    async fn purge(&self, document: &DocumentId, surface: Surface) -> Result<Purged, MemoryError> {
        self.within_deadline(
            || document.to_string(),
            "; the purge may or may not have landed, and purging again is safe",
            self.store
                .purge(document, surface, &self.settings.retention),
        )
        .await
    }

    fn subscribe(&self) -> Subscription {
        self.events.subscribe()
    }

    fn deadline(&self) -> Option<Duration> {
        Some(self.settings.deadline)
    }
}

/// The identity map of a store that keeps one, each call within the deadline, and the list in
/// the contract's order (the store's own collation need not compare bytes).
#[async_trait]
impl<S: VersionedStore + IdentityMap> IdentityMap for Versioned<S> {
    async fn resolve(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        self.within_deadline(|| identity.to_string(), "", self.store.resolve(identity))
            .await
    }

    async fn link(
        &self,
        identity: &Identity,
        user: &UserId,
        relink: bool,
    ) -> Result<Option<UserId>, MemoryError> {
        self.within_deadline(
            || identity.to_string(),
            "; the link may or may not have landed, and linking again is safe",
            self.store.link(identity, user, relink),
        )
        .await
    }

    async fn unlink(&self, identity: &Identity) -> Result<Option<UserId>, MemoryError> {
        self.within_deadline(
            || identity.to_string(),
            "; the unlink may or may not have landed, and unlinking again is safe",
            self.store.unlink(identity),
        )
        .await
    }

    async fn identities(&self) -> Result<Vec<(Identity, UserId)>, MemoryError> {
        let mut links = self
            .within_deadline(|| self.store.location(), "", self.store.identities())
            .await?;
        links.sort();
        Ok(links)
    }
}

/// A revision's fields as a store keeps them, each as plain text or a count, for
/// [`StoredRevision::check`] to turn into a [`Revision`] or refuse as not ours.
#[derive(Debug, Clone)]
pub struct StoredRevision {
    /// Its number.
    pub number: i64,
    /// The version before it.
    pub version_before: String,
    /// The version after it.
    pub version_after: String,
    /// SHA-256 (hex) of the text before.
    pub sha256_before: String,
    /// SHA-256 (hex) of the text after.
    pub sha256_after: String,
    /// UTF-8 bytes before.
    pub bytes_before: i64,
    /// UTF-8 bytes after.
    pub bytes_after: i64,
    /// When it was recorded.
    pub time: SystemTime,
    /// Where it came from, as [`Surface`] displays it.
    pub surface: String,
    /// The personality whose call made it.
    pub personality: Option<String>,
    /// The user of that call.
    pub user: Option<String>,
    /// The call's idempotency key.
    pub idempotency_key: Option<String>,
    /// The caller's session.
    pub session: Option<String>,
    /// The updates it applied, as a JSON array; `None` or empty for none.
    pub updates: Option<String>,
    /// The text after it; `None` for a purge's tombstone.
    pub text: Option<String>,
}

impl StoredRevision {
    /// The revision of `document` these fields describe, or [`MemoryError::Corrupt`] at
    /// `location` (`<where the history is>#<number>`) naming the first field that is not ours:
    /// a number below 1, a negative count, a hash that is not SHA-256 in hex, a surface we do
    /// not write, an id or key that is not valid, updates that do not parse, or a text whose
    /// size or hash is not the one recorded beside it.
    ///
    /// # Errors
    /// As above.
    pub fn check(self, document: &DocumentId, location: &str) -> Result<Revision, MemoryError> {
        let number = self.number;
        let corrupt = |field: &str, reason: String| MemoryError::Corrupt {
            location: format!("{location}#{number}"),
            reason: format!("{field}: {reason}"),
        };
        let count = |field: &str, value: i64| {
            u64::try_from(value).map_err(|_| corrupt(field, format!("{value} is negative")))
        };
        let size = |field: &str, value: i64| {
            count(field, value).and_then(|value| {
                usize::try_from(value).map_err(|_| corrupt(field, format!("{value} is too large")))
            })
        };
        if number < 1 {
            return Err(corrupt(
                "number",
                format!("{number} is not a revision number: they start at 1"),
            ));
        }
        for (field, hash) in [
            ("sha256_before", &self.sha256_before),
            ("sha256_after", &self.sha256_after),
        ] {
            let hex = hash.len() == 64
                && hash
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if !hex {
                return Err(corrupt(field, format!("{hash:?} is not a SHA-256 in hex")));
            }
        }
        let surface: Surface = self
            .surface
            .parse()
            .map_err(|reason: String| corrupt("surface", reason))?;
        let personality = self
            .personality
            .map(PersonalityId::new)
            .transpose()
            .map_err(|err| corrupt("personality", err.to_string()))?;
        let user = self
            .user
            .map(UserId::new)
            .transpose()
            .map_err(|err| corrupt("user", err.to_string()))?;
        let idempotency_key = self
            .idempotency_key
            .map(IdempotencyKey::new)
            .transpose()
            .map_err(|err| corrupt("idempotency_key", err.to_string()))?;
        let updates: Vec<MemoryUpdate> = match self.updates.as_deref() {
            None | Some("") => Vec::new(),
            Some(json) => serde_json::from_str(json)
                .map_err(|err| corrupt("updates", format!("not a list of updates: {err}")))?,
        };
        let bytes_after = size("bytes_after", self.bytes_after)?;
        if let Some(text) = &self.text
            && (text.len() != bytes_after || sha256_hex(text) != self.sha256_after)
        {
            return Err(corrupt(
                "text",
                "it is not the text its sha256_after and bytes_after describe".to_owned(),
            ));
        }
        Ok(Revision {
            number: count("number", number)?,
            document: document.clone(),
            version_before: Version::new(self.version_before),
            version_after: Version::new(self.version_after),
            sha256_before: self.sha256_before,
            sha256_after: self.sha256_after,
            bytes_before: size("bytes_before", self.bytes_before)?,
            bytes_after,
            time: self.time,
            surface,
            personality,
            user,
            idempotency_key,
            session: self.session,
            updates,
            text: self.text,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A revision 1 of "hello" as a store would keep it, every field ours.
    fn stored() -> StoredRevision {
        StoredRevision {
            number: 1,
            version_before: "0".to_owned(),
            version_after: "1".to_owned(),
            sha256_before: sha256_hex(""),
            sha256_after: sha256_hex("hello"),
            bytes_before: 0,
            bytes_after: 5,
            time: SystemTime::UNIX_EPOCH,
            surface: "tool".to_owned(),
            personality: Some("ada".to_owned()),
            user: None,
            idempotency_key: None,
            session: None,
            updates: Some(r#"[{"action":"add","store":"memory","content":"hello"}]"#.to_owned()),
            text: Some("hello".to_owned()),
        }
    }

    /// The field `check` names as not ours, or `None` when it takes the revision.
    fn refused(revision: StoredRevision) -> Option<String> {
        match revision.check(&DocumentId::GlobalMemory, "store://h") {
            Ok(_) => None,
            Err(MemoryError::Corrupt { location, reason }) => {
                assert!(location.starts_with("store://h#"), "{location}");
                Some(reason)
            }
            Err(err) => panic!("not Corrupt: {err:?}"),
        }
    }

    #[test]
    fn a_revision_of_ours_is_taken_whole() {
        let revision = stored().check(&DocumentId::GlobalMemory, "h").unwrap();
        assert_eq!(revision.number, 1);
        assert_eq!(revision.text.as_deref(), Some("hello"));
        assert_eq!(
            revision.updates,
            [MemoryUpdate::add(Store::Memory, "hello")]
        );
        let second = StoredRevision {
            number: 2,
            ..stored()
        };
        assert_eq!(refused(second), None, "any number from 1 on");
    }

    #[test]
    fn numbers_start_at_one() {
        for number in [0, -1, i64::MIN] {
            let reason = refused(StoredRevision { number, ..stored() });
            assert_eq!(
                reason,
                Some(format!(
                    "number: {number} is not a revision number: they start at 1"
                ))
            );
        }
    }

    #[test]
    fn hashes_are_sha256_in_lowercase_hex() {
        let hello = sha256_hex("hello");
        for (before, why) in [
            (hello[..63].to_owned(), "one digit short"),
            (format!("{hello}0"), "one digit long"),
            (format!("g{}", &hello[1..]), "not hex"),
            (hello.to_uppercase(), "uppercase"),
            (String::new(), "empty"),
        ] {
            let reason = refused(StoredRevision {
                sha256_before: before,
                ..stored()
            });
            assert!(
                reason
                    .as_deref()
                    .is_some_and(|reason| reason.starts_with("sha256_before: ")),
                "{why}: {reason:?}"
            );
        }
        // Every hex digit passes: 0-9 and a-f.
        let digits = "0123456789abcdef".repeat(4);
        assert_eq!(
            refused(StoredRevision {
                sha256_before: digits,
                ..stored()
            }),
            None
        );
    }

    #[test]
    fn a_text_must_be_the_one_its_size_and_hash_describe() {
        let text_refused =
            Some("text: it is not the text its sha256_after and bytes_after describe".to_owned());
        // The size right, the hash another text's.
        let other = StoredRevision {
            text: Some("jello".to_owned()),
            ..stored()
        };
        assert_eq!(refused(other), text_refused);
        // The hash right, the size wrong.
        let longer = StoredRevision {
            bytes_after: 6,
            ..stored()
        };
        assert_eq!(refused(longer), text_refused);
        // A change without its text is not checked against them.
        let change = StoredRevision {
            text: None,
            bytes_after: 6,
            ..stored()
        };
        assert_eq!(refused(change), None);
    }
}
