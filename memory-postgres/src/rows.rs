//! Rows as the core's types: a document's row and its history's tip as read, a stored revision,
//! and a compare-and-swap's writes and revisions as the array columns the write statement binds.

use std::time::Duration;

use memory_core::raw::{
    CasWrite, Fetched, RevisionTip, StoredRevision, from_signed_unix_millis, sha256_hex,
};
use memory_core::{
    Document, DocumentId, IdempotencyKey, MemoryError, PersonalityId, Retention, Revision, UserId,
    Version,
};
use sqlx::Postgres;
use sqlx::postgres::PgArguments;
use sqlx::query::QueryAs;

use crate::store::{PostgresStore, row_key};

impl PostgresStore {
    /// `id` as [`PostgresStore::select_on`] read it.
    pub(crate) fn fetched(
        &self,
        id: &DocumentId,
        row: SelectedRow,
    ) -> Result<Fetched, MemoryError> {
        let corrupt = |reason: String| MemoryError::Corrupt {
            location: self.location_of(id),
            reason,
        };
        // The table's CHECK keeps versions positive.
        let version = match row.version {
            Some(version) => u64::try_from(version)
                .map_err(|_| corrupt(format!("version {version} is not positive")))?,
            None => 0,
        };
        let tip = self.tip(id, row.tip)?;
        let document = Document {
            id: id.clone(),
            text: row.content.unwrap_or_default(),
            version: Version::new(version.to_string()),
            location: self.location_of(id),
            modified: row.updated_at.map(from_signed_unix_millis),
        };
        Ok(Fetched {
            document,
            version,
            receipts: row.receipts,
            tip,
        })
    }

    /// The tip of `id`'s history as stored: none (every column NULL) is the empty tip.
    pub(crate) fn tip(&self, id: &DocumentId, tip: TipColumns) -> Result<RevisionTip, MemoryError> {
        let (Some(number), Some(version_after), Some(sha256_after), Some(bytes)) = (
            tip.tip_number,
            tip.tip_version,
            tip.tip_sha256,
            tip.tip_bytes,
        ) else {
            return Ok(RevisionTip::empty(Version::new("0")));
        };
        let location = || format!("{}#{number}", self.history_location(id));
        Ok(RevisionTip {
            number: stored_count(number, "number", location)?,
            version_after: Version::new(version_after),
            sha256_after,
            bytes_after: stored_count(bytes, "bytes_after", location)?,
        })
    }

    /// A stored revision of `id`, or `Corrupt` naming the revision and what in it is not ours.
    pub(crate) fn revision(
        &self,
        id: &DocumentId,
        row: HistoryRow,
    ) -> Result<Revision, MemoryError> {
        StoredRevision {
            number: row.number,
            version_before: row.version_before,
            version_after: row.version_after,
            sha256_before: row.sha256_before,
            sha256_after: row.sha256_after,
            bytes_before: row.bytes_before,
            bytes_after: row.bytes_after,
            time: from_signed_unix_millis(row.time),
            surface: row.surface,
            personality: row.personality,
            user: row.user_id,
            idempotency_key: row.idempotency_key,
            session: row.session,
            updates: Some(row.updates),
            text: row.content,
            redacted_at: row.redacted_at.map(from_signed_unix_millis),
        }
        .check(id, &self.history_location(id))
    }
}

/// A document as [`Statements::select`](crate::sql::Statements::select) reads it, with the tip
/// of its history.
#[derive(sqlx::FromRow)]
pub(crate) struct SelectedRow {
    pub(crate) content: Option<String>,
    pub(crate) version: Option<i64>,
    /// Milliseconds since the Unix epoch: sqlx decodes TIMESTAMPTZ only with a time crate.
    pub(crate) updated_at: Option<i64>,
    pub(crate) receipts: Option<String>,
    #[sqlx(flatten)]
    pub(crate) tip: TipColumns,
    /// The server's clock, in milliseconds.
    pub(crate) now: i64,
}

