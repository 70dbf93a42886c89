-- The idempotency receipts of a document (memory_core::Receipts as JSON): the keys of its last
-- keyed writes with the report each returned, written in the same statement as the content.
ALTER TABLE memory_documents ADD COLUMN receipts TEXT;
