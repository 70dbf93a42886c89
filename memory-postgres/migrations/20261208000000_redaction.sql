-- Redaction (CONTRACT.md, Notes): a revision whose text and updates were erased keeps its row,
-- numbers, hashes and sizes, with the time it was redacted here; NULL for one not redacted.
ALTER TABLE memory_history ADD COLUMN redacted_at TIMESTAMPTZ;