/// A document as [`Statements::read_changed`](crate::sql::Statements::read_changed) reads
/// it: no row (every column NULL) for one never written, no content where `unchanged`.
#[derive(sqlx::FromRow)]
pub(crate) struct ChangedRow {
    pub(crate) content: Option<String>,
    pub(crate) version: Option<i64>,
    /// Milliseconds since the Unix epoch.
    pub(crate) updated_at: Option<i64>,
    /// Still at the version the reader knows.
    pub(crate) unchanged: bool,
}

/// A document as [`Statements::read_two`](crate::sql::Statements::read_two) reads it.
#[derive(sqlx::FromRow)]
pub(crate) struct ReadRow {
    pub(crate) kind: String,
    pub(crate) owner: String,
    pub(crate) content: String,
    pub(crate) version: i64,
    /// Milliseconds since the Unix epoch.
    pub(crate) updated_at: i64,
}

/// The newest revision of a document: every column NULL when it has none.
#[derive(sqlx::FromRow)]
pub(crate) struct TipColumns {
    pub(crate) tip_number: Option<i64>,
    pub(crate) tip_version: Option<String>,
    pub(crate) tip_sha256: Option<String>,
    pub(crate) tip_bytes: Option<i64>,
}

impl TipColumns {
    /// No tip: a read that does not ask for it.
    pub(crate) const NONE: TipColumns = TipColumns {
        tip_number: None,
        tip_version: None,
        tip_sha256: None,
        tip_bytes: None,
    };
}

/// What [`Statements::purge_history`](crate::sql::Statements::purge_history) erased: each
/// revision's number and time (milliseconds since the Unix epoch), in the same order, and the
/// newest of them.
#[derive(sqlx::FromRow)]
pub(crate) struct ErasedRow {
    pub(crate) numbers: Vec<i64>,
    pub(crate) times: Vec<i64>,
    #[sqlx(flatten)]
    pub(crate) tip: TipColumns,
    pub(crate) now: i64,
}

/// One stored revision, as [`Statements::history`](crate::sql::Statements::history) reads it.
#[derive(sqlx::FromRow)]
pub(crate) struct HistoryRow {
    number: i64,
    version_before: String,
    version_after: String,
    sha256_before: String,
    sha256_after: String,
    bytes_before: i64,
    bytes_after: i64,
    /// Milliseconds since the Unix epoch.
    time: i64,
    surface: String,
    personality: Option<String>,
    user_id: Option<String>,
    idempotency_key: Option<String>,
    session: Option<String>,
    updates: String,
    content: Option<String>,
    /// Milliseconds since the Unix epoch; `None` for a revision not redacted.
    redacted_at: Option<i64>,
}

/// A count or size for a column (BIGINT): ours never reach `i64::MAX`.
pub(crate) fn to_i64(value: impl TryInto<i64>) -> i64 {
    value.try_into().unwrap_or(i64::MAX)
}

/// A count, size or revision number as stored in `column`: a negative one was not written by
/// us (the tables' CHECKs forbid it; a hand edit may have dropped them).
pub(crate) fn stored_count<T: TryFrom<i64>>(
    value: i64,
    column: &str,
    location: impl Fn() -> String,
) -> Result<T, MemoryError> {
    T::try_from(value).map_err(|_| MemoryError::Corrupt {
        location: location(),
        reason: format!("{column}: {value} is negative"),
    })
}

/// The values [`Statements::write`](crate::sql::Statements::write) binds for one compare-and-swap.
pub(crate) struct WriteBinds<'a> {
    kinds: Vec<&'static str>,
    owners: Vec<String>,
    texts: Vec<&'a str>,
    expected: Vec<i64>,
    /// The text each was planned from, where that was the writer's view and not a read.
    expected_texts: Vec<Option<&'a str>>,
    hashes: Vec<String>,
    receipts: Vec<Option<&'a str>>,
    /// Per document: the number its first revision takes and the one its last takes (0: it
    /// records none), and the lowest number its retention keeps after them.
    first: Vec<i64>,
    tip: Vec<i64>,
    oldest: Vec<i64>,
    /// Per document: the newest of its revisions stored whole (`Revision::is_base`), 0 for
    /// none, which pruning may start from though the statement cannot see it yet.
    base: Vec<i64>,
    revisions: RevisionColumns<'a>,
    max_age_ms: Option<i64>,
}

