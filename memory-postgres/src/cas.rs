//! Compare-and-swap: the snapshot read, the conditional write, and the hold (a transaction that
//! holds the documents' locks) with its turn.

use std::time::Duration;

use async_trait::async_trait;
use memory_core::raw::{
    CasWrite, CompareAndSwap, Fetched, Held, HeldTurn, Hold, Swapped, from_signed_unix_millis,
};
use memory_core::{DocumentId, MemoryError};
use sqlx::postgres::PgArguments;
use sqlx::query::QueryAs;
use sqlx::{Connection, Executor, Postgres};

use crate::lease::{Lease, finish};
use crate::rows::{LandedRow, SelectedRow, WriteBinds};
use crate::store::{PostgresStore, row_key};

/// The two round trips [`CasWriter`](memory_core::raw::CasWriter) needs: one snapshot read, one conditional write.
#[async_trait]
impl CompareAndSwap for PostgresStore {
    /// Reads `ids` in one statement, so they are one consistent snapshot, each with the tip of
    /// its history.
    async fn fetch(&self, ids: &[DocumentId], receipts: bool) -> Result<Vec<Fetched>, MemoryError> {
        let rows = self
            .single(async |connection| self.select_on(connection, ids, receipts, true).await)
            .await?
            .map_err(|err| self.db_error(err))?;
        ids.iter()
            .zip(rows)
            .map(|(id, row)| self.fetched(id, row))
            .collect()
    }

    /// One statement for all writes, which land all or none (see the statement). It runs
    /// alone when the connections' `lock_timeout` keeps its lock waits within `lock_wait`;
    /// otherwise in a transaction begun with `lock_timeout` lowered to fit (one round trip).
    /// A row another session holds locked is not waited for: it is about to change, so the
    /// write loses at once, and [`CasWriter`](memory_core::raw::CasWriter) holds the documents next (see `hold`).
    async fn compare_and_swap(
        &self,
        writes: &[CasWrite<'_>],
        lock_wait: Duration,
    ) -> Result<Swapped, MemoryError> {
        if writes.is_empty() {
            return Ok(Swapped::Landed(None));
        }
        // Only a new document's row can wait, on another writer inserting the same key (and
        // its first revision with it): an existing row is taken only if no one holds it
        // (`free`), and its revisions only after it. Each such wait may take its own
        // `lock_timeout`, so they share what is left.
        let inserts = writes.iter().filter(|write| write.expected == 0).count();
        let waits = u32::try_from(inserts.max(1)).unwrap_or(u32::MAX);
        // At least the shortest wait a `lock_timeout` takes (0 would be none): near the
        // deadline the write still tries, and a lost race names the row that was held.
        let per_row = (lock_wait / waits).max(SHORTEST_LOCK_WAIT);
        let binds = WriteBinds::of(writes)?;
        let query = binds.bound(self.query_as(&self.sql.write));
        let bounded = self.lock_timeout.is_some_and(|timeout| timeout <= per_row);
        let landed = if bounded {
            self.single(async |connection| query.fetch_all(connection).await)
                .await?
        } else {
            self.leased(async |connection| {
                // `SET LOCAL` in the same round trip as `BEGIN`: for this transaction only,
                // in whole milliseconds, at least 1 (0 would be none).
                let begin = format!(
                    "{}; SET LOCAL lock_timeout = '{}ms'",
                    self.begin.write,
                    per_row.as_millis().max(1)
                );
                let transaction = connection.begin_with(begin).await?;
                write_in_transaction(transaction, query).await
            })
            .await?
        };
        match landed {
            Ok(rows) => Ok(swapped(writes, &rows)),
            Err(sqlx::Error::Database(err)) => match lost_on(&*err, writes) {
                Some(lost) => Ok(Swapped::Lost(lost.clone())),
                None => Err(self.db_error(sqlx::Error::Database(err))),
            },
            Err(err) => Err(self.db_error(err)),
        }
    }

    /// The write statement compares the text too, where a write gives it.
    fn checks_text(&self) -> bool {
        true
    }

    /// A transaction on a connection of its own that takes, in key order, each document's
    /// advisory lock (every holder takes it, so holders take turns also on a document with no
    /// row yet) and its row's lock, then reads the documents: the migration's `memory_hold`,
    /// one round trip after `BEGIN`. Each lock is waited for at most `lock_timeout` and at most
    /// its share of `lock_wait`; past that the hold is `Busy`. The turn's write is the usual
    /// statement (its version check stays as a guard) and `COMMIT`; its release `ROLLBACK`.
    /// A turn dropped unused closes its connection, which ends the transaction (see
    /// `Lease`): it never goes back to the pool with the locks held.
    async fn hold(
        &self,
        ids: &[DocumentId],
        receipts: bool,
        lock_wait: Duration,
    ) -> Result<Option<Hold<'_>>, MemoryError> {
        let Some(first) = ids.first() else {
            return Ok(None);
        };
        // Two locks per document, each waited for in turn.
        let locks = u32::try_from(2 * ids.len()).unwrap_or(u32::MAX);
        let mut per_lock = lock_wait / locks;
        if let Some(timeout) = self.lock_timeout {
            per_lock = per_lock.min(timeout);
        }
        // As in `compare_and_swap`: a hold near the deadline still tries, so that when it is
        // busy it names the document another session holds.
        let per_lock = per_lock.max(SHORTEST_LOCK_WAIT);
        let mut lease = self.lease().await?;
        let (kinds, owners): (Vec<&str>, Vec<String>) = ids.iter().map(row_key).unzip();
        let lock_timeout = format!("{}ms", per_lock.as_millis());
        let held = async {
            (&mut *lease)
                .execute(sqlx::raw_sql(&self.begin.write))
                .await?;
            self.query_as::<SelectedRow>(&self.sql.hold)
                .bind(&kinds)
                .bind(&owners)
                .bind(receipts)
                .bind(&lock_timeout)
                .fetch_all(&mut *lease)
                .await
        }
        .await;
        let rows = match held {
            Ok(rows) => rows,
            Err(err) => {
                // Answered with an error: the transaction, if begun, is rolled back and the
                // connection goes back to the pool. Unanswered, the lease closes it.
                let answered = matches!(err, sqlx::Error::Database(_));
                // A lock held past the wait, or a deadlock: another writer has the documents.
                let busy = matches!(&err, sqlx::Error::Database(db)
                    if is_retryable(db.code().as_deref()));
                let rolled_back = answered && finish(lease, "ROLLBACK").await.is_ok();
                if rolled_back && busy {
                    let busy_on = self.held_by_others(ids).await;
                    return Ok(Some(Hold::Busy(busy_on.unwrap_or_else(|| first.clone()))));
                }
                return Err(self.db_error(err));
            }
        };
        let fetched = ids
            .iter()
            .zip(rows)
            .map(|(id, row)| self.fetched(id, row))
            .collect::<Result<Vec<_>, _>>();
        match fetched {
            Ok(fetched) if fetched.len() == ids.len() => Ok(Some(Hold::Held(Held {
                fetched,
                turn: Box::new(PgTurn {
                    provider: self,
                    lease,
                }),
            }))),
            Ok(_) => {
                let _ = finish(lease, "ROLLBACK").await;
                Err(self.unavailable(sqlx::Error::RowNotFound))
            }
            Err(err) => {
                let _ = finish(lease, "ROLLBACK").await;
                Err(err)
            }
        }
    }
}

