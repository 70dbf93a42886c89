//! The SQL: what begins a transaction, and every statement of a provider, built once from its
//! schema's table names.

use std::sync::Arc;

/// The statements that start this provider's transactions. In transaction mode each also sets
/// the timeouts for its transaction (`SET LOCAL`), which in session mode the connection has.
/// Each is `READ WRITE`, the snapshot too though it only reads: a server in recovery (a
/// standby) refuses that at once, so neither a write nor a read goes to a standby, even behind
/// a pooler that may hand each transaction to another server.
#[derive(Debug)]
pub(crate) struct Begin {
    /// A read-write transaction.
    pub(crate) write: String,
    /// A read-only snapshot: one view of the document, its tip and its revisions.
    pub(crate) snapshot: String,
}

impl Begin {
    /// `BEGIN`, followed by `timeouts` set for the transaction.
    pub(crate) fn with(timeouts: &[(&str, String)]) -> Self {
        let settings: String = timeouts
            .iter()
            .map(|(setting, value)| format!("; SET LOCAL {setting} = '{value}'"))
            .collect();
        Begin {
            write: format!("BEGIN READ WRITE{settings}"),
            snapshot: format!("BEGIN ISOLATION LEVEL REPEATABLE READ READ WRITE{settings}"),
        }
    }
}

/// How many of a document's oldest revisions a write looks at for pruning: a bounded amount of
/// work per write, more than the one or two revisions a write adds, so that what a lowered
/// retention leaves behind drains away over the next writes.
const PRUNE_PER_WRITE: usize = 8;

/// The statements of one provider, built once from its (validated) schema name.
#[derive(Debug)]
pub(crate) struct Statements {
    pub(crate) select: Arc<str>,
    pub(crate) hold: Arc<str>,
    pub(crate) held_by_others: Arc<str>,
    pub(crate) select_documents: Arc<str>,
    pub(crate) read_changed: Arc<str>,
    pub(crate) read_two: Arc<str>,
    pub(crate) write: Arc<str>,
    pub(crate) history: Arc<str>,
    pub(crate) purge_document: Arc<str>,
    pub(crate) purge_hold: Arc<str>,
    pub(crate) purge_history: Arc<str>,
    pub(crate) tombstone: Arc<str>,
    pub(crate) redact: Arc<str>,
    pub(crate) list: Arc<str>,
    pub(crate) resolve: Arc<str>,
    pub(crate) link_first: Arc<str>,
    pub(crate) lock_link: Arc<str>,
    pub(crate) relink: Arc<str>,
    pub(crate) unlink: Arc<str>,
    pub(crate) identities: Arc<str>,
}

