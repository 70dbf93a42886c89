-- Notes (CONTRACT.md, Notes) are documents of kind 'note', owned by their layout path
-- (notes/<path>, personalities/<id>/notes/<path>, users/<id>/notes/<path>): the path names
-- the note's scope and its path within it, so the primary key stays (kind, owner).
ALTER TABLE memory_documents DROP CONSTRAINT memory_documents_kind_check;
ALTER TABLE memory_documents ADD CONSTRAINT memory_documents_kind_check
    CHECK (kind IN ('global_memory', 'personality_memory', 'user_profile', 'note'));