/// A row the write statement landed: its key, and the statement's time (epoch milliseconds,
/// as a read gives `updated_at`), which dated it.
pub(crate) type LandedRow = (String, String, i64);

impl<'a> WriteBinds<'a> {
    /// The values for `writes`, pruned as their retention says (the provider's: one for all).
    ///
    /// # Errors
    /// As [`RevisionColumns::of`].
    pub(crate) fn of(writes: &'a [CasWrite<'a>]) -> Result<Self, MemoryError> {
        let retention = writes
            .first()
            .map_or(Retention::OFF, |write| write.retention);
        let (kinds, owners): (Vec<&'static str>, Vec<String>) =
            writes.iter().map(|write| row_key(write.id)).unzip();
        let texts: Vec<&'a str> = writes.iter().map(|write| write.text).collect();
        let numbers = |write: &CasWrite<'_>| {
            let number = |revision: Option<&Revision>| revision.map_or(0, |r| r.number);
            (
                number(write.revisions.first()),
                number(write.revisions.last()),
            )
        };
        Ok(WriteBinds {
            kinds,
            owners,
            expected: writes
                .iter()
                .map(|write| write.expected.try_into().unwrap_or(i64::MAX))
                .collect(),
            expected_texts: writes.iter().map(|write| write.expected_text).collect(),
            hashes: texts.iter().map(|text| sha256_hex(text)).collect(),
            texts,
            receipts: writes.iter().map(|write| write.receipts).collect(),
            first: writes.iter().map(|w| to_i64(numbers(w).0)).collect(),
            tip: writes.iter().map(|w| to_i64(numbers(w).1)).collect(),
            oldest: writes
                .iter()
                .map(|w| to_i64(retention.oldest_kept(numbers(w).1)))
                .collect(),
            base: writes
                .iter()
                .map(|w| {
                    let bases = w.revisions.iter().filter(|r| r.is_base());
                    to_i64(bases.map(|r| r.number).max().unwrap_or(0))
                })
                .collect(),
            revisions: RevisionColumns::of(writes)?,
            max_age_ms: retention
                .max_age
                .map(|age| to_i64(age.min(LONGEST_MAX_AGE).as_millis())),
        })
    }

    /// `statement` (the write statement) with these values bound.
    pub(crate) fn bound<'q>(
        &'q self,
        statement: QueryAs<'q, Postgres, LandedRow, PgArguments>,
    ) -> QueryAs<'q, Postgres, LandedRow, PgArguments> {
        let query = statement
            .bind(&self.kinds)
            .bind(&self.owners)
            .bind(&self.texts)
            .bind(&self.expected)
            .bind(&self.hashes)
            .bind(&self.receipts)
            .bind(&self.first)
            .bind(&self.tip)
            .bind(&self.oldest)
            .bind(&self.expected_texts)
            .bind(&self.base);
        self.revisions.bind(query).bind(self.max_age_ms)
    }
}

/// The longest age limit sent to the server: the statement subtracts it from `now()`, which must
/// stay a timestamp (they end at 4713 BC). Any longer limit prunes nothing more.
const LONGEST_MAX_AGE: Duration = Duration::from_secs(1000 * 366 * 86_400);

