-- The history of each document (memory_core::Revision): one row per change, written in the
-- same statement as the change itself, so a document and its history never disagree. Rows of a
-- document are pruned from the old end as the provider's retention says, in the write path.
CREATE TABLE memory_history (
    -- The document, as memory_documents names it. No foreign key: a purge deletes the
    -- document and leaves its tombstone here, and a hand-deleted row keeps its history.
    kind            TEXT        NOT NULL,
    owner           TEXT        NOT NULL,
    -- 1 for the document's first revision, one more for each after it, never reused (a purge's
    -- tombstone carries the numbering on). With the document, the primary key: the newest
    -- revision (the tip every write reads) is one backward index step, pruning is a range of
    -- it, and two writers that both thought they were next cannot both record.
    number          BIGINT      NOT NULL CHECK (number > 0),
    -- Versions as the provider reports them (the counter in decimal, "0" for none).
    version_before  TEXT        NOT NULL,
    version_after   TEXT        NOT NULL,
    -- Hex SHA-256 and UTF-8 sizes of the text before and after.
    sha256_before   TEXT        NOT NULL,
    sha256_after    TEXT        NOT NULL,
    bytes_before    BIGINT      NOT NULL CHECK (bytes_before >= 0),
    bytes_after     BIGINT      NOT NULL CHECK (bytes_after >= 0),
    -- The server's clock, not the writer's: hosts' clocks differ, the server's orders them.
    time            TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- 'tool', 'cli', 'web', 'api' or 'external' (a change made without agent-memory).
    surface         TEXT        NOT NULL,
    -- Who: NULL for external changes and purges.
    personality     TEXT,
    user_id         TEXT,
    -- The call's idempotency key and the caller's session id, when given.
    idempotency_key TEXT,
    session         TEXT,
    -- The updates applied (a JSON array of memory_core::MemoryUpdate). TEXT, not JSONB: JSONB
    -- refuses the \u0000 escape, which a `remove` or `edit` may hold; `updates::json` reads it.
    updates         TEXT        NOT NULL DEFAULT '[]',
    -- The whole text after the change; NULL only for a purge's tombstone, which keeps none.
    content         TEXT,
    PRIMARY KEY (kind, owner, number)
);
