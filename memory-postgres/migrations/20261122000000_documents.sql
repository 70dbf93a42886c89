-- One row per memory document. Applied inside the provider's schema (the connection's
-- search_path), so several deployments can share one database.
CREATE TABLE memory_documents (
    -- 'global_memory', 'personality_memory' or 'user_profile'.
    kind       TEXT        NOT NULL CHECK (kind IN ('global_memory', 'personality_memory', 'user_profile')),
    -- The personality or user id; empty for the global memory.
    owner      TEXT        NOT NULL,
    content    TEXT        NOT NULL,
    -- Bumped by exactly one on every write: the compare-and-swap token.
    version    BIGINT      NOT NULL CHECK (version > 0),
    -- Hex SHA-256 of content, for auditing and for tools that compare without reading it all.
    sha256     TEXT        NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, owner)
);
