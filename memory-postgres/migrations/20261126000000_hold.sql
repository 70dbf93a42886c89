-- memory_hold: a writer's hold on documents (memory_core's CompareAndSwap::hold), called in a
-- transaction that the writer's write then commits (or rolls back). It takes, in key order,
-- each document's advisory lock (which every holding writer takes, so that holders of a
-- document take turns even while it has no row to lock) and then its row's lock (so that
-- racing writers, whose write skips locked rows, cannot land in between), waiting at most
-- `lock_wait` (a lock_timeout value) for each; then it reads the documents as
-- memory-postgres's select does, with their histories' tips.
--
-- A function, so that the read is a statement of its own, after the locks: in READ COMMITTED
-- it sees what the previous holder committed (its row and its history's tip), and the lock
-- and the read still take one round trip. `SET search_path FROM CURRENT` keeps the tables'
-- schema, the one this migration runs in.
CREATE FUNCTION memory_hold(kinds TEXT[], owners TEXT[], with_receipts BOOLEAN, lock_wait TEXT)
RETURNS TABLE (
    content     TEXT,
    version     BIGINT,
    updated_at  BIGINT,
    receipts    TEXT,
    tip_number  BIGINT,
    tip_version TEXT,
    tip_sha256  TEXT,
    tip_bytes   BIGINT,
    now         BIGINT
)
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    key RECORD;
BEGIN
    PERFORM set_config('lock_timeout', lock_wait, true);
    FOR key IN
        SELECT DISTINCT k.kind, k.owner FROM unnest(kinds, owners) AS k(kind, owner)
        ORDER BY k.kind, k.owner
    LOOP
        -- Namespaced by the schema: deployments sharing a database do not wait on each other.
        PERFORM pg_advisory_xact_lock(
            hashtextextended(current_schema() || '/' || key.kind || '/' || key.owner, 0));
    END LOOP;
    PERFORM FROM memory_documents AS d
    JOIN unnest(kinds, owners) AS k(kind, owner) ON d.kind = k.kind AND d.owner = k.owner
    ORDER BY d.kind, d.owner
    FOR UPDATE OF d;
    -- The arrays behind scalar subqueries, as in memory-postgres's select: so that the cached
    -- generic plan is kept instead of a plan for the values made anew on every call.
    RETURN QUERY
    SELECT d.content, d.version,
        (extract(epoch FROM d.updated_at) * 1000)::int8,
        CASE WHEN with_receipts THEN d.receipts END,
        t.tip_number, t.tip_version, t.tip_sha256, t.tip_bytes,
        (extract(epoch FROM statement_timestamp()) * 1000)::int8
    FROM unnest((SELECT kinds), (SELECT owners)) WITH ORDINALITY AS w(kind, owner, position)
    LEFT JOIN memory_documents AS d ON d.kind = w.kind AND d.owner = w.owner
    LEFT JOIN LATERAL (
        SELECT h.number AS tip_number, h.version_after AS tip_version,
            h.sha256_after AS tip_sha256, h.bytes_after AS tip_bytes
        FROM memory_history AS h WHERE h.kind = w.kind AND h.owner = w.owner
        ORDER BY h.number DESC LIMIT 1) AS t ON true
    ORDER BY w.position;
END
$$;