/// The revisions of one compare-and-swap, one array per column of the history table, as the
/// write statement unnests them.
struct RevisionColumns<'a> {
    kind: Vec<&'static str>,
    owner: Vec<String>,
    number: Vec<i64>,
    version_before: Vec<&'a str>,
    version_after: Vec<&'a str>,
    sha256_before: Vec<&'a str>,
    sha256_after: Vec<&'a str>,
    bytes_before: Vec<i64>,
    bytes_after: Vec<i64>,
    surface: Vec<String>,
    personality: Vec<Option<&'a str>>,
    user: Vec<Option<&'a str>>,
    idempotency_key: Vec<Option<&'a str>>,
    session: Vec<Option<&'a str>>,
    updates: Vec<String>,
    content: Vec<Option<&'a str>>,
}

impl<'a> RevisionColumns<'a> {
    /// The revisions of all `writes`, in order. Their `time` is left out: the server stamps
    /// its own.
    ///
    /// # Errors
    /// [`MemoryError::InvalidUpdate`] for updates that cannot be written as JSON (none can
    /// fail today; the error is there so that no future update panics a write).
    fn of(writes: &'a [CasWrite<'a>]) -> Result<Self, MemoryError> {
        let count = writes.iter().map(|write| write.revisions.len()).sum();
        let mut columns = RevisionColumns {
            kind: Vec::with_capacity(count),
            owner: Vec::with_capacity(count),
            number: Vec::with_capacity(count),
            version_before: Vec::with_capacity(count),
            version_after: Vec::with_capacity(count),
            sha256_before: Vec::with_capacity(count),
            sha256_after: Vec::with_capacity(count),
            bytes_before: Vec::with_capacity(count),
            bytes_after: Vec::with_capacity(count),
            surface: Vec::with_capacity(count),
            personality: Vec::with_capacity(count),
            user: Vec::with_capacity(count),
            idempotency_key: Vec::with_capacity(count),
            session: Vec::with_capacity(count),
            updates: Vec::with_capacity(count),
            content: Vec::with_capacity(count),
        };
        for write in writes {
            let (kind, owner) = row_key(write.id);
            for revision in write.revisions {
                let updates = serde_json::to_string(&revision.updates).map_err(|err| {
                    MemoryError::InvalidUpdate {
                        index: 0,
                        document: write.id.clone(),
                        reason: format!("cannot be recorded as JSON: {err}"),
                    }
                })?;
                columns.kind.push(kind);
                columns.owner.push(owner.clone());
                columns.number.push(to_i64(revision.number));
                columns
                    .version_before
                    .push(revision.version_before.as_str());
                columns.version_after.push(revision.version_after.as_str());
                columns.sha256_before.push(&revision.sha256_before);
                columns.sha256_after.push(&revision.sha256_after);
                columns.bytes_before.push(to_i64(revision.bytes_before));
                columns.bytes_after.push(to_i64(revision.bytes_after));
                columns.surface.push(revision.surface.to_string());
                columns
                    .personality
                    .push(revision.personality.as_ref().map(PersonalityId::as_str));
                columns
                    .user
                    .push(revision.user.as_ref().map(UserId::as_str));
                columns.idempotency_key.push(
                    revision
                        .idempotency_key
                        .as_ref()
                        .map(IdempotencyKey::as_str),
                );
                columns.session.push(revision.session.as_deref());
                columns.updates.push(updates);
                columns.content.push(revision.text.as_deref());
            }
        }
        Ok(columns)
    }

    /// `query` with the columns bound, in the order
    /// [`Statements::write`](crate::sql::Statements::write) takes them.
    fn bind<'q>(
        &'q self,
        query: QueryAs<'q, Postgres, LandedRow, PgArguments>,
    ) -> QueryAs<'q, Postgres, LandedRow, PgArguments> {
        query
            .bind(&self.kind)
            .bind(&self.owner)
            .bind(&self.number)
            .bind(&self.version_before)
            .bind(&self.version_after)
            .bind(&self.sha256_before)
            .bind(&self.sha256_after)
            .bind(&self.bytes_before)
            .bind(&self.bytes_after)
            .bind(&self.surface)
            .bind(&self.personality)
            .bind(&self.user)
            .bind(&self.idempotency_key)
            .bind(&self.session)
            .bind(&self.updates)
            .bind(&self.content)
    }
}