impl PostgresStore {
    /// The first of `ids` that another session holds now, for the `Busy` of a hold that timed
    /// out to name the document it waited for. `None` when there is one document (it is that
    /// one), when none is held any more, or when the question got no answer.
    async fn held_by_others(&self, ids: &[DocumentId]) -> Option<DocumentId> {
        if ids.len() < 2 {
            return None;
        }
        let (kinds, owners): (Vec<&str>, Vec<String>) = ids.iter().map(row_key).unzip();
        let position: Option<i64> = self
            .single(async |connection| {
                self.query_scalar(&self.sql.held_by_others)
                    .bind(&kinds)
                    .bind(&owners)
                    .fetch_optional(connection)
                    .await
            })
            .await
            .ok()?
            .ok()?;
        let index = usize::try_from(position?).ok()?.checked_sub(1)?;
        ids.get(index).cloned()
    }
}

/// Documents a writer holds: the transaction of [`CompareAndSwap::hold`] on its connection.
struct PgTurn<'a> {
    provider: &'a PostgresStore,
    /// In the transaction that holds the locks; unanswered, so that dropping the turn unused
    /// closes the connection rather than pool it with the transaction open.
    lease: Lease,
}

#[async_trait]
impl HeldTurn for PgTurn<'_> {
    async fn write(self: Box<Self>, writes: &[CasWrite<'_>]) -> Result<Swapped, MemoryError> {
        let PgTurn {
            provider,
            mut lease,
        } = *self;
        if writes.is_empty() {
            let _ = finish(lease, "ROLLBACK").await;
            return Ok(Swapped::Landed(None));
        }
        let binds = match WriteBinds::of(writes) {
            Ok(binds) => binds,
            Err(err) => {
                let _ = finish(lease, "ROLLBACK").await;
                return Err(err);
            }
        };
        let landed = binds
            .bound(provider.query_as(&provider.sql.write))
            .fetch_all(&mut *lease)
            .await;
        match landed {
            Ok(landed) => match swapped(writes, &landed) {
                Swapped::Landed(at) => {
                    finish(lease, "COMMIT")
                        .await
                        .map_err(|err| provider.db_error(err))?;
                    Ok(Swapped::Landed(at))
                }
                // The hold was lost: a document without a row that another writer inserted
                // meanwhile. Nothing of the others is committed either.
                lost @ Swapped::Lost(_) => {
                    finish(lease, "ROLLBACK")
                        .await
                        .map_err(|err| provider.db_error(err))?;
                    Ok(lost)
                }
            },
            Err(sqlx::Error::Database(err)) => {
                let lost = lost_on(&*err, writes).cloned();
                finish(lease, "ROLLBACK")
                    .await
                    .map_err(|err| provider.db_error(err))?;
                match lost {
                    Some(lost) => Ok(Swapped::Lost(lost)),
                    None => Err(provider.db_error(sqlx::Error::Database(err))),
                }
            }
            // No reply: the lease closes the connection, which rolls the transaction back.
            Err(err) => Err(provider.db_error(err)),
        }
    }

    async fn release(self: Box<Self>) {
        // One that cannot be rolled back is closed: that ends the transaction as well.
        let _ = finish(self.lease, "ROLLBACK").await;
    }
}