impl Statements {
    pub(crate) fn for_tables(schema: &str, table: &str, history: &str, identities: &str) -> Self {
        // `unnest` of the array parameters `$first..`, of these element types, each behind a
        // scalar subquery. Unwrapped, the planner counts a bound array's elements (1 or 2) but
        // assumes 10 for an unbound one, so a plan made for the values always looks cheaper
        // than the generic plan and the statement is planned anew on every call (twice the
        // time of the execution of `select`). Behind a subquery both assume the same, and the
        // generic plan is kept after the first few calls.
        let unnest = |first: usize, types: &[&str]| {
            let arrays: Vec<String> = types
                .iter()
                .enumerate()
                .map(|(i, ty)| format!("(SELECT ${}::{ty}[])", first + i))
                .collect();
            format!("unnest({})", arrays.join(", "))
        };
        // The newest revision of document `w`: one backward step on the primary key.
        let tip = format!(
            "SELECT h.number AS tip_number, h.version_after AS tip_version, \
                    h.sha256_after AS tip_sha256, h.bytes_after AS tip_bytes \
             FROM {history} AS h WHERE h.kind = w.kind AND h.owner = w.owner \
             ORDER BY h.number DESC LIMIT 1"
        );
        // Whether a write whose first revision is `w.first` still numbers on from the tip it
        // read (trivially so when it records none). A document purged and written again
        // since reads the same version as before, but its history has moved on: the write
        // must not land, or text computed from the purged content would.
        let unchanged_tip = format!(
            "(w.first = 0 OR NOT EXISTS (SELECT FROM {history} AS n \
               WHERE n.kind = w.kind AND n.owner = w.owner AND n.number >= w.first))"
        );
        // select: (kind, owner); write: (kind, owner, content, expected, sha256, receipts,
        // first, tip, oldest, expected_text, base), then the history table's columns as
        // RevisionColumns has them, then the age limit.
        let documents = unnest(1, &["text", "text"]);
        let changed = unnest(1, &["text", "text", "int8"]);
        let writes = unnest(
            1,
            &[
                "text", "text", "text", "int8", "text", "text", "int8", "int8", "int8", "text",
                "int8",
            ],
        );
        let revisions = unnest(
            12,
            &[
                "text", "text", "int8", "text", "text", "text", "text", "int8", "int8", "text",
                "text", "text", "text", "text", "text", "text",
            ],
        );
        // One row per id, in order, whether or not the document or its history exists, with
        // the tip or (for reads, which do not need it) NULLs in its place.
        // Times as epoch milliseconds: sqlx decodes TIMESTAMPTZ only with a time crate.
        let select = |tip: &str| {
            let (columns, join) = if tip.is_empty() {
                (
                    "NULL::int8 AS tip_number, NULL::text AS tip_version, \
                     NULL::text AS tip_sha256, NULL::int8 AS tip_bytes"
                        .to_owned(),
                    String::new(),
                )
            } else {
                (
                    "t.tip_number, t.tip_version, t.tip_sha256, t.tip_bytes".to_owned(),
                    format!("LEFT JOIN LATERAL ({tip}) AS t ON true"),
                )
            };
            format!(
                "SELECT d.content, d.version, \
                   (extract(epoch FROM d.updated_at) * 1000)::int8 AS updated_at, \
                   CASE WHEN $3 THEN d.receipts END AS receipts, {columns}, \
                   (extract(epoch FROM now()) * 1000)::int8 AS now \
                 FROM {documents} WITH ORDINALITY AS w(kind, owner, position) \
                 LEFT JOIN {table} AS d ON d.kind = w.kind AND d.owner = w.owner {join} \
                 ORDER BY w.position"
            )
        };
        Statements {
            select: select(&tip).into(),
            // The migration's function: the locks, then `select`'s read.
            hold: format!(
                "SELECT content, version, updated_at, receipts, tip_number, tip_version, \
                   tip_sha256, tip_bytes, now \
                 FROM \"{schema}\".memory_hold($1, $2, $3, $4)"
            )
            .into(),
            // Which of the documents another session holds: its advisory lock (as memory_hold
            // takes it, in this schema) or its row's lock. Each is tried, not waited for, and
            // let go when the statement ends; only a hold that timed out asks.
            held_by_others: format!(
                "SELECT w.position FROM unnest($1::text[], $2::text[]) WITH ORDINALITY \
                   AS w(kind, owner, position) \
                 WHERE NOT pg_try_advisory_xact_lock(hashtextextended( \
                     '{schema}' || '/' || w.kind || '/' || w.owner, 0)) \
                   OR (EXISTS (SELECT FROM {table} AS d \
                         WHERE d.kind = w.kind AND d.owner = w.owner) \
                     AND NOT EXISTS (SELECT FROM {table} AS d \
                         WHERE d.kind = w.kind AND d.owner = w.owner FOR UPDATE SKIP LOCKED)) \
                 ORDER BY w.position LIMIT 1"
            )
            .into(),
            select_documents: select("").into(),
            // The documents `select_documents` reads, with a version known for each ($3, -1 for
            // none): a document still at it (0 for one never written) comes without its text,
            // which the reader has.
            read_changed: format!(
                "SELECT CASE WHEN COALESCE(d.version, 0) = w.known THEN NULL ELSE d.content END                    AS content,                    d.version, (extract(epoch FROM d.updated_at) * 1000)::int8 AS updated_at,                    COALESCE(d.version, 0) = w.known AS unchanged                  FROM {changed} WITH ORDINALITY AS w(kind, owner, known, position)                  LEFT JOIN {table} AS d ON d.kind = w.kind AND d.owner = w.owner                  ORDER BY w.position"
            )
            .into(),
            // Two documents by their keys, in one statement (one snapshot); the second is left
            // out where it is the first again.
            read_two: format!(
                "SELECT kind, owner, content, version, \
                   (extract(epoch FROM updated_at) * 1000)::int8 AS updated_at \
                 FROM {table} WHERE kind = $1 AND owner = $2 \
                 UNION ALL \
                 SELECT kind, owner, content, version, \
                   (extract(epoch FROM updated_at) * 1000)::int8 AS updated_at \
                 FROM {table} WHERE kind = $3 AND owner = $4 AND NOT (kind = $1 AND owner = $2)"
            )
            .into(),
            // The compare-and-swap, its revisions and their pruning in one statement (one
            // round trip, one atomic step). An existing document is updated only where its
            // version is still the expected one, its text the expected one when the write was
            // planned from the writer's last view of it (a hand edit need not change the
            // version; the lengths are compared first, so the stored text is read only when
            // they are equal), and its row is not locked by another session (`free`): a
            // writer holding it ([`CompareAndSwap::hold`]) is about to change it, so this write
            // would lose anyway, and losing at once sends it to the holders' queue instead of
            // a wait on the row and then that queue too. A held write locked the row itself,
            // which does not stop it. A new document (expected 0) is inserted only where no
            // row is. A row another writer got to first is neither, and is missing from
            // RETURNING, so its revisions are not recorded either. Then each landed document
            // drops, from its oldest few revisions, the ones its retention no longer keeps
            // (never the new tip): by count (below `w.oldest`) or by age ($28 milliseconds,
            // NULL for none), by the server's clock like the revisions' times, and only below
            // `base`, the newest revision stored whole (a checkpoint, a hand edit, a tombstone,
            // or the first) at or below the oldest kept, which the kept changes are rebuilt
            // from (`Revision::is_base`; a change's `content` is NULL). `doomed` is
            // materialized so that the plan starts from those few rows, not from all the
            // document's revisions. A NULL receipts value keeps the stored one. Times are the
            // statement's: in a held write's transaction `now()` is when it began to wait, so
            // its revision could be older than the one it waited for. Several documents land
            // all or none: where some landed and another did not, `memory_lost` fails the
            // statement (which undoes what landed) naming the first that did not, so a write
            // of several needs no transaction around it.
            write: format!(
                "WITH w AS ( \
                   SELECT * FROM {writes} WITH ORDINALITY \
                     AS w(kind, owner, content, expected, sha256, receipts, first, tip, oldest, \
                          expected_text, base, position)), \
                 free AS ( \
                   SELECT d.kind, d.owner FROM {table} AS d \
                   JOIN w ON d.kind = w.kind AND d.owner = w.owner \
                   WHERE w.expected > 0 AND d.version = w.expected \
                     AND (w.expected_text IS NULL OR d.content = w.expected_text) \
                   FOR UPDATE OF d SKIP LOCKED), \
                 updated AS ( \
                   UPDATE {table} AS d \
                   SET content = w.content, version = w.expected + 1, sha256 = w.sha256, \
                       updated_at = statement_timestamp(), \
                       receipts = COALESCE(w.receipts, d.receipts) \
                   FROM w JOIN free AS f ON f.kind = w.kind AND f.owner = w.owner \
                   WHERE d.kind = w.kind AND d.owner = w.owner \
                     AND d.version = w.expected AND {unchanged_tip} \
                   RETURNING d.kind, d.owner), \
                 inserted AS ( \
                   INSERT INTO {table} \
                     (kind, owner, content, version, sha256, receipts, updated_at) \
                   SELECT w.kind, w.owner, w.content, 1, w.sha256, w.receipts, \
                     statement_timestamp() FROM w \
                   WHERE w.expected = 0 AND {unchanged_tip} \
                   ON CONFLICT (kind, owner) DO NOTHING \
                   RETURNING kind, owner), \
                 landed AS (SELECT kind, owner FROM updated \
                            UNION ALL SELECT kind, owner FROM inserted), \
                 recorded AS ( \
                   INSERT INTO {history} (kind, owner, number, version_before, version_after, \
                     sha256_before, sha256_after, bytes_before, bytes_after, surface, \
                     personality, user_id, idempotency_key, session, updates, content, time) \
                   SELECT r.*, statement_timestamp() FROM {revisions} \
                     AS r(kind, owner, number, version_before, version_after, sha256_before, \
                       sha256_after, bytes_before, bytes_after, surface, personality, user_id, \
                       idempotency_key, session, updates, content) \
                   JOIN landed AS l ON l.kind = r.kind AND l.owner = r.owner), \
                 doomed AS MATERIALIZED ( \
                   SELECT o.kind, o.owner, o.number \
                   FROM landed AS l \
                   JOIN w ON w.kind = l.kind AND w.owner = l.owner \
                   CROSS JOIN LATERAL ( \
                     SELECT CASE WHEN $28::int8 IS NULL THEN w.oldest \
                       ELSE GREATEST(w.oldest, COALESCE( \
                         (SELECT min(v.number) FROM {history} AS v \
                          WHERE v.kind = l.kind AND v.owner = l.owner \
                            AND v.time >= statement_timestamp() \
                                          - $28::int8 * interval '1 millisecond'), \
                         w.tip)) END AS number) AS kept \
                   CROSS JOIN LATERAL ( \
                     SELECT GREATEST( \
                       (SELECT max(b.number) FROM {history} AS b \
                        WHERE b.kind = l.kind AND b.owner = l.owner \
                          AND b.number <= kept.number \
                          AND (b.content IS NOT NULL OR b.updates = '[]' OR b.number = 1)), \
                       CASE WHEN w.base > 0 AND w.base <= kept.number THEN w.base END) \
                       AS number) AS base \
                   CROSS JOIN LATERAL ( \
                     SELECT o.kind, o.owner, o.number, o.time FROM {history} AS o \
                     WHERE o.kind = l.kind AND o.owner = l.owner \
                     ORDER BY o.number LIMIT {PRUNE_PER_WRITE}) AS o \
                   WHERE o.number < w.tip AND o.number < base.number \
                     AND (o.number < w.oldest \
                          OR o.time < statement_timestamp() - $28::int8 * interval '1 millisecond')), \
                 pruned AS ( \
                   DELETE FROM {history} AS h USING doomed AS x \
                   WHERE h.kind = x.kind AND h.owner = x.owner AND h.number = x.number) \
                 SELECT kind, owner, \
                   (extract(epoch FROM statement_timestamp()) * 1000)::int8 AS at FROM landed \
                 UNION ALL \
                 SELECT NULL, NULL, \"{schema}\".memory_lost(m.position) \
                 FROM (SELECT min(w.position) AS position FROM w \
                       WHERE NOT EXISTS (SELECT FROM landed AS l \
                                         WHERE l.kind = w.kind AND l.owner = w.owner)) AS m \
                 WHERE m.position IS NOT NULL AND EXISTS (SELECT FROM landed)"
            )
            .into(),
            history: format!(
                "SELECT number, version_before, version_after, sha256_before, sha256_after, \
                   bytes_before, bytes_after, (extract(epoch FROM time) * 1000)::int8 AS time, \
                   surface, personality, user_id, idempotency_key, session, updates, content, \
                   (extract(epoch FROM redacted_at) * 1000)::int8 AS redacted_at \
                 FROM {history} WHERE kind = $1 AND owner = $2 \
                 ORDER BY number DESC LIMIT $3"
            )
            .into(),
            // Takes the row's lock, waiting for a write in progress, and erases it.
            purge_document: format!(
                "DELETE FROM {table} WHERE kind = $1 AND owner = $2 RETURNING content"
            )
            .into(),
            // Holds a document's key while it has no row; never committed (purge_history
            // deletes it). Waits for a first write in progress, then inserts nothing.
            purge_hold: format!(
                "INSERT INTO {table} (kind, owner, content, version, sha256) \
                 VALUES ($1, $2, '', 1, $3) ON CONFLICT (kind, owner) DO NOTHING"
            )
            .into(),
            // Erases the history (and the row purge_hold may have inserted), returning the
            // number and time of each revision there was (to count those the retention kept)
            // and the newest, which the tombstone numbers on from.
            purge_history: format!(
                "WITH erased AS ( \
                   DELETE FROM {history} WHERE kind = $1 AND owner = $2 \
                   RETURNING number, version_after, sha256_after, bytes_after, \
                     (extract(epoch FROM time) * 1000)::int8 AS ms), \
                 held AS (DELETE FROM {table} WHERE kind = $1 AND owner = $2) \
                 SELECT (SELECT coalesce(array_agg(number), '{{}}') FROM erased) AS numbers, \
                   (SELECT coalesce(array_agg(ms), '{{}}') FROM erased) AS times, \
                   t.number AS tip_number, t.version_after AS tip_version, \
                   t.sha256_after AS tip_sha256, t.bytes_after AS tip_bytes, \
                   (extract(epoch FROM now()) * 1000)::int8 AS now \
                 FROM (SELECT) AS one \
                 LEFT JOIN (SELECT * FROM erased ORDER BY number DESC LIMIT 1) AS t ON true"
            )
            .into(),
            // At the transaction's time, which purge_history returned.
            tombstone: format!(
                "INSERT INTO {history} (kind, owner, number, version_before, version_after, \
                   sha256_before, sha256_after, bytes_before, bytes_after, surface, content) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL)"
            )
            .into(),
            // A redaction (kind, owner, number, updates left, time in ms, tip, rebased text):
            // where the newest revision is still `tip` and revision `number` is not redacted
            // yet, it loses its text and updates, and the revision after it gets its whole
            // text where it has none (a change, rebuilt from the text erased). One statement,
            // one atomic step; the count of revisions redacted says whether it landed.
            redact: format!(
                "WITH tip AS ( \
                   SELECT max(number) AS number FROM {history} WHERE kind = $1 AND owner = $2), \
                 target AS ( \
                   SELECT h.number FROM {history} AS h, tip \
                   WHERE h.kind = $1 AND h.owner = $2 AND h.number = $3 \
                     AND tip.number = $6 AND h.redacted_at IS NULL), \
                 rebased AS ( \
                   UPDATE {history} AS h SET content = $7 \
                   FROM target AS t \
                   WHERE h.kind = $1 AND h.owner = $2 AND h.number = t.number + 1 \
                     AND $7::text IS NOT NULL AND h.content IS NULL AND h.redacted_at IS NULL \
                   RETURNING h.number), \
                 redacted AS ( \
                   UPDATE {history} AS h \
                   SET content = NULL, updates = $4, \
                       redacted_at = timestamptz 'epoch' + $5::int8 * interval '1 millisecond' \
                   FROM target AS t \
                   WHERE h.kind = $1 AND h.owner = $2 AND h.number = t.number \
                     AND h.redacted_at IS NULL \
                   RETURNING h.number) \
                 SELECT count(*) FROM redacted"
            )
            .into(),
            list: format!("SELECT kind, owner FROM {table}").into(),
            resolve: format!(
                "SELECT user_id FROM {identities} WHERE platform = $1 AND platform_user = $2"
            )
            .into(),
            // Waits for a concurrent insert of the same key to commit, then inserts nothing.
            link_first: format!(
                "INSERT INTO {identities} (platform, platform_user, user_id) VALUES ($1, $2, $3) \
                 ON CONFLICT (platform, platform_user) DO NOTHING"
            )
            .into(),
            lock_link: format!(
                "SELECT user_id FROM {identities} WHERE platform = $1 AND platform_user = $2 \
                 FOR UPDATE"
            )
            .into(),
            relink: format!(
                "UPDATE {identities} SET user_id = $3, updated_at = now() \
                 WHERE platform = $1 AND platform_user = $2"
            )
            .into(),
            unlink: format!(
                "DELETE FROM {identities} WHERE platform = $1 AND platform_user = $2 \
                 RETURNING user_id"
            )
            .into(),
            identities: format!("SELECT platform, platform_user, user_id FROM {identities}").into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transactions_begin_with_their_timeouts() {
        let none = Begin::with(&[]);
        assert_eq!(&*none.write, "BEGIN READ WRITE");
        assert_eq!(
            &*none.snapshot,
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ WRITE"
        );
        let set = Begin::with(&[
            ("lock_timeout", "5ms".to_owned()),
            ("statement_timeout", "9ms".to_owned()),
        ]);
        assert_eq!(
            &*set.write,
            "BEGIN READ WRITE; SET LOCAL lock_timeout = '5ms'; SET LOCAL statement_timeout = '9ms'"
        );
        assert!(set.snapshot.ends_with(
            "READ WRITE; SET LOCAL lock_timeout = '5ms'; SET LOCAL statement_timeout = '9ms'"
        ));
    }
}