/// What the write statement came to, from the rows it returned (`landed`): lost on the first
/// of `writes` whose row is not among them (another writer changed it first), else landed at
/// the statement's time.
fn swapped(writes: &[CasWrite<'_>], landed: &[LandedRow]) -> Swapped {
    let lost = writes.iter().map(|write| write.id).find(|id| {
        let (key_kind, key_owner) = row_key(id);
        !landed
            .iter()
            .any(|(kind, owner, _)| *kind == key_kind && *owner == key_owner)
    });
    match lost {
        Some(id) => Swapped::Lost(id.clone()),
        None => Swapped::Landed(
            landed
                .first()
                .map(|(_, _, at)| from_signed_unix_millis(*at)),
        ),
    }
}

/// The write statement in `transaction`, committed only if it succeeded.
async fn write_in_transaction<'q>(
    mut transaction: sqlx::Transaction<'_, Postgres>,
    query: QueryAs<'q, Postgres, LandedRow, PgArguments>,
) -> Result<Vec<LandedRow>, sqlx::Error> {
    let landed = query.fetch_all(&mut *transaction).await;
    if landed.is_ok() {
        transaction.commit().await?;
    } else {
        // Answered here, not when the connection next goes out. A rollback that fails leaves
        // a broken connection, which the pool closes on return.
        let _ = transaction.rollback().await;
    }
    landed
}

/// The shortest `lock_timeout` a write or a hold sets: whole milliseconds, and 0 would mean no
/// bound at all.
const SHORTEST_LOCK_WAIT: Duration = Duration::from_millis(1);

/// The document a write statement that failed with `err` lost its race on, if that is why it
/// failed: the one `memory_lost` names (its position among `writes`, from 1), or the first of
/// `writes` for any other lost race (see `is_retryable`).
fn lost_on<'w>(
    err: &dyn sqlx::error::DatabaseError,
    writes: &'w [CasWrite<'_>],
) -> Option<&'w DocumentId> {
    let first = writes.first().map(|write| write.id);
    match err.code().as_deref() {
        Some(LOST_IN_PART) => {
            let named = err
                .message()
                .parse::<usize>()
                .ok()
                .and_then(|position| position.checked_sub(1))
                .and_then(|index| writes.get(index))
                .map(|write| write.id);
            named.or(first)
        }
        code if is_retryable(code) => first,
        _ => None,
    }
}

/// The code of `memory_lost`'s error (migration `all_landed`): some of a write's documents
/// landed and another did not, so none did.
const LOST_IN_PART: &str = "ML001";

/// Serialization failures, deadlocks, lock waits past `lock_timeout`, and unique violations
/// (only a revision number can be one: a purge's tombstone took it after the writer read the
/// tip): the statement was rolled back and may be retried on a fresh read.
fn is_retryable(code: Option<&str>) -> bool {
    matches!(code, Some("40001" | "40P01" | "55P03" | "23505"))
}
